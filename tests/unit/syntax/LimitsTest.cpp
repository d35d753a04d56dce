//===- LimitsTest.cpp - Hostile input ends in a coded error, fast ---------===//
//
// Binary data, bad encodings, huge files and pathological nesting must each produce one
// clean diagnostic, quickly, and never crash or exhaust the stack.
//
//===----------------------------------------------------------------------===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

#include <ctime>
#include <random>

using namespace kiln;
using namespace kiln::test;

namespace {
double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Parses and checks the work took less than `seconds` of CPU time (the parser runs on a
/// thread of its own; CPU time, unlike wall time, does not depend on the machine's load).
Parsed timedParse(const std::string &text, double seconds, const ParseLimits &limits = {}) {
  double start = processCpuSeconds();
  Parsed p = parseText(text, limits);
  double took = processCpuSeconds() - start;
  EXPECT_LT(took, seconds) << "parsing took " << took << " s of CPU time";
  return p;
}

std::string repeat(const std::string &s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    out += s;
  return out;
}
} // namespace

TEST(Limits, NulByteIsInvalidEncoding) {
  Parsed p = parseText(std::string("fn f() {\n  let x = 1;\n  l") + '\0' + "et y = 2;\n}");
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(), "E0002 3:4 the file contains a NUL byte; Kiln sources are UTF-8 text");
}

static const char *kNotACharacter = "invalid UTF-8: the bytes starting with ";
static const char *kNoValidCharacter = " do not encode a valid character";

TEST(Limits, InvalidUtf8IsReportedAtItsFirstByte) {
  struct Case {
    std::string bytes;
    std::string message;
  } cases[] = {
      {"\xFF", "invalid UTF-8: byte 0xFF cannot start a character"},
      {"\x80", "invalid UTF-8: byte 0x80 cannot start a character"},
      {"\xC3(", "invalid UTF-8: the character starting with byte 0xC3 is cut short"},
      {"\xE2\x82", "invalid UTF-8: the character starting with byte 0xE2 is cut short"},
      {"\xC0\xAF", "invalid UTF-8: byte 0xC0 cannot start a character"},                // overlong
      {"\xE0\x80\xAF", kNotACharacter + std::string("0xE0") + kNoValidCharacter},      // overlong
      {"\xED\xA0\x80", kNotACharacter + std::string("0xED") + kNoValidCharacter},      // surrogate
      {"\xF4\x90\x80\x80", kNotACharacter + std::string("0xF4") + kNoValidCharacter}, // > U+10FFFF
  };
  for (const Case &c : cases) {
    // Inside a comment, where any valid UTF-8 would be fine.
    Parsed p = parseText("fn f() {}\n// ok é ok " + c.bytes + "\n");
    ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
    EXPECT_EQ(p.diag(), "E0002 2:13 " + c.message);
    EXPECT_FALSE(p.ok());
  }
  // Valid multi-byte characters in comments and strings are fine.
  Parsed good = parseText("// \xF0\x9F\x94\xA5 \xE2\x82\xAC\nfn f() { print(\"\xE2\x82\xAC\"); }");
  EXPECT_TRUE(good.ok()) << good.allDiags();
}

TEST(Limits, BinaryInput) {
  std::mt19937 rng(1234);
  std::string bytes(4096, '\0');
  for (char &c : bytes)
    c = static_cast<char>(rng() & 0xFF);
  bytes[0] = 'f'; // the first bad byte comes later
  Parsed p = timedParse(bytes, 2.0);
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diags[0].code, DiagCode::InvalidEncoding);
  EXPECT_FALSE(p.ok());
}

TEST(Limits, FileSizeLimit) {
  ParseLimits small;
  small.maxBytes = 64;
  Parsed p = parseText(std::string(65, ' '), small);
  ASSERT_EQ(p.diags.size(), 1u);
  EXPECT_EQ(p.diag(), "E0003 1:1 the file is 65 bytes; the limit is 64 bytes");
  EXPECT_TRUE(parseText(std::string(64, ' '), small).ok());

  // The default limit (16 MiB) is checked before anything reads the text.
  Parsed huge = timedParse(std::string((16u << 20) + 1, '('), 2.0);
  ASSERT_EQ(huge.diags.size(), 1u);
  EXPECT_EQ(huge.diags[0].code, DiagCode::InputTooLarge);
}

TEST(Limits, TokenLimit) {
  ParseLimits limits;
  limits.maxTokens = 20;
  // fn f ( ) { x ; ... }: 5 tokens, then 2 per statement.
  Parsed ok = parseText("fn f() {" + repeat("x;", 7) + "}", limits); // 20 tokens
  EXPECT_TRUE(ok.ok()) << ok.allDiags();
  Parsed p = parseText("fn f() {" + repeat("x;", 8) + "}", limits); // 22 tokens
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(), "E0003 1:24 the file has more than 20 tokens");
}

