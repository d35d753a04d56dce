//===- JitTest.cpp - Compiling, specializing and caching, end to end ------===//
//
// The JIT through its C++ API on the stand-in CUDA driver: real frontend, pipeline and
// code generation, bundles in a real cache directory, launches recorded by the fake.
//
//===----------------------------------------------------------------------===//
#include "JitFixture.h"

#include <set>
#include <sys/stat.h>
#include <sys/wait.h>

namespace kiln::jit::test {
namespace {

const std::string kSoftmax = KILN_SOURCE_DIR "/examples/softmax.kiln";

struct Rows {
  Rows(Runtime &rt, int rows, int cols) : x(rt.alloc<float>(size_t(rows) * cols)), y(rt.alloc<float>(size_t(rows) * cols)) {}
  Buffer x, y;
};

ino_t inodeOf(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST_F(JitOnFakeCuda, CompileErrorsAreTheCompilersDiagnostics) {
  auto jit = makeJit();
  try {
    jit->compile_string("kernel k(x: *f32) {\n    store(x, yy);\n}\n", "k", {}, "broken.kiln");
    FAIL() << "compiled a program with an error";
  } catch (const CompileError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_COMPILE);
    std::string text = e.what();
    EXPECT_TRUE(contains(text, "broken.kiln:2:14: error[E0200]: undefined name 'yy'")) << text;
    EXPECT_TRUE(contains(text, "    store(x, yy);")) << "with the source line" << text;
    EXPECT_TRUE(contains(text, "^")) << "and a caret" << text;
  }
  try {
    jit->compile_file(kSoftmax, "softmx");
    FAIL();
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "error[E0106]: no kernel named 'softmx'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "did you mean 'softmax'?")) << e.what();
  }
  try {
    jit->compile_file(cache.file("missing.kiln"), "k");
    FAIL();
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "error[E0001]: cannot read '" + cache.file("missing.kiln") + "'")) << e.what();
  }
  try {
    jit->compile_file(kSoftmax, "softmax", {{"BLOCK", 1.5}});
    FAIL();
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "-D BLOCK=1.5 does not fit const BLOCK: i32")) << e.what();
  }
  try {
    jit->compile_string("kernel k(x: *f32) { store(x, 1.0); }\ngraph g(x: *f32) { launch k[(1,)](x); }\n", "g", {},
                        "graph.kiln");
    FAIL() << "compiled a graph";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "graph.kiln:2:7: error[E0109]: 'g' is a graph")) << e.what();
  }
  EXPECT_TRUE(bundles().empty());
}

TEST_F(JitOnFakeCuda, CompilesLaunchesAndTheNextProcessLoadsFromDisk) {
  Rows data(*runtime, 4, 1024);
  {
    auto jit = makeJit();
    EXPECT_EQ(jit->cache_dir(), cache.path());
    JitKernel k = jit->compile_file(kSoftmax, "softmax", {{"BLOCK", 1024}});
    EXPECT_EQ(k.name(), "softmax");
    ASSERT_EQ(k.params().size(), 4u);
    EXPECT_EQ(k.params()[2].name, "n_cols");
    EXPECT_EQ(k.configs(), std::vector<std::string>{"{}"});
    EXPECT_TRUE(bundles().empty()) << "code is generated at the first launch, for its arguments";
    k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
    EXPECT_EQ(fake.launchCount(), 1);
  }
  unsigned grid[3], block[3], shared = 0;
  char function[64];
  ASSERT_TRUE(fake.lastLaunch(grid, block, &shared, function, sizeof function));
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(block[0], 128u) << "num_warps 4";
  EXPECT_EQ(fake.param(2), 1024u);
  auto files = bundles();
  ASSERT_EQ(files.size(), 1u);
  ino_t written = inodeOf(files[0]);

  // A new JIT (as in a new process) finds the code on disk: nothing is written again.
  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax", {{"BLOCK", 1024}});
  k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
  EXPECT_EQ(fake.launchCount(), 2);
  EXPECT_EQ(bundles(), files);
  EXPECT_EQ(inodeOf(files[0]), written) << "a cache hit does not rewrite the entry";
  EXPECT_TRUE(messages.empty());

  // Different const values are different code.
  JitKernel k512 = jit->compile_file(kSoftmax, "softmax", {{"BLOCK", 512}});
  k512.launch({4, 1, 1}, data.x, data.y, 512, 1024);
  EXPECT_EQ(bundles().size(), 2u);
}

