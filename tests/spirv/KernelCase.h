//===- KernelCase.h - Test kernels that describe their own inputs ---*- C++ -*-===//
//
// Every .tir file under tests/spirv/kernels/ is one differential test. Comment lines
// starting with `// @` say how to run it:
//
//   // @grid 4 1 1                       programs along x, y, z (default 1 1 1)
//   // @arg x f32[1000] uniform -1 1     a buffer argument and how to fill it
//   // @arg n i32 1000                   a scalar argument
//   // @tol 1e-6 1e-7                    relative and absolute tolerance for floats
//                                        (default 0 0: bit-exact)
//   // @tol f16 2e-3 1e-3                the same for buffers of one dtype only
//   // @divisible n 16                   compile knowing integer argument `n` is a
//                                        multiple of 16 (CodegenOptions)
//
// A `.spec` file under tests/spirv/programs/ describes a Kiln program the same way and
// names it: `// @source examples/softmax.kiln` (relative to the repository root),
// `// @kernel softmax`, optionally `// @define BLOCK=256` (a const override) and
// `// @reduction-split 4` (dslc's --reduction-split: the device then runs the kernel's
// segments over a zeroed workspace, as the runtime launches it). `// @fuse-quantized`
// compiles with dslc's --fuse-quantized; the fused program then computes differently
// from the one as written, by design, so the interpreter runs the fused program too.
//
// Buffer fills: `zero`, `iota [start]`, `uniform lo hi` (floats; integers: whole
// numbers in [lo, hi]), `ints lo hi` (whole numbers in [lo, hi], for any dtype),
// `normal mean sigma`, `signed lo hi` (magnitudes in [lo, hi) with a random sign),
// `bits` (random bit patterns: every value of an integer dtype), `const v`, `bool` (0/1
// at random), `specials` (floats mixed with NaN, +-inf, +-0 and subnormals). A fill may
// end in `then v...`: the buffer's first elements are those values (nan and inf
// allowed), the edge cases a random fill rarely hits. Arguments are listed in
// parameter order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/interp/Interpreter.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::spirvtest {

struct ArgSpec {
  std::string name;
  DType dtype = DType::F32;
  bool isBuffer = false;
  int64_t count = 0;               ///< buffers: elements
  std::string fill = "zero";       ///< buffers: how to fill
  std::vector<double> fillParams;  ///< buffers: numbers after the fill name
  std::vector<double> leading;     ///< buffers: the values after `then`
  double value = 0;                ///< scalars
  /// Integer and bool scalars: the value exactly, as the two's-complement bits of 64
  /// (a double holds integers exactly only up to 2^53; u64 seeds and masks go beyond).
  int64_t intValue = 0;
};

struct CaseSpec {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<ArgSpec> args;
  double rtol = 0, atol = 0;
  std::string source;                                        ///< .spec: the Kiln file
  std::string kernel;                                        ///< .spec: the kernel
  std::vector<std::pair<std::string, std::string>> defines;  ///< .spec: const overrides
  std::vector<std::pair<std::string, int64_t>> divisible;     ///< argument -> divisor
  std::vector<std::pair<DType, std::pair<double, double>>> dtypeTol; ///< @tol DTYPE R A
  int64_t reductionSplit = 0;                                ///< .spec: --reduction-split
  bool fuseQuantized = false;                                ///< .spec: --fuse-quantized
};

/// The relative and absolute tolerance for buffers of `dtype`: its own @tol line, else
/// the spec's general one.
std::pair<double, double> toleranceFor(const CaseSpec &spec, DType dtype);

/// CodegenOptions::paramDivisibility from the spec's @divisible lines (by argument name).
std::vector<std::pair<unsigned, int64_t>> paramDivisibility(const CaseSpec &spec);

/// Reads the `// @` lines of a .tir file. nullopt (with `error`) on a malformed line.
std::optional<CaseSpec> parseCaseSpec(const std::string &text, std::string &error);

/// Fills buffers and arguments for the interpreter from `spec` with random `seed`.
void makeInputs(const CaseSpec &spec, uint64_t seed, std::vector<interp::Buffer> &buffers,
                std::vector<interp::KernelArg> &args);

/// The bytes scalar argument `a` occupies in the kernel ABI (docs/codegen.md) as a
/// parameter of `dtype`.
std::vector<uint8_t> scalarBytes(DType dtype, const ArgSpec &a);

/// Compares two runs' buffer contents element by element; "" when they agree, else a
/// description of the first mismatches.
std::string compareBuffers(const interp::Buffer &expected, const std::vector<std::byte> &actual,
                           double rtol, double atol);

/// Seed for random inputs: $KILN_SEED when set, else from the clock.
uint64_t testSeed();

} // namespace kiln::spirvtest
