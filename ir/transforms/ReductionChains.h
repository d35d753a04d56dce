//===- ReductionChains.h - Cascaded reductions and how they fuse -*- C++ -*-===//
//
// The vocabulary shared by reduction-chain fusion's analysis (ReductionChains.cpp), its
// algebra (Separability.cpp), the rewrite (FuseReductions.cpp) and the explanations
// --explain-fusion prints (FusionRemarks.cpp).
//
// A *reduction loop* is a `for` whose every carried value is an accumulator
//     d = d ⊕ F(x, y)
// where ⊕ is +, max, min or the accumulation of `dot`, x is what the iteration loads
// and y are final values of earlier reduction loops over the same range. A *chain* is
// a run of such loops over one iteration space (same lower bound, upper bound and step
// values), with nothing between them that writes memory. Loop j of a chain can join
// one pass with the loops before it when F_j(x, y) = G(x) ⊗ H(y) with ⊗ distributing
// over ⊕: each step then updates y first and rescales d_j by H(y)/H(y_prev) before
// adding the new terms (the online-softmax form).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/transforms/FusionPolicy.h"
#include "ir/transforms/SplitCostModel.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

/// ⊕ of an accumulator. TopK is the merge of the K largest so far with a block's
/// candidates: best = gather(cat(best, F), argtopk(cat(best, F), K)).
enum class Combiner { Sum, Max, Min, Dot, TopK };
const char *combinerSymbol(Combiner c); ///< "+", "max", "min", "dot", "top-k"

/// One term of the y-dependent part of an exponent or of an additive shift:
/// sign · leaf · Π scales (scales loop-invariant scalars; `inverse` divides).
struct LinearTerm {
  /// The y-only value before it was broadcast over F's tile: a scalar, or a tile of F's
  /// rank with size 1 along every reduced dimension.
  Value *leaf = nullptr;
  bool negative = false;
  struct Scale {
    Value *value; ///< loop-invariant scalar
    bool inverse;
  };
  std::vector<Scale> scales;
};

/// An exponential factor exp(Σ terms) (or exp2) of F: what the rescale recomputes.
struct ExpFactor {
  Op *op = nullptr;   ///< the exp / exp2
  bool base2 = false; ///< exp2
  std::vector<LinearTerm> terms;
};

/// A factor of F that depends on earlier results alone (`x / l`, `p * s`): it is taken
/// out of the loop and applied once to the final accumulator.
struct DeferredFactor {
  Op *op = nullptr;          ///< the mul or div that applies it
  unsigned factorOperand = 1; ///< which operand of `op` is the factor
  bool inverse = false;       ///< div: the accumulator is divided by it
  Value *leaf = nullptr;      ///< the factor's value before it was broadcast
};

/// ⊕ = + with F = (A(x) - c(y))², on the lanes of a mask or on all: a sum of separable
/// terms. Σ F = M2 + N·(μ - c)², where N, μ and M2 are the count, the mean and the
/// centred sum of squares of the selected A, merged block by block (Chan et al.'s form
/// of Welford's update). Both terms are non-negative, so nothing cancels, and c is
/// needed only after the loop.
struct CenteredSquare {
  Value *data = nullptr; ///< A(x), a tile of F's shape
  Value *mask = nullptr; ///< F = where(mask, A - c, 0)²: the lanes that count; null: all
  LinearTerm centre;     ///< c(y) (no scales)
};

/// How F(x, y) splits, as found by Separability.cpp.
struct Separation {
  std::vector<ExpFactor> exps;          ///< ⊕ = + or dot: rescaled every step
  std::vector<DeferredFactor> deferred; ///< ⊕ = + or dot: applied after the loop
  /// ⊕ = + or dot: plain factors of y that F rounds to a narrow format (`q(a · s)`, with
  /// FusionPolicy::quantized): they stay where they are, at their running value, and
  /// every step rescales d by P(y)/P(y_prev).
  std::vector<DeferredFactor> running;
  std::vector<LinearTerm> shifts;       ///< ⊕ = max/min: F = G(x) + Σ shifts
  std::optional<CenteredSquare> centered; ///< ⊕ = +: F = (A(x) - c(y))²
  bool dependsOnEarlier() const {
    return !exps.empty() || !deferred.empty() || !running.empty() || !shifts.empty() || centered.has_value();
  }
  /// True when the running value is not the value so far: part of it is applied only
  /// after the loop, so later loops of the pass cannot read it.
  bool completedAfterLoop() const { return !deferred.empty() || centered.has_value(); }
};

