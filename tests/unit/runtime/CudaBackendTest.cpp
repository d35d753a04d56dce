//===- CudaBackendTest.cpp - The CUDA backend against the fake driver -----===//
//
// The CUDA backend, driven through the C API, with KILN_CUDA_LIBRARY pointing at
// FakeCuda.cpp: what reaches the driver on a launch (grid, block size, shared memory,
// the packed parameters), how driver failures come back (error name, operation, kernel
// and source position), and that every driver object is released.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/kiln_runtime.h"
#include "support/BlockMask.h"

#include <cuda.h>

#include <cstring>
#include <filesystem>
#include <tuple>
#include <unistd.h>

using namespace kiln;
using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

kiln_arg bufArg(const kiln_buffer *b, uint64_t offset = 0) {
  kiln_arg a{};
  a.kind = KILN_ARG_BUFFER;
  a.value.buffer.buffer = b;
  a.value.buffer.offset = offset;
  return a;
}
kiln_arg intArg(int64_t v) {
  kiln_arg a{};
  a.kind = KILN_ARG_INT;
  a.value.i = v;
  return a;
}

class CudaBackend : public ::testing::Test {
protected:
  void SetUp() override {
    fake.reset();
    ASSERT_EQ(make(), KILN_SUCCESS) << kiln_last_error();
  }
  void TearDown() override {
    for (kiln_buffer *b : buffers)
      kiln_buffer_free(b);
    kiln_kernel_destroy(kernel);
    kiln_runtime_destroy(rt);
    // Everything the runtime created in the driver is gone again.
    EXPECT_EQ(fake.live("memory"), 0);
    EXPECT_EQ(fake.live("modules"), 0);
    EXPECT_EQ(fake.live("streams"), 0);
    EXPECT_EQ(fake.live("events"), 0);
    EXPECT_EQ(fake.live("contexts"), 0);
  }

  kiln_status make() {
    kiln_runtime_options o{KILN_BACKEND_CUDA, 0};
    return kiln_runtime_create(&o, &rt);
  }
  kiln_status load(const Bundle &b) {
    std::string error;
    std::vector<uint8_t> bytes = serializeBundle(b, error);
    EXPECT_EQ(error, "");
    kiln_kernel_destroy(kernel);
    kernel = nullptr;
    return kiln_kernel_load_memory(rt, bytes.data(), bytes.size(), &kernel);
  }
  kiln_buffer *alloc(size_t bytes, kiln_dtype t = KILN_DTYPE_F32) {
    kiln_buffer *b = nullptr;
    EXPECT_EQ(kiln_buffer_alloc(rt, bytes, t, &b), KILN_SUCCESS) << kiln_last_error();
    buffers.push_back(b);
    return b;
  }

  ScopedEnv env{"KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH};
  FakeCuda fake;
  kiln_runtime *rt = nullptr;
  kiln_kernel *kernel = nullptr;
  std::vector<kiln_buffer *> buffers;
};

} // namespace

TEST_F(CudaBackend, DescribesTheDevice) {
  EXPECT_EQ(kiln_runtime_backend(rt), KILN_BACKEND_CUDA);
  EXPECT_STREQ(kiln_runtime_device_name(rt), "Fake H200");
  EXPECT_STREQ(kiln_runtime_target(rt), "sm_90");
}

TEST_F(CudaBackend, LaunchPassesGridBlockSharedAndPackedArguments) {
  Bundle b = vaddBundle();
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  EXPECT_STREQ(kiln_kernel_name(kernel), "vadd");
  EXPECT_EQ(kiln_kernel_block_size(kernel), 128u);
  EXPECT_STREQ(kiln_kernel_jit_log(kernel), "ptxas info    : Used 8 registers (fake)");
  kiln_buffer *x = alloc(4096), *y = alloc(4096), *out = alloc(4096);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(y, 512), bufArg(out), intArg(1000)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 2, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();

  unsigned grid[3], block[3], shared;
  char fn[64];
  ASSERT_EQ(fake.lastLaunch(grid, block, &shared, fn, sizeof fn), 1);
  EXPECT_STREQ(fn, "kiln_vadd");
  EXPECT_EQ(grid[0], 8u);
  EXPECT_EQ(grid[1], 2u);
  EXPECT_EQ(grid[2], 1u);
  EXPECT_EQ(block[0], 128u); // num_warps * 32
  EXPECT_EQ(block[1], 1u);
  EXPECT_EQ(shared, 0u);
  size_t size = 0;
  EXPECT_EQ(fake.param(0, &size), kiln_buffer_device_address(x));
  EXPECT_EQ(size, 8u);
  EXPECT_EQ(fake.param(1), kiln_buffer_device_address(y) + 512);
  EXPECT_EQ(fake.param(2), kiln_buffer_device_address(out));
  EXPECT_EQ(fake.param(3, &size), 1000u);
  EXPECT_EQ(size, 4u);
}

