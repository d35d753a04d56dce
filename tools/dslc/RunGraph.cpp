//===- RunGraph.cpp - dslc run of a graph on a GPU -----------------------------===//
#include "tools/dslc/RunGraph.h"

#include "codegen/GraphBundleBuilder.h"

namespace kiln::dslc {

bool runGraphOnDevice(ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host, kiln::Runtime &gpu,
                      codegen::Target target, const codegen::CodegenOptions &codegenOptions,
                      const launch::GraphRunOptions &options, DiagnosticEngine &diags, TimingReport *timing) {
  // The same graph bundle `--emit=bundle` writes and kiln-run runs, built in memory.
  std::vector<Location> locations;
  std::optional<rt::GraphBundle> bundle =
      codegen::buildGraphBundle(module, graph, target, codegenOptions,
                                options.mode == launch::GraphMode::Persistent, diags, timing, &locations);
  if (!bundle)
    return false;
  launch::CompiledGraph compiled;
  std::vector<launch::PlannedLaunch> launches;
  {
    TimingReport::Scope timer(timing, "run: the graph's launches");
    if (!launch::planBundleRun(*bundle, host, diags, compiled, launches, locations))
      return false;
  }
  if (launches.empty())
    return true; // nothing runs: every launch sat under an `if` that was false
  return launch::runGraphOnGpu(gpu, compiled, launches, host, options, diags, timing);
}

} // namespace kiln::dslc
