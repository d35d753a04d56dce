//===- LowerDot.cpp - Matrix products of tiles ----------------------------===//
//
// Two paths.
//
// Tensor cores (NVPTX, f16 or bf16 operands, M % 16 == N % 8 == K % 16 == 0): the
// operands go to shared memory as their 16-bit values (B transposed, so that every
// fragment register is one 32-bit load), each warp computes 16x8 tiles of the result
// with mma.sync.m16n8k16 (f32 accumulation) over k, and the tiles come back through
// shared memory into the result's layout. Products of 16-bit floats are exact in f32;
// the sums run in the tensor core's order, so results differ from the interpreter's
// k = 0 .. K-1 order by reassociation only.
//
// The FMA path, correct for any M, N, K and every dtype: both operands go to shared
// memory in their compute type (f32 for float inputs, f64 when one is f64, i32 for
// integers), then every thread computes its registers of the [M, N] result with a loop
// over k = 0 .. K-1 that multiplies and adds separately (no fused multiply-add), which
// reproduces the interpreter's products and sums bit for bit.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

bool Lowering::useTensorCores(const ir::Op &op) const {
  if (!nvptx || !opts.useTensorCores)
    return false;
  const Type &a = op.operand(0)->type, &b = op.operand(1)->type, &r = op.result()->type;
  const bool half = a.dtype == DType::F16 && b.dtype == DType::F16;
  const bool bhalf = a.dtype == DType::BF16 && b.dtype == DType::BF16;
  if (!(half || bhalf) || !isFloat(r.dtype) || r.dtype == DType::F64)
    return false;
  if (op.numOperands() > 2 && (!isFloat(op.operand(2)->type.dtype) ||
                               op.operand(2)->type.dtype == DType::F64))
    return false;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  return M % 16 == 0 && N % 8 == 0 && K % 16 == 0;
}

