//===- GraphRun.h - Running a graph's launches on a GPU -----------*- C++ -*-===//
//
// The GPU half of `dslc run` for a graph (docs/graphs.md). The caller has compiled the
// graph's kernels and, for the persistent mode, its megakernel, and has evaluated the
// graph's body into the launches one run makes (interp::planGraph), each with the
// earlier launches it must follow (ir/GraphDependencies.h). This runs them:
//
//   launches     each launch as its own kernel launch, in order: the baseline, and what
//                a device without forward-progress guarantees between programs gets
//   cuda-graph   the same launches recorded once as a CUDA graph and replayed per run
//   persistent   one launch of the megakernel (codegen/Megakernel.cpp) over as many
//                workers as the device holds at once, with the launch table of
//                support/TaskTable.h; a wait that times out is reported as an error
//                naming the task and the launch it waited for
//
// Like runBundle, nothing of the caller's changes unless every step succeeded.
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

/// One argument of a planned launch: a scalar, or a view of a host buffer.
struct GraphArgument {
  HostArg value;           ///< for a buffer, value.buffer indexes HostArguments::buffers
  uint64_t byteOffset = 0; ///< where a buffer view starts
};

/// One launch of one run of a graph, in run order.
struct PlannedLaunch {
  unsigned slot = 0;   ///< which `launch` statement of the graph's body (program order)
  unsigned kernel = 0; ///< index into CompiledGraph::kernels
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<GraphArgument> args;
  std::vector<unsigned> after; ///< the earlier launches of this run (indices) it must follow
  std::string what;            ///< "the launch of kernel 'copy' at g.kiln:8:5", for messages
  std::string label;           ///< "copy (g.kiln:8:5)", for traces
};

/// A graph's code.
struct CompiledGraph {
  std::string name;
  /// One bundle per kernel the graph launches, in PlannedLaunch::kernel's numbering. In
  /// the persistent mode only their signatures are used, and they carry no code.
  std::vector<rt::Bundle> kernels;
  std::vector<uint8_t> megakernel; ///< the persistent kernel's bundle (persistent mode)
  unsigned slots = 0;              ///< `launch` statements in the graph's body
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

/// The code of graph bundle `bundle` as runGraphOnGpu takes it, and the launches one run
/// of it makes with `host`'s arguments (rt::planGraph): buffers passed for two pointer
/// parameters are one buffer when they are one file. False, with diagnostics, when an
/// argument or a computed grid or view is out of range.
/// `launchLocations`, where given, places errors about a launch at its source.
bool planBundleRun(const rt::GraphBundle &bundle, const HostArguments &host, DiagnosticEngine &diags,
                   CompiledGraph &compiled, std::vector<PlannedLaunch> &launches,
                   const std::vector<Location> &launchLocations = {});

/// The graph's signature as argument binding (bindArguments) takes it.
Signature signatureOf(const rt::GraphBundle &bundle);

/// Runs `launches` (one run's plan) with `host`'s buffers as `options` says, and sets
/// HostBuffer::data and ::written for every buffer that changed. False, with
/// diagnostics, when anything failed; `host` is then unchanged.
bool runGraphOnGpu(kiln::Runtime &runtime, const CompiledGraph &graph, const std::vector<PlannedLaunch> &launches,
                   HostArguments &host, const GraphRunOptions &options, DiagnosticEngine &diags,
                   TimingReport *timing = nullptr);

} // namespace kiln::launch