// kiln_buffer_wrap: memory the caller owns (here, part of an allocation of the same
// driver) launches and copies like any buffer; freeing the handle leaves the memory,
// and the driver is asked whether the range is device memory at all.
TEST_F(CudaBackend, AWrappedBufferUsesTheCallersMemoryAndNeverFreesIt) {
  Bundle b = vaddBundle();
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *owner = alloc(4096);
  const uint64_t base = kiln_buffer_device_address(owner);
  kiln_buffer *view = nullptr;
  ASSERT_EQ(kiln_buffer_wrap(rt, base + 1024, 2048, KILN_DTYPE_F32, &view), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(kiln_buffer_device_address(view), base + 1024);
  EXPECT_EQ(kiln_buffer_size(view), 2048u);
  const int live = fake.live("memory");
  // Written through the view, read through the owner.
  const float one = 1.5f;
  ASSERT_EQ(kiln_buffer_write(view, 4, &one, 4), KILN_SUCCESS) << kiln_last_error();
  float got = 0;
  ASSERT_EQ(kiln_buffer_read(owner, 1028, &got, 4), KILN_SUCCESS);
  EXPECT_EQ(got, 1.5f);
  std::vector<kiln_arg> args = {bufArg(view), bufArg(view), bufArg(owner), intArg(512)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{4, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.param(0), base + 1024);
  // An offset past the view's end is refused like any buffer's.
  args[0] = bufArg(view, 4096);
  EXPECT_NE(kiln_launch(kernel, kiln_grid{4, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  kiln_buffer_free(view);
  EXPECT_EQ(fake.live("memory"), live); // the caller's memory stays
  ASSERT_EQ(kiln_buffer_read(owner, 1028, &got, 4), KILN_SUCCESS);

  kiln_buffer *bad = nullptr;
  float host[4] = {};
  EXPECT_EQ(kiln_buffer_wrap(rt, reinterpret_cast<uint64_t>(host), sizeof host, KILN_DTYPE_F32, &bad),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(kiln_last_error()).find("is not CUDA device memory"), std::string::npos) << kiln_last_error();
  EXPECT_EQ(kiln_buffer_wrap(rt, base + 4000, 200, KILN_DTYPE_F32, &bad), KILN_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(kiln_last_error()).find("run past the end of its allocation (4096 bytes"), std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(kiln_buffer_wrap(rt, base, 6, KILN_DTYPE_F32, &bad), KILN_ERROR_INVALID_VALUE); // 1.5 floats
  EXPECT_EQ(kiln_buffer_wrap(rt, 0, 16, KILN_DTYPE_F32, &bad), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_wrap(rt, base, 0, KILN_DTYPE_F32, &bad), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_wrap(nullptr, base, 16, KILN_DTYPE_F32, &bad), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(bad, nullptr);
}

// kiln_runtime_set_stream: launches and event records go on the caller's stream until
// it is set back; a handle that is no stream, a recording, and Kiln's recordings while a
// stream is set are refused.
TEST_F(CudaBackend, LaunchesGoOnTheCallersStreamWhileItIsSet) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *x = alloc(4096);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(1000)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  void *own = fake.lastStream();
  ASSERT_NE(own, nullptr);
  void *theirs = fake.makeStream();
  ASSERT_EQ(kiln_runtime_set_stream(rt, theirs), KILN_SUCCESS) << kiln_last_error();
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.lastStream(), theirs);
  EXPECT_EQ(kiln_runtime_begin_recording(rt), KILN_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(kiln_last_error()).find("set the stream back to NULL"), std::string::npos)
      << kiln_last_error();
  ASSERT_EQ(kiln_runtime_set_stream(rt, nullptr), KILN_SUCCESS) << kiln_last_error();
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.lastStream(), own);
  int notAStream = 0;
  EXPECT_EQ(kiln_runtime_set_stream(rt, &notAStream), KILN_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(kiln_last_error()).find("cuStreamIsCapturing"), std::string::npos) << kiln_last_error();
  ASSERT_EQ(kiln_runtime_begin_recording(rt), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(kiln_runtime_set_stream(rt, theirs), KILN_ERROR_INVALID_VALUE);
  kiln_recording *recording = nullptr;
  ASSERT_EQ(kiln_runtime_end_recording(rt, &recording), KILN_SUCCESS) << kiln_last_error();
  kiln_recording_destroy(recording);
  EXPECT_EQ(kiln_runtime_set_stream(nullptr, theirs), KILN_ERROR_INVALID_VALUE);
  // One launch on the caller's stream, the next on the runtime's again; a bad stream
  // or argument leaves the runtime's stream as it was.
  ASSERT_EQ(kiln_launch_on_stream(kernel, kiln_grid{8, 1, 1}, args.data(), args.size(), theirs), KILN_SUCCESS)
      << kiln_last_error();
  EXPECT_EQ(fake.lastStream(), theirs);
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.lastStream(), own);
  EXPECT_EQ(kiln_launch_on_stream(kernel, kiln_grid{8, 1, 1}, args.data(), args.size(), &notAStream),
            KILN_ERROR_INVALID_VALUE);
  std::vector<kiln_arg> bad = {bufArg(x), bufArg(x), bufArg(x)};
  EXPECT_EQ(kiln_launch_on_stream(kernel, kiln_grid{8, 1, 1}, bad.data(), bad.size(), theirs),
            KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_NE(std::string(kiln_last_error()).find("takes 4 arguments"), std::string::npos) << kiln_last_error();
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.lastStream(), own);
  fake.dropStream(theirs);
}

/// vadd's PTX with the workspace parameter a kernel split over programs takes last.
std::string splitVaddPtx() {
  std::string ptx = kVaddPtx;
  const std::string last = "\t.param .u32 kiln_vadd_param_3\n";
  ptx.replace(ptx.find(last), last.size(), "\t.param .u32 kiln_vadd_param_3,\n\t.param .u64 kiln_vadd_param_4\n");
  return ptx;
}

TEST_F(CudaBackend, ASplitKernelRunsItsSegmentsOverAWorkspaceItKeeps) {
  Bundle b = vaddBundle(splitVaddPtx());
  b.gridSplit = 4;
  b.workspaceBytes = 64;
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(kiln_kernel_num_params(kernel), 4u); // the caller's parameters only
  kiln_buffer *x = alloc(4096);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(1000)};
  const int buffersLive = fake.live("memory");
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 2, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  unsigned grid[3], block[3], shared;
  char fn[64];
  ASSERT_EQ(fake.lastLaunch(grid, block, &shared, fn, sizeof fn), 1);
  EXPECT_EQ(grid[0], 32u); // 4 segments for each of the 8 programs along x
  EXPECT_EQ(grid[1], 2u);
  EXPECT_EQ(grid[2], 1u);
  size_t size = 0;
  EXPECT_EQ(fake.param(3, &size), 1000u);
  const uint64_t workspace = fake.param(4, &size);
  EXPECT_EQ(size, 8u);
  EXPECT_NE(workspace, 0u);
  EXPECT_EQ(fake.live("memory"), buffersLive + 1);

  // A launch that needs no more reuses it (the kernel leaves it zero); a larger one
  // replaces it.
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{3, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.param(4), workspace);
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{8, 8, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.live("memory"), buffersLive + 1);
  EXPECT_EQ(fake.launchCount(), 3);
}

TEST_F(CudaBackend, ASplitKernelsContractIsCheckedBeforeTheDriver) {
  Bundle b = vaddBundle(splitVaddPtx());
  b.gridSplit = 4;
  b.workspaceBytes = 64;
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *x = alloc(4096);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(1000)};
  // The caller does not pass the workspace.
  std::vector<kiln_arg> five = args;
  five.push_back(bufArg(x));
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, five.data(), five.size()), KILN_ERROR_ARGUMENT_MISMATCH);
  // Program ids are i32: 4 segments of 600 million programs are too many.
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{600000000, 1, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "runs 4 programs for each program asked for")) << kiln_last_error();
  // A workspace that cannot be zeroed is not used.
  fake.failNext("cuMemsetD8", CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{2, 1, 1}, args.data(), args.size()), KILN_ERROR_DRIVER);
  EXPECT_TRUE(contains(kiln_last_error(), "cuMemsetD8")) << kiln_last_error();
  fake.failNext("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{2, 1, 1}, args.data(), args.size()), KILN_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(CudaBackend, LargeDynamicSharedMemoryIsOptedInto) {
  Bundle b = vaddBundle();
  b.sharedBytes = 100 * 1024; // the fake refuses launches above 48 KiB without the attribute
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(16)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  unsigned grid[3], block[3], shared;
  char fn[64];
  ASSERT_EQ(fake.lastLaunch(grid, block, &shared, fn, sizeof fn), 1);
  EXPECT_EQ(shared, 100u * 1024);

  b.sharedBytes = 300 * 1024;
  EXPECT_EQ(load(b), KILN_ERROR_MODULE_LOAD);
  EXPECT_EQ(std::string(kiln_last_error()),
            "kernel 'vadd' (vadd.kiln:3:1) needs 307200 bytes of shared memory per program; Fake H200 allows 232448");
}

