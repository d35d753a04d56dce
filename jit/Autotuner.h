//===- Autotuner.h - Timing @autotune configs on the device -------*- C++ -*-===//
//
// The pieces of tuning that need no compiler: keeping the caller's data safe while
// configs run on it, timing launches with device events, and the record of a choice
// that the disk cache keeps. KernelFamily (Kernel.cpp) puts them together.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/kiln_runtime.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kiln::jit {

/// Device copies of the buffers a launch's pointer arguments name. Kernels may update
/// buffers in place, so timing runs would change the caller's data; restore() puts the
/// contents back. The copies are freed with the snapshot.
class ArgumentSnapshot {
public:
  ArgumentSnapshot() = default;
  ~ArgumentSnapshot();
  ArgumentSnapshot(const ArgumentSnapshot &) = delete;
  ArgumentSnapshot &operator=(const ArgumentSnapshot &) = delete;

  /// Copies every distinct buffer of `args`. Returns "" or why it could not.
  std::string take(kiln_runtime *runtime, std::span<const kiln_arg> args);
  /// Copies the contents back into the original buffers. Returns "" or why it could not.
  std::string restore();

private:
  std::vector<std::pair<kiln_buffer *, kiln_buffer *>> copies_; ///< (original, copy)
};

/// Device milliseconds of one `run` (launches on the runtime's stream; returns "" or why
/// it failed): the median of `runs` runs timed one by one with events, after `warmup`
/// untimed ones. Returns "" or why it could not be timed.
std::string timeRuns(kiln_runtime *runtime, const std::function<std::string()> &run, unsigned warmup,
                     unsigned runs, float &medianMs);

/// timeRuns of one launch.
std::string timeLaunch(kiln_runtime *runtime, kiln_kernel *kernel, kiln_grid grid, std::span<const kiln_arg> args,
                       unsigned warmup, unsigned runs, float &medianMs);

/// What the cache keeps of one tuning: the chosen config, and each config's time or why
/// it was skipped (for people reading the file).
struct TuningRecord {
  size_t best = 0;
  std::vector<std::string> configs;              ///< each config's text
  std::vector<std::optional<float>> medianMs;    ///< per config; nullopt: skipped
  std::vector<std::string> skipped;              ///< per config: why, or ""
  std::string keyValues;                         ///< "n_cols=1024"

  std::string serialize() const;
  /// The chosen config index of a serialized record, if it is one and names config
  /// `best` with the same text as `configs[best]` (the record is then still valid).
  static std::optional<size_t> parseBest(const std::string &text, const std::vector<std::string> &configs);
};

} // namespace kiln::jit
