//===- ASTPrinter.cpp - `dslc --emit=ast` ---------------------------------===//
//
// One node per line, children indented by two spaces, the node's line:col last:
//
//   KernelItem add 5:1
//     Param x 5:12
//       PointerType 5:15
//         ScalarType f32 5:16
//     BlockStmt 5:70
//       LetStmt offs 6:5
//         BinaryExpr + 6:16
//
// Every field that carries meaning is shown: operators, names, literal values (and
// their spelling when it differs), keyword-argument names, written types. The output
// depends only on the tree, so golden tests can compare it as text.
//
//===----------------------------------------------------------------------===//
#include "frontend/ASTPrinter.h"

#include "frontend/Literals.h"

#include <charconv>
#include <cmath>
#include <ostream>
#include <string>

namespace kiln {

namespace {

class Printer {
public:
  explicit Printer(std::ostream &os) : os_(os) {}

  void module(const ast::Module &m) {
    os_ << "Module\n";
    Nest n(*this);
    for (const ast::ItemPtr &item : m.items)
      this->item(*item);
  }

private:
  /// Indents the lines printed while it is alive.
  struct Nest {
    explicit Nest(Printer &p) : p(p) { ++p.depth_; }
    ~Nest() { --p.depth_; }
    Printer &p;
  };

  /// Starts a node line: indentation and the node's label.
  std::ostream &open(const std::string &label) {
    for (unsigned i = 0; i < depth_; ++i)
      os_ << "  ";
    return os_ << label;
  }
  void close(Location loc) { os_ << ' ' << loc.line << ':' << loc.col << '\n'; }
  void line(const std::string &label, Location loc) {
    open(label);
    close(loc);
  }

  // --- items ---
  void item(const ast::Item &item) {
    switch (item.kind) {
    case ast::ItemKind::Import: {
      const auto &i = *ast::cast<ast::ImportItem>(&item);
      line("ImportItem " + syntax::quoteString(i.path), i.loc);
      return;
    }
    case ast::ItemKind::Const: {
      const auto &c = *ast::cast<ast::ConstItem>(&item);
      line("ConstItem " + c.name, c.loc);
      Nest n(*this);
      if (c.type)
        type(*c.type);
      expr(*c.value);
      return;
    }
    case ast::ItemKind::Fn:
    case ast::ItemKind::Kernel:
    case ast::ItemKind::Graph: {
      const auto &f = *ast::cast<ast::FunctionItem>(&item);
      const char *label = item.kind == ast::ItemKind::Fn       ? "FnItem "
                          : item.kind == ast::ItemKind::Kernel ? "KernelItem "
                                                               : "GraphItem ";
      line(label + f.name, f.loc);
      Nest n(*this);
      for (const ast::Attribute &a : f.attributes) {
        line("Attribute " + a.name, a.loc);
        Nest na(*this);
        args(a.args);
      }
      for (const ast::Param &p : f.params) {
        line(std::string("Param ") + (p.isConst ? "const " : "") + p.name, p.loc);
        Nest np(*this);
        if (p.type)
          type(*p.type);
        if (p.defaultValue)
          expr(*p.defaultValue);
      }
      if (f.body)
        stmt(*f.body);
      return;
    }
    }
  }

  // --- types ---
  void type(const ast::TypeExpr &t) {
    switch (t.kind) {
    case ast::TypeExprKind::Scalar: line("ScalarType " + t.name, t.loc); return;
    case ast::TypeExprKind::Pointer: line("PointerType", t.loc); break;
    case ast::TypeExprKind::Tile: line("TileType", t.loc); break;
    case ast::TypeExprKind::BlockMask: line("BlockMaskType", t.loc); break;
    }
    Nest n(*this);
    if (t.element)
      type(*t.element);
    for (const ast::ExprPtr &d : t.dims)
      expr(*d);
  }

