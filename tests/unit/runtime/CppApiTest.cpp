//===- CppApiTest.cpp - The C++ API (Runtime.h) over the fake CUDA driver --===//
//
// What a C++ user writes: typed buffers, variadic launches converted by argument type,
// and errors as kiln::RuntimeError naming the parameter.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/Runtime.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

class CppApi : public ::testing::Test {
protected:
  void SetUp() override {
    fake.reset();
    path = (std::filesystem::temp_directory_path() / ("kiln-cpp-api-" + std::to_string(::getpid()) + ".kbin")).string();
    std::string error;
    ASSERT_TRUE(writeBundleAtomic(path, vaddBundle(), error)) << error;
  }
  void TearDown() override { std::filesystem::remove(path); }

  ScopedEnv env{"KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH};
  FakeCuda fake;
  std::string path;
};


} // namespace

TEST_F(CppApi, TheArchitectureExampleWorks) {
  kiln::Runtime rt;
  EXPECT_EQ(rt.backend(), kiln::Backend::Cuda);
  EXPECT_EQ(rt.target(), "sm_90");
  auto k = rt.load_bundle(path);
  EXPECT_EQ(k.name(), "vadd");
  std::vector<kiln::Kernel::Param> params = k.params();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "x");
  EXPECT_EQ(params[0].dtype, KILN_DTYPE_F32);
  EXPECT_TRUE(params[0].pointer);
  EXPECT_FALSE(params[3].pointer);

  std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
  kiln::Buffer x = rt.upload(host);
  EXPECT_EQ(x.dtype(), KILN_DTYPE_F32);
  EXPECT_EQ(x.size_bytes(), 32u);
  EXPECT_EQ(x.download<float>(), host);
  kiln::Buffer y = rt.alloc<float>(8);
  kiln::Buffer out = rt.alloc(32); // untyped: accepted for any pointer parameter
  size_t rows = 3;
  k.launch({rows, 1, 1}, x, y.at(16), out, 8);
  EXPECT_EQ(fake.launchCount(), 1);
  EXPECT_EQ(fake.param(0), x.device_address());
  EXPECT_EQ(fake.param(1), y.device_address() + 16);
  EXPECT_EQ(fake.param(3), 8u);
  unsigned grid[3], block[3], shared;
  char fn[32];
  fake.lastLaunch(grid, block, &shared, fn, sizeof fn);
  EXPECT_EQ(grid[0], 3u);
  k.launch({2}, x, y, out, int64_t(7));
  EXPECT_EQ(fake.param(3), 7u);
}

