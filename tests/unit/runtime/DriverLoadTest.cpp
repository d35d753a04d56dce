//===- DriverLoadTest.cpp - Creating a runtime where drivers are missing --===//
//
// On a machine without a GPU driver, creating a runtime must fail with a status that
// says so and a message that names the library and the reason. The CUDA cases point
// KILN_CUDA_LIBRARY at a library that does not exist, so they hold on any machine; the
// Level Zero case uses the loader installed here, which finds no driver.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/cuda/CudaApi.h"
#include "runtime/kiln_runtime.h"
#include "runtime/ze/ZeApi.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

kiln_status create(kiln_backend backend, kiln_runtime **rt) {
  kiln_runtime_options o{backend, 0};
  return kiln_runtime_create(&o, rt);
}

bool startsWith(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

} // namespace

TEST(DriverLoad, MissingCudaLibraryIsNoCudaDriver) {
  ScopedEnv env("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  kiln_runtime *rt = reinterpret_cast<kiln_runtime *>(1);
  EXPECT_EQ(create(KILN_BACKEND_CUDA, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_EQ(rt, nullptr);
  std::string msg = kiln_last_error();
  EXPECT_TRUE(startsWith(msg, "no CUDA driver: cannot load /nonexistent/libcuda.so.1 (")) << msg;
  EXPECT_TRUE(contains(msg, "No such file or directory")) << msg;
}

TEST(DriverLoad, ALibraryThatIsNotADriverNamesTheMissingEntryPoint) {
  ScopedEnv env("KILN_CUDA_LIBRARY", "libm.so.6");
  kiln_runtime *rt = nullptr;
  EXPECT_EQ(create(KILN_BACKEND_CUDA, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_EQ(std::string(kiln_last_error()),
            "no usable CUDA driver: libm.so.6 lacks cuInit (not a CUDA driver, or one older than the runtime needs)");
}

TEST(DriverLoad, CudaTableUsesTheVersionedSymbols) {
  auto symbols = cudaEntryPointSymbols();
  auto has = [&](const char *name) {
    return std::any_of(symbols.begin(), symbols.end(), [&](const char *s) { return std::strcmp(s, name) == 0; });
  };
  for (const char *name :
       {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemsetD8_v2",
        "cuStreamDestroy_v2", "cuMemGetAddressRange_v2",
        "cuEventDestroy_v2", "cuDevicePrimaryCtxRelease_v2", "cuEventElapsedTime_v2", "cuInit", "cuLaunchKernel",
        "cuModuleLoadDataEx", "cuFuncSetAttribute", "cuGetErrorName", "cuCtxSynchronize"})
    EXPECT_TRUE(has(name)) << name;
  for (const char *name : {"cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuStreamDestroy"})
    EXPECT_FALSE(has(name)) << name << " must be looked up by its versioned name";
  EXPECT_EQ(symbols.size(), 41u);
}

TEST(DriverLoad, LevelZeroTableNamesTheLoaderFunctions) {
  auto symbols = zeEntryPointSymbols();
  ASSERT_GE(symbols.size(), 20u);
  EXPECT_STREQ(symbols[0], "zeInit");
  EXPECT_TRUE(std::any_of(symbols.begin(), symbols.end(),
                          [](const char *s) { return std::strcmp(s, "zeModuleBuildLogGetString") == 0; }));
}

TEST(DriverLoad, InstalledLevelZeroLoaderWithoutDriverIsNoLevelZeroDriver) {
  ScopedEnv env("KILN_ZE_LIBRARY", nullptr);
  kiln_runtime *rt = nullptr;
  kiln_status s = create(KILN_BACKEND_LEVEL_ZERO, &rt);
  if (s == KILN_SUCCESS) {
    kiln_runtime_destroy(rt);
    GTEST_SKIP() << "this machine has a Level Zero GPU driver";
  }
  std::string msg = kiln_last_error();
  if (s == KILN_ERROR_NO_DRIVER && contains(msg, "cannot load"))
    GTEST_SKIP() << "the Level Zero loader is not installed: " << msg;
  EXPECT_EQ(s, KILN_ERROR_NO_DRIVER) << msg;
  // The loader (1.8 here) says uninitialized when it finds no driver; newer loaders may
  // instead succeed and report zero drivers. Both are the same clear error.
  EXPECT_TRUE(msg == "no Level Zero driver: zeInit returned ZE_RESULT_ERROR_UNINITIALIZED (libze_loader.so.1 found "
                     "no GPU driver)" ||
              msg == "no Level Zero driver: zeDriverGet found 0 drivers")
      << msg;
}

TEST(DriverLoad, MissingLevelZeroLoaderIsNoLevelZeroDriver) {
  ScopedEnv env("KILN_ZE_LIBRARY", "/nonexistent/libze_loader.so.1");
  kiln_runtime *rt = nullptr;
  EXPECT_EQ(create(KILN_BACKEND_LEVEL_ZERO, &rt), KILN_ERROR_NO_DRIVER);
  EXPECT_TRUE(startsWith(kiln_last_error(), "no Level Zero driver: cannot load /nonexistent/libze_loader.so.1 ("))
      << kiln_last_error();
}

TEST(DriverLoad, AutoWithNoDriverExplainsBoth) {
  ScopedEnv cuda("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  ScopedEnv ze("KILN_ZE_LIBRARY", "/nonexistent/libze_loader.so.1");
  kiln_runtime *rt = nullptr;
  EXPECT_EQ(kiln_runtime_create(nullptr, &rt), KILN_ERROR_NO_DRIVER);
  std::string msg = kiln_last_error();
  EXPECT_TRUE(
      startsWith(msg, "no GPU backend is available:\n  CUDA: no CUDA driver: cannot load /nonexistent/libcuda.so.1"))
      << msg;
  EXPECT_TRUE(contains(msg, "\n  Level Zero: no Level Zero driver: cannot load /nonexistent/libze_loader.so.1")) << msg;
}

TEST(DriverLoad, UnknownBackendIsRefused) {
  kiln_runtime_options o{static_cast<kiln_backend>(7), 0};
  kiln_runtime *rt = nullptr;
  EXPECT_EQ(kiln_runtime_create(&o, &rt), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "unknown backend 7");
  EXPECT_EQ(rt, nullptr);
}

TEST(DriverLoad, CApiRefusesNullArgumentsWithoutCrashing) {
  EXPECT_EQ(kiln_runtime_create(nullptr, nullptr), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "`out` is null"));
  kiln_buffer *b = nullptr;
  EXPECT_EQ(kiln_buffer_alloc(nullptr, 16, KILN_DTYPE_F32, &b), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_write(nullptr, 0, nullptr, 0), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_read(nullptr, 0, nullptr, 0), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_buffer_fill(nullptr, 0), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_kernel_load_file(nullptr, "x", nullptr), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_launch(nullptr, kiln_grid{1, 1, 1}, nullptr, 0), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_event_record(nullptr), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_runtime_synchronize(nullptr), KILN_ERROR_INVALID_VALUE);
  float ms;
  EXPECT_EQ(kiln_event_elapsed_ms(nullptr, nullptr, &ms), KILN_ERROR_INVALID_VALUE);
  kiln_runtime_destroy(nullptr);
  kiln_buffer_free(nullptr);
  kiln_kernel_destroy(nullptr);
  kiln_event_destroy(nullptr);
  EXPECT_EQ(kiln_buffer_size(nullptr), 0u);
  EXPECT_STREQ(kiln_kernel_name(nullptr), "");
}

TEST(DriverLoad, StatusNames) {
  EXPECT_STREQ(kiln_status_name(KILN_SUCCESS), "KILN_SUCCESS");
  EXPECT_STREQ(kiln_status_name(KILN_ERROR_NO_DRIVER), "KILN_ERROR_NO_DRIVER");
  EXPECT_STREQ(kiln_status_name(KILN_ERROR_UNSUPPORTED), "KILN_ERROR_UNSUPPORTED");
  EXPECT_STREQ(kiln_status_name(static_cast<kiln_status>(99)), "KILN_STATUS_UNKNOWN");
}

extern "C" int kiln_c_header_launch_null(char *message, size_t size);
extern "C" void kiln_c_header_layout(size_t out[6]);
extern "C" kiln_arg kiln_c_header_mask_arg(const kiln_block_mask *mask);
extern "C" int kiln_c_header_mask_null_runtime(char *message, size_t size);

TEST(CHeader, IsUsableFromCWithTheSameLayout) {
  char message[256];
  EXPECT_EQ(kiln_c_header_launch_null(message, sizeof message), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(message, "kiln_launch: null kernel or argument array");
  size_t c[6];
  kiln_c_header_layout(c);
  EXPECT_EQ(c[0], sizeof(kiln_arg));
  EXPECT_EQ(c[1], offsetof(kiln_arg, value));
  EXPECT_EQ(c[2], sizeof(kiln_grid));
  EXPECT_EQ(c[3], sizeof(kiln_runtime_options));
  EXPECT_EQ(c[4], 4u);
  EXPECT_EQ(c[5], 4u);
  // The mask member fits the union: kiln_arg keeps the size it had before masks.
  EXPECT_EQ(sizeof(kiln_arg), 24u);
  const auto *handle = reinterpret_cast<const kiln_block_mask *>(uintptr_t(0x1230));
  kiln_arg a = kiln_c_header_mask_arg(handle);
  EXPECT_EQ(a.kind, KILN_ARG_BLOCK_MASK);
  EXPECT_EQ(a.value.mask, handle);
  EXPECT_EQ(kiln_c_header_mask_null_runtime(message, sizeof message), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(message, "kiln_block_mask_from_dense: null runtime or `out`");
}
