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
// An accumulator that is rescaled starts from the identity of ⊕, its initial value
// combined in after the loop (and in the value later loops see), never rescaled.
//
// The algebra lives in ChainAlgebra.cpp; a chain planned over several segments
// (SegmentPlan.cpp) gets its fused loop split over programs by SplitReduction.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ChainAlgebra.h"
#include "ir/transforms/FusionRemarks.h"
#include "ir/transforms/RangeVersions.h"
#include "ir/transforms/Passes.h"
#include "ir/transforms/SplitReduction.h"

#include <optional>
#include <tuple>
#include <unordered_map>

namespace kiln::ir {

namespace {

class ChainFuser : ChainAlgebra {
public:
  ChainFuser(Kernel &kernel, ReductionChain &chain) : ChainAlgebra(chain), kernel_(kernel), chain_(chain) {}

  void run() {
    hoistInvariants();
    Op *first = fused().front()->loop;
    Builder b;
    b.setInsertionPoint(first);
    std::optional<SegmentSplit> split;
    if (chain_.split.segments > 1)
      split.emplace(kernel_, static_cast<ChainAlgebra &>(*this), chain_.split.segments, chain_.split.cluster);
    Value *wholeLb = first->operand(0), *wholeUb = first->operand(1);
    Op *loop = createLoop(b, split ? &*split : nullptr);
    b.setInsertionPointToEnd(loop->region(0));
    buildBody(b, *loop);
    b.setInsertionPoint(parent(), std::next(parent()->find(loop)));
    std::vector<Value *> finals;
    for (const auto &r : loop->results())
      finals.push_back(r.get());
    if (split)
      finals = chain_.split.cluster ? split->exchangeSegments(b, *loop, layout())
                                    : split->mergeSegments(b, *loop, layout());
    replaceUses(*parent(), buildEpilogue(b, finals, rangeNotEmpty(b, first)));
    for (ChainLoop *l : fused())
      parent()->erase(parent()->find(l->loop));
    if (chain_.split.cluster)
      shareTrailingLoop(*loop, wholeLb, wholeUb);
  }

private:
  /// In a cluster split every segment runs the trailing loop, over its own share, and
  /// holds the share on chip when it is one block or none (HeldShare.cpp).
  void shareTrailingLoop(Op &loop, Value *wholeLb, Value *wholeUb) {
    Op *trailing = chain_.loops.back().loop;
    Value *lb = loop.operand(0), *ub = loop.operand(1);
    trailing->operands()[0] = lb;
    trailing->operands()[1] = ub;
    // The whole range spans at most S blocks, computed where the share's bounds are.
    Builder b;
    b.setInsertionPoint(&loop);
    const int64_t step = *integerConstant(loop.operand(2));
    Value *limit = b.intConstant(loop.loc(), wholeUb->type, chain_.split.segments * step);
    holdShareOnChip(*parent(), &loop, trailing, lb, ub, spansAtMost(b, loop.loc(), wholeLb, wholeUb, limit));
  }

  /// Moves the pure ops between the fused loops that do not read the chain's results
  /// above the first fused loop, where the fused loop can use them.
  void hoistInvariants() {
    Op *first = fused().front()->loop, *last = fused().back()->loop;
    auto it = std::next(parent()->find(first));
    auto end = parent()->find(last);
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
      std::unique_ptr<Op> taken = parent()->take(it);
      parent()->insert(parent()->find(first), std::move(taken));
      it = next;
    }
  }

  //===------------------------------------------------------------------===//
  // The fused loop
  //===------------------------------------------------------------------===//

  Op *createLoop(Builder &b, SegmentSplit *split) {
    Op *first = fused().front()->loop;
    std::vector<Value *> operands{first->operand(0), first->operand(1), first->operand(2)};
    if (split)
      std::tie(operands[0], operands[1]) = split->segmentBounds(b, first->operand(0), first->operand(1), first->loc());
    std::vector<Type> types;
    for (ChainLoop *l : fused())
      for (unsigned i = 3; i < l->loop->numOperands(); ++i) {
        const Accumulator &acc = l->accumulators[i - 3];
        Value *init = l->loop->operand(i);
        // A centred square carries M2 from 0, and an accumulator that is rescaled starts
        // from the identity of ⊕: the initial value is not a term of F and must not be
        // rescaled, so it is combined in at the end.
        if (acc.separation.centered)
          operands.push_back(b.floatConstant(l->loop->loc(), init->type, 0.0));
        else if (acc.separation.dependsOnEarlier() && !isIdentity(init, acc.combiner)) {
          laterInit_[&acc] = init;
          operands.push_back(b.floatConstant(l->loop->loc(), init->type, identityOf(acc.combiner)));
        } else
          operands.push_back(split ? split->initialValue(b, init, acc, l->loop->loc()) : init);
        types.push_back(init->type);
      }
    // Then the count and the mean of each centred square.
    unsigned extra = static_cast<unsigned>(types.size());
    for (ChainLoop *l : fused())
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
    // A blocks() loop stays one for the sparsity stages after fusion.
    AttrMap attrs;
    if (first->hasAttr("block_mask"))
      attrs["block_mask"] = first->attrs().at("block_mask");
    Op *loop = b.create(OpKind::For, first->loc(), operands, types, std::move(attrs), 1);
    Block *body = loop->region(0);
    const Block &firstBody = *first->region(0);
    body->addArgument(firstBody.argument(0)->type, firstBody.argument(0)->nameHint);
    unsigned k = 0;
    for (ChainLoop *l : fused()) {
      const Block &src = *l->loop->region(0);
      for (unsigned i = 1; i < src.numArguments(); ++i) {
        body->addArgument(src.argument(i)->type, src.argument(i)->nameHint);
        loop->result(k++)->nameHint = l->loop->result(i - 1)->nameHint;
      }
    }
    for (ChainLoop *l : fused())
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
    for (const ChainLoop *f : fused()) {
      if (f == l)
        return k;
      k += f->loop->numResults();
    }
    return k;
  }

