//===- SemaBuiltinsReduce.cpp - Reductions, scans, sorting, top-k ---------===//
//
// Every builtin here works along one axis of a tile. `axis` may be omitted on a 1-D
// tile and may be negative (-1 is the last axis). sum/prod/mean (and cumsum/cumprod)
// accumulate narrow dtypes in a wider one (docs/language.md); reduce and scan take a
// user fn as the combiner, which is inlined into the op's region with two scalar
// arguments of the element dtype.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

namespace kiln::sema {

using ir::OpKind;

/// The tile operand of an axis builtin: a non-pointer tile of rank >= 1.
static std::optional<Val> axisOperand(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  if (!x.isValue())
    return std::nullopt;
  if (x.type.pointer || x.type.isScalar()) {
    s.error(a.locs[0], DiagCode::TypeMismatch,
            a.callee + " works on a tile of values, got " + s.describe(x),
            x.type.pointer ? std::string("load the values first: load(p)")
                           : std::string("a scalar has no axis to work along"));
    return std::nullopt;
  }
  return x;
}

static Shape withoutAxis(const Shape &s, int64_t axis) {
  Shape r = s;
  r.erase(r.begin() + axis);
  return r;
}

/// `max(v, 0)` reads as ReLU but takes 0 as the axis, and would return the column
/// maxima everywhere without a word; so a reduction refuses a literal given positionally
/// after its tile (`-1` and `0.0` too), and says both things that may have been meant.
/// A named axis (`max(v, axis = 0)`) or a constant by name is taken as written.
static bool refuseLiteralAxis(Sema &s, CallArgs &a) {
  if (!a.has(1) || !a.positional[1])
    return false;
  const ast::Expr *e = a.exprs[1];
  std::string sign;
  if (const auto *u = ast::dyn_cast<ast::UnaryExpr>(e); u && u->op == ast::UnaryOp::Neg) {
    e = u->operand.get();
    sign = "-";
  }
  std::string literal;
  if (const auto *i = ast::dyn_cast<ast::IntLit>(e))
    literal = sign + i->spelling;
  else if (const auto *f = ast::dyn_cast<ast::FloatLit>(e))
    literal = sign + f->spelling;
  else
    return false;
  const bool hasElementwise = a.callee == "max" || a.callee == "min";
  const bool integral = !ast::isa<ast::FloatLit>(e); // only an integer can be an axis
  const std::string elementwise = a.callee == "max" ? "maximum" : "minimum";
  const std::string named = a.callee + "(v, axis = " + literal + ")";
  std::string hint;
  if (hasElementwise)
    hint = "for the elementwise " + elementwise + " of each element and " + literal +
           (a.callee == "max" ? " (ReLU)" : "") + " write " + elementwise + "(v, " + literal + ")" +
           (integral ? "; to reduce along an axis, name it: " + named : "");
  else if (integral)
    hint = "name the axis: " + named;
  s.error(a.locs[1], DiagCode::InvalidArgument,
          a.callee + " would take the " + literal + " after the tile as the axis to reduce along, not as " +
              (hasElementwise ? "a value to compare with" : "a second operand"),
          hint);
  return true;
}

/// sum, prod, max, min.
static Val reduceBuiltin(Sema &s, CallArgs &a) {
  if (a.has(1) && a.positional[1] && (a.callee == "max" || a.callee == "min")) {
    // max(a, b) of a scalar: a scalar has no axis, so the only reading is the
    // elementwise one (Python's max of two numbers).
    Val first = s.argValue(a, 0);
    if (first.isValue() && !first.type.pointer && first.type.isScalar()) {
      CallArgs pair = callOn(a, a.callee == "max" ? "maximum" : "minimum", {{0, first}, {1, s.argValue(a, 1)}});
      return minMaxPow(s, pair);
    }
  }
  auto x = axisOperand(s, a);
  if (!x || refuseLiteralAxis(s, a))
    return Val::poison();
  if (a.has(1) && (a.callee == "max" || a.callee == "min")) {
    // max(a, b) of two tiles is a common slip for the elementwise maximum.
    Val second = s.argValue(a, 1);
    if (second.isValue() && !second.isConst()) {
      s.error(a.locs[1], DiagCode::NotConstant,
              "the axis of " + a.callee + " must be a compile-time constant",
              "for the elementwise " + std::string(a.callee == "max" ? "maximum" : "minimum") +
                  " of two tiles use " + (a.callee == "max" ? "maximum" : "minimum") + "(a, b)");
      return Val::poison();
    }
  }
  const bool mean = a.callee == "mean";
  if (mean && !isFloat(x->type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, "mean needs a float tile, got " + s.describe(*x),
            "convert it first: mean(x.to(f32))");
    return Val::poison();
  }
  auto axis = s.argAxis(a, 1, x->type.rank());
  if (!axis)
    return Val::poison();
  bool accumulate = a.callee == "sum" || a.callee == "prod" || mean;
  Val in = *x;
  if (accumulate)
    in = s.castTo(in, sumAccumulatorDType(in.type.dtype), a.loc);
  Type result = in.type.withShape(withoutAxis(in.type.shape, *axis));
  Val r = s.emitValue(OpKind::Reduce, a.loc, {s.materialize(in)}, result,
                      {{"axis", ir::Attr(*axis)}, {"kind", ir::Attr(mean ? std::string("sum") : a.callee)}});
  if (!mean)
    return r;
  // mean: the wide sum over the axis length, rounded once to x's dtype (torch.mean).
  Val length = Val::ofConst(Type::scalar(DType::F32),
                            ConstVal::ofFloat(double(x->type.shape[*axis])), true, a.loc);
  return s.castTo(s.binaryOp(ast::BinaryOp::Div, r, length, a.loc), x->type.dtype, a.loc);
}

static Val argReduce(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x || refuseLiteralAxis(s, a))
    return Val::poison();
  auto axis = s.argAxis(a, 1, x->type.rank());
  auto dtype = s.argDType(a, 2, DType::I32);
  if (!axis || !dtype)
    return Val::poison();
  if (*dtype != DType::I32 && *dtype != DType::I64) {
    s.error(a.locs[2], DiagCode::InvalidArgument,
            a.callee + " returns i32 or i64 indices, not " + dtStr(*dtype));
    return Val::poison();
  }
  Val index = s.emitValue(a.callee == "argmax" ? OpKind::Argmax : OpKind::Argmin, a.loc, {s.materialize(*x)},
                          Type::tile(DType::I32, withoutAxis(x->type.shape, *axis)), {{"axis", ir::Attr(*axis)}});
  // A tile holds at most 2^24 elements, so an i32 index always fits; i64 is for the
  // pointer arithmetic and the torch.argmax results it meets.
  return s.castTo(index, *dtype, a.loc);
}