TEST_F(CudaBackend, BadArgumentsNeverReachTheDriver) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), intArg(3), intArg(16)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(contains(kiln_last_error(), "argument 3 ('out: *f32'): the parameter is *f32 and takes a device buffer"))
      << kiln_last_error();
  kiln_buffer *ints = alloc(64, KILN_DTYPE_I32);
  args = {bufArg(x), bufArg(ints), bufArg(x), intArg(16)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(contains(kiln_last_error(), "the buffer holds i32 elements but the parameter is *f32"));
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(CudaBackend, BuffersOfOtherRuntimesOrFreedOnesAreRefused) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_runtime *other = nullptr;
  kiln_runtime_options o{KILN_BACKEND_CUDA, 0};
  ASSERT_EQ(kiln_runtime_create(&o, &other), KILN_SUCCESS);
  kiln_buffer *foreign = nullptr;
  ASSERT_EQ(kiln_buffer_alloc(other, 64, KILN_DTYPE_F32, &foreign), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(foreign), bufArg(x), intArg(16)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(
      contains(kiln_last_error(), "argument 2 ('y: *f32'): the buffer was freed or belongs to another runtime"));
  kiln_buffer_free(foreign);
  kiln_runtime_destroy(other);
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(CudaBackend, EmptyGridRunsNothingAndHugeGridIsRefused) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(0)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{0, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  EXPECT_EQ(fake.launchCount(), 0);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 70000, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "grid (1, 70000, 1) exceeds the device's limit (2147483647, 65535, 65535)"));
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST_F(CudaBackend, CopiesRoundTripAndStayInBounds) {
  kiln_buffer *b = alloc(16);
  const float in[4] = {1, 2, 3, 4};
  ASSERT_EQ(kiln_buffer_write(b, 0, in, sizeof in), KILN_SUCCESS);
  float out[2] = {0, 0};
  ASSERT_EQ(kiln_buffer_read(b, 8, out, sizeof out), KILN_SUCCESS);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 4.0f);
  EXPECT_EQ(kiln_buffer_read(b, 12, out, 8), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()), "kiln_buffer_read: 8 bytes at offset 12 exceeds the 16-byte buffer");
  EXPECT_EQ(kiln_buffer_write(b, SIZE_MAX, in, 1), KILN_ERROR_INVALID_VALUE);
  ASSERT_EQ(kiln_buffer_fill(b, 0), KILN_SUCCESS);
  ASSERT_EQ(kiln_buffer_read(b, 0, out, sizeof out), KILN_SUCCESS);
  EXPECT_EQ(out[0], 0.0f);
}

TEST_F(CudaBackend, DeviceToDeviceCopiesStayInBoundsAndInOneRuntime) {
  kiln_buffer *a = alloc(16), *b = alloc(16);
  const float in[4] = {1, 2, 3, 4};
  ASSERT_EQ(kiln_buffer_write(a, 0, in, sizeof in), KILN_SUCCESS);
  ASSERT_EQ(kiln_buffer_fill(b, 0), KILN_SUCCESS);
  ASSERT_EQ(kiln_buffer_copy(b, 4, a, 8, 8), KILN_SUCCESS) << kiln_last_error();
  float out[4] = {};
  ASSERT_EQ(kiln_buffer_read(b, 0, out, sizeof out), KILN_SUCCESS);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 3.0f);
  EXPECT_EQ(out[2], 4.0f);
  EXPECT_EQ(out[3], 0.0f);

  EXPECT_EQ(kiln_buffer_copy(b, 12, a, 0, 8), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()),
            "kiln_buffer_copy: 8 bytes at offset 12 exceeds the 16-byte destination buffer");
  EXPECT_EQ(kiln_buffer_copy(b, 0, a, SIZE_MAX, 1), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_copy(a, 0, a, 4, 8), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()), "kiln_buffer_copy: the source and destination ranges overlap");
  EXPECT_EQ(kiln_buffer_copy(a, 8, a, 0, 8), KILN_SUCCESS) << "adjacent ranges do not overlap";

  kiln_runtime *first = rt;
  ASSERT_EQ(make(), KILN_SUCCESS);
  kiln_runtime *other = std::exchange(rt, first); // a second runtime on the same device
  kiln_buffer *foreign = nullptr;
  ASSERT_EQ(kiln_buffer_alloc(other, 16, KILN_DTYPE_F32, &foreign), KILN_SUCCESS);
  EXPECT_EQ(kiln_buffer_copy(b, 0, foreign, 0, 4), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()), "kiln_buffer_copy: the buffers belong to different runtimes");
  uint64_t address = 0;
  size_t size = 0;
  kiln_dtype dtype = KILN_DTYPE_NONE;
  ASSERT_EQ(kiln_buffer_query(rt, a, &address, &size, &dtype), KILN_SUCCESS);
  EXPECT_EQ(address, kiln_buffer_device_address(a));
  EXPECT_EQ(size, 16u);
  EXPECT_EQ(dtype, KILN_DTYPE_F32);
  EXPECT_EQ(kiln_buffer_query(rt, foreign, &address, nullptr, nullptr), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()), "the buffer was freed or belongs to another runtime");
  kiln_buffer_free(foreign);
  kiln_runtime_destroy(other);

  fake.failNext("cuMemcpyDtoD", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(kiln_buffer_copy(b, 0, a, 0, 4), KILN_ERROR_LAUNCH);
  EXPECT_TRUE(contains(kiln_last_error(), "cuMemcpyDtoD: CUDA_ERROR_ILLEGAL_ADDRESS")) << kiln_last_error();
}

