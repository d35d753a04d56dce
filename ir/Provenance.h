//===- Provenance.h - Which kernel arguments a pointer can point into -*- C++ -*-===//
//
// Kiln takes pointers derived from different pointer parameters not to alias: the
// buffers a launch passes are distinct allocations (docs/language.md states the rule).
// This analysis follows every pointer value of a kernel back to the parameters it can
// be derived from. The code generator uses it to keep barriers between threads rare
// (codegen/MemoryAccess.h), and common-subexpression elimination to keep a load's value
// across a store that cannot touch it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <unordered_map>

namespace kiln::ir {

/// A set of pointer parameters as a bit mask; bit 63 stands for "any memory".
using BaseSet = uint64_t;
inline constexpr BaseSet kAnyBase = ~BaseSet(0);

class PointerProvenance {
public:
  explicit PointerProvenance(const Kernel &kernel);
  /// The parameters `ptr` may point into (kAnyBase when unknown, e.g. for a value
  /// created after the analysis ran).
  BaseSet bases(const Value *ptr) const;

private:
  bool visitBlock(const Block &block);
  bool merge(const Value *v, BaseSet s);
  std::unordered_map<const Value *, BaseSet> sets_;
};

} // namespace kiln::ir