/// cumsum, cumprod.
static Val cumulative(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto axis = s.argAxis(a, 1, x->type.rank());
  if (!axis)
    return Val::poison();
  Val in = s.castTo(*x, sumAccumulatorDType(x->type.dtype), a.loc);
  std::string kind = a.callee == "cumsum" ? "sum" : "prod";
  return s.emitValue(OpKind::Scan, a.loc, {s.materialize(in)}, in.type,
                     {{"axis", ir::Attr(*axis)}, {"kind", ir::Attr(kind)}});
}

/// reduce(x, axis, combine) and scan(x, axis, combine).
static Val customCombine(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto axis = s.argAxis(a, 1, x->type.rank());
  if (!a.has(2)) {
    s.error(a.loc, DiagCode::ArgumentCount, a.callee + " is missing argument 'combine'",
            "pass the name of a fn of two parameters, e.g. " + a.callee + "(x, 0, add)");
    return Val::poison();
  }
  const ast::FunctionItem *fn = s.argFn(a, 2);
  if (!axis || !fn)
    return Val::poison();
  if (fn->params.size() != 2) {
    s.error(a.locs[2], DiagCode::InvalidArgument,
            "the combine fn '" + fn->name + "' must take two parameters, it takes " +
                std::to_string(fn->params.size()));
    return Val::poison();
  }
  bool scan = a.callee == "scan";
  Type elem = Type::scalar(x->type.dtype);
  Type result = scan ? x->type : x->type.withShape(withoutAxis(x->type.shape, *axis));
  ir::Op *op = s.emit(scan ? OpKind::Scan : OpKind::Reduce, a.loc, {s.materialize(*x)}, {result},
                      {{"axis", ir::Attr(*axis)}, {"kind", ir::Attr(std::string("custom"))}}, 1);
  ir::Block *body = op->region(0);
  ir::Value *acc = body->addArgument(elem, fn->params[0].name);
  ir::Value *el = body->addArgument(elem, fn->params[1].name);
  bool ok = true;
  {
    InsertionGuard guard(s.builder);
    s.builder.setInsertionPointToEnd(body);
    ++s.combinerDepth;
    Val r = s.callFn(*fn, {Val::ofIR(acc, a.loc), Val::ofIR(el, a.loc)}, a.loc);
    --s.combinerDepth;
    if (r.kind == Val::Kind::Void) {
      s.error(a.locs[2], DiagCode::VoidValue, "the combine fn '" + fn->name + "' returns no value");
      ok = false;
    } else if (r.kind == Val::Kind::Tuple) {
      s.error(a.locs[2], DiagCode::TypeMismatch,
              "the combine fn '" + fn->name + "' must return one value");
      ok = false;
    } else if (r.isValue()) {
      if (r.weak && !(r.cst->isFloat() && !isFloat(elem.dtype)))
        r = s.adopt(r, elem.dtype);
      if (r.type != elem) {
        s.error(a.locs[2], DiagCode::TypeMismatch,
                "the combine fn '" + fn->name + "' must return " + elem.str() + " (the dtype of " +
                    x->type.str() + "), got " + s.describe(r),
                "convert the result with .to(" + dtStr(elem.dtype) + ")");
        ok = false;
      }
    } else {
      ok = false;
    }
    // Terminate the region in every case so that the op stays well formed.
    s.emit(OpKind::Yield, a.loc, {ok ? s.materialize(r) : acc}, {});
  }
  if (!ok)
    return Val::poison();
  return Val::ofIR(op->result(), a.loc);
}

