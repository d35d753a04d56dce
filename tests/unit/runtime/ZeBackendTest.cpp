//===- ZeBackendTest.cpp - The Level Zero backend against a fake loader ---===//
//
// No Intel GPU is available here, so these tests — with KILN_ZE_LIBRARY pointing at
// FakeLevelZero.cpp — are the only run of the backend's success paths: what reaches
// the loader on a launch, build-log reporting, copies, timestamps, clean release.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/kiln_runtime.h"

#include <level_zero/ze_api.h>

#include <cstring>

using namespace kiln;
using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// A SPIR-V module whose only content is one OpEntryPoint per name.
std::vector<uint8_t> spirvWithEntries(std::initializer_list<std::string> names) {
  std::vector<uint32_t> words = {0x07230203u, 0x00010400u, 0u, 16u, 0u};
  uint32_t id = 1;
  for (const std::string &name : names) {
    std::vector<uint32_t> text((name.size() + 4) / 4, 0);
    std::memcpy(text.data(), name.data(), name.size());
    words.push_back(uint32_t(3 + text.size()) << 16 | 15u); // OpEntryPoint
    words.push_back(6);                                     // Kernel execution model
    words.push_back(id++);
    words.insert(words.end(), text.begin(), text.end());
  }
  std::vector<uint8_t> bytes(words.size() * 4);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

Bundle spirvBundle(std::initializer_list<std::string> entries = {"kiln_vadd"}) {
  Bundle b = vaddBundle();
  b.target = Target::SPIRV64;
  b.sections = {CodeSection{SectionKind::SPIRV, Target::SPIRV64, spirvWithEntries(entries)}};
  return b;
}

kiln_arg bufArg(const kiln_buffer *b) {
  kiln_arg a{};
  a.kind = KILN_ARG_BUFFER;
  a.value.buffer.buffer = b;
  return a;
}
kiln_arg intArg(int64_t v) {
  kiln_arg a{};
  a.kind = KILN_ARG_INT;
  a.value.i = v;
  return a;
}

struct FakeZe {
  void (*reset)() = fakeSymbol<void (*)()>(KILN_FAKE_ZE_PATH, "fake_ze_reset");
  void (*configure)(int, int, int) = fakeSymbol<void (*)(int, int, int)>(KILN_FAKE_ZE_PATH, "fake_ze_configure");
  void (*failNext)(const char *, int) = fakeSymbol<void (*)(const char *, int)>(KILN_FAKE_ZE_PATH, "fake_ze_fail_next");
  int (*launchCount)() = fakeSymbol<int (*)()>(KILN_FAKE_ZE_PATH, "fake_ze_launch_count");
  int (*lastLaunch)(uint32_t *, uint32_t *) = fakeSymbol<int (*)(uint32_t *, uint32_t *)>(KILN_FAKE_ZE_PATH,
                                                                                          "fake_ze_last_launch");
  size_t (*lastArg)(uint32_t, void *, size_t,
                    int *) = fakeSymbol<size_t (*)(uint32_t, void *, size_t, int *)>(KILN_FAKE_ZE_PATH,
                                                                                     "fake_ze_last_arg");
  int (*live)(const char *) = fakeSymbol<int (*)(const char *)>(KILN_FAKE_ZE_PATH, "fake_ze_live");
};

class ZeBackend : public ::testing::Test {
protected:
  void SetUp() override {
    fake.reset();
    kiln_runtime_options o{KILN_BACKEND_LEVEL_ZERO, 0};
    ASSERT_EQ(kiln_runtime_create(&o, &rt), KILN_SUCCESS) << kiln_last_error();
  }
  void TearDown() override {
    for (kiln_buffer *b : buffers)
      kiln_buffer_free(b);
    kiln_kernel_destroy(kernel);
    kiln_runtime_destroy(rt);
    for (const char *what : {"memory", "contexts", "lists", "modules", "logs", "kernels"})
      EXPECT_EQ(fake.live(what), 0) << what;
  }
  kiln_status load(const Bundle &b) {
    std::string error;
    std::vector<uint8_t> bytes = serializeBundle(b, error);
    EXPECT_EQ(error, "");
    kiln_kernel_destroy(kernel);
    kernel = nullptr;
    return kiln_kernel_load_memory(rt, bytes.data(), bytes.size(), &kernel);
  }
  kiln_buffer *alloc(size_t bytes) {
    kiln_buffer *b = nullptr;
    EXPECT_EQ(kiln_buffer_alloc(rt, bytes, KILN_DTYPE_F32, &b), KILN_SUCCESS) << kiln_last_error();
    buffers.push_back(b);
    return b;
  }

  ScopedEnv env{"KILN_ZE_LIBRARY", KILN_FAKE_ZE_PATH};
  FakeZe fake;
  kiln_runtime *rt = nullptr;
  kiln_kernel *kernel = nullptr;
  std::vector<kiln_buffer *> buffers;
};

} // namespace

