//===- PrefetchLoads.cpp - Load the next iteration's tiles before this one computes ===//
//
// A memory-bound loop (a matrix-vector product streaming its weights, a long row
// reduced block by block) issues its loads at the top of each iteration and then waits
// for them: while one iteration's loads are in flight nothing else is, so the bytes in
// flight per thread are one iteration's. Triton's `num_stages` streams such loads
// ahead; this pass does it in registers, for kernels that ask with
// `@num_stages(N)`, N >= 2, in loops that have no `dot` (those are pipelined through
// shared memory by code generation, codegen/LowerDot.cpp):
//
//   t0 = load(p(lb), m(lb) && lb < ub)             before the loop
//   for i in range(lb, ub, step) carrying t:
//     t' = load(p(i + step), m(i + step) && i + step < ub)    issued first
//     ... the body, reading t where it read the load ...
//     yield ..., t'
//
// so every iteration computes on data loaded one iteration earlier while the next
// iteration's loads travel. A load qualifies when its address, mask and fill are
// computed in the loop body from the induction variable and values defined outside
// the loop by pure ops only, and the loop writes no memory (no store, atomic, fence or
// cluster exchange: the streamed-ahead value must be the one the load would have read),
// and it is not `readsAfresh`. A load whose tile is broadcast is left where it is
// (spreadAcrossThreads). The extra load past the last iteration is masked off by
// `i + step < ub` (compared in 64 bits, so that the sum cannot wrap), and so never
// touches memory the original program does not.
//
// The registers it costs are bounded: loads are taken widest first while the
// prefetched elements per thread stay within kMaxPrefetchPerThread.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include <algorithm>
#include <unordered_set>

namespace kiln::ir {

namespace {

/// Elements per thread (of all the loads of one loop) held for the next iteration.
constexpr int64_t kMaxPrefetchPerThread = 64;

bool writesMemoryOrComputesDots(const Block &body) {
  bool found = false;
  walk(const_cast<Block &>(body), [&](Op &op) {
    switch (op.kind()) {
    case OpKind::Store:
    case OpKind::AtomicRMW:
    case OpKind::AtomicCas:
    case OpKind::Fence:
    case OpKind::ClusterExchange:
    case OpKind::Dot:
      found = true;
      break;
    default:
      break;
    }
  });
  return found;
}

class LoopPrefetcher {
public:
  LoopPrefetcher(Op &loop, int64_t threads) : loop_(loop), body_(*loop.region(0)), threads_(threads) {}