TEST_F(JitOnFakeCuda, ALaunchGoesOnTheStreamItNames) {
  Rows data(*runtime, 4, 1024);
  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax", {{"BLOCK", 1024}});
  void *stream = fake.makeStream();
  k.launch_on(stream, {4, 1, 1}, data.x, data.y, 1024, 1024);
  EXPECT_EQ(fake.lastStream(), stream);
  k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
  EXPECT_NE(fake.lastStream(), stream) << "the stream was for that launch alone";
  EXPECT_THROW(k.launch_on(reinterpret_cast<void *>(0x1234), {4, 1, 1}, data.x, data.y, 1024, 1024), RuntimeError);
  EXPECT_EQ(fake.launchCount(), 2);
  fake.dropStream(stream);
}

TEST_F(JitOnFakeCuda, LaunchesAreSpecializedOnAlignmentAndMultiplesOf16) {
  Rows data(*runtime, 4, 1024);
  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1000);
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1024);
  k.launch({4, 1, 1}, data.x, data.y, 1024, 1024); // seen before: no new variant
  k.launch({1, 1, 1}, data.x.at(4), data.y, 1000, 1000);
  EXPECT_EQ(fake.launchCount(), 5);
  auto files = bundles();
  ASSERT_EQ(files.size(), 4u);
  // What each variant assumed, as the runtime checks it: (x, y, n_cols, row_stride).
  std::set<std::vector<uint32_t>> assumed;
  for (const std::string &f : files) {
    std::string error;
    std::optional<rt::Bundle> b = rt::readBundle(f, error);
    ASSERT_TRUE(b) << error;
    std::vector<uint32_t> d;
    for (const auto &p : b->params)
      d.push_back(p.divisibility);
    assumed.insert(d);
  }
  EXPECT_EQ(assumed, (std::set<std::vector<uint32_t>>{
                         {16, 16, 16, 16}, {16, 16, 1, 1}, {16, 16, 1, 16}, {1, 1, 1, 1}}));
}

TEST_F(JitOnFakeCuda, AReductionSplitIsCompiledInAndLaunchedWithItsSegments) {
  const int heads = 3, seq = 700, d = 64;
  Buffer q = runtime->alloc<float>(heads * d), k = runtime->alloc<float>(heads * seq * d),
         v = runtime->alloc<float>(heads * seq * d), o = runtime->alloc<float>(heads * d);
  auto jit = makeJit();
  CompileOptions options;
  options.reduction_split = 4;
  JitKernel split = jit->compile_file(KILN_SOURCE_DIR "/stdlib/decode_attention.kiln", "decode_attention", options);
  ASSERT_EQ(split.params().size(), 6u) << "the caller's parameters only";
  split.launch({heads, 1, 1}, q, k, v, o, seq, 0.125f);
  unsigned grid[3], block[3], shared = 0;
  char function[64];
  ASSERT_TRUE(fake.lastLaunch(grid, block, &shared, function, sizeof function));
  EXPECT_EQ(grid[0], 4u * heads);
  size_t size = 0;
  EXPECT_NE(fake.param(6, &size), 0u) << "the workspace follows the arguments";
  EXPECT_EQ(size, 8u);
  auto files = bundles();
  ASSERT_EQ(files.size(), 1u);
  std::string error;
  std::optional<rt::Bundle> b = rt::readBundle(files[0], error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->gridSplit, 4u);
  EXPECT_EQ(b->workspaceBytes, (4u + 4u * (4 + 4 + 64)) * 4u);

  // A new JIT takes it from disk: what the key promises is checked before the pipeline
  // has split anything, and the workspace is no parameter of the signature.
  ino_t written = inodeOf(files[0]);
  makeJit()
      ->compile_file(KILN_SOURCE_DIR "/stdlib/decode_attention.kiln", "decode_attention", options)
      .launch({heads, 1, 1}, q, k, v, o, seq, 0.125f);
  EXPECT_EQ(bundles(), files);
  EXPECT_EQ(inodeOf(files[0]), written) << "a cache hit does not rewrite the entry";
  EXPECT_TRUE(messages.empty());

  // The same kernel without the option is another entry, launched as asked.
  JitKernel whole = jit->compile_file(KILN_SOURCE_DIR "/stdlib/decode_attention.kiln", "decode_attention");
  whole.launch({heads, 1, 1}, q, k, v, o, seq, 0.125f);
  ASSERT_TRUE(fake.lastLaunch(grid, block, &shared, function, sizeof function));
  EXPECT_EQ(grid[0], unsigned(heads));
  EXPECT_EQ(bundles().size(), 2u);

  options.reduction_split = 5000;
  EXPECT_THROW(jit->compile_file(KILN_SOURCE_DIR "/stdlib/decode_attention.kiln", "decode_attention", options),
               RuntimeError);
}

