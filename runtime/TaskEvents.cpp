//===- TaskEvents.cpp - Which finished tasks each task of a graph run waits for ---===//
//
// See TaskEvents.h. Task sets are kept as sorted lists of disjoint intervals of task
// numbers: a matrix-vector product's every task needs all of the launch before it, one
// interval, and a head's attention needs a few neighbouring rows, one or two.
//
//===----------------------------------------------------------------------===//
#include "runtime/TaskEvents.h"

#include "runtime/DTypes.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>

namespace kiln::rt {

namespace {

/// Beyond this many steps of range matching and need pushing, a run's events are
/// computed on whole launches instead (a bound on planning time, not a correctness one).
constexpr uint64_t kMaxWork = uint64_t(1) << 26;
/// Beyond this many tasks in a run, its events are planned on whole launches: the
/// task-level planning keeps tens of bytes per task.
constexpr uint64_t kMaxTaskLevelTasks = uint64_t(1) << 22;
/// How many launches back a push is checked for being implied already (a bound on
/// planning time: an older need is pushed on, which costs only precision).
constexpr uint32_t kPruneWindow = 9;

/// [first, second) of task numbers.
using Interval = std::pair<uint32_t, uint32_t>;
/// Sorted, disjoint, never adjacent.
using Intervals = std::vector<Interval>;

/// Intervals sorted by their start, overlapping or touching ones joined.
Intervals joined(const std::vector<Interval> &sorted) {
  Intervals out;
  for (const Interval &iv : sorted)
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  return out;
}

Intervals unite(const Intervals &a, const Intervals &b) {
  if (a.empty())
    return b;
  if (b.empty())
    return a;
  Intervals all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all));
  return joined(all);
}

/// The part of `set` within [lo, hi).
Intervals clip(const Intervals &set, uint32_t lo, uint32_t hi) {
  Intervals out;
  for (const Interval &iv : set) {
    const uint32_t a = std::max(iv.first, lo), b = std::min(iv.second, hi);
    if (a < b)
      out.emplace_back(a, b);
  }
  return out;
}

/// What of `a` is not in `b`.
Intervals subtract(const Intervals &a, const Intervals &b) {
  Intervals out;
  size_t j = 0;
  for (Interval iv : a) {
    while (j < b.size() && b[j].second <= iv.first)
      ++j;
    for (size_t k = j; k < b.size() && b[k].first < iv.second; ++k) {
      if (b[k].first > iv.first)
        out.emplace_back(iv.first, b[k].first);
      iv.first = std::max(iv.first, b[k].second);
    }
    if (iv.first < iv.second)
      out.push_back(iv);
  }
  return out;
}

/// Sorted task numbers as intervals.
Intervals fromSorted(const std::vector<uint32_t> &tasks) {
  Intervals out;
  for (uint32_t t : tasks)
    if (!out.empty() && out.back().second == t)
      ++out.back().second;
    else if (out.empty() || out.back().second < t)
      out.emplace_back(t, t + 1);
  return out;
}

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    // The smaller number becomes the root, so a group's root is its first task.
    if (a != b)
      parent[std::max(a, b)] = std::min(a, b);
  }
};

std::optional<int64_t> evaluate(const GraphPoly &poly, const std::array<int64_t, 3> &pid,
                                const PlannedGraphLaunch &launch) {
  int64_t sum = 0;
  for (const GraphPolyTerm &t : poly) {
    int64_t v = t.coefficient;
    for (uint32_t s : t.symbols) {
      const int64_t x = s < GraphPolyTerm::kParam ? pid[s] : launch.args[s - GraphPolyTerm::kParam].i;
      // The analysis takes integer parameters to be non-negative, as sizes are; where
      // one is not, its ranges may be wrong.
      if (x < 0 || __builtin_mul_overflow(v, x, &v))
        return std::nullopt;
    }
    if (__builtin_add_overflow(sum, v, &sum))
      return std::nullopt;
  }
  return sum;
}