  bool run() {
    if (loop_.hasAttr("block_mask") || writesMemoryOrComputesDots(body_))
      return false;
    std::optional<int64_t> step = integerConstant(loop_.operand(2));
    if (!step || *step == 0)
      return false;
    // The widest loads first (a matrix-vector product's weights before its vector),
    // then body order, while the budget lasts.
    std::vector<std::pair<Op *, int64_t>> candidates; // with elements per thread
    for (auto &owned : body_.ops()) {
      Op &op = *owned;
      if (op.kind() != OpKind::Load || readsAfresh(op) || !computedFromInductionVariable(op) ||
          spreadAcrossThreads(op))
        continue;
      const Type &t = op.result()->type;
      candidates.push_back({&op, t.isScalar() ? 1 : (t.numElements() + threads_ - 1) / threads_});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    std::unordered_set<const Op *> chosen;
    int64_t budget = kMaxPrefetchPerThread;
    for (const auto &[op, perThread] : candidates)
      if (perThread <= budget) {
        budget -= perThread;
        chosen.insert(op);
      }
    std::vector<Op *> loads; // in body order
    for (auto &owned : body_.ops())
      if (chosen.count(owned.get()))
        loads.push_back(owned.get());
    if (loads.empty())
      return false;
    rewrite(loads, *step);
    return true;
  }

private:
  /// True when the loaded tile reaches a broadcast, a new axis or a permutation through
  /// elementwise ops: a vector every row of a tile shares, small and read from L1, which
  /// is exchanged between threads through shared memory whether or not it streams
  /// ahead. Streamed ahead, the decode chain's vectors made its products 1.7x slower on
  /// the H200 (bench/results/2026-12-03-h200-decode-chain-c.md), so they stay.
  bool spreadAcrossThreads(const Op &load) const {
    std::unordered_set<const Value *> reached{load.result()};
    for (auto &owned : body_.ops()) {
      const Op &op = *owned;
      bool reads = false;
      for (const Value *v : op.operands())
        reads = reads || reached.count(v);
      if (!reads)
        continue;
      switch (op.kind()) {
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Permute:
        return true;
      default:
        if (isElementwise(op.kind()) || op.kind() == OpKind::Cast)
          reached.insert(op.result());
      }
    }
    return false;
  }

  /// True when every operand of `op` is computed in the body by pure ops from the
  /// induction variable and values from outside the loop (memoised in cone_).
  bool computedFromInductionVariable(const Op &op) {
    for (Value *v : op.operands())
      if (!available(v))
        return false;
    return true;
  }

  bool available(Value *v) {
    if (v == body_.argument(0))
      return true;
    if (v->isBlockArgument())
      return !definedInLoop(v->ownerBlock()->parentOp());
    Op *def = v->definingOp();
    if (!definedInLoop(def))
      return true;
    if (def->parentBlock() != &body_ || !isPure(def->kind()) || def->numRegions() != 0)
      return false;
    if (auto it = known_.find(def); it != known_.end())
      return it->second;
    bool ok = computedFromInductionVariable(*def);
    known_[def] = ok;
    if (ok)
      cone_.insert(def);
    return ok;
  }

  /// True when `op` is the loop or nested in it.
  bool definedInLoop(const Op *op) const {
    for (; op; op = op->parentOp())
      if (op == &loop_)
        return true;
    return false;
  }

  /// Clones the cone of `loads` at `b` with the induction variable bound to `iv`, each
  /// load masked further by the scalar `inRange`; returns the new loads' results.
  std::vector<Value *> cloneLoads(Builder &b, const std::vector<Op *> &loads, Value *iv, Value *inRange) {
    // The ops these loads need (the cone of every candidate was recorded).
    std::unordered_set<const Op *> needed;
    std::vector<const Op *> work(loads.begin(), loads.end());
    while (!work.empty()) {
      const Op *op = work.back();
      work.pop_back();
      for (const Value *v : op->operands())
        if (const Op *def = v->definingOp(); def && cone_.count(def) && needed.insert(def).second)
          work.push_back(def);
    }
    ValueMap mapping{{body_.argument(0), iv}};
    for (auto &owned : body_.ops())
      if (needed.count(owned.get()))
        cloneOp(b, *owned, mapping);
    std::vector<Value *> results;
    for (Op *load : loads) {
      const Type &t = load->result()->type;
      Location loc = load->loc();
      Value *guard = inRange;
      if (!t.isScalar())
        guard = b.createValue(OpKind::Splat, loc, {inRange}, Type::tile(DType::Bool, t.shape));
      Value *mask = load->numOperands() > 1 ? lookup(mapping, load->operand(1)) : nullptr;
      if (mask)
        mask = b.createValue(OpKind::And, loc, {mask, guard}, mask->type);
      else
        mask = guard;
      std::vector<Value *> operands = {lookup(mapping, load->operand(0)), mask};
      if (load->numOperands() > 2)
        operands.push_back(lookup(mapping, load->operand(2)));
      Value *r = b.createValue(OpKind::Load, loc, operands, t, load->attrs());
      r->nameHint = load->result()->nameHint.empty() ? "" : load->result()->nameHint + "_next";
      results.push_back(r);
    }
    return results;
  }

  /// The scalar `a` as an i64 (the loop's bounds are compared in 64 bits).
  static Value *wide(Builder &b, Location loc, Value *a) {
    return a->type.dtype == DType::I64 ? a : b.createValue(OpKind::Cast, loc, {a}, Type::scalar(DType::I64));
  }

  /// `a < bound` for step > 0, `a > bound` for step < 0, `bound` an i64.
  static Value *before(Builder &b, Location loc, Value *a, Value *bound, int64_t step) {
    return b.createValue(OpKind::Cmp, loc, {wide(b, loc, a), bound}, Type::scalar(DType::Bool),
                         {{"pred", std::string(step > 0 ? "lt" : "gt")}});
  }

  void rewrite(const std::vector<Op *> &loads, int64_t step) {
    Location loc = loop_.loc();
    Value *lb = loop_.operand(0), *ub = loop_.operand(1), *stepValue = loop_.operand(2);
    Value *iv = body_.argument(0);

    // The first iteration's loads, before the loop.
    Builder outside;
    outside.setInsertionPoint(&loop_);
    Value *ub64 = wide(outside, loc, ub);
    std::vector<Value *> first = cloneLoads(outside, loads, lb, before(outside, loc, lb, ub64, step));

    // The loop again, carrying the loaded tiles.
    std::vector<Value *> operands = loop_.operands();
    std::vector<Type> types;
    for (const auto &r : loop_.results())
      types.push_back(r->type);
    for (Value *v : first) {
      operands.push_back(v);
      types.push_back(v->type);
    }
    Op *loop = outside.create(OpKind::For, loc, operands, types, loop_.attrs(), 1);
    Block *body = loop->region(0);
    ValueMap mapping;
    for (unsigned i = 0; i < body_.numArguments(); ++i)
      mapping[body_.argument(i)] = body->addArgument(body_.argument(i)->type, body_.argument(i)->nameHint);
    std::vector<Value *> carried;
    for (Op *load : loads)
      carried.push_back(body->addArgument(load->result()->type, load->result()->nameHint));
    for (unsigned i = 0; i < loop_.numResults(); ++i)
      loop->result(i)->nameHint = loop_.result(i)->nameHint;

    // First in the body: the next iteration's loads.
    Builder inside(body);
    Value *newIv = mapping.at(iv);
    Value *next = inside.createValue(OpKind::Add, loc, {newIv, stepValue}, iv->type);
    Value *nextInRange = before(inside, loc, next, ub64, step);
    std::vector<Value *> upcoming = cloneLoads(inside, loads, next, nextInRange);

    // Then the body, reading the carried tiles where it read the loads.
    for (size_t i = 0; i < loads.size(); ++i)
      mapping[loads[i]->result()] = carried[i];
    std::unordered_set<const Op *> skipped(loads.begin(), loads.end());
    for (auto &owned : body_.ops()) {
      if (skipped.count(owned.get()))
        continue;
      if (owned->kind() == OpKind::Yield) {
        std::vector<Value *> yielded;
        for (Value *v : owned->operands())
          yielded.push_back(lookup(mapping, v));
        yielded.insert(yielded.end(), upcoming.begin(), upcoming.end());
        inside.create(OpKind::Yield, owned->loc(), yielded, {});
        continue;
      }
      cloneOp(inside, *owned, mapping);
    }

    // Uses of the old loop's results read the new one's.
    ValueMap results;
    for (unsigned i = 0; i < loop_.numResults(); ++i)
      results[loop_.result(i)] = loop->result(i);
    Block *parent = loop_.parentBlock();
    parent->erase(parent->find(&loop_));
    replaceUses(*parent, results);
  }

  Op &loop_;
  Block &body_;
  int64_t threads_;
  std::unordered_map<const Op *, bool> known_;
  std::unordered_set<const Op *> cone_;
};

} // namespace

bool prefetchLoads(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    if (kernel->numStages < 2)
      continue;
    std::vector<Op *> loops;
    walk(*kernel->body, [&](Op &op) {
      if (op.kind() == OpKind::For)
        loops.push_back(&op);
    });
    // Innermost first: rewriting a loop replaces it, so an outer loop is rewritten only
    // after the loops it holds (its body then holds the replacements).
    for (auto it = loops.rbegin(); it != loops.rend(); ++it)
      changed |= LoopPrefetcher(**it, kernel->numWarps * 32).run();
  }
  return changed;
}

} // namespace kiln::ir