/// One accumulator of a reduction loop.
struct Accumulator {
  unsigned slot = 0;            ///< carried-value index (0 = first after the induction variable)
  Combiner combiner = Combiner::Sum;
  Op *combineOp = nullptr;      ///< add / maximum / minimum / dot producing the next value
  Op *dotOp = nullptr;          ///< Combiner::Dot: the dot (combineOp, or the add's operand)
  /// Combiner::TopK: the argtopk ordering the candidates. For a companion (the indices
  /// that travel with the values: gather(cat(best_i, I), order)), `ranksWith` is the
  /// carried slot of the values whose order it follows; it is never rescaled.
  Op *orderOp = nullptr;
  int ranksWith = -1;
  Value *term = nullptr;        ///< F: the tile combined in (before a reduce), or dot's lhs
  std::vector<unsigned> reducedDims; ///< dims of `term` summed away (reduce axis, dot's K)
  Separation separation;
  std::string name() const;     ///< the source name of the carried value, or "acc<slot>"
};

/// One loop of a chain, with what the analysis decided about it.
struct ChainLoop {
  Op *loop = nullptr;
  std::vector<Accumulator> accumulators;
  bool fused = false;
  /// The loop that ended the chain by writing memory with the chain's results.
  bool trailing = false;
  /// When not fused: why, and where (the op that decided it; the loop itself if none).
  std::string refusal;
  Location refusalLoc;
};

/// How the fused loop of a chain runs (SegmentPlan.cpp): one program walks the whole
/// range (single segment, `segments` 1), or the range is split over `segments` programs
/// per program of the grid, whose partial states the last to finish merges.
struct SegmentPlan {
  int64_t segments = 1;
  std::string why; ///< for --explain-fusion
  /// The segments of a program form a thread-block cluster: each merges every state and
  /// runs the rest of the kernel on its own share (SplitReduction.cpp).
  bool cluster = false;
};

/// A chain of loops over one iteration space; `fused` loops become one pass.
struct ReductionChain {
  std::vector<ChainLoop> loops;
  SegmentPlan split;
  /// Ranges of up to this many blocks run without loops, each element read once
  /// (OnChipPath.cpp); 0: the chain has no such version.
  int64_t onChipBlocks = 0;
  size_t fusedCount() const;
};

/// True for ops whose effect is more than their results (writes, asserts, prints,
/// possibly endless loops): a chain does not extend across them.
bool writesOrFails(OpKind kind);
/// writesOrFails for `op` or anything in its regions.
bool hasEffects(Op &op);

/// Finds the chains of every block of `kernel` (nested blocks too) and decides, loop by
/// loop, which fuse. Chains of one loop are kept only when that loop is refused for a
/// reason worth explaining (a loop over the same range that needs earlier results).
std::vector<ReductionChain> analyzeReductionChains(Kernel &kernel, const FusionPolicy &policy);

/// Decides whether F = `acc.term` separates against the results of `earlier` loops
/// (Separability.cpp). Fills acc.separation, or returns the reason it does not, with
/// the op where it fails in `where`.
std::optional<std::string> separate(Accumulator &acc, Op &loop, const std::vector<Op *> &earlier,
                                    const FusionPolicy &policy, Location &where);

/// Decides whether `chain`, ending in a loop that writes memory, gets versions without
/// loops for ranges of up to `maxBlocks` blocks (OnChipPath.cpp), and for how many:
/// sets chain.onChipBlocks. Needs the chain's segment plan.
void planOnChip(const Kernel &kernel, ReductionChain &chain, int64_t maxBlocks);

/// The most blocks of `chain`'s range one program would hold on chip (OnChipPath.cpp)
/// were the range not split: 0 when none.
int64_t onChipCapacity(const Kernel &kernel, ReductionChain &chain);
/// Elements the trailing loop of `chain` loads per block, per thread of the program.
int64_t blockElementsPerThread(const Kernel &kernel, const ReductionChain &chain);
/// Gives the chain the versions planOnChip chose, in which every loop body runs once
/// per block in order, reading each element once; the loops move into the last branch.
/// Returns false when it has none.
bool keepOnChip(ReductionChain &chain);

/// Decides the strategy of every chain of `kernel` with two or more fused loops
/// (SegmentPlan.cpp): at most one chain of a kernel is split, and only where the split
/// provably computes what one program would.
void planSegments(Kernel &kernel, std::vector<ReductionChain> &chains, const ReductionSplitOptions &options);

/// Rewrites every chain with two or more fused loops into one loop (FuseReductions.cpp),
/// split over segments as its plan says. Returns true when the IR changed.
bool fuseReductionChains(Kernel &kernel, std::vector<ReductionChain> &chains);

} // namespace kiln::ir
