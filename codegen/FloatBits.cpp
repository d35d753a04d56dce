//===- FloatBits.cpp - Encoding and rounding of f16, bf16 and f8 ----------===//
//
// Narrow floats live in f32 registers; these routines move them between that form and
// their bits with the rules of support/FloatFormats.h: round to nearest even, f16/bf16
// overflow to infinity, f8 saturates to the largest finite value, NaN stays NaN (with
// the top payload bits kept). NVPTX has exact conversion instructions for f16 and
// bf16, and from sm_89 on for f32 -> f8e4m3; everything else is integer arithmetic on
// the f32 bits, which is exact on every target (no f16 arithmetic support is needed,
// which OpenCL 1.2 devices lack).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>

namespace kiln::codegen::detail {

namespace {

/// A narrow binary format (see FloatFormats.cpp, which this mirrors).
struct NarrowFormat {
  int expBits, manBits;
  bool e4m3fn;   ///< no infinities; only S.1111.111 is NaN
  bool saturate; ///< overflow saturates (f8) instead of giving infinity

  int bias() const { return (1 << (expBits - 1)) - 1; }
  int shift() const { return 23 - manBits; }
  uint32_t manMask() const { return (1u << manBits) - 1; }
  uint32_t expMask() const { return (1u << expBits) - 1; }
  uint32_t infBits() const { return expMask() << manBits; }
  uint32_t maxFiniteBits() const {
    if (e4m3fn)
      return (expMask() << manBits) | (manMask() - 1);
    return ((expMask() - 1) << manBits) | manMask();
  }
  /// The f32 bit pattern (without sign) of the largest finite value.
  uint32_t maxFiniteF32() const {
    uint32_t e = maxFiniteBits() >> manBits, m = maxFiniteBits() & manMask();
    return ((e - bias() + 127) << 23) | (m << shift());
  }
};

NarrowFormat formatOf(DType t) {
  switch (t) {
  case DType::F16:
    return {5, 10, false, false};
  case DType::BF16:
    return {8, 7, false, false};
  case DType::F8E4M3:
    return {4, 3, true, true};
  case DType::F8E5M2:
    return {5, 2, false, true};
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::F32:
  case DType::F64:
    break;
  }
  KILN_ICE("codegen: not a narrow float dtype");
}

} // namespace

llvm::Value *Lowering::packNarrowPair(DType t, llvm::Value *lo, llvm::Value *hi) {
  if (nvptx && (t == DType::F16 || t == DType::BF16)) {
    // cvt.rn.{bf16,f16}x2.f32 d, a, b puts a in the upper half: hi first.
    const llvm::Intrinsic::ID id = t == DType::BF16 ? llvm::Intrinsic::nvvm_ff2bf16x2_rn
                                                    : llvm::Intrinsic::nvvm_ff2f16x2_rn;
    // A value roundToDType made is fpext(fptrunc(x)): rounding x again gives its bits.
    auto unrounded = [](llvm::Value *v) -> llvm::Value * {
      if (auto *ext = llvm::dyn_cast<llvm::FPExtInst>(v))
        if (auto *trunc = llvm::dyn_cast<llvm::FPTruncInst>(ext->getOperand(0)))
          if (trunc->getOperand(0)->getType()->isFloatTy())
            return trunc->getOperand(0);
      return v;
    };
    llvm::Value *pair = b.CreateIntrinsic(id, llvm::ArrayRef<llvm::Value *>{unrounded(hi), unrounded(lo)});
    return b.CreateBitCast(pair, b.getInt32Ty());
  }
  llvm::Value *l = b.CreateZExt(encodeNarrow(t, lo, false), b.getInt32Ty());
  llvm::Value *h = b.CreateZExt(encodeNarrow(t, hi, false), b.getInt32Ty());
  return b.CreateOr(l, b.CreateShl(h, i32(16)));
}

llvm::Value *Lowering::encodeNarrow(DType t, llvm::Value *v, bool keepInf) {
  llvm::Type *bitsTy = dtypeBits(t) == 16 ? b.getInt16Ty() : b.getInt8Ty();
  if (nvptx && t == DType::F16)
    return b.CreateBitCast(b.CreateFPTrunc(v, b.getHalfTy()), bitsTy);
  if (nvptx && t == DType::BF16)
    return b.CreateBitCast(b.CreateFPTrunc(v, b.getBFloatTy()), bitsTy);
  if (t == DType::F8E4M3 && hasF8Conversion()) {
    // cvt.rn.satfinite.e4m3x2.f32 follows the same rules (nearest even, subnormals,
    // overflow and infinity to the largest finite value) but for the sign of a NaN,
    // which it drops: S.1111.111 keeps it here, as in the interpreter.
    llvm::Value *pair = b.CreateIntrinsic(b.getInt16Ty(), llvm::Intrinsic::nvvm_ff_to_e4m3x2_rn, {v, v});
    llvm::Value *bits = b.CreateTrunc(pair, bitsTy);
    llvm::Value *nan = b.CreateSelect(b.CreateICmpSLT(b.CreateBitCast(v, b.getInt32Ty()), i32(0)),
                                      b.getInt8(0xFF), b.getInt8(0x7F));
    return b.CreateSelect(b.CreateFCmpUNO(v, v), nan, bits);
  }
  const NarrowFormat f = formatOf(t);
  llvm::Value *u = b.CreateBitCast(v, b.getInt32Ty());
  llvm::Value *a = b.CreateAnd(u, i32(0x7FFFFFFF));
  llvm::Value *sign = b.CreateLShr(b.CreateAnd(u, b.getInt32(0x80000000u)),
                                   i32(31 - f.expBits - f.manBits));
  const int sh = f.shift();

  // In the normal range: add the rounding increment (ties to even), rebias, shift.
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(a, i32(sh)), i32(1));
  llvm::Value *rounded = b.CreateAdd(b.CreateAdd(a, i32((1 << (sh - 1)) - 1)), lsb);
  llvm::Value *normal = b.CreateLShr(b.CreateSub(rounded, i32(uint32_t(127 - f.bias()) << 23)),
                                     i32(sh));
  // Below it: one f32 addition of a power of two lines the quantum of the narrow
  // subnormals up with the last f32 mantissa bit and rounds to nearest even.
  const uint32_t magic = uint32_t(127 - f.bias() + sh + 1) << 23;
  llvm::Value *sum = b.CreateFAdd(b.CreateBitCast(a, b.getFloatTy()),
                                  b.CreateBitCast(i32(magic), b.getFloatTy()));
  llvm::Value *sub = b.CreateSub(b.CreateBitCast(sum, b.getInt32Ty()), i32(magic));
  const uint32_t minNormal = uint32_t(127 + 1 - f.bias()) << 23;
  llvm::Value *res = b.CreateSelect(b.CreateICmpULT(a, i32(minNormal)), sub, normal);

