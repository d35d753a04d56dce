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
//                 own, each Tile register reads its row's;
//   AOperand      a 16-bit [M, K] value defined outside the loops of the dots that read
//                 it, all as their A operand (flash attention's queries): converted once
//                 into the dots' packed A fragments instead of being staged in shared
//                 memory on every iteration.
//
// A dot also consumes fragments directly: its accumulator when that is a Tile of the
// same tiling, and its A operand (16-bit) when that is a Tile of the same rows that
// holds whole rows (registers become the A fragments of mma.sync or wgmma), or an
// AOperand of the same rows. A dot whose B operand is a transpose (`trans(x)`, read by
// nothing else) reads x itself, staged as the K-major B the tensor cores also accept;
// the transpose is never lowered (transposedB). A `for`
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
#include <unordered_set>
#include <vector>

namespace kiln::codegen {

struct FragForm {
  enum class Kind : uint8_t { None, Tile, Rows, RowBroadcast, AOperand };
  Kind kind = Kind::None;
  /// The [M, N] of the tiling; for RowBroadcast N is the broadcast's, for AOperand the
  /// operand's K.
  int64_t M = 0, N = 0;
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
    if (kind == Kind::Tile)
      return sameTile(o);
    return sameRows(o) && (kind == Kind::Rows || N == o.N);
  }
  /// Registers per thread (Tile, Rows, AOperand: four 32-bit registers per row of tiles
  /// and 16 of K).
  int64_t numRegs() const {
    if (kind == Kind::AOperand)
      return N / 16 * tiling.mTiles * 4;
    return kind == Kind::Tile ? tiling.regsPerThread() : tiling.rowRegsPerThread();
  }
};

/// Ops lowered one element at a time whose operands and result share one shape
/// (arithmetic, math, comparisons, select, cast): the ops a fragment form passes through.
bool fragmentElementwise(ir::OpKind kind);

class FragmentPlan {
public:
  /// What the plan needs to know of a dot lowered on tensor cores with an f32 result
  /// and every warp owning a block (nullopt for every other dot): its tiling, whether
  /// its B operand may be staged K-major (room in its scratch), whether it runs on
  /// wgmma (asynchronous, reading a register A operand while it runs), and whether the
  /// lowering puts branches in every loop around it whatever the Tile IR says (checked
  /// mode tests each access under a branch).
  struct DotFacts {
    MmaTiling tiling;
    bool transposedBFits = false;
    bool wgmma = false;
    bool loopsBranch = false;
  };
  using DotQuery = std::function<std::optional<DotFacts>(const ir::Op &dot)>;
  /// True when a value can be recomputed at any element index for free (constants,
  /// splats, aranges and elementwise ops of those).
  using Recomputable = std::function<bool(const ir::Value *)>;

  void compute(const ir::Block &body, const DotQuery &dotQuery, const Recomputable &free);

  const FragForm &formOf(const ir::Value *v) const;
  /// True when operand `i` of `user` is read in its fragment form (no conversion).
  bool consumes(const ir::Op &user, unsigned i) const;
  /// True when `v` has a fragment form and some use needs it in the blocked layout.
  bool needsBlocked(const ir::Value *v) const;
  /// True when `op` (elementwise, cast, reduce, expand_dims, reshape, broadcast) is
  /// lowered on fragments; dots and loops consult the plan themselves.
  bool lowersInFragments(const ir::Op &op) const;
  /// The value a dot reads as its B operand transposed (the source of its B operand's
  /// `permute`), or null when it reads B as usual.
  const ir::Value *transposedB(const ir::Op &dot) const;
  /// True for a permute that no op needs: its dot reads the source (transposedB).
  bool elided(const ir::Op &op) const;
  /// True for an op on fragments that reads a blocked operand through shared memory.
  bool pullsBlocked(const ir::Op &op) const { return pulling.count(&op) != 0; }
  /// True when the plan kept any value in fragments.
  bool empty() const { return forms.empty() && transposed.empty(); }

private:
  void analyzeBlock(const ir::Block &block);
  void analyzeOp(const ir::Op &op);
  void analyzeFor(const ir::Op &op);
  /// An `if` passes a value in fragment form when a branch yields it in that form (the
  /// full- and partial-block versions of a sparse attention loop's body).
  void analyzeIf(const ir::Op &op);
  void analyzeElementwise(const ir::Op &op);
  void analyzeDot(const ir::Op &op);
  /// Reduce, expand_dims, reshape and broadcast.
  void analyzeShapeOp(const ir::Op &op);
  /// Gives `v` the AOperand form when every reader is a dot of one row tiling in a
  /// loop below `v`'s block.
  void tryAOperand(const ir::Value *v);
  void setForm(const ir::Value *v, const FragForm &f);
  void markConsumed(const ir::Op &op, unsigned i);
  void collectUsers(const ir::Block &block);

  DotQuery dotQuery;
  Recomputable free;
  std::unordered_map<const ir::Op *, const ir::Op *> transposed; ///< dot -> its B's permute
  std::unordered_set<const ir::Op *> pulling;
  std::unordered_map<const ir::Value *, FragForm> forms;
  std::unordered_map<const ir::Op *, std::vector<bool>> consumed;
  std::unordered_map<const ir::Value *, std::vector<std::pair<const ir::Op *, unsigned>>> users;
};

} // namespace kiln::codegen