TEST_F(CudaBackend, EmptyAndTypedBuffers) {
  kiln_buffer *empty = alloc(0);
  EXPECT_EQ(kiln_buffer_device_address(empty), 0u);
  EXPECT_EQ(kiln_buffer_read(empty, 0, nullptr, 0), KILN_SUCCESS);
  EXPECT_EQ(fake.live("memory"), 0);
  kiln_buffer *b = nullptr;
  EXPECT_EQ(kiln_buffer_alloc(rt, 6, KILN_DTYPE_F32, &b), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "6 bytes is not a whole number of f32 elements"));
  EXPECT_EQ(kiln_buffer_alloc(rt, 8, static_cast<kiln_dtype>(42), &b), KILN_ERROR_INVALID_VALUE);
}

TEST_F(CudaBackend, JitErrorsComeBackWithTheSourceLine) {
  std::string ptx = kVaddPtx;
  ptx.insert(ptx.find("ret;"), "FAKE_JIT_ERROR\n");
  EXPECT_EQ(load(vaddBundle(ptx)), KILN_ERROR_MODULE_LOAD);
  std::string msg = kiln_last_error();
  EXPECT_TRUE(contains(msg, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (fake driver error) for kernel 'vadd' "
                            "(vadd.kiln:3:1) (sm_90 PTX on sm_90)"))
      << msg;
  EXPECT_TRUE(contains(msg, "\nJIT log:\nptxas application ptx input, line 13; error   : Unknown symbol "
                            "'FAKE_JIT_ERROR'  (at vadd.kiln:4:5)\n"))
      << msg;
}

TEST_F(CudaBackend, MissingEntryPointIsNamed) {
  Bundle b = vaddBundle();
  b.entry = "kiln_other";
  EXPECT_EQ(load(b), KILN_ERROR_MODULE_LOAD);
  EXPECT_EQ(std::string(kiln_last_error()),
            "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (fake driver error) for kernel 'vadd' (vadd.kiln:3:1): the PTX "
            "has no entry point 'kiln_other'");
}

TEST_F(CudaBackend, NoCodeForThisDevice) {
  fake.configure(1, 8, 0, 1024);
  kiln_runtime_destroy(rt);
  ASSERT_EQ(make(), KILN_SUCCESS);
  EXPECT_STREQ(kiln_runtime_target(rt), "sm_80");
  EXPECT_EQ(load(vaddBundle()), KILN_ERROR_NO_COMPATIBLE_CODE);
  EXPECT_EQ(std::string(kiln_last_error()),
            "kernel 'vadd' (vadd.kiln:3:1) has code for sm_90 only; the device is sm_80 (Fake H200)");
}

TEST_F(CudaBackend, TooManyThreadsForTheRegisterBudget) {
  fake.configure(1, 9, 0, 64);
  Bundle b = vaddBundle();
  EXPECT_EQ(load(b), KILN_ERROR_MODULE_LOAD);
  EXPECT_TRUE(contains(kiln_last_error(), "asks for 4 warps (128 threads) but sm_90 can run at most 64 threads"));
  b.numWarps = 2;
  EXPECT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
}

TEST_F(CudaBackend, KernelFaultsNameTheLastKernel) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(16)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  fake.failNext("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(kiln_runtime_synchronize(rt), KILN_ERROR_LAUNCH);
  EXPECT_EQ(std::string(kiln_last_error()),
            "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered); the last kernel "
            "launched was kernel 'vadd' (vadd.kiln:3:1)");
  fake.failNext("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{3, 1, 1}, args.data(), args.size()), KILN_ERROR_LAUNCH);
  EXPECT_TRUE(contains(kiln_last_error(), "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (fake driver error) for kernel "
                                          "'vadd' (vadd.kiln:3:1) with grid (3, 1, 1), 128 threads per program"));
}

TEST_F(CudaBackend, OutOfMemoryIsItsOwnStatus) {
  fake.failNext("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  kiln_buffer *b = nullptr;
  EXPECT_EQ(kiln_buffer_alloc(rt, 1 << 20, KILN_DTYPE_NONE, &b), KILN_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(std::string(kiln_last_error()),
            "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (fake driver error) for 1048576 bytes");
  EXPECT_EQ(b, nullptr);
}

TEST_F(CudaBackend, EventsMeasureDeviceTime) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(16)};
  kiln_event *start = nullptr, *stop = nullptr;
  ASSERT_EQ(kiln_event_create(rt, &start), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_create(rt, &stop), KILN_SUCCESS);
  float ms = -1;
  EXPECT_EQ(kiln_event_elapsed_ms(start, stop, &ms), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "both events must be recorded first"));
  ASSERT_EQ(kiln_event_record(start), KILN_SUCCESS);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_record(stop), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_synchronize(stop), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_elapsed_ms(start, stop, &ms), KILN_SUCCESS);
  EXPECT_FLOAT_EQ(ms, 1.0f); // the fake advances 0.25 ms per launch
  kiln_event_destroy(start);
  kiln_event_destroy(stop);
}

