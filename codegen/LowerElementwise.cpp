//===- LowerElementwise.cpp - Arithmetic, math, comparisons and select ----===//
//
// Elementwise ops keep their operands' layout, so each register is computed from the
// same register of every operand. The per-element semantics follow ir/Ops.def exactly:
// integers wrap, integer division by zero gives 0 (and INT_MIN / -1 wraps instead of
// trapping), out-of-range shifts give 0 or the sign fill, float minimum/maximum ignore
// NaN with -0 ordered below +0, and f16/bf16/f8 compute in f32 and round once. Math
// functions call libdevice (NVPTX) or the OpenCL built-ins (SPIR-V); sqrt, division,
// fma, floor and ceil are the correctly rounded instructions.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

/// Calls the library function for math op `kind` on f32 (or f64) arguments.
static llvm::Value *libraryCall(Lowering &L, OpKind kind, bool isDouble, Values args) {
  llvm::Type *ty = isDouble ? L.b.getDoubleTy() : L.b.getFloatTy();
  return L.callBuiltin(L.mathName(kind, isDouble), ty, std::move(args));
}

bool Lowering::hardwareMinMax(llvm::Type *ty) const {
  // PTX's max.f32 and min.f32 ignore a NaN operand and order -0 below +0 (both
  // operand orders give +0 for max and -0 for min on the H200), which is exactly
  // Kiln's maximum/minimum: one instruction, where a max combining a row would
  // otherwise carry a compare and a select per element on its dependent chain.
  return nvptx && ty->isFloatTy();
}

llvm::Value *Lowering::emitMinMax(DType t, bool wantMax, llvm::Value *a, llvm::Value *c) {
  if (!isFloat(t)) {
    llvm::Intrinsic::ID id;
    if (isSigned(t))
      id = wantMax ? llvm::Intrinsic::smax : llvm::Intrinsic::smin;
    else
      id = wantMax ? llvm::Intrinsic::umax : llvm::Intrinsic::umin;
    return b.CreateBinaryIntrinsic(id, a, c);
  }
  if (hardwareMinMax(a->getType()))
    return b.CreateIntrinsic(wantMax ? llvm::Intrinsic::nvvm_fmax_f : llvm::Intrinsic::nvvm_fmin_f,
                             llvm::ArrayRef<llvm::Value *>{a, c});
  // maxNum/minNum ignore a NaN operand. For equal operands (only +0 and -0 differ)
  // the bits decide: max keeps +0 (AND of the sign bits), min keeps -0 (OR).
  llvm::Value *r = b.CreateBinaryIntrinsic(wantMax ? llvm::Intrinsic::maxnum
                                                   : llvm::Intrinsic::minnum,
                                           a, c);
  llvm::Type *bitsTy = t == DType::F64 ? b.getInt64Ty() : b.getInt32Ty();
  llvm::Value *ba = b.CreateBitCast(a, bitsTy), *bc = b.CreateBitCast(c, bitsTy);
  llvm::Value *both = wantMax ? b.CreateAnd(ba, bc) : b.CreateOr(ba, bc);
  return b.CreateSelect(b.CreateFCmpOEQ(a, c), b.CreateBitCast(both, a->getType()), r);
}

