//===- TaskEventsTest.cpp - Task-level events of a graph run ----------------===//
//
// planTaskEvents (runtime/TaskEvents.h) on hand-made graphs whose answer is known, and
// on random ones checked against brute force: every pair of tasks whose ranges conflict
// must be ordered by the chain of waits, every task must wait only on smaller task
// numbers, and each task waits on and triggers at most one event.
//
//===----------------------------------------------------------------------===//
#include "runtime/TaskEvents.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln::rt;
using kiln::DType;

namespace {

GraphPoly poly(int64_t perProgram, int64_t constant) {
  GraphPoly p;
  if (perProgram)
    p.push_back(GraphPolyTerm{perProgram, {GraphPolyTerm::kPid}});
  if (constant)
    p.push_back(GraphPolyTerm{constant, {}});
  return p;
}

/// Kernel k's programs touch elements [stride·pid.x + lo, stride·pid.x + hi] of `param`.
GraphFootprint range(uint32_t kernel, uint32_t param, bool reads, bool writes, int64_t stride, int64_t lo,
                     int64_t hi) {
  return GraphFootprint{kernel, param, reads, writes, true, poly(stride, lo), poly(stride, hi)};
}
GraphFootprint unknown(uint32_t kernel, uint32_t param, bool reads, bool writes) {
  return GraphFootprint{kernel, param, reads, writes, false, {}, {}};
}

/// A graph of pointer parameters `buffers` (f32) and kernels of two f32 pointers each.
GraphBundle graphOf(unsigned buffers, unsigned kernels) {
  GraphBundle g;
  for (unsigned i = 0; i < buffers; ++i)
    g.params.push_back({"p" + std::to_string(i), DType::F32, true});
  for (unsigned k = 0; k < kernels; ++k) {
    Bundle b;
    b.kernelName = "k" + std::to_string(k);
    b.params = {{"a", DType::F32, true}, {"b", DType::F32, true}};
    g.kernels.push_back(b);
    g.launches.push_back(GraphLaunchStep{k, {0, 0, 0}, {}, std::nullopt, ""});
  }
  return g;
}

GraphArgValue view(uint32_t param, int64_t offset) {
  GraphArgValue v;
  v.kind = GraphArgValue::Kind::Buffer;
  v.param = param;
  v.i = offset;
  v.bufferId = param;
  return v;
}

PlannedGraphLaunch launchOf(uint32_t step, int64_t programs, std::vector<GraphArgValue> args,
                            std::vector<uint32_t> after) {
  PlannedGraphLaunch p;
  p.step = step;
  p.grid = {programs, 1, 1};
  p.args = std::move(args);
  p.after = std::move(after);
  return p;
}

} // namespace

// Row i of the consumer reads what row i of the producer wrote: each task waits for
// exactly one task, and each producer task is an event of its own.
TEST(TaskEvents, OneToOneRowsWaitForOneTaskEach) {
  GraphBundle g = graphOf(2, 2);
  g.footprints = {range(0, 0, false, true, 64, 0, 63), range(1, 0, true, false, 64, 0, 63),
                  range(1, 1, false, true, 64, 0, 63)};
  const std::vector<PlannedGraphLaunch> plan = {launchOf(0, 4, {view(0, 0), view(1, 0)}, {}),
                                                launchOf(1, 4, {view(0, 0), view(1, 0)}, {0})};
  const TaskEvents e = planTaskEvents(g, plan);
  EXPECT_EQ(e.narrowedDependencies, 1u);
  ASSERT_EQ(e.eventSize.size(), 4u);
  for (uint32_t t = 0; t < 4; ++t) {
    EXPECT_EQ(e.wait[t], kNoEvent);
    EXPECT_EQ(e.wait[4 + t], e.trigger[t]);
    EXPECT_EQ(e.eventSize[e.trigger[t]], 1u);
    EXPECT_EQ(e.trigger[4 + t], kNoEvent); // no one waits for the consumer
  }
  // The baseline: one event, the whole producer.
  const TaskEvents whole = planTaskEvents(g, plan, true);
  ASSERT_EQ(whole.eventSize, std::vector<uint32_t>{4});
  EXPECT_EQ(whole.wholeDependencies, 1u);
}

