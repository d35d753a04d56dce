//===- DeadMaskedLanes.cpp - Lanes a masked store never writes are dead ----===//
//
// `select(m, a, b)` is `a` wherever nothing can observe the lanes where m is false: when
// every use of the select reaches, lane by lane (elementwise ops, comparisons, casts,
// selects), only the value of stores masked by the same m. The classic case is a
// masked load of a block that another load of the same block already read with a
// different fill: CSE turns the second into a select of the first, and when that value
// only flows into the masked output store, the select goes and the arithmetic on it
// merges with the first load's (one exp per element instead of two).
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include <unordered_map>
#include <vector>

namespace kiln::ir {

namespace {

using Uses = std::unordered_map<const Value *, std::vector<std::pair<Op *, unsigned>>>;

/// Ops whose result lane i depends only on lane i of their operands.
bool isLaneWise(const Op &op) {
  switch (op.kind()) {
  case OpKind::Cmp:
  case OpKind::Select:
  case OpKind::Cast:
  case OpKind::Bitcast:
    return true;
  default:
    return isElementwise(op.kind());
  }
}

class DeadLanes {
public:
  explicit DeadLanes(Kernel &kernel) : kernel_(kernel) {
    walk(*kernel.body, [&](Op &op) {
      for (unsigned i = 0; i < op.numOperands(); ++i)
        uses_[op.operand(i)].push_back({&op, i});
    });
  }

  bool run() {
    ValueMap replace;
    walk(*kernel_.body, [&](Op &op) {
      if (op.kind() == OpKind::Select && !op.result()->type.isScalar() && onlyStoredUnder(op.result(), op.operand(0)))
        replace[op.result()] = op.operand(1);
    });
    return replaceUses(*kernel_.body, replace) != 0;
  }

private:
  /// True when the lanes of `v` where `mask` is false reach nothing but the skipped
  /// lanes of stores masked by `mask`.
  bool onlyStoredUnder(const Value *v, const Value *mask, int depth = 0) {
    auto it = uses_.find(v);
    if (it == uses_.end() || depth > 64)
      return false;
    for (auto [user, index] : it->second) {
      if (user->kind() == OpKind::Store) {
        if (index != 1 || user->numOperands() != 3 || user->operand(2) != mask)
          return false;
        continue;
      }
      if (!isLaneWise(*user) || user->numResults() != 1 || user->result()->type.shape != v->type.shape ||
          !onlyStoredUnder(user->result(), mask, depth + 1))
        return false;
    }
    return true;
  }

  Kernel &kernel_;
  Uses uses_;
};

} // namespace

bool eliminateDeadMaskedLanes(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels)
    changed |= DeadLanes(*kernel).run();
  return changed;
}

} // namespace kiln::ir
