//===- DeviceLaunch.h - Running a bundle on a GPU from host arguments -*- C++ -*-===//
//
// The GPU half of `dslc run --device cuda|ze` and of `kiln-run`: open the runtime
// (runtime/Runtime.h), load a bundle, upload the .npy buffers of HostArguments, launch
// the grid, download, and mark the buffers whose bytes the kernel changed, so that
// writeBack() rewrites exactly those files. Nothing is written here: a failure at any
// step leaves the caller's host buffers, and so every file, as they were.
//
// Runtime failures become coded diagnostics: a launch argument the runtime refuses
// (e.g. a value breaking an --assume-multiple specialization) is E0600, a corrupt
// bundle E0902, an unreadable file E0001, and the rest — no driver, no device, a JIT
// error, a fault — E0901 with the runtime's message and, line by line, its log.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"
#include "runtime/Runtime.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"
#include "tools/launch/HostArguments.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::launch {

enum class GpuKind { Auto, Cuda, LevelZero };

/// "cuda", "ze", "auto" -> GpuKind (the spellings of --device).
std::optional<GpuKind> parseGpuKind(std::string_view name);

/// The runtime on a GPU, or why there is none.
struct OpenedRuntime {
  std::unique_ptr<kiln::Runtime> runtime;
  kiln_status status = KILN_SUCCESS;
  std::string error; ///< the runtime's message when `runtime` is null
};

/// Opens the runtime on device 0 of `kind` (Auto: CUDA, else Level Zero). Never throws.
OpenedRuntime openRuntime(GpuKind kind);

/// "NVIDIA H200 (CUDA, sm_90)".
std::string describeDevice(const kiln::Runtime &runtime);

/// The diagnostic code for a runtime failure status.
DiagCode diagCodeFor(kiln_status status);

/// The lines of a runtime message as one ("no GPU backend is available: CUDA: ...;
/// Level Zero: ...").
std::string joinLines(const std::string &text);

/// Reports a runtime failure with the code for its status: the message as one line, and
/// a driver's JIT or build log after it as notes, one per line.
void reportRuntimeError(DiagnosticEngine &diags, kiln_status status, const std::string &message,
                        const std::string &hint = "");

struct GpuLaunchOptions {
  std::array<int64_t, 3> grid = {1, 1, 1};
  /// Launches in all. The buffers written back are those after the first launch; the
  /// others run on the same device buffers (for timing and profiling).
  uint64_t repeat = 1;
  /// Measure each launch with device events and print a summary to `timeOut`.
  bool time = false;
  std::ostream *timeOut = nullptr;
  std::string tool = "kiln-run"; ///< prefixes the timing line
};

/// The launch argument for bundle parameter `p` from a host argument; a buffer is
/// passed `byteOffset` bytes in.
kiln_arg launchArgument(const rt::BundleParam &p, const HostArg &a, const std::vector<kiln::Buffer> &buffers,
                        uint64_t byteOffset = 0);

/// "3 launches: min 0.0120 ms, median 0.0130 ms, mean 0.0131 ms, max 0.0150 ms" (`one`
/// "launch", `many` "launches"), from times in milliseconds.
std::string timeSummary(const std::vector<double> &times, const std::string &one, const std::string &many);

/// Device copies of `host`'s buffers, same indices.
std::vector<kiln::Buffer> uploadBuffers(kiln::Runtime &runtime, const HostArguments &host);
/// The bytes of each device buffer, sized as `host`'s.
std::vector<std::vector<std::byte>> downloadBuffers(const std::vector<kiln::Buffer> &buffers,
                                                    const HostArguments &host);
/// Gives `host` the downloaded bytes of every buffer that changed, marking it written.
/// The last step of a run: before it, `host` is as the caller gave it.
void adoptChangedBuffers(HostArguments &host, std::vector<std::vector<std::byte>> &results);
/// Runs `body`, turning runtime errors and exhausted host memory into diagnostics
/// (false).
bool reportingRuntimeErrors(DiagnosticEngine &diags, const std::function<bool()> &body);

/// Loads `bundle` (the bytes of a .kbin) on `runtime`, runs it with `host`'s arguments
/// and sets HostBuffer::data and ::written for every buffer the kernel changed. Returns
/// false, with diagnostics, when anything failed; `host` is then unchanged.
bool runBundle(kiln::Runtime &runtime, std::span<const uint8_t> bundle, HostArguments &host,
               const GpuLaunchOptions &options, DiagnosticEngine &diags, TimingReport *timing = nullptr);

} // namespace kiln::launch