TEST_F(CudaBackend, LoadingFromFilesReportsIoAndFormatErrors) {
  kiln_kernel *k = nullptr;
  EXPECT_EQ(kiln_kernel_load_file(rt, "/nonexistent/k.kbin", &k), KILN_ERROR_IO);
  EXPECT_TRUE(contains(kiln_last_error(), "cannot read '/nonexistent/k.kbin'"));
  std::string path =
      (std::filesystem::temp_directory_path() / ("kiln-cuda-test-" + std::to_string(::getpid()))).string();
  std::string error;
  ASSERT_TRUE(writeBundleAtomic(path, vaddBundle(), error)) << error;
  EXPECT_EQ(kiln_kernel_load_file(rt, path.c_str(), &k), KILN_SUCCESS) << kiln_last_error();
  kiln_kernel_destroy(k);
  std::filesystem::resize_file(path, 100);
  EXPECT_EQ(kiln_kernel_load_file(rt, path.c_str(), &k), KILN_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(kiln_last_error(), "truncated")) << kiln_last_error();
  std::filesystem::remove(path);
}

TEST_F(CudaBackend, HandlesOutliveTheRuntimeHandle) {
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  kiln_runtime_destroy(rt); // buffers and kernels keep the device state alive
  rt = nullptr;
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(16)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.live("contexts"), 1);
}

TEST_F(CudaBackend, SharedRuntimeHandlesKeepOneDevice) {
  kiln_runtime *shared = nullptr;
  ASSERT_EQ(kiln_runtime_share(rt, &shared), KILN_SUCCESS);
  EXPECT_EQ(std::string(kiln_runtime_device_name(shared)), kiln_runtime_device_name(rt));
  kiln_runtime_destroy(rt);
  rt = shared; // freed by TearDown: the device state lives on through the shared handle
  kiln_buffer *x = alloc(16);
  EXPECT_NE(kiln_buffer_device_address(x), 0u);
  EXPECT_EQ(fake.live("contexts"), 1);
  EXPECT_EQ(kiln_runtime_share(nullptr, &shared), KILN_ERROR_INVALID_VALUE);
}

// ---- block masks -----------------------------------------------------------------------

namespace {

kiln_arg maskArg(const kiln_block_mask *m) {
  kiln_arg a{};
  a.kind = KILN_ARG_BLOCK_MASK;
  a.value.mask = m;
  return a;
}

// The fake driver's device memory is host memory of this process, so what a launch
// received can be read in place at the addresses it was given.
template <typename T> std::vector<T> deviceWords(uint64_t address, size_t count) {
  const T *p = reinterpret_cast<const T *>(static_cast<uintptr_t>(address));
  return std::vector<T>(p, p + count);
}

// A 10 x 20 grid in 4 x 8 blocks, kept on and below a diagonal: full, partial and empty
// blocks, and blocks cut by either edge of the grid.
std::vector<uint8_t> triangle() {
  std::vector<uint8_t> kept(10 * 20);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 20; ++c)
      kept[r * 20 + c] = c <= 2 * r;
  return kept;
}

} // namespace

