//===- OnChipPath.cpp - Rows that fit on chip are read once ---------------===//
//
// A chain whose last loop writes memory with the chain's results (softmax's output
// loop, layernorm's, rmsnorm's) reads its input once more in that loop, however the
// reductions before it are fused. When the range is short enough for the program to
// hold what it loads, nothing needs a second pass. So the chain gets versions, chosen
// at run time:
//
//   if (0 <= ub - lb <= step) {            // at most one block
//     if (lb < ub) with iv = lb: the bodies of every loop of the chain in order, each
//       reading the results of the loops before it from this iteration (they are
//       final), the ops between them, then the trailing loop's body; no loop at all
//   } else if (0 <= ub - lb <= N·step) {    // two to N blocks, held in registers
//     for each loop of the chain in order, its body once per block (iv = lb + i·step),
//       the accumulators carried from copy to copy; an accumulator d = d ⊕ reduce(F)
//       reduces F_0 ⊕ ... ⊕ F_{N-1} once. Blocks 0 and 1 always exist; a block i >= 2
//       may not (i·step >= ub - lb), so its copies run guarded: its loads and stores
//       masked off, its accumulator updates selected away
//   } else {
//     the loops as before (reduction-chain fusion then fuses them)
//   }
//
// Both short versions are the program as written, reordered only where that cannot be
// seen: every element is computed exactly as before (no rescaling; the blocks' terms
// are summed elementwise before the reduction, a reassociation), and the later
// loads of a block merge with its first (CommonSubexpressions.cpp). Only where the
// trailing body stores through the parameter it reads (an in-place kernel) is each
// later block loaded again after the earlier blocks' stores. The user's BLOCK sets the one-block version; the
// held-blocks version is added when at least two blocks of the loads the trailing body
// rereads fit kHeldElementsPerThread elements a thread, and N is as many blocks as fit
// (at most kMaxHeldBlocks).
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ChainAlgebra.h"
#include "ir/transforms/Pipeline.h"
#include "ir/transforms/RangeVersions.h"
#include "ir/transforms/ReductionChains.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

/// Mark the `if`s of a versioned chain (kept in the .tir text), so that the pipeline run
/// again on its output does not version the general branch a second time.
constexpr const char *kOneBlockPathAttr = "one_block_path";
constexpr const char *kOnChipBlocksAttr = "on_chip_blocks";

/// How many elements of the held blocks' loads one thread may hold for the trailing
/// body. ptxas gives a kernel the registers of its costliest path, so holding more
/// costs the one-block version occupancy: at 32, a bf16 softmax of BLOCK 1024 on 2 warps
/// went from 40 to 64 registers a thread and lost 13% on an H200.
constexpr int64_t kHeldElementsPerThread = 8;

bool isVersionedGeneralBranch(const Block *block) {
  Op *owner = block->parentOp();
  return owner && owner->kind() == OpKind::If && owner->region(1) == block &&
         (owner->hasAttr(kOneBlockPathAttr) || owner->hasAttr(kOnChipBlocksAttr));
}

/// Elements the loads of `body` read per iteration.
int64_t loadedElements(Block &body) {
  int64_t n = 0;
  walk(body, [&](Op &op) {
    if (op.kind() == OpKind::Load)
      n += op.result()->type.numElements();
  });
  return n;
}

class OnChipVersioner {
public:
  explicit OnChipVersioner(ReductionChain &chain) : chain_(chain) {
    first_ = chain.loops.front().loop;
    trailing_ = chain.loops.back().loop;
    parent_ = first_->parentBlock();
    for (const ChainLoop &l : chain.loops)
      loops_.insert(l.loop);
  }

  /// The most blocks the chain's range may span for a version without loops: 0 when it
  /// gets none, 1 for the one-block version alone, N >= 2 with the held-blocks version.
  int64_t maxBlocks(const Kernel &kernel, bool evenIfSplit = false) const {
    if (isVersionedGeneralBranch(parent_) || (chain_.split.segments != 1 && !evenIfSplit) || chain_.loops.size() < 2 ||
        !chain_.loops.back().trailing || trailing_->numResults() != 0 ||
        integerConstant(first_->operand(2)).value_or(0) <= 0)
      return 0;
    int64_t held = loadedElements(*trailing_->region(0));
    if (held == 0) // the trailing body reads nothing again: one pass already
      return 1;
    int64_t fit = std::min(kernel.numWarps * 32 * kHeldElementsPerThread / held, kMaxHeldBlocks);
    if (fit < 2)
      return 1;
    return fit > 2 && !guardable() ? 2 : fit;
  }

