//===- Layout.h - How a tile's elements are spread over threads ----*- C++ -*-===//
//
// Every tile value lives in the registers of the program's T threads. Kiln uses one
// blocked layout per element count, over the row-major (flattened) element order:
//
//   the N elements are cut into C = N / vec chunks of `vec` consecutive elements;
//   chunk c belongs to thread c % T, in that thread's register round c / T;
//   a thread holds R = ceil(C / T) rounds of `vec` registers.
//
// Element e of the tile therefore sits in thread (e / vec) % T, register
// (e / (vec * T)) * vec + e % vec. When C is not a multiple of T, the last round of
// some threads holds no element (it is "invalid": never stored, loaded or reduced).
//
// Because the layout depends only on N (and T), ops that keep the row-major order
// (elementwise ops, reshape, expand_dims) never move data; ops that reorder elements
// (broadcast, permute, join, split, reductions, scans, sorting, dot) go through shared
// memory. Rank-0 values are "uniform": every thread holds the one element.
//
// `vec` is a power of two that divides N, chosen as large as possible while every
// thread still gets a chunk, up to the kernel's chunk limit (chunkLimit): contiguous
// chunks let memory accesses use vectors of up to 16 bytes. The limit is one per kernel
// so that a bf16 tile and the f32 tile it widens to keep the same layout.
//
// This header is pure logic (no LLVM) so that it is unit-tested directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/Type.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

/// The chunk limit of most kernels: 4 elements, 16 bytes of f32.
inline constexpr int64_t kDefaultChunkLimit = 4;
/// The chunk limit of kernels whose global tiles all have elements of at most 2 bytes.
inline constexpr int64_t kWideChunkLimit = 8;

struct Layout {
  int64_t numElements = 1; ///< N
  int64_t vec = 1;         ///< elements per chunk
  int64_t numThreads = 1;  ///< T
  bool uniform = false;    ///< rank 0: every thread holds the element

  /// The layout of a value of type `type` in a program of `numThreads` threads whose
  /// chunks hold at most `maxVec` elements (the kernel's chunkLimit).
  static Layout forType(const Type &type, int64_t numThreads,
                        int64_t maxVec = kDefaultChunkLimit);
  static Layout forElements(int64_t numElements, int64_t numThreads,
                            int64_t maxVec = kDefaultChunkLimit);
  static Layout uniformScalar(int64_t numThreads);

  int64_t numChunks() const { return numElements / vec; }
  /// Register rounds per thread (R).
  int64_t numRounds() const;
  /// Registers per thread (R * vec).
  int64_t numRegs() const { return numRounds() * vec; }
  /// True when every thread holds a chunk in round `round`.
  bool roundAlwaysValid(int64_t round) const;
  /// The chunk thread `thread` holds in round `round` (may be >= numChunks: invalid).
  int64_t chunkOf(int64_t thread, int64_t round) const;
  /// Flat (row-major) element index of register `reg` of thread `thread`; -1 when that
  /// register holds no element.
  int64_t elementOf(int64_t thread, int64_t reg) const;
  /// The thread that owns element `e` (for uniform values: every thread; returns 0).
  int64_t ownerOf(int64_t e) const;
  /// The register of the owner that holds element `e`.
  int64_t regOf(int64_t e) const;

  bool operator==(const Layout &) const = default;
};

/// The widest chunk of every tile of `kernel`: 8 when the global tile accesses of
/// elements of at most 2 bytes move more bytes than the wider ones (an access
/// in a loop weighs more than one outside it), so that a chunk of the traffic that
/// matters is one 16-byte access (ld.global.v4.b32 for 8 x bf16); else kDefaultChunkLimit,
/// because a chunk of 8 f32 needs two 16-byte accesses per thread, each warp-wide access
/// then touching every other 16 bytes of twice the cache lines. Accesses with no
/// consecutive addresses along the last axis (AxisInfo) use no vectors and do not count.
int64_t chunkLimit(const ir::Kernel &kernel);

/// Row-major strides (in elements) of `shape`.
std::vector<int64_t> rowMajorStrides(const Shape &shape);
/// The multi-index of flat element `e` of `shape`.
std::vector<int64_t> unravelIndex(int64_t e, const Shape &shape);

/// Smallest power of two >= n (n >= 1).
int64_t nextPowerOf2(int64_t n);
/// Largest power of two <= n (n >= 1).
int64_t prevPowerOf2(int64_t n);
/// Largest power of two dividing n (n > 0); n == 0 gives `cap`.
int64_t largestPow2Divisor(int64_t n, int64_t cap);

/// How reductions, scans and sorts split their lines over threads: `lines` independent
/// lines of `length` elements each get `group` threads (a power of two) apiece, each
/// thread working on one contiguous segment of its line. When there are at least as many
/// lines as threads, group is 1 and every thread walks whole lines.
struct LineSplit {
  int64_t lines = 1;
  int64_t length = 1;
  int64_t group = 1;       ///< threads per line
  int64_t linesPerPass = 1; ///< lines handled at once by all threads: T / group

  static LineSplit make(int64_t lines, int64_t length, int64_t numThreads);
  /// Segment [begin, end) of the line that thread `g` (0 <= g < group) works on.
  int64_t segmentBegin(int64_t g) const { return g * length / group; }
  int64_t segmentEnd(int64_t g) const { return (g + 1) * length / group; }
};

} // namespace kiln::codegen