/// Bytes [lo, hi] of a graph parameter's buffer (lo > hi: none).
struct ByteRange {
  int64_t lo = 0, hi = -1;
};

class Planner {
public:
  Planner(const GraphBundle &g, std::span<const PlannedGraphLaunch> plan, bool wholeLaunches)
      : g(g), plan(plan), wholeLaunches(wholeLaunches) {}

  TaskEvents run();

private:
  const GraphBundle &g;
  std::span<const PlannedGraphLaunch> plan;
  bool wholeLaunches;
  uint64_t work = 0;
  TaskEvents out;
  std::vector<uint32_t> count;      ///< tasks per planned launch
  std::vector<Intervals> taskNeed;  ///< per task: what it needs beyond its launch's need
  std::vector<Intervals> launchNeed; ///< per planned launch: what each of its tasks needs
  /// The needs before normalising (the dependencies themselves), which a finished task
  /// implies finished: what a push would add that these already imply is left out.
  /// Each task's own, interned (the tasks of a launch share a few sets).
  std::vector<Intervals> directSets, directLaunch;
  std::vector<uint32_t> directOf; ///< per task: its set in directSets
  /// What each set of members reaches: the tasks of one launch mostly ask the same.
  std::map<Intervals, Intervals> reachOf;

  uint32_t launchOf(uint32_t task) const {
    return static_cast<uint32_t>(std::upper_bound(out.firstTask.begin(), out.firstTask.end(), task) -
                                 out.firstTask.begin() - 1);
  }
  Interval wholeOf(uint32_t launch) const {
    return {out.firstTask[launch], out.firstTask[launch] + count[launch]};
  }
  std::array<int64_t, 3> pidOf(uint32_t launch, uint32_t local) const {
    const auto &grid = plan[launch].grid;
    return {int64_t(local % grid[0]), int64_t((local / grid[0]) % grid[1]), int64_t(local / grid[0] / grid[1])};
  }
  /// What task `local` of `launch` touches through footprint `f`; nullopt: not known.
  std::optional<ByteRange> rangeOf(uint32_t launch, const GraphFootprint &f, uint32_t local) const;
  /// The ranges the tasks of a launch touch through one footprint, sorted by their
  /// start, for finding the ones a range meets; built once per run.
  struct ProducerIndex {
    struct Entry {
      int64_t lo, hi;
      uint32_t task;
    };
    std::vector<Entry> entries;
    int64_t maxLen = 0, minLo = INT64_MAX, maxHi = INT64_MIN;
    bool known = false;
  };
  std::map<std::pair<uint32_t, const GraphFootprint *>, ProducerIndex> producers;
  /// nullptr where a range of the footprint is not known.
  const ProducerIndex *producerIndex(uint32_t launch, const GraphFootprint &f);
  /// Task-level needs of each task of launch `to` on launch `from`; false: not known.
  bool narrow(uint32_t from, uint32_t to, std::vector<Intervals> &needs);
  /// `rest` less what is surely finished once every task of `members` is: the tasks
  /// their dependencies reach, transitively.
  Intervals prune(const Intervals &members, const Intervals &rest);
  /// Turns the needs into events; false when that took more than kMaxWork.
  bool normalise();
  /// The events with every dependency on whole launches, in time and memory per launch
  /// (beyond the per-task answer).
  TaskEvents planWholeLaunches();
};

std::optional<ByteRange> Planner::rangeOf(uint32_t launch, const GraphFootprint &f, uint32_t local) const {
  const PlannedGraphLaunch &l = plan[launch];
  const std::array<int64_t, 3> pid = pidOf(launch, local);
  const std::optional<int64_t> lo = evaluate(f.lo, pid, l), hi = evaluate(f.hi, pid, l);
  const GraphArgValue &arg = l.args[f.param];
  const int64_t element = int64_t(dtypeSizeBytes(g.kernels[g.launches[l.step].kernel].params[f.param].dtype));
  const int64_t viewElement = int64_t(dtypeSizeBytes(g.params[arg.param].dtype));
  int64_t base, first, last;
  if (!lo || !hi || __builtin_mul_overflow(arg.i, viewElement, &base) || __builtin_mul_overflow(*lo, element, &first) ||
      __builtin_mul_overflow(*hi, element, &last) || __builtin_add_overflow(base, first, &first) ||
      __builtin_add_overflow(base, last, &last) || __builtin_add_overflow(last, element - 1, &last))
    return std::nullopt;
  if (*lo > *hi)
    return ByteRange{};
  return ByteRange{first, last};
}

