//===- SemaStmt.cpp - Statements, scopes and SSA for vars across control flow ===//
//
// A `var` is an SSA value that statements replace: an assignment rebinds the name to
// a new value of the same type. Structured control flow turns the vars it changes into
// explicit values: a `for` or `while` carries every outer var its body assigns (found
// by a pre-scan of the body, before the op is built, since the op's block arguments
// must exist first), and an `if` yields every var either branch assigns. Constant
// conditions and static_range loops involve no op at all: the taken branch, or each
// unrolled iteration, is checked in place.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include <algorithm>
#include <set>

namespace kiln::sema {

using ast::StmtKind;

void Sema::pushScope() { frame().scopes.push_back(std::make_unique<Scope>()); }
void Sema::popScope() { frame().scopes.pop_back(); }

Binding *Sema::declare(BindingKind kind, const std::string &name, Location loc, Val value) {
  // The IR value takes the name it was bound to, so printed Tile IR reads like the
  // source (`%offs`, `%mask`); a value that already has a name (a parameter) keeps it.
  if (value.ir && value.ir->nameHint.empty())
    value.ir->nameHint = name;
  Scope &scope = *frame().scopes.back();
  if (Binding *prev = scope.find(name)) {
    error(loc, DiagCode::Redeclaration, "'" + name + "' is already declared in this scope",
          "choose another name, or declare it with var and assign to it",
          {note(prev->loc, "'" + name + "' was declared here")});
    prev->kind = kind;
    prev->value = std::move(value);
    return prev;
  }
  return scope.add(kind, name, loc, std::move(value));
}

void Sema::declareParam(BindingKind kind, const std::string &name, Location loc, Val value) {
  if (Binding *prev = frame().scopes.back()->find(name)) {
    prev->value = std::move(value);
    return;
  }
  frame().scopes.back()->add(kind, name, loc, std::move(value));
}

void Sema::checkBlock(const ast::BlockStmt &block, bool fnBody) {
  ScopeGuard guard(*this);
  for (size_t i = 0; i < block.body.size(); ++i) {
    if (diags.reachedErrorLimit())
      return;
    checkStmt(*block.body[i], fnBody && i + 1 == block.body.size());
  }
}

//===--------------------------------------------------------------------===//
// Pre-scan: which outer vars does a statement assign?
//===--------------------------------------------------------------------===//

namespace {
struct AssignScan {
  std::vector<std::set<std::string>> declared;
  std::vector<std::string> out;

  bool isLocal(const std::string &name) const {
    for (const auto &s : declared)
      if (s.count(name))
        return true;
    return false;
  }
  void block(const ast::BlockStmt &b, const std::string &loopVar = {}) {
    declared.emplace_back();
    if (!loopVar.empty())
      declared.back().insert(loopVar);
    for (const auto &s : b.body)
      stmt(*s);
    declared.pop_back();
  }
  void stmt(const ast::Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let:
    case StmtKind::Var:
      for (const auto &n : static_cast<const ast::BindingStmt &>(s).names)
        declared.back().insert(n);
      return;
    case StmtKind::Assign: {
      const auto &a = *ast::cast<ast::AssignStmt>(&s);
      if (!isLocal(a.target) && std::find(out.begin(), out.end(), a.target) == out.end())
        out.push_back(a.target);
      return;
    }
    case StmtKind::For: {
      const auto &f = *ast::cast<ast::ForStmt>(&s);
      block(*f.body, f.var);
      return;
    }
    case StmtKind::While: block(*ast::cast<ast::WhileStmt>(&s)->body); return;
    case StmtKind::If: {
      const auto &i = *ast::cast<ast::IfStmt>(&s);
      block(*i.thenBody);
      if (i.elseBody) {
        declared.emplace_back();
        stmt(*i.elseBody);
        declared.pop_back();
      }
      return;
    }
    case StmtKind::Block: block(*ast::cast<ast::BlockStmt>(&s)); return;
    case StmtKind::Expr:
    case StmtKind::Return:
    case StmtKind::Launch: return;
    }
  }
};
} // namespace

/// The outer vars that `stmts` assign, in order of first assignment.
static std::vector<Binding *> carriedVars(Sema &s, std::vector<const ast::Stmt *> stmts) {
  AssignScan scan;
  scan.declared.emplace_back();
  for (const ast::Stmt *st : stmts)
    if (st)
      scan.stmt(*st);
  std::vector<Binding *> out;
  for (const auto &name : scan.out) {
    Binding *b = s.lookupLocal(name);
    if (b && b->kind == BindingKind::Var && b->value.isValue())
      out.push_back(b);
  }
  return out;
}

