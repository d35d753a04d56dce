//===- GraphLaunch.cpp - Running a graph bundle (kiln_graph_* of the C API) -===//
//
// A graph runs on the runtime's own public calls: its kernels are kiln_kernels, its
// launches kiln_launch, a CUDA graph a kiln_recording, the persistent kernel one more
// kiln_kernel over a launch table in a kiln_buffer. Each call evaluates the graph's
// program on its arguments (rt::planGraph, GraphPlan.cpp) and checks every launch's
// arguments before it enqueues anything, then runs the launches in one of three modes:
//
//   launches     each launch as its own kernel launch, in order
//   cuda-graph   the same launches recorded once as a CUDA graph and replayed while the
//                arguments stay the same
//   persistent   one launch of the persistent kernel (codegen/Megakernel.cpp) over as
//                many workers as the device holds at once, with the launch table of
//                support/TaskTable.h, whose events (TaskEvents.h) let each task wait
//                only for the tasks whose memory it touches; its counters only grow,
//                so repeated runs need no reset, and a wait that times out leaves a
//                record kiln_graph_check turns into an error naming the task and the
//                tasks it waited for
//
//===----------------------------------------------------------------------===//
#include "runtime/Args.h"
#include "runtime/CheckReport.h"
#include "runtime/DTypes.h"
#include "runtime/GraphBundle.h"
#include "runtime/GuardedCall.h"
#include "runtime/TaskEvents.h"
#include "runtime/kiln_runtime.h"
#include "support/CheckRecord.h"
#include "support/TaskTable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <numeric>

using namespace kiln;

struct kiln_graph {
  kiln_runtime *runtime = nullptr; ///< a share of the caller's runtime
  rt::GraphBundle bundle;
  std::vector<kiln_kernel *> kernels; ///< loaded on first use, by index
  kiln_kernel *persistent = nullptr;
  unsigned recordWords = 0;
  bool checkedTasks = false; ///< the persistent kernel is checked (support/TaskTable.h)
  uint32_t workersWanted = 0;
  uint64_t timeoutNs = 10'000'000'000ull;
  bool traceEnabled = false;

  // The persistent mode's device state: counters that persist from run to run.
  kiln_buffer *table = nullptr, *sync = nullptr, *trace = nullptr, *taskEvents = nullptr;
  kiln_buffer *checkRecord = nullptr; ///< checked: support/CheckRecord.h
  uint32_t claimed = 0;             ///< the claim counter after the last run
  rt::TaskEvents events;            ///< the table's events
  uint64_t traceWords = 0;
  bool tableCurrent = false; ///< the table holds lastPlan's launches
  bool wholeLaunchEvents = false; ///< KILN_GRAPH_WHOLE_LAUNCH_EVENTS=1: the baseline
  bool tableNarrowed = false;     ///< the table's events are narrowed to tasks
  uint32_t tableRuns = 0;    ///< the runs it served since it was written
  uint32_t residentWorkers = 0; ///< the occupancy query's answer, asked once

  // The last call, which a call with the same key repeats without planning again.
  std::vector<uint64_t> lastKey;
  std::vector<std::vector<kiln_arg>> lastLaunchArgs;
  std::vector<rt::PackedArgs> lastPacked;

  // The CUDA-graph mode's recording, and the launches it holds.
  kiln_recording *recording = nullptr;
  std::vector<uint64_t> recordedKey;

  // The last run.
  kiln_graph_mode lastMode = KILN_GRAPH_MODE_AUTO;
  std::vector<rt::PlannedGraphLaunch> lastPlan;
  uint32_t lastWorkers = 0;

  ~kiln_graph() {
    kiln_recording_destroy(recording);
    kiln_buffer_free(table);
    kiln_buffer_free(sync);
    kiln_buffer_free(trace);
    kiln_buffer_free(taskEvents);
    kiln_buffer_free(checkRecord);
    for (kiln_kernel *k : kernels)
      kiln_kernel_destroy(k);
    kiln_kernel_destroy(persistent);
    kiln_runtime_destroy(runtime);
  }
};