llvm::Value *Lowering::emitBinary(const ir::Op *op, OpKind kind, DType t, llvm::Value *a,
                                  llvm::Value *c) {
  if (isFloat(t)) {
    llvm::Value *r = nullptr;
    if (kind == OpKind::Add)
      r = b.CreateFAdd(a, c);
    else if (kind == OpKind::Sub)
      r = b.CreateFSub(a, c);
    else if (kind == OpKind::Mul)
      r = b.CreateFMul(a, c);
    else if (kind == OpKind::Div)
      r = b.CreateFDiv(a, c);
    else if (kind == OpKind::Rem || kind == OpKind::Pow)
      r = libraryCall(*this, kind, t == DType::F64, {a, c});
    else if (kind == OpKind::Minimum || kind == OpKind::Maximum)
      return emitMinMax(t, kind == OpKind::Maximum, a, c);
    else if (op)
      unsupported(*op, std::string("'") + op->mnemonic() + "' on floats");
    else
      KILN_ICE("codegen: float binary op without a float form");
    return roundToDType(t, r);
  }

  const unsigned bits = dtypeBits(t);
  const bool sgn = isSigned(t);
  llvm::Type *ty = a->getType();
  llvm::Value *zero = llvm::ConstantInt::get(ty, 0);
  if (kind == OpKind::Add)
    return b.CreateAdd(a, c);
  if (kind == OpKind::Sub)
    return b.CreateSub(a, c);
  if (kind == OpKind::Mul)
    return b.CreateMul(a, c);
  if (kind == OpKind::Div || kind == OpKind::Rem) {
    // x / 0 = 0 and x % 0 = 0; INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 = 0.
    // Both special divisors are replaced by 1, so the hardware division never sees one
    // that traps or is undefined: x / 1 = x gives INT_MIN, and x % 1 = 0.
    llvm::Value *isZero = b.CreateICmpEQ(c, zero);
    llvm::Value *special = isZero;
    if (sgn) {
      llvm::Value *minA = b.CreateICmpEQ(
          a, llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(bits)));
      llvm::Value *overflow =
          b.CreateAnd(minA, b.CreateICmpEQ(c, llvm::ConstantInt::getSigned(ty, -1)));
      special = b.CreateOr(isZero, overflow);
    }
    llvm::Value *safe = b.CreateSelect(special, llvm::ConstantInt::get(ty, 1), c);
    if (kind == OpKind::Rem)
      return sgn ? b.CreateSRem(a, safe) : b.CreateURem(a, safe);
    llvm::Value *q = sgn ? b.CreateSDiv(a, safe) : b.CreateUDiv(a, safe);
    return b.CreateSelect(isZero, zero, q);
  }
  if (kind == OpKind::And)
    return b.CreateAnd(a, c);
  if (kind == OpKind::Or)
    return b.CreateOr(a, c);
  if (kind == OpKind::Xor)
    return b.CreateXor(a, c);
  if (kind == OpKind::Shl || kind == OpKind::Shr) {
    // Amounts are read unsigned: a negative signed amount is out of range too.
    llvm::Value *bitsC = llvm::ConstantInt::get(ty, bits);
    llvm::Value *inRange = b.CreateICmpULT(c, bitsC);
    llvm::Value *amount = b.CreateSelect(inRange, c, zero);
    if (kind == OpKind::Shl)
      return b.CreateSelect(inRange, b.CreateShl(a, amount), zero);
    if (!sgn)
      return b.CreateSelect(inRange, b.CreateLShr(a, amount), zero);
    llvm::Value *fill = b.CreateAShr(a, llvm::ConstantInt::get(ty, bits - 1));
    return b.CreateSelect(inRange, b.CreateAShr(a, amount), fill);
  }
  if (kind == OpKind::Minimum || kind == OpKind::Maximum)
    return emitMinMax(t, kind == OpKind::Maximum, a, c);
  if (op)
    unsupported(*op, std::string("'") + op->mnemonic() + "' on integers");
  KILN_ICE("codegen: integer binary op without an integer form");
}

llvm::Value *Lowering::emitUnary(const ir::Op *op, OpKind kind, DType t, llvm::Value *a) {
  if (isFloat(t)) {
    const bool dbl = t == DType::F64;
    llvm::Type *ty = a->getType();
    llvm::Value *one = llvm::ConstantFP::get(ty, 1.0);
    llvm::Value *r = nullptr;
    if (kind == OpKind::Neg)
      return b.CreateFNeg(a); // exact in every format
    if (kind == OpKind::Abs)
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
    if (kind == OpKind::Exp2 && (r = fastExp2(a)))
      return roundToDType(t, r);
    if (kind == OpKind::Exp || kind == OpKind::Exp2 || kind == OpKind::Log ||
        kind == OpKind::Log2 || kind == OpKind::Sin || kind == OpKind::Cos ||
        kind == OpKind::Tanh || kind == OpKind::Erf) {
      r = libraryCall(*this, kind, dbl, {a});
    } else if (kind == OpKind::Sqrt) {
      r = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
    } else if (kind == OpKind::Rsqrt) { // 1 / sqrt(x), both correctly rounded
      r = b.CreateFDiv(one, b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
    } else if (kind == OpKind::Sigmoid) {
      llvm::Value *e = libraryCall(*this, OpKind::Exp, dbl, {b.CreateFNeg(a)});
      r = b.CreateFDiv(one, b.CreateFAdd(one, e));
    } else if (kind == OpKind::Floor) {
      r = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a);
    } else if (kind == OpKind::Ceil) {
      r = b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a);
    } else if (op) {
      unsupported(*op, std::string("'") + op->mnemonic() + "' on floats");
    } else {
      KILN_ICE("codegen: float unary op without a float form");
    }
    return roundToDType(t, r);
  }
  llvm::Type *ty = a->getType();
  llvm::Value *zero = llvm::ConstantInt::get(ty, 0);
  if (kind == OpKind::Neg)
    return b.CreateSub(zero, a);
  if (kind == OpKind::Not)
    return b.CreateNot(a);
  if (kind == OpKind::Abs) {
    if (!isSigned(t))
      return a;
    return b.CreateSelect(b.CreateICmpSLT(a, zero), b.CreateSub(zero, a), a);
  }
  if (op)
    unsupported(*op, std::string("'") + op->mnemonic() + "' on integers");
  KILN_ICE("codegen: integer unary op without an integer form");
}

