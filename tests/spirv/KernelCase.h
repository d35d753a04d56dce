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
// A `block_mask<BM, BN>` parameter (LANGUAGE.md, "Sparsity") is one line that stands
// for the five kernel parameters it becomes, NAME.rows, NAME.cols (i32), NAME.row_start,
// NAME.blocks (*i32) and NAME.bitmaps (*u32):
//
//   // @arg mask blockmask ROWS COLS BM BN PATTERN [PARAM...] [keep_diagonal] [empty_rows RB...]
//
// A dense [ROWS, COLS] element mask is drawn from the case's random generator and
// compressed with support/BlockMask.h's blockMaskFromDense, so the buffers hold exactly
// what the runtime would build. Patterns, as tests/examples/kilncase.py draws them:
// `random PE PF [PX]` (each BM x BN block empty with probability PE, full with PF,
// otherwise each of its elements kept with probability PX, default 0.5), `causal`
// (c <= r), `sliding W` (|r - c| <= W), `dense` (everything), `diagonal` (r == c),
// `longformer W G` (a band |r - c| <= W, and rows and columns below G kept whole), and
// stdlib/block_masks.kiln's `causal_window W` (0 <= r - c < W), `dilated W D` (|r - c|
// <= W and D divides r - c) and `bigbird W G B P SEED` (Longformer's, or B x B block
// (r / B, c / B) among the P percent its hash with SEED keeps).
// Then `keep_diagonal` keeps every element (i, i), and `empty_rows` clears the listed
// block rows (negative: from the end), whose loops then run no iteration.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/interp/Interpreter.h"

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kiln::spirvtest {

/// A `@arg NAME blockmask ...` line: how to draw the dense element mask.
struct BlockMaskSpec {
  std::string name;
  int64_t rows = 0, cols = 0, blockRows = 0, blockCols = 0;
  std::string pattern;             ///< random, causal, sliding, dense, diagonal, longformer, ...
  std::vector<double> params;      ///< the numbers after the pattern
  bool keepDiagonal = false;
  std::vector<int64_t> emptyRows;  ///< block rows to clear (negative: from the end)
};

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
  /// One of the five parameters of a block mask: its index in CaseSpec::blockMasks
  /// (-1 for any other argument) and which parameter (0 rows .. 4 bitmaps). The buffers'
  /// `count` is only known once makeInputs has drawn the mask.
  int blockMask = -1;
  unsigned maskPart = 0;
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
  std::optional<int64_t> numStages;                          ///< .spec: --num-stages
  std::vector<BlockMaskSpec> blockMasks;                     ///< @arg ... blockmask lines
};

/// The dense row-major [rows, cols] element mask of `mask` (one byte an element, 1 =
/// kept), drawn with `rng`.
std::vector<uint8_t> drawBlockMask(const BlockMaskSpec &mask, std::mt19937_64 &rng);

/// The relative and absolute tolerance for buffers of `dtype`: its own @tol line, else
/// the spec's general one.
std::pair<double, double> toleranceFor(const CaseSpec &spec, DType dtype);

/// CodegenOptions::paramDivisibility from the spec's @divisible lines (by argument name).
std::vector<std::pair<unsigned, int64_t>> paramDivisibility(const CaseSpec &spec);

/// The whole text of the file at `path` ("" when it cannot be read).
std::string readTextFile(const std::string &path);

/// Reads the `// @` lines of a .tir file. nullopt (with `error`) on a malformed line.
std::optional<CaseSpec> parseCaseSpec(const std::string &text, std::string &error);

/// Fills buffers and arguments for the interpreter from `spec` with random `seed`: one
/// argument per entry of spec.args (a block mask's five included), in order.
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
