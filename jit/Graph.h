//===- Graph.h - One JIT-compiled graph ---------------------------*- C++ -*-===//
//
// What kiln_jit_compile_graph_* does: a graph of a Kiln program, with every kernel it
// launches, compiled for the JIT's device into the graph bundle `dslc --emit=bundle
// --kernel GRAPH` writes (its persistent kernel included on NVPTX), kept in the disk
// cache under a key of everything it depends on, and loaded as a kiln_graph, which the
// runtime's graph API runs in every mode.
//
// Unlike a kernel, a graph is compiled once, whole, when it is asked for: its launches
// compute their own arguments from the graph's, so there is nothing to specialize on
// per call, and its kernels' code is checked against its launches here rather than on a
// first run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "jit/Compile.h"
#include "jit/Kernel.h"

namespace kiln::jit {

/// Graph `graph` of `source`, from the cache or compiled (and then cached), loaded for
/// the JIT's runtime; the caller owns it (kiln_graph_destroy). Throws Failure.
kiln_graph *compileGraph(JitState &jit, const Source &source, const std::string &graph, const SemaOptions &options,
                         const FusionChoices &fusion);

} // namespace kiln::jit
