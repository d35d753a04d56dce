//===- Autotune.h - A kernel's @autotune configs, for the JIT ----*- C++ -*-===//
//
// `@autotune(configs = [{BLOCK: 64, num_warps: 4}, ...], key = [n])` lists versions of a
// kernel to try: each config overrides `const` parameters and the launch settings. The
// frontend checks the attribute (SemaKernel.cpp) and hands the configs out here; the
// JIT (jit/) compiles one specialization per config — the config's values become
// SemaOptions::defines and its launch settings SemaOptions::numWarps/numStages — times
// them on the first launch per value of the key parameters and keeps the fastest.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/Sema.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// One entry of `configs = [...]`.
struct AutotuneConfig {
  /// `const` parameter values, as `-D NAME=VALUE` spells them (a float always has a
  /// '.' or an exponent, so it stays a float when parsed back), in written order.
  std::vector<std::pair<std::string, std::string>> defines;
  std::optional<int64_t> numWarps;
  std::optional<int64_t> numStages;

  /// "{BLOCK: 64, num_warps: 4}": for messages and the tuning record.
  std::string text() const;
  /// `base` with this config applied: its values added to the defines, its launch
  /// settings as the overrides.
  SemaOptions apply(SemaOptions base) const;

  bool operator==(const AutotuneConfig &) const = default;
};

/// A kernel's checked @autotune attribute.
struct KernelAutotune {
  std::vector<AutotuneConfig> configs;
  std::vector<std::string> key; ///< parameter names, as written in `key = [...]`
  Location loc;                 ///< the attribute, for messages
};

/// Loads and checks `file` of `module.sources` (and its imports) as compileToTileIR
/// does, but specializes no kernel, and returns kernel `kernel`'s @autotune attribute.
/// Returns false when errors were reported; `out` is nullopt when the kernel has no
/// @autotune or no kernel has that name (compiling it then says so).
bool listAutotuneConfigs(uint32_t file, ir::Module &module, DiagnosticEngine &diags, const SemaOptions &options,
                         const std::string &kernel, std::optional<KernelAutotune> &out);

} // namespace kiln
