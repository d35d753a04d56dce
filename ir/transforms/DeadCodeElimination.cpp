//===- DeadCodeElimination.cpp - Delete what nothing reads ----------------===//
//
// An op is dead when none of its results is used and it has no effect: a pure op, or a
// `for`/`if` whose regions hold only such ops. (`while` is kept: deleting a loop that
// might not terminate would change what the program does.) Uses are counted once over
// the kernel; ops are then deleted bottom-up, decrementing their operands' counts, so
// whole chains of dead ops disappear in one sweep.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include <unordered_map>

namespace kiln::ir {

namespace {

using UseCounts = std::unordered_map<const Value *, size_t>;

/// True when executing `op` has no effect besides producing its results.
bool hasNoEffects(const Op &op) {
  if (isTerminator(op.kind()))
    return false;
  if (op.kind() == OpKind::For || op.kind() == OpKind::If) {
    for (const auto &region : op.regions())
      for (const auto &inner : region->ops())
        if (!isTerminator(inner->kind()) && !hasNoEffects(*inner))
          return false;
    return true;
  }
  return isPure(op.kind());
}

bool resultsUnused(const Op &op, const UseCounts &uses) {
  for (const auto &r : op.results()) {
    auto it = uses.find(r.get());
    if (it != uses.end() && it->second != 0)
      return false;
  }
  return true;
}

/// Deletes dead ops of `block` bottom-up (an op's users come after it, so one backward
/// sweep sees every user before the op it uses).
bool sweep(Block &block, UseCounts &uses) {
  bool changed = false;
  auto it = block.ops().end();
  while (it != block.ops().begin()) {
    --it;
    Op &op = **it;
    if (resultsUnused(op, uses) && hasNoEffects(op)) {
      // Release the uses held by the op and everything nested in it.
      for (Value *v : op.operands())
        --uses[v];
      for (const auto &region : op.regions())
        walk(*region, [&](Op &inner) {
          for (Value *v : inner.operands())
            --uses[v];
        });
      it = block.erase(it);
      changed = true;
      continue;
    }
    for (const auto &region : op.regions())
      changed |= sweep(*region, uses);
  }
  return changed;
}

} // namespace

bool eliminateDeadCode(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    UseCounts uses;
    walk(*kernel->body, [&](Op &op) {
      for (Value *v : op.operands())
        ++uses[v];
    });
    changed |= sweep(*kernel->body, uses);
  }
  return changed;
}

} // namespace kiln::ir
