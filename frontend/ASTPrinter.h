//===- ASTPrinter.h - `dslc --emit=ast` --------------------------*- C++ -*-===//
#pragma once

#include "frontend/AST.h"

#include <iosfwd>

namespace kiln {

/// Prints the AST as an indented tree, one node per line with its line:col
/// (`BinaryExpr + 3:18`). Deterministic; used by golden tests.
void printAST(const ast::Module &module, std::ostream &os);

} // namespace kiln
