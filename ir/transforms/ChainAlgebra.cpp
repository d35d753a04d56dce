//===- ChainAlgebra.cpp - Rescaling a fused chain's values in a context ---===//
//
// The algebra shared by the fused loop and the merge of segments (ChainAlgebra.h).
// Rescale factors are computed from the y-only leaves of F's exponents: each leaf is
// cloned with the chain's results mapped to the values of one context, once per
// context (the maps memoize), so a leaf such as `(m - bias) * scale` costs its ops once
// per iteration however many accumulators use it.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ChainAlgebra.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cmath>

namespace kiln::ir {

double identityOf(Combiner combiner) {
  return combiner == Combiner::Max || combiner == Combiner::TopK ? -INFINITY
         : combiner == Combiner::Min                             ? INFINITY
                                                                 : 0.0;
}

bool isIdentity(const Value *v, Combiner combiner) {
  const Op *def = v->definingOp();
  if (!def || def->kind() != OpKind::Constant)
    return false;
  const double *d = std::get_if<double>(&def->attrs().at("value"));
  return d && *d == identityOf(combiner);
}

OpKind combineKind(Combiner combiner) {
  return combiner == Combiner::Max ? OpKind::Maximum : combiner == Combiner::Min ? OpKind::Minimum : OpKind::Add;
}

ChainAlgebra::ChainAlgebra(ReductionChain &chain) {
  for (ChainLoop &l : chain.loops) {
    chainLoops_.insert(l.loop);
    if (l.fused)
      fused_.push_back(&l);
  }
  parent_ = fused_.front()->loop->parentBlock();
}

bool ChainAlgebra::insideChainLoop(const Op *op) const {
  for (const Op *p = op->parentOp(); p; p = p->parentOp())
    if (chainLoops_.count(p))
      return true;
  return false;
}

bool ChainAlgebra::dependsOnChain(Value *v) {
  if (auto it = dependsMemo_.find(v); it != dependsMemo_.end())
    return it->second;
  bool d = false;
  if (Op *def = v->definingOp()) {
    if (chainLoops_.count(def))
      d = true;
    else {
      for (Value *o : def->operands())
        d = d || dependsOnChain(o);
      for (const auto &region : def->regions())
        walk(*region, [&](Op &inner) {
          for (Value *o : inner.operands())
            d = d || dependsOnChain(o);
        });
    }
  }
  return dependsMemo_[v] = d;
}

Value *ChainAlgebra::materialize(Value *v, ValueMap &map, Builder &b) {
  if (auto it = map.find(v); it != map.end())
    return it->second;
  Op *def = v->definingOp();
  if (!def || (!insideChainLoop(def) && !dependsOnChain(v)))
    return v;
  kiln_assert(!chainLoops_.count(def), "a result of the chain has no value in this context");
  for (Value *o : def->operands())
    if (Value *m = materialize(o, map, b); m != o)
      map[o] = m;
  cloneOp(b, *def, map);
  return map.at(v);
}

Value *ChainAlgebra::finiteOrZero(Value *v, Combiner combiner, Builder &b, Location loc) {
  Type boolType = v->type.withDType(DType::Bool);
  double identity = combiner == Combiner::Max ? -INFINITY : INFINITY;
  Value *isIdentity = b.createValue(OpKind::Cmp, loc, {v, b.floatConstant(loc, v->type, identity)}, boolType,
                                    {{"pred", std::string("eq")}});
  return b.createValue(OpKind::Select, loc, {isIdentity, b.floatConstant(loc, v->type, 0.0), v}, v->type);
}

Value *ChainAlgebra::seen(Value *carried, Value *laterInit, Combiner combiner, Builder &b, Location loc) {
  if (!laterInit)
    return carried;
  return b.createValue(combineKind(combiner), loc, {laterInit, carried}, carried->type);
}

Value *ChainAlgebra::seenRunning(Value *carried, Value *laterInit, Combiner combiner, Builder &b, Location loc) {
  Value *v = seen(carried, laterInit, combiner, b, loc);
  bool extremum = combiner == Combiner::Max || combiner == Combiner::Min;
  return extremum && isFloat(v->type.dtype) ? finiteOrZero(v, combiner, b, loc) : v;
}

Value *ChainAlgebra::toAccumulator(Value *w, const Accumulator &acc, const Type &accType, Builder &b, Location loc) {
  if (w->type.dtype != accType.dtype)
    w = b.createValue(OpKind::Cast, loc, {w}, w->type.withDType(accType.dtype));
  if (w->type.shape == accType.shape)
    return w;
  if (w->type.isScalar())
    return b.createValue(OpKind::Splat, loc, {w}, accType);
  if (acc.combiner != Combiner::Dot && w->type.rank() == accType.rank() + acc.reducedDims.size()) {
    Shape kept;
    for (unsigned d = 0; d < w->type.rank(); ++d)
      if (std::find(acc.reducedDims.begin(), acc.reducedDims.end(), d) == acc.reducedDims.end())
        kept.push_back(w->type.shape[d]);
    w = b.createValue(OpKind::Reshape, loc, {w}, w->type.withShape(kept));
    if (w->type.shape == accType.shape)
      return w;
  }
  return b.createValue(OpKind::Broadcast, loc, {w}, accType);
}

/// A scale of a linear term as a scalar (tile constants become scalar constants).
Value *ChainAlgebra::scalarScale(Value *s, Builder &b, Location loc) {
  if (s->type.isScalar())
    return s;
  Op *def = s->definingOp();
  return b.create(OpKind::Constant, loc, {}, {s->type.element()}, def->attrs())->result();
}

/// Σ ±(leaf(now) - leaf(before)) · scales over `terms`: at the leaves' type when they
/// all have one (the exponential is then taken once per row, not per element of the
/// accumulator), else at the accumulator's type.
Value *ChainAlgebra::delta(const std::vector<LinearTerm> &terms, const Accumulator &acc, const Type &accType,
                           ValueMap &now, ValueMap &before, Builder &b, Location loc) {
  bool uniform = true;
  for (const LinearTerm &t : terms)
    uniform = uniform && t.leaf->type == terms.front().leaf->type;
  Value *sum = nullptr;
  for (const LinearTerm &t : terms) {
    Value *after = materialize(t.leaf, now, b);
    Value *prior = materialize(t.leaf, before, b);
    Value *d = b.createValue(OpKind::Sub, loc, {after, prior}, after->type);
    for (const LinearTerm::Scale &s : t.scales) {
      Value *scale = scalarScale(s.value, b, loc);
      if (!d->type.isScalar())
        scale = b.createValue(OpKind::Splat, loc, {scale}, d->type.withDType(scale->type.dtype));
      d = b.createValue(s.inverse ? OpKind::Div : OpKind::Mul, loc, {d, scale}, d->type);
    }
    if (t.negative)
      d = b.createValue(OpKind::Neg, loc, {d}, d->type);
    if (!uniform)
      d = toAccumulator(d, acc, accType, b, loc);
    sum = sum ? b.createValue(OpKind::Add, loc, {sum, d}, d->type) : d;
  }
  return sum;
}

Value *ChainAlgebra::rescale(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before, Builder &b,
                             Location loc) {
  Value *r = rescaleFinite(value, acc, now, before, b, loc);
  if (acc.combiner != Combiner::TopK || r == value)
    return r;
  // The empty entries of a top-k (-inf) stay empty: while the running maximum is still
  // -inf the factor is exp(-inf) = 0 (or the shift +inf), and -inf · 0 would be NaN.
  Value *empty = b.createValue(OpKind::Cmp, loc, {value, b.floatConstant(loc, value->type, -INFINITY)},
                               value->type.withDType(DType::Bool), {{"pred", std::string("eq")}});
  return b.createValue(OpKind::Select, loc, {empty, value, r}, value->type);
}

Value *ChainAlgebra::rescaleFinite(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before,
                                   Builder &b, Location loc) {
  const Separation &s = acc.separation;
  if (!s.shifts.empty()) {
    Value *shift = toAccumulator(delta(s.shifts, acc, value->type, now, before, b, loc), acc, value->type, b, loc);
    return b.createValue(OpKind::Add, loc, {value, shift}, value->type);
  }
  value = rescaleRunning(value, acc, now, before, b, loc);
  if (s.exps.empty())
    return value;
  // exp(a) = exp2(a · log2 e): one exponent, one hardware exp2.
  Value *exponent = nullptr;
  for (const ExpFactor &e : s.exps) {
    Value *d = delta(e.terms, acc, value->type, now, before, b, loc);
    if (!e.base2)
      d = b.createValue(OpKind::Mul, loc, {d, b.floatConstant(loc, d->type, M_LOG2E)}, d->type);
    if (exponent && exponent->type != d->type) {
      exponent = toAccumulator(exponent, acc, value->type, b, loc);
      d = toAccumulator(d, acc, value->type, b, loc);
    }
    exponent = exponent ? b.createValue(OpKind::Add, loc, {exponent, d}, d->type) : d;
  }
  Value *ratio = b.createValue(OpKind::Exp2, loc, {exponent}, exponent->type);
  return b.createValue(OpKind::Mul, loc, {value, toAccumulator(ratio, acc, value->type, b, loc)}, value->type);
}

Value *ChainAlgebra::rescaleRunning(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before,
                                    Builder &b, Location loc) {
  for (const DeferredFactor &f : acc.separation.running) {
    Value *after = materialize(f.leaf, now, b);
    Value *prior = materialize(f.leaf, before, b);
    Value *ratio = f.inverse ? b.createValue(OpKind::Div, loc, {prior, after}, after->type)
                             : b.createValue(OpKind::Div, loc, {after, prior}, after->type);
    // A factor that was 0 or infinite before (a running maximum still at its start, an
    // empty segment) has contributed only zeros: the ratio is then 0, not inf or NaN.
    Value *magnitude = b.createValue(OpKind::Abs, loc, {ratio}, ratio->type);
    Value *finite = b.createValue(OpKind::Cmp, loc, {magnitude, b.floatConstant(loc, ratio->type, INFINITY)},
                                  ratio->type.withDType(DType::Bool), {{"pred", std::string("lt")}});
    ratio = b.createValue(OpKind::Select, loc, {finite, ratio, b.floatConstant(loc, ratio->type, 0.0)}, ratio->type);
    value = b.createValue(OpKind::Mul, loc, {value, toAccumulator(ratio, acc, value->type, b, loc)}, value->type);
  }
  return value;
}

Value *ChainAlgebra::toTerm(Value *v, const Accumulator &acc, const Type &term, Builder &b, Location loc) {
  if (v->type.isScalar())
    return b.createValue(OpKind::Splat, loc, {v}, term.withDType(v->type.dtype));
  for (unsigned r : acc.reducedDims) {
    Shape s = v->type.shape;
    s.insert(s.begin() + r, 1);
    v = b.createValue(OpKind::ExpandDims, loc, {v}, v->type.withShape(s), {{"axis", int64_t(r)}});
  }
  return v->type.shape == term.shape ? v : b.createValue(OpKind::Broadcast, loc, {v}, term.withDType(v->type.dtype));
}

Value *ChainAlgebra::reduceSum(Value *tile, const Accumulator &acc, Builder &b, Location loc) {
  for (auto r = acc.reducedDims.rbegin(); r != acc.reducedDims.rend(); ++r) {
    Shape s = tile->type.shape;
    s.erase(s.begin() + *r);
    tile = b.createValue(OpKind::Reduce, loc, {tile}, tile->type.withShape(s),
                         {{"axis", int64_t(*r)}, {"kind", std::string("sum")}});
  }
  return tile;
}

CentredState ChainAlgebra::mergeCentred(const CentredState &a, const CentredState &bs, Builder &b, Location loc) {
  const Type &t = a.m2->type;
  auto op = [&](OpKind k, Value *x, Value *y) { return b.createValue(k, loc, {x, y}, x->type); };
  Value *zero = b.floatConstant(loc, t, 0.0);
  Value *nonEmpty =
      b.createValue(OpKind::Cmp, loc, {bs.count, zero}, t.withDType(DType::Bool), {{"pred", std::string("gt")}});
  Value *total = op(OpKind::Add, a.count, bs.count);
  Value *share = b.createValue(OpKind::Select, loc, {nonEmpty, op(OpKind::Div, bs.count, total), zero}, t);
  Value *delta = op(OpKind::Sub, bs.mean, a.mean);
  Value *mean = op(OpKind::Add, a.mean, op(OpKind::Mul, delta, share));
  Value *cross = op(OpKind::Mul, op(OpKind::Mul, op(OpKind::Mul, delta, delta), a.count), share);
  Value *m2 = op(OpKind::Add, op(OpKind::Add, a.m2, bs.m2), cross);
  return {m2, total, mean};
}

} // namespace kiln::ir
