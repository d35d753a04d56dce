//===- SpecializeBlockLoops.cpp - Full and partial iterations of blocks() loops ---===//
//
// A `for kb in blocks(mask, rb)` loop (a `for` with attr block_mask) visits full and
// partial blocks alike, and its body reads the block's element flags through
// `block_elements(bitmaps, slot)`, where slot -1 marks a full block. On a full block
// every flag is true, so every `where(keep, s, -inf)`, every load masked by `keep`, is
// work for nothing. This pass gives what reads the flags two versions:
//
//   s    = dot(q, kt) * scale                   s    = dot(q, kt) * scale
//   keep = block_elements(bm, slot)             r    = if (slot < 0) { yield s }
//   x    = where(keep, s, -inf)         ==>            else { keep = block_elements(bm, slot) {partial}
//   m    = max(x)                                             yield where(keep, s, -inf) }
//                                               m    = max(r)
//
// The versioned ops are the flags' reads and the elementwise ops and loads that depend
// on them through versioned ops only, up to the first other op that reads one of them;
// canonicalization then folds the constant flags away in the full version. Everything
// else — the loads of the block, the products, the reductions — is computed once, so
// the branch holds a few elementwise ops, uniform over a program (one slot per
// iteration). It runs after reduction-chain fusion: fusion matches the loops as written,
// and the body it builds is the one worth specializing.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include <algorithm>
#include <unordered_set>

namespace kiln::ir {

namespace {

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

/// Ops that may take part in the two versions: elementwise arithmetic and loads, which
/// the full version computes with the flags constant.
bool versionable(const Op &op) {
  switch (op.kind()) {
  case OpKind::Select:
  case OpKind::Cmp:
  case OpKind::Cast:
  case OpKind::Load:
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::BlockElements:
    return true;
  default:
    return op.regions().empty() && isElementwise(op.kind());
  }
}

bool specialize(Op &loop) {
  Block &body = *loop.region(0);
  Op *slotDef = firstSlotDef(body, body);
  Op *yield = body.terminator();
  if (!slotDef || !yield)
    return false;
  Value *slot = slotDef->result();
  Location loc = loop.loc();

  // The versioned ops: the reads of the flags at the loop's top level and the
  // elementwise ops and loads after them that depend on the flags through versioned
  // ops only, up to the first other op that reads one of them (`at`): the masking of
  // the scores in sparse attention, of the loads in a row sum. What follows — the
  // reductions, the products — reads their results and is computed once.
  std::vector<Op *> versioned;
  std::unordered_set<const Value *> inside, dependent;
  Op *at = yield;
  for (auto it = std::next(body.find(slotDef)); it != body.ops().end() && it->get() != yield; ++it) {
    Op &op = **it;
    const bool read = op.kind() == OpKind::BlockElements && op.operand(1) == slot;
    const bool readsInside = readsAny(op, inside), readsDependent = readsAny(op, dependent);
    if (read || ((readsInside || readsDependent) && !readsDependent && versionable(op))) {
      versioned.push_back(&op);
      for (const auto &r : op.results())
        inside.insert(r.get());
      continue;
    }
    if (readsInside) {
      at = &op;
      break;
    }
    if (readsDependent)
      for (const auto &r : op.results())
        dependent.insert(r.get());
  }
  bool reads = false;
  for (Op *op : versioned)
    reads = reads || op->kind() == OpKind::BlockElements;
  if (!reads)
    return false;
  // The loads move down to `at`: nothing in between may write memory.
  bool loadSeen = false;
  for (auto it = body.find(versioned.front()); it->get() != at; ++it) {
    const bool isVersioned = std::find(versioned.begin(), versioned.end(), it->get()) != versioned.end();
    loadSeen = loadSeen || (isVersioned && (*it)->kind() == OpKind::Load);
    if (loadSeen && !isVersioned && !isPure((*it)->kind()) && (*it)->kind() != OpKind::Load)
      return false;
  }

  // The branch yields what the rest of the body reads of the versioned ops. A pure op
  // nothing reads does not count: CSE leaves the copies it merged for DCE to delete.
  std::unordered_set<const Value *> read;
  auto note = [&](Op &o) {
    for (const Value *v : o.operands())
      read.insert(v);
  };
  for (auto it = body.find(at); it != body.ops().end(); ++it) {
    note(**it);
    for (const auto &region : (*it)->regions())
      walk(*region, note);
  }
  auto dead = [&](const Op &op) {
    if (!isPure(op.kind()) || op.numResults() == 0)
      return false;
    for (const auto &r : op.results())
      if (read.count(r.get()))
        return false;
    return true;
  };
  // Such copies that read the flags would outlive them: they go now.
  for (auto it = body.find(at); it != body.ops().end();) {
    if (dead(**it) && readsAny(**it, inside)) {
      const bool wasAt = it->get() == at;
      it = body.erase(it);
      if (wasAt)
        at = it->get(); // the yield at least follows
    } else {
      ++it;
    }
  }
  std::vector<Value *> outputs;
  auto usedAfter = [&](const Value *v) {
    for (auto it = body.find(at); it != body.ops().end(); ++it)
      if (readsAny(**it, {v}))
        return true;
    return false;
  };
  for (Op *op : versioned)
    for (const auto &r : op->results())
      if (usedAfter(r.get()))
        outputs.push_back(r.get());
  std::vector<Type> types;
  for (Value *v : outputs)
    types.push_back(v->type);
  Builder b;
  b.setInsertionPoint(at);
  Value *zero = b.intConstant(loc, Type::scalar(DType::I32), 0);
  Value *full = b.createValue(OpKind::Cmp, loc, {slot, zero}, Type::scalar(DType::Bool), {{"pred", std::string("lt")}});
  Op *branch = b.create(OpKind::If, loc, {full}, types, {}, 2);

  // Full blocks: a copy in which every flag is a constant true.
  Builder then(branch->region(0));
  ValueMap mapping;
  for (Op *op : versioned) {
    if (op->kind() == OpKind::BlockElements)
      mapping[op->result()] = then.boolConstant(op->loc(), op->result()->type, true);
    else
      cloneOp(then, *op, mapping);
  }
  std::vector<Value *> thenYield;
  for (Value *v : outputs)
    thenYield.push_back(lookup(mapping, v));
  then.create(OpKind::Yield, yield->loc(), thenYield, {});

  // Partial blocks: the ops as they were, their flags read from the bitmap.
  Block &elseBlock = *branch->region(1);
  for (Op *op : versioned) {
    if (op->kind() == OpKind::BlockElements)
      op->setAttr("partial", true);
    elseBlock.append(body.take(body.find(op)));
  }
  Builder otherwise(&elseBlock);
  otherwise.create(OpKind::Yield, yield->loc(), outputs, {});

  ValueMap results;
  for (size_t i = 0; i < outputs.size(); ++i)
    results[outputs[i]] = branch->result(static_cast<unsigned>(i));
  // Only the uses after the branch: those inside it are the else version's own.
  for (auto it = std::next(body.find(branch)); it != body.ops().end(); ++it)
    for (Value *&operand : (*it)->operands())
      if (auto r = results.find(operand); r != results.end())
        operand = r->second;
  for (auto it = std::next(body.find(branch)); it != body.ops().end(); ++it)
    for (const auto &region : (*it)->regions())
      replaceUses(*region, results);
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
