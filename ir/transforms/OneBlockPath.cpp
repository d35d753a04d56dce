//===- OneBlockPath.cpp - Rows that fit one block are read once ------------===//
//
// A chain whose last loop writes memory with the chain's results (softmax's output
// loop, layernorm's, rmsnorm's) reads its input once more in that loop, however the
// reductions before it are fused. When the range fits in one block — the loops run at
// most once — nothing needs a second pass: the block the reductions loaded is still in
// registers. So the chain gets two versions, chosen at run time:
//
//   if (0 <= ub - lb <= step) {          // at most one iteration
//     if (lb < ub) with iv = lb: the bodies of every loop of the chain in order, each
//       reading the results of the loops before it from this iteration (they are
//       final), the ops between them, then the trailing loop's body; no loop at all
//   } else {
//     the loops as before (reduction-chain fusion then fuses them)
//   }
//
// The one-iteration version is the program as written, reordered only where that cannot
// be seen: every element is computed exactly as before (no rescaling), and the second
// load of the same block merges with the first (CommonSubexpressions.cpp). The user's
// BLOCK is the on-chip budget: a row that fits it is read once and written once.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ReductionChains.h"

#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

/// Marks the `if` of a versioned chain (kept in the .tir text), so that the pipeline run
/// again on its output does not version the general branch a second time.
constexpr const char *kOneBlockPathAttr = "one_block_path";

class OneBlockVersioner {
public:
  explicit OneBlockVersioner(ReductionChain &chain) : chain_(chain) {
    first_ = chain.loops.front().loop;
    trailing_ = chain.loops.back().loop;
    parent_ = first_->parentBlock();
    for (const ChainLoop &l : chain.loops)
      loops_.insert(l.loop);
  }

  bool applicable() const {
    // The general branch of a versioned chain is not versioned again.
    if (Op *owner = parent_->parentOp();
        owner && owner->kind() == OpKind::If && owner->hasAttr(kOneBlockPathAttr) && owner->region(1) == parent_)
      return false;
    return chain_.loops.size() >= 2 && chain_.loops.back().trailing && trailing_->numResults() == 0 &&
           integerConstant(first_->operand(2)).value_or(0) > 0;
  }

  void run() {
    hoistIndependent();
    std::vector<Op *> range;
    for (auto it = parent_->find(first_);; ++it) {
      range.push_back(it->get());
      if (it->get() == trailing_)
        break;
    }
    std::vector<Value *> escaping = escapingValues(range);

    Builder b;
    b.setInsertionPoint(first_);
    Location loc = first_->loc();
    Value *lb = first_->operand(0), *ub = first_->operand(1), *step = first_->operand(2);
    Type cond = Type::scalar(DType::Bool);
    Value *span = b.createValue(OpKind::Sub, loc, {ub, lb}, ub->type);
    Value *nonNegative = b.createValue(OpKind::Cmp, loc, {span, b.intConstant(loc, span->type, 0)}, cond,
                                       {{"pred", std::string("ge")}});
    Value *small = b.createValue(OpKind::Cmp, loc, {span, step}, cond, {{"pred", std::string("le")}});
    Value *fits = b.createValue(OpKind::And, loc, {nonNegative, small}, cond);
    std::vector<Type> types;
    for (Value *v : escaping)
      types.push_back(v->type);
    Op *branch = b.create(OpKind::If, loc, {fits}, types, {{kOneBlockPathAttr, true}}, 2);

    buildOneIteration(*branch->region(0), range, escaping);

    Block *general = branch->region(1);
    for (Op *op : range)
      general->append(parent_->take(parent_->find(op)));
    Builder(general).create(OpKind::Yield, loc, escaping, {});

    // Later ops read the escaping values from the `if`.
    ValueMap after;
    for (unsigned i = 0; i < escaping.size(); ++i)
      after[escaping[i]] = branch->result(i);
    for (auto it = std::next(parent_->find(branch)); it != parent_->ops().end(); ++it) {
      for (Value *&o : (*it)->operands())
        if (auto r = after.find(o); r != after.end())
          o = r->second;
      for (const auto &region : (*it)->regions())
        replaceUses(*region, after);
    }
  }

private:
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

  /// Values defined by `range` (at its top level) that ops after it read.
  std::vector<Value *> escapingValues(const std::vector<Op *> &range) {
    std::unordered_set<const Value *> defined;
    for (Op *op : range)
      for (const auto &r : op->results())
        defined.insert(r.get());
    std::vector<Value *> out;
    std::unordered_set<const Value *> seen;
    auto consider = [&](Value *v) {
      if (defined.count(v) && seen.insert(v).second)
        out.push_back(v);
    };
    for (auto it = std::next(parent_->find(trailing_)); it != parent_->ops().end(); ++it) {
      for (Value *o : (*it)->operands())
        consider(o);
      for (const auto &region : (*it)->regions())
        walk(*region, [&](Op &inner) {
          for (Value *o : inner.operands())
            consider(o);
        });
    }
    return out;
  }

  /// The then-branch: one iteration running every body in order (straight-line code
  /// under `lb < ub`), then the escaping values computed again from its results.
  void buildOneIteration(Block &then, const std::vector<Op *> &range, const std::vector<Value *> &escaping) {
    Builder b(&then);
    std::vector<Value *> inits;
    std::vector<Type> types;
    for (Op *op : range)
      if (op->kind() == OpKind::For && op != trailing_)
        for (unsigned i = 3; i < op->numOperands(); ++i) {
          inits.push_back(op->operand(i));
          types.push_back(op->operand(i)->type);
        }
    // At most one iteration: no loop, the bodies run once when the range is not empty
    // (iv = lb), and the results are the initial values when it is.
    Value *nonEmpty = b.createValue(OpKind::Cmp, first_->loc(), {first_->operand(0), first_->operand(1)},
                                    Type::scalar(DType::Bool), {{"pred", std::string("lt")}});
    Op *once = b.create(OpKind::If, first_->loc(), {nonEmpty}, types, {}, 2);
    Builder(once->region(1)).create(OpKind::Yield, first_->loc(), inits, {});
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
      for (unsigned i = 1; i < src.numArguments(); ++i)
        inside[src.argument(i)] = op->operand(2 + i);
      for (const auto &inner : src.ops())
        if (!isTerminator(inner->kind()))
          cloneOp(ib, *inner, inside);
      for (unsigned i = 0; i < op->numResults(); ++i) {
        Value *next = src.terminator()->operand(i);
        Value *now = inside.count(next) ? inside[next] : next;
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
      results.push_back(outside.count(v) ? outside[v] : v);
    b.create(OpKind::Yield, first_->loc(), results, {});
  }

  ReductionChain &chain_;
  Op *first_ = nullptr, *trailing_ = nullptr;
  Block *parent_ = nullptr;
  std::unordered_set<const Op *> loops_;
  std::unordered_map<const Value *, bool> memo_;
};

} // namespace

bool hasOneBlockPath(ReductionChain &chain) { return OneBlockVersioner(chain).applicable(); }

bool versionForOneBlock(ReductionChain &chain) {
  OneBlockVersioner v(chain);
  if (!v.applicable())
    return false;
  v.run();
  return true;
}

} // namespace kiln::ir