/// Materialized current values of `vars` at the builder's position.
static std::vector<ir::Value *> currentValues(Sema &s, const std::vector<Binding *> &vars,
                                              const std::vector<ir::Value *> &fallback) {
  std::vector<ir::Value *> out;
  for (size_t i = 0; i < vars.size(); ++i) {
    Val v = vars[i]->value;
    // An erroneous assignment leaves poison; keep the op well formed with the old value.
    out.push_back(v.isValue() ? s.materialize(v) : fallback[i]);
  }
  return out;
}

//===--------------------------------------------------------------------===//
// Bindings and assignments
//===--------------------------------------------------------------------===//

static void checkBinding(Sema &s, const ast::BindingStmt &b) {
  Val v = b.tuplePattern ? s.evalValues(*b.init) : s.evalExpr(*b.init);
  if (v.kind == Val::Kind::Mask && (b.isMutable || b.type || b.tuplePattern)) {
    s.error(b.init->loc, DiagCode::BlockMaskUse, "a block mask cannot be stored in a var or a typed binding",
            "bind it with let, without a type: let m = " + s.masks[v.mask].name + ";");
    v = Val::poison();
  }
  if (v.kind == Val::Kind::Fn && (b.isMutable || b.type || b.tuplePattern)) {
    s.error(b.init->loc, DiagCode::NotAValue, "'" + v.fn->name + "' is a fn, not a value",
            "a fn may be bound with let, without a type: let f = " + v.fn->name + ";");
    v = Val::poison();
  }
  if (b.tuplePattern || b.names.size() != 1) {
    if (v.kind == Val::Kind::Value || v.kind == Val::Kind::Void ||
        (v.kind == Val::Kind::Tuple && v.elems.size() != b.names.size())) {
      s.error(b.init->loc, DiagCode::TupleArity,
              "the pattern binds " + std::to_string(b.names.size()) + " names but the value is " +
                  (v.kind == Val::Kind::Tuple ? std::to_string(v.elems.size()) + " values"
                                              : s.describe(v)));
      v = Val::poison();
    }
    for (size_t i = 0; i < b.names.size(); ++i) {
      Val e = v.kind == Val::Kind::Tuple ? v.elems[i] : Val::poison();
      if (b.isMutable)
        e = s.strengthen(e);
      s.declare(b.isMutable ? BindingKind::Var : BindingKind::Let, b.names[i], b.nameLocs[i], e);
    }
    return;
  }
  if (v.kind == Val::Kind::Void) {
    s.error(b.init->loc, DiagCode::VoidValue,
            "this call produces no value, so it cannot initialize '" + b.names[0] + "'");
    v = Val::poison();
  } else if (v.kind == Val::Kind::Tuple) {
    s.error(b.init->loc, DiagCode::TupleArity,
            "this expression produces " + std::to_string(v.elems.size()) +
                " values; bind them with a tuple pattern",
            "let (a, b) = ...");
    v = Val::poison();
  }
  if (b.type && v.isValue()) {
    std::optional<Type> t = s.resolveType(*b.type);
    std::optional<Val> c;
    if (t)
      c = s.coerce(v, *t, b.init->loc, DiagCode::TypeMismatch, "'" + b.names[0] + "'");
    v = c ? *c : Val::poison();
  }
  if (b.isMutable)
    v = s.strengthen(v);
  s.declare(b.isMutable ? BindingKind::Var : BindingKind::Let, b.names[0], b.nameLocs[0],
            std::move(v));
}

static ast::BinaryOp compoundOp(ast::AssignOp op) {
  switch (op) {
  case ast::AssignOp::Add: return ast::BinaryOp::Add;
  case ast::AssignOp::Sub: return ast::BinaryOp::Sub;
  case ast::AssignOp::Mul: return ast::BinaryOp::Mul;
  case ast::AssignOp::Div: return ast::BinaryOp::Div;
  case ast::AssignOp::Rem: return ast::BinaryOp::Rem;
  case ast::AssignOp::BitAnd: return ast::BinaryOp::BitAnd;
  case ast::AssignOp::BitOr: return ast::BinaryOp::BitOr;
  case ast::AssignOp::BitXor: return ast::BinaryOp::BitXor;
  case ast::AssignOp::Shl: return ast::BinaryOp::Shl;
  case ast::AssignOp::Shr: return ast::BinaryOp::Shr;
  case ast::AssignOp::Set: break;
  }
  KILN_ICE("compoundOp of a plain assignment");
}