// The caller's memory and stream: wrap() a part of a buffer, launch_on() a stream.
TEST_F(CppApi, WrappedMemoryAndTheCallersStream) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  kiln::Buffer x = rt.upload(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  kiln::Buffer half = rt.wrap<float>(x.device_address() + 16, 4);
  EXPECT_EQ(half.dtype(), KILN_DTYPE_F32);
  EXPECT_EQ(half.download<float>(), (std::vector<float>{5, 6, 7, 8}));
  void *stream = fake.makeStream();
  k.launch_on(stream, {1}, half, half, half, 4);
  EXPECT_EQ(fake.lastStream(), stream);
  EXPECT_EQ(fake.param(0), x.device_address() + 16);
  rt.set_stream(stream);
  k.launch({1}, x, x, x, 8);
  EXPECT_EQ(fake.lastStream(), stream);
  rt.set_stream(nullptr);
  k.launch({1}, x, x, x, 8);
  EXPECT_NE(fake.lastStream(), stream);
  kiln::RuntimeError e = thrown([&] { rt.wrap<float>(x.device_address() + 16, 8); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  fake.dropStream(stream);
}

TEST_F(CppApi, MismatchesThrowNamingTheParameter) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  kiln::Buffer x = rt.alloc<float>(8);
  kiln::Buffer ints = rt.alloc<int32_t>(8);

  kiln::RuntimeError e = thrown([&] { k.launch({1}, x, x, x); });
  EXPECT_EQ(e.status(), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(contains(e.what(), "kernel 'vadd' takes 4 arguments, got 3")) << e.what();

  e = thrown([&] { k.launch({1}, x, x, x, 3.5); });
  EXPECT_EQ(e.status(), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(contains(e.what(), "argument 4 ('n: i32'): the parameter is the integer i32, got a float (3.5)"));

  e = thrown([&] { k.launch({1}, x, x, x, 5'000'000'000LL); });
  EXPECT_TRUE(contains(e.what(), "5000000000 does not fit in i32")) << e.what();

  e = thrown([&] { k.launch({1}, x, ints, x, 1); });
  EXPECT_TRUE(contains(e.what(), "argument 2 ('y: *f32'): the buffer holds i32 elements")) << e.what();

  e = thrown([&] { k.launch({1}, x, 4, x, 1); });
  EXPECT_TRUE(contains(e.what(), "argument 2 ('y: *f32'): the parameter is *f32 and takes a device buffer, got an "
                                 "integer (4)"))
      << e.what();

  e = thrown([&] { k.launch({-1}, x, x, x, 1); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(e.what(), "grid size -1 is outside 0..4294967295"));
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(CppApi, ErrorsFromCreationAndLoading) {
  {
    ScopedEnv cuda("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
    kiln::RuntimeError e = thrown([] { kiln::Runtime rt(kiln::Runtime::Options{kiln::Backend::Cuda, 0}); });
    EXPECT_EQ(e.status(), KILN_ERROR_NO_DRIVER);
    EXPECT_TRUE(contains(e.what(), "no CUDA driver")) << e.what();
  }
  kiln::Runtime rt;
  kiln::RuntimeError e = thrown([&] { rt.load_bundle("/nonexistent/k.kbin"); });
  EXPECT_EQ(e.status(), KILN_ERROR_IO);
  std::vector<uint8_t> junk = {'K', 'I', 'L'};
  e = thrown([&] { rt.load_bundle_bytes(junk); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(e.what(), "bundle in memory: truncated")) << e.what();
}

TEST_F(CppApi, EventsAndMoves) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  kiln::Buffer x = rt.alloc<float>(4);
  kiln::Event a = rt.create_event(), b = rt.create_event();
  a.record();
  k.launch({1}, x, x, x, 4);
  k.launch({1}, x, x, x, 4);
  b.record();
  b.synchronize();
  EXPECT_FLOAT_EQ(kiln::Event::elapsed_ms(a, b), 0.5f);

  kiln::Buffer moved = std::move(x);
  EXPECT_EQ(x.handle(), nullptr);
  EXPECT_NE(moved.handle(), nullptr);
  kiln::Runtime rt2 = std::move(rt);
  rt2.synchronize();
  kiln::Kernel k2;
  k2 = std::move(k);
  k2.launch({1}, moved, moved, moved, 1);
  EXPECT_EQ(fake.launchCount(), 3);
}

TEST_F(CppApi, RecordedLaunchesReplayWithOneCall) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  kiln::Buffer x = rt.alloc<float>(4);
  kiln::Event a = rt.create_event(), b = rt.create_event();
  // Recorded launches do not run: no fake device time passes while recording.
  a.record();
  rt.begin_recording();
  k.launch({1}, x, x, x, 4);
  k.launch({2}, x, x, x, 4);
  k.launch({3}, x, x, x, 4);
  kiln::Recording recording = rt.end_recording();
  b.record();
  b.synchronize();
  EXPECT_FLOAT_EQ(kiln::Event::elapsed_ms(a, b), 0.0f);
  // Each replay runs the three launches (a quarter millisecond each on the stand-in).
  a.record();
  recording.replay();
  recording.replay();
  b.record();
  b.synchronize();
  EXPECT_FLOAT_EQ(kiln::Event::elapsed_ms(a, b), 1.5f);
  // Ending a recording that never began is the driver's error, passed on.
  EXPECT_NE(thrown([&] { rt.end_recording(); }).status(), KILN_SUCCESS);
  // The resident programs of a kernel: the stand-in's 2 per SM times 132 SMs.
  EXPECT_EQ(k.info().resident_programs(), 264u);
}

TEST_F(CppApi, ConstsAreReadWithTheValuesTheKernelWasCompiledWith) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  std::vector<kiln::KernelConst> consts = k.consts();
  ASSERT_EQ(consts.size(), 3u); // vaddBundle: BLOCK = 1024, SCALE = 0.5, CAUSAL = true
  EXPECT_EQ(consts[0].name, "BLOCK");
  EXPECT_EQ(std::get<int64_t>(consts[0].value), 1024);
  EXPECT_EQ(consts[1].name, "SCALE");
  EXPECT_EQ(std::get<double>(consts[1].value), 0.5);
  EXPECT_EQ(consts[2].name, "CAUSAL");
  EXPECT_EQ(std::get<bool>(consts[2].value), true);
  EXPECT_EQ(k.const_int("BLOCK"), 1024);
  EXPECT_EQ(k.info().const_int("BLOCK"), 1024);

  // The C ABI: by index, as the scalar kiln_arg of the same kind.
  ASSERT_EQ(kiln_kernel_num_consts(k.handle()), 3u);
  const char *name = nullptr;
  kiln_arg value{};
  ASSERT_EQ(kiln_kernel_const(k.handle(), 1, &name, &value), KILN_SUCCESS);
  EXPECT_STREQ(name, "SCALE");
  EXPECT_EQ(value.kind, KILN_ARG_FLOAT);
  EXPECT_EQ(value.value.f, 0.5);
  ASSERT_EQ(kiln_kernel_const(k.handle(), 2, nullptr, &value), KILN_SUCCESS);
  EXPECT_EQ(value.kind, KILN_ARG_BOOL);
  EXPECT_EQ(value.value.b, 1);
  EXPECT_EQ(kiln_kernel_const(k.handle(), 3, &name, &value), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kiln_kernel_const: null kernel or index out of range");
  EXPECT_EQ(kiln_kernel_num_consts(nullptr), 0u);
  int64_t v = 7;
  EXPECT_EQ(kiln_kernel_const_int(k.handle(), nullptr, &v), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_kernel_const_int(nullptr, "BLOCK", &v), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(v, 7) << "nothing is written on failure";
}

TEST_F(CppApi, ConstQueriesNameTheKernelAndTheConst) {
  kiln::Runtime rt;
  auto k = rt.load_bundle(path);
  kiln::RuntimeError e = thrown([&] { k.const_int("BLOK"); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "kernel 'vadd' has no const 'BLOK' (its consts: BLOCK, SCALE, CAUSAL)");
  e = thrown([&] { k.const_int("SCALE"); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "kernel 'vadd': const SCALE is a float, not an integer");
  e = thrown([&] { k.const_int("CAUSAL"); });
  EXPECT_STREQ(e.what(), "kernel 'vadd': const CAUSAL is a bool, not an integer");

  // A kernel without consts says so rather than listing nothing.
  Bundle plain = vaddBundle();
  plain.consts.clear();
  std::string error;
  std::vector<uint8_t> bytes = serializeBundle(plain, error);
  ASSERT_FALSE(bytes.empty()) << error;
  auto k2 = rt.load_bundle_bytes(bytes);
  EXPECT_TRUE(k2.consts().empty());
  e = thrown([&] { k2.const_int("BLOCK"); });
  EXPECT_STREQ(e.what(), "kernel 'vadd' has no const 'BLOCK' (it has no const parameters)");
}

TEST_F(CppApi, BlockMasksAreTypedLaunchArguments) {
  kiln::Runtime rt;
  std::string error;
  std::vector<uint8_t> bytes = serializeBundle(maskedBundle(), error);
  ASSERT_FALSE(bytes.empty()) << error;
  auto k = rt.load_bundle_bytes(bytes);
  EXPECT_EQ(k.params().size(), 7u); // the mask's five parameters are listed as such
  std::vector<kiln::KernelBlockMask> masks = k.block_masks();
  ASSERT_EQ(masks.size(), 1u);
  EXPECT_EQ(masks[0].name, "mask");
  EXPECT_EQ(masks[0].block_rows, 4);
  EXPECT_EQ(masks[0].block_cols, 8);
  EXPECT_EQ(masks[0].first_param, 2u);
  EXPECT_TRUE(rt.load_bundle(path).block_masks().empty());

  // 8 x 16 elements, the left half kept: two full blocks per block row, two empty.
  std::array<bool, 8 * 16> kept{};
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      kept[r * 16 + c] = true;
  kiln::BlockMask mask = rt.block_mask_from_dense(std::span<const bool>(kept), 8, 16, 4, 8);
  EXPECT_EQ(mask.rows(), 8);
  EXPECT_EQ(mask.cols(), 16);
  EXPECT_EQ(mask.block_rows(), 4);
  EXPECT_EQ(mask.block_cols(), 8);
  kiln::BlockMaskCounts counts = mask.counts();
  EXPECT_EQ(counts.full, 2);
  EXPECT_EQ(counts.partial, 0);
  EXPECT_EQ(counts.empty, 2);

  kiln::Buffer x = rt.alloc<float>(8 * 16), out = rt.alloc<float>(8);
  k.launch({2}, x, out, mask);
  EXPECT_EQ(fake.launchCount(), 1);
  EXPECT_EQ(fake.param(2), 8u);
  EXPECT_EQ(fake.param(3), 16u);
  // The same mask from BSR arrays: block column 0 of both block rows, kept whole.
  std::vector<int64_t> rowPtr = {0, 1, 2}, colIndices = {0, 0};
  kiln::BlockMask bsr = rt.block_mask_from_bsr(rowPtr, colIndices, std::nullopt, 8, 16, 4, 8);
  EXPECT_EQ(bsr.counts().full, 2);
  std::vector<uint8_t> data(2 * 4 * 8, 1);
  kiln::BlockMask withData = rt.block_mask_from_bsr(rowPtr, colIndices, data, 8, 16, 4, 8);
  EXPECT_EQ(withData.counts().full, 2);
  EXPECT_EQ(withData.digest(), mask.digest()) << "the same pattern, however it was built";
  EXPECT_EQ(mask.digest().size(), 16u);
  k.launch({2}, x, out, withData);
  EXPECT_EQ(fake.launchCount(), 2);

  // Move-only, like the other handles.
  kiln::BlockMask moved = std::move(mask);
  EXPECT_EQ(mask.handle(), nullptr);
  k.launch({2}, x, out, moved);
  kiln::RuntimeError e = thrown([&] { k.launch({2}, x, out, mask); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "kernel 'row_sum', argument 3 ('mask: block_mask<4, 8>'): the block mask is null");
  EXPECT_EQ(fake.launchCount(), 3);
}

TEST_F(CppApi, BlockMaskErrorsThrow) {
  kiln::Runtime rt;
  std::string error;
  std::vector<uint8_t> bytes = serializeBundle(maskedBundle(), error);
  auto k = rt.load_bundle_bytes(bytes);
  std::vector<uint8_t> kept(8 * 16, 1);
  kiln::BlockMask wide = rt.block_mask_from_dense(kept, 8, 16, 4, 16);
  kiln::Buffer x = rt.alloc<float>(8 * 16), out = rt.alloc<float>(8);
  kiln::RuntimeError e = thrown([&] { k.launch({2}, x, out, wide); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "kernel 'row_sum' takes mask: block_mask<4, 8>, but the mask has 4 x 16 blocks");

  e = thrown([&] { rt.block_mask_from_dense(kept, 8, 15, 4, 8); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "block_mask_from_dense: the dense mask has 128 elements; a 8 x 15 grid needs 120");
  e = thrown([&] { rt.block_mask_from_dense(kept, 8, 16, 4, 12); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "kiln_block_mask_from_dense: block size 12 is not a power of two from 1 to 256");

  std::vector<int64_t> rowPtr = {0, 1, 2}, colIndices = {0, 0};
  std::vector<uint8_t> data(4 * 8, 1); // one block's data for two blocks
  e = thrown([&] { rt.block_mask_from_bsr(rowPtr, colIndices, data, 8, 16, 4, 8); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(e.what(), "block_mask_from_bsr: block_data has 32 elements; 2 blocks of 4 x 8 need 64");
  colIndices = {1, 0};
  rowPtr = {0, 2, 2};
  e = thrown([&] { rt.block_mask_from_bsr(rowPtr, colIndices, std::nullopt, 8, 16, 4, 8); });
  EXPECT_TRUE(contains(e.what(), "col_indices[1] = 0 does not follow col_indices[0] = 1")) << e.what();
  EXPECT_EQ(fake.launchCount(), 0);
}
