//===- SemaExpr.cpp - Names, literals and operators -----------------------===//
//
// Expressions are checked and lowered in one walk. Operators follow docs/language.md:
// the operands meet in one dtype (weak literals adopting the other side's), broadcast
// to one shape, and the op is emitted on identically typed operands; when both sides
// are constants the result is folded instead, which is what makes `BLOCK * 2` usable
// as a shape. Calls are in SemaCall.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include <cmath>
#include <limits>

namespace kiln::sema {

using ast::BinaryOp;
using ast::ExprKind;
using ast::UnaryOp;

Binding *Sema::lookupLocal(const std::string &name) const {
  return frames.empty() ? nullptr : frames.back()->lookup(name);
}

Val Sema::evalValue(const ast::Expr &e) { return evalValueOf(e, evalExpr(e)); }

Val Sema::evalValueOf(const ast::Expr &e, Val v) {
  switch (v.kind) {
  case Val::Kind::Poison:
  case Val::Kind::Value: return v;
  case Val::Kind::Void:
    error(e.loc, DiagCode::VoidValue, "this call produces no value, but a value is needed here");
    return Val::poison();
  case Val::Kind::Tuple:
    error(e.loc, DiagCode::TupleArity,
          "this expression produces " + std::to_string(v.elems.size()) +
              " values, but one value is needed here",
          "bind them with a tuple pattern: let (a, b) = ...");
    return Val::poison();
  case Val::Kind::Mask:
    error(e.loc, DiagCode::BlockMaskUse, "the block mask '" + masks[v.mask].name + "' is not a value",
          "use it as blocks(" + masks[v.mask].name + ", rb), " + masks[v.mask].name + ".rows, " + masks[v.mask].name +
              ".cols or " + masks[v.mask].name + ".elements(rb, cb)");
    return Val::poison();
  case Val::Kind::Fn:
    error(e.loc, DiagCode::NotAValue, "'" + v.fn->name + "' is a fn, not a value",
          "call it: " + v.fn->name + "(...); a fn is passed by name only to a fn's parameter, or as a combiner");
    return Val::poison();
  }
  return Val::poison();
}

static Val literalInt(const ast::IntLit &lit) {
  // Literals above INT64_MAX only fit u64; they carry that dtype (and a negative pattern).
  bool big = lit.value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return Val::ofConst(Type::scalar(big ? DType::U64 : DType::I32),
                      ConstVal::ofInt(static_cast<int64_t>(lit.value)), true, lit.loc);
}

Val Sema::evalExpr(const ast::Expr &e) {
  DepthGuard nesting(*this, e.loc);
  if (!nesting.ok)
    return Val::poison();
  switch (e.kind) {
  case ExprKind::IntLit: return literalInt(*ast::cast<ast::IntLit>(&e));
  case ExprKind::FloatLit:
    return Val::ofConst(Type::scalar(DType::F32),
                        ConstVal::ofFloat(ast::cast<ast::FloatLit>(&e)->value), true, e.loc);
  case ExprKind::BoolLit:
    return Val::ofConst(Type::scalar(DType::Bool),
                        ConstVal::ofBool(ast::cast<ast::BoolLit>(&e)->value), true, e.loc);
  case ExprKind::StringLit:
    error(e.loc, DiagCode::StringMisuse,
          "a string is only allowed in import, assert, static_assert and print");
    return Val::poison();
  case ExprKind::Name: return evalName(*ast::cast<ast::NameExpr>(&e));
  case ExprKind::Unary: {
    const auto &u = *ast::cast<ast::UnaryExpr>(&e);
    return unaryOp(u.op, evalValue(*u.operand), u.loc);
  }
  case ExprKind::Binary: {
    const auto &b = *ast::cast<ast::BinaryExpr>(&e);
    Val lhs = evalValue(*b.lhs);
    Val rhs = evalValue(*b.rhs);
    return binaryOp(b.op, lhs, rhs, b.opLoc.valid() ? b.opLoc : b.loc);
  }
  case ExprKind::Call: {
    const auto &c = *ast::cast<ast::CallExpr>(&e);
    return evalCall(c.callee, c.calleeLoc, c.loc, nullptr, c.args);
  }
  case ExprKind::Method: {
    const auto &m = *ast::cast<ast::MethodExpr>(&e);
    if (m.field || isMaskExpr(*m.receiver))
      return evalMember(m);
    return evalCall(m.method, m.methodLoc, m.loc, m.receiver.get(), m.args);
  }
  case ExprKind::Index: return evalIndex(*ast::cast<ast::IndexExpr>(&e));
  case ExprKind::List:
    error(e.loc, DiagCode::TypeMismatch,
          "a list is not a value; lists are only allowed as shape, permutation and "
          "attribute arguments");
    return Val::poison();
  case ExprKind::Dict:
    error(e.loc, DiagCode::TypeMismatch,
          "a dictionary is not a value; it is only allowed in @autotune configs");
    return Val::poison();
  case ExprKind::Tuple:
    error(e.loc, DiagCode::TypeMismatch, "a tuple is not a value here",
          "tuples are launch grids, and the several results of a fn or of split are unpacked "
          "where they are bound: let (a, b) = split(x);");
    return Val::poison();
  case ExprKind::Cond: return evalCond(*ast::cast<ast::CondExpr>(&e));
  }
  return Val::poison();
}

Val Sema::evalArgument(const ast::Expr &e) {
  Val v = evalExpr(e);
  return v.kind == Val::Kind::Fn || v.kind == Val::Kind::Mask ? v : evalValueOf(e, std::move(v));
}

Val Sema::evalValues(const ast::Expr &e) {
  const auto *t = ast::dyn_cast<ast::TupleExpr>(&e);
  if (!t)
    return evalExpr(e);
  Val tuple;
  tuple.kind = Val::Kind::Tuple;
  tuple.loc = e.loc;
  bool ok = true;
  for (const ast::ExprPtr &el : t->elements) {
    tuple.elems.push_back(evalValue(*el));
    ok &= !tuple.elems.back().isPoison();
  }
  return ok ? tuple : Val::poison();
}

/// `a if c else b`. A constant condition picks its side and the other is not checked (as
/// with a `const` if: `x if BLOCK > 1 else y`). Otherwise both sides are computed and
/// `where` picks per element, so a load on either side runs in every lane.
Val Sema::evalCond(const ast::CondExpr &e) {
  Val c = evalValue(*e.cond);
  if (!c.isValue())
    return Val::poison();
  if (c.type.pointer || !isBool(c.type.dtype)) {
    error(c.loc.valid() ? c.loc : e.cond->loc, DiagCode::NotBool,
          "the condition of 'if ... else' must be bool, got " + describe(c), "compare, e.g. n > 0");
    return Val::poison();
  }
  if (c.isConst())
    return evalValue(c.cst->i ? *e.thenValue : *e.elseValue);
  Val x = evalValue(*e.thenValue), y = evalValue(*e.elseValue);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  const BuiltinInfo *where = findBuiltin("where");
  CallArgs call;
  call.callee = "where";
  call.loc = e.ifLoc;
  call.calleeLoc = e.ifLoc;
  call.exprs = {e.cond.get(), e.thenValue.get(), e.elseValue.get()};
  call.locs = {e.cond->loc, e.thenValue->loc, e.elseValue->loc};
  call.positional = {true, true, true};
  call.vals = {c, x, y};
  return where->handler(*this, call);
}

//===--------------------------------------------------------------------===//
// Names
//===--------------------------------------------------------------------===//

Val Sema::evalName(const ast::NameExpr &e) {
  if (Binding *b = lookupLocal(e.name)) {
    Val v = b->value;
    v.loc = e.loc; // errors about the value point at this use
    return v;
  }
  auto it = globals.find(e.name);
  if (it != globals.end()) {
    GlobalItem &g = it->second;
    switch (g.kind) {
    case ast::ItemKind::Const: {
      Val v = globalConst(g);
      v.loc = e.loc;
      return v;
    }
    case ast::ItemKind::Fn:
      // A fn as a value: passed to a fn's parameter or bound with let (evalValue refuses
      // it where a tile or scalar is needed).
      return Val::ofFn(ast::cast<ast::FunctionItem>(g.item), e.loc);
    case ast::ItemKind::Kernel:
      error(e.loc, DiagCode::NotAValue, "'" + e.name + "' is a kernel, not a value");
      return Val::poison();
    case ast::ItemKind::Graph:
      error(e.loc, DiagCode::NotAValue, "'" + e.name + "' is a graph, not a value");
      return Val::poison();
    case ast::ItemKind::Import: break;
    }
  }
  if (parseDType(e.name)) {
    error(e.loc, DiagCode::NotAValue, "'" + e.name + "' is a type, not a value",
          "types are only allowed as arguments, as in zeros([N], " + e.name + ") or x.to(" +
              e.name + ")");
    return Val::poison();
  }
  if (findBuiltin(e.name)) {
    error(e.loc, DiagCode::NotAValue, "'" + e.name + "' is a builtin function, not a value",
          "call it: " + e.name + "(...)");
    return Val::poison();
  }
  std::string hint;
  std::string close = closestName(e.name, visibleNames());
  if (!close.empty())
    hint = "did you mean '" + close + "'?";
  error(e.loc, DiagCode::UndefinedName, "undefined name '" + e.name + "'", hint);
  return Val::poison();
}

std::optional<DType> Sema::evalDType(const ast::Expr &e) {
  if (const auto *n = ast::dyn_cast<ast::NameExpr>(&e)) {
    if (auto d = parseDType(n->name))
      return d;
    if (!lookupLocal(n->name) && !globals.count(n->name)) {
      std::vector<std::string> names;
      for (DType d : {DType::Bool, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                      DType::U16, DType::U32, DType::U64, DType::F8E4M3, DType::F8E5M2, DType::F16,
                      DType::BF16, DType::F32, DType::F64})
        names.push_back(dtStr(d));
      std::string close = closestName(n->name, names);
      error(e.loc, DiagCode::UnknownType, "unknown type '" + n->name + "'",
            close.empty() ? std::string() : "did you mean '" + close + "'?");
      return std::nullopt;
    }
  }
  error(e.loc, DiagCode::TypeMismatch, "expected a dtype such as f32 or i32 here");
  return std::nullopt;
}

Val Sema::evalConstExpr(const ast::Expr &e, const std::string &what, bool moduleScope) {
  // Build into a throw-away block: whatever ops the expression needs are discarded,
  // and only a folded constant survives.
  auto scratchBlock = std::make_unique<ir::Block>();
  InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(scratchBlock.get());
  size_t depth = frames.size();
  if (moduleScope || frames.empty()) {
    frames.push_back(std::make_unique<Frame>());
    frames.back()->scopes.push_back(std::make_unique<Scope>());
  }
  Val v;
  try {
    v = evalValue(e);
  } catch (...) {
    frames.resize(depth);
    throw;
  }
  frames.resize(depth);
  if (v.isPoison())
    return v;
  if (!v.isConst()) {
    error(e.loc, DiagCode::NotConstant, what + " must be a compile-time constant",
          "use literals, consts and operators on them");
    return Val::poison();
  }
  v.ir = nullptr;
  return v;
}

//===--------------------------------------------------------------------===//
// Operators
//===--------------------------------------------------------------------===//

static bool isComparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

/// The IR op of a binary operator (and the `pred` of comparisons).
static ir::OpKind binaryOpKind(BinaryOp op, const char *&pred) {
  pred = nullptr;
  switch (op) {
  case BinaryOp::Add: return ir::OpKind::Add;
  case BinaryOp::Sub: return ir::OpKind::Sub;
  case BinaryOp::Mul: return ir::OpKind::Mul;
  case BinaryOp::Div: return ir::OpKind::Div;
  case BinaryOp::Rem: return ir::OpKind::Rem;
  case BinaryOp::BitAnd: return ir::OpKind::And;
  case BinaryOp::BitOr: return ir::OpKind::Or;
  case BinaryOp::BitXor: return ir::OpKind::Xor;
  case BinaryOp::Shl: return ir::OpKind::Shl;
  case BinaryOp::Shr: return ir::OpKind::Shr;
  case BinaryOp::LogicalAnd: return ir::OpKind::And;
  case BinaryOp::LogicalOr: return ir::OpKind::Or;
  case BinaryOp::Pow: return ir::OpKind::Pow;
  case BinaryOp::Eq: pred = "eq"; return ir::OpKind::Cmp;
  case BinaryOp::Ne: pred = "ne"; return ir::OpKind::Cmp;
  case BinaryOp::Lt: pred = "lt"; return ir::OpKind::Cmp;
  case BinaryOp::Le: pred = "le"; return ir::OpKind::Cmp;
  case BinaryOp::Gt: pred = "gt"; return ir::OpKind::Cmp;
  case BinaryOp::Ge: pred = "ge"; return ir::OpKind::Cmp;
  }
  return ir::OpKind::Add;
}

/// Pointer operands: `p + i`, `i + p`, `p - i` and comparisons of two pointers.
static Val pointerOp(Sema &s, BinaryOp op, const Val &a, const Val &b, Location loc) {
  std::string sp = ast::binaryOpSpelling(op);
  if (isComparison(op) && a.type.pointer && b.type.pointer) {
    if (a.type.dtype != b.type.dtype) {
      s.error(loc, DiagCode::TypeMismatch,
              "cannot compare pointers of different types " + a.type.element().str() + " and " +
                  b.type.element().str());
      return Val::poison();
    }
    auto shape = s.commonShape(a.type.shape, b.type.shape, loc, "for '" + sp + "'");
    if (!shape)
      return Val::poison();
    Val x = s.broadcastTo(a, *shape, loc), y = s.broadcastTo(b, *shape, loc);
    const char *pred = nullptr;
    binaryOpKind(op, pred);
    return s.emitValue(ir::OpKind::Cmp, loc, {s.materialize(x), s.materialize(y)},
                       Type::tile(DType::Bool, *shape), {{"pred", ir::Attr(std::string(pred))}});
  }
  bool ok = (op == BinaryOp::Add && a.type.pointer != b.type.pointer) ||
            (op == BinaryOp::Sub && a.type.pointer && !b.type.pointer);
  if (!ok) {
    s.error(loc, DiagCode::PointerArith,
            "invalid pointer arithmetic: " + s.describe(a) + " " + sp + " " + s.describe(b),
            "only pointer + integer, integer + pointer and pointer - integer are allowed");
    return Val::poison();
  }
  const Val &p = a.type.pointer ? a : b;
  Val off = a.type.pointer ? b : a;
  if (!isInteger(off.type.dtype)) {
    s.error(loc, DiagCode::PointerArith,
            "a pointer offset must be an integer, got " + s.describe(off),
            isFloat(off.type.dtype) ? "convert it with .to(i32)" : "");
    return Val::poison();
  }
  if (off.weak) {
    // A literal offset is i32 unless it needs 64 bits.
    bool fits = intFitsDType(off.cst->i, off.type.dtype == DType::U64, DType::I32);
    off = s.adopt(off, fits ? DType::I32 : DType::I64);
  }
  if (op == BinaryOp::Sub) {
    if (!isSigned(off.type.dtype))
      off = s.castTo(off, DType::I64, loc); // -u would wrap to a huge forward offset
    off = s.unaryOp(ast::UnaryOp::Neg, off, loc);
    if (off.isPoison())
      return off;
  }
  if (off.isConst() && off.cst->i == 0 && broadcastsTo(off.type.shape, p.type.shape))
    return p;
  auto shape = s.commonShape(p.type.shape, off.type.shape, loc, "for '" + sp + "'");
  if (!shape)
    return Val::poison();
  Val pp = s.broadcastTo(p, *shape, loc), oo = s.broadcastTo(off, *shape, loc);
  return s.emitValue(ir::OpKind::PtrAdd, loc, {s.materialize(pp), s.materialize(oo)},
                     p.type.withShape(*shape));
}

/// The largest integer exponent `x ** n` expands into multiplications; beyond it (or for
/// a run-time exponent) a float base goes through `pow`.
constexpr int64_t kMaxExpandedPower = 64;

/// `x ** y`. A constant integer exponent multiplies x by itself (by squaring), as PyTorch
/// does for small powers: exact for integers (wrapping like `*`), one rounding per
/// product for floats, `x ** 0` is 1 even for NaN, and a negative exponent of a float
/// is the reciprocal. Any other exponent needs a float and is `pow(x, y)`.
static Val powerOp(Sema &s, const Val &a, const Val &b, Location loc) {
  for (const Val *x : {&a, &b})
    if (x->type.pointer || isBool(x->type.dtype)) {
      s.error(x->loc.valid() ? x->loc : loc, DiagCode::TypeMismatch,
              "'**' needs integer or float operands, got " + s.describe(*x),
              x->type.pointer ? "load the values first: load(p)" : "convert bool with .to(i32)");
      return Val::poison();
    }
  std::optional<int64_t> n;
  if (b.isConst() && b.cst->isInt() && !isFloat(b.type.dtype))
    n = b.cst->i;
  else if (b.isConst() && b.cst->isFloat() && isFloat(a.type.dtype) && !a.weak &&
           b.cst->f == std::nearbyint(b.cst->f) && std::fabs(b.cst->f) <= kMaxExpandedPower)
    n = static_cast<int64_t>(b.cst->f); // x ** 2.0 of a float x: the same as x ** 2
  if (n && (*n > kMaxExpandedPower || *n < -kMaxExpandedPower) && !isFloat(a.type.dtype))
    n.reset(); // reported below: an integer base needs a small exponent
  if (n && *n >= -kMaxExpandedPower && *n <= kMaxExpandedPower) {
    if (*n < 0 && !isFloat(a.type.dtype) && !(a.weak && a.cst->isFloat())) {
      s.error(loc, DiagCode::TypeMismatch,
              "an integer to a negative power is not an integer (" + s.describe(a) + " ** " +
                  std::to_string(*n) + ")",
              "convert the base: x.to(f32) ** " + std::to_string(*n));
      return Val::poison();
    }
    if (*n == 0) {
      // 1 of x's type and shape, whatever x holds.
      if (a.isConst() && a.weak)
        return a.cst->isFloat() ? Val::ofConst(a.type, ConstVal::ofFloat(1.0), true, loc)
                                : Val::ofConst(a.type, ConstVal::ofInt(1), true, loc);
      ConstVal one = isFloat(a.type.dtype) ? ConstVal::ofFloat(1.0) : ConstVal::ofInt(1);
      return Val::ofIR(s.buildConstant(a.type, one, loc), loc);
    }
    Val result, square = a;
    bool have = false;
    for (uint64_t k = static_cast<uint64_t>(*n < 0 ? -*n : *n);;) {
      if (k & 1) {
        result = have ? s.binaryOp(BinaryOp::Mul, result, square, loc) : square;
        have = true;
      }
      k >>= 1;
      if (!k)
        break;
      square = s.binaryOp(BinaryOp::Mul, square, square, loc);
    }
    if (*n > 0)
      return result;
    Val one = Val::ofConst(Type::scalar(DType::F32), ConstVal::ofFloat(1.0), true, loc);
    return s.binaryOp(BinaryOp::Div, one, result, loc);
  }
  DType d = s.meetDType(a, b);
  if (a.weak && b.weak && !isFloat(d))
    d = DType::F32;
  if (!isFloat(d)) {
    s.error(loc, DiagCode::TypeMismatch,
            "'**' of integers needs a constant exponent from 0 to " + std::to_string(kMaxExpandedPower) +
                ", got " + s.describe(a) + " ** " + s.describe(b),
            a.isConst() && a.cst->isInt() && a.cst->i == 2 ? "for powers of two shift: 1 << n"
                                                           : "convert to float: x.to(f32) ** y");
    return Val::poison();
  }
  if (a.isConst() && b.isConst() && a.weak && b.weak) {
    double x = a.cst->isFloat() ? a.cst->f : double(a.cst->i), y = b.cst->isFloat() ? b.cst->f : double(b.cst->i);
    return Val::ofConst(Type::scalar(d), ConstVal::ofFloat(std::pow(x, y)), true, loc);
  }
  auto shape = s.commonShape(a.type.shape, b.type.shape, loc, "for '**'");
  if (!shape)
    return Val::poison();
  Val x = s.broadcastTo(s.convertTo(a, d, loc), *shape, loc);
  Val y = s.broadcastTo(s.convertTo(b, d, loc), *shape, loc);
  return s.emitValue(ir::OpKind::Pow, loc, {s.materialize(x), s.materialize(y)}, x.type);
}

Val Sema::binaryOp(BinaryOp op, const Val &a, const Val &b, Location loc) {
  if (!a.isValue() || !b.isValue())
    return Val::poison();
  if (op == BinaryOp::Pow)
    return powerOp(*this, a, b, loc);
  std::string sp = ast::binaryOpSpelling(op);
  if (a.type.pointer || b.type.pointer)
    return pointerOp(*this, op, a, b, loc);

  bool logical = op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr;
  if (logical) {
    for (const Val *x : {&a, &b})
      if (!isBool(x->type.dtype)) {
        error(x->loc.valid() ? x->loc : loc, DiagCode::NotBool,
              "operands of '" + sp + "' must be bool, got " + describe(*x),
              "compare with 0 first, e.g. x != 0");
        return Val::poison();
      }
  }
  DType d = meetDType(a, b);
  bool arith = op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
               op == BinaryOp::Div || op == BinaryOp::Rem;
  bool bitwise = op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor;
  bool shift = op == BinaryOp::Shl || op == BinaryOp::Shr;
  if (arith && isBool(d)) {
    error(loc, DiagCode::TypeMismatch,
          "'" + sp + "' needs integer or float operands, got " + describe(a) + " and " +
              describe(b),
          "convert bool with .to(i32)");
    return Val::poison();
  }
  if ((bitwise || shift) && isFloat(d)) {
    error(loc, DiagCode::TypeMismatch,
          "'" + sp + "' needs integer" + std::string(bitwise ? " or bool" : "") +
              " operands, got " + describe(a) + " and " + describe(b),
          "use bitcast(x, u32) to work on the bits of a float");
    return Val::poison();
  }
  if (shift && isBool(d)) {
    error(loc, DiagCode::TypeMismatch,
          "'" + sp + "' needs integer operands, got " + describe(a) + " and " + describe(b));
    return Val::poison();
  }
  auto shape = commonShape(a.type.shape, b.type.shape, loc, "for '" + sp + "'");
  if (!shape)
    return Val::poison();

  bool cmp = isComparison(op);
  Type resultType = Type::tile(cmp ? DType::Bool : d, *shape);
  if (a.isConst() && b.isConst()) {
    bool weak = a.weak && b.weak;
    auto operand = [&](const Val &x) {
      if (weak)
        return *x.cst;
      if (x.weak)
        return *adopt(x, d).cst;
      return x.type.dtype == d ? *x.cst : castConst(*x.cst, x.type.dtype, d);
    };
    ConstVal ca = operand(a), cb = operand(b);
    std::string err;
    auto r = foldBinary(op, ca, cb, d, weak, err);
    if (!r) {
      error(loc, DiagCode::ConstEvalError, err);
      return Val::poison();
    }
    return Val::ofConst(resultType, *r, weak, loc);
  }
  Val x = broadcastTo(convertTo(a, d, loc), *shape, loc);
  Val y = broadcastTo(convertTo(b, d, loc), *shape, loc);
  const char *pred = nullptr;
  ir::OpKind kind = binaryOpKind(op, pred);
  ir::AttrMap attrs;
  if (pred)
    attrs["pred"] = std::string(pred);
  return emitValue(kind, loc, {materialize(x), materialize(y)}, resultType, std::move(attrs));
}

Val Sema::unaryOp(UnaryOp op, const Val &a, Location loc) {
  if (!a.isValue())
    return Val::poison();
  std::string sp = ast::unaryOpSpelling(op);
  if (a.type.pointer) {
    error(loc, DiagCode::PointerArith,
          "'" + sp + "' cannot be applied to a pointer (" + describe(a) + ")");
    return Val::poison();
  }
  DType d = a.type.dtype;
  ir::OpKind kind = ir::OpKind::Neg;
  switch (op) {
  case UnaryOp::Plus:
  case UnaryOp::Neg:
    if (isBool(d)) {
      error(loc, DiagCode::TypeMismatch,
            "'" + sp + "' needs an integer or float operand, got " + describe(a));
      return Val::poison();
    }
    if (op == UnaryOp::Plus)
      return a;
    break;
  case UnaryOp::Not:
    if (!isBool(d)) {
      error(loc, DiagCode::NotBool, "'!' needs a bool operand, got " + describe(a),
            "compare with 0 first (x == 0), or use '~' for the bitwise not of an integer");
      return Val::poison();
    }
    kind = ir::OpKind::Not;
    break;
  case UnaryOp::BitNot:
    if (isFloat(d)) {
      error(loc, DiagCode::TypeMismatch,
            "'~' needs an integer or bool operand, got " + describe(a));
      return Val::poison();
    }
    kind = ir::OpKind::Not;
    break;
  }
  if (a.isConst()) {
    std::string err;
    auto r = foldUnary(op, *a.cst, d, a.weak, err);
    if (!r) {
      error(loc, DiagCode::ConstEvalError, err);
      return Val::poison();
    }
    return Val::ofConst(a.type, *r, a.weak, loc);
  }
  Val x = a;
  return emitValue(kind, loc, {materialize(x)}, a.type);
}

//===--------------------------------------------------------------------===//
// Indexing: x[:, None]
//===--------------------------------------------------------------------===//

Val Sema::evalIndex(const ast::IndexExpr &e) {
  Val base = evalValue(*e.base);
  if (!base.isValue())
    return Val::poison();
  size_t slices = 0;
  for (const auto &item : e.items)
    slices += item.kind == ast::IndexItemKind::Slice;
  if (slices != base.type.rank()) {
    error(e.loc, DiagCode::InvalidArgument,
          "the index has " + std::to_string(slices) + " ':' but the value " + describe(base) +
              " has rank " + std::to_string(base.type.rank()),
          "write one ':' per axis of the tile and None where a unit axis is inserted");
    return Val::poison();
  }
  Val cur = strengthen(base);
  int64_t pos = 0;
  for (const auto &item : e.items) {
    if (item.kind == ast::IndexItemKind::NewAxis) {
      Shape s = cur.type.shape;
      s.insert(s.begin() + pos, 1);
      cur = emitValue(ir::OpKind::ExpandDims, item.loc.valid() ? item.loc : e.loc,
                      {materialize(cur)}, cur.type.withShape(s), {{"axis", ir::Attr(pos)}});
    }
    ++pos;
  }
  return cur;
}

} // namespace kiln::sema
