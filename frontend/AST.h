//===- AST.h - The Kiln abstract syntax tree ---------------------*- C++ -*-===//
//
// The AST mirrors the source: it is built by the ANTLR visitor (ASTBuilder.cpp), which
// does nothing but build, and it is checked and lowered by semantic analysis
// (Sema*.cpp). Every node carries the Location of its first token. Nodes are plain
// structs owned through unique_ptr; a `kind` field with `isa<>`/`cast<>` helpers
// replaces RTTI.
//
// Types written in source (`*f32`, `tile<f32, [M, N]>`) stay syntax here (TypeExpr):
// their dimensions may name consts, so they are resolved during semantic analysis.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Location.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::ast {

//===--------------------------------------------------------------------===//
// Expressions
//===--------------------------------------------------------------------===//

enum class ExprKind {
  IntLit,    ///< 42, 0x2A, 1_000 (value fits in uint64)
  FloatLit,  ///< 3.5, 1e-6, inf, nan
  BoolLit,   ///< true, false
  StringLit, ///< "..." (only meaningful in import/assert/print)
  Name,      ///< identifier (also dtype names such as f32 used as arguments)
  Unary,     ///< -x, !x, ~x
  Binary,    ///< x + y, x && y, ...
  Call,      ///< f(a, b, key = c)
  Method,    ///< x.to(bf16)
  Index,     ///< x[:, None]
  List,      ///< [a, b, c]
  Dict,      ///< {BLOCK: 64, num_warps: 4} (autotune configs)
  Tuple,     ///< (a,) or (a, b) (launch grids)
  Cond,      ///< a if c else b
};

