//===- ScalarArithmetic.h - One element's arithmetic, as Kiln defines it -*- C++ -*-===//
//
// The rules of Ops.def for single values that more than one layer evaluates: the
// interpreter (ir/interp/Scalar.h builds every elementwise op on these) and the runtime,
// which evaluates a graph bundle's scalar program (runtime/GraphPlan.cpp) where no
// compiler is installed. One definition, so that a graph's grids and offsets come out
// the same on both.
//
//   * floats: "computed in f32 and rounded once" for the narrow formats, NaN-ignoring
//     minimum/maximum with -0 below +0;
//   * integers: wrapping arithmetic at the dtype's width, truncating division with
//     x / 0 = 0 and x % 0 = 0 (no value traps);
//   * integer to float conversion with a single rounding.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/FloatFormats.h"

#include <cmath>
#include <cstdint>

namespace kiln {

/// IEEE maxNum/minNum: a NaN operand yields the other one. -0 orders below +0 so the
/// result does not depend on operand order.
template <typename T> inline T maxNum(T a, T b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename T> inline T minNum(T a, T b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// Applies `f` (a generic callable) in the arithmetic of float dtype `t`: double for
/// f64, float for f32 and for the narrow formats, whose f32 result is then rounded.
template <typename F> inline double floatApply2(DType t, double a, double b, F f) {
  if (t == DType::F64)
    return f(a, b);
  float r = f(static_cast<float>(a), static_cast<float>(b));
  return t == DType::F32 ? double(r) : roundToFloatDType(t, double(r));
}
template <typename F> inline double floatApply1(DType t, double a, F f) {
  if (t == DType::F64)
    return f(a);
  float r = f(static_cast<float>(a));
  return t == DType::F32 ? double(r) : roundToFloatDType(t, double(r));
}

inline int64_t intAdd(DType t, int64_t a, int64_t b) {
  return wrapToIntDType(t, static_cast<int64_t>(uint64_t(a) + uint64_t(b)));
}
inline int64_t intSub(DType t, int64_t a, int64_t b) {
  return wrapToIntDType(t, static_cast<int64_t>(uint64_t(a) - uint64_t(b)));
}
inline int64_t intMul(DType t, int64_t a, int64_t b) {
  return wrapToIntDType(t, static_cast<int64_t>(uint64_t(a) * uint64_t(b)));
}
/// Truncating division; x / 0 = 0; INT_MIN / -1 wraps to INT_MIN.
inline int64_t intDiv(DType t, bool isSignedType, int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (!isSignedType)
    return wrapToIntDType(t, static_cast<int64_t>(uint64_t(a) / uint64_t(b)));
  if (b == -1) // avoids the INT64_MIN / -1 trap; narrower minima wrap back
    return intSub(t, 0, a);
  return wrapToIntDType(t, a / b);
}
/// C remainder (sign of the dividend); x % 0 = 0.
inline int64_t intRem(DType t, bool isSignedType, int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (!isSignedType)
    return wrapToIntDType(t, static_cast<int64_t>(uint64_t(a) % uint64_t(b)));
  if (b == -1)
    return 0;
  return wrapToIntDType(t, a % b);
}

/// An integer (signed value, or unsigned bit pattern when `isUnsigned`) converted to
/// float dtype `t` with a single round-to-nearest-even. Integers wider than double's
/// 53 bits are first rounded to odd at 53 bits, which makes the second rounding to at
/// most 24 bits exact-as-if-once.
inline double intToFloatDType(DType t, int64_t v, bool isUnsigned) {
  bool negative = !isUnsigned && v < 0;
  uint64_t mag = negative ? 0 - uint64_t(v) : uint64_t(v);
  if (t == DType::F64)
    return negative ? -double(mag) : double(mag);
  double d;
  if (mag < (uint64_t(1) << 53)) {
    d = double(mag);
  } else {
    int shift = 64 - __builtin_clzll(mag) - 53;
    uint64_t kept = mag >> shift;
    if (mag & ((uint64_t(1) << shift) - 1))
      kept |= 1; // sticky bit: round to odd
    d = std::ldexp(double(kept), shift);
  }
  return roundToFloatDType(t, negative ? -d : d);
}

} // namespace kiln
