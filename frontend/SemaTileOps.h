//===- SemaTileOps.h - Tile rearrangements for builtins made of ops -*- C++ -*-===//
//
// Small builders that emit the Tile IR ops of a rearrangement directly (no checks:
// the callers have checked their operands): the index along an axis, gather along it,
// flipping it, moving it last, splitting the last axis in halves, dropping an axis of
// length 1. The builtins that need no op of their own (flip, tuple reduce and scan,
// reverse scans, reductions over every axis) are written with them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/SemaInternal.h"

#include <utility>

namespace kiln::sema::tile {

/// An i32 tile of `shape` whose element is its index along `axis`.
Val indexAlong(Sema &s, const Shape &shape, int64_t axis, Location loc);
/// gather(x, idx, axis): idx is an i32 tile of x's shape on every axis but `axis`.
Val gatherAlong(Sema &s, Val x, Val idx, int64_t axis, Location loc);
/// where(cond, x, y) of three values of one shape (x and y of one dtype).
Val select(Sema &s, Val cond, Val x, Val y, Location loc);
/// x with the order of its elements along `axis` reversed.
Val flip(Sema &s, const Val &x, int64_t axis, Location loc);
/// x with its axes in the order `perm` (the identity returns x).
Val permute(Sema &s, const Val &x, const std::vector<int64_t> &perm, Location loc);
/// The permutation that moves `axis` of a rank-`rank` tile last, and its inverse.
std::pair<std::vector<int64_t>, std::vector<int64_t>> axisLast(unsigned rank, int64_t axis);
/// x reshaped to `shape` (same number of elements).
Val reshape(Sema &s, const Val &x, const Shape &shape, Location loc);
/// The even and odd elements along the last axis (of even length): x[..., 0::2] and
/// x[..., 1::2], so that combining them pairwise keeps the order of an associative
/// combiner.
std::pair<Val, Val> pairsAlongLast(Sema &s, const Val &x, Location loc);
/// x without its last axis, which has length 1; a scalar for a 1-D x.
Val dropLast(Sema &s, const Val &x, Location loc);

} // namespace kiln::sema::tile
