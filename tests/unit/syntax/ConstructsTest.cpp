//===- ConstructsTest.cpp - Every construct parses into the expected AST --===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln;
using namespace kiln::test;

TEST(Constructs, ImportAndConst) {
  Parsed p = parseText("import \"stdlib/softmax.kiln\";\n"
                       "const EPS = 1e-6;\n"
                       "const N: i32 = 0x2A;\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  EXPECT_EQ(p.ast, "Module\n"
                   "  ImportItem \"stdlib/softmax.kiln\" 1:1\n"
                   "  ConstItem EPS 2:1\n"
                   "    FloatLit 1e-06 '1e-6' 2:13\n"
                   "  ConstItem N 3:1\n"
                   "    ScalarType i32 3:10\n"
                   "    IntLit 42 '0x2A' 3:16\n");
  auto *imp = ast::dyn_cast<ast::ImportItem>(p.module->items[0].get());
  ASSERT_NE(imp, nullptr);
  EXPECT_EQ(imp->path, "stdlib/softmax.kiln");
  EXPECT_EQ(imp->pathLoc, (Location{0, 1, 8}));
  auto *c = ast::dyn_cast<ast::ConstItem>(p.module->items[1].get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->nameLoc, (Location{0, 2, 7}));
}

TEST(Constructs, FunctionKindsParamsAndAttributes) {
  Parsed p = parseText("@num_warps(4) @num_stages(2) @inline\n"
                       "kernel k(x, y: *f32, const B: i32 = 64, n = 3,) {}\n"
                       "fn f() {}\n"
                       "graph g(a: *bf16) {}\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  EXPECT_EQ(p.ast, "Module\n"
                   "  KernelItem k 1:1\n"
                   "    Attribute num_warps 1:1\n"
                   "      Arg 1:12\n"
                   "        IntLit 4 1:12\n"
                   "    Attribute num_stages 1:15\n"
                   "      Arg 1:27\n"
                   "        IntLit 2 1:27\n"
                   "    Attribute inline 1:30\n"
                   "    Param x 2:10\n"
                   "    Param y 2:13\n"
                   "      PointerType 2:16\n"
                   "        ScalarType f32 2:17\n"
                   "    Param const B 2:22\n"
                   "      ScalarType i32 2:31\n"
                   "      IntLit 64 2:37\n"
                   "    Param n 2:41\n"
                   "      IntLit 3 2:45\n"
                   "    BlockStmt 2:49\n"
                   "  FnItem f 3:1\n"
                   "    BlockStmt 3:8\n"
                   "  GraphItem g 4:1\n"
                   "    Param a 4:9\n"
                   "      PointerType 4:12\n"
                   "        ScalarType bf16 4:13\n"
                   "    BlockStmt 4:19\n");
  const ast::FunctionItem *k = findFunction(*p.module, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->kind, ast::ItemKind::Kernel);
  EXPECT_EQ(k->nameLoc, (Location{0, 2, 8}));
  EXPECT_TRUE(k->params[2].isConst);
  EXPECT_FALSE(k->params[0].type);
  EXPECT_EQ(k->body->closeLoc, (Location{0, 2, 50}));
}

TEST(Constructs, Types) {
  Parsed p = parseText("fn f(a: bool, b: **u8, c: tile<f32, [M, 2 * N]>, d: tile<f16, []>,\n"
                       "     e: block_mask<64, BN>, g: block_mask<(A + 1), 8>, h: f8e4m3) {}\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  EXPECT_EQ(p.ast, "Module\n"
                   "  FnItem f 1:1\n"
                   "    Param a 1:6\n"
                   "      ScalarType bool 1:9\n"
                   "    Param b 1:15\n"
                   "      PointerType 1:18\n"
                   "        PointerType 1:19\n"
                   "          ScalarType u8 1:20\n"
                   "    Param c 1:24\n"
                   "      TileType 1:27\n"
                   "        ScalarType f32 1:32\n"
                   "        NameExpr M 1:38\n"
                   "        BinaryExpr * 1:41\n"
                   "          IntLit 2 1:41\n"
                   "          NameExpr N 1:45\n"
                   "    Param d 1:50\n"
                   "      TileType 1:53\n"
                   "        ScalarType f16 1:58\n"
                   "    Param e 2:6\n"
                   "      BlockMaskType 2:9\n"
                   "        IntLit 64 2:20\n"
                   "        NameExpr BN 2:24\n"
                   "    Param g 2:29\n"
                   "      BlockMaskType 2:32\n"
                   "        BinaryExpr + 2:44\n"
                   "          NameExpr A 2:44\n"
                   "          IntLit 1 2:48\n"
                   "        IntLit 8 2:52\n"
                   "    Param h 2:56\n"
                   "      ScalarType f8e4m3 2:59\n"
                   "    BlockStmt 2:67\n");
}

