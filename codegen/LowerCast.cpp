//===- LowerCast.cpp - Value conversions and bit reinterpretation ---------===//
//
// cast follows Ops.def: float -> integer truncates toward zero, saturates and maps NaN
// to 0; conversions to floats round once to nearest even (a conversion to a narrow
// format that cannot be done in one instruction first rounds to odd at a wider
// precision, which makes the final rounding exact-as-if-once); anything -> bool is
// `!= 0`. bitcast goes through the bits an element has in memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <cmath>
#include <limits>

namespace kiln::codegen::detail {

static bool isNarrowFloat(DType t) {
  return isFloat(t) && t != DType::F32 && t != DType::F64;
}

/// Integer range of dtype `t` as doubles (the bounds the interpreter compares with).
static void intRange(DType t, double &lo, double &hi) {
  switch (t) {
  case DType::I8:
    lo = -128, hi = 127;
    return;
  case DType::I16:
    lo = -32768, hi = 32767;
    return;
  case DType::I32:
    lo = -2147483648.0, hi = 2147483647.0;
    return;
  case DType::I64:
    lo = -9223372036854775808.0, hi = 9223372036854775808.0;
    return;
  case DType::U8:
    lo = 0, hi = 255;
    return;
  case DType::U16:
    lo = 0, hi = 65535;
    return;
  case DType::U32:
    lo = 0, hi = 4294967295.0;
    return;
  case DType::U64:
    lo = 0, hi = 18446744073709551616.0;
    return;
  case DType::Bool:
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
    break;
  }
  KILN_ICE("codegen: integer range of a non-integer dtype");
}

/// A 64-bit integer as f64 rounded to odd at 53 bits (exact below 2^53).
static llvm::Value *i64ToF64Odd(Lowering &L, llvm::Value *v, bool isUnsigned) {
  auto &b = L.b;
  llvm::Value *neg = isUnsigned ? b.getFalse() : b.CreateICmpSLT(v, L.i64(0));
  llvm::Value *mag = isUnsigned ? v : b.CreateSelect(neg, b.CreateSub(L.i64(0), v), v);
  // Bits beyond the top 53 fold into a sticky last bit; the scaled value is exact.
  llvm::Value *lz = b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, mag, b.getFalse());
  llvm::Value *shift = b.CreateSub(L.i64(64 - 53), lz);
  llvm::Value *big = b.CreateICmpSGT(shift, L.i64(0));
  llvm::Value *s = b.CreateSelect(big, shift, L.i64(0));
  llvm::Value *kept = b.CreateLShr(mag, s);
  llvm::Value *lost = b.CreateAnd(mag, b.CreateSub(b.CreateShl(L.i64(1), s), L.i64(1)));
  kept = b.CreateOr(kept, b.CreateZExt(b.CreateICmpNE(lost, L.i64(0)), b.getInt64Ty()));
  llvm::Value *scale = b.CreateBitCast(b.CreateShl(b.CreateAdd(s, L.i64(1023)), L.i64(52)),
                                       b.getDoubleTy());
  llvm::Value *d = b.CreateFMul(b.CreateUIToFP(kept, b.getDoubleTy()), scale);
  return b.CreateSelect(neg, b.CreateFNeg(d), d);
}

