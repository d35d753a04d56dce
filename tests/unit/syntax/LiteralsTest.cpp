//===- LiteralsTest.cpp - Decoding literal token text ---------------------===//
#include "frontend/Literals.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln::syntax;

TEST(Literals, DecimalAndHexIntegers) {
  uint64_t v = 0;
  ASSERT_EQ(decodeIntLiteral("42", v), NumberStatus::Ok);
  EXPECT_EQ(v, 42u);
  ASSERT_EQ(decodeIntLiteral("0x2A", v), NumberStatus::Ok);
  EXPECT_EQ(v, 42u);
  ASSERT_EQ(decodeIntLiteral("0XfF", v), NumberStatus::Ok);
  EXPECT_EQ(v, 255u);
  ASSERT_EQ(decodeIntLiteral("1_000", v), NumberStatus::Ok);
  EXPECT_EQ(v, 1000u);
  ASSERT_EQ(decodeIntLiteral("0xFFFF_FFFF", v), NumberStatus::Ok);
  EXPECT_EQ(v, 0xFFFFFFFFu);
  ASSERT_EQ(decodeIntLiteral("007", v), NumberStatus::Ok); // decimal, not octal
  EXPECT_EQ(v, 7u);
}

TEST(Literals, IntegerLimits) {
  uint64_t v = 0;
  ASSERT_EQ(decodeIntLiteral("18446744073709551615", v), NumberStatus::Ok);
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(decodeIntLiteral("18446744073709551616", v), NumberStatus::OutOfRange);
  ASSERT_EQ(decodeIntLiteral("0xFFFF_FFFF_FFFF_FFFF", v), NumberStatus::Ok);
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(decodeIntLiteral("0x1_0000_0000_0000_0000", v), NumberStatus::OutOfRange);
  EXPECT_EQ(decodeIntLiteral("99999999999999999999999999", v), NumberStatus::OutOfRange);
}

TEST(Literals, MalformedIntegers) {
  uint64_t v = 0;
  for (const char *bad : {"", "12abc", "0x", "0xG", "1__0", "1_", "_1", "0x_1", "1e5", "12.5"})
    EXPECT_EQ(decodeIntLiteral(bad, v), NumberStatus::Malformed) << bad;
}

TEST(Literals, Floats) {
  double v = 0;
  ASSERT_EQ(decodeFloatLiteral("3.5", v), NumberStatus::Ok);
  EXPECT_EQ(v, 3.5);
  ASSERT_EQ(decodeFloatLiteral("1e-6", v), NumberStatus::Ok);
  EXPECT_EQ(v, 1e-6);
  ASSERT_EQ(decodeFloatLiteral("2.5E+3", v), NumberStatus::Ok);
  EXPECT_EQ(v, 2500.0);
  ASSERT_EQ(decodeFloatLiteral("1_000.000_5", v), NumberStatus::Ok);
  EXPECT_EQ(v, 1000.0005);
  ASSERT_EQ(decodeFloatLiteral("1e-400", v), NumberStatus::Ok); // underflow is 0, as in C
  EXPECT_EQ(v, 0.0);
  EXPECT_EQ(decodeFloatLiteral("1e400", v), NumberStatus::OutOfRange);
  EXPECT_EQ(decodeFloatLiteral("1.8e308", v), NumberStatus::OutOfRange);
  for (const char *bad : {"", "2.", ".5", "1e", "1e+", "1._5", "1.5_", "0x1p3", "1.5.2", "inf"})
    EXPECT_EQ(decodeFloatLiteral(bad, v), NumberStatus::Malformed) << bad;
}

TEST(Literals, Strings) {
  StringDecodeResult r = decodeStringLiteral(R"("a\"b\\c\nd\te")");
  ASSERT_EQ(r.status, StringDecodeResult::Ok);
  EXPECT_EQ(r.value, "a\"b\\c\nd\te");
  r = decodeStringLiteral("\"h\xC3\xA9llo\""); // UTF-8 passes through unchanged
  ASSERT_EQ(r.status, StringDecodeResult::Ok);
  EXPECT_EQ(r.value, "h\xC3\xA9llo");
  EXPECT_EQ(decodeStringLiteral("\"\"").value, "");
}

TEST(Literals, BadStrings) {
  StringDecodeResult r = decodeStringLiteral(R"("ab\qc")");
  EXPECT_EQ(r.status, StringDecodeResult::BadEscape);
  EXPECT_EQ(r.errorOffset, 3u);
  EXPECT_EQ(r.escape, "\\q");
  r = decodeStringLiteral("\"x\\\xC3\xA9\"");
  EXPECT_EQ(r.status, StringDecodeResult::BadEscape);
  EXPECT_EQ(r.escape, "\\\xC3\xA9"); // the whole character after the backslash
  EXPECT_EQ(decodeStringLiteral("\"abc").status, StringDecodeResult::Unterminated);
  EXPECT_EQ(decodeStringLiteral("\"abc\\\"").status, StringDecodeResult::Unterminated);
  EXPECT_EQ(decodeStringLiteral("\"abc\\").status, StringDecodeResult::Unterminated);
}

TEST(Literals, QuoteStringRoundTripsEscapes) {
  EXPECT_EQ(quoteString("a\"b\\c\nd\te"), R"("a\"b\\c\nd\te")");
  EXPECT_EQ(quoteString(std::string("x\x01y", 3)), R"("x\x01y")");
  std::string text = quoteString("tab\tquote\"");
  StringDecodeResult r = decodeStringLiteral(text);
  ASSERT_EQ(r.status, StringDecodeResult::Ok);
  EXPECT_EQ(r.value, "tab\tquote\"");
}
