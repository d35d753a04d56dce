//===- TypeRulesTest.cpp - The promotion and broadcasting tables ----------===//
#include "frontend/TypeRules.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::sema;

namespace {

const DType kAll[] = {DType::Bool,   DType::I8,  DType::I16,  DType::I32, DType::I64,
                      DType::U8,     DType::U16, DType::U32,  DType::U64, DType::F8E4M3,
                      DType::F8E5M2, DType::F16, DType::BF16, DType::F32, DType::F64};

TEST(PromotionTest, EqualDTypesGiveThatDType) {
  for (DType t : kAll)
    EXPECT_EQ(promoteDTypes(t, t), t) << dtypeName(t);
}

TEST(PromotionTest, IsSymmetric) {
  for (DType a : kAll)
    for (DType b : kAll)
      EXPECT_EQ(promoteDTypes(a, b), promoteDTypes(b, a)) << dtypeName(a) << " " << dtypeName(b);
}

TEST(PromotionTest, IntegerWithFloatGivesTheFloat) {
  EXPECT_EQ(promoteDTypes(DType::I32, DType::F16), DType::F16);
  EXPECT_EQ(promoteDTypes(DType::I64, DType::BF16), DType::BF16);
  EXPECT_EQ(promoteDTypes(DType::U8, DType::F32), DType::F32);
  EXPECT_EQ(promoteDTypes(DType::Bool, DType::F8E4M3), DType::F8E4M3);
}

TEST(PromotionTest, TwoFloats) {
  EXPECT_EQ(promoteDTypes(DType::BF16, DType::F32), DType::F32);
  EXPECT_EQ(promoteDTypes(DType::F16, DType::F64), DType::F64);
  EXPECT_EQ(promoteDTypes(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promoteDTypes(DType::F8E4M3, DType::F16), DType::F16);
  EXPECT_EQ(promoteDTypes(DType::F8E5M2, DType::BF16), DType::BF16);
  EXPECT_EQ(promoteDTypes(DType::F8E4M3, DType::F8E5M2), DType::F16);
  EXPECT_EQ(promoteDTypes(DType::F8E5M2, DType::F32), DType::F32);
}

TEST(PromotionTest, TwoIntegers) {
  EXPECT_EQ(promoteDTypes(DType::Bool, DType::I8), DType::I8);
  EXPECT_EQ(promoteDTypes(DType::Bool, DType::U64), DType::U64);
  EXPECT_EQ(promoteDTypes(DType::I8, DType::I32), DType::I32);
  EXPECT_EQ(promoteDTypes(DType::U16, DType::U64), DType::U64);
  // Mixed signedness: C's rule.
  EXPECT_EQ(promoteDTypes(DType::U32, DType::I32), DType::U32);
  EXPECT_EQ(promoteDTypes(DType::U64, DType::I32), DType::U64);
  EXPECT_EQ(promoteDTypes(DType::U8, DType::I32), DType::I32);
  EXPECT_EQ(promoteDTypes(DType::U32, DType::I64), DType::I64);
}

TEST(BroadcastTest, NumpyRules) {
  EXPECT_EQ(broadcastShapes({}, {128}), (Shape{128}));
  EXPECT_EQ(broadcastShapes({128}, {64, 1}), (Shape{64, 128}));
  EXPECT_EQ(broadcastShapes({64, 1}, {1, 32}), (Shape{64, 32}));
  EXPECT_EQ(broadcastShapes({4, 1, 8}, {3, 1}), (Shape{4, 3, 8}));
  EXPECT_EQ(broadcastShapes({7}, {7}), (Shape{7}));
  EXPECT_FALSE(broadcastShapes({128}, {64}).has_value());
  EXPECT_FALSE(broadcastShapes({2, 3}, {3, 2}).has_value());
}

TEST(BroadcastTest, BroadcastsToDoesNotGrowTheTarget) {
  EXPECT_TRUE(broadcastsTo({}, {4, 4}));
  EXPECT_TRUE(broadcastsTo({1, 4}, {4, 4}));
  EXPECT_TRUE(broadcastsTo({4}, {4, 4}));
  EXPECT_FALSE(broadcastsTo({4, 4}, {4}));
  EXPECT_FALSE(broadcastsTo({4, 1}, {1, 4}));
}

TEST(ConversionTest, LosslessMeansPromotionGivesTheTarget) {
  EXPECT_TRUE(isLosslessConversion(DType::I32, DType::F32));
  EXPECT_TRUE(isLosslessConversion(DType::BF16, DType::F32));
  EXPECT_TRUE(isLosslessConversion(DType::I8, DType::I64));
  EXPECT_FALSE(isLosslessConversion(DType::F32, DType::BF16));
  EXPECT_FALSE(isLosslessConversion(DType::F32, DType::I32));
  EXPECT_FALSE(isLosslessConversion(DType::I64, DType::I32));
  EXPECT_FALSE(isLosslessConversion(DType::F16, DType::BF16));
}

TEST(ConversionTest, IntegerRanges) {
  EXPECT_TRUE(intFitsDType(127, false, DType::I8));
  EXPECT_FALSE(intFitsDType(128, false, DType::I8));
  EXPECT_TRUE(intFitsDType(-128, false, DType::I8));
  EXPECT_TRUE(intFitsDType(255, false, DType::U8));
  EXPECT_FALSE(intFitsDType(-1, false, DType::U8));
  EXPECT_FALSE(intFitsDType(2147483648, false, DType::I32));
  EXPECT_TRUE(intFitsDType(-2147483648LL, false, DType::I32));
  EXPECT_TRUE(intFitsDType(4294967295LL, false, DType::U32));
  EXPECT_TRUE(intFitsDType(1, false, DType::Bool));
  EXPECT_FALSE(intFitsDType(2, false, DType::Bool));
  // A u64 pattern above INT64_MAX fits only u64 (and floats).
  EXPECT_TRUE(intFitsDType(-1, true, DType::U64));
  EXPECT_FALSE(intFitsDType(-1, true, DType::I64));
  EXPECT_TRUE(intFitsDType(-1, true, DType::F32));
}

TEST(AccumulatorTest, SumAndDotDTypes) {
  EXPECT_EQ(sumAccumulatorDType(DType::F16), DType::F32);
  EXPECT_EQ(sumAccumulatorDType(DType::BF16), DType::F32);
  EXPECT_EQ(sumAccumulatorDType(DType::F8E5M2), DType::F32);
  EXPECT_EQ(sumAccumulatorDType(DType::Bool), DType::I32);
  EXPECT_EQ(sumAccumulatorDType(DType::I16), DType::I32);
  EXPECT_EQ(sumAccumulatorDType(DType::U8), DType::U32);
  EXPECT_EQ(sumAccumulatorDType(DType::F64), DType::F64);
  EXPECT_EQ(sumAccumulatorDType(DType::I64), DType::I64);
  EXPECT_EQ(dotResultDType(DType::BF16), DType::F32);
  EXPECT_EQ(dotResultDType(DType::F8E4M3), DType::F32);
  EXPECT_EQ(dotResultDType(DType::I8), DType::I32);
  EXPECT_FALSE(dotResultDType(DType::F64).has_value());
  EXPECT_FALSE(dotResultDType(DType::Bool).has_value());
}

TEST(ShapeStringTest, Formats) {
  EXPECT_EQ(shapeString({}), "[]");
  EXPECT_EQ(shapeString({64, 128}), "[64, 128]");
}

} // namespace