namespace {

kiln_status fail(kiln_status status, const std::string &message) { return kiln_set_last_error(status, message.c_str()); }

/// The last error of a runtime call, prefixed with what the graph was doing.
kiln_status failWith(kiln_status status, const std::string &context) {
  return fail(status, context + ": " + kiln_last_error());
}

template <typename Body> kiln_status guarded(Body &&body) { return rt::guardedCall(std::forward<Body>(body)); }

uint64_t taskCount(const rt::PlannedGraphLaunch &l) {
  return static_cast<uint64_t>(l.grid[0]) * static_cast<uint64_t>(l.grid[1]) * static_cast<uint64_t>(l.grid[2]);
}

std::string describeLaunch(const kiln_graph &g, uint32_t step) {
  const rt::GraphLaunchStep &l = g.bundle.launches[step];
  return "the launch of kernel '" + g.bundle.kernels[l.kernel].kernelName + "'" +
         (l.where.empty() ? "" : " at " + l.where);
}

kiln_status load(kiln_runtime *runtime, std::span<const uint8_t> bytes, kiln_graph **out) {
  if (!runtime || !out)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_load: null runtime or out pointer");
  *out = nullptr;
  std::string error;
  std::optional<rt::GraphBundle> bundle = rt::parseGraphBundle(bytes, error);
  if (!bundle)
    return fail(KILN_ERROR_INVALID_BUNDLE, "not a usable graph bundle: " + error);
  auto g = std::make_unique<kiln_graph>();
  if (kiln_status s = kiln_runtime_share(runtime, &g->runtime); s != KILN_SUCCESS)
    return s;
  g->bundle = std::move(*bundle);
  g->kernels.assign(g->bundle.kernels.size(), nullptr);
  const char *whole = std::getenv("KILN_GRAPH_WHOLE_LAUNCH_EVENTS");
  g->wholeLaunchEvents = whole && *whole == '1';
  if (g->bundle.persistent)
    for (const rt::ConstValue &c : g->bundle.persistent->consts) {
      if (c.name == "RECORD_WORDS")
        g->recordWords = static_cast<unsigned>(std::get<int64_t>(c.value));
      else if (c.name == "CHECKED")
        g->checkedTasks = std::get<int64_t>(c.value) == 1;
    }
  *out = g.release();
  return KILN_SUCCESS;
}

/// Loads a bundle the graph holds (a kernel or the persistent kernel).
kiln_status loadBundle(kiln_graph &g, const rt::Bundle &bundle, kiln_kernel **out) {
  std::string error;
  const std::vector<uint8_t> bytes = rt::serializeBundle(bundle, error);
  if (bytes.empty())
    return fail(KILN_ERROR_INVALID_BUNDLE, "graph '" + g.bundle.name + "': kernel " + bundle.kernelName + ": " + error);
  if (kiln_status s = kiln_kernel_load_memory(g.runtime, bytes.data(), bytes.size(), out); s != KILN_SUCCESS)
    return failWith(s, "graph '" + g.bundle.name + "': kernel " + bundle.kernelName);
  return KILN_SUCCESS;
}

/// The call's arguments as the graph's program takes them: buffers passed for two
/// parameters get one id when their memory overlaps (they may be one buffer).
kiln_status graphArguments(const kiln_graph &g, const kiln_arg *args, size_t n, std::vector<rt::GraphArgValue> &out) {
  const rt::GraphBundle &b = g.bundle;
  if (n != b.params.size() || (n && !args))
    return fail(KILN_ERROR_ARGUMENT_MISMATCH, "graph '" + b.name + "' takes " + std::to_string(b.params.size()) +
                                                  " arguments, " + std::to_string(n) + " given");
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges(n, Range{0, 0});
  for (size_t i = 0; i < n; ++i) {
    const rt::BundleParam &p = b.params[i];
    const kiln_arg &a = args[i];
    const std::string what = "argument " + std::to_string(i) + " of graph '" + b.name + "' (" + p.name + ": " +
                             rt::paramTypeSpelling(p.dtype, p.pointer) + ")";
    rt::GraphArgValue v;
    if (p.pointer) {
      if (a.kind != KILN_ARG_BUFFER)
        return fail(KILN_ERROR_ARGUMENT_MISMATCH, what + " needs a buffer");
      uint64_t address = 0;
      size_t size = 0;
      kiln_dtype dtype = KILN_DTYPE_NONE;
      if (kiln_buffer_query(g.runtime, a.value.buffer.buffer, &address, &size, &dtype) != KILN_SUCCESS)
        return failWith(KILN_ERROR_INVALID_VALUE, what);
      if (dtype != KILN_DTYPE_NONE && dtype != rt::toCDType(p.dtype))
        return fail(KILN_ERROR_ARGUMENT_MISMATCH, what + " is given a buffer of another dtype");
      if (a.value.buffer.offset > size)
        return fail(KILN_ERROR_INVALID_VALUE, what + ": offset past the end of the buffer");
      v.kind = rt::GraphArgValue::Kind::Buffer;
      v.param = static_cast<uint32_t>(i);
      ranges[i] = Range{address, address + size};
    } else if (rt::dtypeIsFloat(p.dtype)) {
      if (a.kind != KILN_ARG_FLOAT && a.kind != KILN_ARG_INT)
        return fail(KILN_ERROR_ARGUMENT_MISMATCH, what + " needs a number");
      v.kind = rt::GraphArgValue::Kind::Float;
      v.f = a.kind == KILN_ARG_FLOAT ? a.value.f : static_cast<double>(a.value.i);
    } else {
      if (a.kind == KILN_ARG_INT)
        v.i = a.value.i;
      else if (a.kind == KILN_ARG_UINT)
        v.i = static_cast<int64_t>(a.value.u);
      else if (a.kind == KILN_ARG_BOOL)
        v.i = a.value.b != 0;
      else
        return fail(KILN_ERROR_ARGUMENT_MISMATCH, what + " needs an integer");
    }
    out.push_back(v);
  }
  // One id per group of overlapping buffers.
  for (size_t i = 0; i < n; ++i) {
    if (out[i].kind != rt::GraphArgValue::Kind::Buffer)
      continue;
    out[i].bufferId = i;
    for (size_t j = 0; j < i; ++j)
      if (out[j].kind == rt::GraphArgValue::Kind::Buffer && ranges[i].begin < ranges[j].end &&
          ranges[j].begin < ranges[i].end) {
        out[i].bufferId = out[j].bufferId;
        break;
      }
  }
  return KILN_SUCCESS;
}

/// The call's arguments with each block mask given whole (KILN_ARG_BLOCK_MASK) replaced
/// by its five parts, block sizes and declared extents checked.
kiln_status expandMasks(const kiln_graph &g, const kiln_arg *args, size_t n, std::vector<kiln_arg> &out) {
  rt::MaskResolver resolveMask = [&](const kiln_block_mask *mask, std::string &why) -> std::optional<rt::MaskRef> {
    int64_t rows = 0, cols = 0, blockRows = 0, blockCols = 0;
    rt::MaskRef ref;
    if (kiln_block_mask_query(g.runtime, mask, &rows, &cols, &blockRows, &blockCols, &ref.rowStart, &ref.blocks,
                              &ref.bitmaps) != KILN_SUCCESS) {
      why = kiln_last_error();
      return std::nullopt;
    }
    ref.rows = static_cast<int32_t>(rows);
    ref.cols = static_cast<int32_t>(cols);
    ref.blockRows = static_cast<int32_t>(blockRows);
    ref.blockCols = static_cast<int32_t>(blockCols);
    return ref;
  };
  if (n && !args)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_launch: null arguments");
  if (std::optional<rt::ArgsError> error = rt::expandMaskArgs(g.bundle.name, g.bundle.params, g.bundle.blockMasks,
                                                              std::span<const kiln_arg>(args, n), resolveMask, out))
    return fail(error->status, error->message);
  return KILN_SUCCESS;
}

/// What decides a call's plan and packed arguments: the mode, each argument's kind and
/// bits, and for a buffer its handle, device address, size and view offset. A call
/// whose key equals the last one's runs the last plan again without planning, checking
/// or writing anything; empty when a buffer is not valid (the full path reports it).
std::vector<uint64_t> callKey(const kiln_graph &g, const kiln_arg *args, size_t n, kiln_graph_mode mode) {
  std::vector<uint64_t> key{static_cast<uint64_t>(mode), n};
  for (size_t i = 0; i < n && args; ++i) {
    const kiln_arg &a = args[i];
    key.push_back(static_cast<uint64_t>(a.kind));
    if (a.kind == KILN_ARG_BUFFER) {
      uint64_t address = 0;
      size_t size = 0;
      if (kiln_buffer_query(g.runtime, a.value.buffer.buffer, &address, &size, nullptr) != KILN_SUCCESS)
        return {};
      key.insert(key.end(), {reinterpret_cast<uint64_t>(a.value.buffer.buffer), address, size,
                             a.value.buffer.offset});
    } else {
      uint64_t bits = 0;
      std::memcpy(&bits, &a.value, std::min(sizeof bits, sizeof a.value));
      key.push_back(bits);
    }
  }
  return key;
}

/// Launch `p`'s arguments as kiln_launch takes them.
kiln_status launchArguments(const kiln_graph &g, const rt::PlannedGraphLaunch &p, const kiln_arg *graphArgs,
                            std::vector<kiln_arg> &out) {
  for (const rt::GraphArgValue &a : p.args) {
    kiln_arg k{};
    switch (a.kind) {
    case rt::GraphArgValue::Kind::Buffer: {
      const kiln_arg &base = graphArgs[a.param];
      const uint64_t bytes = rt::dtypeSizeBytes(g.bundle.params[a.param].dtype);
      if (a.i < 0)
        return fail(KILN_ERROR_INVALID_VALUE, "graph '" + g.bundle.name + "': " + describeLaunch(g, p.step) +
                                                  " passes a view " + std::to_string(-a.i) + " elements before " +
                                                  g.bundle.params[a.param].name);
      k.kind = KILN_ARG_BUFFER;
      k.value.buffer.buffer = base.value.buffer.buffer;
      k.value.buffer.offset = base.value.buffer.offset + static_cast<uint64_t>(a.i) * bytes;
      break;
    }
    case rt::GraphArgValue::Kind::Int:
      k.kind = KILN_ARG_INT;
      k.value.i = a.i;
      break;
    case rt::GraphArgValue::Kind::Float:
      k.kind = KILN_ARG_FLOAT;
      k.value.f = a.f;
      break;
    }
    out.push_back(k);
  }
  return KILN_SUCCESS;
}

/// Every launch's arguments checked and packed as kiln_launch would (dtypes, ranges,
/// bounds, the divisibility compiled in), before anything of the run is enqueued.
kiln_status packAll(const kiln_graph &g, const std::vector<std::vector<kiln_arg>> &args,
                    std::vector<rt::PackedArgs> &packed) {
  rt::BufferResolver resolve = [&](const kiln_buffer *buffer, std::string &why) -> std::optional<rt::BufferRef> {
    uint64_t address = 0;
    size_t size = 0;
    kiln_dtype dtype = KILN_DTYPE_NONE;
    if (kiln_buffer_query(g.runtime, buffer, &address, &size, &dtype) != KILN_SUCCESS) {
      why = kiln_last_error();
      return std::nullopt;
    }
    return rt::BufferRef{address, size, rt::fromCDType(dtype)};
  };
  packed.assign(args.size(), {});
  for (size_t i = 0; i < args.size(); ++i) {
    const uint32_t step = g.lastPlan[i].step;
    const rt::Bundle &sig = g.bundle.kernels[g.bundle.launches[step].kernel];
    if (std::optional<rt::ArgsError> error =
            rt::packLaunchArgs(sig.kernelName, sig.params, sig.blockMasks, args[i], resolve, {}, packed[i]))
      return fail(error->status,
                  "graph '" + g.bundle.name + "': " + error->message + " (in " + describeLaunch(g, step) + ")");
  }
  return KILN_SUCCESS;
}

kiln_status runLaunches(kiln_graph &g, const std::vector<std::vector<kiln_arg>> &args) {
  for (size_t i = 0; i < g.lastPlan.size(); ++i) {
    const rt::PlannedGraphLaunch &p = g.lastPlan[i];
    const uint32_t kernel = g.bundle.launches[p.step].kernel;
    const kiln_grid grid{static_cast<uint32_t>(p.grid[0]), static_cast<uint32_t>(p.grid[1]),
                         static_cast<uint32_t>(p.grid[2])};
    if (kiln_status s = kiln_launch(g.kernels[kernel], grid, args[i].data(), args[i].size()); s != KILN_SUCCESS)
      return failWith(s, "graph '" + g.bundle.name + "': " + describeLaunch(g, p.step));
  }
  return KILN_SUCCESS;
}

/// The persistent kernel's table for lastPlan (support/TaskTable.h): one record per
/// launch that runs.
std::vector<uint64_t> tableWords(const kiln_graph &g, const std::vector<rt::PackedArgs> &packed) {
  const std::vector<rt::PlannedGraphLaunch> &plan = g.lastPlan;
  const rt::TaskEvents &events = g.events;
  std::vector<uint64_t> words(plan.size() * g.recordWords, 0);
  for (size_t i = 0; i < plan.size(); ++i) {
    const rt::PlannedGraphLaunch &p = plan[i];
    const uint32_t kernel = g.bundle.launches[p.step].kernel;
    uint64_t *rec = &words[i * g.recordWords];
    rec[0] = kernel | (static_cast<uint64_t>(events.firstTask[i]) << 32);
    rec[1] = static_cast<uint64_t>(p.grid[0]) | (static_cast<uint64_t>(p.grid[1]) << 32);
    rec[2] = static_cast<uint64_t>(p.grid[2]);
    // The argument words are what a launch of the kernel would pass.
    std::copy(packed[i].slots.begin(), packed[i].slots.end(), rec + tasks::kRecordHeaderWords);
    if (g.checkedTasks) {
      // Then each pointer's extent: the bytes from the view to the end of its buffer.
      const unsigned extents = tasks::kRecordHeaderWords + (g.recordWords - tasks::kRecordHeaderWords) / 2;
      const std::vector<kiln_arg> &args = g.lastLaunchArgs[i];
      for (size_t a = 0; a < args.size(); ++a) {
        if (args[a].kind != KILN_ARG_BUFFER)
          continue;
        size_t size = 0;
        (void)kiln_buffer_query(g.runtime, args[a].value.buffer.buffer, nullptr, &size, nullptr);
        const uint64_t offset = args[a].value.buffer.offset;
        rec[extents + a] = offset < size ? size - offset : 0;
      }
    }
  }
  return words;
}

/// Each task's events (support/TaskTable.h): the event it waits on and the one it
/// triggers, and the size of the first.
std::vector<uint64_t> taskEventWords(const kiln_graph &g) {
  const rt::TaskEvents &events = g.events;
  const size_t tasks = events.wait.size();
  std::vector<uint64_t> words(tasks * tasks::kTaskWords, 0);
  uint64_t *perTask = words.data();
  for (size_t t = 0; t < tasks; ++t) {
    perTask[t * tasks::kTaskWords] = events.wait[t] | (static_cast<uint64_t>(events.trigger[t]) << 32);
    const uint64_t size = events.wait[t] == rt::kNoEvent ? 0 : events.eventSize[events.wait[t]];
    perTask[t * tasks::kTaskWords + 1] = size | (size << 32);
  }
  // Fault injection for the watchdog's test (docs/testing.md): the last wait asks for
  // one task more than its event has, so it can never be met.
  if (const char *fault = std::getenv("KILN_TEST_GRAPH_UNREACHABLE_WAIT"); fault && *fault == '1')
    for (size_t t = tasks; t-- > 0;)
      if (events.wait[t] != rt::kNoEvent) {
        perTask[t * tasks::kTaskWords + 1] += 1;
        break;
      }
  return words;
}

kiln_status runPersistent(kiln_graph &g, const std::vector<rt::PackedArgs> &packed) {
  const rt::GraphBundle &b = g.bundle;
  if (!g.persistent)
    if (kiln_status s = loadBundle(g, *b.persistent, &g.persistent); s != KILN_SUCCESS)
      return s;
  if (!g.residentWorkers && kiln_kernel_resident_programs(g.persistent, &g.residentWorkers) != KILN_SUCCESS)
    return failWith(KILN_ERROR_LAUNCH, "graph '" + b.name + "'");
  const uint32_t workers = g.workersWanted ? g.workersWanted : g.residentWorkers;
  if (!workers)
    return fail(KILN_ERROR_LAUNCH, "graph '" + b.name + "': not one program of the persistent kernel fits on " +
                                       std::string(kiln_runtime_device_name(g.runtime)));
  const std::vector<rt::PlannedGraphLaunch> &plan = g.lastPlan;
  uint64_t total = 0;
  for (const rt::PlannedGraphLaunch &p : plan)
    total += taskCount(p);
  if (total > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) - workers)
    return fail(KILN_ERROR_INVALID_VALUE, "graph '" + b.name + "': one run has " + std::to_string(total) +
                                              " tasks; at most " +
                                              std::to_string(std::numeric_limits<int32_t>::max()) + " are supported");

