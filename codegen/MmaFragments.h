//===- MmaFragments.h - Where a lane's fragment registers sit -------*- C++ -*-===//
//
// Private to codegen/. The coordinates of the registers a thread holds of a value in
// tensor-core fragment order (MmaTiling.h, FragmentPlan.h), shared by the dot lowering
// and the lowering of ops on fragments.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Lowering.h"

#include <utility>

namespace kiln::codegen::detail {

/// Where the current lane works: its warp block's first row and column, and the lane's
/// place in the m16n8 fragment (row g, columns 2t and 2t + 1).
struct MmaLane {
  llvm::Value *warp, *lane, *rowBase, *colBase, *g, *t2;
  /// i1 this warp owns a block (null: every warp does).
  llvm::Value *writer;
};

MmaLane mmaLane(Lowering &L, const MmaTiling &tl, int64_t M, int64_t N);

/// Row and column (i32) of tile register `reg` (tile reg / 4, element reg % 4).
std::pair<llvm::Value *, llvm::Value *> fragmentCoord(Lowering &L, const MmaTiling &tl,
                                                      const MmaLane &m, int64_t reg);

/// Row (i32) of row register `reg` (Rows form: row of tiles reg / 2, g or g + 8).
llvm::Value *fragmentRow(Lowering &L, const MmaLane &m, int64_t reg);

} // namespace kiln::codegen::detail