  void run(int64_t blocks) {
    hoistIndependent();
    version(1);
    if (blocks >= 2) {
      parent_ = first_->parentBlock(); // the general branch of the one-block version
      version(blocks);
    }
  }

private:
  /// Wraps the chain in `if (0 <= ub - lb <= blocks·step) { no loops } else { the loops }`.
  /// The held-blocks version goes in the else branch of the one-block one, so there the
  /// range spans more than one block.
  void version(int64_t blocks) {
    std::vector<Op *> range = opsBetween(*parent_, first_, trailing_);
    std::vector<Value *> escaping = escapingValues(*parent_, range);

    Builder b;
    b.setInsertionPoint(first_);
    Location loc = first_->loc();
    Value *lb = first_->operand(0), *ub = first_->operand(1), *step = first_->operand(2);
    // A reversed (empty) range must not take the versions without loops.
    Value *limit = blocks == 1 ? step : b.intConstant(loc, ub->type, blocks * *integerConstant(step));
    Value *fits = spansAtMost(b, loc, lb, ub, limit);
    AttrMap mark = blocks == 1 ? AttrMap{{kOneBlockPathAttr, true}} : AttrMap{{kOnChipBlocksAttr, blocks}};
    Op *branch = versionRange(*parent_, range, fits, escaping, mark);
    if (blocks == 1)
      buildOneIteration(*branch->region(0), range, escaping);
    else
      buildBlocks(*branch->region(0), range, escaping, blocks);
  }

  bool dependsOnChain(Value *v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    bool d = false;
    if (Op *def = v->definingOp()) {
      d = loops_.count(def) != 0;
      for (Value *o : def->operands())
        d = d || dependsOnChain(o);
    }
    return memo_[v] = d;
  }

  /// Moves the pure ops between the first and the trailing loop that do not read the
  /// chain's results above the first loop: both versions use them.
  void hoistIndependent() {
    auto it = std::next(parent_->find(first_));
    while (it->get() != trailing_) {
      Op &op = **it;
      bool movable = !loops_.count(&op) && op.regions().empty() && !writesOrFails(op.kind());
      for (const auto &r : op.results())
        movable = movable && !dependsOnChain(r.get());
      auto next = std::next(it);
      if (movable)
        parent_->insert(parent_->find(first_), parent_->take(it));
      it = next;
    }
  }

  /// The then-branch: one iteration running every body in order (straight-line code
  /// under `lb < ub`), then the escaping values computed again from its results.
  void buildOneIteration(Block &then, const std::vector<Op *> &range, const std::vector<Value *> &escaping) {
    Builder b(&then);
    std::vector<Type> types;
    for (Op *op : range)
      if (op->kind() == OpKind::For && op != trailing_)
        for (unsigned i = 3; i < op->numOperands(); ++i)
          types.push_back(op->operand(i)->type);
    // At most one iteration: no loop, the bodies run once when the range is not empty
    // (iv = lb), and the results are the initial values when it is.
    Value *nonEmpty = b.createValue(OpKind::Cmp, first_->loc(), {first_->operand(0), first_->operand(1)},
                                    Type::scalar(DType::Bool), {{"pred", std::string("lt")}});
    Op *once = b.create(OpKind::If, first_->loc(), {nonEmpty}, types, {}, 2);
    buildEmptyRange(*once->region(1), range);
    Value *iv = first_->operand(0);

    ValueMap inside;   // old values -> their values in the iteration
    ValueMap outside;  // old values -> their values after it
    std::vector<Value *> yields;
    Builder ib(once->region(0));
    unsigned k = 0;
    for (Op *op : range) {
      if (op->kind() != OpKind::For) {
        cloneOp(ib, *op, inside);
        continue;
      }
      Block &src = *op->region(0);
      inside[src.argument(0)] = iv;
      // A loop may start from an earlier loop's result (its value in this iteration).
      for (unsigned i = 1; i < src.numArguments(); ++i)
        inside[src.argument(i)] = lookup(inside, op->operand(2 + i));
      for (const auto &inner : src.ops())
        if (!isTerminator(inner->kind()))
          cloneOp(ib, *inner, inside);
      for (unsigned i = 0; i < op->numResults(); ++i) {
        Value *next = src.terminator()->operand(i);
        Value *now = lookup(inside, next);
        inside[op->result(i)] = now;
        yields.push_back(now);
        once->result(k)->nameHint = op->result(i)->nameHint;
        outside[op->result(i)] = once->result(k++);
      }
    }
    ib.create(OpKind::Yield, first_->loc(), yields, {});

    // The ops between the loops, again after the loop, for the values that escape.
    for (Op *op : range)
      if (op->kind() != OpKind::For)
        cloneOp(b, *op, outside);
    std::vector<Value *> results;
    for (Value *v : escaping)
      results.push_back(lookup(outside, v));
    b.create(OpKind::Yield, first_->loc(), results, {});
  }

