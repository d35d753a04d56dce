//===- CudaRun.cpp - Runs prepared PTX cases on a CUDA GPU ----------------===//
//
// kiln-gpu-run [--bench N] CASEDIR...
//
// For each case folder written by kiln-gpu-prepare: loads kernel.ptx through the CUDA
// driver (libcuda.so.1, opened at run time, so this program builds and starts anywhere),
// launches it with the case's inputs, and compares every buffer with what the reference
// interpreter left in it. Prints one PASS/FAIL line per case; the exit status is the
// number of failures. Without a driver it says so and exits with 77 (skipped).
// With --bench N, a passing case is then launched N more times and the mean time per
// launch is printed (kernels that accumulate into their outputs simply keep doing so).
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/KernelCase.h"
#include "tests/unit/codegen/gpu/GpuCase.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/// The driver entry points this program uses.
struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*funcSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;

  bool load(std::string &error) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = dlerror();
      return false;
    }
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn)
        error += std::string(error.empty() ? "" : ", ") + "missing " + name;
    };
    sym(init, "cuInit");
    sym(deviceGet, "cuDeviceGet");
    sym(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(ctxSetCurrent, "cuCtxSetCurrent");
    sym(moduleLoadDataEx, "cuModuleLoadDataEx");
    sym(moduleGetFunction, "cuModuleGetFunction");
    sym(moduleUnload, "cuModuleUnload");
    sym(funcSetAttribute, "cuFuncSetAttribute");
    sym(memAlloc, "cuMemAlloc_v2");
    sym(memFree, "cuMemFree_v2");
    sym(memcpyHtoD, "cuMemcpyHtoD_v2");
    sym(memcpyDtoH, "cuMemcpyDtoH_v2");
    sym(launchKernel, "cuLaunchKernel");
    sym(ctxSynchronize, "cuCtxSynchronize");
    sym(getErrorString, "cuGetErrorString");
    return error.empty();
  }

  std::string describe(CUresult r) const {
    const char *s = nullptr;
    if (getErrorString)
      getErrorString(r, &s);
    return std::to_string(static_cast<int>(r)) + " (" + (s ? s : "?") + ")";
  }
};

