//===- GraphRun.cpp - Running a graph's launches on a GPU ----------------------===//
#include "tools/launch/GraphRun.h"

#include "runtime/Bundle.h"
#include "runtime/DTypes.h"
#include "support/AtomicFile.h"
#include "support/TaskTable.h"
#include "tools/launch/DeviceLaunch.h"

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

namespace kiln::launch {

std::optional<GraphMode> parseGraphMode(std::string_view name) {
  if (name == "launches")
    return GraphMode::Launches;
  if (name == "persistent")
    return GraphMode::Persistent;
  if (name == "cuda-graph")
    return GraphMode::CudaGraph;
  return std::nullopt;
}

namespace {

/// The tasks of a launch (its programs).
uint64_t taskCount(const PlannedLaunch &l) {
  return static_cast<uint64_t>(l.grid[0]) * static_cast<uint64_t>(l.grid[1]) * static_cast<uint64_t>(l.grid[2]);
}

/// What a trace says of one run: the Chrome / Perfetto trace (JSON) and a summary line.
struct TraceReport {
  std::string json;
  std::string summary;
};

/// Builds the trace of one persistent run from its task records (support/TaskTable.h):
/// a row per worker, on it a "wait" slice from claim to start and a slice named after
/// the task's launch from start to end, in microseconds from the first claim.
TraceReport traceReport(const std::string &graph, const std::vector<PlannedLaunch> &launches,
                        const std::vector<uint64_t> &words, uint32_t workers) {
  uint64_t first = UINT64_MAX, last = 0;
  const size_t tasks = words.size() / tasks::kTraceWords;
  for (size_t t = 0; t < tasks; ++t) {
    first = std::min(first, words[t * tasks::kTraceWords]);
    last = std::max(last, words[t * tasks::kTraceWords + 2]);
  }
  std::vector<uint64_t> busy(workers, 0), waiting(workers, 0);
  nlohmann::json events = nlohmann::json::array();
  auto us = [&](uint64_t ns) { return static_cast<double>(ns - first) / 1000.0; };
  size_t t = 0;
  for (size_t l = 0; l < launches.size(); ++l) {
    const uint64_t count = taskCount(launches[l]);
    for (uint64_t p = 0; p < count; ++p, ++t) {
      const uint64_t *w = &words[t * tasks::kTraceWords];
      const uint32_t worker = static_cast<uint32_t>(w[3]), sm = static_cast<uint32_t>(w[3] >> 32);
      if (worker < workers) {
        waiting[worker] += w[1] - w[0];
        busy[worker] += w[2] - w[1];
      }
      const nlohmann::json args = {{"launch", l}, {"program", p}, {"task", t}, {"sm", sm}};
      if (w[1] > w[0])
        events.push_back({{"name", "wait"}, {"cat", "wait"}, {"ph", "X"}, {"pid", 0}, {"tid", worker},
                          {"ts", us(w[0])}, {"dur", static_cast<double>(w[1] - w[0]) / 1000.0}, {"args", args}});
      events.push_back({{"name", launches[l].label}, {"cat", "task"}, {"ph", "X"}, {"pid", 0}, {"tid", worker},
                        {"ts", us(w[1])}, {"dur", static_cast<double>(w[2] - w[1]) / 1000.0}, {"args", args}});
    }
  }
  for (uint32_t w = 0; w < workers; ++w)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", w},
                      {"args", {{"name", "worker " + std::to_string(w)}}}});
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "graph " + graph}}}});
  const nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};

  const double span = static_cast<double>(last - first) * workers;
  uint64_t busySum = 0, waitSum = 0;
  for (uint32_t w = 0; w < workers; ++w) {
    busySum += busy[w];
    waitSum += waiting[w];
  }
  auto percent = [&](double part) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", span > 0 ? 100.0 * part / span : 0.0);
    return std::string(text);
  };
  char spanText[32];
  std::snprintf(spanText, sizeof spanText, "%.1f", static_cast<double>(last - first) / 1000.0);
  TraceReport r;
  r.json = trace.dump() + "\n";
  r.summary = std::to_string(tasks) + " tasks on " + std::to_string(workers) + " workers over " + spanText +
              " us from the first claim to the last task's end; of the workers' time, " + percent(busySum) +
              " running tasks, " + percent(waitSum) + " waiting on events, " +
              percent(span - static_cast<double>(busySum + waitSum)) + " idle (claiming, or done)";
  // Each worker's idle share of the run, as the spread across workers.
  if (workers > 0 && last > first) {
    std::vector<double> idle;
    for (uint32_t w = 0; w < workers; ++w)
      idle.push_back(static_cast<double>(last - first) - static_cast<double>(busy[w] + waiting[w]));
    std::sort(idle.begin(), idle.end());
    // percent() divides by the span of all workers; one worker's share is over one span.
    auto share = [&](double v) { return percent(v * workers); };
    r.summary += "; idle per worker: min " + share(idle.front()) + ", median " + share(idle[idle.size() / 2]) +
                 ", max " + share(idle.back());
  }
  return r;
}

} // namespace

