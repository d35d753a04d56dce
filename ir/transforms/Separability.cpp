//===- Separability.cpp - Does F(x, y) split into G(x) ⊗ H(y)? ------------===//
//
// The algebra of reduction-chain fusion. A reduction d = d ⊕ F(x, y), where y are final
// values of earlier loops, can run in the same pass as those loops when F factors as
// G(x) ⊗ H(y) with ⊗ distributing over ⊕:
//
//   ⊕ = + (and dot):  F = G(x) · Π exp(B_i(y)) · Π P_k(y)
//       The exponential factors change as y grows, so every step rescales d by
//       exp(B(y) - B(y_prev)) (online softmax); the plain factors P_k are taken out of
//       the loop and applied once to the final d (Σ G·P = P·Σ G).
//   ⊕ = max / min:    F = G(x) + B(y)
//       every step shifts d by B(y) - B(y_prev).
//
// Roundings on F's path: a cast to bf16, f32 or f64 keeps f32's exponent range, so a
// factor moved across it changes only where the rounding happens. A cast to f16 or an f8
// format is a quantization: a scale moved out of it (q(a) · s for q(a · s)) would change
// which values saturate and which flush to zero, and a factor kept under it at its running
// value (an exponential included) may round where the written program's would not, or
// overflow where it would not. Such a cast is refused unless the policy allows quantized
// fusion; then the factors under it stay in place at their running value and the
// accumulator is rescaled by P(y)/P(y_prev), as for the exponentials (fp8 quantization
// inside a GEMM, f16 attention weights).
//
// The decision is made on the IR expression, structurally: each value of the loop body
// is classified by what it depends on (the loaded data x, the earlier results y, both,
// or neither) and a product is only accepted where the rules above prove it. B must be
// linear in values computed from y: sums, differences, negations and products with
// loop-invariant scalars (`(s - m) * scale`). Anything else is refused with the op that
// broke the rule, so a program the algebra cannot prove stays as written.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ReductionChains.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

/// What a value depends on, as bits.
enum Dep : unsigned {
  kData = 1,    ///< the iteration: induction variable, loads
  kEarlier = 2, ///< final values of earlier loops of the chain (y)
  kCarried = 4, ///< the loop's own carried values
};

bool contains(const Block &outer, const Op *op) {
  for (const Block *b = op->parentBlock(); b; b = b->parentOp() ? b->parentOp()->parentBlock() : nullptr)
    if (b == &outer)
      return true;
  return false;
}

/// A scalar, or a splat of one, that does not change within the loop: a valid scale of
/// a linear term. Returns the scalar.
Value *invariantScalar(Value *v) {
  if (v->type.isScalar())
    return v;
  if (Op *def = v->definingOp(); def && def->kind() == OpKind::Splat)
    return def->operand(0);
  if (Op *def = v->definingOp(); def && def->kind() == OpKind::Constant)
    return v; // a tile constant: scaled as a whole, it has the term's shape
  return nullptr;
}

bool isZeroConstant(const Value *v) {
  const Op *def = v->definingOp();
  if (def && def->kind() == OpKind::Splat)
    def = def->operand(0)->definingOp();
  if (!def || def->kind() != OpKind::Constant)
    return false;
  const Attr &a = def->attrs().at("value");
  if (auto *i = std::get_if<int64_t>(&a))
    return *i == 0;
  if (auto *d = std::get_if<double>(&a))
    return *d == 0.0;
  return false;
}

/// True for a float format with at least f32's exponent range: rounding to it never
/// overflows or flushes where f32 would not.
bool keepsF32Range(DType t) { return t == DType::BF16 || t == DType::F32 || t == DType::F64; }

class Separator {
public:
  Separator(Op &loop, const std::vector<Op *> &earlier, const Accumulator &acc, const FusionPolicy &policy)
      : loop_(loop), body_(*loop.region(0)), acc_(acc), policy_(policy) {
    for (Op *e : earlier)
      earlier_.insert(e);
  }