TEST_F(JitOnFakeCuda, QuantizedFusionIsAskedForAndCompiledIn) {
  auto jit = makeJit();
  const char *file = KILN_SOURCE_DIR "/stdlib/fp8_matmul.kiln";
  CompileOptions options;
  options.fuse_quantized = true;
  JitKernel fused = jit->compile_file(file, "quant_matmul", options);
  JitKernel asWritten = jit->compile_file(file, "quant_matmul");
  Buffer x = runtime->alloc(64 * 128 * 2, KILN_DTYPE_BF16), w = runtime->alloc(128 * 64, KILN_DTYPE_F8E4M3),
         y = runtime->alloc(64 * 64 * 2, KILN_DTYPE_BF16);
  fused.launch({1, 1, 1}, x, w, y, 1.0f, 64, 64, 128);
  asWritten.launch({1, 1, 1}, x, w, y, 1.0f, 64, 64, 128);
  // Two entries, and only the fused one reads x once: its code has one loop over K.
  auto files = bundles();
  ASSERT_EQ(files.size(), 2u);
  std::vector<size_t> loads;
  for (const auto &f : files) {
    std::string error;
    std::optional<rt::Bundle> b = rt::readBundle(f, error);
    ASSERT_TRUE(b) << error;
    std::string ptx(b->sections.at(0).bytes.begin(), b->sections.at(0).bytes.end());
    size_t n = 0;
    for (size_t at = ptx.find("ld.global"); at != std::string::npos; at = ptx.find("ld.global", at + 1))
      ++n;
    loads.push_back(n);
  }
  EXPECT_NE(loads[0], loads[1]) << "the fused kernel loads x in one loop, the other in two";
}

TEST_F(JitOnFakeCuda, WithoutSpecializationOneVariantIsCompiledUpFront) {
  Rows data(*runtime, 4, 1024);
  Jit::Options options;
  options.specialize = false;
  auto jit = makeJit(options);
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  EXPECT_EQ(bundles().size(), 1u) << "compiled by compile_file";
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1000);
  k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
  EXPECT_EQ(bundles().size(), 1u);
  // The one variant assumes aligned pointers, as dslc's output does; the runtime says so.
  try {
    k.launch({1, 1, 1}, data.x.at(4), data.y, 1000, 1000);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_ARGUMENT_MISMATCH);
    EXPECT_TRUE(contains(e.what(), "aligned to 16")) << e.what();
  }
}

TEST_F(JitOnFakeCuda, CheckedModeCompilesCheckedKernelsAndKeysTheCacheOnIt) {
  Rows data(*runtime, 4, 1024);
  Jit::Options options;
  options.checked = true;
  auto jit = makeJit(options);
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1024);
  // After softmax's four parameters: the extents of x and y, in bytes, and the record.
  EXPECT_EQ(fake.param(4), 4u * 1024 * 4);
  EXPECT_EQ(fake.param(5), 4u * 1024 * 4);
  EXPECT_NE(fake.param(6), 0u);
  runtime->synchronize(); // the fake wrote no record
  const size_t checkedBundles = bundles().size();
  // The same kernel unchecked is another cache entry.
  auto plain = makeJit();
  plain->compile_file(kSoftmax, "softmax").launch({4, 1, 1}, data.x, data.y, 1000, 1024);
  EXPECT_GT(bundles().size(), checkedBundles);
}

TEST_F(JitOnFakeCuda, LibdeviceComesFromTheEnvironment) {
  // softmax calls exp, so its code links libdevice: a path that is not there shows which
  // one the JIT used.
  std::string missing = cache.file("no-such-libdevice.bc");
  rt::test::ScopedEnv libdevice("KILN_LIBDEVICE", missing.c_str());
  Jit::Options options;
  options.specialize = false;
  auto jit = makeJit(options);
  try {
    jit->compile_file(kSoftmax, "softmax");
    FAIL() << "linked a libdevice that does not exist";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "cannot read libdevice '" + missing + "'")) << e.what();
  }
}

