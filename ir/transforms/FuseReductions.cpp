//===- FuseReductions.cpp - Cascaded reduction loops become one pass ------===//
//
// The rewrite half of reduction-chain fusion. For a chain whose loops the analysis
// (ReductionChains.cpp) marked fused, one loop replaces them, at the place of the first:
//
//   for i: m = max(m, max(x_i))                 for i: m' = max(m, max(x_i))
//   for i: l = l + sum(exp(x_i - m))     ==>           l' = l * exp2((m - m') * log2 e)
//                                                          + sum(exp(x_i - m'))
//
// Each iteration runs the bodies of the fused loops in order. A later body sees the
// running values of the earlier loops where it used their finals, and starts from its
// accumulator rescaled by H(y)/H(y_prev): for an exponential factor exp(B(y)) that is
// exp2((B(y) - B(y_prev)) · log2 e); for ⊕ = max/min a shift by B(y) - B(y_prev).
// Factors that are plain functions of y (`/ l`) are dropped inside the loop and applied
// once to the final value. Pure ops between the loops that do not depend on them move
// above the fused loop; the rest stay below it and read the final values.
//
// Running maxima start at -inf. Where one is still -inf, every element seen so far was
// -inf, and exp(x - m) would be exp(-inf + inf) = NaN: the loop bodies read the value 0
// instead (any finite value gives the same terms, exp(-inf - 0) = 0), while the rescale
// keeps the true previous value, so exp(-inf - m) = 0 clears the accumulator as it must.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/FusionRemarks.h"
#include "ir/transforms/Passes.h"
#include "ir/transforms/ReductionChains.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

class ChainFuser {
public:
  explicit ChainFuser(ReductionChain &chain) {
    for (ChainLoop &l : chain.loops) {
      chainLoops_.insert(l.loop);
      if (l.fused)
        fused_.push_back(&l);
    }
    parent_ = fused_.front()->loop->parentBlock();
  }

  void run() {
    hoistInvariants();
    Op *first = fused_.front()->loop;
    Builder b;
    b.setInsertionPoint(first);
    Op *loop = createLoop(b);
    b.setInsertionPointToEnd(loop->region(0));
    buildBody(b, *loop);
    b.setInsertionPoint(parent_, std::next(parent_->find(loop)));
    replaceUses(*parent_, buildEpilogue(b, *loop));
    for (ChainLoop *l : fused_)
      parent_->erase(parent_->find(l->loop));
  }

private:
  //===------------------------------------------------------------------===//
  // Dependences
  //===------------------------------------------------------------------===//

  bool insideChainLoop(const Op *op) const {
    for (const Op *p = op->parentOp(); p; p = p->parentOp())
      if (chainLoops_.count(p))
        return true;
    return false;
  }

