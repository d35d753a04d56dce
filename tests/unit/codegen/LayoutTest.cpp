//===- LayoutTest.cpp - The blocked layout and line splits ----------------===//
#include "codegen/Layout.h"
#include "codegen/SharedMemory.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln::codegen {
namespace {

TEST(Layout, VecIsTheWidestThatGivesEveryThreadAChunk) {
  EXPECT_EQ(Layout::forElements(1024, 128).vec, 4);
  EXPECT_EQ(Layout::forElements(512, 128).vec, 4);
  EXPECT_EQ(Layout::forElements(256, 128).vec, 2);
  EXPECT_EQ(Layout::forElements(128, 128).vec, 1);
  EXPECT_EQ(Layout::forElements(64, 128).vec, 1);
  EXPECT_EQ(Layout::forElements(24 * 12, 32).vec, 4); // 288 = 32 * 9: vec must divide N
  EXPECT_EQ(Layout::forElements(3 * 5 * 7, 32).vec, 1);
  EXPECT_EQ(Layout::forElements(1 << 20, 256).vec, 4);
}

TEST(Layout, WideChunksOnlyWhereTheKernelAllowsThem) {
  EXPECT_EQ(Layout::forElements(1 << 20, 256, kWideChunkLimit).vec, 8);
  EXPECT_EQ(Layout::forElements(1024, 128, kWideChunkLimit).vec, 8);
  EXPECT_EQ(Layout::forElements(512, 128, kWideChunkLimit).vec, 4); // every thread still gets a chunk
  EXPECT_EQ(Layout::forElements(1 << 20, 256).vec, 4);               // the default stays 4
}

/// The chunk limit of the one kernel in `tir`.
int64_t chunkLimitOf(const std::string &tir) {
  auto sources = std::make_shared<SourceManager>();
  std::ostringstream errors;
  DiagnosticEngine diags(*sources, errors);
  auto module = ir::parseTir(sources, sources->addBuffer("k.tir", tir), diags);
  EXPECT_TRUE(module) << errors.str();
  return module ? chunkLimit(*module->kernels.front()) : -1;
}

// A kernel moving only 16-bit tiles through global memory gets 16-byte chunks of 8;
// one f32 tile access anywhere keeps every tile of the kernel at 4, so that a bf16 tile
// and the f32 tile it widens to share a layout.
TEST(Layout, ChunkLimitFollowsTheWidestGlobalTileAccess) {
  const char *bf16Copy = R"(kernel @k(%x: *bf16, %y: *bf16) attributes {consts = {}, num_stages = 1, num_warps = 4} {
  %0 = arange {end = 1024, start = 0} : tile<i32, [1024]>
  %1 = splat %x : tile<*bf16, [1024]>
  %2 = ptr_add %1, %0 : tile<*bf16, [1024]>
  %v = load %2 : tile<bf16, [1024]>
  %w = cast %v : tile<f32, [1024]>
  %b = cast %w : tile<bf16, [1024]>
  %3 = splat %y : tile<*bf16, [1024]>
  %4 = ptr_add %3, %0 : tile<*bf16, [1024]>
  store %4, %b
  return
}
)";
  EXPECT_EQ(chunkLimitOf(bf16Copy), kWideChunkLimit);
  const char *widening = R"(kernel @k(%x: *bf16, %y: *f32) attributes {consts = {}, num_stages = 1, num_warps = 4} {
  %0 = arange {end = 1024, start = 0} : tile<i32, [1024]>
  %1 = splat %x : tile<*bf16, [1024]>
  %2 = ptr_add %1, %0 : tile<*bf16, [1024]>
  %v = load %2 : tile<bf16, [1024]>
  %w = cast %v : tile<f32, [1024]>
  %3 = splat %y : tile<*f32, [1024]>
  %4 = ptr_add %3, %0 : tile<*f32, [1024]>
  store %4, %w
  return
}
)";
  EXPECT_EQ(chunkLimitOf(widening), kDefaultChunkLimit);
}

