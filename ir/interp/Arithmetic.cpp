//===- Arithmetic.cpp - Elementwise arithmetic of the interpreter ---------===//
//
// Binary and unary arithmetic and fma over whole tiles. The dtype is dispatched once
// per op; the loops inside are plain and allocation free. Floats compute in double
// for f64 and in float otherwise (so f32 results are exactly the IEEE single ones),
// narrow formats then round the f32 result once. Integers compute in 64 bits and wrap
// back to their dtype.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

#include <cmath>

namespace kiln::interp::detail {

//===--------------------------------------------------------------------===//
// Loops
//===--------------------------------------------------------------------===//

/// out[i] = f(a[i], b[i]) in the arithmetic of float dtype `t` (see floatApply2).
template <typename F>
static void floatMap2(DType t, const TileData &a, const TileData &b, TileData &out, F f) {
  const size_t n = out.size();
  if (t == DType::F64) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = f(a[i].f, b[i].f);
  } else if (t == DType::F32) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = double(f(float(a[i].f), float(b[i].f)));
  } else {
    for (size_t i = 0; i < n; ++i)
      out[i].f = roundToFloatDType(t, double(f(float(a[i].f), float(b[i].f))));
  }
}

template <typename F> static void floatMap1(DType t, const TileData &a, TileData &out, F f) {
  const size_t n = out.size();
  if (t == DType::F64) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = f(a[i].f);
  } else if (t == DType::F32) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = double(f(float(a[i].f)));
  } else {
    for (size_t i = 0; i < n; ++i)
      out[i].f = roundToFloatDType(t, double(f(float(a[i].f))));
  }
}

/// out[i] = f(a[i], b[i]) on integer slots; `f` already returns the wrapped value.
template <typename F>
static void intMap2(const TileData &a, const TileData &b, TileData &out, F f) {
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    out[i].i = f(a[i].i, b[i].i);
}

template <typename F> static void intMap1(const TileData &a, TileData &out, F f) {
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    out[i].i = f(a[i].i);
}

//===--------------------------------------------------------------------===//
// Binary
//===--------------------------------------------------------------------===//

[[noreturn]] static void undefinedOn(const PreparedOp &op, const char *what) {
  KILN_ICE(std::string("interpreter: '") + op.op->mnemonic() + "' is not defined on " + what);
}

static void floatBinary(const PreparedOp &op, DType t, const TileData &a, const TileData &b,
                        TileData &out) {
  switch (static_cast<BinaryKind>(op.sub)) {
  case BinaryKind::Add:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return x + y; });
  case BinaryKind::Sub:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return x - y; });
  case BinaryKind::Mul:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return x * y; });
  case BinaryKind::Div:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return x / y; });
  case BinaryKind::Rem:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return std::fmod(x, y); });
  case BinaryKind::Minimum:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return minNum(x, y); });
  case BinaryKind::Maximum:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return maxNum(x, y); });
  case BinaryKind::Pow:
    return floatMap2(t, a, b, out, [](auto x, auto y) { return std::pow(x, y); });
  case BinaryKind::And:
  case BinaryKind::Or:
  case BinaryKind::Xor:
  case BinaryKind::Shl:
  case BinaryKind::Shr:
    undefinedOn(op, "floats");
  }
}

static void intBinary(const PreparedOp &op, DType t, const TileData &a, const TileData &b,
                      TileData &out) {
  const bool sgn = isSigned(t);
  const Repr r = sgn ? Repr::Signed : Repr::Unsigned;
  const int64_t bits = dtypeBits(t);
  switch (static_cast<BinaryKind>(op.sub)) {
  case BinaryKind::Add:
    return intMap2(a, b, out, [t](int64_t x, int64_t y) { return intAdd(t, x, y); });
  case BinaryKind::Sub:
    return intMap2(a, b, out, [t](int64_t x, int64_t y) { return intSub(t, x, y); });
  case BinaryKind::Mul:
    return intMap2(a, b, out, [t](int64_t x, int64_t y) { return intMul(t, x, y); });
  case BinaryKind::Div:
    return intMap2(a, b, out, [t, sgn](int64_t x, int64_t y) { return intDiv(t, sgn, x, y); });
  case BinaryKind::Rem:
    return intMap2(a, b, out, [t, sgn](int64_t x, int64_t y) { return intRem(t, sgn, x, y); });
  case BinaryKind::And:
    return intMap2(a, b, out, [](int64_t x, int64_t y) { return x & y; });
  case BinaryKind::Or:
    return intMap2(a, b, out, [](int64_t x, int64_t y) { return x | y; });
  case BinaryKind::Xor:
    return intMap2(a, b, out, [](int64_t x, int64_t y) { return x ^ y; });
  case BinaryKind::Shl:
    // An amount outside [0, bits) shifts everything out. Signed amounts are read as
    // signed (negative is out of range), unsigned ones as unsigned.
    return intMap2(a, b, out, [t, sgn, bits](int64_t x, int64_t y) -> int64_t {
      bool inRange = sgn ? (y >= 0 && y < bits) : uint64_t(y) < uint64_t(bits);
      return inRange ? wrapToIntDType(t, static_cast<int64_t>(uint64_t(x) << y)) : 0;
    });
  case BinaryKind::Shr:
    return intMap2(a, b, out, [sgn, bits](int64_t x, int64_t y) -> int64_t {
      if (sgn) // arithmetic: the slot is sign-extended, so the 64-bit shift is exact
        return y >= 0 && y < bits ? x >> y : (x < 0 ? -1 : 0);
      return uint64_t(y) < uint64_t(bits) ? static_cast<int64_t>(uint64_t(x) >> y) : 0;
    });
  case BinaryKind::Minimum:
    return intMap2(a, b, out, [r](int64_t x, int64_t y) {
      return extremumSlots(r, false, intSlot(x), intSlot(y)).i;
    });
  case BinaryKind::Maximum:
    return intMap2(a, b, out, [r](int64_t x, int64_t y) {
      return extremumSlots(r, true, intSlot(x), intSlot(y)).i;
    });
  case BinaryKind::Pow:
    undefinedOn(op, "integers");
  }
}

