//===- SplitCostModelTest.cpp - How many segments a reduced range gets ----===//
#include "ir/transforms/SplitCostModel.h"

#include <gtest/gtest.h>

using namespace kiln::ir;

TEST(SplitCostModel, UnknownGridStaysOneSegment) {
  SegmentChoice c = chooseSegments({std::nullopt, 132, std::nullopt});
  EXPECT_EQ(c.segments, 1);
  EXPECT_NE(c.why.find("not known"), std::string::npos) << c.why;
}

TEST(SplitCostModel, AGridThatFillsTwoWavesStaysOneSegment) {
  EXPECT_EQ(chooseSegments({264, 132, std::nullopt}).segments, 1);
  EXPECT_EQ(chooseSegments({100000, 132, 4096}).segments, 1);
}

TEST(SplitCostModel, FlashDecodingSplitsToTwoWaves) {
  // 8 batches x 32 heads on 132 SMs: 256 programs, 8 short of two waves.
  SegmentChoice c = chooseSegments({256, 132, std::nullopt});
  EXPECT_EQ(c.segments, 2);
  EXPECT_GE(256 * c.segments, 2 * 132);
  EXPECT_NE(c.why.find("256 programs"), std::string::npos) << c.why;
  // One program per head of a single sequence: many segments.
  EXPECT_EQ(chooseSegments({32, 132, std::nullopt}).segments, 9);
  EXPECT_EQ(chooseSegments({1, 132, std::nullopt}).segments, 264);
}

TEST(SplitCostModel, ASegmentKeepsFourBlocksOfAKnownRange) {
  EXPECT_EQ(chooseSegments({32, 132, 20}).segments, 5);
  EXPECT_EQ(chooseSegments({32, 132, 512}).segments, 9);
  SegmentChoice tooShort = chooseSegments({32, 132, 7});
  EXPECT_EQ(tooShort.segments, 1);
  EXPECT_NE(tooShort.why.find("too short"), std::string::npos) << tooShort.why;
}

TEST(SplitCostModel, NeverMoreThanTheMostSegments) {
  EXPECT_EQ(chooseSegments({1, 100000, std::nullopt}).segments, kMaxSegments);
}

TEST(SplitCostModel, ProcessorsPerTarget) {
  EXPECT_EQ(processorsOf("sm_80"), 108);
  EXPECT_EQ(processorsOf("sm_90"), 132);
  EXPECT_EQ(processorsOf("sm_90a"), 132);
  EXPECT_EQ(processorsOf("spirv64"), 64);
  EXPECT_EQ(processorsOf("something else"), kDefaultProcessors);
}
