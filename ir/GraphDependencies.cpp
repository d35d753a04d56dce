//===- GraphDependencies.cpp - What a graph's launches must wait for -------===//
#include "ir/GraphDependencies.h"

#include "ir/Provenance.h"
#include "ir/TaskFootprints.h"
#include "support/Location.h"

#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <tuple>

namespace kiln::ir {

namespace {

/// Which of `kernel`'s pointer parameters it reads and writes through.
void accessesOf(const Kernel &kernel, std::vector<bool> &reads, std::vector<bool> &writes) {
  const auto &params = kernel.params();
  reads.assign(params.size(), false);
  writes.assign(params.size(), false);
  PointerProvenance provenance(kernel);
  auto mark = [&](const Value *ptr, bool read, bool write) {
    BaseSet bases = provenance.bases(ptr);
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i]->type.pointer && (bases == kAnyBase || (i < 63 && (bases >> i) & 1))) {
        reads[i] = reads[i] || read;
        writes[i] = writes[i] || write;
      }
  };
  std::function<void(const Block &)> visit = [&](const Block &b) {
    for (const auto &op : b.ops()) {
      switch (op->kind()) {
      case OpKind::Load:
      case OpKind::BlockElements: mark(op->operand(0), true, false); break;
      case OpKind::Store: mark(op->operand(0), false, true); break;
      case OpKind::AtomicRMW:
      case OpKind::AtomicCas: mark(op->operand(0), true, true); break;
      default: break;
      }
      for (const auto &r : op->regions())
        visit(*r);
    }
  };
  visit(*kernel.body);
}

/// The graph parameter `v` is a view of (through ptr_add), if it is one.
std::optional<unsigned> rootOf(const Kernel &graph, const Value *v) {
  while (const Op *def = v->definingOp()) {
    if (def->kind() != OpKind::PtrAdd)
      return std::nullopt;
    v = def->operand(0);
  }
  const auto &params = graph.params();
  for (unsigned i = 0; i < params.size(); ++i)
    if (params[i].get() == v)
      return i;
  return std::nullopt;
}

/// Launches that may have touched one buffer since the last launch that surely wrote it.
struct BufferState {
  std::vector<std::pair<unsigned, unsigned>> writers, readers; ///< (launch, its argument)
};

/// The dependencies of launches in order, with `key` saying which accesses share a
/// buffer (nullopt: the access is not tracked in this pass).
template <typename Key>
std::vector<GraphDependency> track(const std::vector<GraphLaunch> &launches, const Key &key) {
  using K = decltype(key(LaunchAccess{}));
  std::map<typename K::value_type, BufferState> state;
  std::vector<GraphDependency> out;
  for (unsigned j = 0; j < launches.size(); ++j) {
    const GraphLaunch &l = launches[j];
    for (const LaunchAccess &a : l.accesses) {
      K k = key(a);
      if (!k)
        continue;
      BufferState &s = state[*k];
      if (a.reads)
        for (auto [i, arg] : s.writers)
          out.push_back({i, j, GraphDependency::Kind::ReadAfterWrite, arg, a.arg, false});
      if (a.writes) {
        for (auto [i, arg] : s.writers)
          out.push_back({i, j, GraphDependency::Kind::WriteAfterWrite, arg, a.arg, false});
        for (auto [i, arg] : s.readers)
          out.push_back({i, j, GraphDependency::Kind::WriteAfterRead, arg, a.arg, false});
      }
    }
    // Then what this launch leaves behind: a launch that surely runs and writes a buffer
    // hides the earlier accesses from later launches (they wait for it, and it for them).
    for (const LaunchAccess &a : l.accesses) {
      K k = key(a);
      if (!k)
        continue;
      BufferState &s = state[*k];
      if (a.writes && !l.conditional) {
        s.writers.clear();
        s.readers.clear();
      }
    }
    for (const LaunchAccess &a : l.accesses) {
      K k = key(a);
      if (!k)
        continue;
      BufferState &s = state[*k];
      if (a.writes)
        s.writers.push_back({j, a.arg});
      if (a.reads)
        s.readers.push_back({j, a.arg});
    }
  }
  // One dependency per pair of launches, kind and arguments.
  auto order = [](const GraphDependency &d) {
    return std::make_tuple(d.to, d.from, static_cast<int>(d.kind), d.fromArg, d.toArg);
  };
  std::sort(out.begin(), out.end(), [&](const auto &a, const auto &b) { return order(a) < order(b); });
  out.erase(std::unique(out.begin(), out.end(), [&](const auto &a, const auto &b) { return order(a) == order(b); }),
            out.end());
  return out;
}

