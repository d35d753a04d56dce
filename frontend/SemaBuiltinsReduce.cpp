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
#include "frontend/SemaTileOps.h"

#include <algorithm>
#include <cmath>

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

/// What a reduction works on. With an axis, that axis of x; without one on a tile of
/// rank 2 or more, every element (x flattened, as Triton's axis=None and NumPy's
/// axis=None do). `kept` is the result's shape under keep_dims: the reduced axes as 1.
struct ReduceInput {
  Val x;
  int64_t axis = 0;
  Shape kept;
};

static std::optional<ReduceInput> reduceInput(Sema &s, CallArgs &a, const Val &x) {
  ReduceInput in{x, 0, x.type.shape};
  if (!a.has(1) && x.type.rank() > 1) {
    in.x = tile::reshape(s, x, {x.type.numElements()}, a.loc);
    std::fill(in.kept.begin(), in.kept.end(), 1);
    return in;
  }
  auto axis = s.argAxis(a, 1, x.type.rank());
  if (!axis)
    return std::nullopt;
  in.axis = *axis;
  in.kept[*axis] = 1;
  return in;
}

/// The index of parameter `name` of the builtin being called.
static size_t paramIndex(const CallArgs &a, const char *name) {
  const auto &params = findBuiltin(a.callee)->params;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == std::string_view(name))
      return i;
  KILN_ICE(a.callee + " has no parameter " + name);
}

/// The optional flag `name` of the builtin being called (a constant bool), false when
/// not given.
static std::optional<bool> flagArg(Sema &s, CallArgs &a, const char *name) {
  size_t i = paramIndex(a, name);
  return i < a.exprs.size() && a.has(i) ? s.argConstBool(a, i, name) : std::optional<bool>(false);
}

/// r reshaped to the keep_dims shape (a scalar r becomes a tile of ones).
static Val keepDims(Sema &s, const Val &r, const Shape &kept, Location loc) {
  return r.type.isScalar() ? s.broadcastTo(r, kept, loc) : tile::reshape(s, r, kept, loc);
}

/// The accumulator of sum/prod (and cumsum/cumprod): `dtype =` when given, else the
/// wide dtype of the input's (docs/language.md).
static std::optional<DType> accumulatorArg(Sema &s, CallArgs &a, DType input) {
  size_t i = paramIndex(a, "dtype");
  if (!a.has(i))
    return sumAccumulatorDType(input);
  auto d = s.argDType(a, i, input);
  if (d && isBool(*d)) {
    s.error(a.locs[i], DiagCode::InvalidArgument, a.callee + " cannot accumulate in bool");
    return std::nullopt;
  }
  return d;
}

/// Where any element along the reduced axis is NaN: for propagate_nan. (Counted as
/// integers: a reduction of bool values is not lowered on every target.)
static Val anyNan(Sema &s, const ReduceInput &in, Location loc) {
  Val isNan = s.castTo(s.binaryOp(ast::BinaryOp::Ne, in.x, in.x, loc), DType::I32, loc);
  Type result = isNan.type.withShape(withoutAxis(isNan.type.shape, in.axis));
  Val count = s.emitValue(OpKind::Reduce, loc, {s.materialize(isNan)}, result,
                          {{"axis", ir::Attr(in.axis)}, {"kind", ir::Attr(std::string("sum"))}});
  return s.binaryOp(ast::BinaryOp::Ne, count, Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(0), true, loc),
                    loc);
}

static Val argOf(Sema &s, const ReduceInput &in, bool argmax, Location loc) {
  Val x = in.x;
  return s.emitValue(argmax ? OpKind::Argmax : OpKind::Argmin, loc, {s.materialize(x)},
                     Type::tile(DType::I32, withoutAxis(x.type.shape, in.axis)), {{"axis", ir::Attr(in.axis)}});
}