static const char *bindingKindName(BindingKind k) {
  switch (k) {
  case BindingKind::Let: return "let binding";
  case BindingKind::Var: return "var";
  case BindingKind::Param: return "parameter";
  case BindingKind::Const: return "const";
  case BindingKind::LoopVar: return "loop variable";
  }
  return "name";
}

static void checkAssign(Sema &s, const ast::AssignStmt &a) {
  Binding *b = s.lookupLocal(a.target);
  if (!b || b->kind != BindingKind::Var) {
    if (b) {
      s.error(a.targetLoc, DiagCode::AssignToImmutable,
              std::string("cannot assign to ") + bindingKindName(b->kind) + " '" + a.target + "'",
              b->kind == BindingKind::Let ? "declare it with var to make it mutable" : "",
              {Sema::note(b->loc, "'" + a.target + "' is declared here")});
    } else if (s.globals.count(a.target)) {
      s.error(a.targetLoc, DiagCode::AssignToImmutable,
              "cannot assign to module item '" + a.target + "'");
    } else {
      std::string close = Sema::closestName(a.target, s.visibleNames());
      s.error(a.targetLoc, DiagCode::UndefinedName, "undefined name '" + a.target + "'",
              close.empty() ? "declare it first: var " + a.target + " = ..."
                            : "did you mean '" + close + "'?");
    }
    s.evalExpr(*a.value); // still check the right-hand side
    return;
  }
  Val rhs = s.evalValue(*a.value);
  if (!rhs.isValue() || !b->value.isValue())
    return;
  Val nv = a.op == ast::AssignOp::Set ? rhs : s.binaryOp(compoundOp(a.op), b->value, rhs, a.loc);
  if (!nv.isValue())
    return;
  const Type &t = b->value.type;
  bool ok = nv.type.pointer == t.pointer && (!t.pointer || nv.type.dtype == t.dtype) &&
            broadcastsTo(nv.type.shape, t.shape);
  if (ok && !t.pointer)
    ok = nv.weak ? !(nv.cst->isFloat() && !isFloat(t.dtype))
                 : promoteDTypes(t.dtype, nv.type.dtype) == t.dtype;
  if (!ok) {
    std::string now = s.describe(nv);
    // The fix is an initializer of the type the var takes here: its shape, and the
    // dtype the two meet in.
    std::string hint = "a var keeps the type of its initializer; ";
    if (t.pointer || nv.type.pointer) {
      hint += "use a new name for a value of another type";
    } else {
      DType d = nv.weak ? t.dtype : promoteDTypes(t.dtype, nv.type.dtype);
      Shape shape = broadcastsTo(t.shape, nv.type.shape) ? nv.type.shape : t.shape;
      if (shape.empty())
        hint += "declare it with the final dtype: var " + a.target + ": " + dtStr(d) + " = " +
                (isFloat(d) ? "0.0" : "0");
      else
        hint += "initialize it with the final type: var " + a.target + " = zeros(" + shapeString(shape) +
                ", " + dtStr(d) + ")";
    }
    s.error(a.loc, DiagCode::VarTypeChanged,
            "assignment would change the type of var '" + a.target + "' from " + t.str() + " to " +
                now,
            hint,
            {Sema::note(b->loc, "'" + a.target + "' is declared here with type " + t.str())});
    return;
  }
  if (!t.pointer)
    nv = s.convertTo(nv, t.dtype, a.loc);
  b->value = s.broadcastTo(nv, t.shape, a.loc);
  if (b->value.ir && b->value.ir->nameHint.empty())
    b->value.ir->nameHint = a.target; // printed as %acc_1, %acc_2, ...: each new value of the var
}

//===--------------------------------------------------------------------===//
// Loops
//===--------------------------------------------------------------------===//

/// Where bound `i` of (start, end, step) was written; the range's location for a
/// bound left to its default.
static Location boundLoc(const ast::ForStmt &f, size_t i) {
  size_t n = f.bounds.size();
  if (n == 1)
    return i == 1 ? f.bounds[0]->loc : f.rangeLoc;
  if (i < n)
    return f.bounds[i]->loc;
  return f.rangeLoc;
}