TEST(Constructs, Bindings) {
  EXPECT_EQ(printBody("let x = 1;\n"
                      "let y: tile<f32, [4]> = zeros([4], f32);\n"
                      "let (a, b) = split(x);\n"
                      "var s = 0.0;\n"
                      "var (c, d,) = t;"),
            "LetStmt x 2:1\n"
            "  IntLit 1 2:9\n"
            "LetStmt y 3:1\n"
            "  TileType 3:8\n"
            "    ScalarType f32 3:13\n"
            "    IntLit 4 3:19\n"
            "  CallExpr zeros 3:25\n"
            "    Arg 3:31\n"
            "      ListExpr 3:31\n"
            "        IntLit 4 3:32\n"
            "    Arg 3:36\n"
            "      NameExpr f32 3:36\n"
            "LetStmt (a, b) 4:1\n"
            "  CallExpr split 4:14\n"
            "    Arg 4:20\n"
            "      NameExpr x 4:20\n"
            "VarStmt s 5:1\n"
            "  FloatLit 0 '0.0' 5:9\n"
            "VarStmt (c, d) 6:1\n"
            "  NameExpr t 6:15\n");
}

TEST(Constructs, AssignmentsAllOperators) {
  const char *ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  for (const char *op : ops) {
    Parsed p = parseText(std::string("fn t() { s ") + op + " 2; }");
    ASSERT_TRUE(p.ok()) << op << ": " << p.allDiags();
    const ast::FunctionItem *f = findFunction(*p.module, "t");
    auto *a = ast::dyn_cast<ast::AssignStmt>(f->body->body[0].get());
    ASSERT_NE(a, nullptr) << op;
    EXPECT_STREQ(ast::assignOpSpelling(a->op), op);
    EXPECT_EQ(a->target, "s");
    EXPECT_EQ(a->targetLoc, (Location{0, 1, 10}));
  }
}

TEST(Constructs, ExpressionStatementsAndReturn) {
  EXPECT_EQ(printBody("store(p, v, mask = m);\n"
                      "assert(c, \"msg\");\n"
                      "return;\n"
                      "return x * 2;"),
            "ExprStmt 2:1\n"
            "  CallExpr store 2:1\n"
            "    Arg 2:7\n"
            "      NameExpr p 2:7\n"
            "    Arg 2:10\n"
            "      NameExpr v 2:10\n"
            "    Arg mask 2:13\n"
            "      NameExpr m 2:20\n"
            "ExprStmt 3:1\n"
            "  CallExpr assert 3:1\n"
            "    Arg 3:8\n"
            "      NameExpr c 3:8\n"
            "    Arg 3:11\n"
            "      StringLit \"msg\" 3:11\n"
            "ReturnStmt 4:1\n"
            "ReturnStmt 5:1\n"
            "  BinaryExpr * 5:8\n"
            "    NameExpr x 5:8\n"
            "    IntLit 2 5:12\n");
}

