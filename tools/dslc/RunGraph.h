//===- RunGraph.h - dslc run of a graph on a GPU --------------------*- C++ -*-===//
//
// Compiles a graph into its graph bundle (codegen/GraphBundleBuilder.h), as
// `dslc --emit=bundle` would write it, and runs that through tools/launch/GraphRun.h as
// kiln-run would: the bundle's program evaluated on the host arguments gives the
// launches and what each must follow.
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

} // namespace kiln::dslc