/// Evaluates range bounds to (start, end, step) of one integer dtype.
static bool rangeBounds(Sema &s, const ast::ForStmt &f, std::vector<Val> &out, DType &dtype) {
  if (f.bounds.empty() || f.bounds.size() > 3) {
    s.error(f.rangeLoc, DiagCode::ArgumentCount,
            "range takes 1 to 3 arguments (end | start, end | start, end, step), got " +
                std::to_string(f.bounds.size()));
    return false;
  }
  std::vector<Val> vals;
  bool ok = true;
  for (const auto &e : f.bounds) {
    Val v = s.evalValue(*e);
    if (v.isValue() && (v.type.pointer || !v.type.isScalar() || !isInteger(v.type.dtype))) {
      s.error(e->loc, DiagCode::TypeMismatch,
              "range bounds must be integer scalars, got " + s.describe(v));
      v = Val::poison();
    }
    ok &= v.isValue();
    vals.push_back(v);
  }
  if (!ok)
    return false;
  Location l = f.rangeLoc;
  if (vals.size() == 1)
    vals.insert(vals.begin(), Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(0), true, l));
  if (vals.size() == 2)
    vals.push_back(Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(1), true, l));
  Val acc = vals[0];
  for (size_t i = 1; i < 3; ++i) {
    DType d = s.meetDType(acc, vals[i]);
    acc.type = Type::scalar(d);
    acc.weak = acc.weak && vals[i].weak;
  }
  dtype = acc.type.dtype;
  if (vals[2].isConst() && vals[2].cst->i == 0) {
    s.error(boundLoc(f, 2), DiagCode::LoopStepZero,
            "the step of the loop is 0, so it would never end");
    return false;
  }
  out = vals;
  return true;
}

static void checkStaticFor(Sema &s, const ast::ForStmt &f) {
  std::vector<Val> b;
  DType d = DType::I32;
  if (!rangeBounds(s, f, b, d))
    return;
  for (size_t i = 0; i < 3; ++i)
    if (!b[i].isConst()) {
      s.error(boundLoc(f, i), DiagCode::StaticRangeBounds,
              "static_range bounds must be compile-time constants",
              "use range(...) for a loop with run-time bounds");
      return;
    }
  int64_t start = b[0].cst->i, end = b[1].cst->i, step = b[2].cst->i;
  // Count in unsigned arithmetic so that extreme bounds cannot overflow.
  uint64_t count = 0;
  uint64_t ustart = static_cast<uint64_t>(start), uend = static_cast<uint64_t>(end);
  if (step > 0 && end > start)
    count = (uend - ustart - 1) / static_cast<uint64_t>(step) + 1;
  else if (step < 0 && end < start)
    count = (ustart - uend - 1) / (0 - static_cast<uint64_t>(step)) + 1;
  if (count > static_cast<uint64_t>(Sema::kMaxUnroll)) {
    s.error(f.rangeLoc, DiagCode::StaticRangeBounds,
            "static_range would unroll " + std::to_string(count) + " iterations; at most " +
                std::to_string(Sema::kMaxUnroll) + " are allowed",
            "use range(...) for long loops");
    return;
  }
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
    int64_t v = start + k * step;
    unsigned before = s.diags.errorCount();
    {
      ScopeGuard guard(s);
      s.declare(BindingKind::LoopVar, f.var, f.varLoc,
                Val::ofConst(Type::scalar(d), ConstVal::ofInt(v), true, f.varLoc));
      s.checkBlock(*f.body);
    }
    // One report per problem: later iterations would repeat the same errors.
    if (s.diags.errorCount() != before)
      break;
  }
}