// Every consumer task reads all of the producer (a matrix-vector product's vector):
// one event of all its tasks. A view's offset shifts the ranges: the consumer reading
// p0 + 256 meets none of the producer's rows 0..255, and waits on nothing.
TEST(TaskEvents, AllToAllIsOneEventAndViewsShiftTheRanges) {
  GraphBundle g = graphOf(2, 2);
  g.footprints = {range(0, 0, false, true, 64, 0, 63), range(1, 0, true, false, 0, 0, 255),
                  range(1, 1, false, true, 1, 0, 0)};
  std::vector<PlannedGraphLaunch> plan = {launchOf(0, 4, {view(0, 0), view(1, 0)}, {}),
                                          launchOf(1, 8, {view(0, 0), view(1, 0)}, {0})};
  TaskEvents e = planTaskEvents(g, plan);
  ASSERT_EQ(e.eventSize, std::vector<uint32_t>{4});
  for (uint32_t t = 4; t < 12; ++t)
    EXPECT_EQ(e.wait[t], 0u);
  plan[1].args[0] = view(0, 256);
  e = planTaskEvents(g, plan);
  EXPECT_TRUE(e.eventSize.empty());
  for (uint32_t t = 0; t < 12; ++t)
    EXPECT_EQ(e.wait[t], kNoEvent);
}

// A range the analysis could not bound, or two parameters passed one buffer, keeps the
// dependency on the whole launch.
TEST(TaskEvents, UnknownRangesAndAliasesWaitForTheWholeLaunch) {
  GraphBundle g = graphOf(2, 2);
  g.footprints = {range(0, 0, false, true, 64, 0, 63), unknown(1, 0, true, false)};
  const std::vector<PlannedGraphLaunch> plan = {launchOf(0, 4, {view(0, 0), view(1, 0)}, {}),
                                                launchOf(1, 4, {view(0, 0), view(1, 0)}, {0})};
  TaskEvents e = planTaskEvents(g, plan);
  EXPECT_EQ(e.wholeDependencies, 1u);
  ASSERT_EQ(e.eventSize, std::vector<uint32_t>{4});

  g.footprints = {range(0, 0, false, true, 64, 0, 63), range(1, 1, true, false, 64, 0, 63)};
  std::vector<PlannedGraphLaunch> aliased = plan;
  aliased[1].args[1].bufferId = 0; // p1 is p0's buffer
  e = planTaskEvents(g, aliased);
  EXPECT_EQ(e.wholeDependencies, 1u);
  ASSERT_EQ(e.eventSize, std::vector<uint32_t>{4});
}

// Task 2·i of the last launch needs task i of the middle one and task i of the first
// (which the middle one does not touch): the middle task takes that need over, so each
// last task still waits on one event of one task.
TEST(TaskEvents, NeedsOfEarlierLaunchesPassToTheWaitedTasks) {
  GraphBundle g = graphOf(3, 3);
  g.footprints = {range(0, 0, false, true, 1, 0, 0),                                      // k0 writes p0[i]
                  range(1, 1, false, true, 1, 0, 0),                                      // k1 writes p1[i]
                  range(2, 0, true, false, 1, 0, 0), range(2, 1, true, false, 1, 0, 0)}; // k2 reads both
  const std::vector<PlannedGraphLaunch> plan = {launchOf(0, 3, {view(0, 0), view(2, 0)}, {}),
                                                launchOf(1, 3, {view(2, 0), view(1, 0)}, {}),
                                                launchOf(2, 3, {view(0, 0), view(1, 0)}, {0, 1})};
  const TaskEvents e = planTaskEvents(g, plan);
  EXPECT_EQ(e.narrowedDependencies, 2u);
  for (uint32_t i = 0; i < 3; ++i) {
    // Task 6 + i waits on middle task 3 + i alone, which waits on first task i.
    ASSERT_NE(e.wait[6 + i], kNoEvent);
    EXPECT_EQ(e.wait[6 + i], e.trigger[3 + i]);
    EXPECT_EQ(e.eventSize[e.wait[6 + i]], 1u);
    ASSERT_NE(e.wait[3 + i], kNoEvent);
    EXPECT_EQ(e.wait[3 + i], e.trigger[i]);
    EXPECT_EQ(e.eventSize[e.wait[3 + i]], 1u);
  }
}

