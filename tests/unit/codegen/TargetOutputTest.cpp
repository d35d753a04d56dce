//===- TargetOutputTest.cpp - Generated PTX and SPIR-V pass the vendor tools ===//
//
// Every kernel of tests/spirv/kernels/ is compiled for sm_80, sm_90a and spirv64; the
// PTX must be accepted by ptxas for that architecture and the SPIR-V by spirv-val (for
// OpenCL 1.2 and for SPIR-V 1.4 consumers). A few structural checks follow on kernels
// whose lowering is known: vector accesses, shuffles, barriers and the launch metadata.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "ir/transforms/Pipeline.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::codegen {
namespace {

const char *kPtxas = "/usr/local/cuda/bin/ptxas";

std::vector<std::string> kernelFiles() {
  std::vector<std::string> files;
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/spirv/kernels";
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".tir")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readText(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A scratch directory removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-cg-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

/// Runs a command line (arguments are test-controlled paths, no quoting needed);
/// returns its exit status and puts its output in `out`.
int runTool(const std::string &cmd, std::string &out) {
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Compiled {
  std::unique_ptr<ir::Module> module;
  std::vector<CodegenResult> results;
};

/// Compiles every kernel of a parsed module; diagnostics go to `text`.
void generateAll(Compiled &c, Target target, DiagnosticEngine &diags, const CodegenOptions &options = {}) {
  for (const auto &k : c.module->kernels)
    if (auto r = generate(*c.module, *k, target, diags, options))
      c.results.push_back(std::move(*r));
}

Compiled compileFile(const std::string &path, Target target, std::string &diagOut) {
  Compiled c;
  auto sources = std::make_shared<SourceManager>();
  uint32_t file = sources->addBuffer(path, readText(path));
  std::ostringstream text;
  DiagnosticEngine diags(*sources, text);
  c.module = ir::parseTir(sources, file, diags);
  if (c.module && ir::verifyModule(*c.module, diags))
    for (const auto &k : c.module->kernels)
      if (auto r = generate(*c.module, *k, target, diags))
        c.results.push_back(std::move(*r));
  diagOut = text.str();
  return c;
}

/// ptxas accepts every result for `t` (an sm_* target).
void expectPtxasAccepts(const std::vector<CodegenResult> &results, Target t) {
  TempDir dir;
  for (const CodegenResult &r : results) {
    const std::string ptx = dir.path + "/k.ptx";
    std::ofstream(ptx) << r.ptx;
    std::string out;
    const std::string arch(targetName(t));
    EXPECT_EQ(runTool(std::string(kPtxas) + " -arch=" + arch + " " + ptx + " -o " + dir.path +
                          "/k.cubin",
                      out),
              0)
        << r.entry << " for " << arch << ": " << out;
    EXPECT_NE(r.ptx.find(".entry " + r.entry), std::string::npos);
    EXPECT_NE(r.ptx.find(".maxntid " + std::to_string(r.numThreads)), std::string::npos);
  }
}

/// spirv-val accepts every result (for OpenCL 1.2 and for SPIR-V 1.4 consumers).
void expectSpirvValAccepts(const std::vector<CodegenResult> &results) {
  TempDir dir;
  for (const CodegenResult &r : results) {
    ASSERT_FALSE(r.spirv.empty());
    const std::string spv = dir.path + "/k.spv";
    std::ofstream(spv, std::ios::binary)
        .write(reinterpret_cast<const char *>(r.spirv.data()), static_cast<std::streamsize>(r.spirv.size()));
    for (const char *env : {"opencl1.2", "spv1.4"}) {
      std::string out;
      int rc = runTool(std::string("spirv-val --target-env ") + env + " " + spv, out);
      // 64-bit atomics are an extension on OpenCL 1.2 (cl_khr_int64_base_atomics).
      if (rc != 0 && std::string(env) == "opencl1.2" &&
          out.find("Capability Int64Atomics is not allowed") != std::string::npos)
        continue;
      EXPECT_EQ(rc, 0) << r.entry << " for " << env << ": " << out;
    }
    EXPECT_NE(r.spirvAsm.find("OpEntryPoint Kernel"), std::string::npos);
  }
}

class TargetOutput : public ::testing::TestWithParam<std::string> {};

TEST_P(TargetOutput, PtxasAcceptsSm80AndSm90a) {
  if (access(kPtxas, X_OK) != 0)
    GTEST_SKIP() << "ptxas not installed";
  for (Target t : {Target::SM80, Target::SM90a}) {
    std::string diags;
    Compiled c = compileFile(GetParam(), t, diags);
    ASSERT_EQ(c.results.size(), c.module ? c.module->kernels.size() : 1) << diags;
    expectPtxasAccepts(c.results, t);
  }
}

TEST_P(TargetOutput, SpirvValAccepts) {
  std::string diags;
  Compiled c = compileFile(GetParam(), Target::SPIRV64, diags);
  ASSERT_EQ(c.results.size(), c.module ? c.module->kernels.size() : 1) << diags;
  expectSpirvValAccepts(c.results);
}

#ifdef KILN_HAVE_SEMA
std::vector<std::string> programFiles() {
  std::vector<std::string> files;
  for (const char *sub : {"examples", "stdlib", "tests/programs"}) {
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(
             std::filesystem::path(KILN_SOURCE_DIR) / sub, ec))
      if (e.path().extension() == ".kiln")
        files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every kernel of every Kiln example, stdlib file and corpus program, at its default consts.
class ProgramTargetOutput : public ::testing::TestWithParam<std::string> {};

/// Compiles every kernel of `c` for every target and checks the code with the vendor
/// tools; `text` holds the diagnostics.
void expectEveryTargetAccepts(Compiled &c, DiagnosticEngine &diags, const std::ostringstream &text) {
  for (Target t : {Target::SM80, Target::SM90a, Target::SPIRV64}) {
    c.results.clear();
    generateAll(c, t, diags);
    ASSERT_EQ(c.results.size(), c.module->kernels.size()) << text.str();
    if (t == Target::SPIRV64)
      expectSpirvValAccepts(c.results);
    else if (access(kPtxas, X_OK) == 0)
      expectPtxasAccepts(c.results, t);
  }
}

/// A Kiln program through the frontend, with its diagnostics.
struct Program {
  explicit Program(const std::string &path) {
    c.module = compileFileToTileIR(path, diags, SemaOptions{}, sources);
  }
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
  std::ostringstream text;
  DiagnosticEngine diags{*sources, text};
  Compiled c;
};

TEST_P(ProgramTargetOutput, CompilesForEveryTarget) {
  Program p(GetParam());
  if (!p.c.module)
    GTEST_SKIP() << "the frontend rejects this program: " << p.text.str();
  // As dslc compiles it: through the pass pipeline, reduction-chain fusion included.
  ir::runPipeline(*p.c.module, ir::PipelineOptions{}, p.diags);
  expectEveryTargetAccepts(p.c, p.diags, p.text);
  // In checked mode too (LowerChecks.cpp): every access bounds-checked, for sm_90a and
  // SPIR-V (the PoCL runs of tests/spirv execute it).
  CodegenOptions checked;
  checked.checked = true;
  for (Target t : {Target::SM90a, Target::SPIRV64}) {
    p.c.results.clear();
    generateAll(p.c, t, p.diags, checked);
    ASSERT_EQ(p.c.results.size(), p.c.module->kernels.size()) << "checked mode: " << p.text.str();
    if (t == Target::SPIRV64)
      expectSpirvValAccepts(p.c.results);
    else if (access(kPtxas, X_OK) == 0)
      expectPtxasAccepts(p.c.results, t);
  }
}

// Every program again with each reduction chain that can be split over 3 programs split
// so: the fence, the arrival atomic and the merge of the multi-segment strategy. One
// test over the programs, since most have no chain to split.
TEST(ProgramSplitOutput, SplitReductionsCompileForEveryTarget) {
  int split = 0;
  for (const std::string &path : programFiles()) {
    SCOPED_TRACE(path);
    Program p(path);
    if (!p.c.module)
      continue;
    ir::PipelineOptions options;
    options.reductionSplit.forced = 3;
    ir::runPipeline(*p.c.module, options, p.diags);
    const auto &kernels = p.c.module->kernels;
    if (std::none_of(kernels.begin(), kernels.end(), [](const auto &k) { return k->gridSplit.active(); }))
      continue;
    ++split;
    expectEveryTargetAccepts(p.c, p.diags, p.text);
    // Each segment's arrival is an atomic between two device-scope fences.
    for (const auto &k : kernels) {
      if (!k->gridSplit.active())
        continue;
      std::optional<CodegenResult> r = generate(*p.c.module, *k, Target::SM90a, p.diags);
      ASSERT_TRUE(r) << p.text.str();
      size_t atomic = r->ptx.find("atom.global.add.u32");
      ASSERT_NE(atomic, std::string::npos) << k->name;
      EXPECT_NE(r->ptx.rfind("fence.acq_rel.gpu", atomic), std::string::npos) << k->name;
      EXPECT_NE(r->ptx.find("fence.acq_rel.gpu", atomic), std::string::npos) << k->name;
    }
  }
  // decode attention, attention, softmax, layernorm, the fusion corpus, the examples.
  EXPECT_GE(split, 8);
}
#endif

std::string testName(const ::testing::TestParamInfo<std::string> &info) {
  std::string stem = std::filesystem::path(info.param).stem().string();
  for (char &c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return stem;
}

/// Programs of different folders share names (examples/layernorm, stdlib/layernorm):
/// the folder leads the test name.
std::string programTestName(const ::testing::TestParamInfo<std::string> &info) {
  std::string folder = std::filesystem::path(info.param).parent_path().filename().string();
  return folder + "_" + testName(info);
}

INSTANTIATE_TEST_SUITE_P(Kernels, TargetOutput, ::testing::ValuesIn(kernelFiles()), testName);
#ifdef KILN_HAVE_SEMA
INSTANTIATE_TEST_SUITE_P(Programs, ProgramTargetOutput, ::testing::ValuesIn(programFiles()),
                         programTestName);
#endif

} // namespace
} // namespace kiln::codegen
