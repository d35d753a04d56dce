//===- Wgmma.h - Warpgroup matrix products on sm_90a ------------*- C++ -*-===//
//
// Private to codegen/. The pieces of a tensor-core dot that differ when it runs on
// wgmma (LowerWgmma.cpp) rather than mma.sync: where its operands sit in shared memory
// and how the product is issued. Staging the operands, streaming them with cp.async and
// moving the accumulator in and out of registers are shared with mma.sync
// (LowerDot.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Lowering.h"

#include <functional>


namespace kiln::codegen::detail {

/// Whether a tensor-core dot fits wgmma: target sm_90a, whole warpgroups, and one
/// 64-row strip of the result per warpgroup (M == 16 * warps), N a multiple of 16 up to
/// 256 (one instruction spans the strip's full width), and K a multiple of 32 for byte
/// operands.
bool wgmmaFits(const Lowering &L, const ir::Op &dot);

/// Whether both operands of a dot are i8/u8 (LowerDot.cpp): on wgmma they take the
/// 8-bit integer forms (k32 a step, s32 sums). They are staged as bytes, both K-major (the 8-bit forms read B only
/// that way), two bytes to each 16-bit place of a SwizzledTile: an [R, K] byte tile is
/// laid out and described exactly as an [R, K / 2] 16-bit one, so the descriptors and
/// the k steps are the 16-bit ones with K halved. f8 operands are not: Hopper's f8
/// forms keep fewer bits than f32 in their sums (on the H200 a 64x64x96 e4m3 x e5m2
/// product missed f32 sums by more than 1e-5 relative), so they are widened to f16 and
/// summed in f32 like 16-bit operands.
bool int8Dot(const ir::Op &dot);

/// A row-major [rows, cols] tile of 16-bit values as wgmma reads it from shared memory:
/// cut into column blocks of `swizzleBytes` per row (32, 64 or 128: the widest that
/// divides a row), each block `rows` rows one after the other, and within every
/// 1024 bytes the 16-byte pieces of a row permuted by the hardware's swizzle (XOR of
/// the piece index with the low bits of the row), so that the eight rows one core
/// matrix reads fall in distinct banks. The buffer must start 1024-byte aligned.
struct SwizzledTile {
  int64_t rows = 0, cols = 0, swizzleBytes = 0;

  static SwizzledTile of(int64_t rows, int64_t cols);
  int64_t blockCols() const { return swizzleBytes / 2; }
  int64_t blockBytes() const { return rows * swizzleBytes; }
  /// The descriptor's layout field: 1 for 128-byte, 2 for 64-byte, 3 for 32-byte rows.
  int64_t layoutType() const;
  /// Byte offset (i32) of element (row, col) from the buffer's start. `col` is the
  /// first of at most 8 elements that stay within one 16-byte piece.
  llvm::Value *byteOffset(Lowering &L, llvm::Value *row, llvm::Value *col) const;
};

/// Makes shared memory written by this thread through the generic proxy (st.shared,
/// cp.async) visible to wgmma, which reads it through the async proxy; a barrier must
/// follow before another warp's wgmma reads it.
void fenceForWgmma(Lowering &L);

/// The accumulator fragments of `dot` after adding A @ B, where A and B are laid out as
/// SwizzledTile at i16 indices `aBase` and `bBase` of the arena: one
/// wgmma.mma_async.m64nNk16 per 16 of K for this thread's warpgroup, committed as one
/// group and waited for; `whileRunning` (if any) is emitted between the two, so that
/// its work overlaps the tensor cores'. `acc` holds the fragments in mma order
/// (MmaTiling::rowStrips: one 16-row block per warp), which is wgmma's accumulator
/// order. With `aRegs`, A comes from registers instead: entry [k / 16] holds the four
/// 32-bit A fragment registers of that k step (as mma.sync's m16n8k16 A fragment, each
/// warp its 16 rows), and `aBase` is unused.
Values wgmmaProduct(Lowering &L, const ir::Op &dot, llvm::Value *aBase, llvm::Value *bBase,
                    const Values &acc, const std::function<void()> &whileRunning,
                    const std::vector<Values> *aRegs = nullptr);

} // namespace kiln::codegen::detail