  auto ensure = [&](kiln_buffer *&buffer, size_t bytes, kiln_dtype dtype) -> kiln_status {
    if (buffer && kiln_buffer_size(buffer) >= bytes)
      return KILN_SUCCESS;
    kiln_buffer_free(buffer);
    buffer = nullptr;
    if (kiln_status s = kiln_buffer_alloc(g.runtime, bytes, dtype, &buffer); s != KILN_SUCCESS)
      return failWith(s, "graph '" + b.name + "'");
    return KILN_SUCCESS;
  };
  // A first run of new arguments plans its events on whole launches, which takes
  // microseconds; the same arguments run again plan them per task once (about 0.1 s for
  // the Llama-shaped step) and keep them. So a loop whose scalars change every call
  // (a decoding position) never waits for the host.
  // Narrowing that changes nothing keeps the table and its counters.
  bool narrowNow = g.tableCurrent && !g.tableNarrowed && !g.wholeLaunchEvents && g.tableRuns >= 1;
  if (narrowNow) {
    rt::TaskEvents narrowed = rt::planTaskEvents(b, plan);
    g.tableNarrowed = true;
    narrowNow = narrowed.wait != g.events.wait || narrowed.trigger != g.events.trigger ||
                narrowed.eventSize != g.events.eventSize;
    if (narrowNow)
      g.events = std::move(narrowed);
  }
  if (!g.tableCurrent || narrowNow) {
    // A new table has new events: its counters, and the claim, start from zero.
    if (!narrowNow) {
      g.events = rt::planTaskEvents(b, plan, true);
      g.tableNarrowed = g.wholeLaunchEvents;
    }
    const size_t syncWords = tasks::kFirstCounterWord + g.events.eventSize.size();
    if (kiln_status s = ensure(g.sync, syncWords * 4, KILN_DTYPE_U32); s != KILN_SUCCESS)
      return s;
    const std::vector<uint32_t> zeros(syncWords, 0);
    if (kiln_status s = kiln_buffer_write(g.sync, 0, zeros.data(), zeros.size() * 4); s != KILN_SUCCESS)
      return failWith(s, "graph '" + b.name + "'");
    g.claimed = 0;
    for (auto [buffer, words] : {std::pair{&g.table, tableWords(g, packed)}, std::pair{&g.taskEvents, taskEventWords(g)}}) {
      if (kiln_status s = ensure(*buffer, std::max<size_t>(words.size() * 8, 8), KILN_DTYPE_U64); s != KILN_SUCCESS)
        return s;
      if (kiln_status s = kiln_buffer_write(*buffer, 0, words.data(), words.size() * 8); s != KILN_SUCCESS)
        return failWith(s, "graph '" + b.name + "'");
    }
    g.tableCurrent = true;
    g.tableRuns = 0;
  }
  g.traceWords = g.traceEnabled ? total * tasks::kTraceWords : 0;
  if (g.traceEnabled)
    if (kiln_status s = ensure(g.trace, std::max<size_t>(g.traceWords * 8, 8), KILN_DTYPE_U64); s != KILN_SUCCESS)
      return s;