static void checkFor(Sema &s, const ast::ForStmt &f) {
  if (f.range == ast::RangeKind::StaticRange)
    return checkStaticFor(s, f);
  std::vector<Val> b;
  DType d = DType::I32;
  // blocks(mask, rb) runs over the entries of block row rb (SemaSparsity.cpp).
  std::optional<Sema::BlocksRange> blocks;
  if (f.range == ast::RangeKind::Blocks)
    blocks = s.blocksRange(f);
  if (f.range == ast::RangeKind::Blocks ? !blocks : !rangeBounds(s, f, b, d)) {
    // Still check the body (without building a loop) so that its errors are reported.
    ScopeGuard guard(s);
    s.declare(BindingKind::LoopVar, f.var, f.varLoc, Val::poison());
    s.checkBlock(*f.body);
    return;
  }
  std::vector<ir::Value *> operands;
  if (blocks) {
    Val one = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(1), false, f.rangeLoc);
    operands = {blocks->begin, blocks->end, s.materialize(one)};
  }
  for (Val &v : b) {
    Val c = s.convertTo(v, d, f.rangeLoc);
    operands.push_back(s.materialize(c));
  }
  std::vector<Binding *> vars = carriedVars(s, {f.body.get()});
  std::vector<Type> types;
  for (Binding *v : vars) {
    Val cur = v->value;
    operands.push_back(s.materialize(cur));
    types.push_back(cur.type);
  }
  ir::AttrMap attrs;
  if (blocks)
    attrs["block_mask"] = s.masks[blocks->mask].name;
  ir::Op *op = s.emit(ir::OpKind::For, f.loc, operands, types, std::move(attrs), 1);
  ir::Block *body = op->region(0);
  ir::Value *iv = body->addArgument(Type::scalar(d), blocks ? f.var + "_entry" : f.var);
  std::vector<ir::Value *> args;
  for (Binding *v : vars) {
    args.push_back(body->addArgument(v->value.type, v->name));
    v->value = Val::ofIR(args.back(), v->loc);
  }
  {
    InsertionGuard ig(s.builder);
    s.builder.setInsertionPointToEnd(body);
    ScopeGuard guard(s);
    Val var = blocks ? s.enterBlocksIteration(*blocks, iv, f.varLoc) : Val::ofIR(iv, f.varLoc);
    s.declare(BindingKind::LoopVar, f.var, f.varLoc, var);
    s.checkBlock(*f.body);
    if (blocks)
      s.leaveBlocksIteration();
    s.emit(ir::OpKind::Yield, f.body->closeLoc.valid() ? f.body->closeLoc : f.loc,
           currentValues(s, vars, args), {});
  }
  for (size_t i = 0; i < vars.size(); ++i)
    vars[i]->value = Val::ofIR(op->result(i), f.loc);
}

static bool requireBoolScalar(Sema &s, const Val &c, Location loc, const char *what) {
  if (!c.isValue())
    return false;
  if (!c.type.pointer && c.type.isScalar() && isBool(c.type.dtype))
    return true;
  s.error(loc, DiagCode::NotBool,
          std::string("the condition of ") + what + " must be a bool scalar, got " + s.describe(c),
          !c.type.isScalar() && isBool(c.type.dtype)
              ? std::string("reduce the tile first (e.g. max(c.to(i32)) > 0), or use "
                            "where(c, a, b) for a per-element choice")
              : std::string("compare, e.g. x != 0"));
  return false;
}

static void checkWhile(Sema &s, const ast::WhileStmt &w) {
  std::vector<Binding *> vars = carriedVars(s, {w.body.get()});
  std::vector<ir::Value *> inits;
  std::vector<Type> types;
  for (Binding *v : vars) {
    Val cur = v->value;
    inits.push_back(s.materialize(cur));
    types.push_back(cur.type);
  }
  ir::Op *op = s.emit(ir::OpKind::While, w.loc, inits, types, {}, 2);
  ir::Block *before = op->region(0), *after = op->region(1);
  std::vector<ir::Value *> beforeArgs, afterArgs;
  for (Binding *v : vars) {
    beforeArgs.push_back(before->addArgument(v->value.type, v->name));
    afterArgs.push_back(after->addArgument(v->value.type, v->name));
  }
  {
    InsertionGuard ig(s.builder);
    s.builder.setInsertionPointToEnd(before);
    for (size_t i = 0; i < vars.size(); ++i)
      vars[i]->value = Val::ofIR(beforeArgs[i], vars[i]->loc);
    Val c = s.evalValue(*w.cond);
    if (!requireBoolScalar(s, c, w.cond->loc, "while"))
      c = Val::ofConst(Type::scalar(DType::Bool), ConstVal::ofBool(false), false, w.cond->loc);
    s.emit(ir::OpKind::Condition, w.cond->loc, {s.materialize(c)}, {});
  }
  {
    InsertionGuard ig(s.builder);
    s.builder.setInsertionPointToEnd(after);
    for (size_t i = 0; i < vars.size(); ++i)
      vars[i]->value = Val::ofIR(afterArgs[i], vars[i]->loc);
    s.checkBlock(*w.body);
    s.emit(ir::OpKind::Yield, w.body->closeLoc.valid() ? w.body->closeLoc : w.loc,
           currentValues(s, vars, afterArgs), {});
  }
  for (size_t i = 0; i < vars.size(); ++i)
    vars[i]->value = Val::ofIR(op->result(i), w.loc);
}