  // Too large: infinity (f16, bf16) or the largest finite value (f8).
  if (f.saturate) {
    llvm::Value *big = b.CreateICmpUGT(a, i32(f.maxFiniteF32()));
    res = b.CreateSelect(big, i32(f.maxFiniteBits()), res);
    if (keepInf && !f.e4m3fn)
      res = b.CreateSelect(b.CreateICmpEQ(a, i32(0x7F800000)), i32(f.infBits()), res);
  } else {
    const uint32_t midpoint = f.maxFiniteF32() + (1u << (sh - 1));
    res = b.CreateSelect(b.CreateICmpUGE(a, i32(midpoint)), i32(f.infBits()), res);
  }
  // NaN keeps the top payload bits (or becomes the quiet NaN when they are zero). They
  // are read from the raw bits `u`, not from `a`: LLVM turns `a` into the bits of
  // fabs(v), and PTX's abs.f32 on sm_90 returns the canonical NaN, payload lost.
  llvm::Value *nan;
  if (f.e4m3fn) {
    nan = i32(f.expMask() << f.manBits | f.manMask());
  } else {
    llvm::Value *payload = b.CreateAnd(b.CreateLShr(u, i32(sh)), i32(f.manMask()));
    payload = b.CreateSelect(b.CreateICmpEQ(payload, i32(0)), i32(1u << (f.manBits - 1)), payload);
    nan = b.CreateOr(i32(f.infBits()), payload);
  }
  res = b.CreateSelect(b.CreateICmpUGT(a, i32(0x7F800000)), nan, res);
  return b.CreateTrunc(b.CreateOr(res, sign), bitsTy);
}