llvm::Value *Lowering::convert(DType from, DType to, llvm::Value *v) {
  if (from == to)
    return v;
  if (isFloat(from) && isFloat(to)) {
    if (to == DType::F64)
      return b.CreateFPExt(v, b.getDoubleTy());
    if (from == DType::F64) {
      if (to == DType::F32)
        return b.CreateFPTrunc(v, b.getFloatTy());
      return roundToDType(to, f64ToF32Odd(v));
    }
    return roundToDType(to, v); // f32 registers: f32 or narrow -> narrow or f32
  }
  if (isFloat(from)) {
    if (to == DType::Bool) // NaN != 0 is true
      return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    double lo, hi;
    intRange(to, lo, hi);
    llvm::Type *fty = v->getType();
    llvm::Type *ity = regTypeOf(to);
    llvm::Value *x = b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, v);
    llvm::Value *flo = llvm::ConstantFP::get(fty, lo), *fhi = llvm::ConstantFP::get(fty, hi);
    llvm::Value *conv = isSigned(to) ? b.CreateFPToSI(x, ity) : b.CreateFPToUI(x, ity);
    uint64_t loBits = isSigned(to) ? uint64_t(int64_t(lo)) : 0;
    uint64_t hiBits = to == DType::U64   ? ~uint64_t(0)
                      : to == DType::I64 ? uint64_t(std::numeric_limits<int64_t>::max())
                                         : uint64_t(hi);
    llvm::Value *r = b.CreateSelect(b.CreateFCmpOGE(x, fhi), llvm::ConstantInt::get(ity, hiBits),
                                    conv);
    r = b.CreateSelect(b.CreateFCmpOLE(x, flo), llvm::ConstantInt::get(ity, loBits), r);
    return b.CreateSelect(b.CreateFCmpUNO(v, v), llvm::ConstantInt::get(ity, 0), r);
  }
  if (isFloat(to)) {
    const bool uns = !isSigned(from);
    if (to == DType::F32 || to == DType::F64) {
      llvm::Type *fty = regTypeOf(to);
      return uns ? b.CreateUIToFP(v, fty) : b.CreateSIToFP(v, fty);
    }
    // Narrow targets: exactly to f64 (rounded to odd beyond 53 bits), then once more.
    llvm::Value *d;
    if (dtypeBits(from) < 64)
      d = uns ? b.CreateUIToFP(v, b.getDoubleTy()) : b.CreateSIToFP(v, b.getDoubleTy());
    else
      d = i64ToF64Odd(*this, v, uns);
    return roundToDType(to, f64ToF32Odd(d));
  }
  // Integer <-> integer (and bool).
  if (to == DType::Bool)
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  llvm::Type *ity = regTypeOf(to);
  const unsigned fb = from == DType::Bool ? 1 : dtypeBits(from), tb = dtypeBits(to);
  if (tb < fb)
    return b.CreateTrunc(v, ity);
  if (tb > fb)
    return isSigned(from) ? b.CreateSExt(v, ity) : b.CreateZExt(v, ity);
  return v;
}

void Lowering::lowerCast(const ir::Op &op) {
  const Type &from = op.operand(0)->type, &to = op.result()->type;
  if (from.pointer || to.pointer)
    unsupported(op, "casts of pointers");
  const Regs &in = get(op.operand(0));
  Regs out;
  for (llvm::Value *v : in.v)
    out.v.push_back(convert(from.dtype, to.dtype, v));
  set(op.result(), std::move(out));
}

void Lowering::lowerBitcast(const ir::Op &op) {
  const DType from = op.operand(0)->type.dtype, to = op.result()->type.dtype;
  if (op.operand(0)->type.pointer || op.result()->type.pointer)
    unsupported(op, "bitcasts of pointers");
  const Regs &in = get(op.operand(0));
  Regs out;
  for (llvm::Value *v : in.v) {
    // To the stored bits (an f8e5m2 infinity keeps its encoding, as in memory) ...
    llvm::Value *bits = v;
    if (isNarrowFloat(from))
      bits = encodeNarrow(from, v, /*keepInf=*/true);
    else if (isFloat(from))
      bits = b.CreateBitCast(v, b.getIntNTy(dtypeBits(from)));
    // ... and from them.
    llvm::Value *r = bits;
    if (isNarrowFloat(to))
      r = decodeNarrow(to, bits);
    else if (isFloat(to))
      r = b.CreateBitCast(bits, regTypeOf(to));
    out.v.push_back(r);
  }
  set(op.result(), std::move(out));
}

} // namespace kiln::codegen::detail