struct Expr {
  ExprKind kind;
  Location loc;
  explicit Expr(ExprKind k, Location l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntLit : Expr {
  uint64_t value;
  std::string spelling; ///< as written, for messages
  IntLit(Location l, uint64_t v, std::string s)
      : Expr(ExprKind::IntLit, l), value(v), spelling(std::move(s)) {}
  static constexpr ExprKind Kind = ExprKind::IntLit;
};

struct FloatLit : Expr {
  double value;
  std::string spelling;
  FloatLit(Location l, double v, std::string s)
      : Expr(ExprKind::FloatLit, l), value(v), spelling(std::move(s)) {}
  static constexpr ExprKind Kind = ExprKind::FloatLit;
};

struct BoolLit : Expr {
  bool value;
  BoolLit(Location l, bool v) : Expr(ExprKind::BoolLit, l), value(v) {}
  static constexpr ExprKind Kind = ExprKind::BoolLit;
};

struct StringLit : Expr {
  std::string value; ///< unescaped
  StringLit(Location l, std::string v) : Expr(ExprKind::StringLit, l), value(std::move(v)) {}
  static constexpr ExprKind Kind = ExprKind::StringLit;
};

struct NameExpr : Expr {
  std::string name;
  NameExpr(Location l, std::string n) : Expr(ExprKind::Name, l), name(std::move(n)) {}
  static constexpr ExprKind Kind = ExprKind::Name;
};

enum class UnaryOp { Neg, Not /* ! */, BitNot /* ~ */, Plus };

struct UnaryExpr : Expr {
  UnaryOp op;
  ExprPtr operand;
  UnaryExpr(Location l, UnaryOp o, ExprPtr e)
      : Expr(ExprKind::Unary, l), op(o), operand(std::move(e)) {}
  static constexpr ExprKind Kind = ExprKind::Unary;
};

enum class BinaryOp {
  Add, Sub, Mul, Div, Rem,
  BitAnd, BitOr, BitXor, Shl, Shr,
  Eq, Ne, Lt, Le, Gt, Ge,
  LogicalAnd, LogicalOr,
  Pow, ///< x ** y
};
/// "+", "&&", ... as written in source.
const char *binaryOpSpelling(BinaryOp op);
const char *unaryOpSpelling(UnaryOp op);

struct BinaryExpr : Expr {
  BinaryOp op;
  Location opLoc; ///< location of the operator token
  ExprPtr lhs, rhs;
  BinaryExpr(Location l, BinaryOp o, Location ol, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::Binary, l), op(o), opLoc(ol), lhs(std::move(a)), rhs(std::move(b)) {}
  static constexpr ExprKind Kind = ExprKind::Binary;
};

/// One call argument; `name` is empty for a positional argument.
struct Arg {
  Location loc;
  std::string name;
  ExprPtr value;
};

struct CallExpr : Expr {
  std::string callee; ///< builtin, fn or kernel name
  Location calleeLoc;
  std::vector<Arg> args;
  CallExpr(Location l, std::string c, Location cl, std::vector<Arg> a)
      : Expr(ExprKind::Call, l), callee(std::move(c)), calleeLoc(cl), args(std::move(a)) {}
  static constexpr ExprKind Kind = ExprKind::Call;
};

/// `receiver.method(args)`: `x.to(bf16)`, and any builtin in method form
/// (`x.sum(axis = 0)` is `sum(x, axis = 0)`).
struct MethodExpr : Expr {
  ExprPtr receiver;
  std::string method;
  Location methodLoc;
  std::vector<Arg> args;
  bool field = false; ///< `x.f` without parentheses: a field (mask.rows), not a call
  MethodExpr(Location l, ExprPtr r, std::string m, Location ml, std::vector<Arg> a, bool isField = false)
      : Expr(ExprKind::Method, l), receiver(std::move(r)), method(std::move(m)), methodLoc(ml),
        args(std::move(a)), field(isField) {}
  static constexpr ExprKind Kind = ExprKind::Method;
};

/// One subscript of `x[...]`: `:` keeps an axis, `None` inserts a unit axis.
enum class IndexItemKind { Slice, NewAxis };
struct IndexItem {
  Location loc;
  IndexItemKind kind;
};

struct IndexExpr : Expr {
  ExprPtr base;
  std::vector<IndexItem> items;
  IndexExpr(Location l, ExprPtr b, std::vector<IndexItem> i)
      : Expr(ExprKind::Index, l), base(std::move(b)), items(std::move(i)) {}
  static constexpr ExprKind Kind = ExprKind::Index;
};

struct ListExpr : Expr {
  std::vector<ExprPtr> elements;
  ListExpr(Location l, std::vector<ExprPtr> e) : Expr(ExprKind::List, l), elements(std::move(e)) {}
  static constexpr ExprKind Kind = ExprKind::List;
};

struct DictEntry {
  Location loc;
  std::string key;
  ExprPtr value;
};
struct DictExpr : Expr {
  std::vector<DictEntry> entries;
  DictExpr(Location l, std::vector<DictEntry> e) : Expr(ExprKind::Dict, l), entries(std::move(e)) {}
  static constexpr ExprKind Kind = ExprKind::Dict;
};

struct TupleExpr : Expr {
  std::vector<ExprPtr> elements;
  TupleExpr(Location l, std::vector<ExprPtr> e) : Expr(ExprKind::Tuple, l), elements(std::move(e)) {}
  static constexpr ExprKind Kind = ExprKind::Tuple;
};

/// `a if c else b`: the value of `a` where `c` holds, else of `b`.
struct CondExpr : Expr {
  ExprPtr cond, thenValue, elseValue;
  Location ifLoc; ///< the `if` token
  CondExpr(Location l, ExprPtr c, ExprPtr t, ExprPtr e, Location il)
      : Expr(ExprKind::Cond, l), cond(std::move(c)), thenValue(std::move(t)), elseValue(std::move(e)),
        ifLoc(il) {}
  static constexpr ExprKind Kind = ExprKind::Cond;
};

//===--------------------------------------------------------------------===//
// Types as written
//===--------------------------------------------------------------------===//

enum class TypeExprKind {
  Scalar,    ///< f32, i32, bool, ...
  Pointer,   ///< *T
  Tile,      ///< tile<T, [d0, d1]>
  BlockMask, ///< block_mask<BM, BN>
};

struct TypeExpr {
  TypeExprKind kind;
  Location loc;
  std::string name;                  ///< Scalar: the dtype spelling
  std::unique_ptr<TypeExpr> element; ///< Pointer: pointee; Tile: element type
  std::vector<ExprPtr> dims;         ///< Tile: shape; BlockMask: [BM, BN]
};
using TypeExprPtr = std::unique_ptr<TypeExpr>;

//===--------------------------------------------------------------------===//
// Statements
//===--------------------------------------------------------------------===//

enum class StmtKind {
  Let,     ///< let x = e;  let x: T = e;  let (a, b) = e;
  Var,     ///< var x = e;
  Assign,  ///< x = e;  x += e; ...
  Expr,    ///< e;   (calls: store, print, assert, static_assert, ...)
  For,     ///< for i in range(...) / static_range(...) { }
  While,   ///< while c { }
  If,      ///< if c { } else { } / else if
  Return,  ///< return e;  return;
  Block,   ///< { ... }
  Launch,  ///< launch k[(grid)](args);   (graph bodies only)
};

struct Stmt {
  StmtKind kind;
  Location loc;
  explicit Stmt(StmtKind k, Location l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
};
using StmtPtr = std::unique_ptr<Stmt>;

struct BlockStmt : Stmt {
  std::vector<StmtPtr> body;
  Location closeLoc; ///< location of the closing brace
  BlockStmt(Location l, std::vector<StmtPtr> b) : Stmt(StmtKind::Block, l), body(std::move(b)) {}
  static constexpr StmtKind Kind = StmtKind::Block;
};
using BlockPtr = std::unique_ptr<BlockStmt>;

/// `let` and `var` bindings. `names` has one entry unless a tuple pattern is used.
struct BindingStmt : Stmt {
  bool isMutable; ///< var
  std::vector<std::string> names;
  std::vector<Location> nameLocs;
  bool tuplePattern = false; ///< written as `let (a, b) = ...`
  TypeExprPtr type;          ///< optional annotation
  ExprPtr init;
  BindingStmt(StmtKind k, Location l) : Stmt(k, l), isMutable(k == StmtKind::Var) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Let || s->kind == StmtKind::Var; }
};

enum class AssignOp { Set, Add, Sub, Mul, Div, Rem, BitAnd, BitOr, BitXor, Shl, Shr };
const char *assignOpSpelling(AssignOp op);

struct AssignStmt : Stmt {
  std::string target;
  Location targetLoc;
  AssignOp op;
  ExprPtr value;
  AssignStmt(Location l, std::string t, Location tl, AssignOp o, ExprPtr v)
      : Stmt(StmtKind::Assign, l), target(std::move(t)), targetLoc(tl), op(o), value(std::move(v)) {}
  static constexpr StmtKind Kind = StmtKind::Assign;
};

struct ExprStmt : Stmt {
  ExprPtr expr;
  ExprStmt(Location l, ExprPtr e) : Stmt(StmtKind::Expr, l), expr(std::move(e)) {}
  static constexpr StmtKind Kind = StmtKind::Expr;
};

/// `Blocks` is `for kb in blocks(mask, row)` over the non-empty blocks of a block_mask
/// (LANGUAGE.md, Sparsity); its bounds are the two arguments (mask, row).
enum class RangeKind { Range, StaticRange, Blocks };

struct ForStmt : Stmt {
  std::string var;
  Location varLoc;
  RangeKind range;
  Location rangeLoc;
  std::vector<ExprPtr> bounds; ///< 1 to 3 expressions: (end) | (start, end) | (start, end, step)
  BlockPtr body;
  ForStmt(Location l) : Stmt(StmtKind::For, l) {}
  static constexpr StmtKind Kind = StmtKind::For;
};

struct WhileStmt : Stmt {
  ExprPtr cond;
  BlockPtr body;
  WhileStmt(Location l, ExprPtr c, BlockPtr b)
      : Stmt(StmtKind::While, l), cond(std::move(c)), body(std::move(b)) {}
  static constexpr StmtKind Kind = StmtKind::While;
};

struct IfStmt : Stmt {
  ExprPtr cond;
  BlockPtr thenBody;
  StmtPtr elseBody; ///< nullptr, a BlockStmt, or another IfStmt (else if)
  IfStmt(Location l) : Stmt(StmtKind::If, l) {}
  static constexpr StmtKind Kind = StmtKind::If;
};

struct ReturnStmt : Stmt {
  ExprPtr value; ///< may be null
  ReturnStmt(Location l, ExprPtr v) : Stmt(StmtKind::Return, l), value(std::move(v)) {}
  static constexpr StmtKind Kind = StmtKind::Return;
};

struct LaunchStmt : Stmt {
  std::string kernel;
  Location kernelLoc;
  std::vector<ExprPtr> grid;
  std::vector<Arg> args;
  LaunchStmt(Location l) : Stmt(StmtKind::Launch, l) {}
  static constexpr StmtKind Kind = StmtKind::Launch;
};

//===--------------------------------------------------------------------===//
// Items
//===--------------------------------------------------------------------===//

/// `@name(args)`, e.g. @num_warps(4), @autotune(configs = [...], key = [n]).
struct Attribute {
  Location loc;
  std::string name;
  std::vector<Arg> args;
};

struct Param {
  Location loc;
  std::string name;
  bool isConst = false; ///< `const NAME: T = default`
  TypeExprPtr type;     ///< may be null (generic fn parameter)
  ExprPtr defaultValue; ///< may be null
};

enum class ItemKind { Import, Const, Fn, Kernel, Graph };

struct Item {
  ItemKind kind;
  Location loc;
  std::vector<Attribute> attributes;
  explicit Item(ItemKind k, Location l) : kind(k), loc(l) {}
  virtual ~Item() = default;
};
using ItemPtr = std::unique_ptr<Item>;

struct ImportItem : Item {
  std::string path;
  Location pathLoc;
  ImportItem(Location l, std::string p, Location pl)
      : Item(ItemKind::Import, l), path(std::move(p)), pathLoc(pl) {}
  static constexpr ItemKind Kind = ItemKind::Import;
};

struct ConstItem : Item {
  std::string name;
  Location nameLoc;
  TypeExprPtr type; ///< optional
  ExprPtr value;
  ConstItem(Location l) : Item(ItemKind::Const, l) {}
  static constexpr ItemKind Kind = ItemKind::Const;
};

/// `fn`, `kernel` and `graph` items share this shape.
struct FunctionItem : Item {
  std::string name;
  Location nameLoc;
  std::vector<Param> params;
  BlockPtr body;
  FunctionItem(ItemKind k, Location l) : Item(k, l) {}
  static bool classof(const Item *i) {
    return i->kind == ItemKind::Fn || i->kind == ItemKind::Kernel || i->kind == ItemKind::Graph;
  }
};

/// One parsed source file.
struct Module {
  uint32_t file = 0; ///< SourceManager index
  std::vector<ItemPtr> items;
};

//===--------------------------------------------------------------------===//
// isa / cast / dyn_cast on the kind field
//===--------------------------------------------------------------------===//

template <typename T, typename B> bool isa(const B *node) {
  if constexpr (requires { T::classof(node); })
    return T::classof(node);
  else
    return node->kind == T::Kind;
}
template <typename T, typename B> T *cast(B *node) { return static_cast<T *>(node); }
template <typename T, typename B> const T *cast(const B *node) { return static_cast<const T *>(node); }
template <typename T, typename B> T *dyn_cast(B *node) {
  return node && isa<T>(node) ? static_cast<T *>(node) : nullptr;
}
template <typename T, typename B> const T *dyn_cast(const B *node) {
  return node && isa<T>(node) ? static_cast<const T *>(node) : nullptr;
}

} // namespace kiln::ast
