//===- GpuCase.h - A prepared kernel run for the GPU check ----------*- C++ -*-===//
//
// The GPU check runs in two halves so that the half on the GPU machine needs neither
// LLVM nor the compiler: `kiln-gpu-prepare` compiles every test kernel and program into
// bundles, makes random inputs and runs the reference interpreter on them;
// `kiln-gpu-run` (on a machine with a CUDA driver) loads the bundles through the Kiln
// runtime, runs them on the same inputs and compares.
//
// One case is a folder:
//   case.txt             what to launch (below)
//   sm_80.kbin, ...      the kernel compiled for each target (runtime/Bundle.h)
//   NAME.in.npy          the input of buffer argument NAME
//   NAME.expected.npy    what the interpreter left in it (absent when that is the
//                        input unchanged: NAME.in.npy is then what is expected)
//
// case.txt is one `key value...` line per field, in this order:
//   source tests/gpu/programs/math.unary.spec     where the case comes from
//   seed 1234                                     KILN_SEED that made the inputs
//   grid 8 1 1
//   bundle sm_80.kbin                             one line per target
//   buffer x f32 983 1e-05 1e-06                  per argument, in parameter order:
//   scalar n i32 983                              a buffer (element count, rtol, atol)
//                                                 or a scalar (its exact value)
// The .npy files keep bf16 and f8 as raw '|V2' / '|V1' elements (support/Npy.h), so
// anyone can inspect a failing case with NumPy.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::gputest {

struct CaseArg {
  std::string name;
  DType dtype = DType::F32;
  bool isBuffer = false;
  int64_t count = 0;        ///< buffers: elements
  double rtol = 0, atol = 0; ///< buffers: how close the GPU must come to the interpreter
  std::string value;        ///< scalars: the value, exactly as the parameter's dtype holds it
  /// Buffers: the input is all zero bytes, so no input file is written (an output's
  /// initial contents, mostly); case.txt says `zero` after the tolerances.
  bool zeroInput = false;
};

struct GpuCase {
  std::string source;
  uint64_t seed = 0;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<std::string> bundles; ///< file names in the case folder
  std::vector<CaseArg> args;
};

/// case.txt text <-> GpuCase. readCase returns nullopt and sets `error` (naming the
/// line) on anything malformed.
std::string writeCase(const GpuCase &c);
std::optional<GpuCase> readCase(const std::string &text, std::string &error);

/// The case.txt spelling of a scalar argument's value: integers in decimal, floats
/// with enough digits to round-trip, `nan`, `inf`, `-inf`.
std::string scalarText(DType dtype, double value);
/// An integer or bool scalar's text from its exact bits: unsigned dtypes as unsigned.
std::string integerText(DType dtype, int64_t bits);

/// The .npy files of buffer argument `name`.
inline std::string inputFile(const std::string &name) { return name + ".in.npy"; }
inline std::string expectedFile(const std::string &name) { return name + ".expected.npy"; }

} // namespace kiln::gputest
