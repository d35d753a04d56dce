//===- SplitCostModel.h - How many segments a reduced range is split into -*- C++ -*-===//
//
// The multi-segment strategy of reduction-chain fusion runs a fused chain's range over
// S programs per program of the grid (SplitReduction.cpp). It pays when the grid alone
// leaves processors idle: flash-decoding's 8 × 32 heads are 256 programs for 132 SMs.
// The cost model says how many segments, from what is known when compiling.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/transforms/SparseMapping.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::ir {

/// Processors (SMs) of an H100 or H200, sm_90: what the cost model assumes unless told.
inline constexpr int64_t kDefaultProcessors = 132;
/// The processors the cost model assumes for a code-generation target: 108 for sm_80
/// (A100), 132 for sm_90 and sm_90a (H100, H200), 64 for spirv64 (one stack of an Intel
/// Data Center GPU Max); kDefaultProcessors for anything else.
int64_t processorsOf(std::string_view target);
/// The largest thread-block cluster a target launches portably: 8 for sm_90 and sm_90a,
/// 0 (no clusters) for the others.
int64_t clusterSizeOf(std::string_view target);

/// The most segments a range is split into, forced or chosen: the last segment merges
/// every partial state alone.
inline constexpr int64_t kMaxSegments = 1024;

/// What the multi-segment strategy is told (PipelineOptions::reductionSplit).
struct ReductionSplitOptions {
  /// 0: the cost model chooses; S >= 1 forces S segments (1: every chain single segment).
  int64_t forced = 0;
  /// Programs in the grid the kernel is launched with, when known when compiling.
  std::optional<int64_t> programs;
  int64_t processors = kDefaultProcessors;
  /// The largest thread-block cluster the target launches; 0 when it has none.
  int64_t maxClusterSize = 0;
  /// How chains over blocks() loops are mapped (row-wise: one segment).
  SparseMappingOptions sparse;
};

struct SplitCostInputs {
  std::optional<int64_t> programs; ///< unknown: the kernel is compiled before its launch
  int64_t processors = kDefaultProcessors;
  std::optional<int64_t> rangeBlocks; ///< iterations of the range, when its bounds are constants
};

struct SegmentChoice {
  int64_t segments = 1;
  std::string why; ///< for --explain-fusion, e.g. "256 programs fill fewer than 2 waves of 132 processors"
};

/// What the cost model knows of a chain whose results feed a later pass over the range
/// (softmax's output loop), for a split over a thread-block cluster.
struct ClusterSplitInputs {
  std::optional<int64_t> rangeBlocks; ///< iterations of the range, when its bounds are constants
  int64_t heldBlocks = 0;             ///< blocks one program holds on chip (OnChipPath.cpp)
  int64_t blockElementsPerThread = 0; ///< elements of one block of the loads, per thread
  int64_t maxClusterSize = 0;         ///< 0: the target has no clusters
};

/// The rule: a cluster of S = rangeBlocks programs, each holding one block, when the
/// range is 2 to maxClusterSize blocks that one program cannot hold, and a block gives
/// each thread at least 16 elements (smaller shares spend more on the exchange than
/// they gain); else one program.
SegmentChoice chooseClusterSegments(const ClusterSplitInputs &inputs);

/// The rule: one segment when the number of programs is unknown or at least two per
/// processor; else the fewest segments that make two per processor, at most one per
/// four blocks of a range of known length, and at most kMaxSegments.
SegmentChoice chooseSegments(const SplitCostInputs &inputs);

} // namespace kiln::ir
