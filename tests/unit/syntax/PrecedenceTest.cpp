//===- PrecedenceTest.cpp - Operator precedence and associativity ---------===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

using namespace kiln::test;

TEST(Precedence, ArithmeticBindsTighterThanAdditive) {
  EXPECT_EQ(parseExprSexpr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(parseExprSexpr("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(parseExprSexpr("a - b / c % d"), "(- a (% (/ b c) d))");
}

TEST(Precedence, ComparisonsAndLogic) {
  EXPECT_EQ(parseExprSexpr("a < b && c"), "(&& (< a b) c)");
  EXPECT_EQ(parseExprSexpr("a || b && c"), "(|| a (&& b c))");
  EXPECT_EQ(parseExprSexpr("a == b || c != d"), "(|| (== a b) (!= c d))");
  EXPECT_EQ(parseExprSexpr("a + 1 <= b * 2"), "(<= (+ a 1) (* b 2))");
}

TEST(Precedence, BitwiseBindsTighterThanComparison) {
  // Rust's order, not C's: `x & 1 == 0` tests the low bit.
  EXPECT_EQ(parseExprSexpr("x & 1 == 0"), "(== (& x 1) 0)");
  EXPECT_EQ(parseExprSexpr("a | b ^ c & d"), "(| a (^ b (& c d)))");
  EXPECT_EQ(parseExprSexpr("a & b << 2"), "(& a (<< b 2))");
  EXPECT_EQ(parseExprSexpr("a << 1 + b"), "(<< a (+ 1 b))");
  EXPECT_EQ(parseExprSexpr("a >> b >= c"), "(>= (>> a b) c)");
  EXPECT_EQ(parseExprSexpr("a | b < c | d"), "(< (| a b) (| c d))");
}

TEST(Precedence, UnaryAndPostfix) {
  EXPECT_EQ(parseExprSexpr("-a.b()"), "(neg (. a b))");
  EXPECT_EQ(parseExprSexpr("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(parseExprSexpr("!a && b"), "(&& (not a) b)");
  EXPECT_EQ(parseExprSexpr("~x[:, None]"), "(bitnot (index x : None))");
  EXPECT_EQ(parseExprSexpr("- - +x"), "(neg (neg (pos x)))");
  EXPECT_EQ(parseExprSexpr("a - -b"), "(- a (neg b))");
  EXPECT_EQ(parseExprSexpr("-(a + b)"), "(neg (+ a b))");
  EXPECT_EQ(parseExprSexpr("f(x).to(f32) / y"), "(/ (. (call f x) to f32) y)");
}

TEST(Precedence, AllBinaryOperatorsAreLeftAssociative) {
  for (const char *op : {"*", "/", "%", "+", "-", "<<", ">>", "&", "^", "|", "==", "!=", "<",
                         "<=", ">", ">=", "&&", "||"}) {
    std::string s(op);
    EXPECT_EQ(parseExprSexpr("a " + s + " b " + s + " c"), "(" + s + " (" + s + " a b) c)") << op;
  }
}

TEST(Precedence, ParenthesesOverride) {
  EXPECT_EQ(parseExprSexpr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(parseExprSexpr("a - (b - c)"), "(- a (- b c))");
  EXPECT_EQ(parseExprSexpr("(x & 1) == 0"), "(== (& x 1) 0)");
}

TEST(Precedence, LongChainsAreLeftDeep) {
  std::string expr = "x0";
  std::string expected = "x0";
  for (int i = 1; i < 300; ++i) {
    expr += " + x" + std::to_string(i);
    expected = "(+ " + expected + " x" + std::to_string(i) + ")";
  }
  EXPECT_EQ(parseExprSexpr(expr), expected);
}

// `**` and the conditional group to the right, as in Python; `**` binds tighter than a
// prefix operator on its left and looser than one on its right.
TEST(Precedence, PowerGroupsToTheRight) {
  EXPECT_EQ(parseExprSexpr("-x ** 2"), "(neg (** x 2))");
  EXPECT_EQ(parseExprSexpr("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(parseExprSexpr("2 ** -n"), "(** 2 (neg n))");
  EXPECT_EQ(parseExprSexpr("a * b ** 2"), "(* a (** b 2))");
  EXPECT_EQ(parseExprSexpr("x.y() ** 2"), "(** (. x y) 2)");
}

TEST(Precedence, ConditionalIsLoosest) {
  EXPECT_EQ(parseExprSexpr("a + 1 if c && d else b"), "(if (&& c d) (+ a 1) b)");
  EXPECT_EQ(parseExprSexpr("a if c else b if d else e"), "(if c a (if d b e))");
  EXPECT_EQ(parseExprSexpr("(a if c else b) + 1"), "(+ (if c a b) 1)");
}