const char *kindText(GraphDependency::Kind k) {
  switch (k) {
  case GraphDependency::Kind::ReadAfterWrite: return "read-after-write";
  case GraphDependency::Kind::WriteAfterRead: return "write-after-read";
  case GraphDependency::Kind::WriteAfterWrite: return "write-after-write";
  }
  return "?";
}

} // namespace

GraphDependencies analyzeGraphDependencies(const Module &module, const Kernel &graph) {
  GraphDependencies out;
  std::function<void(const Block &, bool)> visit = [&](const Block &b, bool conditional) {
    for (const auto &op : b.ops()) {
      if (op->kind() == OpKind::Launch) {
        GraphLaunch l;
        l.op = op.get();
        l.kernel = module.findKernel(op->stringAttr("kernel"));
        l.conditional = conditional;
        if (l.kernel) {
          std::vector<bool> reads, writes;
          accessesOf(*l.kernel, reads, writes);
          for (unsigned i = 0; i < reads.size() && i + 3 < op->numOperands(); ++i)
            if (reads[i] || writes[i])
              l.accesses.push_back({i, rootOf(graph, op->operand(i + 3)), reads[i], writes[i]});
        }
        out.launches.push_back(std::move(l));
      }
      for (const auto &r : op->regions())
        visit(*r, conditional || op->kind() == OpKind::If);
    }
  };
  visit(*graph.body, false);

  // Views of one parameter share a buffer; an argument of unknown origin may be any.
  std::vector<GraphDependency> sure = track(out.launches, [](const LaunchAccess &a) { return a.root; });
  std::vector<GraphDependency> any =
      track(out.launches, [](const LaunchAccess &) { return std::optional<unsigned>(0); });
  for (GraphDependency &d : any) {
    bool known = std::any_of(sure.begin(), sure.end(), [&](const GraphDependency &s) {
      return s.from == d.from && s.to == d.to && s.kind == d.kind && s.fromArg == d.fromArg && s.toArg == d.toArg;
    });
    const LaunchAccess *a = nullptr, *b = nullptr;
    for (const LaunchAccess &x : out.launches[d.from].accesses)
      a = x.arg == d.fromArg ? &x : a;
    for (const LaunchAccess &x : out.launches[d.to].accesses)
      b = x.arg == d.toArg ? &x : b;
    // Unknown views may be the same buffer as anything; known different roots only if
    // the caller passes one buffer for both.
    d.mayAlias = !known && !(a && b && (!a->root || !b->root));
    if (!known)
      out.dependencies.push_back(d);
  }
  out.dependencies.insert(out.dependencies.end(), sure.begin(), sure.end());
  std::sort(out.dependencies.begin(), out.dependencies.end(), [](const auto &x, const auto &y) {
    return std::make_tuple(x.to, x.mayAlias, x.from, static_cast<int>(x.kind), x.fromArg, x.toArg) <
           std::make_tuple(y.to, y.mayAlias, y.from, static_cast<int>(y.kind), y.fromArg, y.toArg);
  });
  return out;
}

namespace {

/// "x[64·pid.x .. 64·pid.x + 63]" for each distinct range of parameter `param`'s
/// accesses, "the whole buffer" where one is unknown.
std::string footprintText(const Kernel &kernel, const std::vector<TaskFootprint> &footprints, unsigned param) {
  std::vector<std::string> parts;
  for (const TaskFootprint &f : footprints) {
    if (f.param != param)
      continue;
    if (!f.range)
      return "the whole buffer";
    const std::string text = kernel.params()[param]->nameHint + "[" + f.range->lo.str(kernel) + " .. " +
                             f.range->hi.str(kernel) + "]";
    if (std::find(parts.begin(), parts.end(), text) == parts.end())
      parts.push_back(text);
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? ", " : "") + parts[i];
  return out.empty() ? "the whole buffer" : out;
}

} // namespace