TEST(Layout, ScalarsAreUniform) {
  Layout l = Layout::forType(Type::scalar(DType::F32), 128);
  EXPECT_TRUE(l.uniform);
  EXPECT_EQ(l.numRegs(), 1);
  EXPECT_TRUE(l.roundAlwaysValid(0));
  EXPECT_EQ(l.elementOf(77, 0), 0);
}

// Every element is held by exactly one (thread, register), and ownerOf / regOf invert
// elementOf, for shapes that fill, underfill and unevenly fill the threads.
TEST(Layout, EveryElementHasExactlyOneOwner) {
  for (int64_t T : {32, 64, 128, 256}) {
    for (int64_t n : {1, 2, 7, 31, 32, 33, 96, 100, 128, 130, 255, 256, 1000, 1024, 4100}) {
      Layout l = Layout::forElements(n, T);
      std::set<int64_t> seen;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < l.numRegs(); ++r) {
          int64_t e = l.elementOf(t, r);
          if (e < 0) {
            EXPECT_FALSE(l.roundAlwaysValid(r / l.vec)) << n << " " << T;
            continue;
          }
          EXPECT_TRUE(seen.insert(e).second) << "element " << e << " owned twice";
          EXPECT_EQ(l.ownerOf(e), t);
          EXPECT_EQ(l.regOf(e), r);
        }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), n) << n << " elements, " << T << " threads";
    }
  }
}

TEST(Layout, ChunksAreContiguousAndAligned) {
  Layout l = Layout::forElements(2048, 128); // vec 4, two rounds
  ASSERT_EQ(l.vec, 4);
  ASSERT_EQ(l.numRounds(), 4);
  for (int64_t r = 0; r < l.numRegs(); r += l.vec) {
    int64_t e0 = l.elementOf(5, r);
    EXPECT_EQ(e0 % 4, 0);
    for (int64_t j = 1; j < l.vec; ++j)
      EXPECT_EQ(l.elementOf(5, r + j), e0 + j);
  }
}

TEST(Layout, HelpersOnIndicesAndPowersOfTwo) {
  EXPECT_EQ(rowMajorStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(unravelIndex(23, {2, 3, 4}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(nextPowerOf2(1), 1);
  EXPECT_EQ(nextPowerOf2(24), 32);
  EXPECT_EQ(prevPowerOf2(24), 16);
  EXPECT_EQ(largestPow2Divisor(24, 1 << 20), 8);
  EXPECT_EQ(largestPow2Divisor(0, 64), 64);
}

// Segments of a line split cover the line exactly once and are never empty.
TEST(LineSplit, SegmentsPartitionEachLine) {
  for (int64_t T : {32, 128, 1024})
    for (int64_t lines : {1, 3, 8, 64, 200, 5000})
      for (int64_t len : {1, 2, 5, 64, 1000}) {
        LineSplit s = LineSplit::make(lines, len, T);
        EXPECT_GE(s.group, 1);
        EXPECT_EQ(s.group & (s.group - 1), 0);
        EXPECT_LE(s.group, len);
        if (lines < T)
          EXPECT_LE(lines * s.group, T);
        else
          EXPECT_EQ(s.group, 1);
        int64_t covered = 0;
        for (int64_t g = 0; g < s.group; ++g) {
          EXPECT_LT(s.segmentBegin(g), s.segmentEnd(g));
          EXPECT_EQ(s.segmentBegin(g), covered);
          covered = s.segmentEnd(g);
        }
        EXPECT_EQ(covered, len);
      }
}

TEST(SharedMemory, AreasAreAlignedAndBackToBack) {
  ScratchPlan p = layoutAreas({4, 100, 16, 0, 8});
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 16, 128, 144, 144}));
  EXPECT_EQ(p.totalBytes, 160);
  EXPECT_EQ(sharedElementBytes(Type::scalar(DType::Bool)), 1);
  EXPECT_EQ(sharedElementBytes(Type::scalar(DType::BF16)), 4); // kept as f32
  EXPECT_EQ(sharedElementBytes(Type::ptr(DType::F16)), 8);
}

} // namespace
} // namespace kiln::codegen