/// sum, prod, max, min, mean.
static Val reduceBuiltin(Sema &s, CallArgs &a) {
  const bool minMax = a.callee == "max" || a.callee == "min";
  if (a.has(1) && a.positional[1] && minMax) {
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
  if (a.has(1) && minMax) {
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
  auto in = reduceInput(s, a, *x);
  auto keep = flagArg(s, a, "keep_dims");
  auto indices = minMax ? flagArg(s, a, "return_indices") : std::optional<bool>(false);
  auto propagate = minMax ? flagArg(s, a, "propagate_nan") : std::optional<bool>(false);
  std::optional<DType> acc = x->type.dtype;
  if (a.callee == "sum" || a.callee == "prod")
    acc = accumulatorArg(s, a, x->type.dtype);
  else if (mean)
    acc = sumAccumulatorDType(x->type.dtype);
  if (!in || !keep || !indices || !propagate || !acc)
    return Val::poison();
  // max/min of bool run on i8 (any / all): LLVM 22's SPIR-V back end fails to select
  // some reductions of i1 values (docs/codegen.md).
  const bool boolMinMax = minMax && isBool(x->type.dtype);
  Val operand = s.castTo(in->x, boolMinMax ? DType::I8 : *acc, a.loc);
  Type result = operand.type.withShape(withoutAxis(operand.type.shape, in->axis));
  Val r = s.emitValue(OpKind::Reduce, a.loc, {s.materialize(operand)}, result,
                      {{"axis", ir::Attr(in->axis)}, {"kind", ir::Attr(mean ? std::string("sum") : a.callee)}});
  if (boolMinMax)
    r = s.castTo(r, DType::Bool, a.loc);
  if (mean) {
    // The wide sum over the number of elements, rounded once to x's dtype (torch.mean).
    Val length = Val::ofConst(Type::scalar(DType::F32),
                              ConstVal::ofFloat(double(in->x.type.shape[in->axis])), true, a.loc);
    r = s.castTo(s.binaryOp(ast::BinaryOp::Div, r, length, a.loc), x->type.dtype, a.loc);
  }
  Val index;
  if (*indices)
    index = argOf(s, *in, a.callee == "max", a.loc);
  if (*propagate && isFloat(x->type.dtype)) {
    // A NaN anywhere along the axis makes the result NaN (torch.max), at its first index.
    Val nan = anyNan(s, *in, a.loc);
    Val nanValue = s.broadcastTo(Val::ofConst(Type::scalar(r.type.dtype), ConstVal::ofFloat(NAN), false, a.loc),
                                 r.type.shape, a.loc);
    r = tile::select(s, nan, nanValue, r, a.loc);
    if (*indices) {
      ReduceInput nans = *in;
      nans.x = s.castTo(s.binaryOp(ast::BinaryOp::Ne, in->x, in->x, a.loc), DType::I32, a.loc);
      index = tile::select(s, nan, argOf(s, nans, true, a.loc), index, a.loc);
    }
  }
  if (*keep) {
    r = keepDims(s, r, in->kept, a.loc);
    if (*indices)
      index = keepDims(s, index, in->kept, a.loc);
  }
  if (!*indices)
    return r;
  Val tuple;
  tuple.kind = Val::Kind::Tuple;
  tuple.loc = a.loc;
  tuple.elems = {r, index};
  return tuple;
}

static Val argReduce(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x || refuseLiteralAxis(s, a))
    return Val::poison();
  auto in = reduceInput(s, a, *x);
  auto dtype = s.argDType(a, 2, DType::I32);
  auto keep = flagArg(s, a, "keep_dims");
  if (!in || !dtype || !keep)
    return Val::poison();
  if (*dtype != DType::I32 && *dtype != DType::I64) {
    s.error(a.locs[2], DiagCode::InvalidArgument,
            a.callee + " returns i32 or i64 indices, not " + dtStr(*dtype));
    return Val::poison();
  }
  // A tile holds at most 2^24 elements, so an i32 index always fits; i64 is for the
  // pointer arithmetic and the torch.argmax results it meets. Without an axis the index
  // is into the flattened tile, as NumPy's is.
  Val index = s.castTo(argOf(s, *in, a.callee == "argmax", a.loc), *dtype, a.loc);
  return *keep ? keepDims(s, index, in->kept, a.loc) : index;
}

/// cumsum, cumprod.
static Val cumulative(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto axis = s.argAxis(a, 1, x->type.rank());
  auto reverse = flagArg(s, a, "reverse");
  auto acc = accumulatorArg(s, a, x->type.dtype);
  if (!axis || !reverse || !acc)
    return Val::poison();
  Val in = s.castTo(*x, *acc, a.loc);
  if (*reverse)
    in = tile::flip(s, in, *axis, a.loc);
  std::string kind = a.callee == "cumsum" ? "sum" : "prod";
  Val r = s.emitValue(OpKind::Scan, a.loc, {s.materialize(in)}, in.type,
                      {{"axis", ir::Attr(*axis)}, {"kind", ir::Attr(kind)}});
  return *reverse ? tile::flip(s, r, *axis, a.loc) : r;
}

/// reduce(x, axis, combine) and scan(x, axis, combine); with a tuple of tiles first,
/// reduce((v, i), axis, f) and scan((v, i), axis, f) (SemaTupleCombine.cpp).
static Val customCombine(Sema &s, CallArgs &a) {
  bool scan = a.callee == "scan";
  auto reverse = scan ? flagArg(s, a, "reverse") : std::optional<bool>(false);
  auto keep = scan ? std::optional<bool>(false) : flagArg(s, a, "keep_dims");
  if (!reverse || !keep)
    return Val::poison();
  // A tuple literal, or a call that gives several values, is the several-tile form.
  Val first = s.evalValues(*a.exprs[0]);
  if (first.kind == Val::Kind::Tuple)
    return tupleCombine(s, a, first.elems, scan, *reverse, *keep);
  a.vals[0] = first.kind == Val::Kind::Void ? Val::poison() : first;
  if (first.kind == Val::Kind::Void)
    s.error(a.locs[0], DiagCode::VoidValue, "this call produces no value, but " + a.callee + " needs a tile");
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  std::optional<ReduceInput> in;
  if (scan) {
    auto axis = s.argAxis(a, 1, x->type.rank());
    if (axis)
      in = ReduceInput{*reverse ? tile::flip(s, *x, *axis, a.loc) : *x, *axis, x->type.shape};
  } else {
    in = reduceInput(s, a, *x);
  }
  std::optional<int64_t> axis;
  if (in) {
    x = in->x;
    axis = in->axis;
  }
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
  Val r = Val::ofIR(op->result(), a.loc);
  if (scan)
    return *reverse ? tile::flip(s, r, *axis, a.loc) : r;
  return *keep ? keepDims(s, r, in->kept, a.loc) : r;
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

/// An order-reversing involution: -x for floats, ~x for integers and bool (which never
/// overflows, unlike -x of the most negative integer). The k smallest are the images of
/// the k largest of its image, in the same order of ties.
static Val reverseOrder(Sema &s, const Val &x, Location loc) {
  return s.unaryOp(isFloat(x.type.dtype) ? ast::UnaryOp::Neg : ast::UnaryOp::BitNot, x, loc);
}

/// topk(x, k, axis, largest), argtopk(x, k, axis, largest).
static Val topk(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  if (!x)
    return Val::poison();
  auto k = s.argConstInt(a, 1, "k");
  auto axis = s.argAxis(a, 2, x->type.rank());
  std::optional<bool> largest = a.has(3) ? s.argConstBool(a, 3, "largest") : true;
  if (!k || !axis || !largest)
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
  Val in = *largest ? s.strengthen(*x) : reverseOrder(s, s.strengthen(*x), a.loc);
  Val r = s.emitValue(indices ? OpKind::ArgTopK : OpKind::TopK, a.loc, {s.materialize(in)},
                      indices ? Type::tile(DType::I32, out) : in.type.withShape(out),
                      {{"axis", ir::Attr(*axis)}, {"k", ir::Attr(*k)}});
  return *largest || indices ? r : reverseOrder(s, r, a.loc);
}

/// histogram(x, num_bins, mask): how many elements of the 1-D integer tile x equal each
/// of 0 .. num_bins - 1 (others are not counted), as an i32 tile of num_bins; masked-off
/// elements are not counted. Built as the sum of a [n, num_bins] comparison.
static Val histogram(Sema &s, CallArgs &a) {
  auto x = axisOperand(s, a);
  auto bins = s.argConstInt(a, 1, "num_bins");
  if (!x || !bins)
    return Val::poison();
  if (x->type.rank() != 1 || !isInteger(x->type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, "histogram needs a 1-D integer tile, got " + s.describe(*x),
            "reshape a tile to 1-D, or convert values to bin numbers with .to(i32)");
    return Val::poison();
  }
  if (*bins < 1) {
    s.error(a.locs[1], DiagCode::InvalidArgument, "histogram needs at least one bin, got " + std::to_string(*bins));
    return Val::poison();
  }
  const int64_t n = x->type.shape[0];
  const Shape grid = {n, *bins};
  if (!s.checkTileSize(grid, a.loc))
    return Val::poison();
  Val values = s.broadcastTo(tile::reshape(s, s.strengthen(*x), {n, 1}, a.loc), grid, a.loc);
  Val binIndex = tile::indexAlong(s, grid, 1, a.loc);
  Val hit = s.binaryOp(ast::BinaryOp::Eq, s.castTo(values, DType::I64, a.loc), s.castTo(binIndex, DType::I64, a.loc),
                       a.loc);
  if (a.has(2)) {
    Val m = s.argValue(a, 2);
    if (!m.isValue())
      return Val::poison();
    if (m.type.pointer || !isBool(m.type.dtype) || !broadcastsTo(m.type.shape, x->type.shape)) {
      s.error(a.locs[2], DiagCode::TypeMismatch,
              "the mask of histogram must be bool of the shape of x, got " + s.describe(m));
      return Val::poison();
    }
    Val column = s.broadcastTo(m, {n}, a.loc);
    hit = s.binaryOp(ast::BinaryOp::LogicalAnd, hit,
                     s.broadcastTo(tile::reshape(s, column, {n, 1}, a.loc), grid, a.loc), a.loc);
  }
  Val counts = s.castTo(hit, DType::I32, a.loc);
  return s.emitValue(OpKind::Reduce, a.loc, {s.materialize(counts)}, Type::tile(DType::I32, {*bins}),
                     {{"axis", ir::Attr(int64_t(0))}, {"kind", ir::Attr(std::string("sum"))}});
}

void addReduceBuiltins(std::vector<BuiltinInfo> &t) {
  // Without an axis, a reduction takes every element (reduceInput).
  for (const char *n : {"sum", "prod"})
    t.push_back({n, {"x", "axis", "keep_dims", "dtype"}, 1, reduceBuiltin});
  for (const char *n : {"max", "min"})
    t.push_back({n, {"x", "axis", "keep_dims", "return_indices", "propagate_nan"}, 1, reduceBuiltin});
  t.push_back({"mean", {"x", "axis", "keep_dims"}, 1, reduceBuiltin});
  t.push_back({"argmax", {"x", "axis", "dtype", "keep_dims"}, 1, argReduce});
  t.push_back({"argmin", {"x", "axis", "dtype", "keep_dims"}, 1, argReduce});
  t.push_back({"cumsum", {"x", "axis", "reverse", "dtype"}, 1, cumulative});
  t.push_back({"cumprod", {"x", "axis", "reverse", "dtype"}, 1, cumulative});
  // axis may be omitted on a 1-D tile, so only x is required; combine is checked by hand.
  t.push_back({"reduce", {"x", "axis", "combine", "keep_dims"}, 1, customCombine});
  t.push_back({"scan", {"x", "axis", "combine", "reverse"}, 1, customCombine});
  t.push_back({"sort", {"x", "axis", "descending"}, 1, sortBuiltin});
  t.push_back({"topk", {"x", "k", "axis", "largest"}, 2, topk});
  t.push_back({"argtopk", {"x", "k", "axis", "largest"}, 2, topk});
  t.push_back({"histogram", {"x", "num_bins", "mask"}, 2, histogram});
}

} // namespace kiln::sema