  std::optional<std::string> run(Separation &out, Location &where) {
    where_ = &where;
    unsigned d = deps(acc_.term);
    if (d & kCarried) {
      fail(acc_.term, "F uses the loop's own running value, so the loop is already written in an "
                      "incremental form");
      return reason_;
    }
    if (!(d & kEarlier))
      return std::nullopt;
    if (acc_.ranksWith >= 0) {
      fail(acc_.term, "the values that follow the top-k order depend on " + earlierNames(acc_.term));
      return reason_;
    }
    if (!(d & kData)) {
      fail(acc_.term, "F depends on " + earlierNames(acc_.term) + " but not on the data the loop loads");
      return reason_;
    }
    if (acc_.combiner == Combiner::TopK)
      return topK(out) ? std::nullopt : std::optional(reason_);
    if (acc_.combiner == Combiner::Max || acc_.combiner == Combiner::Min)
      return linear(acc_.term, false, {}, out.shifts) ? std::nullopt : std::optional(reason_);
    if (factor(acc_.term, out))
      return std::nullopt;
    // Not a product: perhaps a centred square, a sum of separable terms.
    Location productWhere = *where_;
    std::string productReason = reason_;
    if (acc_.combiner == Combiner::Sum && !acc_.reducedDims.empty()) {
      if (auto c = centeredSquare()) {
        out = Separation{};
        out.centered = std::move(c);
        return std::nullopt;
      }
    }
    *where_ = productWhere;
    return productReason;
  }

private:
  /// Dependence bits of `v`, memoized.
  unsigned deps(Value *v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    unsigned d = 0;
    if (v->isBlockArgument()) {
      Block *owner = v->ownerBlock();
      if (owner == &body_)
        d = v->index() == 0 ? kData : kCarried;
      else if (owner->parentOp() && contains(body_, owner->parentOp()))
        d = kData; // arguments of regions nested in the body (a custom combiner)
    } else {
      Op *def = v->definingOp();
      if (earlier_.count(def))
        d = kEarlier;
      else {
        if (def->kind() == OpKind::Load && contains(body_, def))
          d |= kData;
        for (Value *o : def->operands())
          d |= deps(o);
        for (const auto &region : def->regions())
          walk(*region, [&](Op &inner) {
            for (Value *o : inner.operands())
              d |= deps(o);
          });
      }
    }
    memo_[v] = d;
    return d;
  }

  /// Names of the earlier results `v` depends on ("m", "l and m").
  std::string earlierNames(Value *v) {
    std::set<std::string> names;
    std::unordered_set<const Value *> seen;
    std::vector<Value *> work{v};
    while (!work.empty()) {
      Value *x = work.back();
      work.pop_back();
      if (!seen.insert(x).second || !(deps(x) & kEarlier))
        continue;
      Op *def = x->definingOp();
      if (!def)
        continue;
      if (earlier_.count(def)) {
        const std::string &carried = def->region(0)->argument(x->index() + 1)->nameHint;
        names.insert((carried.empty() ? "the result" : "`" + carried + "`") + std::string(" of the loop at line ") +
                     std::to_string(def->loc().line));
        continue;
      }
      for (Value *o : def->operands())
        work.push_back(o);
    }
    std::string out;
    size_t i = 0;
    for (const std::string &n : names)
      out += (i++ == 0 ? "" : i == names.size() ? " and " : ", ") + n;
    return out.empty() ? "earlier results" : out;
  }

  bool fail(Value *at, const std::string &why) {
    Op *def = at->definingOp();
    *where_ = def ? def->loc() : loop_.loc();
    reason_ = why;
    return false;
  }

  std::string mixes(Value *v) {
    Op *def = v->definingOp();
    std::ostringstream os;
    os << "`" << (def ? def->mnemonic() : "value") << "` combines the loaded data with " << earlierNames(v);
    return os.str();
  }

  /// The value of a pure-y operand before it was broadcast over the term's tile; it must
  /// not vary along the reduced dimensions. Null (with the reason set) otherwise.
  Value *preBroadcast(Value *v) {
    Value *u = v;
    if (Op *def = v->definingOp(); def && (def->kind() == OpKind::Splat || def->kind() == OpKind::Broadcast))
      u = def->operand(0);
    if (u->type.isScalar())
      return u;
    if (u->type.rank() != acc_.term->type.rank()) {
      fail(v, "H(y) has a shape the accumulator cannot take");
      return nullptr;
    }
    for (unsigned r : acc_.reducedDims)
      if (u->type.shape[r] != 1) {
        fail(v, earlierNames(v) + " varies along the reduced dimension, so it cannot be taken out of the sum");
        return nullptr;
      }
    return u;
  }

