//===- SyntaxTestSupport.cpp - Helpers for the syntax unit tests ----------===//
#include "SyntaxTestSupport.h"

#include "frontend/ASTPrinter.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln::test {

std::string Parsed::diag(size_t i) const {
  if (i >= diags.size())
    return "<no diagnostic #" + std::to_string(i) + ">";
  const Diagnostic &d = diags[i];
  return diagCodeString(d.code) + " " + std::to_string(d.loc.line) + ":" +
         std::to_string(d.loc.col) + " " + d.message;
}

std::string Parsed::allDiags() const {
  std::string out;
  for (size_t i = 0; i < diags.size(); ++i)
    out += diag(i) + "\n";
  return out;
}

Parsed parseText(const std::string &text, const ParseLimits &limits, unsigned errorLimit) {
  Parsed r;
  SourceManager sm;
  uint32_t file = sm.addBuffer("test.kiln", text);
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  diags.setErrorLimit(errorLimit);
  diags.setHandler([&r](const Diagnostic &d) { r.diags.push_back(d); });
  r.module = parseFile(sm, file, diags, limits);
  if (r.module) {
    std::ostringstream os;
    printAST(*r.module, os);
    r.ast = os.str();
  }
  return r;
}

static std::string argsSexpr(const std::vector<ast::Arg> &args) {
  std::string out;
  for (const ast::Arg &a : args)
    out += a.name.empty() ? " " + sexpr(*a.value) : " (kw " + a.name + " " + sexpr(*a.value) + ")";
  return out;
}

std::string sexpr(const ast::Expr &e) {
  switch (e.kind) {
  case ast::ExprKind::IntLit: return std::to_string(ast::cast<ast::IntLit>(&e)->value);
  case ast::ExprKind::FloatLit: return ast::cast<ast::FloatLit>(&e)->spelling;
  case ast::ExprKind::BoolLit: return ast::cast<ast::BoolLit>(&e)->value ? "true" : "false";
  case ast::ExprKind::StringLit: return "\"" + ast::cast<ast::StringLit>(&e)->value + "\"";
  case ast::ExprKind::Name: return ast::cast<ast::NameExpr>(&e)->name;
  case ast::ExprKind::Unary: {
    const auto *u = ast::cast<ast::UnaryExpr>(&e);
    const char *name = "?";
    switch (u->op) {
    case ast::UnaryOp::Neg: name = "neg"; break;
    case ast::UnaryOp::Not: name = "not"; break;
    case ast::UnaryOp::BitNot: name = "bitnot"; break;
    case ast::UnaryOp::Plus: name = "pos"; break;
    }
    return std::string("(") + name + " " + sexpr(*u->operand) + ")";
  }
  case ast::ExprKind::Binary: {
    const auto *b = ast::cast<ast::BinaryExpr>(&e);
    return std::string("(") + ast::binaryOpSpelling(b->op) + " " + sexpr(*b->lhs) + " " +
           sexpr(*b->rhs) + ")";
  }
  case ast::ExprKind::Call: {
    const auto *c = ast::cast<ast::CallExpr>(&e);
    return "(call " + c->callee + argsSexpr(c->args) + ")";
  }
  case ast::ExprKind::Method: {
    const auto *m = ast::cast<ast::MethodExpr>(&e);
    return "(. " + sexpr(*m->receiver) + " " + m->method + argsSexpr(m->args) + ")";
  }
  case ast::ExprKind::Index: {
    const auto *ix = ast::cast<ast::IndexExpr>(&e);
    std::string out = "(index " + sexpr(*ix->base);
    for (const ast::IndexItem &item : ix->items)
      out += item.kind == ast::IndexItemKind::Slice ? " :" : " None";
    return out + ")";
  }
  case ast::ExprKind::List: {
    std::string out = "(list";
    for (const ast::ExprPtr &el : ast::cast<ast::ListExpr>(&e)->elements)
      out += " " + sexpr(*el);
    return out + ")";
  }
  case ast::ExprKind::Dict: {
    std::string out = "(dict";
    for (const ast::DictEntry &entry : ast::cast<ast::DictExpr>(&e)->entries)
      out += " (" + entry.key + " " + sexpr(*entry.value) + ")";
    return out + ")";
  }
  case ast::ExprKind::Tuple: {
    std::string out = "(tuple";
    for (const ast::ExprPtr &el : ast::cast<ast::TupleExpr>(&e)->elements)
      out += " " + sexpr(*el);
    return out + ")";
  }
  case ast::ExprKind::Cond: {
    const auto *c = ast::cast<ast::CondExpr>(&e);
    return "(if " + sexpr(*c->cond) + " " + sexpr(*c->thenValue) + " " + sexpr(*c->elseValue) + ")";
  }
  }
  return "?";
}

const ast::FunctionItem *findFunction(const ast::Module &m, const std::string &name) {
  for (const ast::ItemPtr &item : m.items)
    if (auto *f = ast::dyn_cast<ast::FunctionItem>(item.get()); f && f->name == name)
      return f;
  return nullptr;
}

std::string parseExprSexpr(const std::string &expr) {
  Parsed p = parseText("fn t() { let v = " + expr + "; }");
  if (!p.ok())
    return "<error: " + p.allDiags() + ">";
  const ast::FunctionItem *f = findFunction(*p.module, "t");
  if (!f || f->body->body.empty())
    return "<no statement>";
  auto *let = ast::dyn_cast<ast::BindingStmt>(f->body->body[0].get());
  if (!let)
    return "<not a let>";
  return sexpr(*let->init);
}

std::string printBody(const std::string &body) {
  Parsed p = parseText("fn t() {\n" + body + "\n}\n");
  if (!p.ok())
    return "<error: " + p.allDiags() + ">";
  // Drop "Module", "FnItem t", "BlockStmt" and six columns of indentation.
  std::istringstream in(p.ast);
  std::string line, out;
  for (int skip = 0; skip < 3 && std::getline(in, line); ++skip) {
  }
  while (std::getline(in, line))
    out += (line.size() > 6 ? line.substr(6) : line) + "\n";
  return out;
}

} // namespace kiln::test
