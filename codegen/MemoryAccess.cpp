//===- MemoryAccess.cpp - Which accesses of a program need a barrier ------===//
#include "codegen/MemoryAccess.h"

namespace kiln::codegen {

using ir::OpKind;

bool accessOf(const ir::Op &op, const PointerProvenance &prov, MemAccess &out) {
  const OpKind k = op.kind();
  if (k != OpKind::Load && k != OpKind::Store && k != OpKind::AtomicRMW &&
      k != OpKind::AtomicCas)
    return false;
  out.ptrs = op.operand(0);
  out.bases = prov.bases(op.operand(0));
  out.writes = k != OpKind::Load;
  out.atomic = k == OpKind::AtomicRMW || k == OpKind::AtomicCas;
  return true;
}

void collectAccesses(const ir::Block &block, const PointerProvenance &prov,
                     std::vector<MemAccess> &out) {
  for (const auto &op : block.ops()) {
    MemAccess a;
    if (accessOf(*op, prov, a))
      out.push_back(a);
    for (const auto &region : op->regions())
      collectAccesses(*region, prov, out);
  }
}

bool accessesConflict(const MemAccess &earlier, const MemAccess &later) {
  if (!earlier.writes && !later.writes)
    return false;
  if ((earlier.bases & later.bases) == 0)
    return false;
  // Atomics among themselves need no ordering beyond their own atomicity.
  if (earlier.atomic && later.atomic)
    return false;
  // The same tile of pointers: each element is accessed by one and the same thread in
  // both ops, in program order. (Scalars are accessed by different threads.)
  if (earlier.ptrs == later.ptrs && !earlier.ptrs->type.isScalar() && !earlier.atomic &&
      !later.atomic)
    return false;
  return true;
}

} // namespace kiln::codegen