TEST_F(ZeBackend, PicksTheFirstGpuAndReportsSpirv) {
  EXPECT_EQ(kiln_runtime_backend(rt), KILN_BACKEND_LEVEL_ZERO);
  EXPECT_STREQ(kiln_runtime_device_name(rt), "Fake Arc 1"); // device 0 of the driver is a CPU
  EXPECT_STREQ(kiln_runtime_target(rt), "spirv64");
}

TEST_F(ZeBackend, LaunchSetsGroupSizeCountAndArguments) {
  ASSERT_EQ(load(spirvBundle()), KILN_SUCCESS) << kiln_last_error();
  EXPECT_STREQ(kiln_kernel_jit_log(kernel), "fake compiler: built 1 kernel(s)");
  kiln_buffer *x = alloc(64), *y = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(y), bufArg(x), intArg(-7)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{5, 3, 2}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  uint32_t size[3], count[3];
  ASSERT_EQ(fake.lastLaunch(size, count), 1);
  EXPECT_EQ(size[0], 128u); // num_warps * 32 work-items
  EXPECT_EQ(size[1], 1u);
  EXPECT_EQ(count[0], 5u);
  EXPECT_EQ(count[1], 3u);
  EXPECT_EQ(count[2], 2u);
  uint64_t v = 0;
  int isNull = -1;
  EXPECT_EQ(fake.lastArg(0, &v, 8, &isNull), 8u);
  EXPECT_EQ(v, kiln_buffer_device_address(x));
  EXPECT_EQ(isNull, 0);
  EXPECT_EQ(fake.lastArg(1, &v, 8, &isNull), 8u);
  EXPECT_EQ(v, kiln_buffer_device_address(y));
  int32_t n = 0;
  EXPECT_EQ(fake.lastArg(3, &n, 4, &isNull), 4u);
  EXPECT_EQ(n, -7);
  EXPECT_EQ(fake.lastArg(4, &v, 8, &isNull), 0u); // no local-memory argument without shared memory
}

TEST_F(ZeBackend, ASplitKernelGetsItsSegmentsAndAWorkspaceBeforeTheLocalArgument) {
  Bundle b = spirvBundle();
  b.gridSplit = 3;
  b.workspaceBytes = 16;
  b.sharedBytes = 256;
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(5)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{5, 2, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  uint32_t size[3], count[3];
  ASSERT_EQ(fake.lastLaunch(size, count), 1);
  EXPECT_EQ(count[0], 15u);
  EXPECT_EQ(count[1], 2u);
  uint64_t v = 0;
  int isNull = -1;
  EXPECT_EQ(fake.lastArg(4, &v, 8, &isNull), 8u); // the workspace
  EXPECT_NE(v, 0u);
  EXPECT_EQ(isNull, 0);
  EXPECT_EQ(fake.lastArg(5, &v, 8, &isNull), 256u); // then the local memory
  EXPECT_EQ(isNull, 1);
  // A workspace that cannot be zeroed is not used, and nothing runs.
  kiln_kernel_destroy(kernel);
  kernel = nullptr;
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  fake.failNext("zeCommandListAppendMemoryFill", ZE_RESULT_ERROR_UNKNOWN);
  EXPECT_NE(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  EXPECT_TRUE(contains(kiln_last_error(), "zeCommandListAppendMemoryFill")) << kiln_last_error();
  EXPECT_EQ(fake.launchCount(), 1);
}

TEST_F(ZeBackend, SharedMemoryIsATrailingLocalArgument) {
  Bundle b = spirvBundle();
  b.sharedBytes = 4096;
  ASSERT_EQ(load(b), KILN_SUCCESS) << kiln_last_error();
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(1)};
  ASSERT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS) << kiln_last_error();
  uint64_t v = 0;
  int isNull = 0;
  EXPECT_EQ(fake.lastArg(4, &v, 8, &isNull), 4096u);
  EXPECT_EQ(isNull, 1);
  b.sharedBytes = 128 * 1024;
  EXPECT_EQ(load(b), KILN_ERROR_MODULE_LOAD);
  EXPECT_TRUE(contains(kiln_last_error(), "needs 131072 bytes of local memory; Fake Arc 1 allows 65536"));
}

