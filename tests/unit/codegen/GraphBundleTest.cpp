//===- GraphBundleTest.cpp - Graphs packed as graph bundles -----------------===//
//
// A graph bundle must launch exactly what the graph means: for the graphs of the
// examples, the standard library and the tests, compiled as dslc compiles them, the
// launches the bundle's program plans (rt::planGraph, the runtime's evaluator) are
// compared with the reference interpreter's (interp::planGraph) on random arguments:
// the same kernels, grids and arguments, views at the same offsets of the same
// buffers. The file survives writing and reading, every damaged byte is caught, and a
// body the program cannot express is refused with a located error.
//
//===----------------------------------------------------------------------===//
#include "codegen/GraphBundleBuilder.h"
#include "ir/interp/Interpreter.h"
#include "ir/transforms/Pipeline.h"

#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <filesystem>
#include <random>
#include <sstream>

namespace kiln::codegen {
namespace {

#ifdef KILN_HAVE_SEMA

struct CompiledGraph {
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
  std::ostringstream text;
  DiagnosticEngine diags{*sources, text};
  std::unique_ptr<ir::Module> module;
  std::optional<rt::GraphBundle> bundle;
};

/// Compiles graph `name` of `file` (relative to the source tree) as `dslc --emit=bundle
/// --kernel NAME -D ...` does.
std::unique_ptr<CompiledGraph> compileGraph(const std::string &file, const std::string &name,
                                            const std::vector<std::pair<std::string, std::string>> &defines = {}) {
  auto c = std::make_unique<CompiledGraph>();
  SemaOptions options;
  options.kernel = name;
  options.defines = defines;
  c->module = compileFileToTileIR((std::filesystem::path(KILN_SOURCE_DIR) / file).string(), c->diags, options,
                                  c->sources);
  if (!c->module)
    return c;
  unifyNumWarps(*c->module);
  ir::PipelineOptions pipeline;
  pipeline.reductionSplit.forced = 1;
  ir::runPipeline(*c->module, pipeline, c->diags);
  c->bundle = buildGraphBundle(*c->module, *c->module->graphs.front(), Target::SM90, CodegenOptions{}, true, c->diags);
  return c;
}

/// Random arguments for the graph's parameters: integers in [1, 300], floats in
/// [-2, 2], and each pointer its own buffer, or with `alias` all pointers of one dtype
/// one buffer.
void randomArguments(const rt::GraphBundle &g, std::mt19937_64 &rng, bool alias, std::vector<interp::KernelArg> &iargs,
                     std::vector<interp::Buffer> &buffers, std::vector<rt::GraphArgValue> &rargs) {
  std::uniform_int_distribution<int64_t> ints(1, 300);
  std::uniform_real_distribution<double> floats(-2.0, 2.0);
  std::map<DType, size_t> shared;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const rt::BundleParam &p = g.params[i];
    rt::GraphArgValue r;
    if (p.pointer) {
      size_t b = buffers.size();
      if (alias && shared.count(p.dtype))
        b = shared[p.dtype];
      else {
        buffers.push_back(interp::Buffer{p.name, p.dtype, std::vector<std::byte>(64 * dtypeBytes(p.dtype)), false});
        shared[p.dtype] = b;
      }
      iargs.push_back(interp::KernelArg::ofBuffer(b));
      r.kind = rt::GraphArgValue::Kind::Buffer;
      r.param = static_cast<uint32_t>(i);
      r.bufferId = b;
    } else if (isFloat(p.dtype)) {
      r.kind = rt::GraphArgValue::Kind::Float;
      r.f = static_cast<double>(static_cast<float>(floats(rng)));
      iargs.push_back(interp::KernelArg::ofFloat(r.f));
    } else {
      r.i = p.dtype == DType::Bool ? ints(rng) % 2 : ints(rng);
      iargs.push_back(interp::KernelArg::ofInt(r.i));
    }
    rargs.push_back(r);
  }
}

/// The bundle's plan against the interpreter's, for one set of arguments.
void expectSamePlan(const CompiledGraph &c, std::mt19937_64 &rng, bool alias) {
  const rt::GraphBundle &g = *c.bundle;
  std::vector<interp::KernelArg> iargs;
  std::vector<interp::Buffer> buffers;
  std::vector<rt::GraphArgValue> rargs;
  randomArguments(g, rng, alias, iargs, buffers, rargs);
  std::ostringstream text;
  DiagnosticEngine diags(*c.sources, text);
  std::vector<interp::GraphLaunchCall> calls;
  ASSERT_TRUE(interp::planGraph(*c.module, *c.module->graphs.front(), iargs, buffers, diags, calls)) << text.str();
  rt::GraphPlanError error;
  std::optional<std::vector<rt::PlannedGraphLaunch>> planned = rt::planGraph(g, rargs, error);
  ASSERT_TRUE(planned) << error.message;
  ASSERT_EQ(planned->size(), calls.size());
  for (size_t l = 0; l < calls.size(); ++l) {
    SCOPED_TRACE("launch " + std::to_string(l));
    const rt::PlannedGraphLaunch &p = (*planned)[l];
    const interp::GraphLaunchCall &call = calls[l];
    EXPECT_EQ(g.kernels[g.launches[p.step].kernel].kernelName, entrySymbol(call.kernel->name));
    EXPECT_EQ(p.grid, call.grid);
    ASSERT_EQ(p.args.size(), call.args.size());
    for (size_t a = 0; a < p.args.size(); ++a) {
      SCOPED_TRACE("argument " + std::to_string(a));
      const rt::GraphArgValue &r = p.args[a];
      const interp::KernelArg &i = call.args[a];
      switch (i.kind) {
      case interp::KernelArg::Kind::Buffer:
        ASSERT_EQ(r.kind, rt::GraphArgValue::Kind::Buffer);
        EXPECT_EQ(r.bufferId, i.buffer);
        EXPECT_EQ(r.i, i.i);
        break;
      case interp::KernelArg::Kind::Int:
        ASSERT_EQ(r.kind, rt::GraphArgValue::Kind::Int);
        EXPECT_EQ(r.i, i.i);
        break;
      case interp::KernelArg::Kind::Float:
        ASSERT_EQ(r.kind, rt::GraphArgValue::Kind::Float);
        EXPECT_EQ(std::memcmp(&r.f, &i.f, sizeof r.f), 0) << r.f << " vs " << i.f;
        break;
      }
    }
    for (uint32_t before : p.after)
      EXPECT_LT(before, l);
  }
}

struct GraphSource {
  const char *file, *name;
  std::vector<std::pair<std::string, std::string>> defines;
};

class GraphPlans : public ::testing::TestWithParam<GraphSource> {};

TEST_P(GraphPlans, BundleLaunchesWhatTheInterpreterLaunches) {
  const GraphSource &src = GetParam();
  std::unique_ptr<CompiledGraph> c = compileGraph(src.file, src.name, src.defines);
  ASSERT_TRUE(c->module && c->bundle) << c->text.str();
  // Through the file and back, unchanged.
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeGraphBundle(*c->bundle, error);
  ASSERT_FALSE(bytes.empty()) << error;
  std::optional<rt::GraphBundle> again = rt::parseGraphBundle(bytes, error);
  ASSERT_TRUE(again) << error;
  EXPECT_TRUE(*again == *c->bundle);
  EXPECT_TRUE(again->persistent.has_value());
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectSamePlan(*c, rng, trial % 4 == 3);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, GraphPlans,
    ::testing::Values(GraphSource{"tests/graphs/chain.kiln", "chain", {}},
                      GraphSource{"examples/graph.kiln", "residual_stack", {}},
                      GraphSource{"stdlib/decode_chain.kiln", "decode_chain", {{"LAYERS", "3"}}},
                      GraphSource{"stdlib/encoder_layer.kiln", "encoder_layer", {{"H", "2"}, {"NP", "128"}}},
                      GraphSource{"stdlib/llama_decode.kiln", "llama_decode",
                                  {{"LAYERS", "2"}, {"HID", "128"}, {"NQ", "4"}, {"NKV", "2"}, {"D", "32"},
                                   {"FF", "256"}, {"SEGS", "4"}}}),
    [](const ::testing::TestParamInfo<GraphSource> &info) { return std::string(info.param.name); });

/// The PTX of a kernel bundle.
std::string ptxOf(const rt::Bundle &k) {
  for (const rt::CodeSection &c : k.sections)
    if (c.kind == rt::SectionKind::PTX)
      return std::string(c.bytes.begin(), c.bytes.end());
  return "";
}

TEST(GraphBundle, LaunchedKernelsWithoutProductsAreCompiledForTheWorkersPerSM) {
  // As launches (a CUDA graph, or one by one), a memory-bound kernel gets the registers
  // of the persistent kernel's workers per SM; a kernel with a dot keeps ptxas's choice.
  std::unique_ptr<CompiledGraph> chain = compileGraph("stdlib/decode_chain.kiln", "decode_chain", {{"LAYERS", "2"}});
  ASSERT_TRUE(chain->module && chain->bundle) << chain->text.str();
  ASSERT_EQ(chain->bundle->kernels.size(), 3u); // the product with and without the norm, the last norm
  for (const rt::Bundle &k : chain->bundle->kernels)
    EXPECT_NE(ptxOf(k).find(".minnctapersm 2"), std::string::npos) << k.kernelName;
  std::unique_ptr<CompiledGraph> layer =
      compileGraph("stdlib/encoder_layer.kiln", "encoder_layer", {{"H", "2"}, {"NP", "128"}});
  ASSERT_TRUE(layer->module && layer->bundle) << layer->text.str();
  size_t products = 0;
  for (const rt::Bundle &k : layer->bundle->kernels) {
    const std::string ptx = ptxOf(k);
    if (ptx.find("mma.") != std::string::npos) {
      ++products;
      EXPECT_EQ(ptx.find(".minnctapersm"), std::string::npos) << k.kernelName;
    }
  }
  EXPECT_GT(products, 0u);
}

TEST(GraphBundle, EveryDamagedByteIsCaught) {
  std::unique_ptr<CompiledGraph> c = compileGraph("tests/graphs/chain.kiln", "chain");
  ASSERT_TRUE(c->module && c->bundle) << c->text.str();
  std::string error;
  const std::vector<uint8_t> good = rt::serializeGraphBundle(*c->bundle, error);
  ASSERT_FALSE(good.empty()) << error;
  for (size_t at = 0; at < good.size(); at += 7) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x20;
    EXPECT_FALSE(rt::parseGraphBundle(bad, error)) << "byte " << at;
  }
  // Truncated, and a kernel bundle where a graph's is expected.
  EXPECT_FALSE(rt::parseGraphBundle(std::span(good).first(good.size() - 1), error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  const std::vector<uint8_t> kernel = rt::serializeBundle(c->bundle->kernels.front(), error);
  EXPECT_FALSE(rt::parseGraphBundle(kernel, error));
  EXPECT_NE(error.find("it is a kernel bundle"), std::string::npos) << error;
  EXPECT_FALSE(rt::parseBundle(good, error));
  EXPECT_NE(error.find("it is a graph bundle"), std::string::npos) << error;
}

TEST(GraphBundle, ValidationRefusesMeaninglessPrograms) {
  std::unique_ptr<CompiledGraph> c = compileGraph("tests/graphs/chain.kiln", "chain");
  ASSERT_TRUE(c->module && c->bundle) << c->text.str();
  auto invalid = [&](auto change) {
    rt::GraphBundle g = *c->bundle;
    change(g);
    return rt::validateGraphBundle(g);
  };
  EXPECT_EQ(invalid([](rt::GraphBundle &) {}), "");
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.values[5].operands = {7, 7}; }), "");       // a later value
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.launches[0].args.pop_back(); }), "");       // an argument short
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.launches[0].args[0] = 3; }), "");           // n for a pointer
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.launches[0].guard = 3; }), "");             // an i32 guard
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.edges.push_back({2, 1, std::nullopt}); }), ""); // backwards
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.launches[0].kernel = 9; }), "");
  EXPECT_NE(invalid([](rt::GraphBundle &g) { g.kernels[0].target = rt::Target::SPIRV64; }), "");
}

TEST(GraphBundle, ABodyTheProgramCannotExpressIsRefusedWhereItIs) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln-graph-sqrt.kiln").string();
  {
    std::ofstream f(path);
    f << "kernel k(p: *f32, s: f32) { store(p, s); }\n"
         "graph g(p: *f32, s: f32) {\n"
         "    launch k[(1,)](p, sqrt(s));\n"
         "}\n";
  }
  auto c = std::make_unique<CompiledGraph>();
  SemaOptions options;
  options.kernel = "g";
  c->module = compileFileToTileIR(path, c->diags, options, c->sources);
  std::filesystem::remove(path);
  ASSERT_TRUE(c->module) << c->text.str();
  EXPECT_FALSE(buildGraphBundle(*c->module, *c->module->graphs.front(), Target::SM90, CodegenOptions{}, true, c->diags));
  EXPECT_NE(c->text.str().find("3:"), std::string::npos) << c->text.str();
  EXPECT_NE(c->text.str().find("'sqrt' in the body of graph 'g' cannot go into a graph bundle"), std::string::npos)
      << c->text.str();
}

#endif // KILN_HAVE_SEMA

} // namespace
} // namespace kiln::codegen