void printGraphDependencies(const Module &module, const Kernel &graph, const GraphDependencies &deps,
                            std::ostream &os) {
  auto paramName = [](const Kernel &k, unsigned i) { return k.params()[i]->nameHint; };
  auto bufferName = [&](const LaunchAccess &a) {
    return a.root ? paramName(graph, *a.root) : std::string("a pointer of unknown origin");
  };
  os << "graph '" << graph.name << "': " << deps.launches.size() << " launch" << (deps.launches.size() == 1 ? "" : "es")
     << ", each program of each a task\n";
  // Each launch's footprints, and whether a dependency can be narrowed to tasks: both
  // sides' ranges known, on one buffer for sure (runtime/TaskEvents.h does the same per
  // run, where the grids and arguments are known).
  std::vector<std::vector<TaskFootprint>> footprints(deps.launches.size());
  for (unsigned j = 0; j < deps.launches.size(); ++j)
    if (deps.launches[j].kernel)
      footprints[j] = analyzeTaskFootprints(*deps.launches[j].kernel);
  auto unknownRange = [&](unsigned launch, unsigned arg) -> std::string {
    for (const TaskFootprint &f : footprints[launch])
      if (f.param == arg && !f.range)
        return "the range of " + paramName(*deps.launches[launch].kernel, arg) + " in launch " +
               std::to_string(launch) + " is not known";
    return "";
  };
  auto whyWhole = [&](const GraphDependency &d) -> std::string {
    if (d.mayAlias)
      return "two parameters passed one buffer";
    if (std::string why = unknownRange(d.from, d.fromArg); !why.empty())
      return why;
    return unknownRange(d.to, d.toArg);
  };
  unsigned narrowed = 0;
  for (unsigned j = 0; j < deps.launches.size(); ++j) {
    const GraphLaunch &l = deps.launches[j];
    os << "  launch " << j << ": " << l.op->stringAttr("kernel") << " at "
       << formatLocation(*module.sources, l.op->loc()) << (l.conditional ? " (under an if)" : "");
    std::optional<int64_t> grid[3];
    int64_t tasks = 1;
    bool known = true;
    for (unsigned d = 0; d < 3; ++d) {
      grid[d] = integerConstant(l.op->operand(d));
      known = known && grid[d];
      tasks *= grid[d].value_or(1);
    }
    if (known)
      os << ", grid (" << *grid[0] << ", " << *grid[1] << ", " << *grid[2] << "): " << tasks << " task"
         << (tasks == 1 ? "" : "s") << "\n";
    else
      os << ", grid computed from the graph's arguments\n";
    if (!l.kernel)
      continue;
    const std::vector<TaskFootprint> footprints = analyzeTaskFootprints(*l.kernel);
    for (const LaunchAccess &a : l.accesses) {
      const Op *def = l.op->operand(a.arg + 3)->definingOp();
      os << "    " << (a.reads && a.writes ? "reads and writes " : a.reads ? "reads " : "writes ")
         << paramName(*l.kernel, a.arg) << " = " << (a.root && def ? "a view of " : "") << bufferName(a)
         << "; per program " << footprintText(*l.kernel, footprints, a.arg) << "\n";
    }
    for (const GraphDependency &d : deps.dependencies) {
      if (d.to != j)
        continue;
      const GraphLaunch &from = deps.launches[d.from];
      const LaunchAccess *a = nullptr, *b = nullptr;
      for (const LaunchAccess &x : from.accesses)
        a = x.arg == d.fromArg ? &x : a;
      for (const LaunchAccess &x : l.accesses)
        b = x.arg == d.toArg ? &x : b;
      os << "    after launch " << d.from << ": " << kindText(d.kind) << " on "
         << (a ? bufferName(*a) : std::string("?"));
      if (d.mayAlias && a && b)
        os << " if it is the same buffer as " << bufferName(*b);
      os << " (launch " << d.from << "'s " << paramName(*from.kernel, d.fromArg) << ", this one's "
         << paramName(*l.kernel, d.toArg) << ")";
      if (const std::string why = whyWhole(d); why.empty()) {
        os << ": per task\n";
        ++narrowed;
      } else {
        os << ": whole launch, " << why << "\n";
      }
    }
    // The event as the run sees it when no two parameters are one buffer, then what
    // changes when some are.
    int latest = -1, latestAny = -1;
    for (const GraphDependency &d : deps.dependencies)
      if (d.to == j) {
        latestAny = std::max(latestAny, int(d.from));
        if (!d.mayAlias)
          latest = std::max(latest, int(d.from));
      }
    bool wholeLatest = false;
    for (const GraphDependency &d : deps.dependencies)
      wholeLatest = wholeLatest || (d.to == j && !d.mayAlias && int(d.from) == latest && !whyWhole(d).empty());
    if (latest < 0)
      os << "    event: none; its tasks start as soon as workers claim them\n";
    else if (wholeLatest)
      os << "    event: waits until every task of launch " << latest << " is done\n";
    else
      os << "    event: each task waits for the tasks of launch " << latest
         << " whose ranges meet its own; what it needs of earlier launches passes to them\n";
    bool aliasOnLatest = false;
    for (const GraphDependency &d : deps.dependencies)
      aliasOnLatest = aliasOnLatest || (d.to == j && d.mayAlias && int(d.from) == latestAny);
    if (aliasOnLatest && !(wholeLatest && latest == latestAny))
      os << "    event if two parameters are one buffer: waits until every task of launch " << latestAny
         << " is done\n";
  }
  os << narrowed << " of " << deps.dependencies.size() << " dependenc" << (deps.dependencies.size() == 1 ? "y" : "ies")
     << " narrowed to tasks; the host groups each run's tasks into events from the ranges of the grids and "
        "arguments it is given\n";
}

} // namespace kiln::ir
