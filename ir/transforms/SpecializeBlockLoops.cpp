//===- SpecializeBlockLoops.cpp - Full and partial iterations of blocks() loops ---===//
//
// A `for kb in blocks(mask, rb)` loop (a `for` with attr block_mask) visits full and
// partial blocks alike, and its body reads the block's element flags through
// `block_elements(bitmaps, slot)`, where slot -1 marks a full block. On a full block
// every flag is true, so every `where(keep, s, -inf)`, every load or store masked by
// `keep`, is work for nothing. This pass gives each iteration two versions:
//
//   for e ... {                          for e ... {
//     slot = load(blocks + 2e + 1)         slot = load(blocks + 2e + 1)
//     keep = block_elements(bm, slot)      r = if (slot < 0) { body[keep := true]; yield }
//     body                        ==>          else { keep = block_elements(bm, slot) {partial}
//     yield                                           body; yield }
//   }                                      yield r
//                                        }
//
// and canonicalization then folds the constant flags away in the full version. Only
// what reads the flags is duplicated: the loads of the block and the products that do
// not see the mask stay in front of the branch. The branch is uniform over a program
// (one slot per iteration), so it costs one compare.
// It runs after reduction-chain fusion: fusion matches the loops as written, and the
// body it builds is the one worth duplicating.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include <unordered_set>

namespace kiln::ir {

namespace {

/// The block_elements ops under `block` (at any depth) reading `slot`.
void collectElements(Block &block, const Value *slot, std::vector<Op *> &out) {
  for (auto &op : block.ops()) {
    if (op->kind() == OpKind::BlockElements && op->operand(1) == slot)
      out.push_back(op.get());
    for (const auto &region : op->regions())
      collectElements(*region, slot, out);
  }
}

/// The slot of the first block_elements op under `block` that this pass has not yet
/// specialized, when it is defined at the top level of `body`.
Op *firstSlotDef(Block &block, Block &body) {
  for (auto &op : block.ops()) {
    if (op->kind() == OpKind::BlockElements && !op->hasAttr("partial")) {
      Op *def = op->operand(1)->definingOp();
      return def && def->parentBlock() == &body ? def : nullptr;
    }
    for (const auto &region : op->regions())
      if (Op *def = firstSlotDef(*region, body))
        return def;
  }
  return nullptr;
}

/// Whether `op`, or an op in its regions, reads one of `values`.
bool readsAny(const Op &op, const std::unordered_set<const Value *> &values) {
  for (const Value *v : op.operands())
    if (values.count(v))
      return true;
  for (const auto &region : op.regions())
    for (const auto &inner : region->ops())
      if (readsAny(*inner, values))
        return true;
  return false;
}

bool specialize(Op &loop) {
  Block &body = *loop.region(0);
  Op *slotDef = firstSlotDef(body, body);
  Op *yield = body.terminator();
  if (!slotDef || !yield)
    return false;
  Value *slot = slotDef->result();
  Location loc = loop.loc();

  // The ops after the slot's definition that read the flags, directly or through other
  // ops, become the two versions; the others (the loads of the block and the products
  // that do not see the mask) stay in front of the branch, computed once. An op is kept
  // in front only while no op that moves into the branch before it writes memory, so
  // no access changes order with a write.
  Block::iterator first = std::next(body.find(slotDef));
  std::vector<std::unique_ptr<Op>> tail;
  std::unordered_set<const Value *> flagged;
  bool movedWrite = false;
  while (first != body.ops().end() && first->get() != yield) {
    Op &op = **first;
    const bool reads = (op.kind() == OpKind::BlockElements && op.operand(1) == slot) || readsAny(op, flagged);
    const bool effects = !isPure(op.kind()) && op.kind() != OpKind::Load;
    if (!reads && !movedWrite && !effects && op.regions().empty()) {
      ++first;
      continue;
    }
    for (const auto &r : op.results())
      flagged.insert(r.get());
    movedWrite = movedWrite || !isPure(op.kind());
    tail.push_back(body.take(first++));
  }

  std::vector<Type> types;
  for (Value *v : yield->operands())
    types.push_back(v->type);
  Builder b;
  b.setInsertionPoint(yield);
  Value *zero = b.intConstant(loc, Type::scalar(DType::I32), 0);
  Value *full = b.createValue(OpKind::Cmp, loc, {slot, zero}, Type::scalar(DType::Bool), {{"pred", std::string("lt")}});
  Op *branch = b.create(OpKind::If, loc, {full}, types, {}, 2);

  // Full blocks: a copy in which every flag read through `slot` is a constant true.
  Block &thenBlock = *branch->region(0);
  Builder then(&thenBlock);
  ValueMap mapping;
  for (const auto &op : tail)
    cloneOp(then, *op, mapping);
  std::vector<Op *> copies;
  collectElements(thenBlock, slot, copies);
  ValueMap allKept;
  for (Op *read : copies) {
    Builder at;
    at.setInsertionPoint(read);
    allKept[read->result()] = at.boolConstant(read->loc(), read->result()->type, true);
  }
  replaceUses(thenBlock, allKept);
  for (Op *read : copies)
    read->parentBlock()->erase(read->parentBlock()->find(read));
  std::vector<Value *> thenYield;
  for (Value *v : yield->operands())
    thenYield.push_back(lookup(allKept, lookup(mapping, v)));
  then.create(OpKind::Yield, yield->loc(), thenYield, {});

  // Partial blocks: the ops as they were, their flags marked as read from a bitmap.
  Block &elseBlock = *branch->region(1);
  for (auto &op : tail)
    elseBlock.append(std::move(op));
  std::vector<Op *> reads;
  collectElements(elseBlock, slot, reads);
  for (Op *read : reads)
    read->setAttr("partial", true);
  Builder otherwise(&elseBlock);
  otherwise.create(OpKind::Yield, yield->loc(), yield->operands(), {});

  for (unsigned i = 0; i < yield->numOperands(); ++i)
    yield->operands()[i] = branch->result(i);
  return true;
}

} // namespace

bool specializeBlockLoops(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    std::vector<Op *> loops;
    walkPostOrder(*kernel->body, [&](Op &op) {
      if (op.kind() == OpKind::For && op.hasAttr("block_mask"))
        loops.push_back(&op);
    });
    for (Op *loop : loops)
      changed |= specialize(*loop);
  }
  return changed;
}

} // namespace kiln::ir
