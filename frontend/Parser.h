//===- Parser.h - Kiln source text to AST ------------------------*- C++ -*-===//
//
// Runs the ANTLR-generated lexer and parser over one file and builds its AST. Input is
// validated first (size, UTF-8, NUL bytes, nesting depth) so that no input can crash or
// exhaust the parser. Syntax errors are reported with E0005/E0006 at their token, with
// ANTLR's recovery so that several are reported per run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/AST.h"
#include "support/Diagnostics.h"

#include <memory>

namespace kiln {

/// Limits every input is held to (documented in docs/diagnostics.md).
struct ParseLimits {
  size_t maxBytes = 16u << 20;    ///< E0003 beyond
  unsigned maxNesting = 200;      ///< E0004 beyond (brackets + blocks)
  size_t maxTokens = 2'000'000;   ///< E0003 beyond
};

/// Parses file `file` of `sources` (its text must be registered). Returns null if any
/// error was reported; the AST is complete and well-formed otherwise.
std::unique_ptr<ast::Module> parseFile(SourceManager &sources, uint32_t file,
                                       DiagnosticEngine &diags, const ParseLimits &limits = {});

} // namespace kiln
