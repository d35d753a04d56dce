//===- Kernel.h - One JIT-compiled kernel and its variants --------*- C++ -*-===//
//
// What a kiln_jit_kernel holds: one kernel of a program, lowered to Tile IR once per
// @autotune config (once when there is none), and the code variants compiled from it
// per specialization (Specialization.h). A launch picks the config — timing all of them
// on the first launch per key value — and the variant for its arguments, compiling or
// loading from the disk cache what is not loaded yet.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "jit/Compile.h"
#include "jit/DiskCache.h"
#include "jit/Log.h"
#include "jit/Specialization.h"
#include "jit/kiln_jit.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jit {

/// A failure to hand back through the C ABI: a status and kiln_last_error()'s message.
struct Failure {
  kiln_status status;
  std::string message;
};

/// KILN_ERROR_COMPILE with the compiler's diagnostics, their last newline dropped.
Failure compileFailure(std::string diagnostics);

/// What every kernel of one kiln_jit shares.
struct JitState {
  JitState(kiln_runtime *runtime, std::string cacheDir, Log log);
  ~JitState();
  JitState(const JitState &) = delete;
  JitState &operator=(const JitState &) = delete;

  kiln_runtime *runtime; ///< the JIT's own handle (kiln_runtime_share)
  Log log;
  DiskCache cache;
  codegen::Target target = codegen::Target::SM90;
  std::string deviceName;
  bool specialize = true;
  codegen::CodegenOptions codegen; ///< everything but the specialization facts
  unsigned autotuneWarmup = 2;
  unsigned autotuneRuns = 5;
  std::mutex mutex; ///< one compile, tuning or launch of this JIT at a time
  /// Choices between candidates (Choice.h) made or loaded so far, by record key.
  std::map<std::string, size_t> choices;
};

/// Where a launch's grid comes from: one grid for every config, or the caller's grid
/// function, asked for the config that runs (kiln_jit_grid_fn).
class LaunchGrid {
public:
  explicit LaunchGrid(kiln_grid fixed) : fixed_(fixed) {}
  LaunchGrid(kiln_jit_grid_fn fn, void *userData) : fn_(fn), userData_(userData) {}

  /// The grid is the same whatever the config: the caller gave it.
  bool isFixed() const { return fn_ == nullptr; }
  kiln_grid fixed() const { return fixed_; }
  /// The grid for `kernel`, config `config` of kernel `name` ("" when it has no
  /// @autotune). Throws Failure, naming the kernel and config, when the function fails.
  kiln_grid forConfig(const kiln_kernel *kernel, const std::string &name, const std::string &config) const;

private:
  kiln_grid fixed_{0, 0, 0};
  kiln_jit_grid_fn fn_ = nullptr;
  void *userData_ = nullptr;
};

class KernelFamily {
public:
  /// Compiles kernel `kernel` of `source` through the frontend (every @autotune config),
  /// and, without launch-time specialization, to code. Throws Failure.
  /// `fusion` is what the caller chose of reduction-chain fusion.
  KernelFamily(std::shared_ptr<JitState> jit, const Source &source, const std::string &kernel,
               const SemaOptions &options, const FusionChoices &fusion = {});
  ~KernelFamily();
  KernelFamily(const KernelFamily &) = delete;
  KernelFamily &operator=(const KernelFamily &) = delete;

  const std::string &name() const { return name_; }
  const std::vector<rt::BundleParam> &params() const { return params_; }
  size_t numConfigs() const { return configs_.size(); }
  const std::string &configText(size_t index) const { return configs_[index].text; }

  struct Selection {
    kiln_kernel *kernel = nullptr;
    size_t config = 0;
    kiln_grid grid{0, 0, 0}; ///< the grid it runs with
  };
  /// The variant a launch with `grid` and `args` runs. Throws Failure.
  Selection select(const LaunchGrid &grid, std::span<const kiln_arg> args);
  /// Selects and launches. Throws Failure.
  /// Launches on `stream` when given (kiln_launch_on_stream; nullptr: the runtime's own),
  /// else on the runtime's current stream. Tuning launches run before, on the runtime's.
  void launch(const LaunchGrid &grid, std::span<const kiln_arg> args, std::optional<void *> stream = std::nullopt);

private:
  struct Config {
    std::string text;                       ///< "{BLOCK: 64, num_warps: 4}"
    std::unique_ptr<LoweredKernel> lowered; ///< null when the frontend rejected it
    std::string failure;                    ///< its diagnostics, then
    std::map<ArgFacts, kiln_kernel *> variants;
  };

  Selection selectLocked(const LaunchGrid &grid, std::span<const kiln_arg> args);
  /// Checks `args` against the signature; returns the pointer arguments' addresses.
  rt::PackedArgs checkArgs(std::span<const kiln_arg> args) const;
  /// `args` with each block mask passed whole (KILN_ARG_BLOCK_MASK) replaced by its five
  /// parts; a mask the runtime does not know is left for checkArgs to refuse.
  /// Appends "NAME=DIGEST" to `maskKey` for each mask passed whole, which the tuning
  /// results are keyed by.
  std::vector<kiln_arg> withMaskParts(std::span<const kiln_arg> args, std::string &maskKey) const;
  kiln_kernel *variant(size_t config, const ArgFacts &facts);
  size_t chooseConfig(const LaunchGrid &grid, std::span<const kiln_arg> args, const ArgFacts &facts,
                      const std::string &maskKey);
  /// Times every config; returns the fastest and whether the choice may be kept.
  size_t tune(const LaunchGrid &grid, std::span<const kiln_arg> args, const ArgFacts &facts,
              const std::string &keyValues, bool &keep);
  /// Config `index`'s grid when it runs as `kernel`.
  kiln_grid gridFor(const LaunchGrid &grid, const kiln_kernel *kernel, size_t index) const;
  size_t firstCompiled() const;
  std::string keyValues(std::span<const kiln_arg> args) const;

  std::shared_ptr<JitState> jit_;
  std::string name_;
  std::vector<rt::BundleParam> params_; ///< runtime parameters, nothing assumed
  std::vector<rt::BundleBlockMask> masks_; ///< the block masks among params_
  std::vector<Config> configs_;
  bool autotuned_ = false;
  std::vector<std::pair<std::string, size_t>> keyParams_; ///< @autotune key: (name, parameter index)
  KeyText tuningKey_;                                     ///< what every tuning record of this kernel depends on
  std::map<std::string, size_t> choices_;                 ///< key values + facts -> config
};

} // namespace kiln::jit