bool Planner::narrow(uint32_t from, uint32_t to, std::vector<Intervals> &needs) {
  struct Pair {
    const GraphFootprint *a, *b;
  };
  std::vector<Pair> pairs;
  const uint32_t kernelA = g.launches[plan[from].step].kernel, kernelB = g.launches[plan[to].step].kernel;
  for (const GraphFootprint &a : g.footprints) {
    if (a.kernel != kernelA)
      continue;
    for (const GraphFootprint &b : g.footprints) {
      if (b.kernel != kernelB)
        continue;
      const GraphArgValue &x = plan[from].args[a.param], &y = plan[to].args[b.param];
      if (x.param != y.param && x.bufferId != y.bufferId)
        continue;
      if (!(a.writes && (b.reads || b.writes)) && !(a.reads && b.writes))
        continue;
      // Two parameters passed one buffer may be offset in ways the views do not say.
      if (x.param != y.param || !a.known || !b.known)
        return false;
      pairs.push_back({&a, &b});
    }
  }
  // An edge the footprints cannot explain stays whole.
  if (pairs.empty())
    return false;

  const uint32_t nA = count[from], nB = count[to], firstA = out.firstTask[from];
  needs.assign(nB, {});
  std::vector<uint32_t> found;
  for (const Pair &p : pairs) {
    const ProducerIndex *index = producerIndex(from, *p.a);
    if (!index)
      return false;
    const std::vector<ProducerIndex::Entry> &entries = index->entries;
    for (uint32_t t = 0; t < nB; ++t) {
      std::optional<ByteRange> r = rangeOf(to, *p.b, t);
      if (!r)
        return false;
      if (r->lo > r->hi || entries.empty())
        continue;
      if (r->lo <= index->minLo && r->hi >= index->maxHi) {
        // Covers every producer's range: the whole launch, without a scan.
        needs[t] = unite(needs[t], {{firstA, firstA + nA}});
        continue;
      }
      found.clear();
      auto end = std::upper_bound(entries.begin(), entries.end(), r->hi,
                                  [](int64_t v, const ProducerIndex::Entry &e) { return v < e.lo; });
      for (auto it = end; it != entries.begin();) {
        --it;
        ++work;
        if (it->lo < r->lo - index->maxLen)
          break;
        if (it->hi >= r->lo)
          found.push_back(it->task);
      }
      if (work > kMaxWork)
        return false;
      std::sort(found.begin(), found.end());
      needs[t] = unite(needs[t], fromSorted(found));
    }
  }
  return true;
}

const Planner::ProducerIndex *Planner::producerIndex(uint32_t launch, const GraphFootprint &f) {
  auto [it, added] = producers.try_emplace({launch, &f});
  ProducerIndex &index = it->second;
  if (!added)
    return index.known ? &index : nullptr;
  for (uint32_t t = 0; t < count[launch]; ++t) {
    std::optional<ByteRange> r = rangeOf(launch, f, t);
    if (!r)
      return nullptr;
    if (r->lo > r->hi)
      continue;
    index.entries.push_back({r->lo, r->hi, out.firstTask[launch] + t});
    index.maxLen = std::max(index.maxLen, r->hi - r->lo);
    index.minLo = std::min(index.minLo, r->lo);
    index.maxHi = std::max(index.maxHi, r->hi);
  }
  work += count[launch];
  // Rows of a launch mostly come in order already.
  auto byLo = [](const ProducerIndex::Entry &x, const ProducerIndex::Entry &y) { return x.lo < y.lo; };
  if (!std::is_sorted(index.entries.begin(), index.entries.end(), byLo))
    std::sort(index.entries.begin(), index.entries.end(), byLo);
  index.known = true;
  return &index;
}

