//===- ChainAlgebra.h - Rescaling a fused chain's values in a context -*- C++ -*-===//
//
// Internal to reduction-chain fusion. The fused loop (FuseReductions.cpp) and the merge
// of partial states across segments (SplitReduction.cpp) apply the same algebra: an
// accumulator computed against one set of values y of the earlier loops is brought to
// another set by H(y)/H(y_before) (an exponential ratio, or a shift for max/min), and
// centred squares combine (count, mean, M2) triples. ChainAlgebra holds what both need:
// the chain, and the computation of its y-only values (the leaves of H) in a context
// where the chain's results read other values.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/transforms/ReductionChains.h"

#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

/// (M2, N, μ) of a centred square.
struct CentredState {
  Value *m2 = nullptr, *count = nullptr, *mean = nullptr;
};

/// The identity of ⊕ on floats: 0 for + and dot, -inf for max, +inf for min.
double identityOf(Combiner combiner);
/// True when `v` is a float constant holding the identity of ⊕.
bool isIdentity(const Value *v, Combiner combiner);
/// The elementwise op of ⊕ (add for + and dot).
OpKind combineKind(Combiner combiner);

class ChainAlgebra {
public:
  explicit ChainAlgebra(ReductionChain &chain);

  /// The fused loops, in order.
  const std::vector<ChainLoop *> &fused() const { return fused_; }
  /// The block holding the chain.
  Block *parent() const { return parent_; }
  bool isChainLoop(const Op *op) const { return chainLoops_.count(op) != 0; }

  /// True when `op` lies inside a loop of the chain.
  bool insideChainLoop(const Op *op) const;
  /// True when `v` reads a result of a loop of the chain.
  bool dependsOnChain(Value *v);

  /// `v` computed where the builder stands, with the chain's results read from `map`
  /// (which also memoizes what was computed). Values that do not depend on the chain
  /// and live outside its loops are used as they are.
  Value *materialize(Value *v, ValueMap &map, Builder &b);

  /// `v` where a running maximum (minimum) is still -inf (+inf) reads 0 instead.
  Value *finiteOrZero(Value *v, Combiner combiner, Builder &b, Location loc);

  /// The value of an accumulator carried as `carried`, as the chain's later loops see
  /// it: `laterInit ⊕ carried` when its initial value is kept out of the rescaling (a
  /// rescaled accumulator whose initial value is not the identity), else `carried`.
  Value *seen(Value *carried, Value *laterInit, Combiner combiner, Builder &b, Location loc);
  /// The same for a running value: a maximum (minimum) still at -inf (+inf) reads 0.
  Value *seenRunning(Value *carried, Value *laterInit, Combiner combiner, Builder &b, Location loc);

  /// Brings `w` (a scalar, or a tile of F's rank with size 1 along the reduced
  /// dimensions) to the accumulator's type.
  Value *toAccumulator(Value *w, const Accumulator &acc, const Type &accType, Builder &b, Location loc);

  /// The accumulator `value`, computed against the chain's results as `before` maps
  /// them, brought to the results as `now` maps them: multiplied by H(now)/H(before)
  /// for exponential factors and factors kept under a rounding, shifted by
  /// B(now) - B(before) for max/min.
  Value *rescale(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before, Builder &b, Location loc);

  /// `v` (the accumulator's shape) broadcast back over F's tile `term`.
  Value *toTerm(Value *v, const Accumulator &acc, const Type &term, Builder &b, Location loc);
  /// Σ over the reduced dimensions of `tile` (of F's shape), at the accumulator's shape.
  Value *reduceSum(Value *tile, const Accumulator &acc, Builder &b, Location loc);

  /// Two centred squares' states as one (Chan et al.): δ = μ_b - μ_a, N = N_a + N_b,
  /// μ = μ_a + δ·N_b/N, M2 = M2_a + M2_b + δ²·N_a·N_b/N. An empty b (N_b = 0, its mean
  /// then ignored) changes nothing.
  CentredState mergeCentred(const CentredState &a, const CentredState &b, Builder &builder, Location loc);

private:
  /// rescale for a value whose elements are finite.
  Value *rescaleFinite(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before, Builder &b,
                       Location loc);
  /// `value` multiplied by P(now)/P(before) for each running factor P (a factor that F
  /// rounds to a narrow format, so it stays inside F at its running value).
  Value *rescaleRunning(Value *value, const Accumulator &acc, ValueMap &now, ValueMap &before, Builder &b,
                        Location loc);
  Value *scalarScale(Value *s, Builder &b, Location loc);
  Value *delta(const std::vector<LinearTerm> &terms, const Accumulator &acc, const Type &accType, ValueMap &now,
               ValueMap &before, Builder &b, Location loc);

  std::vector<ChainLoop *> fused_;
  std::unordered_set<const Op *> chainLoops_;
  Block *parent_ = nullptr;
  std::unordered_map<const Value *, bool> dependsMemo_;
};

} // namespace kiln::ir