  // --- statements ---
  void stmt(const ast::Stmt &s) {
    switch (s.kind) {
    case ast::StmtKind::Let:
    case ast::StmtKind::Var: {
      const auto &b = *ast::cast<ast::BindingStmt>(&s);
      std::string names;
      for (size_t i = 0; i < b.names.size(); ++i)
        names += (i ? ", " : "") + b.names[i];
      if (b.tuplePattern)
        names = "(" + names + ")";
      line((s.kind == ast::StmtKind::Var ? "VarStmt " : "LetStmt ") + names, s.loc);
      Nest n(*this);
      if (b.type)
        type(*b.type);
      expr(*b.init);
      return;
    }
    case ast::StmtKind::Assign: {
      const auto &a = *ast::cast<ast::AssignStmt>(&s);
      line("AssignStmt " + a.target + " " + ast::assignOpSpelling(a.op), s.loc);
      Nest n(*this);
      expr(*a.value);
      return;
    }
    case ast::StmtKind::Expr: {
      line("ExprStmt", s.loc);
      Nest n(*this);
      expr(*ast::cast<ast::ExprStmt>(&s)->expr);
      return;
    }
    case ast::StmtKind::For: {
      const auto &f = *ast::cast<ast::ForStmt>(&s);
      const char *range = "range";
      switch (f.range) {
      case ast::RangeKind::Range: range = "range"; break;
      case ast::RangeKind::StaticRange: range = "static_range"; break;
      case ast::RangeKind::Blocks: range = "blocks"; break;
      }
      line("ForStmt " + f.var + " in " + range, s.loc);
      Nest n(*this);
      for (const ast::ExprPtr &b : f.bounds)
        expr(*b);
      stmt(*f.body);
      return;
    }
    case ast::StmtKind::While: {
      const auto &w = *ast::cast<ast::WhileStmt>(&s);
      line("WhileStmt", s.loc);
      Nest n(*this);
      expr(*w.cond);
      stmt(*w.body);
      return;
    }
    case ast::StmtKind::If: {
      const auto &i = *ast::cast<ast::IfStmt>(&s);
      line("IfStmt", s.loc);
      Nest n(*this);
      expr(*i.cond);
      stmt(*i.thenBody);
      if (i.elseBody)
        stmt(*i.elseBody);
      return;
    }
    case ast::StmtKind::Return: {
      const auto &r = *ast::cast<ast::ReturnStmt>(&s);
      line("ReturnStmt", s.loc);
      Nest n(*this);
      if (r.value)
        expr(*r.value);
      return;
    }
    case ast::StmtKind::Block: {
      line("BlockStmt", s.loc);
      Nest n(*this);
      for (const ast::StmtPtr &child : ast::cast<ast::BlockStmt>(&s)->body)
        stmt(*child);
      return;
    }
    case ast::StmtKind::Launch: {
      const auto &l = *ast::cast<ast::LaunchStmt>(&s);
      line("LaunchStmt " + l.kernel, s.loc);
      Nest n(*this);
      // The grid has no node of its own; a label line keeps it apart from the arguments.
      open("Grid") << '\n';
      {
        Nest ng(*this);
        for (const ast::ExprPtr &g : l.grid)
          expr(*g);
      }
      args(l.args);
      return;
    }
    }
  }

  // --- expressions ---
  void args(const std::vector<ast::Arg> &list) {
    for (const ast::Arg &a : list) {
      line(a.name.empty() ? std::string("Arg") : "Arg " + a.name, a.loc);
      Nest n(*this);
      expr(*a.value);
    }
  }

  static std::string formatDouble(double v) {
    if (std::isnan(v))
      return "nan";
    if (std::isinf(v))
      return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v); // shortest round-trip form
    return ec == std::errc() ? std::string(buf, end) : std::string("?");
  }

