//===- OpenCLRunner.h - Running generated SPIR-V on an OpenCL CPU device -*- C++ -*-===//
//
// The test harness that executes the code generator's SPIR-V (and dslc --emit=opencl's
// OpenCL C, built from source) without a GPU. PoCL (the
// OpenCL implementation on the test machines) does not take SPIR-V directly, so a
// module goes through the SPIR 1.2 route:
//   1. scalar OpConstantNull instructions (valid SPIR-V that the old translator aborts
//      on) are rewritten into OpConstant 0 / OpConstantFalse, and every OpMemoryBarrier
//      (a fence's device-scope barrier, which the translator turns into mem_fence, a
//      builtin PoCL's SPIR kernel library lacks) into a work-group OpControlBarrier with
//      the same memory semantics: on the CPU device global memory is coherent and the
//      atomic a fence pairs with is a locked instruction, so what is left to order is
//      the compiler's placement of accesses, which the barrier keeps,
//   2. `llvm-spirv-15 -r` turns the module into SPIR 1.2 bitcode,
//   3. the bitcode is built with clCreateProgramWithBinary + "-x spir -spir-std=1.2"
//      and launched with one work-group of `numThreads` work-items per program.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::spirvtest {

/// Rewrites every OpConstantNull of a scalar integer, float or bool type, and every
/// OpMemoryBarrier (as step 1 above says); returns the new module (other instructions
/// unchanged) or nullopt when the words are malformed.
std::optional<std::vector<uint8_t>> rewriteScalarConstantNull(const std::vector<uint8_t> &spirv,
                                                              std::string &error);

/// Runs `llvm-spirv-15 -r` on a module; returns SPIR 1.2 bitcode.
std::optional<std::vector<uint8_t>> spirvToSpirBitcode(const std::vector<uint8_t> &spirv,
                                                       std::string &error);

/// One kernel argument as the OpenCL runtime sees it.
struct DeviceArg {
  bool isBuffer = false;
  std::vector<std::byte> *buffer = nullptr; ///< read before, written back after the run
  std::vector<uint8_t> scalar;              ///< the scalar's bytes (by value)
};

/// An OpenCL context on the first device found (PoCL's CPU device on the test machines).
class OpenCLDevice {
public:
  /// Null (and `error` set) when no OpenCL platform or device exists.
  static std::unique_ptr<OpenCLDevice> open(std::string &error);
  ~OpenCLDevice();
  OpenCLDevice(const OpenCLDevice &) = delete;
  OpenCLDevice &operator=(const OpenCLDevice &) = delete;

  std::string deviceName() const;

  /// Builds SPIR bitcode and runs kernel `entry` over `grid` programs of `numThreads`
  /// work-items, with `localBytes` of local memory as a trailing argument when non-zero.
  bool run(const std::vector<uint8_t> &spirBitcode, const std::string &entry,
           std::vector<DeviceArg> &args, std::array<int64_t, 3> grid, int64_t numThreads,
           int64_t localBytes, std::string &error);

  /// Builds OpenCL C `source` (dslc --emit=opencl) and runs kernel `entry` the same way.
  bool runSource(const std::string &source, const std::string &entry, std::vector<DeviceArg> &args,
                 std::array<int64_t, 3> grid, int64_t numThreads, std::string &error);

private:
  OpenCLDevice() = default;
  /// Builds `program` (a cl_program, released here) with `buildOptions` and runs it.
  bool launch(void *program, const char *buildOptions, const std::string &entry, std::vector<DeviceArg> &args,
              std::array<int64_t, 3> grid, int64_t numThreads, int64_t localBytes, std::string &error);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::spirvtest
