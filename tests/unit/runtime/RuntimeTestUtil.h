//===- RuntimeTestUtil.h - Shared helpers of the runtime tests ---*- C++ -*-===//
//
// Sample bundles, scoped environment variables, and access to the controls of the fake
// driver libraries (FakeCuda.cpp, FakeLevelZero.cpp), which the tests dlopen by path
// — the same path the runtime opens through KILN_CUDA_LIBRARY / KILN_ZE_LIBRARY, so
// both see one library instance.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Runtime.h"

#include "runtime/Bundle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <vector>

namespace kiln::rt::test {

/// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// PTX of `vadd(x: *f32, y: *f32, out: *f32, n: i32)` with .loc lines from vadd.kiln.
inline const char *kVaddPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry kiln_vadd(
	.param .u64 kiln_vadd_param_0,
	.param .u64 kiln_vadd_param_1,
	.param .u64 kiln_vadd_param_2,
	.param .u32 kiln_vadd_param_3
)
{
	.loc	1 4 5
	ret;
}
	.file	1 "vadd.kiln"
)";

inline std::vector<uint8_t> bytesOf(const std::string &s) { return std::vector<uint8_t>(s.begin(), s.end()); }

/// A valid bundle for vadd with PTX for sm_90.
inline Bundle vaddBundle(const std::string &ptx = kVaddPtx) {
  Bundle b;
  b.kernelName = "vadd";
  b.entry = "kiln_vadd";
  b.params = {{"x", DType::F32, true}, {"y", DType::F32, true}, {"out", DType::F32, true}, {"n", DType::I32, false}};
  b.consts = {{"BLOCK", int64_t(1024)}, {"SCALE", 0.5}, {"CAUSAL", true}};
  b.numWarps = 4;
  b.sharedBytes = 0;
  b.target = Target::SM90;
  b.compilerVersion = "dslc 0.1.0";
  b.sourceHash = "9c1f0a";
  b.sourceFile = "vadd.kiln";
  b.sourceLine = 3;
  b.sourceColumn = 1;
  b.sections.push_back(CodeSection{SectionKind::PTX, Target::SM90, bytesOf(ptx)});
  return b;
}

/// PTX of `row_sum(x: *f32, out: *f32, mask: block_mask<4, 8>)`: the mask is the five
/// parameters mask.rows, mask.cols, mask.row_start, mask.blocks and mask.bitmaps.
inline const char *kRowSumPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry kiln_row_sum(
	.param .u64 kiln_row_sum_param_0,
	.param .u64 kiln_row_sum_param_1,
	.param .u32 kiln_row_sum_param_2,
	.param .u32 kiln_row_sum_param_3,
	.param .u64 kiln_row_sum_param_4,
	.param .u64 kiln_row_sum_param_5,
	.param .u64 kiln_row_sum_param_6
)
{
	ret;
}
)";

/// The parameters of a `NAME: block_mask<...>` parameter, in bundle order.
inline std::vector<BundleParam> maskParams(const std::string &name) {
  return {{name + ".rows", DType::I32, false},
          {name + ".cols", DType::I32, false},
          {name + ".row_start", DType::I32, true},
          {name + ".blocks", DType::I32, true},
          {name + ".bitmaps", DType::U32, true}};
}

/// A valid bundle for row_sum, whose third parameter is a block_mask<4, 8>.
inline Bundle maskedBundle() {
  Bundle b = vaddBundle(kRowSumPtx);
  b.kernelName = "row_sum";
  b.entry = "kiln_row_sum";
  b.params = {{"x", DType::F32, true}, {"out", DType::F32, true}};
  for (BundleParam &p : maskParams("mask"))
    b.params.push_back(p);
  b.blockMasks = {{"mask", 4, 8, 2}};
  b.sourceFile = "row_sum.kiln";
  b.consts = {{"BM", int64_t(4)}, {"BN", int64_t(8)}};
  return b;
}

