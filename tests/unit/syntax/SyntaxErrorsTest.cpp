//===- SyntaxErrorsTest.cpp - Coded, located, readable syntax errors ------===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

// Each case: the source, then the expected diagnostics as "CODE line:col message".
static void expectDiags(const std::string &text, const std::vector<std::string> &expected) {
  Parsed p = parseText(text);
  EXPECT_FALSE(p.ok()) << text;
  std::vector<std::string> got;
  for (size_t i = 0; i < p.diags.size(); ++i)
    got.push_back(p.diag(i));
  EXPECT_EQ(got, expected) << text;
}

// A missing ';' is reported right after the token it should follow, where it goes.
TEST(SyntaxErrors, MissingSemicolon) {
  expectDiags("fn f() {\n  let x = a + b\n  let y = 2;\n}",
              {"E0006 2:16 expected ';' after expression"});
  // The next line's `if` would read as a conditional `a + b if ...` missing its `else`:
  // the error is still the ';', and the if statement causes no more.
  expectDiags("fn f() {\n  let x = a + b\n  if x > 0 {\n    g();\n  }\n}",
              {"E0006 2:16 expected ';' after expression"});
  // `//` is a comment: a floor division that ends in ';' is pointed at.
  expectDiags("fn f() {\n  let x = a // 2;\n  g();\n}",
              {"E0006 2:13 '//' starts a comment in Kiln, so the expression before it has no ';'"});
}

TEST(SyntaxErrors, UnexpectedTokenNamesWhatWasExpected) {
  expectDiags("fn f() { let x = ; }", {"E0006 1:18 expected expression after '=', found ';'"});
  expectDiags("fn f() { let x = 1 + ; }",
              {"E0006 1:22 expected expression after '+', found ';'"});
  expectDiags("fn f() { let 5 = 1; }", {"E0006 1:14 unexpected '5'; expected '(' or identifier"});
  expectDiags("fn f() { let x = (1, 2; }", {"E0006 1:23 unexpected ';'; expected ')' or ','"});
  expectDiags("fn f() { x[:, foo]; }",
              {"E0006 1:15 unexpected 'foo'; expected one of 'None', ']', ':'"});
  expectDiags("fn f() { if a {} else x }", {"E0006 1:23 unexpected 'x'; expected 'if' or '{'"});
  expectDiags("fn f(x: ) {}", {"E0006 1:9 expected type after ':', found ')'"});
  expectDiags("fn f() { x y; }", {"E0006 1:11 expected ';' after expression, found 'y'"});
  // Recovery conjures the '{', which leaves the body open at the end of the file; that
  // consequence, three tokens later, is not reported again.
  expectDiags("fn f() { if x return; }", {"E0006 1:15 expected '{' after expression"});
}

TEST(SyntaxErrors, ItemLevel) {
  Parsed p = parseText("let q = 1;");
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(), "E0006 1:1 unexpected 'let'; expected item or end of file");
  EXPECT_NE(p.diags[0].hint.find("fn, kernel and graph"), std::string::npos);
  expectDiags("@num_warps(4) const X = 1;",
              {"E0006 1:15 unexpected 'const'; expected one of 'fn', 'kernel', 'graph', '@'"});
  expectDiags("kernel", {"E0006 1:7 expected identifier after 'kernel', found end of file"});
  expectDiags("import foo;", {"E0006 1:8 expected string after 'import', found 'foo'"});
}

TEST(SyntaxErrors, MissingClosingBracketPointsAtTheOpeningOne) {
  Parsed p = parseText("fn f() {\n  foo(1,\n      2;\n}");
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(), "E0006 3:8 expected ')' after expression");
  ASSERT_EQ(p.diags[0].notes.size(), 1u);
  EXPECT_EQ(p.diags[0].notes[0].loc, (Location{0, 2, 6}));
  EXPECT_EQ(p.diags[0].notes[0].message, "to close this '('");
}

TEST(SyntaxErrors, SeveralErrorsInOneFile) {
  Parsed p = parseText("fn a() { let x = ; }\n"
                       "fn b() { let y = 1 }\n"
                       "fn c(p q) {}\n"
                       "fn d() { ok(); }\n");
  EXPECT_FALSE(p.ok());
  ASSERT_EQ(p.diags.size(), 3u) << p.allDiags();
  EXPECT_EQ(p.diag(0), "E0006 1:18 expected expression after '=', found ';'");
  EXPECT_EQ(p.diag(1), "E0006 2:19 expected ';' after expression");
  EXPECT_EQ(p.diag(2), "E0006 3:8 expected ')' after 'p', found 'q'");
}

TEST(SyntaxErrors, StopsAtTheErrorLimit) {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "fn f" + std::to_string(i) + "() { let = 1; }\n";
  Parsed all = parseText(text);
  EXPECT_EQ(all.diags.size(), 40u);
  Parsed limited = parseText(text, {}, 5);
  EXPECT_EQ(limited.diags.size(), 5u);
  EXPECT_FALSE(limited.ok());
}

