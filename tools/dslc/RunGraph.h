//===- RunGraph.h - dslc run of a graph on a GPU --------------------*- C++ -*-===//
//
// Compiles what a graph launches and runs it through tools/launch/GraphRun.h: evaluates
// the graph's body on the host arguments (interp::planGraph), finds which earlier
// launches each launch must follow (ir/GraphDependencies.h; dependencies that hold only
// if two parameters are one buffer count when they are), generates each kernel's code
// and, for the persistent mode, the megakernel (codegen/Megakernel.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "ir/IR.h"
#include "runtime/Runtime.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"
#include "tools/launch/GraphRun.h"
#include "tools/launch/HostArguments.h"

namespace kiln::dslc {

/// Runs graph `graph` of `module` (whose pipeline has run; for the persistent mode with
/// one num_warps for every kernel) on `gpu`. On success the buffers that changed are
/// marked written in `host`.
bool runGraphOnDevice(ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host, kiln::Runtime &gpu,
                      codegen::Target target, const codegen::CodegenOptions &codegenOptions,
                      const launch::GraphRunOptions &options, DiagnosticEngine &diags, TimingReport *timing);

/// The persistent mode's one rule for the kernels: every one takes the largest
/// num_warps among them (a worker runs every kind of task). Run before the pipeline.
void unifyNumWarps(ir::Module &module);

} // namespace kiln::dslc