  /// ⊕ = top-k: the K largest of F(x, y) are those of G(x) when F = G(x) · H(y) with H
  /// positive (exponentials, and plain factors that are provably not negative) or
  /// F = G(x) + B(y): the order of the candidates does not change as y does.
  bool topK(Separation &out) {
    Separation product;
    if (factor(acc_.term, product)) {
      if (!product.running.empty())
        return fail(product.running.front().op->result(),
                    "a top-k's factor under a rounding would rescale the kept candidates by a ratio whose sign is "
                    "not known");
      for (const DeferredFactor &f : product.deferred)
        if (!nonNegative(f.leaf))
          return fail(f.op->result(), "top-k keeps its order under a positive factor, and the sign of " +
                                          earlierNames(f.leaf) + " is not known");
      out = std::move(product);
      return true;
    }
    Location productWhere = *where_;
    std::string productReason = reason_;
    std::vector<LinearTerm> shifts;
    if (linear(acc_.term, false, {}, shifts)) {
      out.shifts = std::move(shifts);
      return true;
    }
    *where_ = productWhere;
    reason_ = productReason;
    return false;
  }

  /// True when `v` is never negative by construction: exponentials, absolute values,
  /// square roots, sums and products of such, and results of earlier loops that only
  /// ever add such values to a start that is one.
  bool nonNegative(Value *v) {
    if (auto it = sign_.find(v); it != sign_.end())
      return it->second;
    sign_[v] = false;
    bool r = false;
    if (v->isBlockArgument()) {
      r = inductive_.count(v) != 0; // an accumulator assumed so while its update is checked
    } else if (Op *def = v->definingOp(); earlier_.count(def)) {
      Block &body = *def->region(0);
      Value *carried = body.argument(v->index() + 1);
      inductive_.insert(carried);
      r = nonNegative(def->operand(3 + v->index())) && nonNegative(body.terminator()->operand(v->index()));
      inductive_.erase(carried);
    } else {
      auto all = [&] {
        for (Value *o : def->operands())
          if (!nonNegative(o))
            return false;
        return true;
      };
      switch (def->kind()) {
      case OpKind::Constant: {
        const double *d = std::get_if<double>(&def->attrs().at("value"));
        const int64_t *i = std::get_if<int64_t>(&def->attrs().at("value"));
        r = (d && *d >= 0) || (i && *i >= 0);
        break;
      }
      case OpKind::Exp:
      case OpKind::Exp2:
      case OpKind::Abs:
      case OpKind::Sqrt:
        r = true;
        break;
      case OpKind::Maximum:
        r = nonNegative(def->operand(0)) || nonNegative(def->operand(1));
        break;
      case OpKind::Select:
        r = nonNegative(def->operand(1)) && nonNegative(def->operand(2));
        break;
      case OpKind::Reduce:
        r = def->stringAttr("kind") != "custom" && all();
        break;
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Minimum:
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
        r = all();
        break;
      case OpKind::Cast:
        r = isFloat(def->result()->type.dtype) && all();
        break;
      default:
        break;
      }
    }
    // A `true` found while an accumulator is assumed non-negative holds only if that
    // assumption is proved; a `false` holds regardless.
    if (r && !inductive_.empty())
      sign_.erase(v);
    else
      sign_[v] = r;
    return r;
  }

