//===- LocationsTest.cpp - Every node carries its first token's line:col --===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace kiln;
using namespace kiln::test;

static const ast::Stmt *firstStmt(const Parsed &p) {
  return findFunction(*p.module, "t")->body->body.at(0).get();
}

TEST(Locations, BinaryNodesStartAtTheirLeftOperand) {
  Parsed p = parseText("fn t() {\n  let v = (a + b) * c;\n}");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  auto *let = ast::cast<ast::BindingStmt>(firstStmt(p));
  EXPECT_EQ(let->loc, (Location{0, 2, 3}));
  EXPECT_EQ(let->nameLocs.at(0), (Location{0, 2, 7}));
  auto *mul = ast::cast<ast::BinaryExpr>(let->init.get());
  EXPECT_EQ(mul->loc, (Location{0, 2, 11}));   // the '('
  EXPECT_EQ(mul->opLoc, (Location{0, 2, 19})); // the '*'
  auto *add = ast::cast<ast::BinaryExpr>(mul->lhs.get());
  EXPECT_EQ(add->loc, (Location{0, 2, 12}));
  EXPECT_EQ(add->opLoc, (Location{0, 2, 14}));
  EXPECT_EQ(mul->rhs->loc, (Location{0, 2, 21}));
}

TEST(Locations, CallsMethodsIndexAndArgs) {
  Parsed p = parseText("fn t() {\n  let v = foo(1, k = x.to(bf16))[:, None];\n}");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  auto *let = ast::cast<ast::BindingStmt>(firstStmt(p));
  auto *index = ast::cast<ast::IndexExpr>(let->init.get());
  EXPECT_EQ(index->loc, (Location{0, 2, 11}));
  EXPECT_EQ(index->items.at(0).loc, (Location{0, 2, 34}));
  EXPECT_EQ(index->items.at(1).loc, (Location{0, 2, 37}));
  auto *call = ast::cast<ast::CallExpr>(index->base.get());
  EXPECT_EQ(call->calleeLoc, (Location{0, 2, 11}));
  EXPECT_EQ(call->args.at(0).loc, (Location{0, 2, 15}));
  EXPECT_EQ(call->args.at(1).loc, (Location{0, 2, 18})); // keyword args start at the name
  auto *method = ast::cast<ast::MethodExpr>(call->args.at(1).value.get());
  EXPECT_EQ(method->loc, (Location{0, 2, 22}));
  EXPECT_EQ(method->methodLoc, (Location{0, 2, 24}));
}

TEST(Locations, ColumnsCountBytesAfterUtf8AndTabs) {
  // "é" is two bytes and the tab one, so `x` is at byte column 19, not character 18.
  Parsed p = parseText("fn t() {\n\tprint(\"é\", x);\n}");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  auto *stmt = ast::cast<ast::ExprStmt>(firstStmt(p));
  auto *call = ast::cast<ast::CallExpr>(stmt->expr.get());
  EXPECT_EQ(call->loc, (Location{0, 2, 2}));
  EXPECT_EQ(call->args.at(1).value->loc, (Location{0, 2, 14}));
  EXPECT_EQ(ast::cast<ast::StringLit>(call->args.at(0).value.get())->value, "é");
}

TEST(Locations, CrLfLineEnds) {
  Parsed p = parseText("fn t() {\r\n  let v = 1;\r\n  let w = 2;\r\n}\r\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  const auto &body = findFunction(*p.module, "t")->body->body;
  EXPECT_EQ(body.at(1)->loc, (Location{0, 3, 3}));
}

TEST(Locations, StatementsAndItems) {
  Parsed p = parseText("@num_warps(4)\nkernel k() {\n  for i in range(4) {\n    x += 1;\n  }\n}\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  const ast::FunctionItem *k = findFunction(*p.module, "k");
  EXPECT_EQ(k->loc, (Location{0, 1, 1})); // items start at their first attribute
  EXPECT_EQ(k->nameLoc, (Location{0, 2, 8}));
  EXPECT_EQ(k->attributes.at(0).loc, (Location{0, 1, 1}));
  auto *loop = ast::cast<ast::ForStmt>(k->body->body.at(0).get());
  EXPECT_EQ(loop->loc, (Location{0, 3, 3}));
  EXPECT_EQ(loop->body->loc, (Location{0, 3, 21}));
  EXPECT_EQ(loop->body->closeLoc, (Location{0, 5, 3}));
  auto *assign = ast::cast<ast::AssignStmt>(loop->body->body.at(0).get());
  EXPECT_EQ(assign->loc, (Location{0, 4, 5}));
  EXPECT_EQ(assign->value->loc, (Location{0, 4, 10}));
}

TEST(Locations, FileIndexIsCarried) {
  SourceManager sm;
  sm.addBuffer("other.kiln", "");
  uint32_t file = sm.addBuffer("second.kiln", "fn f() { let x = 1; }");
  std::ostringstream out;
  DiagnosticEngine diags(sm, out);
  auto m = parseFile(sm, file, diags);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->file, file);
  EXPECT_EQ(m->items.at(0)->loc.file, file);
  auto *let = ast::cast<ast::BindingStmt>(
      ast::cast<ast::FunctionItem>(m->items.at(0).get())->body->body.at(0).get());
  EXPECT_EQ(let->init->loc, (Location{file, 1, 18}));
}