// Random graphs against brute force.
TEST(TaskEvents, EveryConflictingPairIsOrderedOnRandomGraphs) {
  std::mt19937 rng(20261203);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 400; ++trial) {
    const unsigned kernels = static_cast<unsigned>(pick(1, 4)), buffers = static_cast<unsigned>(pick(1, 3));
    GraphBundle g = graphOf(buffers, kernels);
    for (uint32_t k = 0; k < kernels; ++k)
      for (uint32_t p = 0; p < 2; ++p) {
        const int mode = pick(0, 3); // none, r, w, rw
        if (mode == 0)
          continue;
        const bool reads = mode != 2, writes = mode != 1;
        if (pick(0, 9) == 0) {
          g.footprints.push_back(unknown(k, p, reads, writes));
          continue;
        }
        const int64_t stride = std::array<int64_t, 4>{0, 2, 4, 8}[pick(0, 3)], lo = pick(0, 9);
        g.footprints.push_back(range(k, p, reads, writes, stride, lo, lo + pick(-1, 12)));
      }
    const unsigned launches = static_cast<unsigned>(pick(2, 7));
    std::vector<PlannedGraphLaunch> plan;
    for (unsigned l = 0; l < launches; ++l) {
      const uint32_t step = static_cast<uint32_t>(pick(0, int(kernels) - 1));
      plan.push_back(launchOf(step, pick(1, 6),
                              {view(uint32_t(pick(0, int(buffers) - 1)), pick(0, 6)),
                               view(uint32_t(pick(0, int(buffers) - 1)), pick(0, 6))},
                              {}));
    }
    // Brute force: the byte ranges of every task, and the launch-level edges the
    // compiler would give (sharing a buffer with a writer on either side).
    struct Touch {
      uint32_t buffer;
      bool reads, writes, known;
      int64_t lo, hi;
    };
    std::vector<std::vector<Touch>> touches;
    std::vector<uint32_t> launchOfTask;
    for (uint32_t l = 0; l < launches; ++l)
      for (int64_t pid = 0; pid < plan[l].grid[0]; ++pid) {
        std::vector<Touch> ts;
        for (const GraphFootprint &f : g.footprints) {
          if (f.kernel != g.launches[plan[l].step].kernel)
            continue;
          const GraphArgValue &a = plan[l].args[f.param];
          auto at = [&](const GraphPoly &p) {
            int64_t v = 0;
            for (const GraphPolyTerm &t : p)
              v += t.coefficient * (t.symbols.empty() ? 1 : pid);
            return v;
          };
          ts.push_back({a.param, f.reads, f.writes, f.known, 4 * (a.i + at(f.lo)), 4 * (a.i + at(f.hi)) + 3});
        }
        touches.push_back(ts);
        launchOfTask.push_back(l);
      }
    auto conflict = [](const Touch &a, const Touch &b) {
      if (a.buffer != b.buffer || (!a.writes && !b.writes))
        return false;
      if (!a.known || !b.known)
        return true;
      return a.lo <= a.hi && b.lo <= b.hi && a.lo <= b.hi && b.lo <= a.hi;
    };
    const size_t total = touches.size();
    for (uint32_t to = 0; to < launches; ++to)
      for (uint32_t from = 0; from < to; ++from) {
        bool shares = false;
        for (const GraphFootprint &a : g.footprints)
          for (const GraphFootprint &b : g.footprints)
            shares = shares || (a.kernel == g.launches[plan[from].step].kernel &&
                                b.kernel == g.launches[plan[to].step].kernel &&
                                plan[from].args[a.param].param == plan[to].args[b.param].param &&
                                (a.writes || b.writes));
        if (shares)
          plan[to].after.push_back(from);
      }

    // Both plannings: narrowed to tasks, and on whole launches.
    for (bool whole : {false, true}) {
      SCOPED_TRACE(whole ? "whole launches" : "tasks");
      const TaskEvents e = planTaskEvents(g, plan, whole);
      ASSERT_EQ(e.wait.size(), total);
      // done[t]: the tasks surely finished when task t starts.
      std::vector<std::vector<bool>> done(total, std::vector<bool>(total, false));
      for (uint32_t t = 0; t < total; ++t) {
        if (e.wait[t] == kNoEvent)
          continue;
        const uint32_t ev = e.wait[t];
        ASSERT_LT(ev, e.eventSize.size());
        uint32_t members = 0;
        for (uint32_t m = 0; m < total; ++m) {
          if (e.trigger[m] != ev)
            continue;
          ++members;
          ASSERT_LT(m, t) << "trial " << trial << ": task " << t << " waits on a later task";
          ASSERT_EQ(launchOfTask[m], e.eventLaunch[ev]);
          done[t][m] = true;
          for (uint32_t k = 0; k < total; ++k)
            if (done[m][k])
              done[t][k] = true;
        }
        ASSERT_EQ(members, e.eventSize[ev]);
      }
      for (uint32_t b = 0; b < total; ++b)
        for (uint32_t a = 0; a < b; ++a) {
          if (launchOfTask[a] == launchOfTask[b])
            continue;
          bool must = false;
          for (const Touch &x : touches[a])
            for (const Touch &y : touches[b])
              must = must || conflict(x, y);
          if (must) {
            ASSERT_TRUE(done[b][a]) << "trial " << trial << ": task " << b << " may start before task " << a;
          }
        }
    }
  }
}
