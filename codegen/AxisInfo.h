//===- AxisInfo.h - Contiguity, divisibility and constancy of tiles -*- C++ -*-===//
//
// A forward analysis over a kernel's integer, bool and pointer values, in the manner of
// Triton's AxisInfo. For every axis d of a value it computes
//
//   contiguity[d]   the values increase by one (pointers: by one element) along d in
//                   runs of this length, the runs starting at multiples of it;
//   divisibility[d] the largest power of two dividing the first value of every such run
//                   (pointers: the byte address);
//   constancy[d]    the values are equal along d in aligned runs of this length.
//
// The memory lowering uses the facts of the last axis to turn contiguous, aligned
// accesses into vector loads and stores, and a mask's constancy to guard a whole vector
// with one predicate. Scalars are described as rank-1 values of one element. Anything
// the rules do not cover is described conservatively (all ones).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln::codegen {

/// Divisibility of 0 and the cap of every divisibility.
inline constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

struct AxisInfo {
  std::vector<int64_t> contiguity;
  std::vector<int64_t> divisibility;
  std::vector<int64_t> constancy;
  std::optional<int64_t> constant; ///< every element equals this (integers, bool)

  /// Nothing known about a value of `rank` axes (rank 0 counts as 1).
  static AxisInfo unknown(unsigned rank);
  unsigned rank() const { return static_cast<unsigned>(contiguity.size()); }
};

struct AxisOptions {
  /// Byte alignment assumed for pointer parameters (1: nothing assumed).
  int64_t pointerAlignment = 16;
  /// Divisibility known for integer parameters, by parameter index (0: unknown).
  std::vector<int64_t> paramDivisibility;
};

class AxisAnalysis {
public:
  AxisAnalysis(const ir::Kernel &kernel, AxisOptions options);

  /// The facts about `value`; conservative when the analysis has none.
  const AxisInfo &info(const ir::Value *value) const;

private:
  void visitBlock(const ir::Block &block);
  void visitOp(const ir::Op &op);
  AxisInfo compute(const ir::Op &op) const;
  void setUnknown(const ir::Value *value);

  AxisOptions options_;
  std::unordered_map<const ir::Value *, AxisInfo> infos_;
  mutable std::unordered_map<unsigned, AxisInfo> unknowns_;
};

/// The widest vector (in elements, a power of two) that an access to `ptrs` of
/// `elemBytes`-byte elements can use when each thread holds chunks of `chunk`
/// consecutive elements: it must divide the chunk, the contiguity and the extent of the
/// last axis, be aligned by the divisibility, and span at most 16 bytes.
int64_t accessVectorWidth(const AxisInfo &ptrs, const Shape &shape, int64_t chunk,
                          int64_t elemBytes);

} // namespace kiln::codegen