/// dot on tensor cores; see the file comment. Scratch: A [M, K] and B^T [N, K] as
/// 16-bit values, C [M, N] as f32 (holding acc on the way in, the result on the way out).
static void lowerDotMma(Lowering &L, const ir::Op &op) {
  auto &b = L.b;
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  const int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  const bool bf16 = at.dtype == DType::BF16;
  const ScratchPlan plan = layoutAreas(scratchAreas(op, L.T, true));
  const int64_t aOff = plan.offsets[0], bOff = plan.offsets[1], cOff = plan.offsets[2];
  const Regs *acc = op.numOperands() > 2 ? &L.get(op.operand(2)) : nullptr;

  // Stage the operands (and acc).
  L.beginSharedUse();
  {
    const Layout la = L.layoutOf(at);
    const Regs &ra = L.get(op.operand(0));
    for (int64_t reg = 0; reg < la.numRegs(); ++reg)
      L.storeShared(L.encodeNarrow(at.dtype, ra.v[reg], false), aOff, L.elementIndex(la, reg));
    const Layout lb = L.layoutOf(bt);
    const Regs &rb = L.get(op.operand(1));
    for (int64_t reg = 0; reg < lb.numRegs(); ++reg) {
      llvm::Value *e = L.elementIndex(lb, reg);
      llvm::Value *k = b.CreateUDiv(e, L.i32(N)), *n = b.CreateURem(e, L.i32(N));
      L.storeShared(L.encodeNarrow(bt.dtype, rb.v[reg], false), bOff,
                    b.CreateAdd(b.CreateMul(n, L.i32(K)), k));
    }
    if (acc) {
      const Layout lc = L.layoutOf(rt);
      for (int64_t reg = 0; reg < lc.numRegs(); ++reg)
        L.storeShared(L.convert(op.operand(2)->type.dtype, DType::F32, acc->v[reg]), cOff,
                      L.elementIndex(lc, reg));
    }
  }
  L.sharedWritten();

  // Each warp takes tiles warp, warp + W, ...; a lane holds rows g and g + 8 and
  // columns 2t, 2t + 1 of a tile (the m16n8k16 fragment layout).
  const int64_t W = L.T / 32, tilesN = N / 8, tiles = (M / 16) * tilesN;
  const int64_t perWarp = (tiles + W - 1) / W;
  llvm::Value *warp = b.CreateLShr(L.tid, L.i32(5));
  llvm::Value *lane = b.CreateAnd(L.tid, L.i32(31));
  llvm::Value *g = b.CreateLShr(lane, L.i32(2));
  llvm::Value *t2 = b.CreateShl(b.CreateAnd(lane, L.i32(3)), L.i32(1));
  struct TileRefs {
    llvm::Value *valid, *row0, *row1, *col, *bRow;
  };
  std::vector<TileRefs> refs;
  Values init;
  for (int64_t i = 0; i < perWarp; ++i) {
    llvm::Value *idx = b.CreateAdd(warp, L.i32(i * W));
    llvm::Value *valid = tiles % W == 0 ? nullptr : b.CreateICmpULT(idx, L.i32(tiles));
    if (valid)
      idx = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, idx, L.i32(tiles - 1));
    llvm::Value *tm = b.CreateUDiv(idx, L.i32(tilesN)), *tn = b.CreateURem(idx, L.i32(tilesN));
    TileRefs r;
    r.valid = valid;
    r.row0 = b.CreateAdd(b.CreateMul(tm, L.i32(16)), g);
    r.row1 = b.CreateAdd(r.row0, L.i32(8));
    r.col = b.CreateAdd(b.CreateMul(tn, L.i32(8)), t2);
    r.bRow = b.CreateMul(b.CreateAdd(b.CreateMul(tn, L.i32(8)), g), L.i32(K));
    for (llvm::Value *row : {r.row0, r.row1})
      for (int j = 0; j < 2; ++j) {
        llvm::Value *ci = b.CreateAdd(b.CreateMul(row, L.i32(N)), b.CreateAdd(r.col, L.i32(j)));
        init.push_back(acc ? L.loadShared(b.getFloatTy(), cOff, ci) : L.f32(0.0));
      }
    refs.push_back(r);
  }
  // Two 16-bit values at 16-bit element index `e` of an area, as one 32-bit register.
  auto pair = [&](int64_t off, llvm::Value *e) -> llvm::Value * {
    llvm::Value *addr = L.sharedAddr(off, e, b.getInt16Ty());
    llvm::Value *v = b.CreateAlignedLoad(b.getInt32Ty(), addr, llvm::Align(4));
    return bf16 ? v : b.CreateBitCast(v, llvm::FixedVectorType::get(b.getHalfTy(), 2));
  };
  const llvm::Intrinsic::ID id = bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                      : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  Values sums = L.loop(L.i32(0), L.i32(K / 16), 1, init, [&](llvm::Value *ks, const Values &cur) {
    llvm::Value *kb = b.CreateAdd(b.CreateMul(ks, L.i32(16)), t2);
    Values next;
    for (int64_t i = 0; i < perWarp; ++i) {
      const TileRefs &r = refs[i];
      llvm::Value *a0 = pair(aOff, b.CreateAdd(b.CreateMul(r.row0, L.i32(K)), kb));
      llvm::Value *a1 = pair(aOff, b.CreateAdd(b.CreateMul(r.row1, L.i32(K)), kb));
      llvm::Value *a2 = pair(aOff, b.CreateAdd(b.CreateMul(r.row0, L.i32(K)), b.CreateAdd(kb, L.i32(8))));
      llvm::Value *a3 = pair(aOff, b.CreateAdd(b.CreateMul(r.row1, L.i32(K)), b.CreateAdd(kb, L.i32(8))));
      llvm::Value *b0 = pair(bOff, b.CreateAdd(r.bRow, kb));
      llvm::Value *b1 = pair(bOff, b.CreateAdd(r.bRow, b.CreateAdd(kb, L.i32(8))));
      llvm::Value *d = b.CreateIntrinsic(id, llvm::ArrayRef<llvm::Type *>{},
                                         {a0, a1, a2, a3, b0, b1, cur[4 * i], cur[4 * i + 1],
                                                   cur[4 * i + 2], cur[4 * i + 3]});
      for (unsigned j = 0; j < 4; ++j)
        next.push_back(b.CreateExtractValue(d, j));
    }
    return next;
  });
  // Write each tile (a clamped duplicate tile does not write), then read back.
  for (int64_t i = 0; i < perWarp; ++i) {
    const TileRefs &r = refs[i];
    L.guardedVoid(r.valid, [&] {
      int j = 0;
      for (llvm::Value *row : {r.row0, r.row1})
        for (int c = 0; c < 2; ++c, ++j)
          L.storeShared(sums[4 * i + j], cOff,
                        b.CreateAdd(b.CreateMul(row, L.i32(N)), b.CreateAdd(r.col, L.i32(c))));
    });
  }
  L.sharedWritten();
  const Layout lr = L.layoutOf(rt);
  Regs out;
  for (int64_t reg = 0; reg < lr.numRegs(); ++reg)
    out.v.push_back(L.convert(DType::F32, rt.dtype,
                              L.loadShared(b.getFloatTy(), cOff, L.elementIndex(lr, reg))));
  L.sharedRead();
  L.set(op.result(), std::move(out));
}

