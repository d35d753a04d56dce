//===- ASTBuilder.h - ANTLR parse tree to Kiln AST --------------*- C++ -*-===//
//
// A visitor over the parse tree of grammar/Kiln.g4 that builds the AST of AST.h and
// nothing else: names, types and shapes are checked by semantic analysis. What it does
// report are the few syntax rules the grammar leaves to it (contextual words such as
// `tile` and `range`, an assignment whose target is not a name, a launch without a grid)
// and trees too deep to build.
//
// Depth: the parse tree of `a + b + ... + z` is a left spine as long as the chain, so
// spines (binary operators, method calls, indexing) and runs of prefix operators are
// walked with loops, never with recursion. Every node's height is known when it is made,
// and a node that would make the tree deeper than kMaxDepth is reported as E0004 and not
// built: AST destructors and every later pass recurse over the tree, so an overly deep
// tree must never exist. The remaining recursion (brackets, blocks, precedence levels)
// is bounded by the nesting limit checked while lexing (NestingScan.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/AST.h"
#include "support/Diagnostics.h"

#include "KilnBaseVisitor.h"
#include "KilnParser.h"

#include <memory>
#include <string_view>

namespace kiln::syntax {

class ASTBuilder : public grammar::KilnBaseVisitor {
public:
  /// The height limit of the tree (levels from a function body or item value down to its
  /// deepest leaf). Real programs stay far below it.
  static constexpr unsigned kMaxDepth = 1000;

  /// `source` is the file's text: string literals are decoded from its bytes (token
  /// start/stop indices are byte offsets, see Parser.cpp).
  ASTBuilder(uint32_t file, std::string_view source, DiagnosticEngine &diags)
      : file_(file), source_(source), diags_(diags) {}

  /// Builds the module of a parse tree that had no syntax errors. Returns null when an
  /// error was reported.
  std::unique_ptr<ast::Module> build(grammar::KilnParser::ModuleContext *ctx);

private:
  using P = grammar::KilnParser;

  // Each dispatched alternative stores its node and height in a slot, because ANTLR's
  // visitor returns antlrcpp::Any, which cannot carry a unique_ptr.
  struct ExprResult {
    ast::ExprPtr node;
    unsigned depth = 0;
  };
  struct StmtResult {
    ast::StmtPtr node;
    unsigned depth = 0;
  };
  struct TypeResult {
    ast::TypeExprPtr node;
    unsigned depth = 0;
  };
  struct BlockResult {
    ast::BlockPtr node;
    unsigned depth = 0;
  };
  struct ArgsResult {
    std::vector<ast::Arg> args;
    unsigned depth = 0;
  };
  struct ExprsResult {
    std::vector<ast::ExprPtr> exprs;
    unsigned depth = 0;
  };

  // --- items (each visit appends to module_) ---
  antlrcpp::Any visitImportItem(P::ImportItemContext *ctx) override;
  antlrcpp::Any visitConstItem(P::ConstItemContext *ctx) override;
  antlrcpp::Any visitFunctionItem(P::FunctionItemContext *ctx) override;
  ast::Attribute attribute(P::AttributeContext *ctx);
  ast::Param param(P::ParamContext *ctx);

  // --- types ---
  antlrcpp::Any visitPointerType(P::PointerTypeContext *ctx) override;
  antlrcpp::Any visitTileType(P::TileTypeContext *ctx) override;
  antlrcpp::Any visitBlockMaskType(P::BlockMaskTypeContext *ctx) override;
  antlrcpp::Any visitScalarType(P::ScalarTypeContext *ctx) override;
  antlrcpp::Any visitIntTypeDim(P::IntTypeDimContext *ctx) override;
  antlrcpp::Any visitNameTypeDim(P::NameTypeDimContext *ctx) override;
  antlrcpp::Any visitParenTypeDim(P::ParenTypeDimContext *ctx) override;
  TypeResult type(P::TypeContext *ctx);

  // --- statements ---
  antlrcpp::Any visitBindStmt(P::BindStmtContext *ctx) override;
  antlrcpp::Any visitForStmt(P::ForStmtContext *ctx) override;
  antlrcpp::Any visitWhileStmt(P::WhileStmtContext *ctx) override;
  antlrcpp::Any visitIfStmt(P::IfStmtContext *ctx) override;
  antlrcpp::Any visitReturnStmt(P::ReturnStmtContext *ctx) override;
  antlrcpp::Any visitLaunchStmt(P::LaunchStmtContext *ctx) override;
  antlrcpp::Any visitBlockStmt(P::BlockStmtContext *ctx) override;
  antlrcpp::Any visitExprStmt(P::ExprStmtContext *ctx) override;
  StmtResult stmt(P::StmtContext *ctx);
  BlockResult block(P::BlockContext *ctx);

  // --- expressions ---
  antlrcpp::Any visitMethodExpr(P::MethodExprContext *ctx) override;
  antlrcpp::Any visitIndexExpr(P::IndexExprContext *ctx) override;
  antlrcpp::Any visitBinaryExpr(P::BinaryExprContext *ctx) override;
  antlrcpp::Any visitUnaryExpr(P::UnaryExprContext *ctx) override;
  antlrcpp::Any visitCondExpr(P::CondExprContext *ctx) override;
  antlrcpp::Any visitCallExpr(P::CallExprContext *ctx) override;
  antlrcpp::Any visitNameExpr(P::NameExprContext *ctx) override;
  antlrcpp::Any visitLiteralExpr(P::LiteralExprContext *ctx) override;
  antlrcpp::Any visitParenExpr(P::ParenExprContext *ctx) override;
  antlrcpp::Any visitListExpr(P::ListExprContext *ctx) override;
  antlrcpp::Any visitDictExpr(P::DictExprContext *ctx) override;
  ExprResult expr(P::ExprContext *ctx);
  ExprResult spine(P::ExprContext *top);
  ExprResult literal(P::LiteralContext *ctx);
  ArgsResult args(P::ArgListContext *ctx);
  ExprsResult exprs(const std::vector<P::ExprContext *> &ctxs);

  // --- helpers ---
  Location loc(const antlr4::Token *tok) const;
  Location loc(antlr4::ParserRuleContext *ctx) const { return loc(ctx->getStart()); }
  std::string_view tokenBytes(const antlr4::Token *tok) const;
  /// Returns `depth` after reporting E0004 at `where` and abandoning the build when it
  /// exceeds kMaxDepth.
  unsigned checkDepth(unsigned depth, Location where);
  void syntaxError(Location where, const std::string &message);

  uint32_t file_;
  std::string_view source_;
  DiagnosticEngine &diags_;
  bool hadError_ = false;
  std::unique_ptr<ast::Module> module_;
  ExprResult exprSlot_;
  StmtResult stmtSlot_;
  TypeResult typeSlot_;
};

} // namespace kiln::syntax