  /// Every accumulator with its carried slots, in chain order.
  FusedLayout layout() const {
    FusedLayout out;
    for (const ChainLoop *l : fused())
      for (const Accumulator &acc : l->accumulators) {
        FusedLayout::Entry e{l, &acc, firstSlot(l) + acc.slot};
        e.laterInit = laterInitOf(acc);
        if (acc.separation.centered) {
          e.countSlot = static_cast<int>(extraSlot_.at(&acc));
          e.meanSlot = e.countSlot + 1;
        }
        out.entries.push_back(e);
      }
    return out;
  }

  void buildBody(Builder &b, Op &fused) {
    Block &body = *fused.region(0);
    std::vector<Value *> yields;
    std::vector<Value *> extraYields;
    for (ChainLoop *l : this->fused()) {
      Block &src = *l->loop->region(0);
      unsigned base = firstSlot(l);
      ValueMap map;
      map[src.argument(0)] = body.argument(0);
      // Deferred factors are dropped inside the loop: their operand reads 1.
      std::unordered_map<const Op *, unsigned> dropped;
      for (const Accumulator &acc : l->accumulators) {
        Value *prev = body.argument(1 + base + acc.slot);
        map[src.argument(1 + acc.slot)] = rescale(prev, acc, running_, previous_, b, l->loop->loc());
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
            operands.push_back(i == d->second ? one : lookup(map, op.operand(i)));
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
        Value *now = lookup(map, next);
        if (const Accumulator &acc = l->accumulators[slot]; acc.separation.centered) {
          unsigned e = extraSlot_.at(&acc);
          CentredState merged =
              mergeBlock(acc, map, {body.argument(1 + base + slot), body.argument(1 + e), body.argument(2 + e)}, b,
                         l->loop->loc());
          now = merged.m2;
          extraYields.push_back(merged.count);
          extraYields.push_back(merged.mean);
        }
        yields.push_back(now);
        const Accumulator &acc = l->accumulators[slot];
        Value *init = laterInitOf(acc);
        running_[l->loop->result(slot)] = seenRunning(now, init, acc.combiner, b, l->loop->loc());
        previous_[l->loop->result(slot)] = seen(body.argument(1 + base + slot), init, acc.combiner, b, l->loop->loc());
      }
    }
    yields.insert(yields.end(), extraYields.begin(), extraYields.end());
    b.create(OpKind::Yield, fused.loc(), yields, {});
  }

  /// One block of a centred square merged into the running (M2, N, μ): the block's
  /// count n_b, mean μ_b and centred M2_b, merged as two states (mergeCentred).
  CentredState mergeBlock(const Accumulator &acc, ValueMap &map, const CentredState &running, Builder &b,
                          Location loc) {
    const CenteredSquare &c = *acc.separation.centered;
    Value *data = lookup(map, c.data);
    Type tile = data->type;
    Type accType = running.m2->type;
    if (tile.dtype != accType.dtype) {
      tile = tile.withDType(accType.dtype);
      data = b.createValue(OpKind::Cast, loc, {data}, tile);
    }
    Value *zeroTile = b.floatConstant(loc, tile, 0.0);
    Value *mask = c.mask ? lookup(map, c.mask) : nullptr;
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
    return mergeCentred(running, {blockM2, blockCount, blockMean}, b, loc);
  }

  /// Whether the range of `loop` has an iteration, where `b` stands; null when the sign of
  /// its step is not known.
  static Value *rangeNotEmpty(Builder &b, Op *loop) {
    std::optional<int64_t> step = integerConstant(loop->operand(2));
    if (!step || *step == 0)
      return nullptr;
    return b.createValue(OpKind::Cmp, loop->loc(), {loop->operand(0), loop->operand(1)}, Type::scalar(DType::Bool),
                         {{"pred", std::string(*step > 0 ? "lt" : "gt")}});
  }

