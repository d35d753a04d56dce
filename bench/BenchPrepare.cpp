//===- BenchPrepare.cpp - Compiles the benchmark workloads to bundles -----===//
//
// kiln-bench-prepare [--root REPO] [--target sm_90a] [--checked] OUTDIR
//
// Compiles every workload of Workloads.cpp from its Kiln source (relative to REPO,
// default the source tree this tool was built from) into OUTDIR/<name>.kbin, with the
// PTX beside it as OUTDIR/<name>.ptx for inspection, after the Tile IR pass pipeline
// (fusion included) that dslc runs. Each kernel is specialized as the
// benchmark launches it: its const values, its warps and the integer parameters the
// launch guarantees to be multiples of 16 (recorded in the bundle, so the runtime
// refuses a launch that breaks them). The GPU machine then needs only kiln-bench.
// --checked compiles the workloads in checked mode (docs/checked.md), to measure what
// it costs; the L2 flush kernel stays unchecked.
//
//===----------------------------------------------------------------------===//
#include "bench/L2Flush.h"
#include "bench/Workloads.h"

#include "codegen/BundleBuilder.h"
#include "codegen/Codegen.h"
#include "frontend/Sema.h"
#include "ir/Verifier.h"
#include "ir/transforms/Pipeline.h"

#include <filesystem>
#include <fstream>
#include <iostream>

using namespace kiln;
namespace fs = std::filesystem;

/// The parameter index of each `name -> divisor` entry; false if a name is unknown.
static bool divisibilityByIndex(const ir::Kernel &kernel, const bench::Workload &w,
                                std::vector<std::pair<unsigned, int64_t>> &out) {
  for (const auto &[name, divisor] : w.divisibility) {
    bool found = false;
    for (unsigned i = 0; i < kernel.params().size(); ++i)
      if (kernel.params()[i]->nameHint == name) {
        out.push_back({i, divisor});
        found = true;
      }
    if (!found) {
      std::cerr << w.name << ": kernel " << kernel.name << " has no parameter '" << name << "'\n";
      return false;
    }
  }
  return true;
}

static bool prepare(const bench::Workload &w, const fs::path &root, const fs::path &out,
                    codegen::Target target, bool checked) {
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, std::cerr);
  SemaOptions sema;
  sema.kernel = w.kernel;
  sema.defines = w.defines;
  std::unique_ptr<ir::Module> module =
      compileFileToTileIR((root / w.source).string(), diags, sema, sources);
  if (!module || !ir::verifyModule(*module, diags))
    return false;
  // The Tile IR passes (reduction-chain fusion, CSE, ...), as dslc and the JIT run them:
  // the benchmark times what a user of either would get.
  ir::PipelineOptions pipeline;
  pipeline.reductionSplit.forced = w.segments;
  ir::setPipelineTarget(pipeline, codegen::targetName(target));
  if (!ir::runPipeline(*module, pipeline, diags))
    return false;
  ir::Kernel *kernel = module->findKernel(w.kernel);
  if (!kernel) {
    std::cerr << w.name << ": no kernel " << w.kernel << " in " << w.source << "\n";
    return false;
  }
  if (w.numWarps > 0)
    kernel->numWarps = w.numWarps;
  if (w.numStages > 0)
    kernel->numStages = w.numStages;
  codegen::CodegenOptions options;
  options.checked = checked;
  if (!divisibilityByIndex(*kernel, w, options.paramDivisibility))
    return false;
  std::optional<codegen::CodegenResult> result =
      codegen::generate(*module, *kernel, target, diags, options);
  if (!result)
    return false;
  std::ofstream(out / (w.name + ".ptx")) << result->ptx;
  rt::Bundle bundle = codegen::makeBundle(*module, *kernel, target, options, *result);
  std::string error;
  if (!rt::writeBundleAtomic((out / (w.name + ".kbin")).string(), bundle, error)) {
    std::cerr << w.name << ": " << error << "\n";
    return false;
  }
  std::cout << w.name << ": " << w.source << " " << w.config() << ", " << result->numThreads
            << " threads, " << result->sharedBytes << " bytes of shared memory\n";
  return true;
}

int main(int argc, char **argv) {
  fs::path root = KILN_SOURCE_DIR;
  std::string targetName = "sm_90a";
  fs::path out;
  bool checked = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--checked")
      checked = true;
    else if (arg == "--root" && i + 1 < argc)
      root = argv[++i];
    else if (arg == "--target" && i + 1 < argc)
      targetName = argv[++i];
    else if (out.empty() && !arg.starts_with("-"))
      out = arg;
    else
      out.clear(), i = argc;
  }
  std::optional<codegen::Target> target = codegen::parseTarget(targetName);
  if (out.empty() || !target || !codegen::isNvptxTarget(*target)) {
    std::cerr << "usage: kiln-bench-prepare [--root REPO] [--target sm_80|sm_90|sm_90a] [--checked] OUTDIR\n";
    return 2;
  }
  fs::create_directories(out);
  int failures = 0;
  if (!prepare(bench::l2FlushKernel(), root, out, *target, false)) {
    std::cerr << "l2_flush: FAILED\n";
    ++failures;
  }
  for (const bench::Workload &w : bench::workloads())
    if (!prepare(w, root, out, *target, checked)) {
      std::cerr << w.name << ": FAILED\n";
      ++failures;
    }
  return failures ? 1 : 0;
}
