//===- SemaTupleCombine.cpp - reduce and scan of several tiles at once ----===//
//
// `reduce((v, i), axis, f)` and `scan((v, i), axis, f)` carry several tiles through one
// associative combiner: f takes 2k parameters (the k values of the left operand, then
// the k of the right) and returns k values, `return (a, b);`. This is how argmax with
// its value, Welford's mean and variance, or a running maximum with its position are
// written.
//
// The single-tile forms are Tile IR ops of their own; these are built from ops every
// target has, with the combiner applied to whole tiles:
//  * reduce: the axis is moved last and halved log2(n) times, combining each element
//    with its right neighbour, so that the order of the operands is kept (the combiner
//    need not commute). An odd length sets its last element aside, to be combined on
//    the right at the end.
//  * scan: Hillis and Steele's inclusive scan, log2(n) steps, each combining every
//    element with the one `d` places before it (d = 1, 2, 4, ...).
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"
#include "frontend/SemaTileOps.h"

namespace kiln::sema {

namespace {

using Values = std::vector<Val>;

/// Applies the combiner to (lhs..., rhs...), tiles of one shape; the k results, converted
/// to the operands' dtypes, or nothing after an error.
struct Combiner {
  Sema &s;
  CallArgs &call;
  const ast::FunctionItem &fn;
  std::vector<DType> dtypes;

  std::optional<Values> operator()(const Values &lhs, const Values &rhs) const {
    Values args = lhs;
    args.insert(args.end(), rhs.begin(), rhs.end());
    ++s.combinerDepth;
    Val r = s.callFn(fn, args, call.loc);
    --s.combinerDepth;
    const size_t k = dtypes.size();
    if (r.isPoison())
      return std::nullopt;
    if (r.kind != Val::Kind::Tuple || r.elems.size() != k) {
      s.error(call.locs[2], DiagCode::TypeMismatch,
              "the combine fn '" + fn.name + "' must return " + std::to_string(k) + " values, one per tile: return (" +
                  (k == 2 ? std::string("a, b") : std::string("a, b, ...")) + ");");
      return std::nullopt;
    }
    Values out;
    for (size_t i = 0; i < k; ++i) {
      Val v = r.elems[i];
      if (!v.isValue())
        return std::nullopt;
      if (v.weak && !(v.cst->isFloat() && !isFloat(dtypes[i])))
        v = s.adopt(v, dtypes[i]);
      if (v.type.pointer || v.type.dtype != dtypes[i]) {
        s.error(call.locs[2], DiagCode::TypeMismatch,
                "value " + std::to_string(i + 1) + " of the combine fn '" + fn.name + "' must be " +
                    dtStr(dtypes[i]) + " (the dtype of tile " + std::to_string(i + 1) + "), got " + s.describe(v),
                "convert it with .to(" + dtStr(dtypes[i]) + ")");
        return std::nullopt;
      }
      out.push_back(s.broadcastTo(v, lhs[i].type.shape, call.loc));
    }
    return out;
  }
};

/// Reduces the last axis of every tile; the results lack that axis.
std::optional<Values> reduceLast(Sema &s, const Combiner &combine, Values xs, Location loc) {
  std::vector<Values> setAside; // the odd last elements, latest last
  while (xs[0].type.shape.back() > 1) {
    int64_t n = xs[0].type.shape.back();
    if (n % 2) {
      Shape front = xs[0].type.shape, back = xs[0].type.shape;
      front.back() = n - 1;
      back.back() = 1;
      const int64_t axis = static_cast<int64_t>(front.size()) - 1;
      Val frontIdx = tile::indexAlong(s, front, axis, loc);
      Val backIdx = s.broadcastTo(Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(n - 1), true, loc), back, loc);
      Values last;
      for (Val &x : xs) {
        last.push_back(tile::gatherAlong(s, x, backIdx, axis, loc));
        x = tile::gatherAlong(s, x, frontIdx, axis, loc);
      }
      setAside.push_back(std::move(last));
    }
    Values even, odd;
    for (const Val &x : xs) {
      auto [e, o] = tile::pairsAlongLast(s, x, loc);
      even.push_back(e);
      odd.push_back(o);
    }
    auto next = combine(even, odd);
    if (!next)
      return std::nullopt;
    xs = std::move(*next);
  }
  // The elements set aside follow, in order, the block reduced so far.
  for (size_t i = setAside.size(); i-- > 0;) {
    auto next = combine(xs, setAside[i]);
    if (!next)
      return std::nullopt;
    xs = std::move(*next);
  }
  for (Val &x : xs)
    x = tile::dropLast(s, x, loc);
  return xs;
}

/// Inclusive scan of every tile along `axis`.
std::optional<Values> scanAlong(Sema &s, const Combiner &combine, Values xs, int64_t axis, Location loc) {
  const Shape shape = xs[0].type.shape;
  const int64_t n = shape[axis];
  Val index = tile::indexAlong(s, shape, axis, loc);
  for (int64_t d = 1; d < n; d *= 2) {
    Val dist = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(d), true, loc);
    Val valid = s.binaryOp(ast::BinaryOp::Ge, index, dist, loc);
    // Lanes before d read lane 0; their result is discarded by `valid`.
    Val from = tile::select(s, valid, s.binaryOp(ast::BinaryOp::Sub, index, dist, loc),
                            s.broadcastTo(Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(0), true, loc), shape, loc),
                            loc);
    Values earlier;
    for (const Val &x : xs)
      earlier.push_back(tile::gatherAlong(s, x, from, axis, loc));
    auto combined = combine(earlier, xs);
    if (!combined)
      return std::nullopt;
    for (size_t i = 0; i < xs.size(); ++i)
      xs[i] = tile::select(s, valid, (*combined)[i], xs[i], loc);
  }
  return xs;
}

} // namespace