TEST_F(ZeBackend, BuildFailuresCarryTheBuildLog) {
  EXPECT_EQ(load(spirvBundle({"fake_build_error"})), KILN_ERROR_MODULE_LOAD);
  EXPECT_EQ(std::string(kiln_last_error()),
            "zeModuleCreate: ZE_RESULT_ERROR_MODULE_BUILD_FAILURE for kernel 'vadd' (vadd.kiln:3:1)\nbuild log:\n"
            "error: fake compiler: undefined function 'fake_build_error'");
  EXPECT_EQ(load(spirvBundle({"other"})), KILN_ERROR_MODULE_LOAD);
  EXPECT_EQ(std::string(kiln_last_error()),
            "zeKernelCreate: ZE_RESULT_ERROR_INVALID_KERNEL_NAME for kernel 'vadd' (vadd.kiln:3:1): the SPIR-V has no "
            "entry point 'kiln_vadd'");
}

TEST_F(ZeBackend, PtxOnlyBundlesHaveNoCodeHere) {
  EXPECT_EQ(load(vaddBundle()), KILN_ERROR_NO_COMPATIBLE_CODE);
  EXPECT_TRUE(contains(kiln_last_error(), "has code for sm_90 only; Level Zero needs spirv64 (Fake Arc 1)"));
}