Intervals Planner::prune(const Intervals &members, const Intervals &rest) {
  if (auto it = reachOf.find(members); it != reachOf.end())
    return subtract(rest, it->second);
  // The search looks kPruneWindow launches back at most: older needs stay pushed.
  const uint32_t launch = launchOf(members.front().first);
  const uint32_t floor = out.firstTask[launch > kPruneWindow ? launch - kPruneWindow : 0];
  Intervals reached = members, frontier = members;
  std::vector<Interval> next;
  std::vector<char> launchSeen(plan.size()), setSeen(directSets.size());
  auto add = [&](const Intervals &need) {
    for (const Interval &iv : need)
      if (iv.second > floor)
        next.emplace_back(std::max(iv.first, floor), iv.second);
  };
  while (!frontier.empty() && work <= kMaxWork) {
    next.clear();
    for (const Interval &iv : frontier)
      for (uint32_t t = iv.first; t < iv.second;) {
        // A launch's shared needs once, then each task's own.
        const uint32_t start = t, l = launchOf(t), end = std::min(iv.second, wholeOf(l).second);
        if (!launchSeen[l]) {
          launchSeen[l] = 1;
          add(directLaunch[l]);
        }
        for (; t < end; ++t)
          if (!setSeen[directOf[t]]) {
            setSeen[directOf[t]] = 1;
            add(directSets[directOf[t]]);
          }
        work += end - start + 1;
      }
    std::sort(next.begin(), next.end());
    frontier = subtract(joined(next), reached);
    reached = unite(reached, frontier);
  }
  return subtract(rest, reachOf.emplace(members, std::move(reached)).first->second);
}

bool Planner::normalise() {
  const uint32_t total = static_cast<uint32_t>(out.wait.size());
  directLaunch = launchNeed;
  std::map<Intervals, uint32_t> interned;
  directOf.resize(total);
  for (uint32_t t = 0; t < total; ++t) {
    auto [it, added] = interned.try_emplace(taskNeed[t], static_cast<uint32_t>(directSets.size()));
    if (added)
      directSets.push_back(taskNeed[t]);
    directOf[t] = it->second;
  }
  UnionFind groups(total);
  std::vector<uint32_t> representative(total, kNoEvent);
  std::vector<char> united(plan.size(), 0);
  for (uint32_t t = total; t-- > 0;) {
    const Intervals need = unite(taskNeed[t], launchNeed[launchOf(t)]);
    taskNeed[t] = {};
    if (need.empty())
      continue;
    const uint32_t waited = launchOf(need.back().second - 1);
    const Interval whole = wholeOf(waited);
    const Intervals members = clip(need, whole.first, whole.second);
    Intervals rest = clip(need, 0, whole.first);
    if (!rest.empty())
      rest = prune(members, rest);
    representative[t] = members.front().first;
    if (members.size() == 1 && members.front() == whole) {
      united[waited] = 1;
      if (!rest.empty())
        launchNeed[waited] = unite(launchNeed[waited], rest);
      work += rest.size();
      continue;
    }
    for (const Interval &iv : members) {
      for (uint32_t m = iv.first; m < iv.second; ++m) {
        groups.join(members.front().first, m);
        if (!rest.empty())
          taskNeed[m] = unite(taskNeed[m], rest);
      }
      work += uint64_t(iv.second - iv.first) * (1 + rest.size());
    }
    if (work > kMaxWork)
      return false;
  }
  for (uint32_t l = 0; l < plan.size(); ++l)
    if (united[l])
      for (uint32_t m = out.firstTask[l] + 1; m < out.firstTask[l] + count[l]; ++m)
        groups.join(out.firstTask[l], m);

  // Events: the groups some task waits on, numbered by their first task.
  std::vector<uint32_t> eventOf(total, kNoEvent);
  for (uint32_t t = 0; t < total; ++t) {
    if (representative[t] == kNoEvent)
      continue;
    const uint32_t root = groups.find(representative[t]);
    if (eventOf[root] == kNoEvent) {
      eventOf[root] = static_cast<uint32_t>(out.eventSize.size());
      out.eventSize.push_back(0);
      out.eventLaunch.push_back(launchOf(root));
    }
    out.wait[t] = eventOf[root];
  }
  for (uint32_t t = 0; t < total; ++t) {
    const uint32_t e = eventOf[groups.find(t)];
    out.trigger[t] = e;
    if (e != kNoEvent)
      ++out.eventSize[e];
  }
  return true;
}

