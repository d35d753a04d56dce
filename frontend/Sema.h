//===- Sema.h - Semantic analysis and lowering to Tile IR -------*- C++ -*-===//
//
// The checked half of the frontend: loads a file and its imports, resolves names,
// infers dtypes and shapes, specializes `const` parameters, instantiates and inlines
// generic `fn`s, builds SSA for `var`s across structured control flow, and emits one
// Tile IR kernel per requested specialization. Every error is a located, coded
// diagnostic; an IR that fails verification afterwards is an internal error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "frontend/AST.h"
#include "frontend/Parser.h"
#include "support/Diagnostics.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct SemaOptions {
  std::vector<std::string> includeDirs;                     ///< -I, searched after the importing file's folder
  std::vector<std::pair<std::string, std::string>> defines; ///< -D NAME=VALUE, as written
  std::optional<std::string> kernel; ///< --kernel; all kernels at their defaults when absent
  /// Launch settings that replace the kernels' @num_warps / @num_stages (an @autotune
  /// config's, see Autotune.h). Checked like the attributes.
  std::optional<int64_t> numWarps;
  std::optional<int64_t> numStages;
  ParseLimits limits;
};

/// Compiles the file registered as `file` in `module.sources` (and its imports) into
/// `module`. Returns false when errors were reported.
bool compileToTileIR(uint32_t file, ir::Module &module, DiagnosticEngine &diags,
                     const SemaOptions &options);

/// Convenience: registers `path`, reads it (E0001 when it cannot be read) and compiles.
std::unique_ptr<ir::Module> compileFileToTileIR(const std::string &path, DiagnosticEngine &diags,
                                                const SemaOptions &options,
                                                std::shared_ptr<SourceManager> sources);

/// A builtin function as a user calls it: its name and its parameters, which are also
/// its keyword names, in order; the first `required` must be given. Read from the one
/// table that defines the builtins, for `dslc --list-builtins` and the test that keeps
/// docs/builtins.md complete.
struct BuiltinSignature {
  std::string name;
  std::vector<std::string> params;
  unsigned required = 0;
  bool variadic = false; ///< print takes any number of values
};
std::vector<BuiltinSignature> builtinSignatures();

} // namespace kiln
