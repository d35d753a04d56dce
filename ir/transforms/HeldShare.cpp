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
#include "ir/transforms/RangeVersions.h"
#include "ir/transforms/SplitReduction.h"

namespace kiln::ir {

namespace {

bool isShareLoop(const Op &op, Value *lb, Value *ub) {
  return op.kind() == OpKind::For && op.operand(0) == lb && op.operand(1) == ub;
}

} // namespace

bool holdShareOnChip(Block &parent, Op *first, Op *last, Value *lb, Value *ub, Value *fits) {
  std::vector<Op *> range = opsBetween(parent, first, last);
  for (Op *op : range)
    if (isShareLoop(*op, lb, ub) && !guardableBody(*op->region(0)))
      return false;
  std::vector<Value *> escaping = escapingValues(parent, range);
  Location loc = first->loc();
  Op *branch = versionRange(parent, range, fits, escaping);
  for (unsigned i = 0; i < escaping.size(); ++i)
    branch->result(i)->nameHint = escaping[i]->nameHint;

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
      if (clone->kind() == OpKind::Load || clone->kind() == OpKind::Store)
        guardAccess(*clone, valid);
    }
    for (unsigned k = 0; k < op->numResults(); ++k)
      map[op->result(k)] =
          selectIfValid(tb, loc, valid, lookup(map, body.terminator()->operand(k)), lookup(map, op->operand(3 + k)));
  }
  std::vector<Value *> results;
  for (Value *v : escaping)
    results.push_back(lookup(map, v));
  tb.create(OpKind::Yield, loc, results, {});
  return true;
}

} // namespace kiln::ir
