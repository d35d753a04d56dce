//===- SplitReduction.h - A fused chain's range over several programs -*- C++ -*-===//
//
// Internal to reduction-chain fusion: the multi-segment rewrite, which FuseReductions.cpp
// applies to the fused loop of a chain whose plan has S > 1 segments. SplitReduction.cpp
// describes the rewrite; GridSplit (ir/IR.h) the launch contract it gives the kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/transforms/ChainAlgebra.h"

#include <utility>

namespace kiln::ir {

/// Where each accumulator of a chain lives among the fused loop's carried values.
struct FusedLayout {
  struct Entry {
    const ChainLoop *loop = nullptr;
    const Accumulator *acc = nullptr;
    unsigned slot = 0;  ///< the accumulator (M2 for a centred square)
    int countSlot = -1; ///< a centred square's count and mean; -1 otherwise
    int meanSlot = -1;
    Value *laterInit = nullptr; ///< an initial value kept out of the rescaling (ChainAlgebra::seen)
  };
  std::vector<Entry> entries; ///< in chain order: earlier results first
};

class SegmentSplit {
public:
  /// Gives `kernel` the program's segment index, and its workspace parameter unless the
  /// segments form a `cluster`, and makes program_id(0) and num_programs(0) read the
  /// program the caller asked for.
  SegmentSplit(Kernel &kernel, ChainAlgebra &algebra, int64_t segments, bool cluster);

  /// This segment's share of the range [lb, ub), computed where `b` stands: whole
  /// blocks of the chain's (constant) step, as even as they divide.
  std::pair<Value *, Value *> segmentBounds(Builder &b, Value *lb, Value *ub, Location loc);
  /// A fused loop's initial value: `init` in segment 0, the identity of ⊕ in the others
  /// (the merge then combines it in once); what travels with a top-k starts from `init`
  /// everywhere.
  Value *initialValue(Builder &b, Value *init, const Accumulator &acc, Location loc);

  /// After `loop`: writes this segment's carried values to the workspace and arrives;
  /// the last segment of a program to arrive merges every segment's values and runs
  /// the rest of the kernel, which moves under that condition. Returns the merged
  /// values, with `b` where the rest of the kernel now begins.
  std::vector<Value *> mergeSegments(Builder &b, Op &loop, const FusedLayout &layout);

  /// After `loop`, in a cluster: every segment offers its carried values to the others
  /// (cluster_exchange) and merges all S states, in segment order, so that every
  /// segment holds the same merged values, which it returns; `b` stays after them.
  std::vector<Value *> exchangeSegments(Builder &b, Op &loop, const FusedLayout &layout);

private:
  struct Words {
    std::vector<int64_t> offsets; ///< of each carried value in a segment's state
    int64_t perSegment = 0;
    int64_t perProgram = 0; ///< the counter's words, then every segment's state
  };
  Words layoutWords(const Op &loop) const;
  Value *requestedProgram(Builder &b, Location loc);
  Value *slotWords(Builder &b, Value *wordOffset, const Words &words, size_t k, const Shape &shape, Location loc);
  void storeState(Builder &b, Value *wordOffset, const std::vector<Value *> &values, const Words &words, Location loc);
  std::vector<Value *> loadState(Builder &b, Value *wordOffset, const std::vector<Type> &types, const Words &words,
                                 Location loc);
  Value *flatIndex(Builder &b, const Shape &shape, Location loc);
  std::vector<Value *> combine(Builder &b, const std::vector<Value *> &merged, const std::vector<Value *> &segment,
                               const FusedLayout &layout, Location loc);
  Value *i64(Builder &b, Value *v, Location loc);
  Value *i64Constant(Builder &b, int64_t v, Location loc);

  Kernel &kernel_;
  ChainAlgebra &algebra_;
  int64_t segments_;
  Value *workspace_ = nullptr;
  Value *segment_ = nullptr;        ///< i32: this program's segment, 0 .. S-1
  Value *requested_ = nullptr;      ///< i32: program_id(0) of the caller's grid
  Value *requestedCount_ = nullptr; ///< i32: num_programs(0) of the caller's grid
  int64_t step_ = 1;
};

/// In a cluster split: when `fits` (every segment's share [lb, ub) is at most one
/// block), runs the ops of `parent` from `first` to `last` with each loop over the share
/// replaced by its body once, guarded (HeldShare.cpp); else as they are. Returns false,
/// changing nothing, when a loop's body has accesses a mask cannot turn off.
bool holdShareOnChip(Block &parent, Op *first, Op *last, Value *lb, Value *ub, Value *fits);

} // namespace kiln::ir