  void expr(const ast::Expr &e) {
    switch (e.kind) {
    case ast::ExprKind::IntLit: {
      const auto &i = *ast::cast<ast::IntLit>(&e);
      std::string value = std::to_string(i.value);
      line("IntLit " + value + (i.spelling != value ? " '" + i.spelling + "'" : ""), e.loc);
      return;
    }
    case ast::ExprKind::FloatLit: {
      const auto &f = *ast::cast<ast::FloatLit>(&e);
      std::string value = formatDouble(f.value);
      line("FloatLit " + value + (f.spelling != value ? " '" + f.spelling + "'" : ""), e.loc);
      return;
    }
    case ast::ExprKind::BoolLit:
      line(ast::cast<ast::BoolLit>(&e)->value ? "BoolLit true" : "BoolLit false", e.loc);
      return;
    case ast::ExprKind::StringLit:
      line("StringLit " + syntax::quoteString(ast::cast<ast::StringLit>(&e)->value), e.loc);
      return;
    case ast::ExprKind::Name:
      line("NameExpr " + ast::cast<ast::NameExpr>(&e)->name, e.loc);
      return;
    case ast::ExprKind::Unary: {
      const auto &u = *ast::cast<ast::UnaryExpr>(&e);
      line(std::string("UnaryExpr ") + ast::unaryOpSpelling(u.op), e.loc);
      Nest n(*this);
      expr(*u.operand);
      return;
    }
    case ast::ExprKind::Binary: {
      const auto &b = *ast::cast<ast::BinaryExpr>(&e);
      line(std::string("BinaryExpr ") + ast::binaryOpSpelling(b.op), e.loc);
      Nest n(*this);
      expr(*b.lhs);
      expr(*b.rhs);
      return;
    }
    case ast::ExprKind::Call: {
      const auto &c = *ast::cast<ast::CallExpr>(&e);
      line("CallExpr " + c.callee, e.loc);
      Nest n(*this);
      args(c.args);
      return;
    }
    case ast::ExprKind::Method: {
      const auto &m = *ast::cast<ast::MethodExpr>(&e);
      line((m.field ? "FieldExpr " : "MethodExpr ") + m.method, e.loc);
      Nest n(*this);
      expr(*m.receiver);
      args(m.args);
      return;
    }
    case ast::ExprKind::Index: {
      const auto &ix = *ast::cast<ast::IndexExpr>(&e);
      line("IndexExpr", e.loc);
      Nest n(*this);
      expr(*ix.base);
      for (const ast::IndexItem &item : ix.items) {
        switch (item.kind) {
        case ast::IndexItemKind::Slice: line("IndexItem :", item.loc); break;
        case ast::IndexItemKind::NewAxis: line("IndexItem None", item.loc); break;
        }
      }
      return;
    }
    case ast::ExprKind::List: {
      line("ListExpr", e.loc);
      Nest n(*this);
      for (const ast::ExprPtr &el : ast::cast<ast::ListExpr>(&e)->elements)
        expr(*el);
      return;
    }
    case ast::ExprKind::Dict: {
      line("DictExpr", e.loc);
      Nest n(*this);
      for (const ast::DictEntry &entry : ast::cast<ast::DictExpr>(&e)->entries) {
        line("Entry " + entry.key, entry.loc);
        Nest ne(*this);
        expr(*entry.value);
      }
      return;
    }
    case ast::ExprKind::Tuple: {
      line("TupleExpr", e.loc);
      Nest n(*this);
      for (const ast::ExprPtr &el : ast::cast<ast::TupleExpr>(&e)->elements)
        expr(*el);
      return;
    }
    case ast::ExprKind::Cond: {
      const auto &c = *ast::cast<ast::CondExpr>(&e);
      line("CondExpr", e.loc);
      Nest n(*this);
      expr(*c.cond);
      expr(*c.thenValue);
      expr(*c.elseValue);
      return;
    }
    }
  }

  std::ostream &os_;
  unsigned depth_ = 0;
};

} // namespace

void printAST(const ast::Module &module, std::ostream &os) { Printer(os).module(module); }

} // namespace kiln