TEST_F(JitOnFakeCuda, ABlockMaskIsOneArgumentAndItsPartsAreSpecializedOn) {
  // stdlib/sparse_attention.kiln: q, k, v, o, mask: block_mask<32, 32>, scale. The mask
  // goes in whole; the JIT checks it through the runtime and launches its five parts.
  const int seq = 96, heads = 2, d = 64;
  std::vector<uint8_t> kept(size_t(seq) * seq);
  for (int r = 0; r < seq; ++r)
    for (int c = 0; c <= r; ++c)
      kept[size_t(r) * seq + c] = 1;
  BlockMask mask = runtime->block_mask_from_dense(std::span<const uint8_t>(kept), seq, seq, 32, 32);
  Buffer q = runtime->alloc<float>(size_t(heads) * seq * d), k = runtime->alloc<float>(size_t(heads) * seq * d);
  Buffer v = runtime->alloc<float>(size_t(heads) * seq * d), o = runtime->alloc<float>(size_t(heads) * seq * d);
  auto jit = makeJit();
  JitKernel kernel = jit->compile_file(KILN_SOURCE_DIR "/stdlib/sparse_attention.kiln", "sparse_attention");
  ASSERT_EQ(kernel.params().size(), 10u) << "q, k, v, o, the mask's five parts, scale";
  kernel.launch({3, heads, 1}, q, k, v, o, mask, 0.125f);
  // The kernel is @autotune'd (warps and stages): its three configs are timed on this
  // first launch, keyed by the mask's digest, and the chosen one then launched.
  const int tuned = fake.launchCount();
  EXPECT_GT(tuned, 3);
  EXPECT_EQ(fake.param(4), 96u) << "mask.rows";
  EXPECT_EQ(fake.param(5), 96u) << "mask.cols";
  float scale = 0;
  ASSERT_EQ(fake.lastParam(9, &scale, sizeof scale), sizeof scale);
  EXPECT_EQ(scale, 0.125f) << "the argument after the mask reaches its parameter";
  // Each config's variant assumed what the parts are: 96 is a multiple of 16.
  auto files = bundles();
  ASSERT_EQ(files.size(), 3u) << "one variant per config";
  for (const std::string &file : files) {
    std::string error;
    std::optional<rt::Bundle> b = rt::readBundle(file, error);
    ASSERT_TRUE(b) << error;
    EXPECT_EQ(b->params[4].divisibility, 16u);
    EXPECT_EQ(b->params[5].divisibility, 16u);
    ASSERT_EQ(b->blockMasks.size(), 1u);
  }
  // The same mask again: the choice is kept, one launch.
  kernel.launch({3, heads, 1}, q, k, v, o, mask, 0.125f);
  EXPECT_EQ(fake.launchCount(), tuned + 1);

  // The same launch as five parts is the same variant.
  int64_t rows = 0;
  const kiln_buffer *parts[3] = {};
  ASSERT_EQ(kiln_block_mask_query(runtime->handle(), mask.handle(), &rows, nullptr, nullptr, nullptr, &parts[0],
                                  &parts[1], &parts[2]),
            KILN_SUCCESS);
  std::vector<kiln_arg> args = {detail::toArg(q), detail::toArg(k), detail::toArg(v), detail::toArg(o)};
  for (int64_t extent : {rows, rows}) {
    kiln_arg a{};
    a.kind = KILN_ARG_INT;
    a.value.i = extent;
    args.push_back(a);
  }
  for (const kiln_buffer *part : parts) {
    kiln_arg a{};
    a.kind = KILN_ARG_BUFFER;
    a.value.buffer.buffer = part;
    args.push_back(a);
  }
  args.push_back(detail::toArg(0.125f));
  // The same launch as five parts uses the same variants (and tunes them again: parts
  // carry no digest into the tuning key).
  kernel.launch_args(Grid{3, heads, 1}, args);
  const int launched = fake.launchCount();
  EXPECT_GT(launched, tuned + 1);
  EXPECT_EQ(bundles().size(), 3u);

  // A mask of other blocks, or one already destroyed, is refused before any code is made
  // or timed.
  BlockMask wrong = runtime->block_mask_from_dense(std::span<const uint8_t>(kept), seq, seq, 16, 32);
  try {
    kernel.launch({3, heads, 1}, q, k, v, o, wrong, 0.125f);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
    EXPECT_TRUE(contains(e.what(), "takes mask: block_mask<32, 32>, but the mask has 16 x 32 blocks")) << e.what();
  }
  kiln_block_mask *gone = mask.handle();
  mask = BlockMask();
  args = {detail::toArg(q), detail::toArg(k), detail::toArg(v), detail::toArg(o)};
  kiln_arg a{};
  a.kind = KILN_ARG_BLOCK_MASK;
  a.value.mask = gone;
  args.push_back(a);
  args.push_back(detail::toArg(0.125f));
  try {
    kernel.launch_args(Grid{3, heads, 1}, args);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
    EXPECT_TRUE(contains(e.what(), "destroyed or belongs to another runtime")) << e.what();
  }
  EXPECT_EQ(fake.launchCount(), launched) << "a refused mask launches nothing";
  EXPECT_EQ(bundles().size(), 3u) << "and compiles nothing";
}