  std::vector<kiln_arg> params(g.checkedTasks ? tasks::kCheckedNumParams : tasks::kNumParams);
  params[0].kind = KILN_ARG_BUFFER;
  params[0].value.buffer.buffer = g.table;
  params[1].kind = KILN_ARG_INT;
  params[1].value.i = static_cast<int64_t>(plan.size());
  params[2].kind = KILN_ARG_INT;
  params[2].value.i = static_cast<int64_t>(total);
  params[3].kind = KILN_ARG_BUFFER;
  params[3].value.buffer.buffer = g.sync;
  params[4].kind = KILN_ARG_UINT;
  params[4].value.u = g.claimed;
  params[5].kind = KILN_ARG_INT;
  params[5].value.i = static_cast<int64_t>(std::min<uint64_t>(g.timeoutNs, std::numeric_limits<int64_t>::max()));
  // No trace: a buffer of no bytes, which the kernel sees as a null pointer.
  kiln_buffer *noTrace = nullptr;
  if (!g.traceEnabled)
    if (kiln_status s = kiln_buffer_alloc(g.runtime, 0, KILN_DTYPE_U64, &noTrace); s != KILN_SUCCESS)
      return failWith(s, "graph '" + b.name + "'");
  params[6].kind = KILN_ARG_BUFFER;
  params[6].value.buffer.buffer = g.traceEnabled ? g.trace : noTrace;
  params[7].kind = KILN_ARG_UINT;
  params[7].value.u = g.tableRuns;
  params[8].kind = KILN_ARG_BUFFER;
  params[8].value.buffer.buffer = g.taskEvents;
  if (g.checkedTasks) {
    if (!g.checkRecord) {
      if (kiln_status s = ensure(g.checkRecord, check::kCheckRecordWords * 4, KILN_DTYPE_U32); s != KILN_SUCCESS)
        return s;
      if (kiln_status s = kiln_buffer_fill(g.checkRecord, 0); s != KILN_SUCCESS)
        return failWith(s, "graph '" + b.name + "'");
    }
    params[9].kind = KILN_ARG_BUFFER;
    params[9].value.buffer.buffer = g.checkRecord;
  }
  const kiln_status s = kiln_launch(g.persistent, kiln_grid{workers, 1, 1}, params.data(), params.size());
  kiln_buffer_free(noTrace);
  if (s != KILN_SUCCESS)
    return failWith(s, "graph '" + b.name + "': the persistent kernel");
  g.claimed += static_cast<uint32_t>(total) + workers;
  ++g.tableRuns;
  g.lastWorkers = workers;
  return KILN_SUCCESS;
}

