//===- GraphDependencies.h - What a graph's launches must wait for -*- C++ -*-===//
//
// A graph means its launches in order (docs/graphs.md), but a launch need wait only for
// the earlier ones whose memory it touches: reading what one wrote (read-after-write),
// overwriting what one read (write-after-read) or wrote (write-after-write). This
// analysis finds those dependencies from the memory each launch's kernel reads and
// writes through each pointer argument (PointerProvenance) and the graph parameter each
// argument is a view of. It is the input of the persistent-task lowering, and
// `dslc --explain-graph` prints it.
//
// Granularity: pairs of launches. Which programs of the later launch wait for which of
// the earlier one is decided per run, where grids and arguments are known, from the
// ranges each program touches (ir/TaskFootprints.h, recorded in the graph bundle;
// runtime/TaskEvents.h). Here views of one parameter are taken to overlap. Two
// different pointer parameters of the graph may be one buffer at run time;
// dependencies that exist only in that case are kept apart, marked `mayAlias`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

/// One pointer argument of a launch that its kernel reads or writes through.
struct LaunchAccess {
  unsigned arg = 0;                  ///< the kernel's parameter index
  std::optional<unsigned> root;      ///< the graph parameter it is a view of; nullopt: unknown
  bool reads = false, writes = false;
};

struct GraphLaunch {
  const Op *op = nullptr;
  const Kernel *kernel = nullptr;
  bool conditional = false;          ///< inside an `if`: it may not run
  std::vector<LaunchAccess> accesses;
};

struct GraphDependency {
  enum class Kind { ReadAfterWrite, WriteAfterRead, WriteAfterWrite };
  unsigned from = 0, to = 0;         ///< launch indices, from < to
  Kind kind = Kind::ReadAfterWrite;
  unsigned fromArg = 0, toArg = 0;   ///< the kernels' parameters that meet
  bool mayAlias = false;             ///< only if two graph parameters are one buffer
};

struct GraphDependencies {
  std::vector<GraphLaunch> launches; ///< in program order
  std::vector<GraphDependency> dependencies;
};

/// Analyses graph `graph` of `module` (its static_range loops are already unrolled).
GraphDependencies analyzeGraphDependencies(const Module &module, const Kernel &graph);

/// The report of `dslc --explain-graph`: each launch with what it reads and writes, and
/// each dependency with its reason.
void printGraphDependencies(const Module &module, const Kernel &graph, const GraphDependencies &deps,
                            std::ostream &os);

} // namespace kiln::ir