Val tupleCombine(Sema &s, CallArgs &a, Values xs, bool scan, bool reverse, bool keepDims) {
  const std::string what = a.callee + " of several tiles";
  for (size_t i = 0; i < xs.size(); ++i) {
    Val &x = xs[i];
    if (!x.isValue())
      return Val::poison();
    if (x.type.pointer || x.type.isScalar()) {
      s.error(a.locs[0], DiagCode::TypeMismatch,
              "tile " + std::to_string(i + 1) + " of " + what + " must be a tile of values, got " + s.describe(x));
      return Val::poison();
    }
    if (x.type.shape != xs[0].type.shape) {
      s.error(a.locs[0], DiagCode::ShapeMismatch,
              "the tiles of " + what + " must have one shape, got " + s.describe(xs[0]) + " and " + s.describe(x),
              "broadcast_to(x, shape) gives them one");
      return Val::poison();
    }
    x = s.strengthen(x);
  }
  auto axis = s.argAxis(a, 1, xs[0].type.rank());
  if (!a.has(2)) {
    s.error(a.loc, DiagCode::ArgumentCount, a.callee + " is missing argument 'combine'",
            "pass a fn of " + std::to_string(2 * xs.size()) + " parameters, e.g. " + a.callee + "((v, i), 0, f)");
    return Val::poison();
  }
  const ast::FunctionItem *fn = s.argFn(a, 2);
  if (!axis || !fn)
    return Val::poison();
  if (fn->params.size() != 2 * xs.size()) {
    s.error(a.locs[2], DiagCode::InvalidArgument,
            "the combine fn '" + fn->name + "' of " + std::to_string(xs.size()) + " tiles must take " +
                std::to_string(2 * xs.size()) + " parameters (the left values, then the right ones), it takes " +
                std::to_string(fn->params.size()));
    return Val::poison();
  }
  Combiner combine{s, a, *fn, {}};
  for (const Val &x : xs)
    combine.dtypes.push_back(x.type.dtype);

  std::optional<Values> out;
  if (scan) {
    if (reverse)
      for (Val &x : xs)
        x = tile::flip(s, x, *axis, a.loc);
    out = scanAlong(s, combine, xs, *axis, a.loc);
    if (out && reverse)
      for (Val &x : *out)
        x = tile::flip(s, x, *axis, a.loc);
  } else {
    const Shape original = xs[0].type.shape;
    auto [forward, inverse] = tile::axisLast(xs[0].type.rank(), *axis);
    for (Val &x : xs)
      x = tile::permute(s, x, forward, a.loc);
    out = reduceLast(s, combine, xs, a.loc);
    if (out && keepDims)
      for (Val &x : *out) {
        Shape kept = original;
        kept[*axis] = 1;
        x = tile::reshape(s, x.type.isScalar() ? s.broadcastTo(x, {1}, a.loc) : x, kept, a.loc);
      }
  }
  if (!out)
    return Val::poison();
  Val tuple;
  tuple.kind = Val::Kind::Tuple;
  tuple.loc = a.loc;
  tuple.elems = std::move(*out);
  return tuple;
}

} // namespace kiln::sema