TEST_F(JitOnFakeCuda, BadArgumentsAreRefusedBeforeAnythingIsCompiled) {
  Rows data(*runtime, 1, 16);
  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  try {
    k.launch({1, 1, 1}, data.x, data.y, 16);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_ARGUMENT_MISMATCH);
    EXPECT_EQ(std::string(e.what()), "kernel 'softmax' takes 4 arguments, got 3; its signature is "
                                     "softmax(x: *f32, y: *f32, n_cols: i32, row_stride: i32)");
  }
  try {
    k.launch({1, 1, 1}, data.x, 2.5f, 16, 16);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_TRUE(contains(e.what(), "argument 2 ('y: *f32')")) << e.what();
  }
  EXPECT_TRUE(bundles().empty());
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(JitOnFakeCuda, NullOptionArraysWithCountsAreRefused) {
  auto jit = makeJit();
  const char *source = "kernel k(x: *f32) {}";
  kiln_jit_kernel *k = nullptr;
  kiln_compile_options options{};
  options.num_defines = 2; // defines stays null
  EXPECT_EQ(kiln_jit_compile_string(jit->handle(), source, nullptr, "k", &options, &k), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "num_defines is 2 but defines is null");
  options = kiln_compile_options{};
  options.num_include_dirs = 1; // include_dirs stays null
  EXPECT_EQ(kiln_jit_compile_string(jit->handle(), source, nullptr, "k", &options, &k), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "num_include_dirs is 1 but include_dirs is null");
  EXPECT_EQ(k, nullptr);
}

TEST_F(JitOnFakeCuda, DamagedEntryIsNotedOnceAndRebuilt) {
  Rows data(*runtime, 1, 1024);
  makeJit()->compile_file(kSoftmax, "softmax").launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  auto files = bundles();
  ASSERT_EQ(files.size(), 1u);
  std::string whole = readFile(files[0]);
  writeFile(files[0], whole.substr(0, 100));

  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  k.launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  k.launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "is damaged (truncated")) << notes[0];
  EXPECT_TRUE(logged(KILN_JIT_WARNING).empty());
  EXPECT_EQ(readFile(files[0]), whole) << "rebuilt to the same bytes";
  EXPECT_EQ(fake.launchCount(), 3);
}

TEST_F(JitOnFakeCuda, AFifoInPlaceOfAnEntryIsCompiledAgainAndReplaced) {
  Rows data(*runtime, 1, 1024);
  makeJit()->compile_file(kSoftmax, "softmax").launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  auto files = bundles();
  ASSERT_EQ(files.size(), 1u);
  std::string whole = readFile(files[0]);
  std::filesystem::remove(files[0]);
  {
    FifoInPlace fifo(files[0]);
    auto jit = makeJit();
    JitKernel k = jit->compile_file(kSoftmax, "softmax");
    k.launch({1, 1, 1}, data.x, data.y, 1024, 1024);
    EXPECT_FALSE(fifo.fired()) << "the JIT blocked reading the FIFO";
  }
  EXPECT_EQ(fake.launchCount(), 2);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "cannot be read (not a regular file (a FIFO)); compiling it again")) << notes[0];
  EXPECT_TRUE(logged(KILN_JIT_WARNING).empty());
  EXPECT_TRUE(isRegularFile(files[0]));
  EXPECT_EQ(readFile(files[0]), whole) << "replaced by the rebuilt entry";
}

