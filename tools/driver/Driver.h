//===- Driver.h - What dslc and dslc-opt share -------------------*- C++ -*-===//
//
// The stages of a compilation, callable one by one so every tool can start and stop
// where it needs to: load a .kiln (parse + sema) or .tir (parse + verify) file into
// Tile IR, run the pipeline, and print.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/Sema.h"
#include "ir/IR.h"
#include "ir/transforms/Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"

#include <memory>
#include <string>

namespace kiln::driver {

/// Exit codes of the tools.
enum ExitCode : int {
  ExitSuccess = 0,
  ExitUserError = 1,      ///< the input or the arguments are wrong (diagnostics say why)
  ExitInternalError = 70, ///< a compiler bug (EX_SOFTWARE)
};

/// Whether `path` names Tile IR text (.tir) rather than Kiln source.
bool isTirFile(const std::string &path);

/// Loads `path` into a verified Tile IR module: Kiln source goes through the parser
/// and semantic analysis, .tir text through the IR parser and verifier. Returns null
/// when errors were reported.
std::unique_ptr<ir::Module> loadModule(const std::string &path, const SemaOptions &options,
                                       std::shared_ptr<SourceManager> sources,
                                       DiagnosticEngine &diags, TimingReport *timing);

/// Parses `-D NAME=VALUE` arguments; malformed ones are reported (E0108).
bool parseDefines(const std::vector<std::string> &raw,
                  std::vector<std::pair<std::string, std::string>> &out, DiagnosticEngine &diags);

/// Prints an internal compiler error the way every tool does and returns ExitInternalError.
int reportInternalCompilerError(const InternalCompilerError &error, const char *tool);

} // namespace kiln::driver