TaskEvents Planner::run() {
  uint64_t total = 0;
  for (const PlannedGraphLaunch &l : plan) {
    out.firstTask.push_back(static_cast<uint32_t>(total));
    count.push_back(static_cast<uint32_t>(l.grid[0] * l.grid[1] * l.grid[2]));
    total += count.back();
  }
  out.wait.assign(total, kNoEvent);
  out.trigger.assign(total, kNoEvent);
  // A run of very many tasks is planned on whole launches, in memory per launch.
  if (wholeLaunches || total > kMaxTaskLevelTasks)
    return planWholeLaunches();
  taskNeed.assign(total, {});
  launchNeed.assign(plan.size(), {});
  std::vector<Intervals> needs;
  for (uint32_t to = 0; to < plan.size(); ++to)
    for (uint32_t from : plan[to].after) {
      if (narrow(from, to, needs)) {
        ++out.narrowedDependencies;
        for (uint32_t t = 0; t < count[to]; ++t)
          if (!needs[t].empty())
            taskNeed[out.firstTask[to] + t] = unite(taskNeed[out.firstTask[to] + t], needs[t]);
        continue;
      }
      ++out.wholeDependencies;
      launchNeed[to] = unite(launchNeed[to], {wholeOf(from)});
    }
  if (normalise())
    return std::move(out);
  // Too much work: the same run on whole launches.
  return Planner(g, plan, true).run();
}

TaskEvents Planner::planWholeLaunches() {
  // Each launch waits on the latest launch it follows, which takes the others over as
  // its own predecessors; visited from the last, so those are settled in turn.
  std::vector<std::vector<uint32_t>> after(plan.size());
  for (uint32_t i = 0; i < plan.size(); ++i) {
    after[i] = plan[i].after;
    out.wholeDependencies += static_cast<uint32_t>(after[i].size());
  }
  std::vector<int64_t> waitsOn(plan.size(), -1);
  for (size_t i = plan.size(); i-- > 0;) {
    std::vector<uint32_t> &preds = after[i];
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    if (preds.empty())
      continue;
    const uint32_t latest = preds.back();
    for (uint32_t p : preds)
      if (p != latest)
        after[latest].push_back(p);
    waitsOn[i] = latest;
  }
  // One event per launch some launch waits on: all its tasks.
  std::vector<uint32_t> eventOf(plan.size(), kNoEvent);
  for (size_t i = 0; i < plan.size(); ++i) {
    if (waitsOn[i] < 0)
      continue;
    const auto w = static_cast<uint32_t>(waitsOn[i]);
    if (eventOf[w] == kNoEvent) {
      eventOf[w] = static_cast<uint32_t>(out.eventSize.size());
      out.eventSize.push_back(count[w]);
      out.eventLaunch.push_back(w);
    }
  }
  for (uint32_t l = 0; l < plan.size(); ++l) {
    const uint32_t wait = waitsOn[l] < 0 ? kNoEvent : eventOf[waitsOn[l]];
    std::fill_n(out.wait.begin() + out.firstTask[l], count[l], wait);
    std::fill_n(out.trigger.begin() + out.firstTask[l], count[l], eventOf[l]);
  }
  return std::move(out);
}

} // namespace

TaskEvents planTaskEvents(const GraphBundle &graph, std::span<const PlannedGraphLaunch> plan, bool wholeLaunches) {
  return Planner(graph, plan, wholeLaunches).run();
}

} // namespace kiln::rt