TEST(Constructs, Loops) {
  EXPECT_EQ(printBody("for i in range(n) { }\n"
                      "for j in static_range(0, 4, 2,) { x += j; }\n"
                      "for kb in blocks(mask, row) {}\n"
                      "while i < n { i += 1; }"),
            "ForStmt i in range 2:1\n"
            "  NameExpr n 2:16\n"
            "  BlockStmt 2:19\n"
            "ForStmt j in static_range 3:1\n"
            "  IntLit 0 3:23\n"
            "  IntLit 4 3:26\n"
            "  IntLit 2 3:29\n"
            "  BlockStmt 3:33\n"
            "    AssignStmt x += 3:35\n"
            "      NameExpr j 3:40\n"
            "ForStmt kb in blocks 4:1\n"
            "  NameExpr mask 4:18\n"
            "  NameExpr row 4:24\n"
            "  BlockStmt 4:29\n"
            "WhileStmt 5:1\n"
            "  BinaryExpr < 5:7\n"
            "    NameExpr i 5:7\n"
            "    NameExpr n 5:11\n"
            "  BlockStmt 5:13\n"
            "    AssignStmt i += 5:15\n"
            "      IntLit 1 5:20\n");
  Parsed p = parseText("fn t() { for i in range(a, b) {} }");
  ASSERT_TRUE(p.ok());
  auto *f = ast::dyn_cast<ast::ForStmt>(findFunction(*p.module, "t")->body->body[0].get());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->varLoc, (Location{0, 1, 14}));
  EXPECT_EQ(f->rangeLoc, (Location{0, 1, 19}));
  EXPECT_EQ(f->range, ast::RangeKind::Range);
  EXPECT_EQ(f->bounds.size(), 2u);
}

TEST(Constructs, IfElseChains) {
  EXPECT_EQ(printBody("if a { x = 1; } else if b { } else { y = 2; }\n"
                      "if c {}"),
            "IfStmt 2:1\n"
            "  NameExpr a 2:4\n"
            "  BlockStmt 2:6\n"
            "    AssignStmt x = 2:8\n"
            "      IntLit 1 2:12\n"
            "  IfStmt 2:22\n"
            "    NameExpr b 2:25\n"
            "    BlockStmt 2:27\n"
            "    BlockStmt 2:36\n"
            "      AssignStmt y = 2:38\n"
            "        IntLit 2 2:42\n"
            "IfStmt 3:1\n"
            "  NameExpr c 3:4\n"
            "  BlockStmt 3:6\n");
  Parsed p = parseText("fn t() { if a {} else {} }");
  ASSERT_TRUE(p.ok());
  auto *s = ast::dyn_cast<ast::IfStmt>(findFunction(*p.module, "t")->body->body[0].get());
  ASSERT_NE(s, nullptr);
  ASSERT_NE(s->elseBody, nullptr);
  EXPECT_EQ(s->elseBody->kind, ast::StmtKind::Block);
}

TEST(Constructs, NestedBlocksAndLaunch) {
  EXPECT_EQ(printBody("{ { let z = 0; } }\n"
                      "launch rmsnorm[(1,)](x, h, n);\n"
                      "launch matvec[(n / 64, 2)](h, w = w1);"),
            "BlockStmt 2:1\n"
            "  BlockStmt 2:3\n"
            "    LetStmt z 2:5\n"
            "      IntLit 0 2:13\n"
            "LaunchStmt rmsnorm 3:1\n"
            "  Grid\n"
            "    IntLit 1 3:17\n"
            "  Arg 3:22\n"
            "    NameExpr x 3:22\n"
            "  Arg 3:25\n"
            "    NameExpr h 3:25\n"
            "  Arg 3:28\n"
            "    NameExpr n 3:28\n"
            "LaunchStmt matvec 4:1\n"
            "  Grid\n"
            "    BinaryExpr / 4:16\n"
            "      NameExpr n 4:16\n"
            "      IntLit 64 4:20\n"
            "    IntLit 2 4:24\n"
            "  Arg 4:28\n"
            "    NameExpr h 4:28\n"
            "  Arg w 4:31\n"
            "    NameExpr w1 4:35\n");
}

TEST(Constructs, Literals) {
  EXPECT_EQ(printBody("let a = [42, 0x2A, 1_000, 3.5, 1e-6, inf, nan, true, false, "
                      "\"s\\t\\\"q\\\"\"];"),
            "LetStmt a 2:1\n"
            "  ListExpr 2:9\n"
            "    IntLit 42 2:10\n"
            "    IntLit 42 '0x2A' 2:14\n"
            "    IntLit 1000 '1_000' 2:20\n"
            "    FloatLit 3.5 2:27\n"
            "    FloatLit 1e-06 '1e-6' 2:32\n"
            "    FloatLit inf 2:38\n"
            "    FloatLit nan 2:43\n"
            "    BoolLit true 2:48\n"
            "    BoolLit false 2:54\n"
            "    StringLit \"s\\t\\\"q\\\"\" 2:61\n");
  Parsed p = parseText("fn t() { let v = [inf, nan]; }");
  ASSERT_TRUE(p.ok());
  auto *let = ast::dyn_cast<ast::BindingStmt>(findFunction(*p.module, "t")->body->body[0].get());
  auto *list = ast::dyn_cast<ast::ListExpr>(let->init.get());
  ASSERT_NE(list, nullptr);
  EXPECT_TRUE(std::isinf(ast::cast<ast::FloatLit>(list->elements[0].get())->value));
  EXPECT_TRUE(std::isnan(ast::cast<ast::FloatLit>(list->elements[1].get())->value));
}