  /// The else-branch of the one iteration, for an empty range: every loop leaves its
  /// initial value, which may be an earlier loop's result or computed from one between
  /// the loops, so those ops run here again with each loop's result as its initial value.
  void buildEmptyRange(Block &otherwise, const std::vector<Op *> &range) {
    Builder b(&otherwise);
    ValueMap empty; // old values -> their values when no loop iterates
    std::vector<Value *> inits;
    for (Op *op : range) {
      if (op->kind() != OpKind::For) {
        cloneOp(b, *op, empty);
        continue;
      }
      for (unsigned i = 0; i < op->numResults(); ++i) {
        Value *init = lookup(empty, op->operand(3 + i));
        empty[op->result(i)] = init;
        inits.push_back(init);
      }
    }
    b.create(OpKind::Yield, first_->loc(), inits, {});
  }

  /// Whether the copies of a block that may not exist can run guarded: every body of
  /// the chain can (RangeVersions.h).
  bool guardable() const {
    for (const ChainLoop &l : chain_.loops)
      if (!guardableBody(*l.loop->region(0)))
        return false;
    return true;
  }

  /// Whether `f` is one of a copy's `guardedLoads` whose masked-off lanes read the
  /// identity of ⊕ already (softmax's `other = -inf` under max), so that a missing block
  /// needs no select.
  static bool readsIdentityWhenOff(const Value *f, const std::unordered_set<const Op *> &guardedLoads,
                                   Combiner combiner) {
    const Op *def = f->definingOp();
    if (!def || !guardedLoads.count(def))
      return false;
    return def->numOperands() == 3 ? isIdentity(def->operand(2), combiner) : identityOf(combiner) == 0.0;
  }

  /// The then-branch of the held-blocks version: each loop's body once per block, in
  /// loop order, then the escaping values from the copies' results. Blocks 0 and 1
  /// exist (the range spans more than one block); block i >= 2 exists when
  /// i·step < ub - lb, and its copies run guarded by that.
  void buildBlocks(Block &then, const std::vector<Op *> &range, const std::vector<Value *> &escaping,
                   int64_t blocks) {
    Builder b(&then);
    Location loc = first_->loc();
    Value *lb = first_->operand(0), *ub = first_->operand(1);
    const int64_t step = *integerConstant(first_->operand(2));
    // Block i exists when i·step < ub - lb: the span is in (step, blocks·step] here, so
    // unlike lb + i·step < ub this cannot wrap.
    Value *span = blocks > 2 ? b.createValue(OpKind::Sub, loc, {ub, lb}, ub->type) : nullptr;
    std::vector<Value *> ivs, valid;
    for (int64_t i = 0; i < blocks; ++i) {
      Value *offset = i == 0 ? nullptr : b.intConstant(loc, lb->type, i * step);
      ivs.push_back(i == 0 ? lb : b.createValue(OpKind::Add, loc, {lb, offset}, lb->type));
      valid.push_back(i < 2 ? nullptr
                            : b.createValue(OpKind::Cmp, loc, {offset, span}, Type::scalar(DType::Bool),
                                            {{"pred", std::string("lt")}}));
    }

    ValueMap after; // old values -> their values once every copy ran
    for (Op *op : range) {
      if (op->kind() != OpKind::For) {
        cloneOp(b, *op, after);
        continue;
      }
      Block &body = *op->region(0);
      std::vector<Value *> carried;
      for (unsigned k = 3; k < op->numOperands(); ++k)
        carried.push_back(lookup(after, op->operand(k)));
      std::vector<const Accumulator *> merged = mergedReductions(*op, carried.size(), blocks);
      std::vector<Value *> combined(carried.size(), nullptr); // merged: the copies' F so far

      for (int64_t i = 0; i < blocks; ++i) {
        std::unordered_set<const Op *> guardedLoads; // this copy's
        ValueMap copy = after;
        copy[body.argument(0)] = ivs[i];
        for (unsigned k = 0; k < carried.size(); ++k)
          copy[body.argument(1 + k)] = carried[k];
        for (const auto &inner : body.ops()) {
          if (isTerminator(inner->kind()))
            continue;
          Op *clone = cloneOp(b, *inner, copy);
          if (!valid[i] || (clone->kind() != OpKind::Load && clone->kind() != OpKind::Store))
            continue;
          guardAccess(*clone, valid[i]);
          if (clone->kind() == OpKind::Load)
            guardedLoads.insert(clone);
        }
        for (unsigned k = 0; k < carried.size(); ++k) {
          if (const Accumulator *acc = merged[k]) {
            Value *f = lookup(copy, acc->term);
            if (valid[i] && !readsIdentityWhenOff(f, guardedLoads, acc->combiner)) // a missing block adds the identity of ⊕
              f = selectIfValid(b, loc, valid[i], f, b.floatConstant(loc, f->type, identityOf(acc->combiner)));
            combined[k] = combined[k] ? b.createValue(acc->combineOp->kind(), loc, {combined[k], f}, f->type) : f;
            continue;
          }
          Value *next = lookup(copy, body.terminator()->operand(k));
          carried[k] = valid[i] ? selectIfValid(b, loc, valid[i], next, carried[k]) : next;
        }
      }
      // d ⊕ reduce(F_0 ⊕ ... ⊕ F_{N-1}): one reduction across the program for every copy.
      for (unsigned k = 0; k < carried.size(); ++k)
        if (const Accumulator *acc = merged[k]) {
          Op *reduce = reductionOf(*acc);
          ValueMap m{{reduce->operand(0), combined[k]}, {body.argument(1 + k), carried[k]}};
          cloneOp(b, *reduce, m);
          carried[k] = cloneOp(b, *acc->combineOp, m)->result();
        }
      for (unsigned k = 0; k < op->numResults(); ++k)
        after[op->result(k)] = carried[k];
    }
    std::vector<Value *> results;
    for (Value *v : escaping)
      results.push_back(lookup(after, v));
    b.create(OpKind::Yield, loc, results, {});
  }

