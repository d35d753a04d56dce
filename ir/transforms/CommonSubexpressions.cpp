//===- CommonSubexpressions.cpp - Merge identical pure ops ----------------===//
//
// Scoped value numbering over the structured regions: an op is keyed by kind,
// operands, attributes and result types; a pure op whose key was seen in the same
// block or an enclosing one is replaced by that earlier op's results. Ops with regions
// (custom reduce/scan combiners, loops) are never merged.
//
// Loads are merged too, within one block and only while nothing in between may write
// what they read: the second load of the same addresses and mask reads the same values
// (another program writing them meanwhile would be a data race, undefined as in CUDA);
// where the two fill masked-off lanes differently, the second becomes a select of the
// first. A plain store ends only the loads that may point into its parameters
// (ir/Provenance.h: different parameters do not alias); an atomic or a fence ends them
// all, as they order this program after what others wrote. A load with the `.cv` cache
// modifier is left alone. Reduction-chain fusion
// relies on this to read each element once per pass, and a chain held on chip
// (OnChipPath.cpp) to read it once in all.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include "ir/Printer.h"
#include "ir/Provenance.h"

#include <algorithm>
#include <map>
#include <vector>

namespace kiln::ir {

namespace {

/// A structural key of an op. Attributes are compared through their printed form,
/// which is exact (floats print with round-trip precision).
struct OpKey {
  OpKind kind;
  std::vector<const Value *> operands;
  std::vector<std::string> resultTypes;
  std::vector<std::pair<std::string, std::string>> attrs;

  bool operator<(const OpKey &o) const {
    return std::tie(kind, operands, resultTypes, attrs) <
           std::tie(o.kind, o.operands, o.resultTypes, o.attrs);
  }
};

OpKey keyOf(const Op &op, const ValueMap &replaced) {
  OpKey key;
  key.kind = op.kind();
  for (Value *v : op.operands()) {
    auto it = replaced.find(v);
    key.operands.push_back(it == replaced.end() ? v : it->second);
  }
  for (const auto &r : op.results())
    key.resultTypes.push_back(r->type.str());
  for (const auto &[name, value] : op.attrs())
    key.attrs.emplace_back(name, printAttr(value));
  return key;
}

using Scope = std::map<OpKey, Op *>;

/// The parameters `op` (with its regions) may write through, kAnyBase for an op that
/// orders this program after others (an atomic, a fence); 0 when it writes nothing.
BaseSet clobbered(Op &op, const PointerProvenance &prov) {
  BaseSet out = 0;
  auto check = [&](Op &o) {
    if (o.kind() == OpKind::Store)
      out |= prov.bases(o.operand(0));
    else if (o.kind() == OpKind::AtomicRMW || o.kind() == OpKind::AtomicCas || o.kind() == OpKind::Fence)
      out = kAnyBase;
  };
  check(op);
  for (const auto &region : op.regions())
    walk(*region, check);
  return out;
}

/// A load's key: its addresses and mask. Loads that differ only in `other` (the value of
/// masked-off lanes) read the same memory.
OpKey loadKey(const Op &load, const ValueMap &replaced) {
  OpKey key = keyOf(load, replaced);
  key.operands.resize(std::min<size_t>(key.operands.size(), 2));
  return key;
}

/// The value of `load` from the identical-address `earlier` one: the same value, or, when
/// the masked-off lanes read another `other`, the earlier value with those lanes
/// replaced (`select(mask, earlier, other)`; a load without `other` reads 0 there).
Value *reuseLoad(Block &block, Op &load, Op &earlier) {
  auto otherOf = [](const Op &l) { return l.numOperands() > 2 ? l.operand(2) : nullptr; };
  if (load.numOperands() < 2 || otherOf(load) == otherOf(earlier))
    return earlier.result();
  Builder b;
  b.setInsertionPoint(&load);
  Type type = load.result()->type;
  Value *other = otherOf(load);
  if (!other)
    other = isFloat(type.dtype) ? b.floatConstant(load.loc(), type, 0.0)
            : isBool(type.dtype) ? b.boolConstant(load.loc(), type, false)
                                 : b.intConstant(load.loc(), type, 0);
  return b.createValue(OpKind::Select, load.loc(), {load.operand(1), earlier.result(), other}, type);
}

struct Numbering {
  const PointerProvenance &prov;
  std::vector<Scope> scopes;
  ValueMap replaced;
  std::vector<Op *> mergedLoads;
};

void numberBlock(Block &block, Numbering &n) {
  auto &[prov, scopes, replaced, mergedLoads] = n;
  scopes.emplace_back();
  Scope loads; // loads of this block that nothing since may have overwritten
  for (auto &opPtr : block.ops()) {
    Op &op = *opPtr;
    // Operands may refer to values replaced earlier in this walk.
    for (Value *&v : op.operands()) {
      auto it = replaced.find(v);
      if (it != replaced.end())
        v = it->second;
    }
    for (const auto &region : op.regions())
      numberBlock(*region, n);
    if (BaseSet written = clobbered(op, prov))
      std::erase_if(loads, [&](const auto &entry) { return (prov.bases(entry.second->operand(0)) & written) != 0; });
    if (op.kind() == OpKind::Load) {
      // A `.cv` load asks to fetch memory again each time (a flag another program
      // sets): it is neither merged nor merged into.
      if (readsAfresh(op))
        continue;
      auto [it, inserted] = loads.emplace(loadKey(op, replaced), &op);
      if (!inserted) {
        replaced[op.result()] = reuseLoad(block, op, *it->second);
        mergedLoads.push_back(&op);
      }
      continue;
    }
    if (!isPure(op.kind()) || op.numRegions() != 0 || op.numResults() == 0)
      continue;
    OpKey key = keyOf(op, replaced);
    Op *existing = nullptr;
    for (auto s = scopes.rbegin(); s != scopes.rend() && !existing; ++s) {
      auto it = s->find(key);
      if (it != s->end())
        existing = it->second;
    }
    if (existing) {
      for (unsigned i = 0; i < op.numResults(); ++i)
        replaced[op.result(i)] = existing->result(i);
    } else {
      scopes.back().emplace(std::move(key), &op);
    }
  }
  scopes.pop_back();
}

} // namespace

bool eliminateCommonSubexpressions(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    PointerProvenance prov(*kernel);
    Numbering n{prov, {}, {}, {}};
    numberBlock(*kernel->body, n);
    // The merged pure ops are now unused and DCE deletes them. DCE keeps loads (one
    // could fault), so a merged load, which the earlier identical one covers, goes here.
    for (Op *load : n.mergedLoads)
      load->parentBlock()->erase(load->parentBlock()->find(load));
    changed |= !n.replaced.empty();
  }
  return changed;
}

} // namespace kiln::ir