/// A minimal well-formed SPIR-V header (5 words) plus one word, little-endian.
inline std::vector<uint8_t> tinySpirv() {
  const uint32_t words[] = {0x07230203u, 0x00010400u, 0u, 16u, 0u, 0x00020011u};
  std::vector<uint8_t> out;
  for (uint32_t w : words)
    for (int i = 0; i < 4; ++i)
      out.push_back(uint8_t(w >> (8 * i)));
  return out;
}

/// A symbol of a fake driver library, opened by path.
template <typename Fn> Fn fakeSymbol(const char *libraryPath, const char *name) {
  void *lib = ::dlopen(libraryPath, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << ::dlerror();
  void *p = lib ? ::dlsym(lib, name) : nullptr;
  EXPECT_NE(p, nullptr) << name;
  return reinterpret_cast<Fn>(p);
}

/// The controls FakeCuda.cpp exports.
struct FakeCuda {
  void (*reset)() = fakeSymbol<void (*)()>(KILN_FAKE_CUDA_PATH, "fake_cuda_reset");
  void (*configure)(int, int, int, int) = fakeSymbol<void (*)(int, int, int, int)>(KILN_FAKE_CUDA_PATH,
                                                                                   "fake_cuda_configure");
  void (*failNext)(const char *, int) = fakeSymbol<void (*)(const char *, int)>(KILN_FAKE_CUDA_PATH,
                                                                                "fake_cuda_fail_next");
  int (*launchCount)() = fakeSymbol<int (*)()>(KILN_FAKE_CUDA_PATH, "fake_cuda_launch_count");
  int (*lastLaunch)(unsigned *, unsigned *, unsigned *, char *, size_t) =
      fakeSymbol<int (*)(unsigned *, unsigned *, unsigned *, char *, size_t)>(KILN_FAKE_CUDA_PATH,
                                                                              "fake_cuda_last_launch");
  int (*launchShape)(int, unsigned *, unsigned *) =
      fakeSymbol<int (*)(int, unsigned *, unsigned *)>(KILN_FAKE_CUDA_PATH, "fake_cuda_launch_shape");
  void *(*lastStream)() = fakeSymbol<void *(*)()>(KILN_FAKE_CUDA_PATH, "fake_cuda_last_stream");
  void *(*makeStream)() = fakeSymbol<void *(*)()>(KILN_FAKE_CUDA_PATH, "fake_cuda_make_stream");
  void (*dropStream)(void *) = fakeSymbol<void (*)(void *)>(KILN_FAKE_CUDA_PATH, "fake_cuda_drop_stream");
  size_t (*lastParam)(size_t, void *, size_t) = fakeSymbol<size_t (*)(size_t, void *, size_t)>(KILN_FAKE_CUDA_PATH,
                                                                                               "fake_cuda_last_param");
  int (*live)(const char *) = fakeSymbol<int (*)(const char *)>(KILN_FAKE_CUDA_PATH, "fake_cuda_live");
  void (*setLaunchMs)(const char *, double) =
      fakeSymbol<void (*)(const char *, double)>(KILN_FAKE_CUDA_PATH, "fake_cuda_set_launch_ms");
  void (*packAllocations)(int) = fakeSymbol<void (*)(int)>(KILN_FAKE_CUDA_PATH, "fake_cuda_pack_allocations");
  void (*markMemory)(int) = fakeSymbol<void (*)(int)>(KILN_FAKE_CUDA_PATH, "fake_cuda_mark_memory");

  /// Parameter `i` of the last launch as an integer of its size.
  uint64_t param(size_t i, size_t *size = nullptr) {
    uint64_t v = 0;
    size_t n = lastParam(i, &v, sizeof v);
    if (size)
      *size = n;
    return v;
  }
};

/// Runs `body` and returns the kiln::RuntimeError it throws (status KILN_SUCCESS if none).
template <typename Body> kiln::RuntimeError thrown(Body body) {
  try {
    body();
  } catch (const kiln::RuntimeError &e) {
    return e;
  }
  return kiln::RuntimeError(KILN_SUCCESS, "nothing thrown");
}

} // namespace kiln::rt::test
