//===- LowerWgmma.cpp - Tensor-core dot on wgmma (sm_90a) -----------------===//
//
// On Hopper, mma.sync is issued per warp with both operands in registers, so every
// k step first moves the operands out of shared memory with ldmatrix; for a 128x128
// tile that keeps the shared-memory pipe busier than the tensor cores. wgmma instead
// lets a warpgroup (four consecutive warps) multiply a 64xN strip of the result with A
// and B read by the tensor cores straight from shared memory, described by 64-bit
// matrix descriptors, while the accumulators stay in registers in the same per-warp
// order mma.sync uses (each warp 16 rows, each 8 columns four registers).
//
// The operands are staged as SwizzledTile (Wgmma.h), in the canonical layouts of the
// PTX ISA's matrix descriptors:
//   A [M, K] row-major is "K-major": 8-row core groups SBO = 8 rows apart; the start
//     address of k step k0 moves along the row (within the 16-byte pieces the swizzle
//     permutes) and to the next column block once past the block's width;
//   B [K, N] row-major is "N-major", read transposed (imm-trans-b = 1): the 16 rows of
//     K a step reads are two 8-row groups SBO apart, the column blocks LBO apart;
//   B = trans(x) with x [N, K] row-major (FragmentPlan::transposedB) is staged as x,
//     "K-major" exactly like A, and read untransposed (imm-trans-b = 0).
// A may also come from registers (wgmma's register-A form, FragmentPlan.h): four 32-bit
// registers a k step, in mma.sync's A fragment order. Byte operands (i8/u8) use the
// 8-bit integer forms (k32, s32 sums), which read A and B K-major only: both are staged
// so, their bytes two to a 16-bit place of the K / 2 wide view, and everything above
// applies to that view (int8Dot).
// Each k step of the dot is one wgmma.mma_async; the steps of one dot form one commit
// group, waited for before the dot's result is used (and so before the buffers it read
// may be refilled).
//
//===----------------------------------------------------------------------===//
#include "codegen/Wgmma.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

bool wgmmaFits(const Lowering &L, const ir::Op &dot) {
  if (L.target != Target::SM90a || L.T % 128 != 0)
    return false;
  const int64_t M = dot.operand(0)->type.shape[0], K = dot.operand(0)->type.shape[1],
                N = dot.operand(1)->type.shape[1];
  // u8 beside i8 needs PTX ISA 8.4 on wgmma; Kiln emits 8.0 for sm_90a (every CUDA 12
  // driver loads it), so that product stays on mma.sync.
  const DType a = dot.operand(0)->type.dtype, b = dot.operand(1)->type.dtype;
  const bool mixedIntegers = isInteger(a) && a != b;
  return M == 16 * (L.T / 32) && N % 16 == 0 && N <= 256 &&
         (!int8Dot(dot) || (K % 32 == 0 && !mixedIntegers));
}

SwizzledTile SwizzledTile::of(int64_t rows, int64_t cols) {
  const int64_t rowBytes = cols * 2; // a multiple of 32: cols is a multiple of 16
  return {rows, cols, rowBytes % 128 == 0 ? 128 : rowBytes % 64 == 0 ? 64 : 32};
}

int64_t SwizzledTile::layoutType() const {
  return swizzleBytes == 128 ? 1 : swizzleBytes == 64 ? 2 : 3;
}

llvm::Value *SwizzledTile::byteOffset(Lowering &L, llvm::Value *row, llvm::Value *col) const {
  auto &b = L.b;
  llvm::Value *block = b.CreateUDiv(col, L.i32(blockCols()));
  llvm::Value *inBlock = b.CreateURem(col, L.i32(blockCols()));
  llvm::Value *o =
      b.CreateAdd(b.CreateMul(row, L.i32(swizzleBytes)), b.CreateShl(inBlock, L.i32(1)));
  // The hardware XORs the 16-byte piece (bits 4..6) with bits 7..9 of the address: the
  // row modulo 8 for 128-byte rows, (row / 2) % 4 for 64, (row / 4) % 2 for 32.
  llvm::Value *pattern = b.CreateShl(
      b.CreateAnd(b.CreateLShr(o, L.i32(7)), L.i32(swizzleBytes / 16 - 1)), L.i32(4));
  return b.CreateAdd(b.CreateMul(block, L.i32(blockBytes())), b.CreateXor(o, pattern));
}

