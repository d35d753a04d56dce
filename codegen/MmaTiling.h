//===- MmaTiling.h - How warps share a tensor-core product ----------*- C++ -*-===//
//
// A tensor-core dot of an [M, N] result is computed as 16x8 tiles (the m16n8 shape of
// mma.sync, and of every warp's part of a wgmma). The warps of a program form a
// wm x wn grid over the result; each warp owns a block of (M / wm) x (N / wn), made of
// mTiles x nTiles tiles, and holds four f32 registers per tile in the fragment order:
// lane l has rows g = l / 4 and g + 8 of the tile, columns 2t and 2t + 1 with t = l % 4
// (registers c0, c1 on row g, c2, c3 on row g + 8). Pure logic, unit-tested directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace kiln::codegen {

/// The warp grid of an [M, N] product. When the product has fewer tiles than warps,
/// only `active` warps have a block; the others repeat one (and never write).
struct MmaTiling {
  int64_t wm = 1, wn = 1, mTiles = 1, nTiles = 1, active = 1;

  /// The grid for `warps` warps that loads the fewest operand fragments per k step
  /// (ldmatrix: one per row of tiles for A, one per two columns for B), then the
  /// squarer block. With `wholeRows`, only grids of one warp column (wn == 1) that use
  /// every warp are taken when there is one: each warp then holds whole rows of the
  /// result, so that row reductions stay within warps (FragmentPlan.h).
  static MmaTiling make(int64_t M, int64_t N, int64_t warps, bool wholeRows = false) {
    if (wholeRows && (M / 16) % warps == 0)
      return {warps, 1, M / 16 / warps, N / 8, warps};
    MmaTiling best;
    int64_t bestCost = -1;
    for (int64_t act = warps; act >= 1 && bestCost < 0; act /= 2)
      for (int64_t m = 1; m <= act; m *= 2) {
        const int64_t n = act / m;
        if ((M / 16) % m != 0 || (N / 8) % n != 0)
          continue;
        MmaTiling t{m, n, M / 16 / m, N / 8 / n, act};
        const int64_t cost = t.mTiles + (t.nTiles + 1) / 2;
        if (bestCost < 0 || cost < bestCost) {
          best = t;
          bestCost = cost;
        }
      }
    return best;
  }
  /// wgmma's grid: every warp holds 16 rows of its warpgroup's 64-row strip across all
  /// of N.
  static MmaTiling rowStrips(int64_t N, int64_t warps) { return {warps, 1, 1, N / 8, warps}; }

  int64_t regsPerThread() const { return mTiles * nTiles * 4; }
  /// The rows a thread holds: two per row of tiles (g and g + 8).
  int64_t rowRegsPerThread() const { return mTiles * 2; }
  /// The row register (mi * 2 + half) of tile register `reg`.
  int64_t rowRegOf(int64_t reg) const { return (reg / 4 / nTiles) * 2 + (reg % 4 >= 2 ? 1 : 0); }

  bool operator==(const MmaTiling &) const = default;
};

} // namespace kiln::codegen