static Val sortBuiltin(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto axis = s.argAxis(a, 1, x->type.rank());
  std::optional<bool> desc = a.has(2) ? s.argConstBool(a, 2, "descending") : false;
  if (!axis || !desc)
    return Val::poison();
  return s.emitValue(OpKind::Sort, a.loc, {s.materialize(*x)}, x->type,
                     {{"axis", ir::Attr(*axis)}, {"descending", ir::Attr(*desc)}});
}

/// topk(x, k, axis), argtopk(x, k, axis).
static Val topk(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto k = s.argConstInt(a, 1, "k");
  auto axis = s.argAxis(a, 2, x->type.rank());
  if (!k || !axis)
    return Val::poison();
  int64_t n = x->type.shape[*axis];
  if (*k < 1 || *k > n) {
    s.error(a.locs[1], DiagCode::InvalidArgument,
            "k = " + std::to_string(*k) + " is out of range: " + a.callee + " along an axis of " +
                std::to_string(n) + " elements needs 1 <= k <= " + std::to_string(n));
    return Val::poison();
  }
  Shape out = x->type.shape;
  out[*axis] = *k;
  bool indices = a.callee == "argtopk";
  return s.emitValue(indices ? OpKind::ArgTopK : OpKind::TopK, a.loc, {s.materialize(*x)},
                     indices ? Type::tile(DType::I32, out) : x->type.withShape(out),
                     {{"axis", ir::Attr(*axis)}, {"k", ir::Attr(*k)}});
}

void addReduceBuiltins(std::vector<BuiltinInfo> &t) {
  for (const char *n : {"sum", "prod", "max", "min", "mean"})
    t.push_back({n, {"x", "axis"}, 1, reduceBuiltin});
  t.push_back({"argmax", {"x", "axis", "dtype"}, 1, argReduce});
  t.push_back({"argmin", {"x", "axis", "dtype"}, 1, argReduce});
  t.push_back({"cumsum", {"x", "axis"}, 1, cumulative});
  t.push_back({"cumprod", {"x", "axis"}, 1, cumulative});
  // axis may be omitted on a 1-D tile, so only x is required; combine is checked by hand.
  t.push_back({"reduce", {"x", "axis", "combine"}, 1, customCombine});
  t.push_back({"scan", {"x", "axis", "combine"}, 1, customCombine});
  t.push_back({"sort", {"x", "axis", "descending"}, 1, sortBuiltin});
  t.push_back({"topk", {"x", "k", "axis"}, 2, topk});
  t.push_back({"argtopk", {"x", "k", "axis"}, 2, topk});
}

} // namespace kiln::sema
