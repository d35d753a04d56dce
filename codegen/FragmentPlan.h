//===- FragmentPlan.h - Values kept in tensor-core fragment order ---*- C++ -*-===//
//
// Every tile normally lives in the blocked layout (Layout.h), and a tensor-core dot
// moves its result there through shared memory. Flash attention's loop body would pay
// that twice per iteration: the scores go from the dot's fragments to the blocked
// layout for the row max and sum, and the probabilities go back through shared memory
// as the next dot's operand. The plan instead keeps such values in the order the
// tensor cores produced them (MmaTiling.h), in one of three forms:
//
//   Tile          an [M, N] value in the fragment order of a dot with that tiling: a
//                 dot's f32 result, and elementwise ops of such values with each other,
//                 with scalars and with values recomputable at any index (a causal
//                 mask), and with row broadcasts;
//   Rows          an [M] or [M, 1] value with one register per row a thread holds (two
//                 per row of tiles): the sum, max, min or product of a Tile along its
//                 rows (tilings of one warp column: a row never spans warps), and
//                 elementwise ops of those, which may pull in small blocked [M] values;
//   RowBroadcast  the broadcast of a Rows [M, 1] value to [M, N]: no registers of its
//                 own, each Tile register reads its row's.
//
// A dot also consumes fragments directly: its accumulator when that is a Tile of the
// same tiling, and its A operand (16-bit) when that is a Tile of the same rows that
// holds whole rows (registers become the A fragments of mma.sync or wgmma). A `for`
// loop carries Tile and Rows values in their form when its body yields them so (found
// by iterating the body's analysis to a fixed point).
//
// Values that some op needs in the blocked layout are converted once, where they are
// defined (needsBlocked). Everything here is decided on the IR alone, before lowering;
// the lowering (LowerFragments.cpp) follows the plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/MmaTiling.h"
#include "ir/IR.h"

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln::codegen {

struct FragForm {
  enum class Kind : uint8_t { None, Tile, Rows, RowBroadcast };
  Kind kind = Kind::None;
  int64_t M = 0, N = 0; ///< the [M, N] of the tiling (N: of the broadcast's result for RowBroadcast)
  MmaTiling tiling;

  bool none() const { return kind == Kind::None; }
  /// Tile or Rows: the value has registers in this form.
  bool holdsRegisters() const { return kind == Kind::Tile || kind == Kind::Rows; }
  /// Threads hold the same rows in both.
  bool sameRows(const FragForm &o) const {
    return M == o.M && tiling.wm == o.tiling.wm && tiling.wn == o.tiling.wn &&
           tiling.mTiles == o.tiling.mTiles;
  }
  /// Threads hold the same elements of an [M, N] tile in both.
  bool sameTile(const FragForm &o) const {
    return sameRows(o) && N == o.N && tiling.nTiles == o.tiling.nTiles;
  }
  bool operator==(const FragForm &o) const {
    if (kind != o.kind)
      return false;
    if (kind == Kind::None)
      return true;
    return kind == Kind::Rows ? sameRows(o) : sameTile(o);
  }
  /// Registers per thread (Tile and Rows).
  int64_t numRegs() const {
    return kind == Kind::Tile ? tiling.regsPerThread() : tiling.rowRegsPerThread();
  }
};

class FragmentPlan {
public:
  /// The tiling of a dot lowered on tensor cores with an f32 result and every warp
  /// owning a block; nullopt for every other dot.
  using DotTiling = std::function<std::optional<MmaTiling>(const ir::Op &dot)>;
  /// True when a value can be recomputed at any element index for free (constants,
  /// splats, aranges and elementwise ops of those).
  using Recomputable = std::function<bool(const ir::Value *)>;

  void compute(const ir::Block &body, const DotTiling &dotTiling, const Recomputable &free);

  const FragForm &formOf(const ir::Value *v) const;
  /// True when operand `i` of `user` is read in its fragment form (no conversion).
  bool consumes(const ir::Op &user, unsigned i) const;
  /// True when `v` has a fragment form and some use needs it in the blocked layout.
  bool needsBlocked(const ir::Value *v) const;
  /// True when `op` (elementwise, cast, reduce, expand_dims, reshape, broadcast) is
  /// lowered on fragments; dots and loops consult the plan themselves.
  bool lowersInFragments(const ir::Op &op) const;
  /// True when the plan kept any value in fragments.
  bool empty() const { return forms.empty(); }

private:
  void analyzeBlock(const ir::Block &block);
  void analyzeOp(const ir::Op &op);
  void analyzeFor(const ir::Op &op);
  void analyzeElementwise(const ir::Op &op);
  void setForm(const ir::Value *v, const FragForm &f);
  void markConsumed(const ir::Op &op, unsigned i);
  void collectUsers(const ir::Block &block);

  DotTiling dotTiling;
  Recomputable free;
  std::unordered_map<const ir::Value *, FragForm> forms;
  std::unordered_map<const ir::Op *, std::vector<bool>> consumed;
  std::unordered_map<const ir::Value *, std::vector<std::pair<const ir::Op *, unsigned>>> users;
};

} // namespace kiln::codegen