TEST_F(CudaBackend, ABlockMaskIsOneLaunchArgumentForItsFiveParameters) {
  ASSERT_EQ(load(maskedBundle()), KILN_SUCCESS) << kiln_last_error();
  // The kernel lists the five parameters, and says which are one mask.
  EXPECT_EQ(kiln_kernel_num_params(kernel), 7u);
  const char *name = nullptr;
  ASSERT_EQ(kiln_kernel_param(kernel, 4, &name, nullptr, nullptr), KILN_SUCCESS);
  EXPECT_STREQ(name, "mask.row_start");
  ASSERT_EQ(kiln_kernel_num_block_masks(kernel), 1u);
  int64_t bm = 0, bn = 0;
  size_t first = 0;
  ASSERT_EQ(kiln_kernel_block_mask(kernel, 0, &name, &bm, &bn, &first), KILN_SUCCESS);
  EXPECT_STREQ(name, "mask");
  EXPECT_EQ(bm, 4);
  EXPECT_EQ(bn, 8);
  EXPECT_EQ(first, 2u);
  EXPECT_EQ(kiln_kernel_block_mask(kernel, 1, &name, &bm, &bn, &first), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_kernel_num_block_masks(nullptr), 0u);

  std::vector<uint8_t> kept = triangle();
  kiln_block_mask *mask = nullptr;
  ASSERT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 4, 8, &mask), KILN_SUCCESS) << kiln_last_error();
  std::string error;
  std::optional<BlockMaskLayout> host = blockMaskFromDense(kept, 10, 20, 4, 8, error);
  ASSERT_TRUE(host) << error;
  int64_t rows = 0, cols = 0, full = -1, partial = -1, empty = -1;
  ASSERT_EQ(kiln_block_mask_shape(mask, &rows, &cols, &bm, &bn), KILN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>({rows, cols, bm, bn}), std::vector<int64_t>({10, 20, 4, 8}));
  ASSERT_EQ(kiln_block_mask_counts(mask, &full, &partial, &empty), KILN_SUCCESS);
  BlockMaskStats stats = blockMaskStats(*host);
  EXPECT_EQ(full, stats.full);
  EXPECT_EQ(partial, stats.partial);
  EXPECT_EQ(empty, stats.empty);
  EXPECT_EQ(full + partial + empty, 3 * 3);
  EXPECT_GT(full, 0);
  EXPECT_GT(empty, 0);

  kiln_buffer *x = alloc(10 * 20 * 4), *out = alloc(10 * 4);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(out), maskArg(mask)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{3, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  size_t size = 0;
  EXPECT_EQ(fake.param(2, &size), 10u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(fake.param(3, &size), 20u);
  EXPECT_EQ(size, 4u);
  // The three arrays are on the device as support/BlockMask.h lays them out.
  EXPECT_EQ(deviceWords<int32_t>(fake.param(4), host->rowStart.size()), host->rowStart);
  EXPECT_EQ(deviceWords<int32_t>(fake.param(5), host->blocks.size()), host->blocks);
  EXPECT_EQ(deviceWords<uint32_t>(fake.param(6), host->bitmaps.size()), host->bitmaps);

  // The five parts one by one still work.
  kiln_buffer *rowStart = alloc(host->rowStart.size() * 4, KILN_DTYPE_I32);
  kiln_buffer *blocks = alloc(host->blocks.size() * 4, KILN_DTYPE_I32);
  kiln_buffer *bitmaps = alloc(host->bitmaps.size() * 4, KILN_DTYPE_U32);
  args = {bufArg(x), bufArg(out), intArg(10), intArg(20), bufArg(rowStart), bufArg(blocks), bufArg(bitmaps)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{3, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(fake.param(2), 10u);
  EXPECT_EQ(fake.param(4), kiln_buffer_device_address(rowStart));
  EXPECT_EQ(fake.param(6), kiln_buffer_device_address(bitmaps));
  EXPECT_EQ(fake.launchCount(), 2);

  // A mask keeps its runtime's device state alive, like a buffer.
  kiln_runtime_destroy(rt);
  rt = nullptr;
  args = {bufArg(x), bufArg(out), maskArg(mask)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  kiln_block_mask_destroy(mask);
  kiln_block_mask_destroy(nullptr);
}

TEST_F(CudaBackend, AMaskFromDeviceArraysIsCheckedAndCopied) {
  // The arrays as the passes of stdlib/block_mask_build.kiln leave them on the device.
  std::vector<uint8_t> kept = triangle();
  std::string error;
  std::optional<BlockMaskLayout> host = blockMaskFromDense(kept, 10, 20, 4, 8, error);
  ASSERT_TRUE(host) << error;
  // Buffers of the test's own, freed here (not by the fixture).
  auto upload = [&](const auto &words, kiln_dtype dtype) {
    kiln_buffer *b = nullptr;
    EXPECT_EQ(kiln_buffer_alloc(rt, std::max<size_t>(words.size(), 1) * 4, dtype, &b), KILN_SUCCESS);
    EXPECT_EQ(kiln_buffer_write(b, 0, words.data(), words.size() * 4), KILN_SUCCESS);
    return b;
  };
  kiln_buffer *rowStart = upload(host->rowStart, KILN_DTYPE_I32), *blocks = upload(host->blocks, KILN_DTYPE_I32);
  kiln_buffer *bitmaps = upload(host->bitmaps, KILN_DTYPE_U32);
  kiln_block_mask *mask = nullptr;
  ASSERT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 4, 8, rowStart, blocks, bitmaps, &mask), KILN_SUCCESS)
      << kiln_last_error();
  int64_t full = -1, partial = -1, empty = -1;
  ASSERT_EQ(kiln_block_mask_counts(mask, &full, &partial, &empty), KILN_SUCCESS);
  BlockMaskStats stats = blockMaskStats(*host);
  EXPECT_EQ(std::vector<int64_t>({full, partial, empty}), std::vector<int64_t>({stats.full, stats.partial, stats.empty}));
  EXPECT_EQ(std::string(kiln_block_mask_digest(mask)), blockMaskDigest(*host)) << "as if built on the host";

  // The query sees the mask's own copies, which outlive the caller's buffers.
  int64_t rows = 0, cols = 0, bm = 0, bn = 0;
  const kiln_buffer *parts[3] = {};
  ASSERT_EQ(kiln_block_mask_query(rt, mask, &rows, &cols, &bm, &bn, &parts[0], &parts[1], &parts[2]), KILN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>({rows, cols, bm, bn}), std::vector<int64_t>({10, 20, 4, 8}));
  EXPECT_NE(parts[0], rowStart);
  kiln_buffer_free(rowStart);
  kiln_buffer_free(blocks);
  kiln_buffer_free(bitmaps);
  EXPECT_EQ(deviceWords<int32_t>(kiln_buffer_device_address(parts[0]), host->rowStart.size()), host->rowStart);
  EXPECT_EQ(deviceWords<int32_t>(kiln_buffer_device_address(parts[1]), host->blocks.size()), host->blocks);
  EXPECT_EQ(deviceWords<uint32_t>(kiln_buffer_device_address(parts[2]), host->bitmaps.size()), host->bitmaps);
  kiln_block_mask_destroy(mask);
  EXPECT_EQ(kiln_block_mask_query(rt, mask, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "destroyed or belongs to another runtime")) << kiln_last_error();
  EXPECT_EQ(kiln_block_mask_query(rt, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            KILN_ERROR_INVALID_VALUE);

  // Arrays a kernel could not trust are refused, naming what is wrong, and no mask is made.
  auto refused = [&](std::vector<int32_t> rs, std::vector<int32_t> bl, size_t bitmapWords, const char *what) {
    kiln_buffer *a = upload(rs, KILN_DTYPE_I32), *b = upload(bl, KILN_DTYPE_I32);
    kiln_buffer *c = upload(std::vector<uint32_t>(bitmapWords), KILN_DTYPE_U32);
    kiln_block_mask *m = reinterpret_cast<kiln_block_mask *>(1);
    EXPECT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 4, 8, a, b, c, &m), KILN_ERROR_INVALID_VALUE) << what;
    EXPECT_EQ(m, nullptr);
    EXPECT_TRUE(contains(kiln_last_error(), what)) << kiln_last_error();
    kiln_buffer_free(a);
    kiln_buffer_free(b);
    kiln_buffer_free(c);
  };
  const size_t words = host->bitmaps.size();
  refused({1, 1, 2, 2}, {0, -1, 0, -1}, words, "row_start[0] = 1");
  refused({0, 2, 1, 2}, {0, -1, 1, -1}, words, "row_start[2] = 1 is less than row_start[1] = 2");
  refused({0, 1, 2, 3}, {0, -1, 0, -1}, words, "`blocks` holds 16 bytes; it needs 24");
  refused({0, 1, 2, 3}, {3, -1, 0, -1, 1, -1}, words, "column block 3, outside the 3 column blocks");
  refused({0, 2, 2, 2}, {1, -1, 0, -1}, words, "does not follow the previous entry's 1");
  refused({0, 1, 1, 1}, {0, 1}, 0, "bitmap slot 1, but the slots run from 0 to 0");
  refused({0, 1, 1, 1}, {0, -2}, words, "bitmap slot -2");
  refused({0, 1, 1, 99}, {0, -1}, words, "row_start ends at 99");
  refused({0, 1}, {0, -1}, words, "`row_start` holds 8 bytes; it needs 16");
  // Block (0, 2) covers columns 16..23 of 20: never full, and its bitmap keeps nothing
  // past column 19 (bit 4 of its first row).
  refused({0, 1, 1, 1}, {2, -1}, words, "marks block (0, 2) full, but it reaches past the grid's edge");
  {
    kiln_buffer *a = upload(std::vector<int32_t>{0, 1, 1, 1}, KILN_DTYPE_I32);
    kiln_buffer *b = upload(std::vector<int32_t>{2, 0}, KILN_DTYPE_I32);
    kiln_buffer *c = upload(std::vector<uint32_t>{1u << 4}, KILN_DTYPE_U32);
    kiln_block_mask *m = nullptr;
    EXPECT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 4, 8, a, b, c, &m), KILN_ERROR_INVALID_VALUE);
    EXPECT_TRUE(contains(kiln_last_error(), "the bitmap of block (0, 2) keeps element (0, 4), past the grid's edge"))
        << kiln_last_error();
    kiln_buffer *inside = upload(std::vector<uint32_t>{1u << 3}, KILN_DTYPE_U32);
    ASSERT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 4, 8, a, b, inside, &m), KILN_SUCCESS) << kiln_last_error();
    kiln_block_mask_destroy(m);
    for (kiln_buffer *x : {a, b, c, inside})
      kiln_buffer_free(x);
  }
  EXPECT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 3, 8, rowStart, blocks, bitmaps, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "`row_start`: the buffer was freed")) << kiln_last_error();
  kiln_buffer *b = alloc(64, KILN_DTYPE_I32);
  EXPECT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 3, 8, b, b, b, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "block sizes powers of two")) << kiln_last_error();
  EXPECT_EQ(kiln_block_mask_from_buffers(rt, 10, 20, 4, 8, b, nullptr, b, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "`blocks`: the buffer is null")) << kiln_last_error();
}