  /// The final values: `finals` (the fused loop's carried values at the end) with the
  /// deferred factors applied. Returns the replacement of each old loop result. Over an
  /// empty range the loops as written leave each accumulator at its initial value, while
  /// a deferred factor may be undefined there (1/l with l = 0): `ran`, when known, keeps
  /// the factors out of that case.
  ValueMap buildEpilogue(Builder &b, const std::vector<Value *> &finals, Value *ran) {
    ValueMap results, replacements;
    for (ChainLoop *l : fused()) {
      unsigned base = firstSlot(l);
      for (const Accumulator &acc : l->accumulators) {
        Value *v = finals[base + acc.slot];
        if (acc.separation.centered)
          v = centredSum(acc, finals, v, l->loop->operand(3 + acc.slot), results, b, l->loop->loc());
        Value *unscaled = v;
        for (const DeferredFactor &d : acc.separation.deferred) {
          Value *f = toAccumulator(materialize(d.leaf, results, b), acc, v->type, b, l->loop->loc());
          v = b.createValue(d.inverse ? OpKind::Div : OpKind::Mul, l->loop->loc(), {v, f}, v->type);
        }
        if (ran && v != unscaled) {
          Value *cond = v->type.isScalar()
                            ? ran
                            : b.createValue(OpKind::Splat, l->loop->loc(), {ran}, Type::tile(DType::Bool, v->type.shape));
          v = b.createValue(OpKind::Select, l->loop->loc(), {cond, v, unscaled}, v->type);
        }
        if (auto init = laterInit_.find(&acc); init != laterInit_.end())
          v = b.createValue(combineKind(acc.combiner), l->loop->loc(), {init->second, v}, v->type);
        results[l->loop->result(acc.slot)] = v;
        replacements[l->loop->result(acc.slot)] = v;
      }
    }
    return replacements;
  }

  /// init + M2 + N·(μ - c)² with c at its final value.
  Value *centredSum(const Accumulator &acc, const std::vector<Value *> &finals, Value *m2, Value *init,
                    ValueMap &results, Builder &b, Location loc) {
    const LinearTerm &centre = acc.separation.centered->centre;
    unsigned e = extraSlot_.at(&acc);
    Value *count = finals[e], *mean = finals[e + 1];
    Value *c = toAccumulator(materialize(centre.leaf, results, b), acc, m2->type, b, loc);
    if (centre.negative)
      c = b.createValue(OpKind::Neg, loc, {c}, c->type);
    Value *off = b.createValue(OpKind::Sub, loc, {mean, c}, c->type);
    Value *sq = b.createValue(OpKind::Mul, loc, {b.createValue(OpKind::Mul, loc, {off, off}, c->type), count}, c->type);
    Value *sum = b.createValue(OpKind::Add, loc, {m2, sq}, c->type);
    return b.createValue(OpKind::Add, loc, {init, sum}, c->type);
  }

  Kernel &kernel_;
  ReductionChain &chain_;
  /// The first of the two extra carried values (count, mean) of each centred square.
  std::unordered_map<const Accumulator *, unsigned> extraSlot_;
  /// The initial values combined in after the loop, of accumulators that are rescaled.
  std::unordered_map<const Accumulator *, Value *> laterInit_;
  Value *laterInitOf(const Accumulator &acc) const {
    auto it = laterInit_.find(&acc);
    return it == laterInit_.end() ? nullptr : it->second;
  }
  ValueMap running_;  ///< the chain's results -> their running values in the fused body
  ValueMap previous_; ///< the chain's results -> their values at the start of the iteration
};

} // namespace

bool fuseReductionChains(Kernel &kernel, std::vector<ReductionChain> &chains) {
  bool changed = false;
  for (ReductionChain &chain : chains) {
    changed |= keepOnChip(chain);
    if (chain.fusedCount() >= 2) {
      ChainFuser(kernel, chain).run();
      changed = true;
    }
  }
  return changed;
}

bool fuseReductions(Module &module, const ReductionSplitOptions &split, const FusionPolicy &policy,
                    int64_t maxOnChipBlocks, DiagnosticEngine *remarks, DiagnosticEngine *sparsityRemarks) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    std::vector<ReductionChain> chains = analyzeReductionChains(*kernel, policy);
    planSegments(*kernel, chains, split);
    for (ReductionChain &chain : chains)
      planOnChip(*kernel, chain, maxOnChipBlocks);
    if (remarks)
      reportFusion(chains, *remarks);
    if (sparsityRemarks)
      reportSparsity(*kernel, chains, *sparsityRemarks);
    changed |= fuseReductionChains(*kernel, chains);
  }
  return changed;
}

} // namespace kiln::ir