static Signature signatureOf(const std::string &name, const std::vector<rt::BundleParam> &params,
                             const std::vector<rt::BundleBlockMask> &masks) {
  Signature s;
  s.kernel = name;
  for (const rt::BundleParam &p : params)
    s.params.push_back(ParamSpec{p.name, p.dtype, p.pointer});
  for (const rt::BundleBlockMask &m : masks)
    s.masks.push_back(MaskSpec{m.name, m.blockRows, m.blockCols, m.firstParam, m.extents,
                               extentsSpelling(m.extents, s.params)});
  return s;
}

Signature signatureOf(const rt::GraphBundle &bundle) {
  Signature s = signatureOf(bundle.name, bundle.params, bundle.blockMasks);
  s.kind = "graph";
  return s;
}

Signature signatureOf(const rt::Bundle &bundle) {
  Signature s = signatureOf(bundle.kernelName, bundle.params, bundle.blockMasks);
  for (const rt::ConstValue &c : bundle.consts)
    s.consts.push_back(c.name);
  return s;
}

namespace {

/// The graph's arguments as the program takes them: two parameters given one file are
/// one buffer.
std::vector<rt::GraphArgValue> graphArguments(const HostArguments &host) {
  std::vector<rt::GraphArgValue> args;
  for (const HostArg &a : host.args) {
    rt::GraphArgValue v;
    switch (a.kind) {
    case HostArg::Kind::Buffer:
      v.kind = rt::GraphArgValue::Kind::Buffer;
      v.param = static_cast<uint32_t>(args.size());
      v.bufferId = a.buffer;
      break;
    case HostArg::Kind::Int: v.i = a.i; break;
    case HostArg::Kind::Float:
      v.kind = rt::GraphArgValue::Kind::Float;
      v.f = a.f;
      break;
    }
    args.push_back(v);
  }
  return args;
}

} // namespace

bool planBundleRun(const rt::GraphBundle &bundle, const HostArguments &host, DiagnosticEngine &diags,
                   std::vector<PlannedLaunch> &launches, const std::vector<Location> &launchLocations) {
  const std::vector<rt::GraphArgValue> args = graphArguments(host);
  rt::GraphPlanError planError;
  std::optional<std::vector<rt::PlannedGraphLaunch>> planned = rt::planGraph(bundle, args, planError);
  if (!planned) {
    const bool located = planError.step && *planError.step < launchLocations.size();
    diags.error(located ? launchLocations[*planError.step] : Location::commandLine(),
                planError.kind == rt::GraphPlanError::Kind::Grid ? DiagCode::BadGrid : DiagCode::RunArgument)
        << planError.message;
    return false;
  }
  launches.clear();
  for (const rt::PlannedGraphLaunch &p : *planned) {
    const rt::GraphLaunchStep &step = bundle.launches[p.step];
    const std::string &kernel = bundle.kernels[step.kernel].kernelName;
    PlannedLaunch l;
    l.step = p.step;
    l.grid = p.grid;
    l.label = kernel + (step.where.empty() ? "" : " (" + std::filesystem::path(step.where).filename().string() + ")");
    launches.push_back(std::move(l));
  }
  return true;
}