TEST_F(CudaBackend, BsrAndDenseBuildTheSameMask) {
  ASSERT_EQ(load(maskedBundle()), KILN_SUCCESS) << kiln_last_error();
  std::vector<uint8_t> kept = triangle();
  // The triangle's non-empty blocks in BSR form, each with its 4 x 8 data (cut at the
  // grid's edge: the data past it is ignored).
  std::vector<int64_t> rowPtr = {0}, colIndices;
  std::vector<uint8_t> data;
  for (int rb = 0; rb < 3; ++rb) {
    for (int cb = 0; cb < 3; ++cb) {
      std::vector<uint8_t> block(4 * 8, 0);
      bool any = false;
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 8; ++c)
          if (rb * 4 + r < 10 && cb * 8 + c < 20 && kept[(rb * 4 + r) * 20 + cb * 8 + c]) {
            block[r * 8 + c] = 1;
            any = true;
          }
      if (!any)
        continue;
      colIndices.push_back(cb);
      data.insert(data.end(), block.begin(), block.end());
    }
    rowPtr.push_back(int64_t(colIndices.size()));
  }
  kiln_block_mask *dense = nullptr, *bsr = nullptr, *whole = nullptr;
  ASSERT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 4, 8, &dense), KILN_SUCCESS);
  ASSERT_EQ(kiln_block_mask_from_bsr(rt, rowPtr.data(), rowPtr.size(), colIndices.data(), colIndices.size(),
                                     data.data(), 10, 20, 4, 8, &bsr),
            KILN_SUCCESS)
      << kiln_last_error();
  kiln_buffer *x = alloc(10 * 20 * 4), *out = alloc(10 * 4);
  auto launched = [&](const kiln_block_mask *m) {
    std::vector<kiln_arg> args = {bufArg(x), bufArg(out), maskArg(m)};
    EXPECT_EQ(kiln_launch(kernel, kiln_grid{3, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
    std::string error;
    std::optional<BlockMaskLayout> host = blockMaskFromDense(kept, 10, 20, 4, 8, error);
    return std::tuple(deviceWords<int32_t>(fake.param(4), host->rowStart.size()),
                      deviceWords<int32_t>(fake.param(5), host->blocks.size()),
                      deviceWords<uint32_t>(fake.param(6), host->bitmaps.size()));
  };
  EXPECT_EQ(launched(dense), launched(bsr));

  // Without data, every listed block is kept whole (cut at the edge).
  ASSERT_EQ(kiln_block_mask_from_bsr(rt, rowPtr.data(), rowPtr.size(), colIndices.data(), colIndices.size(), nullptr,
                                     10, 20, 4, 8, &whole),
            KILN_SUCCESS)
      << kiln_last_error();
  int64_t full = 0, partial = 0, empty = 0;
  ASSERT_EQ(kiln_block_mask_counts(whole, &full, &partial, &empty), KILN_SUCCESS);
  EXPECT_EQ(full + partial, int64_t(colIndices.size()));
  EXPECT_EQ(empty, 9 - int64_t(colIndices.size()));
  EXPECT_EQ(partial, 3); // the three listed blocks of the last block row, cut by its edge
  for (kiln_block_mask *m : {dense, bsr, whole})
    kiln_block_mask_destroy(m);
}

TEST_F(CudaBackend, BadMaskInputIsRefusedWithTheBuildersMessage) {
  std::vector<uint8_t> kept = triangle();
  kiln_block_mask *mask = nullptr;
  EXPECT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 3, 8, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kiln_block_mask_from_dense: block size 3 is not a power of two from 1 to 256");
  EXPECT_EQ(mask, nullptr);
  EXPECT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 0, 20, 4, 8, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "it needs at least one")) << kiln_last_error();
  EXPECT_EQ(kiln_block_mask_from_dense(rt, nullptr, 10, 20, 4, 8, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kiln_block_mask_from_dense: null `kept` array");
  EXPECT_EQ(kiln_block_mask_from_dense(nullptr, kept.data(), 10, 20, 4, 8, &mask), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 4, 8, nullptr), KILN_ERROR_INVALID_VALUE);

  std::vector<int64_t> rowPtr = {0, 1, 1, 2}, colIndices = {0, 3};
  EXPECT_EQ(kiln_block_mask_from_bsr(rt, rowPtr.data(), rowPtr.size(), colIndices.data(), colIndices.size(), nullptr,
                                     10, 20, 4, 8, &mask),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(),
               "kiln_block_mask_from_bsr: col_indices[1] = 3 is outside the 3 column blocks of the grid");
  EXPECT_EQ(kiln_block_mask_from_bsr(rt, rowPtr.data(), 3, colIndices.data(), colIndices.size(), nullptr, 10, 20, 4,
                                     8, &mask),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "row_ptr has 3 entries")) << kiln_last_error();
  EXPECT_EQ(kiln_block_mask_from_bsr(rt, nullptr, 4, colIndices.data(), colIndices.size(), nullptr, 10, 20, 4, 8,
                                     &mask),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kiln_block_mask_from_bsr: null `row_ptr` or `col_indices` array");
  EXPECT_EQ(mask, nullptr);

  int64_t rows = 0;
  EXPECT_EQ(kiln_block_mask_shape(nullptr, &rows, nullptr, nullptr, nullptr), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_block_mask_counts(nullptr, nullptr, nullptr, nullptr), KILN_ERROR_INVALID_VALUE);

  // A driver failure while uploading comes back as the driver's, and leaves nothing.
  fake.failNext("cuMemcpyHtoD", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 4, 8, &mask), KILN_ERROR_LAUNCH);
  EXPECT_TRUE(contains(kiln_last_error(), "cuMemcpyHtoD")) << kiln_last_error();
  EXPECT_EQ(mask, nullptr);
  EXPECT_EQ(fake.live("memory"), 0);
}

