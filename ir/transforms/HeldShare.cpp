//===- HeldShare.cpp - A cluster segment holds its share of the range -----===//
//
// After a chain is split over the programs of a cluster (SplitReduction.cpp), each
// segment runs, over its share [lb, ub) of the range,
//
//   the fused loop; cluster_exchange and the merge; the epilogue; the trailing loop
//
// and the trailing loop reads the share a second time. When every share is at most one
// block (the whole range spans at most S blocks), the loops are not needed:
//
//   if (0 <= whole ub - whole lb <= S·step) {  // the same in every segment
//     each loop's body once, at iv = lb: its loads and stores masked off, and its
//     carried values kept, where the share is empty (lb >= ub); the ops between as
//     they are, the exchange included
//   } else {
//     the loops as before
//   }
//
// The test reads the whole range, not the share, so every program of a cluster takes
// the same branch and meets the others at the same exchange; a segment whose share is
// empty still offers its (identity) state. With the loops gone, the trailing body's
// loads are those of the fused body (the same addresses and masks, one block), and
// CommonSubexpressions.cpp merges them: each element is read once, as in the one-block
// version of an unsplit chain (OnChipPath.cpp).
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/SplitReduction.h"

#include <unordered_set>

namespace kiln::ir {

namespace {

bool isShareLoop(const Op &op, Value *lb, Value *ub) {
  return op.kind() == OpKind::For && op.operand(0) == lb && op.operand(1) == ub;
}

/// Whether a loop's body can run as one guarded copy: its only memory accesses are
/// loads and stores at its top level, which a mask turns off, and nothing else writes.
bool guardable(const Op &loop) {
  for (const auto &op : loop.region(0)->ops()) {
    if (writesOrFails(op->kind()) && op->kind() != OpKind::Store)
      return false;
    bool nestedAccess = false;
    for (const auto &region : op->regions())
      walk(*region, [&](Op &inner) {
        nestedAccess |= inner.kind() == OpKind::Load || writesOrFails(inner.kind());
      });
    if (nestedAccess)
      return false;
  }
  return true;
}

/// And-s `valid` into the mask of a load or store.
void guardAccess(Builder &b, Op &access, Value *valid) {
  const unsigned maskIndex = access.kind() == OpKind::Load ? 1 : 2;
  Type maskType = access.operand(0)->type.withDType(DType::Bool);
  Value *all = maskType.isScalar() ? valid : b.createValue(OpKind::Splat, access.loc(), {valid}, maskType);
  std::vector<Value *> &operands = access.operands();
  if (operands.size() > maskIndex)
    operands[maskIndex] = b.createValue(OpKind::And, access.loc(), {operands[maskIndex], all}, maskType);
  else
    operands.push_back(all);
}

Value *choose(Builder &b, Location loc, Value *valid, Value *now, Value *before) {
  Value *cond =
      now->type.isScalar() ? valid : b.createValue(OpKind::Splat, loc, {valid}, now->type.withDType(DType::Bool));
  return b.createValue(OpKind::Select, loc, {cond, now, before}, now->type);
}

} // namespace

bool holdShareOnChip(Block &parent, Op *first, Op *last, Value *lb, Value *ub, Value *fits) {
  std::vector<Op *> range;
  for (auto it = parent.find(first);; ++it) {
    range.push_back(it->get());
    if (it->get() == last)
      break;
  }
  for (Op *op : range)
    if (isShareLoop(*op, lb, ub) && !guardable(*op))
      return false;

  // Values the range defines that later ops read.
  std::unordered_set<const Value *> defined;
  for (Op *op : range)
    for (const auto &r : op->results())
      defined.insert(r.get());
  std::vector<Value *> escaping;
  std::unordered_set<const Value *> seen;
  auto consider = [&](Value *v) {
    if (defined.count(v) && seen.insert(v).second)
      escaping.push_back(v);
  };
  for (auto it = std::next(parent.find(last)); it != parent.ops().end(); ++it) {
    for (Value *o : (*it)->operands())
      consider(o);
    for (const auto &region : (*it)->regions())
      walk(*region, [&](Op &inner) {
        for (Value *o : inner.operands())
          consider(o);
      });
  }

  Location loc = first->loc();
  Builder b;
  b.setInsertionPoint(first);
  std::vector<Type> types;
  for (Value *v : escaping)
    types.push_back(v->type);
  Op *branch = b.create(OpKind::If, loc, {fits}, types, {}, 2);

  // The then-branch: the range with each loop over the share run once, guarded.
  Builder tb(branch->region(0));
  Value *valid = tb.createValue(OpKind::Cmp, loc, {lb, ub}, Type::scalar(DType::Bool), {{"pred", std::string("lt")}});
  ValueMap map;
  for (Op *op : range) {
    if (!isShareLoop(*op, lb, ub)) {
      cloneOp(tb, *op, map);
      continue;
    }
    Block &body = *op->region(0);
    map[body.argument(0)] = lb;
    for (unsigned k = 1; k < body.numArguments(); ++k)
      map[body.argument(k)] = lookup(map, op->operand(2 + k));
    for (const auto &inner : body.ops()) {
      if (isTerminator(inner->kind()))
        continue;
      Op *clone = cloneOp(tb, *inner, map);
      if (clone->kind() == OpKind::Load || clone->kind() == OpKind::Store) {
        Builder at;
        at.setInsertionPoint(clone);
        guardAccess(at, *clone, valid);
      }
    }
    for (unsigned k = 0; k < op->numResults(); ++k)
      map[op->result(k)] =
          choose(tb, loc, valid, lookup(map, body.terminator()->operand(k)), lookup(map, op->operand(3 + k)));
  }
  std::vector<Value *> results;
  for (Value *v : escaping)
    results.push_back(lookup(map, v));
  tb.create(OpKind::Yield, loc, results, {});

  // The else-branch: the range as it was.
  Block *general = branch->region(1);
  for (Op *op : range)
    general->append(parent.take(parent.find(op)));
  Builder(general).create(OpKind::Yield, loc, escaping, {});

  ValueMap after;
  for (unsigned i = 0; i < escaping.size(); ++i) {
    after[escaping[i]] = branch->result(i);
    branch->result(i)->nameHint = escaping[i]->nameHint;
  }
  for (auto it = std::next(parent.find(branch)); it != parent.ops().end(); ++it) {
    for (Value *&o : (*it)->operands())
      if (auto r = after.find(o); r != after.end())
        o = r->second;
    for (const auto &region : (*it)->regions())
      replaceUses(*region, after);
  }
  return true;
}

} // namespace kiln::ir
