//===- TypeTest.cpp - DTypes and Types: names, widths, spelling -----------===//
#include "ir/Type.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

TEST(DType, NamesRoundTripAndUnknownNamesFail) {
  const DType all[] = {DType::Bool, DType::I8,     DType::I16,    DType::I32, DType::I64,
                       DType::U8,   DType::U16,    DType::U32,    DType::U64, DType::F8E4M3,
                       DType::F8E5M2, DType::F16,  DType::BF16,   DType::F32, DType::F64};
  for (DType t : all)
    EXPECT_EQ(parseDType(dtypeName(t)), t) << dtypeName(t);
  EXPECT_EQ(dtypeName(DType::BF16), "bf16");
  EXPECT_FALSE(parseDType("f31"));
  EXPECT_FALSE(parseDType(""));
  EXPECT_FALSE(parseDType("F32"));
}

TEST(DType, WidthsAndClasses) {
  EXPECT_EQ(dtypeBits(DType::Bool), 1u);
  EXPECT_EQ(dtypeBytes(DType::Bool), 1u);
  EXPECT_EQ(dtypeBits(DType::F8E5M2), 8u);
  EXPECT_EQ(dtypeBytes(DType::BF16), 2u);
  EXPECT_EQ(dtypeBytes(DType::U64), 8u);
  EXPECT_TRUE(isFloat(DType::F8E4M3));
  EXPECT_FALSE(isFloat(DType::I32));
  EXPECT_TRUE(isInteger(DType::U8));
  EXPECT_FALSE(isInteger(DType::Bool));
  EXPECT_FALSE(isInteger(DType::F16));
  EXPECT_TRUE(isSigned(DType::I16));
  EXPECT_TRUE(isSigned(DType::F32));
  EXPECT_FALSE(isSigned(DType::U32));
  EXPECT_FALSE(isSigned(DType::Bool));
  EXPECT_TRUE(isBool(DType::Bool));
}

TEST(Type, Spelling) {
  EXPECT_EQ(Type::scalar(DType::F32).str(), "f32");
  EXPECT_EQ(Type::ptr(DType::BF16).str(), "*bf16");
  EXPECT_EQ(Type::tile(DType::F32, {64, 128}).str(), "tile<f32, [64, 128]>");
  EXPECT_EQ(Type::ptr(DType::F32).withShape({128}).str(), "tile<*f32, [128]>");
  Type t = Type::tile(DType::I8, {2, 3, 4});
  EXPECT_EQ(t.numElements(), 24);
  EXPECT_EQ(t.rank(), 3u);
  EXPECT_EQ(t.element(), Type::scalar(DType::I8));
  EXPECT_EQ(t.withDType(DType::Bool).str(), "tile<bool, [2, 3, 4]>");
}

TEST(Type, ParseInvertsStr) {
  for (Type t : {Type::scalar(DType::Bool), Type::ptr(DType::U64), Type::tile(DType::F16, {1}),
                 Type::ptr(DType::F32).withShape({4, 8}), Type::tile(DType::F8E5M2, {2, 2, 2})}) {
    auto back = parseType(t.str());
    ASSERT_TRUE(back) << t.str();
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(parseType("tile< *f32 ,[ 4 , 2 ] >"), Type::ptr(DType::F32).withShape({4, 2}));
}

TEST(Type, ParseRejectsMalformedText) {
  for (const char *bad : {"", "*", "**f32", "tile<f32>", "tile<f32, []>", "tile<f32, [0]>",
                          "tile<f32, [-2]>", "tile<f32, [4]", "tile<f32, [4]> x", "f32 f32",
                          "tile<q32, [4]>", "tile<f32, [99999999999999999999]>", "tile<f32 [4]>"})
    EXPECT_FALSE(parseType(bad)) << bad;
}

TEST(Type, NumElementsSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({1ll << 40, 1ll << 40}), INT64_MAX);
}

} // namespace