TEST(Constructs, PostfixCallsAndCollections) {
  EXPECT_EQ(parseExprSexpr("load(p, mask = m, other = 0.0)"),
            "(call load p (kw mask m) (kw other 0.0))");
  EXPECT_EQ(parseExprSexpr("x.to(bf16)"), "(. x to bf16)");
  EXPECT_EQ(parseExprSexpr("x.sum(axis = 0)"), "(. x sum (kw axis 0))");
  EXPECT_EQ(parseExprSexpr("x[:, None]"), "(index x : None)");
  EXPECT_EQ(parseExprSexpr("x[None, :]"), "(index x None :)");
  EXPECT_EQ(parseExprSexpr("x[:, None,]"), "(index x : None)");
  EXPECT_EQ(parseExprSexpr("f()"), "(call f)");
  EXPECT_EQ(parseExprSexpr("x.f().g(1)[:]"), "(index (. (. x f) g 1) :)");
  EXPECT_EQ(parseExprSexpr("2.to(f32)"), "(. 2 to f32)");
  EXPECT_EQ(parseExprSexpr("[]"), "(list)");
  EXPECT_EQ(parseExprSexpr("[a, b,]"), "(list a b)");
  EXPECT_EQ(parseExprSexpr("{BLOCK: 64, num_warps: 4}"), "(dict (BLOCK 64) (num_warps 4))");
  EXPECT_EQ(parseExprSexpr("{}"), "(dict)");
  EXPECT_EQ(parseExprSexpr("(a,)"), "(tuple a)");
  EXPECT_EQ(parseExprSexpr("(a, b)"), "(tuple a b)");
  EXPECT_EQ(parseExprSexpr("(a, b,)"), "(tuple a b)");
  EXPECT_EQ(parseExprSexpr("(a)"), "a");
  EXPECT_EQ(parseExprSexpr("((a + b))"), "(+ a b)");
}

TEST(Constructs, ContextualWordsStayNames) {
  // `tile`, `block_mask`, `range`, `static_range` and `blocks` are only special where the
  // grammar expects them.
  EXPECT_EQ(parseExprSexpr("tile + block_mask + range(blocks) + static_range"),
            "(+ (+ (+ tile block_mask) (call range blocks)) static_range)");
}

TEST(Constructs, CommentsAndWhitespace) {
  Parsed p = parseText("// line comment\n"
                       "/* block\n   comment */ fn /* inline */ f() { // trailing\n"
                       "\tlet x = 1; /* é, ü */ let y = 2;\r\n"
                       "}\n");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  EXPECT_EQ(p.ast, "Module\n"
                   "  FnItem f 3:15\n"
                   "    BlockStmt 3:35\n"
                   "      LetStmt x 4:2\n"
                   "        IntLit 1 4:10\n"
                   "      LetStmt y 4:26\n" // columns count bytes: é and ü are two each
                   "        IntLit 2 4:34\n");
}

TEST(Constructs, ByteOrderMarkIsIgnored) {
  Parsed p = parseText("\xEF\xBB\xBF" "fn f() {}");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  // The SourceManager drops the mark, so columns count from the first real character.
  EXPECT_EQ(p.module->items[0]->loc, (Location{0, 1, 1}));
}

TEST(Constructs, EmptyFileIsAnEmptyModule) {
  Parsed p = parseText("");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  EXPECT_EQ(p.ast, "Module\n");
  Parsed q = parseText("  // only a comment\n");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q.module->items.empty());
}

TEST(Constructs, PrintingIsDeterministic) {
  const std::string text = "kernel k(x: *f32) { let a = x + 1; for i in range(3) { a = a * 2; } }";
  Parsed p1 = parseText(text), p2 = parseText(text);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1.ast, p2.ast);
}