llvm::Value *Lowering::emitCmp(const std::string &pred, const Type &t, llvm::Value *a,
                               llvm::Value *c) {
  if (!t.pointer && isFloat(t.dtype)) {
    // Ordered comparisons (false on NaN), except `ne` which is true on NaN.
    if (pred == "eq")
      return b.CreateFCmpOEQ(a, c);
    if (pred == "ne")
      return b.CreateFCmpUNE(a, c);
    if (pred == "lt")
      return b.CreateFCmpOLT(a, c);
    if (pred == "le")
      return b.CreateFCmpOLE(a, c);
    if (pred == "gt")
      return b.CreateFCmpOGT(a, c);
    return b.CreateFCmpOGE(a, c);
  }
  const bool sgn = !t.pointer && isSigned(t.dtype);
  if (pred == "eq")
    return b.CreateICmpEQ(a, c);
  if (pred == "ne")
    return b.CreateICmpNE(a, c);
  if (pred == "lt")
    return sgn ? b.CreateICmpSLT(a, c) : b.CreateICmpULT(a, c);
  if (pred == "le")
    return sgn ? b.CreateICmpSLE(a, c) : b.CreateICmpULE(a, c);
  if (pred == "gt")
    return sgn ? b.CreateICmpSGT(a, c) : b.CreateICmpUGT(a, c);
  return sgn ? b.CreateICmpSGE(a, c) : b.CreateICmpUGE(a, c);
}

llvm::Value *Lowering::combine(ReduceKind kind, DType t, llvm::Value *acc, llvm::Value *x,
                               const ir::Block *region) {
  switch (kind) {
  case ReduceKind::Sum:
    return emitBinary(nullptr, OpKind::Add, t, acc, x);
  case ReduceKind::Prod:
    return emitBinary(nullptr, OpKind::Mul, t, acc, x);
  case ReduceKind::Max:
    return emitMinMax(t, true, acc, x);
  case ReduceKind::Min:
    return emitMinMax(t, false, acc, x);
  case ReduceKind::Custom:
    return inlineCombiner(*region, acc, x);
  }
  return acc;
}

llvm::Value *Lowering::emitElementwise(const ir::Op &op, const Values &args) {
  const Type &t = op.operand(0)->type;
  const Type &rt = op.result()->type;
  if (op.kind() == OpKind::Cmp)
    return emitCmp(op.stringAttr("pred"), t, args[0], args[1]);
  if (op.kind() == OpKind::Select)
    return b.CreateSelect(args[0], args[1], args[2]);
  if (op.kind() == OpKind::Fma)
    return roundToDType(rt.dtype, b.CreateIntrinsic(llvm::Intrinsic::fma, {args[0]->getType()},
                                                    {args[0], args[1], args[2]}));
  if (op.numOperands() == 2)
    return emitBinary(&op, op.kind(), t.dtype, args[0], args[1]);
  return emitUnary(&op, op.kind(), t.dtype, args[0]);
}

/// True when every chunk of `v`'s registers holds one value: the axis analysis proves
/// the last axis constant in runs the chunks fit in (chunks start at multiples of `vec`
/// within a row when `vec` divides the row).
static bool constantPerChunk(const Lowering &L, const ir::Value *v, const Layout &l) {
  const Type &t = v->type;
  if (t.isScalar() || l.vec == 1 || t.shape.back() % l.vec != 0)
    return false;
  const AxisInfo &info = L.axis.info(v);
  return info.rank() == t.rank() && info.constancy.back() % l.vec == 0;
}

void Lowering::lowerElementwise(const ir::Op &op) {
  const Layout l = layoutOf(op.result()->type);
  const int64_t n = l.numRegs();
  // A result constant over each chunk (a mask `cols < n` with n a multiple of the
  // chunk, typically) is computed once per chunk and copied to the chunk's other
  // registers: the computations that fed only those become dead, and a `where` on the
  // mask then tests one predicate per chunk instead of one per element.
  const bool perChunk = constantPerChunk(*this, op.result(), l);
  std::vector<const Regs *> in;
  for (const ir::Value *v : op.operands())
    in.push_back(&get(v));
  Regs out;
  out.v.reserve(n);
  Values args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    if (perChunk && i % l.vec != 0) {
      out.v.push_back(out.v[i - i % l.vec]);
      continue;
    }
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = in[k]->v[i];
    out.v.push_back(emitElementwise(op, args));
  }
  set(op.result(), std::move(out));
}

} // namespace kiln::codegen::detail