TEST(Limits, HundredThousandNestedParentheses) {
  std::string text = "fn f() { let x = " + repeat("(", 100000) + "a" + repeat(")", 100000) + "; }";
  Parsed p = timedParse(text, 2.0);
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  // `{` is level 1, so the 200th '(' (column 18 + 199) is the first beyond 200 levels.
  EXPECT_EQ(p.diag(), "E0004 1:217 brackets, blocks and prefix operators nest more than 200 "
                      "levels deep here");
}

TEST(Limits, NestingWithinTheLimitParses) {
  std::string text = "fn f() { let x = " + repeat("(", 199) + "a" + repeat(")", 199) + "; }";
  Parsed p = parseText(text);
  EXPECT_TRUE(p.ok()) << p.allDiags();
  std::string calls = "fn f() { let x = " + repeat("g(", 150) + "a" + repeat(")", 150) + "; }";
  EXPECT_TRUE(parseText(calls).ok());
}

TEST(Limits, HundredThousandPrefixOperators) {
  for (const char *op : {"-", "!", "~", "+", "- "}) {
    std::string text = "fn f() { let x = " + repeat(op, 100000) + "a; }";
    Parsed p = timedParse(text, 2.0);
    ASSERT_EQ(p.diags.size(), 1u) << op << "\n" << p.allDiags();
    EXPECT_EQ(p.diags[0].code, DiagCode::NestingTooDeep) << op;
  }
  Parsed ptr = timedParse("fn f(x: " + repeat("*", 100000) + "f32) {}", 2.0);
  ASSERT_EQ(ptr.diags.size(), 1u);
  EXPECT_EQ(ptr.diags[0].code, DiagCode::NestingTooDeep);
}

TEST(Limits, HundredThousandNestedBlocks) {
  Parsed p = timedParse("fn f() " + repeat("{", 100000) + repeat("}", 100000), 2.0);
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diags[0].code, DiagCode::NestingTooDeep);
}

TEST(Limits, MillionTermSum) {
  std::string text = "fn f() { let x = a" + repeat(" + a", 999999) + "; }";
  Parsed p = timedParse(text, 3.0);
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  // The 1000th '+' would make the tree 1001 levels deep; it sits at 20 + 4 * 999.
  EXPECT_EQ(p.diag(), "E0004 1:4016 this expression or statement nests more than 1000 levels deep");
}

TEST(Limits, LongChainsOfEveryKind) {
  struct Case {
    std::string text;
  } cases[] = {
      {"fn f() { let x = a" + repeat(" * a", 5000) + "; }"},
      {"fn f() { let x = a" + repeat(" && a", 5000) + "; }"},
      {"fn f() { let x = a" + repeat(".f()", 5000) + "; }"},
      {"fn f() { let x = a" + repeat("[:]", 5000) + "; }"},
      {"fn f() { if a {}" + repeat(" else if a {}", 5000) + " }"},
  };
  for (const Case &c : cases) {
    Parsed p = timedParse(c.text, 2.0);
    ASSERT_EQ(p.diags.size(), 1u) << c.text.substr(0, 40) << "\n" << p.allDiags();
    EXPECT_EQ(p.diags[0].code, DiagCode::NestingTooDeep) << c.text.substr(0, 40);
  }
}

TEST(Limits, TreeDepthIsCheckedWhereTheScanCannotSee) {
  // Every level of parentheses holds a chain of 9 additions: no single run reaches the
  // depth limit, but together they build a tree deeper than 1000 levels.
  std::string inner = "a";
  for (int level = 0; level < 150; ++level)
    inner = "(" + inner + repeat(" + a", 9) + ")";
  Parsed p = timedParse("fn f() { let x = " + inner + "; }", 2.0);
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(0).substr(0, 5), "E0004");
  EXPECT_NE(p.diags[0].message.find("1000 levels"), std::string::npos);

  // 100 levels of 9 stay well inside the limit.
  inner = "a";
  for (int level = 0; level < 100; ++level)
    inner = "(" + inner + repeat(" + a", 9) + ")";
  EXPECT_TRUE(parseText("fn f() { let x = " + inner + "; }").ok());
}

TEST(Limits, ChainJustBelowTheDepthLimitParses) {
  // let (1) + block (1) + a 997-operator chain (998) = 1000 levels.
  Parsed p = parseText("fn f() { let x = a" + repeat(" + a", 997) + "; }");
  EXPECT_TRUE(p.ok()) << p.allDiags();
  Parsed q = parseText("fn f() { let x = a" + repeat(" + a", 998) + "; }");
  ASSERT_EQ(q.diags.size(), 1u);
  EXPECT_EQ(q.diags[0].code, DiagCode::NestingTooDeep);
}

TEST(Limits, ManyErrorsStayBounded) {
  // Unbalanced closers and stray operators everywhere: many errors, capped by the limit.
  Parsed p = timedParse(repeat(") ] } + ; ", 20000), 3.0);
  EXPECT_FALSE(p.ok());
  EXPECT_LE(p.diags.size(), 50u);
  EXPECT_GE(p.diags.size(), 1u);
}