bool runGraphOnGpu(kiln::Runtime &runtime, const rt::GraphBundle &bundle, HostArguments &host,
                   const GraphRunOptions &options, DiagnosticEngine &diags, TimingReport *timing,
                   const std::vector<Location> &launchLocations) {
  std::vector<PlannedLaunch> launches;
  if (!planBundleRun(bundle, host, diags, launches, launchLocations))
    return false;
  if (launches.empty())
    return true; // nothing runs: every launch sat under an `if` that was false
  std::string error;
  const std::vector<uint8_t> bytes = rt::serializeGraphBundle(bundle, error);
  if (bytes.empty()) {
    reportRuntimeError(diags, KILN_ERROR_INVALID_BUNDLE, "graph '" + bundle.name + "': " + error);
    return false;
  }
  return reportingRuntimeErrors(diags, [&] {
    std::vector<kiln::Buffer> buffers;
    {
      TimingReport::Scope timer(timing, "run: upload");
      buffers = uploadBuffers(runtime, host);
    }
    std::vector<kiln_arg> args;
    for (size_t i = 0; i < host.args.size(); ++i)
      args.push_back(launchArgument(bundle.params[i], host.args[i], buffers));

    kiln::Graph graph;
    {
      TimingReport::Scope timer(timing, "run: load the graph (" + runtime.target() + ")");
      graph = runtime.load_graph_bytes(bytes);
    }
    graph.set_workers(options.workers);
    graph.set_wait_timeout_ns(options.waitTimeoutNs);
    graph.set_trace(!options.tracePath.empty());
    const kiln::GraphMode mode = options.mode == GraphMode::Persistent ? kiln::GraphMode::Persistent
                                 : options.mode == GraphMode::CudaGraph ? kiln::GraphMode::CudaGraph
                                                                        : kiln::GraphMode::Launches;

    std::vector<double> times;
    kiln::Event start, end;
    if (options.time) {
      start = runtime.create_event();
      end = runtime.create_event();
    }
    {
      TimingReport::Scope timer(timing, "run: " + std::to_string(options.runs) + " run" +
                                            (options.runs == 1 ? "" : "s") + " of the graph");
      for (uint64_t r = 0; r < std::max<uint64_t>(options.runs, 1); ++r) {
        // The first run in the CUDA-graph mode also records the graph (its time shows in
        // the maximum, not the median).
        if (options.time)
          start.record();
        graph.launch_args(args, mode);
        if (options.time) {
          end.record();
          end.synchronize();
          times.push_back(kiln::Event::elapsed_ms(start, end));
        }
        runtime.synchronize();
        graph.check();
      }
    }
    std::vector<std::vector<std::byte>> results;
    {
      TimingReport::Scope timer(timing, "run: download");
      results = downloadBuffers(buffers, host);
    }
    const kiln::GraphRunInfo info = graph.last_run();
    if (options.time && options.timeOut && !times.empty()) {
      std::ostream &os = *options.timeOut;
      os << options.tool << ": graph " << bundle.name << " on " << describeDevice(runtime) << ", "
         << (info.mode == kiln::GraphMode::Persistent
                 ? "one persistent kernel of " + std::to_string(info.workers) + " workers"
             : info.mode == kiln::GraphMode::CudaGraph ? std::string("its launches in one CUDA graph")
                                                       : std::string("launch by launch"))
         << ", " << info.launches << " launches, " << info.tasks << " tasks, " << timeSummary(times, "run", "runs")
         << "\n";
      os.flush();
    }
    if (!options.tracePath.empty() && info.mode == kiln::GraphMode::Persistent) {
      const TraceReport report = traceReport(bundle.name, launches, graph.trace(), info.workers);
      const std::string why = writeFileAtomically(
          options.tracePath, std::span(reinterpret_cast<const uint8_t *>(report.json.data()), report.json.size()));
      if (!why.empty()) {
        diags.error(Location::commandLine(), DiagCode::FileNotWritable) << why;
        return false;
      }
      if (options.timeOut)
        *options.timeOut << options.tool << ": trace of graph " << bundle.name << " in " << options.tracePath << ": "
                         << report.summary << "\n";
    }
    adoptChangedBuffers(host, results);
    return true;
  });
}

} // namespace kiln::launch
