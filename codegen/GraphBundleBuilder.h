//===- GraphBundleBuilder.h - A graph into a launchable graph bundle -*- C++ -*-===//
//
// `dslc --emit=bundle --kernel GRAPH` and `dslc run` of a graph on a GPU both go through
// here: the graph's body becomes the scalar program of a graph bundle
// (runtime/GraphBundle.h), its dependencies (ir/GraphDependencies.h) the bundle's
// edges, each kernel it launches a kernel bundle, and, for an NVPTX target, the
// persistent kernel (codegen/Megakernel.cpp) joins them.
//
// Alignment: a kernel is compiled assuming 16-byte aligned pointers unless some launch
// passes it a view whose offset is not provably a multiple of 16 bytes (the offset's
// power-of-two divisibility, from constants, products and sums, and from integer
// parameters that a launch outside every `if` passes to a kernel that assumes them a
// multiple of M); the runtime refuses a launch that breaks what a kernel assumes rather
// than run it wrongly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "ir/IR.h"
#include "runtime/GraphBundle.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"

#include <optional>

namespace kiln::codegen {

/// The graph bundle of graph `graph` of `module`, whose pipeline has run (for a persistent
/// kernel with one num_warps for every kernel: see unifyNumWarps). `persistent` adds the
/// persistent kernel (NVPTX targets). nullopt, with diagnostics, when the body holds an op
/// the bundle's program cannot express or code generation fails. `launchLocations`, where
/// given, gets each launch's source location, in the bundle's order.
std::optional<rt::GraphBundle> buildGraphBundle(const ir::Module &module, const ir::Kernel &graph, Target target,
                                                const CodegenOptions &options, bool persistent,
                                                DiagnosticEngine &diags, TimingReport *timing = nullptr,
                                                std::vector<Location> *launchLocations = nullptr);

/// The persistent mode's one rule for the kernels: every one takes the largest
/// num_warps among them (a worker runs every kind of task). Run before the pipeline.
void unifyNumWarps(ir::Module &module);

} // namespace kiln::codegen