TEST_F(JitOnFakeCuda, AnEntryWithOtherAssumptionsIsRebuilt) {
  Rows data(*runtime, 4, 1024);
  {
    auto jit = makeJit();
    JitKernel k = jit->compile_file(kSoftmax, "softmax");
    k.launch({4, 1, 1}, data.x, data.y, 1024, 1024);
    k.launch({4, 1, 1}, data.x, data.y, 1000, 1000);
  }
  // Which variant is which: the one for 1024 assumes n_cols and row_stride are
  // multiples of 16; the one for 1000 assumes nothing of them.
  std::string assumesMore, assumesLess;
  for (const std::string &f : bundles()) {
    std::string error;
    std::optional<rt::Bundle> b = rt::readBundle(f, error);
    ASSERT_TRUE(b) << error;
    (b->params.at(2).divisibility == 16 ? assumesMore : assumesLess) = f;
  }
  ASSERT_FALSE(assumesMore.empty());
  ASSERT_FALSE(assumesLess.empty());
  std::string less = readFile(assumesLess);
  // The variant for multiples of 16 copied over the other: loaded, it would refuse
  // every launch with 1000.
  writeFile(assumesLess, readFile(assumesMore));

  auto jit = makeJit();
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1000);
  k.launch({4, 1, 1}, data.x, data.y, 1000, 1000);
  EXPECT_EQ(fake.launchCount(), 4);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "the cache entry '" + assumesLess + "' is damaged (it holds code compiled with "
                                 "other parameter assumptions (multiples of 16 16 16 16, not 16 16 1 1))"))
      << notes[0];
  EXPECT_EQ(readFile(assumesLess), less) << "rebuilt as compiled for its key";
}

TEST_F(JitOnFakeCuda, UnwritableOrDisabledCacheCompilesInMemory) {
  Rows data(*runtime, 1, 1024);
  writeFile(cache.file("plain-file"), "x");
  Jit::Options unwritable;
  unwritable.cache_dir = cache.file("plain-file") + "/kiln";
  auto jit = makeJit(unwritable);
  JitKernel k = jit->compile_file(kSoftmax, "softmax");
  k.launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  k.launch({1, 1, 1}, data.x, data.y, 1000, 1000);
  EXPECT_EQ(fake.launchCount(), 2);
  ASSERT_EQ(logged(KILN_JIT_WARNING).size(), 1u) << "warned once";
  EXPECT_TRUE(contains(logged(KILN_JIT_WARNING)[0], "cannot be written")) << logged(KILN_JIT_WARNING)[0];

  Jit::Options off;
  off.cache_dir = "";
  auto memoryOnly = makeJit(off);
  EXPECT_EQ(memoryOnly->cache_dir(), "");
  memoryOnly->compile_file(kSoftmax, "softmax").launch({1, 1, 1}, data.x, data.y, 1024, 1024);
  EXPECT_EQ(bundles().size(), 0u);
  EXPECT_EQ(logged(KILN_JIT_WARNING).size(), 1u) << "turning the cache off is no warning";
}

TEST_F(JitOnFakeCuda, CacheDirectoryComesFromTheEnvironment) {
  rt::test::ScopedEnv env("KILN_CACHE_DIR", cache.file("from-env").c_str());
  Jit jit(*runtime);
  EXPECT_EQ(jit.cache_dir(), cache.file("from-env"));
}

// Several processes compiling the same kernel into one empty cache at the same moment
// all succeed, and leave one whole entry and no temporary file.
TEST_F(JitOnFakeCuda, ConcurrentProcessesShareOneCache) {
  constexpr int kProcesses = 6;
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      (void)::read(gate[0], &c, 1); // wait until every process exists
      int status = 1;
      try {
        Runtime rt(Runtime::Options{Backend::Cuda, 0});
        Jit::Options options;
        options.cache_dir = cache.path();
        Jit jit(rt, options);
        JitKernel k = jit.compile_file(kSoftmax, "softmax", {{"BLOCK", 256}});
        Buffer x = rt.alloc<float>(256), y = rt.alloc<float>(256);
        k.launch({1, 1, 1}, x, y, 256, 256);
        status = 0;
      } catch (const std::exception &e) {
        std::fprintf(stderr, "process %d: %s\n", i, e.what());
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]); // opens the gate: every child's read returns
  for (pid_t pid : children) {
    int status = -1;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process failed";
  }
  auto files = filesEndingIn(cache.path(), "");
  ASSERT_EQ(files.size(), 1u) << "one entry, no temporary files";
  std::string error;
  EXPECT_TRUE(rt::readBundle(files[0], error)) << error;
}

} // namespace
} // namespace kiln::jit::test