std::string readFile(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs one case; returns "" when it matches the interpreter. With `bench` > 0, also
/// times that many more launches and sets `msPerLaunch`.
std::string runCase(const Driver &cu, const fs::path &dir, int bench, double &msPerLaunch) {
  gputest::GpuCase c;
  std::string error;
  if (!gputest::readCase(readFile(dir / "case.txt"), c, error))
    return "bad case: " + error;
  const std::string ptx = readFile(dir / "kernel.ptx");
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof log)};
  CUmodule module;
  CUresult r = cu.moduleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS)
    return "cuModuleLoadDataEx: " + cu.describe(r) + " " + log;
  CUfunction fn;
  if ((r = cu.moduleGetFunction(&fn, module, c.entry.c_str())) != CUDA_SUCCESS)
    return "cuModuleGetFunction: " + cu.describe(r);
  if (c.sharedBytes > 48 * 1024 &&
      (r = cu.funcSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(c.sharedBytes))) != CUDA_SUCCESS)
    return "cuFuncSetAttribute: " + cu.describe(r);

  std::vector<CUdeviceptr> ptrs(c.args.size(), 0);
  std::vector<uint64_t> slots(c.args.size(), 0);
  std::vector<void *> params;
  std::vector<std::string> inputs(c.args.size());
  // A benchmark case carries its `// @` lines instead of data: make the inputs here.
  const bool benchOnly = fs::exists(dir / "spec.txt");
  std::vector<interp::Buffer> made;
  if (benchOnly) {
    auto spec = spirvtest::parseCaseSpec(readFile(dir / "spec.txt"), error);
    if (!spec)
      return "bad spec: " + error;
    std::vector<interp::KernelArg> ignored;
    spirvtest::makeInputs(*spec, 1, made, ignored);
  }
  size_t nextMade = 0;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const gputest::CaseArg &a = c.args[i];
    if (a.isBuffer) {
      if (benchOnly) {
        const interp::Buffer &m = made.at(nextMade++);
        inputs[i].assign(reinterpret_cast<const char *>(m.data.data()), m.data.size());
      } else {
        inputs[i] = readFile(dir / ("in" + std::to_string(i) + ".bin"));
      }
      if ((r = cu.memAlloc(&ptrs[i], std::max<size_t>(inputs[i].size(), 16))) != CUDA_SUCCESS)
        return "cuMemAlloc: " + cu.describe(r);
      if (!inputs[i].empty() &&
          (r = cu.memcpyHtoD(ptrs[i], inputs[i].data(), inputs[i].size())) != CUDA_SUCCESS)
        return "cuMemcpyHtoD: " + cu.describe(r);
      std::memcpy(&slots[i], &ptrs[i], sizeof(CUdeviceptr));
    } else {
      std::memcpy(&slots[i], a.scalar.data(), std::min<size_t>(a.scalar.size(), 8));
    }
  }
  for (uint64_t &s : slots)
    params.push_back(&s);
  r = cu.launchKernel(fn, static_cast<unsigned>(c.grid[0]), static_cast<unsigned>(c.grid[1]),
                      static_cast<unsigned>(c.grid[2]), static_cast<unsigned>(c.threads), 1, 1,
                      static_cast<unsigned>(c.sharedBytes), nullptr,
                      params.empty() ? nullptr : params.data(), nullptr);
  if (r != CUDA_SUCCESS)
    return "cuLaunchKernel: " + cu.describe(r);
  if ((r = cu.ctxSynchronize()) != CUDA_SUCCESS)
    return "kernel failed: " + cu.describe(r);

  std::string mismatch;
  std::vector<std::vector<std::byte>> results(c.args.size());
  for (size_t i = 0; i < c.args.size() && !benchOnly; ++i) {
    const gputest::CaseArg &a = c.args[i];
    if (!a.isBuffer)
      continue;
    std::vector<std::byte> got(inputs[i].size());
    if (!got.empty() && (r = cu.memcpyDtoH(got.data(), ptrs[i], got.size())) != CUDA_SUCCESS)
      return "cuMemcpyDtoH: " + cu.describe(r);
    interp::Buffer expected;
    expected.name = "arg" + std::to_string(i);
    expected.dtype = a.dtype;
    const std::string want = readFile(dir / ("out" + std::to_string(i) + ".bin"));
    expected.data.resize(want.size());
    std::memcpy(expected.data.data(), want.data(), want.size());
    mismatch += spirvtest::compareBuffers(expected, got, c.rtol, c.atol);
  }
  if (mismatch.empty() && bench > 0) {
    auto start = std::chrono::steady_clock::now();
    for (int rep = 0; rep < bench; ++rep)
      cu.launchKernel(fn, static_cast<unsigned>(c.grid[0]), static_cast<unsigned>(c.grid[1]),
                      static_cast<unsigned>(c.grid[2]), static_cast<unsigned>(c.threads), 1, 1,
                      static_cast<unsigned>(c.sharedBytes), nullptr,
                      params.empty() ? nullptr : params.data(), nullptr);
    if ((r = cu.ctxSynchronize()) != CUDA_SUCCESS)
      return "benchmark launches failed: " + cu.describe(r);
    msPerLaunch = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count() /
                  bench;
  }
  for (size_t i = 0; i < c.args.size(); ++i)
    if (c.args[i].isBuffer)
      cu.memFree(ptrs[i]);
  cu.moduleUnload(module);
  return mismatch;
}

} // namespace

int main(int argc, char **argv) {
  Driver cu;
  std::string error;
  if (!cu.load(error)) {
    std::cout << "no CUDA driver: " << error << "\n";
    return 77;
  }
  CUdevice dev;
  CUcontext ctx;
  CUresult r;
  if ((r = cu.init(0)) != CUDA_SUCCESS || (r = cu.deviceGet(&dev, 0)) != CUDA_SUCCESS ||
      (r = cu.primaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
      (r = cu.ctxSetCurrent(ctx)) != CUDA_SUCCESS) {
    std::cout << "no usable CUDA device: " << cu.describe(r) << "\n";
    return 77;
  }
  int failures = 0, bench = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--bench" && i + 1 < argc) {
      bench = std::atoi(argv[++i]);
      continue;
    }
    const fs::path dir = argv[i];
    double ms = 0;
    std::string result = runCase(cu, dir, bench, ms);
    if (result.empty()) {
      std::cout << "PASS " << dir.filename().string();
      if (bench > 0)
        std::cout << "  " << ms << " ms/launch";
      std::cout << "\n";
    } else {
      std::cout << "FAIL " << dir.filename().string() << ": " << result << "\n";
      ++failures;
    }
  }
  return failures;
}
