//===- Provenance.h - Which kernel arguments a pointer can point into -*- C++ -*-===//
//
// The interpreter runs a program's ops one after another, so a load sees every store
// the program made before it. On a GPU the threads of a program run independently, so
// when one thread may read (or write) what another thread wrote, the code generator
// puts a barrier between the two accesses. To keep those barriers rare it needs to know
// which accesses can touch the same memory: pointers derived from different pointer
// parameters are taken not to alias (the buffers a launch passes are distinct
// allocations; docs/codegen.md states the rule), and two accesses through the very same
// tile of pointers touch each element from the same thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace kiln::codegen {

/// A set of pointer parameters as a bit mask; bit 63 stands for "any memory".
using BaseSet = uint64_t;
inline constexpr BaseSet kAnyBase = ~BaseSet(0);

class PointerProvenance {
public:
  explicit PointerProvenance(const ir::Kernel &kernel);
  /// The parameters `ptr` may point into (kAnyBase when unknown).
  BaseSet bases(const ir::Value *ptr) const;

private:
  bool visitBlock(const ir::Block &block);
  bool merge(const ir::Value *v, BaseSet s);
  std::unordered_map<const ir::Value *, BaseSet> sets_;
};

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
