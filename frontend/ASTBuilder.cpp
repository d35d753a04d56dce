//===- ASTBuilder.cpp - ANTLR parse tree to Kiln AST ----------------------===//
//
// See ASTBuilder.h. Conventions used throughout:
//  * a node's Location is that of its first token (for `a + b` the `a`);
//  * a node's depth is 1 + the deepest of its children, checked by checkDepth() before
//    the node is made;
//  * the parse tree is complete here (parseFile only builds when parsing reported no
//    error), so a missing child is a compiler bug, not a user error.
//
//===----------------------------------------------------------------------===//
#include "frontend/ASTBuilder.h"

#include "frontend/Literals.h"

#include "KilnLexer.h"

#include <algorithm>
#include <limits>

namespace kiln::syntax {

using grammar::KilnLexer;
using grammar::KilnParser;

namespace {
/// Thrown after E0004 to abandon the build; caught in ASTBuilder::build.
struct TooDeep {};
} // namespace

static ast::BinaryOp binaryOpFor(size_t tokenType) {
  switch (tokenType) {
  case KilnLexer::STAR: return ast::BinaryOp::Mul;
  case KilnLexer::POW: return ast::BinaryOp::Pow;
  case KilnLexer::SLASH: return ast::BinaryOp::Div;
  case KilnLexer::PERCENT: return ast::BinaryOp::Rem;
  case KilnLexer::PLUS: return ast::BinaryOp::Add;
  case KilnLexer::MINUS: return ast::BinaryOp::Sub;
  case KilnLexer::SHL: return ast::BinaryOp::Shl;
  case KilnLexer::SHR: return ast::BinaryOp::Shr;
  case KilnLexer::AMP: return ast::BinaryOp::BitAnd;
  case KilnLexer::CARET: return ast::BinaryOp::BitXor;
  case KilnLexer::PIPE: return ast::BinaryOp::BitOr;
  case KilnLexer::EQ: return ast::BinaryOp::Eq;
  case KilnLexer::NE: return ast::BinaryOp::Ne;
  case KilnLexer::LT: return ast::BinaryOp::Lt;
  case KilnLexer::LE: return ast::BinaryOp::Le;
  case KilnLexer::GT: return ast::BinaryOp::Gt;
  case KilnLexer::GE: return ast::BinaryOp::Ge;
  case KilnLexer::ANDAND: return ast::BinaryOp::LogicalAnd;
  case KilnLexer::OROR: return ast::BinaryOp::LogicalOr;
  default: KILN_ICE("binary operator token " + std::to_string(tokenType) + " not in the grammar");
  }
}

static ast::UnaryOp unaryOpFor(size_t tokenType) {
  switch (tokenType) {
  case KilnLexer::MINUS: return ast::UnaryOp::Neg;
  case KilnLexer::BANG: return ast::UnaryOp::Not;
  case KilnLexer::TILDE: return ast::UnaryOp::BitNot;
  case KilnLexer::PLUS: return ast::UnaryOp::Plus;
  default: KILN_ICE("unary operator token " + std::to_string(tokenType) + " not in the grammar");
  }
}

static ast::AssignOp assignOpFor(size_t tokenType) {
  switch (tokenType) {
  case KilnLexer::ASSIGN: return ast::AssignOp::Set;
  case KilnLexer::PLUS_ASSIGN: return ast::AssignOp::Add;
  case KilnLexer::MINUS_ASSIGN: return ast::AssignOp::Sub;
  case KilnLexer::STAR_ASSIGN: return ast::AssignOp::Mul;
  case KilnLexer::SLASH_ASSIGN: return ast::AssignOp::Div;
  case KilnLexer::PERCENT_ASSIGN: return ast::AssignOp::Rem;
  case KilnLexer::AMP_ASSIGN: return ast::AssignOp::BitAnd;
  case KilnLexer::PIPE_ASSIGN: return ast::AssignOp::BitOr;
  case KilnLexer::CARET_ASSIGN: return ast::AssignOp::BitXor;
  case KilnLexer::SHL_ASSIGN: return ast::AssignOp::Shl;
  case KilnLexer::SHR_ASSIGN: return ast::AssignOp::Shr;
  default: KILN_ICE("assignment token " + std::to_string(tokenType) + " not in the grammar");
  }
}

/// ANTLR leaves optional children null; in a tree without syntax errors the required
/// ones are always there.
template <typename T> static T *required(T *node, const char *what) {
  kiln_assert(node != nullptr, std::string("parse tree without ") + what);
  return node;
}

//===--------------------------------------------------------------------===//
// Helpers
//===--------------------------------------------------------------------===//

Location ASTBuilder::loc(const antlr4::Token *tok) const {
  // The lexer reads one symbol per byte, so ANTLR's character position is the byte
  // column that Location wants (0-based there, 1-based here).
  return Location{file_, static_cast<uint32_t>(tok->getLine()),
                  static_cast<uint32_t>(tok->getCharPositionInLine() + 1)};
}

std::string_view ASTBuilder::tokenBytes(const antlr4::Token *tok) const {
  size_t start = tok->getStartIndex(), stop = tok->getStopIndex();
  if (start > stop || stop >= source_.size())
    return {};
  return source_.substr(start, stop - start + 1);
}

unsigned ASTBuilder::checkDepth(unsigned depth, Location where) {
  if (depth <= kMaxDepth)
    return depth;
  (diags_.error(where, DiagCode::NestingTooDeep)
   << "this expression or statement nests more than " << kMaxDepth << " levels deep")
      .hint("split it into smaller pieces with `let` bindings");
  hadError_ = true;
  throw TooDeep{};
}

void ASTBuilder::syntaxError(Location where, const std::string &message) {
  diags_.error(where, DiagCode::SyntaxError) << message;
  hadError_ = true;
}

//===--------------------------------------------------------------------===//
// Module and items
//===--------------------------------------------------------------------===//

std::unique_ptr<ast::Module> ASTBuilder::build(KilnParser::ModuleContext *ctx) {
  module_ = std::make_unique<ast::Module>();
  module_->file = file_;
  try {
    for (KilnParser::ItemContext *item : ctx->item())
      item->accept(this);
  } catch (const TooDeep &) {
    return nullptr;
  }
  if (hadError_)
    return nullptr;
  return std::move(module_);
}

antlrcpp::Any ASTBuilder::visitImportItem(KilnParser::ImportItemContext *ctx) {
  antlr4::Token *pathTok = required(ctx->STRING(), "import path")->getSymbol();
  // Malformed strings were reported while lexing; the value is only used without errors.
  StringDecodeResult path = decodeStringLiteral(tokenBytes(pathTok));
  module_->items.push_back(
      std::make_unique<ast::ImportItem>(loc(ctx), std::move(path.value), loc(pathTok)));
  return {};
}

antlrcpp::Any ASTBuilder::visitConstItem(KilnParser::ConstItemContext *ctx) {
  auto item = std::make_unique<ast::ConstItem>(loc(ctx));
  antlr4::Token *name = required(ctx->IDENT(), "const name")->getSymbol();
  item->name = name->getText();
  item->nameLoc = loc(name);
  if (ctx->type())
    item->type = type(ctx->type()).node;
  item->value = expr(required(ctx->expr(), "const value")).node;
  module_->items.push_back(std::move(item));
  return {};
}

antlrcpp::Any ASTBuilder::visitFunctionItem(KilnParser::FunctionItemContext *ctx) {
  ast::ItemKind kind;
  switch (required(ctx->kind, "item keyword")->getType()) {
  case KilnLexer::KW_FN: kind = ast::ItemKind::Fn; break;
  case KilnLexer::KW_KERNEL: kind = ast::ItemKind::Kernel; break;
  case KilnLexer::KW_GRAPH: kind = ast::ItemKind::Graph; break;
  default: KILN_ICE("function item keyword not in the grammar");
  }
  auto item = std::make_unique<ast::FunctionItem>(kind, loc(ctx));
  for (KilnParser::AttributeContext *attr : ctx->attribute())
    item->attributes.push_back(attribute(attr));
  antlr4::Token *name = required(ctx->IDENT(), "function name")->getSymbol();
  item->name = name->getText();
  item->nameLoc = loc(name);
  if (KilnParser::ParamListContext *params = ctx->paramList())
    for (KilnParser::ParamContext *p : params->param())
      item->params.push_back(param(p));
  item->body = block(required(ctx->block(), "function body")).node;
  module_->items.push_back(std::move(item));
  return {};
}

ast::Attribute ASTBuilder::attribute(KilnParser::AttributeContext *ctx) {
  ast::Attribute attr;
  attr.loc = loc(ctx);
  attr.name = required(ctx->IDENT(), "attribute name")->getText();
  if (ctx->argList())
    attr.args = args(ctx->argList()).args;
  return attr;
}

ast::Param ASTBuilder::param(KilnParser::ParamContext *ctx) {
  ast::Param p;
  p.loc = loc(ctx);
  p.name = required(ctx->IDENT(), "parameter name")->getText();
  p.isConst = ctx->KW_CONST() != nullptr;
  if (ctx->type())
    p.type = type(ctx->type()).node;
  if (ctx->expr())
    p.defaultValue = expr(ctx->expr()).node;
  return p;
}

//===--------------------------------------------------------------------===//
// Types
//===--------------------------------------------------------------------===//

ASTBuilder::TypeResult ASTBuilder::type(KilnParser::TypeContext *ctx) {
  typeSlot_ = {};
  ctx->accept(this);
  kiln_assert(typeSlot_.node != nullptr, "type alternative without a builder");
  return std::move(typeSlot_);
}

/// `tile` and `block_mask` are recognised by spelling; the grammar told them apart by
/// their arguments (a bracketed shape or two dimensions), which may disagree with the name.
static std::string genericTypeMessage(const std::string &name) {
  if (name == "tile")
    return "the shape of a tile type is a bracketed list: 'tile<T, [d0, d1, ...]>'";
  if (name == "block_mask")
    return "a block mask takes two block sizes: 'block_mask<BM, BN>'";
  return "unknown type '" + name + "<...>'; the generic types are 'tile<T, [d0, d1, ...]>' "
         "and 'block_mask<BM, BN>'";
}

static ast::TypeExprPtr makeType(ast::TypeExprKind kind, Location where) {
  auto t = std::make_unique<ast::TypeExpr>();
  t->kind = kind;
  t->loc = where;
  return t;
}

antlrcpp::Any ASTBuilder::visitPointerType(KilnParser::PointerTypeContext *ctx) {
  // Runs of `*` are bounded by the nesting pre-scan, so recursion is fine here.
  // `**T` is one token (the power operator's) and two pointer levels.
  TypeResult pointee = type(required(ctx->type(), "pointee type"));
  const bool twice = required(ctx->op, "'*'")->getType() == KilnLexer::POW;
  for (int level = twice ? 2 : 1; level > 0; --level) {
    Location where = loc(ctx);
    if (level == 2)
      where.col += 1; // the inner pointer starts at the second '*'
    auto t = makeType(ast::TypeExprKind::Pointer, where);
    unsigned depth = checkDepth(pointee.depth + 1, t->loc);
    t->element = std::move(pointee.node);
    pointee = {std::move(t), depth};
  }
  typeSlot_ = std::move(pointee);
  return {};
}

antlrcpp::Any ASTBuilder::visitTileType(KilnParser::TileTypeContext *ctx) {
  antlr4::Token *name = required(ctx->IDENT(), "type name")->getSymbol();
  if (name->getText() != "tile")
    syntaxError(loc(name), genericTypeMessage(name->getText()));
  TypeResult element = type(required(ctx->type(), "tile element type"));
  ExprsResult dims;
  if (ctx->exprList())
    dims = exprs(ctx->exprList()->expr());
  auto t = makeType(ast::TypeExprKind::Tile, loc(ctx));
  unsigned depth = checkDepth(std::max(element.depth, dims.depth) + 1, t->loc);
  t->element = std::move(element.node);
  t->dims = std::move(dims.exprs);
  typeSlot_ = {std::move(t), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitBlockMaskType(KilnParser::BlockMaskTypeContext *ctx) {
  antlr4::Token *name = required(ctx->IDENT(), "type name")->getSymbol();
  if (name->getText() != "block_mask")
    syntaxError(loc(name), genericTypeMessage(name->getText()));
  auto t = makeType(ast::TypeExprKind::BlockMask, loc(ctx));
  unsigned depth = 0;
  for (KilnParser::TypeDimContext *dim : ctx->typeDim()) {
    exprSlot_ = {};
    dim->accept(this);
    kiln_assert(exprSlot_.node != nullptr, "block_mask dimension without a builder");
    depth = std::max(depth, exprSlot_.depth);
    t->dims.push_back(std::move(exprSlot_.node));
  }
  depth = checkDepth(depth + 1, t->loc);
  typeSlot_ = {std::move(t), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitScalarType(KilnParser::ScalarTypeContext *ctx) {
  auto t = makeType(ast::TypeExprKind::Scalar, loc(ctx));
  t->name = required(ctx->IDENT(), "type name")->getText();
  typeSlot_ = {std::move(t), 1};
  return {};
}

antlrcpp::Any ASTBuilder::visitIntTypeDim(KilnParser::IntTypeDimContext *ctx) {
  antlr4::Token *tok = required(ctx->INT(), "integer")->getSymbol();
  uint64_t value = 0;
  decodeIntLiteral(tok->getText(), value); // malformed text was reported while lexing
  exprSlot_ = {std::make_unique<ast::IntLit>(loc(tok), value, tok->getText()), 1};
  return {};
}

antlrcpp::Any ASTBuilder::visitNameTypeDim(KilnParser::NameTypeDimContext *ctx) {
  antlr4::Token *tok = required(ctx->IDENT(), "name")->getSymbol();
  exprSlot_ = {std::make_unique<ast::NameExpr>(loc(tok), tok->getText()), 1};
  return {};
}

antlrcpp::Any ASTBuilder::visitParenTypeDim(KilnParser::ParenTypeDimContext *ctx) {
  exprSlot_ = expr(required(ctx->expr(), "parenthesised dimension"));
  return {};
}

//===--------------------------------------------------------------------===//
// Statements
//===--------------------------------------------------------------------===//

ASTBuilder::StmtResult ASTBuilder::stmt(KilnParser::StmtContext *ctx) {
  stmtSlot_ = {};
  ctx->accept(this);
  kiln_assert(stmtSlot_.node != nullptr, "statement alternative without a builder");
  return std::move(stmtSlot_);
}

ASTBuilder::BlockResult ASTBuilder::block(KilnParser::BlockContext *ctx) {
  std::vector<ast::StmtPtr> body;
  unsigned depth = 0;
  for (KilnParser::StmtContext *s : ctx->stmt()) {
    StmtResult r = stmt(s);
    depth = std::max(depth, r.depth);
    body.push_back(std::move(r.node));
  }
  Location where = loc(ctx);
  depth = checkDepth(depth + 1, where);
  auto b = std::make_unique<ast::BlockStmt>(where, std::move(body));
  b->closeLoc = loc(required(ctx->RBRACE(), "closing brace")->getSymbol());
  return {std::move(b), depth};
}

antlrcpp::Any ASTBuilder::visitBindStmt(KilnParser::BindStmtContext *ctx) {
  antlr4::Token *kw = required(ctx->kw, "let/var");
  auto s = std::make_unique<ast::BindingStmt>(
      kw->getType() == KilnLexer::KW_VAR ? ast::StmtKind::Var : ast::StmtKind::Let, loc(ctx));
  s->tuplePattern = ctx->LPAREN() != nullptr;
  for (antlr4::tree::TerminalNode *name : ctx->IDENT()) {
    s->names.push_back(name->getText());
    s->nameLocs.push_back(loc(name->getSymbol()));
  }
  kiln_assert(!s->names.empty(), "binding without a name");
  unsigned depth = 0;
  if (ctx->type()) {
    TypeResult t = type(ctx->type());
    depth = t.depth;
    s->type = std::move(t.node);
  }
  ExprResult init = expr(required(ctx->expr(), "initializer"));
  depth = checkDepth(std::max(depth, init.depth) + 1, s->loc);
  s->init = std::move(init.node);
  stmtSlot_ = {std::move(s), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitForStmt(KilnParser::ForStmtContext *ctx) {
  auto s = std::make_unique<ast::ForStmt>(loc(ctx));
  antlr4::Token *var = required(ctx->IDENT(0), "loop variable")->getSymbol();
  antlr4::Token *iter = required(ctx->IDENT(1), "loop iterator")->getSymbol();
  s->var = var->getText();
  s->varLoc = loc(var);
  s->rangeLoc = loc(iter);
  ExprsResult bounds = exprs(required(ctx->exprList(), "loop bounds")->expr());
  size_t count = bounds.exprs.size();
  const std::string iterName = iter->getText();
  // The iterator is a contextual word, so that `range` stays usable as a name elsewhere.
  if (iterName == "range" || iterName == "static_range") {
    s->range = iterName == "range" ? ast::RangeKind::Range : ast::RangeKind::StaticRange;
    if (count > 3)
      syntaxError(bounds.exprs[3]->loc,
                  "'" + iterName + "' takes 1 to 3 bounds: (end), (start, end) or "
                  "(start, end, step); found " + std::to_string(count));
  } else if (iterName == "blocks") {
    s->range = ast::RangeKind::Blocks;
    if (count != 2)
      syntaxError(s->rangeLoc, "'blocks' takes a block mask and a row: blocks(mask, row); "
                               "found " + std::to_string(count) + " argument" +
                               (count == 1 ? "" : "s"));
  } else {
    s->range = ast::RangeKind::Range;
    syntaxError(s->rangeLoc, "expected 'range', 'static_range' or 'blocks' after 'in', "
                             "found '" + iterName + "'");
  }
  BlockResult body = block(required(ctx->block(), "loop body"));
  unsigned depth = checkDepth(std::max(bounds.depth, body.depth) + 1, s->loc);
  s->bounds = std::move(bounds.exprs);
  s->body = std::move(body.node);
  stmtSlot_ = {std::move(s), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitWhileStmt(KilnParser::WhileStmtContext *ctx) {
  ExprResult cond = expr(required(ctx->expr(), "loop condition"));
  BlockResult body = block(required(ctx->block(), "loop body"));
  Location where = loc(ctx);
  unsigned depth = checkDepth(std::max(cond.depth, body.depth) + 1, where);
  stmtSlot_ = {std::make_unique<ast::WhileStmt>(where, std::move(cond.node), std::move(body.node)),
               depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitIfStmt(KilnParser::IfStmtContext *ctx) {
  // `if a {} else if b {} else {}` is one flat parse-tree node; the AST nests each
  // `else if` in the previous else branch. Build from the last link backwards so that
  // a long chain needs no recursion.
  std::vector<KilnParser::ExprContext *> conds = ctx->expr();
  std::vector<KilnParser::BlockContext *> blocks = ctx->block();
  std::vector<antlr4::tree::TerminalNode *> ifs = ctx->KW_IF();
  kiln_assert(!conds.empty() && conds.size() == ifs.size() &&
                  (blocks.size() == conds.size() || blocks.size() == conds.size() + 1),
              "malformed if statement in the parse tree");
  ast::StmtPtr elseBody;
  unsigned elseDepth = 0;
  if (blocks.size() > conds.size()) {
    BlockResult b = block(blocks.back());
    elseBody = std::move(b.node);
    elseDepth = b.depth;
  }
  for (size_t i = conds.size(); i-- > 0;) {
    auto s = std::make_unique<ast::IfStmt>(loc(ifs[i]->getSymbol()));
    ExprResult cond = expr(conds[i]);
    BlockResult then = block(blocks[i]);
    unsigned depth = checkDepth(std::max({cond.depth, then.depth, elseDepth}) + 1, s->loc);
    s->cond = std::move(cond.node);
    s->thenBody = std::move(then.node);
    s->elseBody = std::move(elseBody);
    elseBody = std::move(s);
    elseDepth = depth;
  }
  stmtSlot_ = {std::move(elseBody), elseDepth};
  return {};
}

antlrcpp::Any ASTBuilder::visitReturnStmt(KilnParser::ReturnStmtContext *ctx) {
  ExprResult value;
  if (ctx->expr())
    value = expr(ctx->expr());
  Location where = loc(ctx);
  unsigned depth = checkDepth(value.depth + 1, where);
  stmtSlot_ = {std::make_unique<ast::ReturnStmt>(where, std::move(value.node)), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitLaunchStmt(KilnParser::LaunchStmtContext *ctx) {
  auto s = std::make_unique<ast::LaunchStmt>(loc(ctx));
  antlr4::Token *kernel = required(ctx->IDENT(), "kernel name")->getSymbol();
  s->kernel = kernel->getText();
  s->kernelLoc = loc(kernel);
  ExprsResult grid;
  if (ctx->exprList())
    grid = exprs(ctx->exprList()->expr());
  else
    syntaxError(s->kernelLoc, "'launch' needs a grid: launch " + s->kernel +
                                  "[(g0, ...)](args);");
  ArgsResult a;
  if (ctx->argList())
    a = args(ctx->argList());
  unsigned depth = checkDepth(std::max(grid.depth, a.depth) + 1, s->loc);
  s->grid = std::move(grid.exprs);
  s->args = std::move(a.args);
  stmtSlot_ = {std::move(s), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitBlockStmt(KilnParser::BlockStmtContext *ctx) {
  BlockResult b = block(required(ctx->block(), "block"));
  stmtSlot_ = {std::move(b.node), b.depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitExprStmt(KilnParser::ExprStmtContext *ctx) {
  std::vector<KilnParser::ExprContext *> parts = ctx->expr();
  kiln_assert(!parts.empty(), "expression statement without an expression");
  ExprResult first = expr(parts[0]);
  Location where = first.node->loc;
  if (KilnParser::AssignOpContext *op = ctx->assignOp()) {
    kiln_assert(parts.size() == 2, "assignment without a value");
    ExprResult value = expr(parts[1]);
    unsigned depth = checkDepth(value.depth + 1, where);
    auto *target = ast::dyn_cast<ast::NameExpr>(first.node.get());
    std::string name;
    if (target) {
      name = target->name;
    } else {
      antlr4::Token *opTok = op->getStart();
      syntaxError(where, std::string("the target of '") + opTok->getText() +
                             "' must be a variable name");
    }
    stmtSlot_ = {std::make_unique<ast::AssignStmt>(where, std::move(name), where,
                                                   assignOpFor(op->getStart()->getType()),
                                                   std::move(value.node)),
                 depth};
    return {};
  }
  unsigned depth = checkDepth(first.depth + 1, where);
  stmtSlot_ = {std::make_unique<ast::ExprStmt>(where, std::move(first.node)), depth};
  return {};
}

//===--------------------------------------------------------------------===//
// Expressions
//===--------------------------------------------------------------------===//

ASTBuilder::ExprResult ASTBuilder::expr(KilnParser::ExprContext *ctx) {
  exprSlot_ = {};
  ctx->accept(this);
  kiln_assert(exprSlot_.node != nullptr, "expression alternative without a builder");
  return std::move(exprSlot_);
}

ASTBuilder::ExprsResult ASTBuilder::exprs(const std::vector<KilnParser::ExprContext *> &ctxs) {
  ExprsResult r;
  r.exprs.reserve(ctxs.size());
  for (KilnParser::ExprContext *c : ctxs) {
    ExprResult e = expr(c);
    r.depth = std::max(r.depth, e.depth);
    r.exprs.push_back(std::move(e.node));
  }
  return r;
}

ASTBuilder::ArgsResult ASTBuilder::args(KilnParser::ArgListContext *ctx) {
  ArgsResult r;
  for (KilnParser::ArgContext *a : ctx->arg()) {
    ast::Arg arg;
    arg.loc = loc(a);
    if (antlr4::tree::TerminalNode *name = a->IDENT())
      arg.name = name->getText();
    ExprResult value = expr(required(a->expr(), "argument value"));
    r.depth = std::max(r.depth, value.depth);
    arg.value = std::move(value.node);
    r.args.push_back(std::move(arg));
  }
  return r;
}

// Binary operators, method calls and indexing all take their left operand from the
// first child, so `a + b + c` and `x.f().g()` are left spines: collect the spine with a
// loop, build its innermost operand, then wrap it outwards one link at a time.
ASTBuilder::ExprResult ASTBuilder::spine(KilnParser::ExprContext *top) {
  std::vector<KilnParser::ExprContext *> links;
  KilnParser::ExprContext *cur = top;
  for (;;) {
    if (auto *b = dynamic_cast<KilnParser::BinaryExprContext *>(cur)) {
      links.push_back(cur);
      cur = required(b->expr(0), "left operand");
    } else if (auto *m = dynamic_cast<KilnParser::MethodExprContext *>(cur)) {
      links.push_back(cur);
      cur = required(m->expr(), "method receiver");
    } else if (auto *ix = dynamic_cast<KilnParser::IndexExprContext *>(cur)) {
      links.push_back(cur);
      cur = required(ix->expr(), "indexed expression");
    } else {
      break;
    }
  }
  ExprResult acc = expr(cur);
  const Location start = loc(top); // every link starts where the innermost operand does
  for (size_t i = links.size(); i-- > 0;) {
    KilnParser::ExprContext *link = links[i];
    if (auto *b = dynamic_cast<KilnParser::BinaryExprContext *>(link)) {
      antlr4::Token *op = required(b->op, "binary operator");
      ExprResult rhs = expr(required(b->expr(1), "right operand"));
      unsigned depth = checkDepth(std::max(acc.depth, rhs.depth) + 1, loc(op));
      acc = {std::make_unique<ast::BinaryExpr>(start, binaryOpFor(op->getType()), loc(op),
                                               std::move(acc.node), std::move(rhs.node)),
             depth};
    } else if (auto *m = dynamic_cast<KilnParser::MethodExprContext *>(link)) {
      antlr4::Token *name = required(m->IDENT(), "method name")->getSymbol();
      ArgsResult a;
      if (m->argList())
        a = args(m->argList());
      Location dot = loc(required(m->DOT(), "'.'")->getSymbol());
      unsigned depth = checkDepth(std::max(acc.depth, a.depth) + 1, dot);
      acc = {std::make_unique<ast::MethodExpr>(start, std::move(acc.node), name->getText(),
                                               loc(name), std::move(a.args), m->LPAREN() == nullptr),
             depth};
    } else {
      auto *ix = static_cast<KilnParser::IndexExprContext *>(link);
      std::vector<ast::IndexItem> items;
      for (KilnParser::IndexItemContext *item : ix->indexItem())
        items.push_back({loc(item), item->KW_NONE() ? ast::IndexItemKind::NewAxis
                                                    : ast::IndexItemKind::Slice});
      unsigned depth = checkDepth(acc.depth + 1, loc(ix->LBRACK()->getSymbol()));
      acc = {std::make_unique<ast::IndexExpr>(start, std::move(acc.node), std::move(items)),
             depth};
    }
  }
  return acc;
}

antlrcpp::Any ASTBuilder::visitMethodExpr(KilnParser::MethodExprContext *ctx) {
  exprSlot_ = spine(ctx);
  return {};
}

antlrcpp::Any ASTBuilder::visitIndexExpr(KilnParser::IndexExprContext *ctx) {
  exprSlot_ = spine(ctx);
  return {};
}

antlrcpp::Any ASTBuilder::visitBinaryExpr(KilnParser::BinaryExprContext *ctx) {
  exprSlot_ = spine(ctx);
  return {};
}

antlrcpp::Any ASTBuilder::visitCondExpr(KilnParser::CondExprContext *ctx) {
  // `a if c else b if d else e` nests to the right; the nesting pre-scan bounds the chain.
  ExprResult thenValue = expr(required(ctx->expr(0), "value"));
  ExprResult cond = expr(required(ctx->expr(1), "condition"));
  ExprResult elseValue = expr(required(ctx->expr(2), "else value"));
  Location ifLoc = loc(required(ctx->KW_IF(), "'if'")->getSymbol());
  unsigned depth = checkDepth(std::max({thenValue.depth, cond.depth, elseValue.depth}) + 1, ifLoc);
  exprSlot_ = {std::make_unique<ast::CondExpr>(loc(ctx), std::move(cond.node), std::move(thenValue.node),
                                               std::move(elseValue.node), ifLoc),
               depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitUnaryExpr(KilnParser::UnaryExprContext *ctx) {
  // `- - ~x`: collect the run of prefix operators, then wrap the operand inside out.
  std::vector<KilnParser::UnaryExprContext *> ops;
  KilnParser::ExprContext *cur = ctx;
  while (auto *u = dynamic_cast<KilnParser::UnaryExprContext *>(cur)) {
    ops.push_back(u);
    cur = required(u->expr(), "operand");
  }
  ExprResult acc = expr(cur);
  for (size_t i = ops.size(); i-- > 0;) {
    antlr4::Token *op = required(ops[i]->op, "unary operator");
    unsigned depth = checkDepth(acc.depth + 1, loc(op));
    acc = {std::make_unique<ast::UnaryExpr>(loc(op), unaryOpFor(op->getType()),
                                            std::move(acc.node)),
           depth};
  }
  exprSlot_ = std::move(acc);
  return {};
}

antlrcpp::Any ASTBuilder::visitCallExpr(KilnParser::CallExprContext *ctx) {
  antlr4::Token *callee = required(ctx->IDENT(), "callee")->getSymbol();
  ArgsResult a;
  if (ctx->argList())
    a = args(ctx->argList());
  unsigned depth = checkDepth(a.depth + 1, loc(callee));
  exprSlot_ = {std::make_unique<ast::CallExpr>(loc(callee), callee->getText(), loc(callee),
                                               std::move(a.args)),
               depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitNameExpr(KilnParser::NameExprContext *ctx) {
  antlr4::Token *name = required(ctx->IDENT(), "name")->getSymbol();
  exprSlot_ = {std::make_unique<ast::NameExpr>(loc(name), name->getText()), 1};
  return {};
}

antlrcpp::Any ASTBuilder::visitLiteralExpr(KilnParser::LiteralExprContext *ctx) {
  exprSlot_ = literal(required(ctx->literal(), "literal"));
  return {};
}

ASTBuilder::ExprResult ASTBuilder::literal(KilnParser::LiteralContext *ctx) {
  antlr4::Token *tok = ctx->getStart();
  Location where = loc(tok);
  // Literal text was validated while lexing (E0005/E0007); the builder only runs on
  // error-free input, so the decoders succeed here.
  switch (tok->getType()) {
  case KilnLexer::INT: {
    uint64_t value = 0;
    decodeIntLiteral(tok->getText(), value);
    return {std::make_unique<ast::IntLit>(where, value, tok->getText()), 1};
  }
  case KilnLexer::FLOAT: {
    double value = 0;
    decodeFloatLiteral(tok->getText(), value);
    return {std::make_unique<ast::FloatLit>(where, value, tok->getText()), 1};
  }
  case KilnLexer::KW_INF:
    return {std::make_unique<ast::FloatLit>(where, std::numeric_limits<double>::infinity(), "inf"),
            1};
  case KilnLexer::KW_NAN:
    return {std::make_unique<ast::FloatLit>(where, std::numeric_limits<double>::quiet_NaN(), "nan"),
            1};
  case KilnLexer::KW_TRUE: return {std::make_unique<ast::BoolLit>(where, true), 1};
  case KilnLexer::KW_FALSE: return {std::make_unique<ast::BoolLit>(where, false), 1};
  case KilnLexer::STRING:
    return {std::make_unique<ast::StringLit>(where, decodeStringLiteral(tokenBytes(tok)).value), 1};
  default: KILN_ICE("literal token " + std::to_string(tok->getType()) + " not in the grammar");
  }
}

antlrcpp::Any ASTBuilder::visitParenExpr(KilnParser::ParenExprContext *ctx) {
  // `(e)` is just `e`; any comma makes a tuple, so `(e,)` has one element.
  std::vector<KilnParser::ExprContext *> parts = ctx->expr();
  if (ctx->COMMA().empty()) {
    kiln_assert(parts.size() == 1, "parenthesised expression without exactly one operand");
    exprSlot_ = expr(parts[0]);
    return {};
  }
  ExprsResult elements = exprs(parts);
  Location where = loc(ctx);
  unsigned depth = checkDepth(elements.depth + 1, where);
  exprSlot_ = {std::make_unique<ast::TupleExpr>(where, std::move(elements.exprs)), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitListExpr(KilnParser::ListExprContext *ctx) {
  ExprsResult elements = exprs(ctx->expr());
  Location where = loc(ctx);
  unsigned depth = checkDepth(elements.depth + 1, where);
  exprSlot_ = {std::make_unique<ast::ListExpr>(where, std::move(elements.exprs)), depth};
  return {};
}

antlrcpp::Any ASTBuilder::visitDictExpr(KilnParser::DictExprContext *ctx) {
  std::vector<ast::DictEntry> entries;
  unsigned depth = 0;
  for (KilnParser::DictEntryContext *e : ctx->dictEntry()) {
    ast::DictEntry entry;
    entry.loc = loc(e);
    entry.key = required(e->IDENT(), "dictionary key")->getText();
    ExprResult value = expr(required(e->expr(), "dictionary value"));
    depth = std::max(depth, value.depth);
    entry.value = std::move(value.node);
    entries.push_back(std::move(entry));
  }
  Location where = loc(ctx);
  depth = checkDepth(depth + 1, where);
  exprSlot_ = {std::make_unique<ast::DictExpr>(where, std::move(entries)), depth};
  return {};
}

} // namespace kiln::syntax