void fenceForWgmma(Lowering &L) {
  L.b.CreateIntrinsic(llvm::Intrinsic::nvvm_fence_proxy_async_shared_cta,
                      llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
}

/// A matrix descriptor for the operand starting at shared byte address `addr` (i32):
/// start address, leading and stride byte offsets (all in 16-byte units) and the
/// swizzle layout type; the base offset stays 0 as every buffer is 1024-byte aligned.
static llvm::Value *descriptor(Lowering &L, llvm::Value *addr, int64_t leadingBytes,
                               int64_t strideBytes, int64_t layoutType) {
  auto &b = L.b;
  const uint64_t fixed = (static_cast<uint64_t>(leadingBytes >> 4) & 0x3FFF) << 16 |
                         (static_cast<uint64_t>(strideBytes >> 4) & 0x3FFF) << 32 |
                         static_cast<uint64_t>(layoutType) << 62;
  llvm::Value *start = b.CreateAnd(b.CreateLShr(addr, L.i32(4)), L.i32(0x3FFF));
  return b.CreateOr(b.CreateZExt(start, b.getInt64Ty()), L.i64(static_cast<int64_t>(fixed)));
}

/// Inline PTX that reads and writes the f32 accumulator registers `acc` in place (its
/// operands $0 .. $n-1), with `extra` inputs as $n, $n+1, ... (constraints `extraCons`).
/// Tying the registers makes every later use of the accumulators depend on this asm.
static Values accumulatorAsm(Lowering &L, const std::string &text, const Values &acc,
                             const Values &extra, const std::string &extraCons) {
  auto &b = L.b;
  const size_t n = acc.size();
  // f32 sums, or s32 ones for an integer product.
  llvm::Type *sumTy = acc[0]->getType();
  const std::string outCons = sumTy->isFloatTy() ? "=f," : "=r,";
  std::string cons;
  for (size_t i = 0; i < n; ++i)
    cons += outCons;
  cons += extraCons;
  std::vector<llvm::Type *> argTypes;
  Values args;
  for (llvm::Value *v : extra) {
    argTypes.push_back(v->getType());
    args.push_back(v);
  }
  for (size_t i = 0; i < n; ++i) {
    cons += (cons.back() == ',' ? "" : ",") + std::to_string(i);
    argTypes.push_back(sumTy);
    args.push_back(acc[i]);
  }
  cons += ",~{memory}";
  auto *sty = llvm::StructType::get(L.ctx, std::vector<llvm::Type *>(n, sumTy));
  auto *fty = llvm::FunctionType::get(sty, argTypes, false);
  llvm::Value *r = b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true),
                                args);
  Values out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(b.CreateExtractValue(r, static_cast<unsigned>(i)));
  return out;
}

/// The PTX name of a wgmma operand type.
static std::string wgmmaTypeName(DType t) {
  switch (t) {
  case DType::BF16: return "bf16";
  case DType::I8: return "s8";
  case DType::U8: return "u8";
  default: return "f16";
  }
}

/// wgmma.mma_async.m64nNkK with accumulators $0 .. $n-1 (f32, or s32 for integer
/// operands), then A: a descriptor $n (K-major) or, with `aInRegisters`, four registers
/// $n .. $n+3; then the descriptor of B (N-major when `transB`, else K-major) and
/// scale-d (nonzero: add to the accumulators). `a` and `b` are the operand types as
/// the tensor cores read them: 16-bit floats (k16, with scale and transpose flags) or
/// i8/u8 (k32, s32 sums, scale-d alone).
static std::string mmaAsyncText(int64_t N, size_t n, DType a, DType b, bool aInRegisters, bool transB) {
  const bool integer = isInteger(a);
  auto operand = [](size_t i) { return "$" + std::to_string(i); };
  std::string regs;
  for (size_t i = 0; i < n; ++i)
    regs += (i ? ", " : "") + operand(i);
  const std::string aText = aInRegisters ? "{" + operand(n) + ", " + operand(n + 1) + ", " +
                                               operand(n + 2) + ", " + operand(n + 3) + "}"
                                         : operand(n);
  const size_t next = n + (aInRegisters ? 4 : 1);
  // Register A has no transpose flag: scale-d, scale-a, scale-b[, trans-a], trans-b.
  // The integer forms take scale-d alone.
  const std::string flags = integer ? "p" : std::string(aInRegisters ? "p, 1, 1, " : "p, 1, 1, 0, ") +
                                                (transB ? "1" : "0");
  const std::string shape = "m64n" + std::to_string(N) + (integer ? "k32" : "k16");
  return "{\n.reg .pred p;\nsetp.ne.b32 p, " + operand(next + 1) + ", 0;\nwgmma.mma_async.sync.aligned." +
         shape + (integer ? ".s32." : ".f32.") + wgmmaTypeName(a) + "." + wgmmaTypeName(b) + " {" + regs +
         "}, " + aText + ", " + operand(next) + ", " + flags + ";\n}";
}