kiln_status runCudaGraph(kiln_graph &g, const std::vector<std::vector<kiln_arg>> &args) {
  // What the recording holds: each launch's step, grid and argument bits.
  std::vector<uint64_t> key;
  for (size_t i = 0; i < g.lastPlan.size(); ++i) {
    const rt::PlannedGraphLaunch &p = g.lastPlan[i];
    key.push_back(p.step);
    key.insert(key.end(), p.grid.begin(), p.grid.end());
    for (const kiln_arg &a : args[i]) {
      uint64_t words[3] = {};
      std::memcpy(words, &a, std::min(sizeof a, sizeof words));
      key.insert(key.end(), std::begin(words), std::end(words));
    }
  }
  if (!g.recording || key != g.recordedKey) {
    kiln_recording_destroy(g.recording);
    g.recording = nullptr;
    if (kiln_status s = kiln_runtime_begin_recording(g.runtime); s != KILN_SUCCESS)
      return failWith(s, "graph '" + g.bundle.name + "'");
    const kiln_status ran = runLaunches(g, args);
    const std::string error = kiln_last_error();
    kiln_recording *recording = nullptr;
    const kiln_status ended = kiln_runtime_end_recording(g.runtime, &recording);
    if (ran != KILN_SUCCESS) {
      kiln_recording_destroy(recording);
      return fail(ran, error);
    }
    if (ended != KILN_SUCCESS)
      return failWith(ended, "graph '" + g.bundle.name + "'");
    g.recording = recording;
    g.recordedKey = std::move(key);
  }
  if (kiln_status s = kiln_recording_replay(g.recording); s != KILN_SUCCESS)
    return failWith(s, "graph '" + g.bundle.name + "'");
  return KILN_SUCCESS;
}

