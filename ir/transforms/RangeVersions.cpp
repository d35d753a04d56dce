//===- RangeVersions.cpp - A run of ops in two versions, chosen at run time ---===//
#include "ir/transforms/RangeVersions.h"

#include "ir/transforms/ReductionChains.h"

#include <unordered_set>

namespace kiln::ir {

std::vector<Op *> opsBetween(Block &parent, Op *first, Op *last) {
  std::vector<Op *> range;
  for (auto it = parent.find(first);; ++it) {
    range.push_back(it->get());
    if (it->get() == last)
      break;
  }
  return range;
}

std::vector<Value *> escapingValues(Block &parent, const std::vector<Op *> &range) {
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
  for (auto it = std::next(parent.find(range.back())); it != parent.ops().end(); ++it) {
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

Op *versionRange(Block &parent, const std::vector<Op *> &range, Value *cond, const std::vector<Value *> &escaping,
                 AttrMap attrs) {
  Location loc = range.front()->loc();
  std::vector<Type> types;
  for (Value *v : escaping)
    types.push_back(v->type);
  Builder b;
  b.setInsertionPoint(range.front());
  Op *branch = b.create(OpKind::If, loc, {cond}, types, std::move(attrs), 2);

  Block *general = branch->region(1);
  for (Op *op : range)
    general->append(parent.take(parent.find(op)));
  Builder(general).create(OpKind::Yield, loc, escaping, {});

  // Later ops read the escaping values from the `if`.
  ValueMap after;
  for (unsigned i = 0; i < escaping.size(); ++i)
    after[escaping[i]] = branch->result(i);
  for (auto it = std::next(parent.find(branch)); it != parent.ops().end(); ++it) {
    for (Value *&o : (*it)->operands())
      if (auto r = after.find(o); r != after.end())
        o = r->second;
    for (const auto &region : (*it)->regions())
      replaceUses(*region, after);
  }
  return branch;
}

Value *spansAtMost(Builder &b, Location loc, Value *lb, Value *ub, Value *limit) {
  Type cond = Type::scalar(DType::Bool);
  Value *span = b.createValue(OpKind::Sub, loc, {ub, lb}, ub->type);
  // An empty range may have ub < lb.
  Value *nonNegative = b.createValue(OpKind::Cmp, loc, {span, b.intConstant(loc, span->type, 0)}, cond,
                                     {{"pred", std::string("ge")}});
  Value *small = b.createValue(OpKind::Cmp, loc, {span, limit}, cond, {{"pred", std::string("le")}});
  return b.createValue(OpKind::And, loc, {nonNegative, small}, cond);
}

bool guardableBody(const Block &body) {
  for (const auto &op : body.ops())
    if (!op->regions().empty() || (writesOrFails(op->kind()) && op->kind() != OpKind::Store))
      return false;
  return true;
}

void guardAccess(Op &access, Value *valid) {
  const unsigned maskIndex = access.kind() == OpKind::Load ? 1 : 2;
  Builder b;
  b.setInsertionPoint(&access);
  Type maskType = access.operand(0)->type.withDType(DType::Bool);
  Value *all = maskType.isScalar() ? valid : b.createValue(OpKind::Splat, access.loc(), {valid}, maskType);
  std::vector<Value *> &operands = access.operands();
  if (operands.size() > maskIndex)
    operands[maskIndex] = b.createValue(OpKind::And, access.loc(), {operands[maskIndex], all}, maskType);
  else
    operands.push_back(all);
}

Value *selectIfValid(Builder &b, Location loc, Value *valid, Value *now, Value *before) {
  Value *cond =
      now->type.isScalar() ? valid : b.createValue(OpKind::Splat, loc, {valid}, now->type.withDType(DType::Bool));
  return b.createValue(OpKind::Select, loc, {cond, now, before}, now->type);
}

} // namespace kiln::ir
