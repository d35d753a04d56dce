//===- FootprintTest.cpp - Task footprints against what programs really touch ===//
//
// ir/TaskFootprints.h claims, for each access of a kernel, the range of elements one
// program touches as a polynomial in the program id and the integer parameters. For
// every program spec of tests/spirv/programs (compiled as dslc compiles it), the kernel
// runs on the interpreter with the spec's random inputs while every element access is
// observed, and for each pointer parameter whose accesses all have a known range, each
// element a program touched must lie in the hull of those ranges evaluated for that
// program and those arguments. Across the specs enough parameters must be known for
// the check to mean something.
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/KernelCase.h"

#include "ir/TaskFootprints.h"
#include "ir/transforms/Pipeline.h"
#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>
#include <sstream>

namespace kiln::spirvtest {
namespace {

#ifdef KILN_HAVE_SEMA

TEST(TaskFootprints, EveryElementAProgramTouchesLiesInItsRange) {
  std::vector<std::string> specs;
  for (const auto &e : std::filesystem::directory_iterator(std::filesystem::path(KILN_SOURCE_DIR) / "tests/spirv/programs"))
    if (e.path().extension() == ".spec")
      specs.push_back(e.path().string());
  std::sort(specs.begin(), specs.end());
  size_t checkedParams = 0, unknownParams = 0;
  const uint64_t seed = testSeed();
  SCOPED_TRACE("KILN_SEED=" + std::to_string(seed));
  for (const std::string &path : specs) {
    SCOPED_TRACE(path);
    std::string error;
    std::optional<CaseSpec> spec = parseCaseSpec(readTextFile(path), error);
    ASSERT_TRUE(spec) << error;
    auto sources = std::make_shared<SourceManager>();
    std::ostringstream text;
    DiagnosticEngine diags(*sources, text);
    SemaOptions opts;
    opts.kernel = spec->kernel;
    opts.defines = spec->defines;
    opts.numStages = spec->numStages;
    std::unique_ptr<ir::Module> module =
        compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/" + spec->source, diags, opts, sources);
    ASSERT_TRUE(module && !module->kernels.empty()) << text.str();
    ir::PipelineOptions pipeline;
    pipeline.reductionSplit.forced = 1; // one program per reduction, as graphs compile them
    ir::runPipeline(*module, pipeline, diags);
    const ir::Kernel &kernel = *module->kernels.front();

    std::vector<interp::Buffer> buffers;
    std::vector<interp::KernelArg> args;
    makeInputs(*spec, seed, buffers, args);
    std::vector<int64_t> params(kernel.params().size(), 0);
    std::map<size_t, unsigned> paramOfBuffer;
    for (size_t i = 0; i < args.size() && i < params.size(); ++i) {
      if (args[i].kind == interp::KernelArg::Kind::Buffer)
        paramOfBuffer[args[i].buffer] = static_cast<unsigned>(i);
      else
        params[i] = args[i].i;
    }

    // The hull of each parameter's ranges, where every access of it has one.
    const std::vector<ir::TaskFootprint> footprints = ir::analyzeTaskFootprints(kernel);
    std::map<unsigned, std::vector<const ir::FootprintRange *>> rangesOf;
    std::map<unsigned, bool> unknown;
    for (const ir::TaskFootprint &f : footprints) {
      if (f.range)
        rangesOf[f.param].push_back(&*f.range);
      else
        unknown[f.param] = true;
    }
    size_t violations = 0;
    std::string first;
    interp::RunOptions run;
    run.grid = spec->grid;
    run.observeAccess = [&](size_t buffer, int64_t element, bool, const std::array<int64_t, 3> &pid) {
      auto p = paramOfBuffer.find(buffer);
      if (p == paramOfBuffer.end() || unknown.count(p->second) || !rangesOf.count(p->second))
        return;
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (const ir::FootprintRange *r : rangesOf[p->second]) {
        lo = std::min(lo, r->lo.evaluate(pid, params));
        hi = std::max(hi, r->hi.evaluate(pid, params));
      }
      if (element < lo || element > hi) {
        if (!violations++)
          first = "program (" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " +
                  std::to_string(pid[2]) + ") touched element " + std::to_string(element) + " of " +
                  kernel.params()[p->second]->nameHint + ", outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "] (" + rangesOf[p->second].front()->lo.str(kernel) + " .. " +
                  rangesOf[p->second].front()->hi.str(kernel) + ")";
      }
    };
    ASSERT_TRUE(interp::runKernel(kernel, args, buffers, run, diags)) << text.str();
    EXPECT_EQ(violations, 0u) << first;
    for (const auto &[param, ranges] : rangesOf)
      ++(unknown.count(param) ? unknownParams : checkedParams);
    unknownParams += std::count_if(unknown.begin(), unknown.end(), [&](const auto &u) { return !rangesOf.count(u.first); });
  }
  // Most of the corpus's parameters have ranges (masked tiles at offsets of the program
  // id, loops over a row); a collapse of the analysis would show here.
  EXPECT_GT(checkedParams, 2 * unknownParams) << checkedParams << " parameters with ranges, " << unknownParams
                                               << " without";
  std::cout << "task footprints: " << checkedParams << " parameters checked, " << unknownParams << " unknown\n";
}

#endif // KILN_HAVE_SEMA

} // namespace
} // namespace kiln::spirvtest