  /// F = where(mask, A(x) - c(y), 0)² (or without the mask; c - A and A + y too).
  std::optional<CenteredSquare> centeredSquare() {
    Op *square = acc_.term->definingOp();
    if (!square || square->kind() != OpKind::Mul || square->operand(0) != square->operand(1))
      return std::nullopt;
    CenteredSquare c;
    Value *d = square->operand(0);
    if (Op *sel = d->definingOp(); sel && sel->kind() == OpKind::Select && isZeroConstant(sel->operand(2))) {
      if (deps(sel->operand(0)) & (kEarlier | kCarried))
        return std::nullopt;
      c.mask = sel->operand(0);
      d = sel->operand(1);
    }
    Op *diff = d->definingOp();
    if (!diff || (diff->kind() != OpKind::Sub && diff->kind() != OpKind::Add) || !isFloat(d->type.dtype))
      return std::nullopt;
    auto pureData = [&](Value *v) { return !(deps(v) & (kEarlier | kCarried)); };
    auto pureEarlier = [&](Value *v) { return (deps(v) & kEarlier) && !(deps(v) & (kData | kCarried)); };
    Value *a = diff->operand(0), *y = diff->operand(1);
    if (pureEarlier(a) && pureData(y))
      std::swap(a, y); // (c - A)² = (A - c)², and A + y = y + A
    if (!pureData(a) || !pureEarlier(y))
      return std::nullopt;
    Value *leaf = preBroadcast(y);
    if (!leaf)
      return std::nullopt;
    c.data = a;
    c.centre = LinearTerm{leaf, diff->kind() == OpKind::Add, {}};
    return c;
  }

  /// F = A(x) + Σ terms(y): collects the y-dependent terms of `v` (times `negative` and
  /// `scales`) into `out`.
  bool linear(Value *v, bool negative, std::vector<LinearTerm::Scale> scales, std::vector<LinearTerm> &out) {
    unsigned d = deps(v);
    if (!(d & kEarlier))
      return true;
    if (!(d & kData)) {
      Value *u = preBroadcast(v);
      if (!u)
        return false;
      out.push_back(LinearTerm{u, negative, std::move(scales)});
      return true;
    }
    Op *def = v->definingOp();
    if (!def)
      return fail(v, mixes(v));
    auto scaled = [&](unsigned which, bool inverse) -> bool {
      Value *scale = def->operand(1 - which);
      Value *s = invariantScalar(scale);
      if (deps(scale) != 0 || !s)
        return fail(v, mixes(v) + " through a product that is not a constant factor");
      auto more = scales;
      more.push_back({s, inverse});
      return linear(def->operand(which), negative, more, out);
    };
    switch (def->kind()) {
    case OpKind::Add:
      return linear(def->operand(0), negative, scales, out) && linear(def->operand(1), negative, scales, out);
    case OpKind::Sub:
      return linear(def->operand(0), negative, scales, out) && linear(def->operand(1), !negative, scales, out);
    case OpKind::Neg:
      return linear(def->operand(0), !negative, scales, out);
    case OpKind::Mul:
      return deps(def->operand(0)) == 0 ? scaled(1, false) : scaled(0, false);
    case OpKind::Div:
      return scaled(0, true);
    case OpKind::Cast:
      if (isFloat(def->result()->type.dtype) && isFloat(def->operand(0)->type.dtype)) {
        if (!keepsF32Range(def->result()->type.dtype))
          return fail(v, roundsTo(v) + ": a shift moved across it changes which values saturate");
        return linear(def->operand(0), negative, scales, out);
      }
      break;
    default:
      break;
    }
    return fail(v, mixes(v) + ", and is not a sum of a function of the data and a function of " +
                       earlierNames(v));
  }

  /// "`cast` rounds <what> to f8e4m3".
  std::string roundsTo(Value *v) {
    return "`cast` rounds a value computed from " + earlierNames(v) + " to " +
           std::string(dtypeName(v->type.dtype));
  }