  /// The `reduce` of an accumulator updated as d ⊕ reduce(F); null for other updates.
  static Op *reductionOf(const Accumulator &acc) {
    if (acc.combiner != Combiner::Sum && acc.combiner != Combiner::Max && acc.combiner != Combiner::Min)
      return nullptr;
    for (Value *o : acc.combineOp->operands())
      if (Op *def = o->definingOp();
          def && def->kind() == OpKind::Reduce && def->numRegions() == 0 && def->operand(0) == acc.term)
        return def;
    return nullptr;
  }

  /// Per carried value of `loop`, its accumulator when the copies can combine their F
  /// elementwise and reduce once: d ⊕ reduce(F) is the yielded value and d is read
  /// nowhere else.
  std::vector<const Accumulator *> mergedReductions(Op &loop, size_t slots, int64_t blocks) const {
    std::vector<const Accumulator *> out(slots, nullptr);
    const ChainLoop *info = nullptr;
    for (const ChainLoop &l : chain_.loops)
      if (l.loop == &loop)
        info = &l;
    if (!info)
      return out;
    Block &body = *loop.region(0);
    for (const Accumulator &acc : info->accumulators) {
      Op *reduce = reductionOf(acc);
      // A guarded copy stands in the identity of ⊕ (a float) for a missing block's F.
      if (!reduce || (blocks > 2 && !isFloat(acc.term->type.dtype)) || acc.combineOp->parentBlock() != &body || reduce->parentBlock() != &body ||
          body.terminator()->operand(acc.slot) != acc.combineOp->result())
        continue;
      Value *d = body.argument(1 + acc.slot);
      size_t uses = 0;
      walk(body, [&](Op &op) { uses += std::count(op.operands().begin(), op.operands().end(), d); });
      if (uses == 1)
        out[acc.slot] = &acc;
    }
    return out;
  }

  ReductionChain &chain_;
  Op *first_ = nullptr, *trailing_ = nullptr;
  Block *parent_ = nullptr;
  std::unordered_set<const Op *> loops_;
  std::unordered_map<const Value *, bool> memo_;
};

} // namespace

void planOnChip(const Kernel &kernel, ReductionChain &chain, int64_t maxBlocks) {
  chain.onChipBlocks = std::min(maxBlocks, OnChipVersioner(chain).maxBlocks(kernel));
}

int64_t onChipCapacity(const Kernel &kernel, ReductionChain &chain) {
  return OnChipVersioner(chain).maxBlocks(kernel, /*evenIfSplit=*/true);
}

int64_t blockElementsPerThread(const Kernel &kernel, const ReductionChain &chain) {
  const int64_t loaded = loadedElements(*chain.loops.back().loop->region(0));
  return loaded / (kernel.numWarps * 32);
}

int64_t onChipBlocksOf(std::string_view target) {
  // The SPIR-V path is checked by running it on PoCL (3.1), which loses stores of the
  // held-blocks version (docs/testing.md, Known problems; the interpreter and NVPTX agree
  // on the same kernels). Until a SPIR-V device can check the version, SPIR-V kernels
  // do without it.
  return target == "spirv64" ? 1 : kMaxHeldBlocks;
}

bool keepOnChip(ReductionChain &chain) {
  if (chain.onChipBlocks == 0)
    return false;
  OnChipVersioner(chain).run(chain.onChipBlocks);
  return true;
}

} // namespace kiln::ir