TEST_F(ZeBackend, CopiesAndFill) {
  kiln_buffer *b = alloc(16);
  const int32_t in[4] = {10, 20, 30, 40};
  ASSERT_EQ(kiln_buffer_write(b, 0, in, sizeof in), KILN_SUCCESS) << kiln_last_error();
  int32_t out[2] = {};
  ASSERT_EQ(kiln_buffer_read(b, 4, out, sizeof out), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(out[0], 20);
  EXPECT_EQ(out[1], 30);
  ASSERT_EQ(kiln_buffer_fill(b, 0x01), KILN_SUCCESS) << kiln_last_error();
  ASSERT_EQ(kiln_buffer_read(b, 0, out, 4), KILN_SUCCESS);
  EXPECT_EQ(out[0], 0x01010101);
  kiln_buffer *c = alloc(16);
  ASSERT_EQ(kiln_buffer_write(c, 0, in, sizeof in), KILN_SUCCESS);
  ASSERT_EQ(kiln_buffer_copy(b, 8, c, 0, 8), KILN_SUCCESS) << kiln_last_error();
  ASSERT_EQ(kiln_buffer_read(b, 4, out, sizeof out), KILN_SUCCESS);
  EXPECT_EQ(out[0], 0x01010101);
  EXPECT_EQ(out[1], 10);
  fake.failNext("zeCommandListAppendMemoryCopy", ZE_RESULT_ERROR_DEVICE_LOST);
  EXPECT_EQ(kiln_buffer_read(b, 0, out, 4), KILN_ERROR_LAUNCH);
  EXPECT_EQ(std::string(kiln_last_error()), "zeCommandListAppendMemoryCopy: ZE_RESULT_ERROR_DEVICE_LOST");
}

// kiln_buffer_wrap on Level Zero: the context's own allocation, checked with
// zeMemGetAddressRange, copied through and left allocated when the handle goes.
TEST_F(ZeBackend, AWrappedBufferUsesTheCallersMemory) {
  kiln_buffer *owner = alloc(64);
  const uint64_t base = kiln_buffer_device_address(owner);
  kiln_buffer *view = nullptr;
  ASSERT_EQ(kiln_buffer_wrap(rt, base + 16, 32, KILN_DTYPE_I32, &view), KILN_SUCCESS) << kiln_last_error();
  const int32_t in = 77;
  ASSERT_EQ(kiln_buffer_write(view, 0, &in, 4), KILN_SUCCESS) << kiln_last_error();
  int32_t out = 0;
  ASSERT_EQ(kiln_buffer_read(owner, 16, &out, 4), KILN_SUCCESS);
  EXPECT_EQ(out, 77);
  const int live = fake.live("memory");
  kiln_buffer_free(view);
  EXPECT_EQ(fake.live("memory"), live);
  kiln_buffer *bad = nullptr;
  EXPECT_EQ(kiln_buffer_wrap(rt, base + 48, 32, KILN_DTYPE_I32, &bad), KILN_ERROR_INVALID_VALUE);
  int32_t host[4] = {};
  EXPECT_EQ(kiln_buffer_wrap(rt, reinterpret_cast<uint64_t>(host), 16, KILN_DTYPE_I32, &bad), KILN_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(kiln_last_error()).find("is not memory of this runtime's Level Zero context"),
            std::string::npos)
      << kiln_last_error();
  // A caller's stream is CUDA's alone.
  EXPECT_EQ(kiln_runtime_set_stream(rt, &out), KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(kiln_runtime_set_stream(rt, nullptr), KILN_ERROR_UNSUPPORTED);
}

TEST_F(ZeBackend, TimestampsMeasureAcrossTimerWrap) {
  ASSERT_EQ(load(spirvBundle()), KILN_SUCCESS);
  kiln_buffer *x = alloc(64);
  std::vector<kiln_arg> args = {bufArg(x), bufArg(x), bufArg(x), intArg(1)};
  kiln_event *start = nullptr, *stop = nullptr;
  ASSERT_EQ(kiln_event_create(rt, &start), KILN_SUCCESS) << kiln_last_error();
  ASSERT_EQ(kiln_event_create(rt, &stop), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_record(start), KILN_SUCCESS) << kiln_last_error();
  for (int i = 0; i < 6; ++i) // 6000 ticks; the fake 32-bit timer wraps after 2500
    ASSERT_EQ(kiln_launch(kernel, kiln_grid{1, 1, 1}, args.data(), args.size()), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_record(stop), KILN_SUCCESS);
  ASSERT_EQ(kiln_event_synchronize(stop), KILN_SUCCESS);
  float ms = 0;
  ASSERT_EQ(kiln_event_elapsed_ms(start, stop, &ms), KILN_SUCCESS);
  EXPECT_FLOAT_EQ(ms, 1.5f);
  kiln_event_destroy(start);
  kiln_event_destroy(stop);
}

TEST(ZeBackendCreation, DriverStates) {
  ScopedEnv env("KILN_ZE_LIBRARY", KILN_FAKE_ZE_PATH);
  FakeZe fake;
  fake.reset();
  kiln_runtime_options o{KILN_BACKEND_LEVEL_ZERO, 0};
  kiln_runtime *rt = nullptr;

  fake.configure(ZE_RESULT_ERROR_UNINITIALIZED, 1, 1);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_EQ(std::string(kiln_last_error()),
            "no Level Zero driver: zeInit returned ZE_RESULT_ERROR_UNINITIALIZED (" KILN_FAKE_ZE_PATH
            " found no GPU driver)");
  fake.configure(ZE_RESULT_SUCCESS, 0, 1);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_EQ(std::string(kiln_last_error()), "no Level Zero driver: zeDriverGet found 0 drivers");
  fake.configure(ZE_RESULT_SUCCESS, 2, 0);
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()), "no Level Zero GPU: 2 driver(s) found, none offers a GPU device");
  fake.configure(ZE_RESULT_SUCCESS, 1, 2);
  o.device_index = 1;
  ASSERT_EQ(kiln_runtime_create(&o, &rt), KILN_SUCCESS) << kiln_last_error();
  EXPECT_STREQ(kiln_runtime_device_name(rt), "Fake Arc 2");
  kiln_runtime_destroy(rt);
  o.device_index = 2;
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()), "no Level Zero GPU 2: there are 2");

  // Auto falls back to Level Zero when there is no CUDA driver.
  ScopedEnv cuda("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  ASSERT_EQ(kiln_runtime_create(nullptr, &rt), KILN_SUCCESS) << kiln_last_error();
  EXPECT_EQ(kiln_runtime_backend(rt), KILN_BACKEND_LEVEL_ZERO);
  kiln_runtime_destroy(rt);
  EXPECT_EQ(fake.live("contexts"), 0);
  EXPECT_EQ(fake.live("lists"), 0);
}