  /// F = G(x) · Π exp(B_i(y)) · Π P_k(y): collects the factors of `v` into `out`.
  /// `quantized`: `v` is rounded to a narrow format, so its plain factors stay in place.
  bool factor(Value *v, Separation &out, bool quantized = false) {
    unsigned d = deps(v);
    if (!(d & kEarlier))
      return true;
    if (!(d & kData))
      return fail(v, "a factor of F depends on " + earlierNames(v) + " alone where a product was expected");
    Op *def = v->definingOp();
    if (!def)
      return fail(v, mixes(v));
    auto deferred = [&](unsigned which, bool inverse) -> bool {
      Value *u = preBroadcast(def->operand(which));
      if (!u)
        return false;
      (quantized ? out.running : out.deferred).push_back(DeferredFactor{def, which, inverse, u});
      return true;
    };
    switch (def->kind()) {
    case OpKind::Mul:
      for (unsigned i = 0; i < 2; ++i) {
        unsigned di = deps(def->operand(i));
        if ((di & kEarlier) && !(di & kData)) {
          if (!deferred(i, false))
            return false;
        } else if (!factor(def->operand(i), out, quantized))
          return false;
      }
      return true;
    case OpKind::Div: {
      unsigned dn = deps(def->operand(0)), dd = deps(def->operand(1));
      if (dd & kEarlier) {
        if (dd & kData)
          return fail(v, "the divisor " + mixes(def->operand(1)));
        if (!deferred(1, true))
          return false;
      }
      if ((dn & kEarlier) && !(dn & kData))
        return deferred(0, false);
      return factor(def->operand(0), out, quantized);
    }
    case OpKind::Exp:
    case OpKind::Exp2: {
      ExpFactor e{def, def->kind() == OpKind::Exp2, {}};
      if (!linear(def->operand(0), false, {}, e.terms))
        return false;
      out.exps.push_back(std::move(e));
      return true;
    }
    case OpKind::Neg:
      return factor(def->operand(0), out, quantized);
    case OpKind::Cast:
      if (isFloat(def->result()->type.dtype) && isFloat(def->operand(0)->type.dtype)) {
        bool narrow = !keepsF32Range(def->result()->type.dtype);
        if (narrow && !policy_.quantized)
          return fail(v, roundsTo(v) + ": taking a factor out of that rounding changes which values saturate "
                                       "and which flush to zero (--fuse-quantized fuses it with the factor at "
                                       "its running value)");
        return factor(def->operand(0), out, quantized || narrow);
      }
      break;
    case OpKind::ExpandDims:
    case OpKind::Broadcast: {
      // A product broadcast to F's shape (`p[:, None] * v`): its factors of y stay
      // factors if they are scalars, constant along every dimension.
      Separation inner;
      if (!factor(def->operand(0), inner, quantized))
        return false;
      bool scalars = true;
      for (const ExpFactor &e : inner.exps)
        for (const LinearTerm &t : e.terms)
          scalars = scalars && t.leaf->type.isScalar();
      for (const DeferredFactor &d : inner.deferred)
        scalars = scalars && d.leaf->type.isScalar();
      for (const DeferredFactor &d : inner.running)
        scalars = scalars && d.leaf->type.isScalar();
      if (!scalars)
        return fail(v, "a broadcast of a product whose factors of " + earlierNames(v) + " are not scalars");
      out.exps.insert(out.exps.end(), inner.exps.begin(), inner.exps.end());
      out.deferred.insert(out.deferred.end(), inner.deferred.begin(), inner.deferred.end());
      out.running.insert(out.running.end(), inner.running.begin(), inner.running.end());
      return true;
    }
    case OpKind::Select:
      // select(c, G·H, 0) = select(c, G, 0)·H: a mask that depends on the data only.
      if (deps(def->operand(0)) & kEarlier)
        return fail(v, "the condition of `select` depends on " + earlierNames(def->operand(0)));
      if (isZeroConstant(def->operand(2)))
        return factor(def->operand(1), out, quantized);
      if (isZeroConstant(def->operand(1)))
        return factor(def->operand(2), out, quantized);
      break;
    default:
      break;
    }
    return fail(v, mixes(v) + ", and is not a product of a function of the data and a function of " +
                       earlierNames(v));
  }

  Op &loop_;
  Block &body_;
  const Accumulator &acc_;
  const FusionPolicy &policy_;
  std::unordered_set<const Op *> earlier_;
  std::unordered_map<const Value *, unsigned> memo_;
  std::unordered_map<const Value *, bool> sign_;
  std::unordered_set<const Value *> inductive_;
  std::string reason_;
  Location *where_ = nullptr;
};

} // namespace

std::optional<std::string> separate(Accumulator &acc, Op &loop, const std::vector<Op *> &earlier,
                                    const FusionPolicy &policy, Location &where) {
  Separation s;
  Separator sep(loop, earlier, acc, policy);
  if (auto why = sep.run(s, where))
    return why;
  acc.separation = std::move(s);
  return std::nullopt;
}

} // namespace kiln::ir