//===--------------------------------------------------------------------===//
// if / else
//===--------------------------------------------------------------------===//

static void checkElse(Sema &s, const ast::Stmt &e) {
  if (const auto *b = ast::dyn_cast<ast::BlockStmt>(&e))
    s.checkBlock(*b);
  else
    s.checkStmt(e, false); // else if
}

static void checkIf(Sema &s, const ast::IfStmt &st) {
  Val c = s.evalValue(*st.cond);
  if (!requireBoolScalar(s, c, st.cond->loc, "if")) {
    // Check both branches for their own errors; no IR is kept for this kernel.
    s.checkBlock(*st.thenBody);
    if (st.elseBody)
      checkElse(s, *st.elseBody);
    return;
  }
  if (c.isConst()) {
    // Like `if constexpr`: only the branch taken is compiled.
    if (c.cst->i)
      s.checkBlock(*st.thenBody);
    else if (st.elseBody)
      checkElse(s, *st.elseBody);
    return;
  }
  std::vector<Binding *> vars = carriedVars(s, {st.thenBody.get(), st.elseBody.get()});
  std::vector<Type> types;
  std::vector<Val> saved;
  std::vector<ir::Value *> outer;
  for (Binding *v : vars) {
    Val cur = v->value;
    outer.push_back(s.materialize(cur)); // defined before the if: valid in both branches
    v->value = cur;
    types.push_back(cur.type);
    saved.push_back(cur);
  }
  ir::Op *op = s.emit(ir::OpKind::If, st.loc, {s.materialize(c)}, types, {}, 2);
  for (unsigned r = 0; r < 2; ++r) {
    InsertionGuard ig(s.builder);
    s.builder.setInsertionPointToEnd(op->region(r));
    for (size_t i = 0; i < vars.size(); ++i)
      vars[i]->value = saved[i];
    Location end = st.loc;
    if (r == 0) {
      s.checkBlock(*st.thenBody);
      if (st.thenBody->closeLoc.valid())
        end = st.thenBody->closeLoc;
    } else if (st.elseBody) {
      checkElse(s, *st.elseBody);
    }
    s.emit(ir::OpKind::Yield, end, currentValues(s, vars, outer), {});
  }
  for (size_t i = 0; i < vars.size(); ++i)
    vars[i]->value = Val::ofIR(op->result(i), st.loc);
}

//===--------------------------------------------------------------------===//
// Dispatch
//===--------------------------------------------------------------------===//

void Sema::checkStmt(const ast::Stmt &s, bool lastOfFnBody) {
  DepthGuard nesting(*this, s.loc);
  if (!nesting.ok)
    return;
  switch (s.kind) {
  case StmtKind::Let:
  case StmtKind::Var: checkBinding(*this, static_cast<const ast::BindingStmt &>(s)); return;
  case StmtKind::Assign: checkAssign(*this, *ast::cast<ast::AssignStmt>(&s)); return;
  case StmtKind::Expr: evalExpr(*ast::cast<ast::ExprStmt>(&s)->expr); return;
  case StmtKind::For: checkFor(*this, *ast::cast<ast::ForStmt>(&s)); return;
  case StmtKind::While: checkWhile(*this, *ast::cast<ast::WhileStmt>(&s)); return;
  case StmtKind::If: checkIf(*this, *ast::cast<ast::IfStmt>(&s)); return;
  case StmtKind::Return: {
    // Misplaced returns were reported by the structural check (E0500/E0501).
    const auto &r = *ast::cast<ast::ReturnStmt>(&s);
    if (!lastOfFnBody || !frame().fn)
      return;
    frame().returned = r.value ? evalValues(*r.value) : Val::makeVoid();
    return;
  }
  case StmtKind::Block: checkBlock(*ast::cast<ast::BlockStmt>(&s)); return;
  case StmtKind::Launch:
    // Outside graphs the structural check reported it (E0506).
    if (loweringGraph)
      checkLaunch(*ast::cast<ast::LaunchStmt>(&s));
    return;
  }
}

} // namespace kiln::sema
