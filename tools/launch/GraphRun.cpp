//===- GraphRun.cpp - Running a graph's launches on a GPU ----------------------===//
#include "tools/launch/GraphRun.h"

#include "runtime/Args.h"
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

/// The device-side state of one graph run by the persistent kernel: the counters that
/// persist from run to run and the host's record of where they stand.
struct PersistentState {
  kiln::Kernel kernel;
  kiln::Buffer table, sync, trace;
  unsigned recordWords = 0;
  uint32_t workers = 0;
  uint32_t claimed = 0;              ///< the claim counter after the last run
  std::vector<uint32_t> slotCounts;  ///< each slot's counter after the last run
};

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

Signature signatureOf(const rt::GraphBundle &bundle) {
  Signature s;
  s.kernel = bundle.name;
  for (const rt::BundleParam &p : bundle.params)
    s.params.push_back(ParamSpec{p.name, p.dtype, p.pointer});
  return s;
}

bool planBundleRun(const rt::GraphBundle &bundle, const HostArguments &host, DiagnosticEngine &diags,
                   CompiledGraph &compiled, std::vector<PlannedLaunch> &launches,
                   const std::vector<Location> &launchLocations) {
  auto fail = [&](const std::string &message) {
    diags.error(Location::commandLine(), DiagCode::RunArgument) << message;
    return false;
  };
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
  rt::GraphPlanError planError;
  std::optional<std::vector<rt::PlannedGraphLaunch>> planned = rt::planGraph(bundle, args, planError);
  if (!planned) {
    const bool located = planError.step && *planError.step < launchLocations.size();
    diags.error(located ? launchLocations[*planError.step] : Location::commandLine(),
                planError.kind == rt::GraphPlanError::Kind::Grid ? DiagCode::BadGrid : DiagCode::RunArgument)
        << planError.message;
    return false;
  }
  std::string error;

  compiled.name = bundle.name;
  compiled.kernels = bundle.kernels;
  compiled.slots = static_cast<unsigned>(bundle.launches.size());
  compiled.megakernel.clear();
  if (bundle.persistent) {
    compiled.megakernel = rt::serializeBundle(*bundle.persistent, error);
    if (compiled.megakernel.empty())
      return fail("graph '" + bundle.name + "': invalid persistent kernel: " + error);
  }
  launches.clear();
  for (const rt::PlannedGraphLaunch &p : *planned) {
    const rt::GraphLaunchStep &step = bundle.launches[p.step];
    const std::string &kernel = bundle.kernels[step.kernel].kernelName;
    PlannedLaunch l;
    l.slot = p.step;
    l.kernel = step.kernel;
    l.grid = p.grid;
    l.what = "the launch of kernel '" + kernel + "'" + (step.where.empty() ? "" : " at " + step.where);
    l.label = kernel + (step.where.empty() ? "" : " (" + std::filesystem::path(step.where).filename().string() + ")");
    for (const rt::GraphArgValue &a : p.args) {
      GraphArgument g;
      switch (a.kind) {
      case rt::GraphArgValue::Kind::Buffer: {
        const HostBuffer &buffer = host.buffers[host.args[a.param].buffer];
        const int64_t bytes = static_cast<int64_t>(rt::dtypeSizeBytes(bundle.params[a.param].dtype));
        if (a.i < 0 || a.i > static_cast<int64_t>(buffer.data.size()) / bytes)
          return fail("graph '" + bundle.name + "': " + l.what + " passes " + bundle.params[a.param].name +
                      " + " + std::to_string(a.i) + ", outside its " +
                      std::to_string(static_cast<int64_t>(buffer.data.size()) / bytes) + " elements");
        g.value.kind = HostArg::Kind::Buffer;
        g.value.buffer = host.args[a.param].buffer;
        g.byteOffset = static_cast<uint64_t>(a.i * bytes);
        break;
      }
      case rt::GraphArgValue::Kind::Int:
        g.value.kind = HostArg::Kind::Int;
        g.value.i = a.i;
        break;
      case rt::GraphArgValue::Kind::Float:
        g.value.kind = HostArg::Kind::Float;
        g.value.f = a.f;
        break;
      }
      l.args.push_back(g);
    }
    l.after = std::vector<unsigned>(p.after.begin(), p.after.end());
    launches.push_back(std::move(l));
  }
  return true;
}