/// Runs the last call's plan in `mode`.
kiln_status runPlanned(kiln_graph &g, kiln_graph_mode mode) {
  g.lastWorkers = 0;
  g.traceWords = 0;
  if (g.lastPlan.empty())
    return KILN_SUCCESS; // every launch sat under an `if` that was false
  switch (mode) {
  case KILN_GRAPH_MODE_PERSISTENT: return runPersistent(g, g.lastPacked);
  case KILN_GRAPH_MODE_CUDA_GRAPH: return runCudaGraph(g, g.lastLaunchArgs);
  default: return runLaunches(g, g.lastLaunchArgs);
  }
}

} // namespace

extern "C" {

kiln_status kiln_graph_load_file(kiln_runtime *runtime, const char *path, kiln_graph **out) {
  return guarded([&] {
    if (!path)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_load_file: null path");
    std::string error;
    std::optional<std::vector<uint8_t>> bytes = rt::readBundleBytes(path, error);
    if (!bytes)
      return fail(KILN_ERROR_IO, error);
    const kiln_status s = load(runtime, *bytes, out);
    return s == KILN_SUCCESS ? s : failWith(s, std::string("'") + path + "'");
  });
}

kiln_status kiln_graph_load_memory(kiln_runtime *runtime, const void *data, size_t size, kiln_graph **out) {
  return guarded([&] {
    if (!data && size)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_load_memory: null data");
    return load(runtime, std::span(static_cast<const uint8_t *>(data), size), out);
  });
}

void kiln_graph_destroy(kiln_graph *graph) { delete graph; }

const char *kiln_graph_name(const kiln_graph *graph) { return graph ? graph->bundle.name.c_str() : ""; }
size_t kiln_graph_num_params(const kiln_graph *graph) { return graph ? graph->bundle.params.size() : 0; }

kiln_status kiln_graph_param(const kiln_graph *graph, size_t index, const char **name, kiln_dtype *dtype,
                             int *is_pointer) {
  if (!graph || index >= graph->bundle.params.size())
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_param: null graph or index out of range");
  const rt::BundleParam &p = graph->bundle.params[index];
  if (name)
    *name = p.name.c_str();
  if (dtype)
    *dtype = rt::toCDType(p.dtype);
  if (is_pointer)
    *is_pointer = p.pointer ? 1 : 0;
  return KILN_SUCCESS;
}

size_t kiln_graph_num_block_masks(const kiln_graph *graph) { return graph ? graph->bundle.blockMasks.size() : 0; }

kiln_status kiln_graph_block_mask(const kiln_graph *graph, size_t index, const char **name, int64_t *block_rows,
                                  int64_t *block_cols, size_t *first_param) {
  if (!graph || index >= graph->bundle.blockMasks.size())
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_block_mask: null graph or index out of range");
  const rt::BundleBlockMask &m = graph->bundle.blockMasks[index];
  if (name)
    *name = m.name.c_str();
  if (block_rows)
    *block_rows = m.blockRows;
  if (block_cols)
    *block_cols = m.blockCols;
  if (first_param)
    *first_param = m.firstParam;
  return KILN_SUCCESS;
}

int kiln_graph_has_persistent(const kiln_graph *graph) { return graph && graph->bundle.persistent ? 1 : 0; }

kiln_status kiln_graph_set_workers(kiln_graph *graph, uint32_t workers) {
  if (!graph)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_set_workers: null graph");
  graph->workersWanted = workers;
  return KILN_SUCCESS;
}

kiln_status kiln_graph_set_wait_timeout(kiln_graph *graph, uint64_t nanoseconds) {
  if (!graph || nanoseconds == 0)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_set_wait_timeout: null graph or a zero timeout");
  graph->timeoutNs = nanoseconds;
  return KILN_SUCCESS;
}

kiln_status kiln_graph_set_trace(kiln_graph *graph, int enabled) {
  if (!graph)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_set_trace: null graph");
  graph->traceEnabled = enabled != 0;
  return KILN_SUCCESS;
}

kiln_status kiln_graph_launch(kiln_graph *graph, const kiln_arg *args, size_t num_args, kiln_graph_mode mode) {
  return guarded([&]() -> kiln_status {
    if (!graph)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_launch: null graph");
    kiln_graph &g = *graph;
    const bool cuda = kiln_runtime_backend(g.runtime) == KILN_BACKEND_CUDA;
    if (mode == KILN_GRAPH_MODE_AUTO)
      mode = g.bundle.persistent && cuda ? KILN_GRAPH_MODE_PERSISTENT : KILN_GRAPH_MODE_LAUNCHES;
    if (mode != KILN_GRAPH_MODE_PERSISTENT && mode != KILN_GRAPH_MODE_CUDA_GRAPH && mode != KILN_GRAPH_MODE_LAUNCHES)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_launch: unknown mode " + std::to_string(static_cast<int>(mode)));
    if (mode == KILN_GRAPH_MODE_PERSISTENT && !g.bundle.persistent)
      return fail(KILN_ERROR_UNSUPPORTED, "graph '" + g.bundle.name + "' holds no persistent kernel (it is for " +
                                              std::string(rt::targetName(g.bundle.target)) +
                                              ", whose work-groups have no forward-progress guarantee)");
    if (mode != KILN_GRAPH_MODE_LAUNCHES && !cuda)
      return fail(KILN_ERROR_UNSUPPORTED, "graph '" + g.bundle.name + "' cannot run " +
                                              (mode == KILN_GRAPH_MODE_CUDA_GRAPH ? "as a CUDA graph"
                                                                                  : "as one persistent kernel") +
                                              " on " + kiln_runtime_device_name(g.runtime) +
                                              "; KILN_GRAPH_MODE_LAUNCHES runs it launch by launch");

    // A block mask stands for its five parts from here on, so that the call's key holds
    // its arrays' buffers and a mask rebuilt in the same place is not taken for the last.
    std::vector<kiln_arg> expanded;
    if (!g.bundle.blockMasks.empty()) {
      if (kiln_status s = expandMasks(g, args, num_args, expanded); s != KILN_SUCCESS)
        return s;
      args = expanded.data();
      num_args = expanded.size();
    }
    std::vector<uint64_t> key = callKey(g, args, num_args, mode);
    if (!key.empty() && key == g.lastKey && g.lastMode == mode)
      return runPlanned(g, mode);
    g.lastKey.clear();
    g.tableCurrent = false;
    std::vector<rt::GraphArgValue> values;
    if (kiln_status s = graphArguments(g, args, num_args, values); s != KILN_SUCCESS)
      return s;
    rt::GraphPlanError planError;
    std::optional<std::vector<rt::PlannedGraphLaunch>> plan = rt::planGraph(g.bundle, values, planError);
    if (!plan)
      return fail(planError.kind == rt::GraphPlanError::Kind::Grid ? KILN_ERROR_INVALID_VALUE
                                                                   : KILN_ERROR_ARGUMENT_MISMATCH,
                  planError.message);
    std::vector<std::vector<kiln_arg>> launchArgs(plan->size());
    for (size_t i = 0; i < plan->size(); ++i)
      if (kiln_status s = launchArguments(g, (*plan)[i], args, launchArgs[i]); s != KILN_SUCCESS)
        return s;
    if (mode != KILN_GRAPH_MODE_PERSISTENT)
      for (const rt::PlannedGraphLaunch &p : *plan) {
        kiln_kernel *&k = g.kernels[g.bundle.launches[p.step].kernel];
        if (!k)
          if (kiln_status s = loadBundle(g, g.bundle.kernels[g.bundle.launches[p.step].kernel], &k); s != KILN_SUCCESS)
            return s;
      }
    g.lastPlan = std::move(*plan);
    g.lastMode = mode;
    std::vector<rt::PackedArgs> packed;
    if (kiln_status s = packAll(g, launchArgs, packed); s != KILN_SUCCESS) {
      g.lastPlan.clear(); // nothing of this run was enqueued
      g.lastMode = KILN_GRAPH_MODE_AUTO;
      return s;
    }
    g.lastLaunchArgs = std::move(launchArgs);
    g.lastPacked = std::move(packed);
    g.lastKey = std::move(key);
    return runPlanned(g, mode);
  });
}

namespace {

/// A checked persistent kernel's first bad access (support/CheckRecord.h), as
/// KILN_ERROR_OUT_OF_BOUNDS naming the task's launch, kernel and parameter; the record is
/// cleared.
kiln_status checkedViolation(kiln_graph &g) {
  if (!g.checkRecord)
    return KILN_SUCCESS;
  uint32_t record[check::kCheckRecordWords] = {};
  if (kiln_status s = kiln_buffer_read(g.checkRecord, 0, record, sizeof record); s != KILN_SUCCESS)
    return failWith(s, "graph '" + g.bundle.name + "'");
  if (record[check::kFlagWord] == 0)
    return KILN_SUCCESS;
  if (kiln_status s = kiln_buffer_fill(g.checkRecord, 0); s != KILN_SUCCESS)
    return failWith(s, "graph '" + g.bundle.name + "'");
  const uint32_t taskNumber = record[check::kTaskWord];
  const rt::Bundle *kernel = nullptr;
  std::string launch;
  uint64_t first = 0;
  for (const rt::PlannedGraphLaunch &p : g.lastPlan) {
    if (taskNumber >= first && taskNumber < first + taskCount(p)) {
      kernel = &g.bundle.kernels[g.bundle.launches[p.step].kernel];
      launch = describeLaunch(g, p.step);
    }
    first += taskCount(p);
  }
  const std::string task = " (task " + std::to_string(record[check::kTaskWord]) + ")";
  if (!kernel) // a record no task of the run could have written
    return fail(KILN_ERROR_OUT_OF_BOUNDS, "graph '" + g.bundle.name + "': checked mode stopped an access" + task);
  return fail(KILN_ERROR_OUT_OF_BOUNDS,
              "graph '" + g.bundle.name + "': " + rt::describeCheckRecord(record, *kernel, " of " + launch + task));
}

} // namespace

kiln_status kiln_graph_check(kiln_graph *graph) {
  return guarded([&]() -> kiln_status {
    if (!graph)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_check: null graph");
    kiln_graph &g = *graph;
    if (g.lastMode != KILN_GRAPH_MODE_PERSISTENT || !g.sync)
      return KILN_SUCCESS;
    uint32_t head[tasks::kFirstCounterWord] = {};
    if (kiln_status s = kiln_buffer_read(g.sync, 0, head, sizeof head); s != KILN_SUCCESS)
      return failWith(s, "graph '" + g.bundle.name + "'");
    if (head[tasks::kAbortWord] == 0)
      return checkedViolation(g);
    const uint32_t task = head[tasks::kErrorTaskWord], event = head[tasks::kErrorEventWord];
    std::string who = "task " + std::to_string(task), whom = "event " + std::to_string(event);
    uint64_t first = 0;
    for (const rt::PlannedGraphLaunch &p : g.lastPlan) {
      if (task >= first && task < first + taskCount(p))
        who += " (program " + std::to_string(task - first) + " of " + describeLaunch(g, p.step) + ")";
      first += taskCount(p);
    }
    if (event < g.events.eventSize.size() && g.events.eventLaunch[event] < g.lastPlan.size()) {
      const uint32_t size = g.events.eventSize[event];
      const rt::PlannedGraphLaunch &p = g.lastPlan[g.events.eventLaunch[event]];
      whom = (size == taskCount(p) ? "every task of " : std::to_string(size) + " task" + (size == 1 ? "" : "s") + " of ") +
             describeLaunch(g, p.step) + " (event " + std::to_string(event) + ")";
    }
    // Counters and the claim are left mid-run: the next run writes the table afresh and
    // starts them from zero.
    g.claimed = 0;
    g.tableCurrent = false;
    return fail(KILN_ERROR_LAUNCH, "graph '" + g.bundle.name + "': the persistent kernel stopped: " + who +
                                       " waited more than " + std::to_string(g.timeoutNs / 1'000'000) + " ms for " +
                                       whom + " (its counter was at " + std::to_string(head[tasks::kErrorSeenWord]) +
                                       ", waiting for " + std::to_string(head[tasks::kErrorTargetWord]) + ")");
  });
}

kiln_status kiln_graph_last_run(const kiln_graph *graph, kiln_graph_mode *mode, uint32_t *launches, uint64_t *tasks,
                                uint32_t *workers) {
  if (!graph)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_last_run: null graph");
  if (mode)
    *mode = graph->lastMode;
  if (launches)
    *launches = static_cast<uint32_t>(graph->lastPlan.size());
  if (tasks)
    *tasks = std::accumulate(graph->lastPlan.begin(), graph->lastPlan.end(), uint64_t{0},
                             [](uint64_t n, const rt::PlannedGraphLaunch &p) { return n + taskCount(p); });
  if (workers)
    *workers = graph->lastWorkers;
  return KILN_SUCCESS;
}

kiln_status kiln_graph_trace(kiln_graph *graph, uint64_t *words, size_t count, size_t *words_out) {
  return guarded([&]() -> kiln_status {
    if (!graph || (count && !words))
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_graph_trace: null graph or words");
    if (words_out)
      *words_out = graph->traceWords;
    const size_t n = std::min<size_t>(count, graph->traceWords);
    if (n && kiln_buffer_read(graph->trace, 0, words, n * 8) != KILN_SUCCESS)
      return failWith(KILN_ERROR_DRIVER, "graph '" + graph->bundle.name + "'");
    return KILN_SUCCESS;
  });
}

} // extern "C"
