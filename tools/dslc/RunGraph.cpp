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
  return launch::runGraphOnGpu(gpu, *bundle, host, options, diags, timing, locations);
}

} // namespace kiln::dslc
