//===- JitGraphTest.cpp - Graphs compiled by the JIT, end to end ----------===//
//
// kiln_jit_compile_graph_* through the C++ API on the stand-in CUDA driver: the real
// frontend, pipeline and code generation build the graph bundle (its persistent kernel
// included), the disk cache keeps it, and kiln::Graph runs it in each mode, the driver
// recording what it was handed.
//
//===----------------------------------------------------------------------===//
#include "JitFixture.h"

#include <algorithm>
#include <fstream>
#include <sys/stat.h>

namespace kiln::jit::test {
namespace {

const std::string kGraphExample = KILN_SOURCE_DIR "/examples/graph.kiln";

ino_t inodeOf(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class JitGraph : public JitOnFakeCuda {
protected:
  std::vector<std::string> graphs() const { return filesEndingIn(cache.path(), ".kgraph"); }

  /// residual_stack of examples/graph.kiln, `layers` deep.
  CompileOptions layers(int n) { return CompileOptions{{{"LAYERS", n}}, {}, 0}; }

  struct Data {
    explicit Data(Runtime &rt) : x(rt.alloc<float>(4 * 200)), h(rt.alloc<float>(4 * 200)) {}
    Buffer x, h;
  };
};

TEST_F(JitGraph, CompilesAGraphThatRunsInEveryMode) {
  auto jit = makeJit();
  Graph g = jit->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  EXPECT_EQ(g.name(), "residual_stack");
  ASSERT_EQ(g.params().size(), 5u) << "x, h, rows, n, eps: the const parameters are compiled in";
  EXPECT_EQ(g.params()[2].name, "rows");
  EXPECT_TRUE(g.has_persistent()) << "a CUDA device gets the persistent kernel";
  EXPECT_EQ(graphs().size(), 1u) << "compiled whole by the call, and cached";

  Data d(*runtime);
  int before = fake.launchCount();
  g.launch(GraphMode::Launches, d.x, d.h, int32_t(4), int32_t(200), 1e-5f);
  EXPECT_EQ(fake.launchCount() - before, 4) << "two layers of two launches";
  unsigned grid[3], block[3], shared = 0;
  char function[64];
  ASSERT_TRUE(fake.lastLaunch(grid, block, &shared, function, sizeof function));
  EXPECT_EQ(grid[0], 2u) << "add_silu over (4 * 200 + 511) / 512 programs";
  EXPECT_EQ(g.last_run().tasks, 2u * (4 + 2));

  before = fake.launchCount();
  g.launch(GraphMode::Auto, d.x, d.h, int32_t(4), int32_t(200), 1e-5f);
  EXPECT_EQ(fake.launchCount() - before, 1) << "one persistent kernel for the whole graph";
  EXPECT_EQ(g.last_run().mode, GraphMode::Persistent);
  EXPECT_EQ(g.last_run().tasks, 12u);
  runtime->synchronize();
  g.check();
  EXPECT_TRUE(logged(KILN_JIT_WARNING).empty());
}

TEST_F(JitGraph, TheNextProcessLoadsTheGraphFromDisk) {
  {
    auto jit = makeJit();
    jit->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  }
  auto files = graphs();
  ASSERT_EQ(files.size(), 1u);
  const ino_t written = inodeOf(files[0]);
  messages.clear();

  auto jit = makeJit();
  Graph g = jit->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  EXPECT_EQ(graphs(), files);
  EXPECT_EQ(inodeOf(files[0]), written) << "a cache hit does not rewrite the entry";
  EXPECT_TRUE(messages.empty());
  Data d(*runtime);
  const int before = fake.launchCount();
  g.launch(GraphMode::Launches, d.x, d.h, int32_t(4), int32_t(200), 1e-5f);
  EXPECT_EQ(fake.launchCount() - before, 4) << "the cached graph runs as the compiled one";

  // Another const value, another graph; checked mode, another again.
  jit->compile_graph_file(kGraphExample, "residual_stack", layers(3));
  EXPECT_EQ(graphs().size(), 2u);
  Jit::Options checked;
  checked.checked = true;
  makeJit(checked)->compile_graph_file(kGraphExample, "residual_stack", layers(3));
  EXPECT_EQ(graphs().size(), 3u);
  EXPECT_TRUE(bundles().empty()) << "a graph's kernels live in its own entry";
}

TEST_F(JitGraph, ADamagedEntryIsNotedAndCompiledAgain) {
  makeJit()->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  auto files = graphs();
  ASSERT_EQ(files.size(), 1u);
  // A copy cut short: the container's checksums catch it.
  std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) / 2);
  messages.clear();
  Graph g = makeJit()->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  EXPECT_EQ(g.params().size(), 5u);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "the cache entry '" + files[0] + "' is damaged")) << notes[0];
  EXPECT_TRUE(contains(notes[0], "compiling it again")) << notes[0];

  // A whole graph bundle of another graph copied over the entry is damage too.
  const std::string other = "kernel k(x: *f32) { store(x, 1.0); }\ngraph other(x: *f32) { launch k[(1,)](x); }\n";
  makeJit()->compile_graph_string(other, "other");
  auto both = graphs();
  ASSERT_EQ(both.size(), 2u);
  const std::string &otherFile = both[0] == files[0] ? both[1] : both[0];
  std::filesystem::copy_file(otherFile, files[0], std::filesystem::copy_options::overwrite_existing);
  messages.clear();
  makeJit()->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "it holds graph 'other', not 'residual_stack'")) << notes[0];

  // So is the same graph compiled in checked mode: its key differs, its bundle would run.
  Jit::Options checkedJit;
  checkedJit.checked = true;
  const auto before = graphs();
  makeJit(checkedJit)->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  std::string checkedFile;
  for (const std::string &f : graphs())
    if (std::find(before.begin(), before.end(), f) == before.end())
      checkedFile = f;
  ASSERT_FALSE(checkedFile.empty());
  std::filesystem::copy_file(checkedFile, files[0], std::filesystem::copy_options::overwrite_existing);
  messages.clear();
  makeJit()->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "it holds kernels compiled in checked mode")) << notes[0];
}