//===--------------------------------------------------------------------===//
// Unary
//===--------------------------------------------------------------------===//

static void floatUnary(const PreparedOp &op, DType t, const TileData &a, TileData &out) {
  switch (static_cast<UnaryKind>(op.sub)) {
  case UnaryKind::Neg:
    return floatMap1(t, a, out, [](auto x) { return -x; });
  case UnaryKind::Abs:
    return floatMap1(t, a, out, [](auto x) { return std::fabs(x); });
  case UnaryKind::Exp:
    return floatMap1(t, a, out, [](auto x) { return std::exp(x); });
  case UnaryKind::Exp2:
    return floatMap1(t, a, out, [](auto x) { return std::exp2(x); });
  case UnaryKind::Log:
    return floatMap1(t, a, out, [](auto x) { return std::log(x); });
  case UnaryKind::Log2:
    return floatMap1(t, a, out, [](auto x) { return std::log2(x); });
  case UnaryKind::Sqrt:
    return floatMap1(t, a, out, [](auto x) { return std::sqrt(x); });
  case UnaryKind::Rsqrt:
    return floatMap1(t, a, out, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
  case UnaryKind::Sin:
    return floatMap1(t, a, out, [](auto x) { return std::sin(x); });
  case UnaryKind::Cos:
    return floatMap1(t, a, out, [](auto x) { return std::cos(x); });
  case UnaryKind::Tanh:
    return floatMap1(t, a, out, [](auto x) { return std::tanh(x); });
  case UnaryKind::Erf:
    return floatMap1(t, a, out, [](auto x) { return std::erf(x); });
  case UnaryKind::Sigmoid:
    return floatMap1(t, a, out, [](auto x) {
      using T = decltype(x);
      return T(1) / (T(1) + std::exp(-x));
    });
  case UnaryKind::Floor:
    return floatMap1(t, a, out, [](auto x) { return std::floor(x); });
  case UnaryKind::Ceil:
    return floatMap1(t, a, out, [](auto x) { return std::ceil(x); });
  case UnaryKind::Not:
    undefinedOn(op, "floats");
  }
}

static void intUnary(const PreparedOp &op, DType t, const TileData &a, TileData &out) {
  switch (static_cast<UnaryKind>(op.sub)) {
  case UnaryKind::Neg:
    return intMap1(a, out, [t](int64_t x) { return intSub(t, 0, x); });
  case UnaryKind::Not:
    if (t == DType::Bool)
      return intMap1(a, out, [](int64_t x) -> int64_t { return x == 0; });
    return intMap1(a, out, [t](int64_t x) { return wrapToIntDType(t, ~x); });
  case UnaryKind::Abs:
    if (!isSigned(t))
      return intMap1(a, out, [](int64_t x) { return x; });
    return intMap1(a, out, [t](int64_t x) { return x < 0 ? intSub(t, 0, x) : x; });
  case UnaryKind::Exp:
  case UnaryKind::Exp2:
  case UnaryKind::Log:
  case UnaryKind::Log2:
  case UnaryKind::Sqrt:
  case UnaryKind::Rsqrt:
  case UnaryKind::Sin:
  case UnaryKind::Cos:
  case UnaryKind::Tanh:
  case UnaryKind::Erf:
  case UnaryKind::Sigmoid:
  case UnaryKind::Floor:
  case UnaryKind::Ceil:
    undefinedOn(op, "integers");
  }
}

//===--------------------------------------------------------------------===//
// Entry points
//===--------------------------------------------------------------------===//

void execBinary(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  TileData &out = m.out(op);
  if (isFloat(t))
    floatBinary(op, t, m.in(op, 0), m.in(op, 1), out);
  else
    intBinary(op, t, m.in(op, 0), m.in(op, 1), out);
}

void execUnary(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  TileData &out = m.out(op);
  if (isFloat(t))
    floatUnary(op, t, m.in(op, 0), out);
  else
    intUnary(op, t, m.in(op, 0), out);
}

void execFma(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  if (!isFloat(t))
    undefinedOn(op, "integers");
  TileData &out = m.out(op);
  const TileData &a = m.in(op, 0), &b = m.in(op, 1), &c = m.in(op, 2);
  const size_t n = out.size();
  if (t == DType::F64) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = std::fma(a[i].f, b[i].f, c[i].f);
    return;
  }
  // Rounded once in f32 (fmaf), then to the narrow dtype like every f16/bf16/f8 op.
  for (size_t i = 0; i < n; ++i) {
    float r = std::fma(float(a[i].f), float(b[i].f), float(c[i].f));
    out[i].f = t == DType::F32 ? double(r) : roundToFloatDType(t, double(r));
  }
}

} // namespace kiln::interp::detail