/// Writes tile `r` of type `t` to the arena converted to compute dtype `ct`.
static void storeConverted(Lowering &L, const Regs &r, const Type &t, DType ct, int64_t offset) {
  const Layout l = L.layoutOf(t);
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *v = L.convert(t.dtype, ct, r.v[reg]);
    L.storeShared(v, offset, L.elementIndex(l, reg));
  }
}

void Lowering::lowerDot(const ir::Op &op) {
  if (useTensorCores(op))
    return lowerDotMma(*this, op);
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
  const Type &rt = op.result()->type;
  const int64_t K = at.shape[1], N = bt.shape[1];
  const bool flt = isFloat(at.dtype);
  if (flt != isFloat(bt.dtype))
    unsupported(op, "dot of a float and an integer tile");
  if (!flt && isFloat(rt.dtype))
    unsupported(op, "an integer dot with a float accumulator");
  const DType ct = !flt ? DType::I32
                        : (at.dtype == DType::F64 || bt.dtype == DType::F64 ? DType::F64
                                                                           : DType::F32);
  llvm::Type *cty = regTypeOf(ct);
  const ScratchPlan plan = layoutAreas(scratchAreas(op, T, false));
  const int64_t aOff = plan.offsets[0], bOff = plan.offsets[1];

  beginSharedUse();
  storeConverted(*this, get(op.operand(0)), at, ct, aOff);
  storeConverted(*this, get(op.operand(1)), bt, ct, bOff);
  sharedWritten();

  const Layout l = layoutOf(rt);
  const int64_t n = l.numRegs();
  // Per register: its row's offset in A and its column; the starting sum.
  Values rowBase, col, init;
  const Regs *acc = op.numOperands() > 2 ? &get(op.operand(2)) : nullptr;
  for (int64_t reg = 0; reg < n; ++reg) {
    llvm::Value *e = elementIndex(l, reg);
    rowBase.push_back(b.CreateMul(b.CreateUDiv(e, i32(N)), i32(K)));
    col.push_back(b.CreateURem(e, i32(N)));
    init.push_back(acc ? convert(op.operand(2)->type.dtype, ct, acc->v[reg])
                       : llvm::Constant::getNullValue(cty));
  }
  Values sums = loop(i32(0), i32(K), 1, init, [&](llvm::Value *k, const Values &cur) {
    Values next;
    llvm::Value *bRow = b.CreateMul(k, i32(N));
    for (int64_t reg = 0; reg < n; ++reg) {
      llvm::Value *x = loadShared(cty, aOff, b.CreateAdd(rowBase[reg], k));
      llvm::Value *y = loadShared(cty, bOff, b.CreateAdd(bRow, col[reg]));
      next.push_back(flt ? b.CreateFAdd(cur[reg], b.CreateFMul(x, y))
                         : b.CreateAdd(cur[reg], b.CreateMul(x, y)));
    }
    return next;
  });
  sharedRead();
  Regs out;
  for (llvm::Value *s : sums)
    out.v.push_back(convert(ct, rt.dtype, s));
  set(op.result(), std::move(out));
}

} // namespace kiln::codegen::detail
