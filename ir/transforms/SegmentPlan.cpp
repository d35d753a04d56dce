//===- SegmentPlan.cpp - Single segment or several, for each fused chain ---===//
//
// A fused chain's range can be split over S programs per program of the grid
// (SplitReduction.cpp) only where the split computes what one program would:
//   * the loops are at the kernel's top level, so "after the loop" is the rest of the
//     kernel, which the last segment runs alone on the merged state;
//   * nothing before them has an effect (a store, an atomic, an assert, a print, a
//     while loop): every segment runs that part of the kernel;
//   * the step is a positive constant, so a segment's share of the range is whole
//     blocks computed from the bounds at run time;
//   * every accumulator is f32, f16 or bf16: partial states go through the workspace as
//     32-bit floats (f16 and bf16 widen exactly) and merge with the float algebra;
//   * no other chain of the kernel is split (the grid is split once).
// Then --reduction-split=S forces S, and otherwise the cost model (SplitCostModel.cpp)
// chooses. A chain whose results feed another pass over the range (the trailing loop
// of softmax or layernorm) is split in a thread-block cluster where the target has
// clusters and S <= 8: every segment merges every state and runs the rest of the
// kernel, the trailing loop on its own share, so the rest may not hold an atomic, a
// fence or a print, which would run S times; the cost model picks S from the range's
// length when it is a constant (SplitCostModel.cpp). Without clusters only the last
// segment would run that pass, so such a chain is split only when it is forced.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ReductionChains.h"