TEST(SyntaxErrors, LexicalErrorsAreReportedOnce) {
  expectDiags("fn f() { let x = 3 # 4; }", {"E0005 1:20 unexpected character '#'"});
  expectDiags("fn f() { let é = 1; }", {"E0005 1:14 unexpected character 'é' (U+00E9)"});
  expectDiags("fn f() { let x = 1; \x01 }", {"E0005 1:21 unexpected control character U+0001"});
  expectDiags("fn f() { print('a'); }", {"E0005 1:16 string literals use double quotes"});
  expectDiags("fn f() { print(\"a\\qb\"); }", {"E0005 1:18 unknown escape sequence '\\q'"});
  // The string ends at the line's end, so the parser still sees `print("abc)`.
  expectDiags("fn f() { print(\"abc\n); }", {"E0005 1:16 unterminated string literal"});
  expectDiags("fn f() { }\n/* open", {"E0005 2:1 unterminated block comment"});
}

TEST(SyntaxErrors, BadNumbers) {
  expectDiags("const A = 12abc;", {"E0007 1:11 malformed number '12abc'"});
  expectDiags("const A = 0x;", {"E0007 1:11 malformed number '0x'"});
  expectDiags("const A = 1__0;", {"E0007 1:11 malformed number '1__0'"});
  expectDiags("const A = 18446744073709551616;",
              {"E0007 1:11 integer literal '18446744073709551616' does not fit in 64 bits"});
  expectDiags("const A = 1e999;",
              {"E0007 1:11 float literal '1e999' is too large for a 64-bit float"});
  Parsed ok = parseText("const A = 18446744073709551615;");
  ASSERT_TRUE(ok.ok()) << ok.allDiags();
  auto *item = ast::cast<ast::ConstItem>(ok.module->items[0].get());
  EXPECT_EQ(ast::cast<ast::IntLit>(item->value.get())->value, UINT64_MAX);
}

TEST(SyntaxErrors, RulesCheckedByTheBuilder) {
  expectDiags("fn f() { for i in foo(1) {} }",
              {"E0006 1:19 expected 'range', 'static_range' or 'blocks' after 'in', found 'foo'"});
  expectDiags("fn f() { for i in range(1, 2, 3, 4) {} }",
              {"E0006 1:34 'range' takes 1 to 3 bounds: (end), (start, end) or (start, end, "
               "step); found 4"});
  expectDiags("fn f() { for k in blocks(m) {} }",
              {"E0006 1:19 'blocks' takes a block mask and a row: blocks(mask, row); found 1 "
               "argument"});
  expectDiags("fn f() { f(x) = 1; }", {"E0006 1:10 the target of '=' must be a variable name"});
  expectDiags("fn f(x: foo<f32, [4]>) {}",
              {"E0006 1:9 unknown type 'foo<...>'; the generic types are 'tile<T, [d0, d1, "
               "...]>' and 'block_mask<BM, BN>'"});
  expectDiags("fn f(y: tile<f32, 4>) {}",
              {"E0006 1:9 the shape of a tile type is a bracketed list: 'tile<T, [d0, d1, ...]>'"});
  expectDiags("graph g() { launch k(1); }",
              {"E0006 1:20 'launch' needs a grid: launch k[(g0, ...)](args);"});
}

TEST(SyntaxErrors, FollowOnErrorsAreDropped) {
  // ANTLR's recovery stumbles again right after these errors; one report each.
  expectDiags("fn f() { x[:, foo]; }",
              {"E0006 1:15 unexpected 'foo'; expected one of 'None', ']', ':'"});
  expectDiags("fn f() { if a {} else x }", {"E0006 1:23 unexpected 'x'; expected 'if' or '{'"});
}

TEST(SyntaxErrors, BraceAtStatementStart) {
  // A block, unless it reads as a dictionary (`{key: ...}` or `{};`).
  EXPECT_EQ(printBody("{a: 1};\n{}\n{};"), "ExprStmt 2:1\n"
                                          "  DictExpr 2:1\n"
                                          "    Entry a 2:2\n"
                                          "      IntLit 1 2:5\n"
                                          "BlockStmt 3:1\n"
                                          "ExprStmt 4:1\n"
                                          "  DictExpr 4:1\n");
}

TEST(SyntaxErrors, HintsForSyntaxFromElsewhere) {
  Parsed p = parseText("fn f() { let v = x[1]; }");
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag(), "E0006 1:20 unexpected '1'; expected 'None' or ':'");
  EXPECT_NE(p.diags[0].hint.find("load()"), std::string::npos) << p.diags[0].hint;

  // A CUDA-style launch with the grid in parentheses.
  p = parseText("graph g(x: *f32) {\n  launch k(4)(x);\n}");
  ASSERT_EQ(p.diags.size(), 1u) << p.allDiags();
  EXPECT_EQ(p.diag().substr(0, 13), "E0006 2:14 ex") << p.allDiags();
  EXPECT_NE(p.diags[0].hint.find("launch k[(grid,)](args);"), std::string::npos) << p.diags[0].hint;
}