bool runGraphOnGpu(kiln::Runtime &runtime, const CompiledGraph &graph, const std::vector<PlannedLaunch> &launches,
                   HostArguments &host, const GraphRunOptions &options, DiagnosticEngine &diags,
                   TimingReport *timing) {
  auto fail = [&](kiln_status status, const std::string &message, const std::string &hint = "") {
    reportRuntimeError(diags, status, "graph '" + graph.name + "': " + message, hint);
    return false;
  };
  return reportingRuntimeErrors(diags, [&] {
    const std::vector<rt::Bundle> &signatures = graph.kernels;
    for (const PlannedLaunch &l : launches)
      if (l.kernel >= signatures.size() || l.args.size() != signatures[l.kernel].params.size())
        KILN_ICE("a planned launch does not match its kernel");

    std::vector<kiln::Buffer> buffers;
    {
      TimingReport::Scope timer(timing, "run: upload");
      buffers = uploadBuffers(runtime, host);
    }

    // One run, launch by launch or as one persistent kernel: what goes before the timed
    // part (the table's upload), then the launches.
    std::function<void()> prepare = [] {}, runOnce;
    std::vector<kiln::Kernel> kernels;
    PersistentState persistent;
    // Each launch's arguments, as a launch of its kernel takes them.
    std::vector<std::vector<kiln_arg>> launchArgs;
    for (const PlannedLaunch &l : launches) {
      std::vector<kiln_arg> args;
      for (size_t i = 0; i < l.args.size(); ++i)
        args.push_back(launchArgument(signatures[l.kernel].params[i], l.args[i].value, buffers, l.args[i].byteOffset));
      launchArgs.push_back(std::move(args));
    }
    kiln::Recording recording;
    if (options.mode != GraphMode::Persistent) {
      TimingReport::Scope timer(timing, "run: load the kernels (" + runtime.target() + ")");
      for (const rt::Bundle &bundle : graph.kernels) {
        std::string error;
        const std::vector<uint8_t> bytes = rt::serializeBundle(bundle, error);
        if (bytes.empty())
          return fail(KILN_ERROR_INVALID_BUNDLE, "invalid bundle: " + error);
        kernels.push_back(runtime.load_bundle_bytes(bytes));
      }
      runOnce = [&] {
        for (size_t i = 0; i < launches.size(); ++i)
          kernels[launches[i].kernel].launch_args(
              kiln::Grid(launches[i].grid[0], launches[i].grid[1], launches[i].grid[2]), launchArgs[i]);
      };
      if (options.mode == GraphMode::CudaGraph) {
        // Recorded once, before the runs; each run replays the recording.
        runtime.begin_recording();
        runOnce();
        recording = runtime.end_recording();
        runOnce = [&] { recording.replay(); };
      }
    } else {
      if (graph.megakernel.empty())
        KILN_ICE("persistent mode without a megakernel");
      {
        TimingReport::Scope timer(timing, "run: load the persistent kernel (" + runtime.target() + ")");
        persistent.kernel = runtime.load_bundle_bytes(graph.megakernel);
      }
      std::string error;
      std::optional<rt::Bundle> mega = rt::parseBundle(graph.megakernel, error);
      if (!mega)
        return fail(KILN_ERROR_INVALID_BUNDLE, "invalid bundle: " + error);
      for (const rt::ConstValue &c : mega->consts)
        if (c.name == "RECORD_WORDS")
          persistent.recordWords = static_cast<unsigned>(std::get<int64_t>(c.value));
      if (persistent.recordWords < tasks::kRecordHeaderWords)
        return fail(KILN_ERROR_INVALID_BUNDLE, "the persistent kernel's bundle does not say its record size");
      persistent.workers = options.workers ? options.workers : persistent.kernel.info().resident_programs();
      if (persistent.workers == 0)
        return fail(KILN_ERROR_LAUNCH, "not one program of the persistent kernel fits on " + describeDevice(runtime),
                    "--graph-mode=launches runs the kernels one by one");

      // The table: one record per launch; the waits normalised to one per launch.
      std::vector<std::vector<unsigned>> after;
      for (const PlannedLaunch &l : launches)
        after.push_back(l.after);
      const std::vector<int> waits = tasks::singleWaits(after);
      uint64_t total = 0;
      std::vector<uint64_t> words(launches.size() * persistent.recordWords, 0);
      rt::BufferResolver resolveBuffer = [](const kiln_buffer *b, std::string &) -> std::optional<rt::BufferRef> {
        return rt::BufferRef{kiln_buffer_device_address(b), kiln_buffer_size(b), rt::fromCDType(kiln_buffer_dtype(b))};
      };
      rt::MaskResolver noMasks = [](const kiln_block_mask *, std::string &why) -> std::optional<rt::MaskRef> {
        why = "a graph's launches take no block mask";
        return std::nullopt;
      };
      for (size_t i = 0; i < launches.size(); ++i) {
        const PlannedLaunch &l = launches[i];
        const rt::Bundle &sig = signatures[l.kernel];
        uint64_t *rec = &words[i * persistent.recordWords];
        rec[0] = l.kernel | (total << 32);
        rec[1] = static_cast<uint64_t>(l.grid[0]) | (static_cast<uint64_t>(l.grid[1]) << 32);
        rec[2] = static_cast<uint64_t>(l.grid[2]) | (uint64_t{0xffffffffu} << 32); // wait slot: set per run
        rec[3] = static_cast<uint64_t>(l.slot) << 32;
        // The argument words are what a launch of the kernel would pass: the runtime's
        // own packing, with its checks (dtypes, ranges, the divisibility compiled in).
        rt::PackedArgs packed;
        if (std::optional<rt::ArgsError> error =
                rt::packLaunchArgs(sig.kernelName, sig.params, sig.blockMasks, launchArgs[i], resolveBuffer,
                                   noMasks, packed))
          return fail(error->status, error->message + " (in " + l.what + ")");
        std::copy(packed.slots.begin(), packed.slots.end(), rec + tasks::kRecordHeaderWords);
        total += taskCount(l);
      }
      if (total > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) - persistent.workers)
        return fail(KILN_ERROR_INVALID_VALUE, "one run has " + std::to_string(total) + " tasks; at most " +
                                                  std::to_string(std::numeric_limits<int32_t>::max()) + " are supported");
      persistent.table = runtime.alloc(std::max<size_t>(words.size() * 8, 8), KILN_DTYPE_U64);
      // No trace: a buffer of 0 bytes, which the kernel sees as a null pointer.
      persistent.trace = runtime.alloc(options.tracePath.empty() ? 0 : total * tasks::kTraceWords * 8, KILN_DTYPE_U64);
      const size_t syncWords = tasks::kFirstCounterWord + graph.slots;
      persistent.sync = runtime.alloc(syncWords * 4, KILN_DTYPE_U32);
      persistent.sync.fill(0);
      persistent.slotCounts.assign(graph.slots, 0);
      persistent.claimed = 0;

      prepare = [&, words, waits]() mutable {
        // Each wait's absolute target: where the counter it waits on ends this run.
        for (size_t i = 0; i < launches.size(); ++i) {
          uint64_t *rec = &words[i * persistent.recordWords];
          uint32_t slot = 0xffffffffu, target = 0;
          if (waits[i] >= 0) {
            const PlannedLaunch &w = launches[static_cast<size_t>(waits[i])];
            slot = w.slot;
            target = persistent.slotCounts[w.slot] + static_cast<uint32_t>(taskCount(w));
          }
          rec[2] = (rec[2] & 0xffffffffu) | (static_cast<uint64_t>(slot) << 32);
          rec[3] = (rec[3] & ~uint64_t{0xffffffffu}) | target;
        }
        // Fault injection for the watchdog's test (docs/testing.md): the last wait
        // asks for one task more than its launch has, so it can never be met.
        if (const char *fault = std::getenv("KILN_TEST_GRAPH_UNREACHABLE_WAIT"); fault && *fault == '1')
          for (size_t i = launches.size(); i-- > 0;)
            if (waits[i] >= 0) {
              words[i * persistent.recordWords + 3] += 1;
              break;
            }
        persistent.table.write(words.data(), words.size() * 8);
      };
      runOnce = [&, total] {
        std::array<kiln_arg, tasks::kNumParams> args{};
        args[0] = kiln::detail::toArg(persistent.table);
        args[1] = kiln::detail::toArg(static_cast<int32_t>(launches.size()));
        args[2] = kiln::detail::toArg(static_cast<int32_t>(total));
        args[3] = kiln::detail::toArg(persistent.sync);
        args[4] = kiln::detail::toArg(persistent.claimed);
        args[5] = kiln::detail::toArg(static_cast<int64_t>(std::min<uint64_t>(
            options.waitTimeoutNs, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))));
        args[6] = kiln::detail::toArg(persistent.trace);
        persistent.kernel.launch_args(kiln::Grid(persistent.workers), args);
        persistent.claimed += static_cast<uint32_t>(total) + persistent.workers;
        for (const PlannedLaunch &l : launches)
          persistent.slotCounts[l.slot] += static_cast<uint32_t>(taskCount(l));
      };
    }

    // The persistent kernel's watchdog record, read after a run.
    auto checkStopped = [&]() -> bool {
      if (options.mode != GraphMode::Persistent)
        return true;
      uint32_t head[tasks::kFirstCounterWord] = {};
      persistent.sync.read(head, sizeof head);
      if (head[tasks::kAbortWord] == 0)
        return true;
      const uint32_t task = head[tasks::kErrorTaskWord], slot = head[tasks::kErrorSlotWord];
      // Which launch the task belongs to, and which it waited for.
      std::string who = "task " + std::to_string(task), whom = "slot " + std::to_string(slot);
      uint64_t first = 0;
      for (const PlannedLaunch &l : launches) {
        if (task >= first && task < first + taskCount(l))
          who = "task " + std::to_string(task) + " (program " + std::to_string(task - first) + " of " + l.what + ")";
        if (l.slot == slot)
          whom = l.what;
        first += taskCount(l);
      }
      // Counters and the claim are left mid-run: start the next run from zero.
      persistent.sync.fill(0);
      persistent.claimed = 0;
      std::fill(persistent.slotCounts.begin(), persistent.slotCounts.end(), 0);
      return fail(KILN_ERROR_LAUNCH,
                  "the persistent kernel stopped: " + who + " waited more than " +
                      std::to_string(options.waitTimeoutNs / 1'000'000) + " ms for " + whom + " (its counter was at " +
                      std::to_string(head[tasks::kErrorSeenWord]) + ", waiting for " +
                      std::to_string(head[tasks::kErrorTargetWord]) + ")",
                  "--graph-wait-timeout sets the limit in milliseconds");
    };

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
        prepare();
        if (options.time)
          start.record();
        runOnce();
        if (options.time) {
          end.record();
          end.synchronize();
          times.push_back(kiln::Event::elapsed_ms(start, end));
        }
        runtime.synchronize();
        if (!checkStopped())
          return false;
      }
    }
    std::vector<std::vector<std::byte>> results;
    {
      TimingReport::Scope timer(timing, "run: download");
      results = downloadBuffers(buffers, host);
    }
    if (options.time && options.timeOut && !times.empty()) {
      uint64_t tasksPerRun = 0;
      for (const PlannedLaunch &l : launches)
        tasksPerRun += taskCount(l);
      std::ostream &os = *options.timeOut;
      os << options.tool << ": graph " << graph.name << " on " << describeDevice(runtime) << ", "
         << (options.mode == GraphMode::Persistent
                 ? "one persistent kernel of " + std::to_string(persistent.workers) + " workers"
             : options.mode == GraphMode::CudaGraph ? std::string("its launches in one CUDA graph")
                                                    : std::string("launch by launch"))
         << ", " << launches.size() << " launches, " << tasksPerRun << " tasks, " << timeSummary(times, "run", "runs")
         << "\n";
      os.flush();
    }
    if (!options.tracePath.empty() && options.mode == GraphMode::Persistent) {
      std::vector<uint64_t> words(persistent.trace.size_bytes() / 8);
      persistent.trace.read(words.data(), words.size() * 8);
      const TraceReport report = traceReport(graph.name, launches, words, persistent.workers);
      const std::string error = writeFileAtomically(
          options.tracePath, std::span(reinterpret_cast<const uint8_t *>(report.json.data()), report.json.size()));
      if (!error.empty()) {
        diags.error(Location::commandLine(), DiagCode::FileNotWritable) << error;
        return false;
      }
      if (options.timeOut)
        *options.timeOut << options.tool << ": trace of graph " << graph.name << " in " << options.tracePath << ": "
                         << report.summary << "\n";
    }
    adoptChangedBuffers(host, results);
    return true;
  });
}

} // namespace kiln::launch