namespace kiln::ir {

namespace {

std::string line(const Op *op) { return std::to_string(op->loc().line); }

/// Why `chain` cannot be split over programs; empty when it can.
std::string whyNotSplit(const Kernel &kernel, const ReductionChain &chain) {
  const ChainLoop *first = nullptr;
  for (const ChainLoop &l : chain.loops)
    if (l.fused && !first)
      first = &l;
  const Op *loop = first->loop;
  if (loop->parentBlock() != kernel.body.get())
    return "the loops are nested in control flow, and segments merge once per program";
  std::optional<int64_t> step = integerConstant(loop->operand(2));
  if (!step || *step <= 0)
    return "the step of the range is not a positive constant";
  DType bound = loop->operand(0)->type.dtype;
  if (bound == DType::U64)
    return "the bounds of the range are u64";
  for (const auto &op : kernel.body->ops()) {
    if (op.get() == loop)
      break;
    if (hasEffects(*op))
      return "the `" + std::string(op->mnemonic()) + "` at line " + line(op.get()) +
             " comes before the loops, and every segment would repeat it";
  }
  for (const ChainLoop &l : chain.loops)
    if (l.fused)
      for (const Accumulator &acc : l.accumulators) {
        DType t = acc.combineOp->result()->type.dtype;
        // What travels with a top-k (its indices) may also be a 32-bit integer.
        bool word = acc.ranksWith >= 0 && (t == DType::I32 || t == DType::U32);
        if (t != DType::F32 && t != DType::F16 && t != DType::BF16 && !word)
          return "`" + acc.name() + "` is " + std::string(dtypeName(t)) +
                 ", and partial states are kept for f32, f16 and bf16 accumulators only";
      }
  return "";
}

/// The iterations of the chain's range when its bounds are constants.
std::optional<int64_t> rangeBlocks(const ReductionChain &chain) {
  const Op *loop = nullptr;
  for (const ChainLoop &l : chain.loops)
    if (l.fused && !loop)
      loop = l.loop;
  auto lb = integerConstant(loop->operand(0)), ub = integerConstant(loop->operand(1)), step = integerConstant(loop->operand(2));
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return *ub <= *lb ? 0 : (*ub - *lb + *step - 1) / *step;
}

bool feedsAnotherPass(const ReductionChain &chain) {
  for (const ChainLoop &l : chain.loops)
    if (l.trailing)
      return true;
  return false;
}

/// Why the segments of `chain` cannot form a cluster that runs the rest of the kernel in
/// every segment, each on its share of the trailing loop; empty when they can.
std::string whyNotCluster(const Kernel &kernel, const ReductionChain &chain, const ReductionSplitOptions &options) {
  if (options.maxClusterSize < 2)
    return "the target has no thread-block clusters";
  const ChainLoop &trailing = chain.loops.back();
  if (!trailing.trailing || trailing.loop->parentBlock() != kernel.body.get())
    return "no loop at the kernel's top level walks the range again";
  // The rest of the kernel runs in every segment: what it writes outside the trailing
  // loop each writes alike, but an atomic or a print would happen S times.
  bool after = false;
  for (const auto &op : kernel.body->ops()) {
    after = after || op.get() == chain.loops.front().loop;
    if (!after || op.get() == trailing.loop)
      continue;
    std::string found;
    auto check = [&](Op &inner) {
      if (found.empty() && (inner.kind() == OpKind::AtomicRMW || inner.kind() == OpKind::AtomicCas ||
                            inner.kind() == OpKind::Print || inner.kind() == OpKind::Fence))
        found = "the `" + std::string(inner.mnemonic()) + "` at line " + line(&inner) +
                " would run in every program of the cluster";
    };
    check(*op);
    for (const auto &region : op->regions())
      walk(*region, check);
    if (!found.empty())
      return found;
  }
  return "";
}

/// A chain over a blocks() loop: row-wise or block-wise (SparseMapping.h). Block-wise is
/// the multi-segment split, so it needs what the split needs.
SegmentPlan planSparse(const Kernel &kernel, ReductionChain &chain, const ReductionSplitOptions &options) {
  SparseMappingChoice choice = chooseSparseMapping({options.sparse, options.programs, options.processors});
  if (choice.segments == 1)
    return {1, choice.why};
  if (std::string why = whyNotSplit(kernel, chain); !why.empty())
    return {1, "row-wise: block-wise would need a split of the row over programs, but " + why};
  if (feedsAnotherPass(chain)) {
    std::string whyNoCluster = whyNotCluster(kernel, chain, options);
    if (!whyNoCluster.empty() || choice.segments > options.maxClusterSize)
      return {1, "row-wise: a later loop walks the row again with the results, which only a thread-block cluster "
                 "of at most " + std::to_string(std::max<int64_t>(options.maxClusterSize, 0)) +
                 " programs shares (" + (whyNoCluster.empty() ? "the model asks for " + std::to_string(choice.segments)
                                                              : whyNoCluster) + ")"};
    return {choice.segments, choice.why + ", in a thread-block cluster", true};
  }
  return {choice.segments, choice.why};
}

SegmentPlan plan(const Kernel &kernel, ReductionChain &chain, const ReductionSplitOptions &options) {
  const ChainLoop *first = nullptr;
  for (const ChainLoop &l : chain.loops)
    if (l.fused && !first)
      first = &l;
  if (first->loop->hasAttr("block_mask") && (options.forced == 0 || options.sparse.mapping != SparseMapping::Auto))
    return planSparse(kernel, chain, options);
  std::string forced = "--reduction-split=" + std::to_string(options.forced);
  if (options.forced == 1)
    return {1, "as " + forced + " asks"};
  if (std::string why = whyNotSplit(kernel, chain); !why.empty())
    return {1, options.forced > 1 ? forced + " does not apply: " + why : why};
  const bool another = feedsAnotherPass(chain);
  const std::string whyNoCluster = another ? whyNotCluster(kernel, chain, options) : "";
  const bool cluster = another && whyNoCluster.empty();
  if (options.forced > 1) {
    if (cluster && options.forced <= options.maxClusterSize)
      return {options.forced, "as " + forced + " asks, in a thread-block cluster", true};
    return {std::min(options.forced, kMaxSegments), "as " + forced + " asks"};
  }
  if (another) {
    if (!cluster)
      return {1, "a later loop walks the range again with the results, and only one segment would run it (" +
                     whyNoCluster + ")"};
    SegmentChoice choice = chooseClusterSegments({rangeBlocks(chain), onChipCapacity(kernel, chain),
                                                  blockElementsPerThread(kernel, chain), options.maxClusterSize});
    return {choice.segments, choice.why, choice.segments > 1};
  }
  SegmentChoice choice = chooseSegments({options.programs, options.processors, rangeBlocks(chain)});
  return {choice.segments, choice.why};
}

} // namespace

void planSegments(Kernel &kernel, std::vector<ReductionChain> &chains, const ReductionSplitOptions &options) {
  bool gridSplit = kernel.gridSplit.active();
  for (ReductionChain &chain : chains) {
    if (chain.fusedCount() < 2)
      continue;
    chain.split = gridSplit ? SegmentPlan{1, "the kernel's grid is split for another range already"}
                            : plan(kernel, chain, options);
    gridSplit |= chain.split.segments > 1;
  }
}

} // namespace kiln::ir