Values wgmmaProduct(Lowering &L, const ir::Op &dot, llvm::Value *aBase, llvm::Value *bBase,
                    const Values &acc, const std::function<void()> &whileRunning,
                    const std::vector<Values> *aRegs) {
  auto &b = L.b;
  const Type &at = dot.operand(0)->type, &bt = dot.operand(1)->type;
  // K in 16-bit places: byte operands go two to a place (int8Dot).
  const bool bytes = int8Dot(dot);
  const int64_t M = at.shape[0], K = bytes ? at.shape[1] / 2 : at.shape[1], N = bt.shape[1];
  // B is staged N-major ([K, N] rows, read transposed) or, for a transpose the dot reads
  // through (FragmentPlan::transposedB) and for bytes, K-major ([N, K] rows) like A.
  const bool bKMajor = bytes || L.fragPlan.transposedB(dot) != nullptr;
  const SwizzledTile sa = SwizzledTile::of(M, K), sb = bKMajor ? SwizzledTile::of(N, K) : SwizzledTile::of(K, N);
  // The swizzle is computed from arena offsets, so the arena starts where the pattern
  // does.
  llvm::cast<llvm::GlobalVariable>(L.arena)->setAlignment(llvm::Align(kWgmmaOperandAlign));
  llvm::Value *arenaAddr =
      b.CreateTrunc(b.CreatePtrToInt(L.arena, b.getInt64Ty()), b.getInt32Ty());
  // This warpgroup's 64 rows of A: whole 8-row groups into every column block.
  llvm::Value *warpgroup = b.CreateLShr(L.tid, L.i32(7));
  llvm::Value *aAddr = b.CreateAdd(
      arenaAddr, b.CreateAdd(b.CreateShl(aBase, L.i32(1)),
                             b.CreateMul(warpgroup, L.i32(64 * sa.swizzleBytes))));
  llvm::Value *bAddr = b.CreateAdd(arenaAddr, b.CreateShl(bBase, L.i32(1)));
  // A (K-major): the 16 values of K a step reads lie in one row of a block, so the
  // leading offset is unused (16 bytes, the canonical value).
  llvm::Value *descA = descriptor(L, aAddr, 16, 8 * sa.swizzleBytes, sa.layoutType());
  // B (N-major): leading offset from one column block to the next.
  llvm::Value *descB = bKMajor ? descriptor(L, bAddr, 16, 8 * sb.swizzleBytes, sb.layoutType())
                               : descriptor(L, bAddr, sb.blockBytes(), 8 * sb.swizzleBytes, sb.layoutType());
  const DType aType = bytes ? at.dtype : Lowering::mmaOperandType(dot);
  const DType bType = bytes ? bt.dtype : aType;
  const std::string text = mmaAsyncText(N, acc.size(), aType, bType, aRegs != nullptr, !bKMajor);

  // Orders the accumulators' last writes by ordinary instructions before the wgmmas.
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_wgmma_fence_sync_aligned,
                    llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
  Values cur = acc;
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    const int64_t aOff = k0 / sa.blockCols() * sa.blockBytes() + k0 % sa.blockCols() * 2;
    const int64_t bOff = bKMajor ? k0 / sb.blockCols() * sb.blockBytes() + k0 % sb.blockCols() * 2
                                 : k0 * sb.swizzleBytes;
    llvm::Value *b16 = b.CreateAdd(descB, L.i64(bOff >> 4));
    if (aRegs) {
      const Values &a = (*aRegs)[k0 / 16];
      cur = accumulatorAsm(L, text, cur, {a[0], a[1], a[2], a[3], b16, L.i32(1)}, "r,r,r,r,l,r");
    } else {
      cur = accumulatorAsm(L, text, cur, {b.CreateAdd(descA, L.i64(aOff >> 4)), b16, L.i32(1)},
                           "l,l,r");
    }
  }
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_wgmma_commit_group_sync_aligned,
                    llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
  if (whileRunning)
    whileRunning();
  return accumulatorAsm(L, "wgmma.wait_group.sync.aligned 0;", cur, {}, "");
}

} // namespace kiln::codegen::detail
