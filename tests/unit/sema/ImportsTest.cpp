//===- ImportsTest.cpp - import resolution, cycles, diamonds, clashes -----===//
#include "SemaTestUtil.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kiln;
using namespace kiln::test;
namespace fs = std::filesystem;

namespace {

/// A fresh folder of .kiln files for one test, removed afterwards.
class ImportsTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() /
          ("kiln-imports-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  void write(const std::string &rel, const std::string &text) {
    fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

  struct Result {
    std::unique_ptr<ir::Module> module;
    std::vector<Diagnostic> diags;
    std::shared_ptr<SourceManager> sources;
    std::string text() const {
      std::string s;
      for (const auto &d : diags)
        s += diagCodeString(d.code) + " " + std::string(sources->name(d.loc.file)) + ":" +
             std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + " " + d.message + "\n";
      return s;
    }
    bool has(const char *code, const std::string &file, unsigned line, unsigned col,
             const std::string &msg) const {
      for (const auto &d : diags)
        if (diagCodeString(d.code) == code &&
            fs::path(std::string(sources->name(d.loc.file))).filename() == file &&
            d.loc.line == line && d.loc.col == col && d.message.find(msg) != std::string::npos)
          return true;
      return false;
    }
  };

  Result compileMain(const std::string &rel, SemaOptions options = {}) {
    Result r;
    r.sources = std::make_shared<SourceManager>();
    std::ostringstream sink;
    DiagnosticEngine engine(*r.sources, sink);
    engine.setHandler([&](const Diagnostic &d) { r.diags.push_back(d); });
    r.module = compileFileToTileIR((dir / rel).string(), engine, options, r.sources);
    return r;
  }

  fs::path dir;
};

const char *kUtil = "const SCALE = 2.0;\nfn scale(x) { return x * SCALE; }\n";

TEST_F(ImportsTest, RelativeToTheImportingFile) {
  write("lib/util.kiln", kUtil);
  write("main.kiln",
        "import \"lib/util.kiln\";\nkernel k(p: *f32) { store(p, scale(load(p))); }\n");
  auto r = compileMain("main.kiln");
  ASSERT_TRUE(r.module) << r.text();
  std::string ir = ir::printModule(*r.module);
  EXPECT_NE(ir.find("constant {value = 2.0} : f32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("mul"), std::string::npos) << ir;
}

TEST_F(ImportsTest, IncludeDirectoriesAreSearchedInOrder) {
  write("inc1/util.kiln", "fn scale(x) { return x * 3.0; }\n");
  write("inc2/util.kiln", kUtil);
  write("src/main.kiln",
        "import \"util.kiln\";\nkernel k(p: *f32) { store(p, scale(load(p))); }\n");
  SemaOptions o;
  o.includeDirs = {(dir / "inc1").string(), (dir / "inc2").string()};
  auto r = compileMain("src/main.kiln", o);
  ASSERT_TRUE(r.module) << r.text();
  EXPECT_NE(ir::printModule(*r.module).find("constant {value = 3.0} : f32"), std::string::npos);
}

TEST_F(ImportsTest, E0100NotFoundListsWhereItLooked) {
  write("main.kiln", "import \"missing.kiln\";\nkernel k(p: *f32) { store(p, 1.0); }\n");
  SemaOptions o;
  o.includeDirs = {(dir / "inc").string()};
  auto r = compileMain("main.kiln", o);
  EXPECT_FALSE(r.module);
  EXPECT_TRUE(r.has("E0100", "main.kiln", 1, 8, "cannot find imported file \"missing.kiln\""))
      << r.text();
  ASSERT_EQ(r.diags.size(), 1u) << r.text();
  EXPECT_NE(r.diags[0].message.find((dir / "missing.kiln").string()), std::string::npos);
  EXPECT_NE(r.diags[0].message.find((dir / "inc" / "missing.kiln").string()), std::string::npos);
}

TEST_F(ImportsTest, E0101CycleNamesTheChain) {
  write("a.kiln", "import \"b.kiln\";\nkernel k(p: *f32) { store(p, 1.0); }\n");
  write("b.kiln", "import \"a.kiln\";\nfn g(x) { return x; }\n");
  auto r = compileMain("a.kiln");
  EXPECT_FALSE(r.module);
  EXPECT_TRUE(r.has("E0101", "b.kiln", 1, 8, "import cycle: a.kiln -> b.kiln -> a.kiln"))
      << r.text();
}

TEST_F(ImportsTest, DiamondImportLoadsTheSharedFileOnce) {
  write("common.kiln", "fn c(x) { return x + 1; }\n");
  write("x.kiln", "import \"common.kiln\";\nfn fx(v) { return c(v); }\n");
  write("y.kiln", "import \"./common.kiln\";\nfn fy(v) { return c(v) * 2; }\n");
  write("main.kiln", "import \"x.kiln\";\nimport \"y.kiln\";\n"
                     "kernel k(p: *i32) { store(p, fx(load(p)) + fy(load(p))); }\n");
  auto r = compileMain("main.kiln");
  EXPECT_TRUE(r.module) << r.text();
}

TEST_F(ImportsTest, E0102ClashWithAnImportedItem) {
  write("util.kiln", kUtil);
  write("main.kiln", "import \"util.kiln\";\nfn scale(x) { return x; }\n"
                     "kernel k(p: *f32) { store(p, scale(1.0)); }\n");
  auto r = compileMain("main.kiln");
  EXPECT_FALSE(r.module);
  ASSERT_TRUE(r.has("E0102", "main.kiln", 2, 4, "'scale' is already defined")) << r.text();
  ASSERT_EQ(r.diags[0].notes.size(), 1u);
  EXPECT_EQ(fs::path(std::string(r.sources->name(r.diags[0].notes[0].loc.file))).filename(),
            "util.kiln");
  EXPECT_EQ(r.diags[0].notes[0].loc.line, 2u);
}

TEST_F(ImportsTest, ImportedKernelCanBeRequestedButIsNotCompiledByDefault) {
  write("lib.kiln", "kernel fill(p: *f32) { store(p, 7.0); }\n");
  write("main.kiln", "import \"lib.kiln\";\nkernel k(p: *f32) { store(p, 1.0); }\n");
  auto all = compileMain("main.kiln");
  ASSERT_TRUE(all.module) << all.text();
  ASSERT_EQ(all.module->kernels.size(), 1u);
  EXPECT_EQ(all.module->kernels[0]->name, "k");
  SemaOptions o;
  o.kernel = "fill";
  auto one = compileMain("main.kiln", o);
  ASSERT_TRUE(one.module) << one.text();
  ASSERT_EQ(one.module->kernels.size(), 1u);
  EXPECT_EQ(one.module->kernels[0]->name, "fill");
}

TEST_F(ImportsTest, E0001UnreadableMainFile) {
  auto r = compileMain("does-not-exist.kiln");
  EXPECT_FALSE(r.module);
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(diagCodeString(r.diags[0].code), "E0001");
  EXPECT_EQ(r.diags[0].loc.line, 0u);
  EXPECT_NE(r.diags[0].message.find("cannot read"), std::string::npos);
}

TEST_F(ImportsTest, SyntaxErrorsInAnImportStopBeforeLowering) {
  write("bad.kiln", "fn broken(x) { return x + ; }\n");
  write("main.kiln", "import \"bad.kiln\";\nkernel k(p: *f32) { store(p, broken(1.0)); }\n");
  auto r = compileMain("main.kiln");
  EXPECT_FALSE(r.module);
  ASSERT_FALSE(r.diags.empty());
  for (const auto &d : r.diags)
    EXPECT_EQ(fs::path(std::string(r.sources->name(d.loc.file))).filename(), "bad.kiln")
        << r.text();
}

} // namespace
