//===- SplitCostModel.cpp - How many segments a reduced range is split into --===//
//
// Two waves (two programs per processor) hide most of one program's start and tail;
// more segments cost a merge step each and shorter, less efficient segments. A segment
// keeps at least four blocks of the range so that its loop still overlaps loads with
// arithmetic. When the range's length is a run-time value it is not a limit here: the
// segments' bounds are computed at run time, and a segment whose share is empty only
// writes an empty state.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/SplitCostModel.h"

#include <algorithm>

namespace kiln::ir {

namespace {
constexpr int64_t kWaves = 2;
constexpr int64_t kMinBlocksPerSegment = 4;
/// Elements per thread of a block below which a cluster split of a row does not pay: on
/// an H200 blocks of 16 and 32 a thread ran faster split (softmax 1024x32768 in blocks of
/// 8192 or 4096, 4096x8192 in blocks of 4096 or 2048), blocks of 8 (16384x1024 in
/// blocks of 512) 2.5 times slower (docs/benchmarks.md, run z2).
constexpr int64_t kMinClusterShare = 16;
} // namespace

int64_t processorsOf(std::string_view target) {
  if (target == "sm_80")
    return 108;
  if (target == "sm_90" || target == "sm_90a")
    return 132;
  if (target == "spirv64")
    return 64;
  return kDefaultProcessors;
}

int64_t clusterSizeOf(std::string_view target) { return target == "sm_90" || target == "sm_90a" ? 8 : 0; }

SegmentChoice chooseClusterSegments(const ClusterSplitInputs &in) {
  const std::string later = "a later loop walks the range again with the results";
  if (in.maxClusterSize < 2)
    return {1, later + ", and only one segment would run it (the target has no thread-block clusters)"};
  if (!in.rangeBlocks)
    return {1, later + ", and the length of the range is not known when compiling"};
  const int64_t blocks = *in.rangeBlocks;
  const std::string range = "the range's " + std::to_string(blocks) + " block" + (blocks == 1 ? "" : "s");
  if (blocks <= std::max<int64_t>(in.heldBlocks, 1))
    return {1, later + ", and one program holds " + range + " on chip"};
  if (blocks > in.maxClusterSize)
    return {1, later + ", and " + range + " are more than a cluster of " + std::to_string(in.maxClusterSize) +
                   " programs holds, one each"};
  if (in.blockElementsPerThread < kMinClusterShare)
    return {1, later + ", and a block gives each thread " + std::to_string(in.blockElementsPerThread) +
                   " elements, too few to pay for an exchange across a cluster (" + std::to_string(kMinClusterShare) +
                   ")"};
  return {blocks, range + " are held on chip one by each program of a thread-block cluster"};
}

SegmentChoice chooseSegments(const SplitCostInputs &in) {
  if (!in.programs)
    return {1, "the number of programs is not known when compiling"};
  const int64_t programs = std::max<int64_t>(*in.programs, 1);
  const int64_t processors = std::max<int64_t>(in.processors, 1);
  const std::string grid = std::to_string(programs) + " program" + (programs == 1 ? "" : "s");
  if (programs >= kWaves * processors)
    return {1, grid + " fill " + std::to_string(processors) + " processors " + std::to_string(kWaves) + " times over"};
  int64_t segments = (kWaves * processors + programs - 1) / programs;
  std::string why =
      grid + " fill fewer than " + std::to_string(kWaves) + " waves of " + std::to_string(processors) + " processors";
  if (in.rangeBlocks) {
    int64_t most = std::max<int64_t>(*in.rangeBlocks / kMinBlocksPerSegment, 1);
    if (most < segments) {
      segments = most;
      if (segments == 1)
        return {1, "the range of " + std::to_string(*in.rangeBlocks) + " blocks is too short to split"};
      why += ", and the range of " + std::to_string(*in.rangeBlocks) + " blocks gives each segment at least " +
             std::to_string(kMinBlocksPerSegment);
    }
  }
  return {std::min(segments, kMaxSegments), why};
}

} // namespace kiln::ir