llvm::Value *Lowering::decodeNarrow(DType t, llvm::Value *bits) {
  if (t == DType::BF16) // the top half of an f32, exactly
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), i32(16)),
                           b.getFloatTy());
  if (nvptx && t == DType::F16)
    return b.CreateFPExt(b.CreateBitCast(bits, b.getHalfTy()), b.getFloatTy());
  const NarrowFormat f = formatOf(t);
  const int sh = f.shift();
  llvm::Value *x = b.CreateZExt(bits, b.getInt32Ty());
  llvm::Value *sign = b.CreateShl(b.CreateAnd(b.CreateLShr(x, i32(f.expBits + f.manBits)), i32(1)),
                                  i32(31));
  llvm::Value *e = b.CreateAnd(b.CreateLShr(x, i32(f.manBits)), i32(f.expMask()));
  llvm::Value *m = b.CreateAnd(x, i32(f.manMask()));
  llvm::Value *normal = b.CreateOr(b.CreateShl(b.CreateAdd(e, i32(127 - f.bias())), i32(23)),
                                   b.CreateShl(m, i32(sh)));
  // Subnormals: m * 2^(1 - bias - manBits), exact in f32.
  llvm::Value *subF = b.CreateFMul(b.CreateUIToFP(m, b.getFloatTy()),
                                   f32(std::ldexp(1.0, 1 - f.bias() - f.manBits)));
  llvm::Value *sub = b.CreateBitCast(subF, b.getInt32Ty());
  llvm::Value *mag = b.CreateSelect(b.CreateICmpEQ(e, i32(0)), sub, normal);
  if (f.e4m3fn) {
    llvm::Value *isNan = b.CreateICmpEQ(b.CreateAnd(x, i32(0x7F)), i32(0x7F));
    mag = b.CreateSelect(isNan, i32(0x7FC00000), mag);
  } else {
    llvm::Value *special = b.CreateOr(i32(0x7F800000), b.CreateShl(m, i32(sh)));
    mag = b.CreateSelect(b.CreateICmpEQ(e, i32(f.expMask())), special, mag);
  }
  return b.CreateBitCast(b.CreateOr(mag, sign), b.getFloatTy());
}

llvm::Value *Lowering::roundToDType(DType t, llvm::Value *v) {
  if (t == DType::F32 || t == DType::F64 || !isFloat(t))
    return v;
  if (nvptx && t == DType::F16)
    return b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), b.getFloatTy());
  if (nvptx && t == DType::BF16)
    return b.CreateFPExt(b.CreateFPTrunc(v, b.getBFloatTy()), b.getFloatTy());
  llvm::Value *bits = encodeNarrow(t, v, /*keepInf=*/false);
  llvm::Value *rounded = decodeNarrow(t, bits);
  narrowBits[rounded] = {t, bits};
  return rounded;
}

llvm::Value *Lowering::narrowBitsOf(DType t, llvm::Value *v) const {
  auto it = narrowBits.find(v);
  return it != narrowBits.end() && it->second.first == t ? it->second.second : nullptr;
}

llvm::Value *Lowering::f64ToF32Odd(llvm::Value *d) {
  llvm::Value *t = b.CreateFPTrunc(d, b.getFloatTy());
  llvm::Value *back = b.CreateFPExt(t, b.getDoubleTy());
  // Inexact and even: step to the odd neighbour on the side of the exact value.
  llvm::Value *inexact = b.CreateFCmpONE(back, d);
  llvm::Value *bits = b.CreateBitCast(t, b.getInt32Ty());
  llvm::Value *even = b.CreateICmpEQ(b.CreateAnd(bits, i32(1)), i32(0));
  llvm::Value *absBack = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back);
  llvm::Value *absD = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d);
  llvm::Value *up = b.CreateFCmpOLT(absBack, absD);
  llvm::Value *stepped = b.CreateSelect(up, b.CreateAdd(bits, i32(1)), b.CreateSub(bits, i32(1)));
  llvm::Value *res = b.CreateSelect(b.CreateAnd(inexact, even), stepped, bits);
  return b.CreateBitCast(res, b.getFloatTy());
}

} // namespace kiln::codegen::detail
