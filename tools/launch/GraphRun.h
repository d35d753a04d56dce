//===- GraphRun.h - Running a graph bundle on a GPU ----------------*- C++ -*-===//
//
// The GPU half of `dslc run` of a graph and of `kiln-run GRAPH.kgraph` (docs/graphs.md):
// the host's .npy buffers go to the device, the graph bundle runs there through the
// runtime's graph API (kiln_graph_launch, runtime/GraphLaunch.cpp) in one of its three
// modes, as many times as asked, timed with device events, and, for the persistent mode,
// its tasks traced; then the buffers come back. Like runBundle, nothing of the caller's
// changes unless every step succeeded.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"
#include "runtime/GraphBundle.h"
#include "runtime/Runtime.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"
#include "tools/launch/HostArguments.h"

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln::launch {

/// One launch of one run of a graph, in run order, as messages and traces name it.
struct PlannedLaunch {
  unsigned step = 0; ///< which launch of the graph bundle
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::string label; ///< "copy (g.kiln:8:5)", for traces
};

enum class GraphMode { Launches, CudaGraph, Persistent };

/// "launches", "cuda-graph", "persistent" -> GraphMode.
std::optional<GraphMode> parseGraphMode(std::string_view name);

struct GraphRunOptions {
  GraphMode mode = GraphMode::Persistent;
  /// Runs in all, back to back on the same device buffers (repeated runs are what the
  /// persistent kernel's ever-growing counters must get right); the buffers written
  /// back are those after the last.
  uint64_t runs = 1;
  bool time = false; ///< time each run with device events; summary on `timeOut`
  std::ostream *timeOut = nullptr;
  uint64_t waitTimeoutNs = 10'000'000'000ull; ///< the persistent kernel's watchdog
  uint32_t workers = 0;                       ///< 0: as many as are resident at once
  /// Persistent mode: write the last run's tasks as a Chrome / Perfetto trace here (one
  /// row per worker, a slice per task and per wait) and print each worker's busy,
  /// waiting and idle shares.
  std::string tracePath;
  std::string tool = "dslc";
};

/// The launches one run of `bundle` makes with `host`'s arguments (rt::planGraph), for
/// traces; false, with diagnostics, when an argument or a computed grid is out of range
/// (`launchLocations`, where given, places an error about a launch at its source).
bool planBundleRun(const rt::GraphBundle &bundle, const HostArguments &host, DiagnosticEngine &diags,
                   std::vector<PlannedLaunch> &launches, const std::vector<Location> &launchLocations = {});

/// A graph's or a kernel bundle's signature as argument binding (bindArguments) takes
/// it: its parameters, block masks and (a kernel's) consts.
Signature signatureOf(const rt::GraphBundle &bundle);
Signature signatureOf(const rt::Bundle &bundle);

/// Runs `bundle` with `host`'s buffers as `options` says, and sets HostBuffer::data and
/// ::written for every buffer that changed. False, with diagnostics, when anything
/// failed; `host` is then unchanged.
bool runGraphOnGpu(kiln::Runtime &runtime, const rt::GraphBundle &bundle, HostArguments &host,
                   const GraphRunOptions &options, DiagnosticEngine &diags, TimingReport *timing = nullptr,
                   const std::vector<Location> &launchLocations = {});

} // namespace kiln::launch
