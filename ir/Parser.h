//===- Parser.h - .tir text to Tile IR ---------------------------*- C++ -*-===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <memory>

namespace kiln::ir {

/// Parses the text of file `file` (registered in `sources`) as a .tir module. Syntax
/// and type errors are reported as E0700 at their position in the .tir text; returns
/// null when any was reported. The result is not verified: call verifyModule.
std::unique_ptr<Module> parseTir(std::shared_ptr<SourceManager> sources, uint32_t file,
                                 DiagnosticEngine &diags);

} // namespace kiln::ir
