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