TEST_F(JitGraph, ErrorsAreLocatedAndSayWhatToCallInstead) {
  auto jit = makeJit();
  const std::string source = "kernel k(x: *f32) { store(x, 1.0); }\n"
                             "graph g(x: *f32, n: i32) {\n"
                             "    launch k[(n,)](x);\n"
                             "}\n";
  try {
    jit->compile_graph_string(source, "k", {}, "entries.kiln");
    FAIL() << "compiled a kernel as a graph";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "entries.kiln:1:8: error[E0109]: 'k' is a kernel, not a graph")) << e.what();
    EXPECT_TRUE(contains(e.what(), "kiln_jit_compile_file")) << e.what();
  }
  try {
    jit->compile_string(source, "g", {}, "entries.kiln");
    FAIL() << "compiled a graph as a kernel";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "entries.kiln:2:7: error[E0109]: 'g' is a graph, not a kernel")) << e.what();
    EXPECT_TRUE(contains(e.what(), "kiln_jit_compile_graph_file")) << e.what();
  }
  try {
    jit->compile_graph_string(source, "h", {}, "entries.kiln");
    FAIL();
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "error[E0106]")) << e.what();
  }
  try {
    jit->compile_graph_string("kernel k(x: *f32) { store(x, 1.0); }\ngraph g(x: *f32) {\n    launch k[(1,)](x, y);\n}\n",
                              "g", {}, "broken.kiln");
    FAIL() << "compiled a graph with an error";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "broken.kiln:3:")) << "located" << e.what();
    EXPECT_TRUE(contains(e.what(), "    launch k[(1,)](x, y);")) << "with the source line" << e.what();
  }
  try {
    jit->compile_graph_file(kGraphExample, "residual_stack", CompileOptions{{}, {}, 8});
    FAIL() << "took a num_warps for a graph";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
    EXPECT_TRUE(contains(e.what(), "a graph takes none")) << e.what();
  }
  try {
    jit->compile_graph_file(kGraphExample, "residual_stack", CompileOptions{{{"LAYERS", 1.5}}, {}, 0});
    FAIL();
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "-D LAYERS=1.5 does not fit const LAYERS: i32")) << e.what();
  }
  EXPECT_TRUE(graphs().empty());
  // Through the C API: null arguments are refused, `out` cleared.
  kiln_graph *g = reinterpret_cast<kiln_graph *>(0x1);
  EXPECT_EQ(kiln_jit_compile_graph_file(jit->handle(), nullptr, "g", nullptr, &g), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_jit_compile_graph_string(jit->handle(), source.c_str(), nullptr, "g", nullptr, &g), KILN_SUCCESS);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(std::string(kiln_graph_name(g)), "g");
  kiln_graph_destroy(g);
}

TEST_F(JitGraph, AGraphOutlivesItsJit) {
  Graph g = makeJit()->compile_graph_file(kGraphExample, "residual_stack", layers(1));
  Data d(*runtime);
  const int before = fake.launchCount();
  g.launch(GraphMode::Persistent, d.x, d.h, int32_t(4), int32_t(200), 1e-5f);
  EXPECT_EQ(fake.launchCount() - before, 1);
}

TEST_F(JitGraph, WithoutADiskCacheNothingIsWritten) {
  Jit::Options none;
  none.cache_dir = "";
  Graph g = makeJit(none)->compile_graph_file(kGraphExample, "residual_stack", layers(2));
  EXPECT_EQ(g.name(), "residual_stack");
  EXPECT_TRUE(filesEndingIn(cache.path(), "").empty());
}

} // namespace
} // namespace kiln::jit::test
