//===- MemoryAccess.h - Which accesses of a program need a barrier -*- C++ -*-===//
//
// The interpreter runs a program's ops one after another, so a load sees every store
// the program made before it. On a GPU the threads of a program run independently, so
// when one thread may read (or write) what another thread wrote, the code generator
// puts a barrier between the two accesses. To keep those barriers rare it needs to know
// which accesses can touch the same memory: pointers derived from different pointer
// parameters are taken not to alias (ir/Provenance.h), and two accesses through the
// very same tile of pointers touch each element from the same thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Provenance.h"

#include <vector>

namespace kiln::codegen {

using ir::BaseSet;
using ir::kAnyBase;
using ir::PointerProvenance;

/// One global-memory access of an op.
struct MemAccess {
  BaseSet bases = kAnyBase;
  bool writes = false;
  bool atomic = false;
  const ir::Value *ptrs = nullptr; ///< the pointer operand
};

/// The access `op` makes itself (none for ops that do not touch global memory).
bool accessOf(const ir::Op &op, const PointerProvenance &prov, MemAccess &out);
/// Every access of the ops in `block` and in their regions.
void collectAccesses(const ir::Block &block, const PointerProvenance &prov,
                     std::vector<MemAccess> &out);
/// True when `later` must not start before `earlier` has finished in every thread.
bool accessesConflict(const MemAccess &earlier, const MemAccess &later);

} // namespace kiln::codegen
