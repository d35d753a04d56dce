//===- GpuCase.h - A prepared kernel run for the CUDA check --------*- C++ -*-===//
//
// The NVPTX check runs in two halves so that the half on the GPU machine needs neither
// LLVM nor the compiler: `kiln-gpu-prepare` (here) compiles every test kernel to PTX,
// makes its random inputs and runs the reference interpreter; `kiln-gpu-run` (on a
// machine with a CUDA driver) loads the PTX, runs it on the same inputs and compares.
//
// One case is a folder holding kernel.ptx, case.txt and the buffers:
//   case.txt   entry NAME / threads T / shared BYTES / grid X Y Z / tol RTOL ATOL /
//              one `buffer I DTYPE COUNT` or `scalar HEXBYTES` line per argument
//   inI.bin    the input of buffer argument I
//   outI.bin   what the interpreter left in it
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::gputest {

struct CaseArg {
  bool isBuffer = false;
  DType dtype = DType::F32;
  int64_t count = 0;
  std::vector<uint8_t> scalar; ///< the scalar's bytes
};

struct GpuCase {
  std::string entry;
  int64_t threads = 128;
  int64_t sharedBytes = 0;
  std::array<int64_t, 3> grid = {1, 1, 1};
  double rtol = 0, atol = 0;
  std::vector<CaseArg> args;
};

/// case.txt text <-> GpuCase.
std::string writeCase(const GpuCase &c);
bool readCase(const std::string &text, GpuCase &c, std::string &error);

} // namespace kiln::gputest