TEST_F(CudaBackend, MasksThatDoNotFitTheParameterAreRefused) {
  ASSERT_EQ(load(maskedBundle()), KILN_SUCCESS) << kiln_last_error();
  std::vector<uint8_t> kept = triangle();
  kiln_block_mask *square = nullptr, *foreign = nullptr, *gone = nullptr;
  ASSERT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 8, 8, &square), KILN_SUCCESS);
  kiln_buffer *x = alloc(10 * 20 * 4), *out = alloc(10 * 4);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(out), maskArg(square)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kernel 'row_sum' takes mask: block_mask<4, 8>, but the mask has 8 x 8 blocks");

  args[2] = maskArg(nullptr);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kernel 'row_sum', argument 3 ('mask: block_mask<4, 8>'): the block mask is null");

  kiln_runtime *first = rt;
  ASSERT_EQ(make(), KILN_SUCCESS);
  kiln_runtime *other = std::exchange(rt, first); // a second runtime on the same device
  ASSERT_EQ(kiln_block_mask_from_dense(other, kept.data(), 10, 20, 4, 8, &foreign), KILN_SUCCESS);
  args[2] = maskArg(foreign);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kernel 'row_sum', argument 3 ('mask: block_mask<4, 8>'): the block mask was "
                                  "destroyed or belongs to another runtime");
  kiln_block_mask_destroy(foreign);
  kiln_runtime_destroy(other);

  ASSERT_EQ(kiln_block_mask_from_dense(rt, kept.data(), 10, 20, 4, 8, &gone), KILN_SUCCESS);
  kiln_block_mask_destroy(gone);
  args[2] = maskArg(gone);
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "the block mask was destroyed")) << kiln_last_error();

  // A mask where the kernel takes something else is an ordinary mismatch.
  ASSERT_EQ(load(vaddBundle()), KILN_SUCCESS);
  args = {bufArg(x), bufArg(x), bufArg(x), maskArg(square)};
  EXPECT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_STREQ(kiln_last_error(), "kernel 'vadd', argument 4 ('n: i32'): the parameter is the scalar i32, got a "
                                  "block mask");
  kiln_block_mask_destroy(square);
  EXPECT_EQ(fake.launchCount(), 0);
}

TEST(CudaBackendCreation, DriverAndDeviceFailures) {
  ScopedEnv env("KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH);
  FakeCuda fake;
  fake.reset();
  kiln_runtime_options o{KILN_BACKEND_CUDA, 0};
  kiln_runtime *rt = nullptr;

  fake.failNext("cuInit", CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_EQ(std::string(kiln_last_error()),
            "no usable CUDA driver: cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (fake driver error)");

  fake.failNext("cuInit", CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(kiln_last_error(), "no CUDA device: the driver (" KILN_FAKE_CUDA_PATH ") found no GPU"));

  fake.configure(0, 9, 0, 1024);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()), "no CUDA device: the driver reports 0 devices");

  fake.configure(2, 9, 0, 1024);
  o.device_index = 2;
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()), "no CUDA device 2: the driver reports 2 devices");
  EXPECT_EQ(rt, nullptr);

  // A failure while setting up releases what was already taken.
  o.device_index = 1;
  fake.failNext("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake.live("contexts"), 0);

  // Auto picks CUDA when it works.
  ASSERT_EQ(kiln_runtime_create(nullptr, &rt), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(kiln_runtime_backend(rt), KILN_BACKEND_CUDA);
  kiln_runtime_destroy(rt);
  EXPECT_EQ(fake.live("contexts"), 0);
}