  /// True when `v` reads a result of a loop of the chain.
  bool dependsOnChain(Value *v) {
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

  /// Moves the pure ops between the fused loops that do not read the chain's results
  /// above the first fused loop, where the fused loop can use them.
  void hoistInvariants() {
    Op *first = fused_.front()->loop, *last = fused_.back()->loop;
    auto it = std::next(parent_->find(first));
    auto end = parent_->find(last);
    while (it != end) {
      Op &op = **it;
      bool movable = op.regions().empty() && !isTerminator(op.kind()) && !writesOrFails(op.kind());
      for (const auto &r : op.results())
        movable = movable && !dependsOnChain(r.get());
      if (!movable) {
        ++it;
        continue;
      }
      auto next = std::next(it);
      std::unique_ptr<Op> taken = parent_->take(it);
      parent_->insert(parent_->find(first), std::move(taken));
      it = next;
    }
  }

  //===------------------------------------------------------------------===//
  // Values of y in a context (running, previous, final)
  //===------------------------------------------------------------------===//

  /// `v` computed where the builder stands, with the chain's results read from `map`
  /// (which also memoizes what was computed). Values that do not depend on the chain
  /// and live outside its loops are used as they are.
  Value *materialize(Value *v, ValueMap &map, Builder &b) {
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

  /// `v` where the running maximum (minimum) is still -inf (+inf) reads 0 instead.
  Value *finiteOrZero(Value *v, Combiner combiner, Builder &b, Location loc) {
    Type boolType = v->type.withDType(DType::Bool);
    double identity = combiner == Combiner::Max ? -INFINITY : INFINITY;
    Value *isIdentity = b.createValue(OpKind::Cmp, loc, {v, b.floatConstant(loc, v->type, identity)}, boolType,
                                      {{"pred", std::string("eq")}});
    return b.createValue(OpKind::Select, loc, {isIdentity, b.floatConstant(loc, v->type, 0.0), v}, v->type);
  }

  //===------------------------------------------------------------------===//
  // Shapes
  //===------------------------------------------------------------------===//

  /// Brings `w` (a scalar, or a tile of F's rank with size 1 along the reduced
  /// dimensions) to the accumulator's type.
  Value *toAccumulator(Value *w, const Accumulator &acc, const Type &accType, Builder &b, Location loc) {
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
  Value *scalarScale(Value *s, Builder &b, Location loc) {
    if (s->type.isScalar())
      return s;
    Op *def = s->definingOp();
    return b.create(OpKind::Constant, loc, {}, {s->type.element()}, def->attrs())->result();
  }

  /// Σ ±(leaf(y) - leaf(y_prev)) · scales over `terms`: at the leaves' type when they
  /// all have one (the exponential is then taken once per row, not per element of the
  /// accumulator), else at the accumulator's type.
  Value *delta(const std::vector<LinearTerm> &terms, const Accumulator &acc, const Type &accType, Builder &b,
               Location loc) {
    bool uniform = true;
    for (const LinearTerm &t : terms)
      uniform = uniform && t.leaf->type == terms.front().leaf->type;
    Value *sum = nullptr;
    for (const LinearTerm &t : terms) {
      Value *now = materialize(t.leaf, running_, b);
      Value *before = materialize(t.leaf, previous_, b);
      Value *d = b.createValue(OpKind::Sub, loc, {now, before}, now->type);
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

  /// The accumulator `prev` rescaled to the running values of y.
  Value *rescale(Value *prev, const Accumulator &acc, Builder &b, Location loc) {
    const Separation &s = acc.separation;
    if (!s.shifts.empty()) {
      Value *shift = toAccumulator(delta(s.shifts, acc, prev->type, b, loc), acc, prev->type, b, loc);
      return b.createValue(OpKind::Add, loc, {prev, shift}, prev->type);
    }
    if (s.exps.empty())
      return prev;
    // exp(a) = exp2(a · log2 e): one exponent, one hardware exp2.
    Value *exponent = nullptr;
    for (const ExpFactor &e : s.exps) {
      Value *d = delta(e.terms, acc, prev->type, b, loc);
      if (!e.base2)
        d = b.createValue(OpKind::Mul, loc, {d, b.floatConstant(loc, d->type, M_LOG2E)}, d->type);
      if (exponent && exponent->type != d->type) {
        exponent = toAccumulator(exponent, acc, prev->type, b, loc);
        d = toAccumulator(d, acc, prev->type, b, loc);
      }
      exponent = exponent ? b.createValue(OpKind::Add, loc, {exponent, d}, d->type) : d;
    }
    Value *ratio = b.createValue(OpKind::Exp2, loc, {exponent}, exponent->type);
    return b.createValue(OpKind::Mul, loc, {prev, toAccumulator(ratio, acc, prev->type, b, loc)}, prev->type);
  }

  //===------------------------------------------------------------------===//
  // The fused loop
  //===------------------------------------------------------------------===//

  Op *createLoop(Builder &b) {
    Op *first = fused_.front()->loop;
    std::vector<Value *> operands{first->operand(0), first->operand(1), first->operand(2)};
    std::vector<Type> types;
    for (ChainLoop *l : fused_)
      for (unsigned i = 3; i < l->loop->numOperands(); ++i) {
        const Accumulator &acc = l->accumulators[i - 3];
        Value *init = l->loop->operand(i);
        // A centred square carries M2 from 0; its initial value is added at the end.
        operands.push_back(acc.separation.centered ? b.floatConstant(l->loop->loc(), init->type, 0.0) : init);
        types.push_back(init->type);
      }
    // Then the count and the mean of each centred square.
    unsigned extra = static_cast<unsigned>(types.size());
    for (ChainLoop *l : fused_)
      for (const Accumulator &acc : l->accumulators)
        if (acc.separation.centered) {
          Type t = acc.combineOp->result()->type;
          extraSlot_[&acc] = extra;
          extra += 2;
          for (int k = 0; k < 2; ++k) {
            operands.push_back(b.floatConstant(l->loop->loc(), t, 0.0));
            types.push_back(t);
          }
        }
    Op *loop = b.create(OpKind::For, first->loc(), operands, types, {}, 1);
    Block *body = loop->region(0);
    const Block &firstBody = *first->region(0);
    body->addArgument(firstBody.argument(0)->type, firstBody.argument(0)->nameHint);
    unsigned k = 0;
    for (ChainLoop *l : fused_) {
      const Block &src = *l->loop->region(0);
      for (unsigned i = 1; i < src.numArguments(); ++i) {
        body->addArgument(src.argument(i)->type, src.argument(i)->nameHint);
        loop->result(k++)->nameHint = l->loop->result(i - 1)->nameHint;
      }
    }
    for (ChainLoop *l : fused_)
      for (const Accumulator &acc : l->accumulators)
        if (acc.separation.centered) {
          std::string name = acc.name();
          body->addArgument(types[k], name + "_count");
          body->addArgument(types[k + 1], name + "_mean");
          k += 2;
        }
    return loop;
  }

  /// Where each fused loop's accumulators live in the fused loop (first carried slot).
  unsigned firstSlot(const ChainLoop *l) const {
    unsigned k = 0;
    for (const ChainLoop *f : fused_) {
      if (f == l)
        return k;
      k += f->loop->numResults();
    }
    return k;
  }

  void buildBody(Builder &b, Op &fused) {
    Block &body = *fused.region(0);
    std::vector<Value *> yields;
    std::vector<Value *> extraYields;
    for (ChainLoop *l : fused_) {
      Block &src = *l->loop->region(0);
      unsigned base = firstSlot(l);
      ValueMap map;
      map[src.argument(0)] = body.argument(0);
      // Deferred factors are dropped inside the loop: their operand reads 1.
      std::unordered_map<const Op *, unsigned> dropped;
      for (const Accumulator &acc : l->accumulators) {
        Value *prev = body.argument(1 + base + acc.slot);
        map[src.argument(1 + acc.slot)] = rescale(prev, acc, b, l->loop->loc());
        for (const DeferredFactor &d : acc.separation.deferred)
          dropped[d.op] = d.factorOperand;
      }
      for (auto &owned : src.ops()) {
        Op &op = *owned;
        if (isTerminator(op.kind()))
          continue;
        for (Value *o : op.operands())
          if (!map.count(o) && o->definingOp() && !insideChainLoop(o->definingOp()) && dependsOnChain(o))
            map[o] = materialize(o, running_, b);
        if (auto d = dropped.find(&op); d != dropped.end()) {
          Value *one = b.floatConstant(op.loc(), op.operand(d->second)->type, 1.0);
          std::vector<Value *> operands;
          for (unsigned i = 0; i < op.numOperands(); ++i)
            operands.push_back(i == d->second ? one : (map.count(op.operand(i)) ? map[op.operand(i)] : op.operand(i)));
          Value *r = b.createValue(op.kind(), op.loc(), operands, op.result()->type, op.attrs());
          r->nameHint = op.result()->nameHint;
          map[op.result()] = r;
          continue;
        }
        cloneOp(b, op, map);
      }
      Op *yield = src.terminator();
      for (unsigned slot = 0; slot < l->loop->numResults(); ++slot) {
        Value *next = yield->operand(slot);
        Value *now = map.count(next) ? map[next] : next;
        if (const Accumulator &acc = l->accumulators[slot]; acc.separation.centered) {
          unsigned e = extraSlot_.at(&acc);
          auto [m2, count, mean] = mergeBlock(acc, map, body.argument(1 + base + slot), body.argument(1 + e),
                                              body.argument(2 + e), b, l->loop->loc());
          now = m2;
          extraYields.push_back(count);
          extraYields.push_back(mean);
        }
        yields.push_back(now);
        const Accumulator &acc = l->accumulators[slot];
        bool extremum = acc.combiner == Combiner::Max || acc.combiner == Combiner::Min;
        running_[l->loop->result(slot)] =
            extremum && isFloat(now->type.dtype) ? finiteOrZero(now, acc.combiner, b, l->loop->loc()) : now;
        previous_[l->loop->result(slot)] = body.argument(1 + base + slot);
      }
    }
    yields.insert(yields.end(), extraYields.begin(), extraYields.end());
    b.create(OpKind::Yield, fused.loc(), yields, {});
  }

  /// `v` (the accumulator's shape) broadcast back over F's tile `term`.
  Value *toTerm(Value *v, const Accumulator &acc, const Type &term, Builder &b, Location loc) {
    if (v->type.isScalar())
      return b.createValue(OpKind::Splat, loc, {v}, term.withDType(v->type.dtype));
    for (unsigned r : acc.reducedDims) {
      Shape s = v->type.shape;
      s.insert(s.begin() + r, 1);
      v = b.createValue(OpKind::ExpandDims, loc, {v}, v->type.withShape(s), {{"axis", int64_t(r)}});
    }
    return v->type.shape == term.shape ? v : b.createValue(OpKind::Broadcast, loc, {v}, term.withDType(v->type.dtype));
  }

  /// Σ over the reduced dimensions of `tile` (of F's shape), at the accumulator's shape.
  Value *reduceSum(Value *tile, const Accumulator &acc, Builder &b, Location loc) {
    for (auto r = acc.reducedDims.rbegin(); r != acc.reducedDims.rend(); ++r) {
      Shape s = tile->type.shape;
      s.erase(s.begin() + *r);
      tile = b.createValue(OpKind::Reduce, loc, {tile}, tile->type.withShape(s),
                           {{"axis", int64_t(*r)}, {"kind", std::string("sum")}});
    }
    return tile;
  }

  /// One block of a centred square merged into (M2, N, μ): the block's count n_b, mean
  /// μ_b and centred M2_b, then δ = μ_b - μ, N' = N + n_b, μ' = μ + δ·n_b/N',
  /// M2' = M2 + M2_b + δ²·N·n_b/N'. Empty blocks (every lane masked) change nothing.
  std::tuple<Value *, Value *, Value *> mergeBlock(const Accumulator &acc, ValueMap &map, Value *m2, Value *count,
                                                   Value *mean, Builder &b, Location loc) {
    const CenteredSquare &c = *acc.separation.centered;
    auto mapped = [&](Value *v) { return map.count(v) ? map[v] : v; };
    Value *data = mapped(c.data);
    Type tile = data->type;
    Type accType = m2->type;
    if (tile.dtype != accType.dtype) {
      tile = tile.withDType(accType.dtype);
      data = b.createValue(OpKind::Cast, loc, {data}, tile);
    }
    Value *zeroTile = b.floatConstant(loc, tile, 0.0);
    Value *mask = c.mask ? mapped(c.mask) : nullptr;
    auto selected = [&](Value *v) {
      return mask ? b.createValue(OpKind::Select, loc, {mask, v, zeroTile}, tile) : v;
    };
    auto op = [&](OpKind k, Value *x, Value *y) { return b.createValue(k, loc, {x, y}, x->type); };
    Value *zero = b.floatConstant(loc, accType, 0.0);
    Value *blockCount = reduceSum(selected(b.floatConstant(loc, tile, 1.0)), acc, b, loc);
    Value *blockSum = reduceSum(selected(data), acc, b, loc);
    Value *nonEmpty = b.createValue(OpKind::Cmp, loc, {blockCount, zero}, accType.withDType(DType::Bool),
                                    {{"pred", std::string("gt")}});
    Value *blockMean = b.createValue(OpKind::Select, loc, {nonEmpty, op(OpKind::Div, blockSum, blockCount), zero},
                                     accType);
    Value *dev = selected(op(OpKind::Sub, data, toTerm(blockMean, acc, tile, b, loc)));
    Value *blockM2 = reduceSum(op(OpKind::Mul, dev, dev), acc, b, loc);
    Value *total = op(OpKind::Add, count, blockCount);
    Value *share = b.createValue(OpKind::Select, loc, {nonEmpty, op(OpKind::Div, blockCount, total), zero}, accType);
    Value *delta = op(OpKind::Sub, blockMean, mean);
    Value *newMean = op(OpKind::Add, mean, op(OpKind::Mul, delta, share));
    Value *cross = op(OpKind::Mul, op(OpKind::Mul, op(OpKind::Mul, delta, delta), count), share);
    Value *newM2 = op(OpKind::Add, op(OpKind::Add, m2, blockM2), cross);
    return {newM2, total, newMean};
  }

  /// The final values: the fused loop's results with the deferred factors applied.
  /// Returns the replacement of each old loop result.
  ValueMap buildEpilogue(Builder &b, Op &fused) {
    ValueMap finals, replacements;
    for (ChainLoop *l : fused_) {
      unsigned base = firstSlot(l);
      for (const Accumulator &acc : l->accumulators) {
        Value *v = fused.result(base + acc.slot);
        if (acc.separation.centered)
          v = centredSum(acc, fused, v, l->loop->operand(3 + acc.slot), finals, b, l->loop->loc());
        for (const DeferredFactor &d : acc.separation.deferred) {
          Value *f = toAccumulator(materialize(d.leaf, finals, b), acc, v->type, b, l->loop->loc());
          v = b.createValue(d.inverse ? OpKind::Div : OpKind::Mul, l->loop->loc(), {v, f}, v->type);
        }
        finals[l->loop->result(acc.slot)] = v;
        replacements[l->loop->result(acc.slot)] = v;
      }
    }
    return replacements;
  }

  /// init + M2 + N·(μ - c)² with c at its final value.
  Value *centredSum(const Accumulator &acc, Op &fused, Value *m2, Value *init, ValueMap &finals, Builder &b,
                    Location loc) {
    const LinearTerm &centre = acc.separation.centered->centre;
    unsigned e = extraSlot_.at(&acc);
    Value *count = fused.result(e), *mean = fused.result(e + 1);
    Value *c = toAccumulator(materialize(centre.leaf, finals, b), acc, m2->type, b, loc);
    if (centre.negative)
      c = b.createValue(OpKind::Neg, loc, {c}, c->type);
    Value *off = b.createValue(OpKind::Sub, loc, {mean, c}, c->type);
    Value *sq = b.createValue(OpKind::Mul, loc, {b.createValue(OpKind::Mul, loc, {off, off}, c->type), count}, c->type);
    Value *sum = b.createValue(OpKind::Add, loc, {m2, sq}, c->type);
    return b.createValue(OpKind::Add, loc, {init, sum}, c->type);
  }

  /// The first of the two extra carried values (count, mean) of each centred square.
  std::unordered_map<const Accumulator *, unsigned> extraSlot_;
  std::vector<ChainLoop *> fused_;
  std::unordered_set<const Op *> chainLoops_;
  Block *parent_ = nullptr;
  std::unordered_map<const Value *, bool> dependsMemo_;
  ValueMap running_;  ///< the chain's results -> their running values in the fused body
  ValueMap previous_; ///< the chain's results -> their values at the start of the iteration
};

} // namespace

bool fuseReductionChains(Kernel &, std::vector<ReductionChain> &chains) {
  bool changed = false;
  for (ReductionChain &chain : chains) {
    changed |= versionForOneBlock(chain);
    if (chain.fusedCount() >= 2) {
      ChainFuser(chain).run();
      changed = true;
    }
  }
  return changed;
}

bool fuseReductions(Module &module, DiagnosticEngine *remarks) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    std::vector<ReductionChain> chains = analyzeReductionChains(*kernel);
    if (remarks)
      reportFusion(chains, *remarks);
    changed |= fuseReductionChains(*kernel, chains);
  }
  return changed;
}

} // namespace kiln::ir
