//===- Provenance.cpp - Which kernel arguments a pointer can point into ---===//
//
// Sets only grow, so iterating the walk until nothing changes terminates (loop-carried
// pointers need a second round to see what the loop body yields).
//
//===----------------------------------------------------------------------===//
#include "ir/Provenance.h"

namespace kiln::ir {

PointerProvenance::PointerProvenance(const Kernel &kernel) {
  const auto &params = kernel.params();
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->type.pointer)
      sets_[params[i].get()] = i < 63 ? BaseSet(1) << i : kAnyBase;
  for (int round = 0; round < 64 && visitBlock(*kernel.body); ++round) {
  }
}

BaseSet PointerProvenance::bases(const Value *ptr) const {
  auto it = sets_.find(ptr);
  return it == sets_.end() ? kAnyBase : it->second;
}

bool PointerProvenance::merge(const Value *v, BaseSet s) {
  BaseSet &cur = sets_[v];
  BaseSet next = cur | s;
  if (next == cur)
    return false;
  cur = next;
  return true;
}

bool PointerProvenance::visitBlock(const Block &block) {
  bool changed = false;
  auto get = [&](const Value *v) -> BaseSet {
    auto it = sets_.find(v);
    return it == sets_.end() ? 0 : it->second;
  };
  for (const auto &opPtr : block.ops()) {
    const Op &op = *opPtr;
    // Values flow from the operands into the results of shape ops and selects, and
    // from inits and yields into the carried region arguments and results of loops.
    if (op.kind() == OpKind::For) {
      const Block &body = *op.region(0);
      for (unsigned j = 0; j < op.numResults(); ++j) {
        BaseSet s = get(op.operand(3 + j));
        if (const Op *y = body.terminator())
          s |= get(y->operand(j));
        if (op.result(j)->type.pointer) {
          changed |= merge(body.argument(1 + j), s);
          changed |= merge(op.result(j), s);
        }
      }
      changed |= visitBlock(body);
      continue;
    }
    if (op.kind() == OpKind::While) {
      const Block &before = *op.region(0), &after = *op.region(1);
      for (unsigned j = 0; j < op.numResults(); ++j) {
        BaseSet s = get(op.operand(j));
        if (const Op *y = after.terminator())
          s |= get(y->operand(j));
        if (op.result(j)->type.pointer) {
          changed |= merge(before.argument(j), s);
          changed |= merge(after.argument(j), s);
          changed |= merge(op.result(j), s);
        }
      }
      changed |= visitBlock(before);
      changed |= visitBlock(after);
      continue;
    }
    if (op.kind() == OpKind::If) {
      changed |= visitBlock(*op.region(0));
      changed |= visitBlock(*op.region(1));
      for (unsigned j = 0; j < op.numResults(); ++j) {
        if (!op.result(j)->type.pointer)
          continue;
        BaseSet s = 0;
        for (unsigned r = 0; r < 2; ++r)
          if (const Op *y = op.region(r)->terminator())
            s |= get(y->operand(j));
        changed |= merge(op.result(j), s);
      }
      continue;
    }
    for (const auto &region : op.regions())
      changed |= visitBlock(*region);
    for (const auto &res : op.results()) {
      if (!res->type.pointer)
        continue;
      BaseSet s = 0;
      bool any = false;
      for (const Value *o : op.operands())
        if (o->type.pointer) {
          s |= get(o);
          any = true;
        }
      changed |= merge(res.get(), any ? s : kAnyBase);
    }
  }
  return changed;
}

} // namespace kiln::ir
