//===- Scalar.h - Element-level semantics shared by the op handlers -*- C++ -*-===//
//
// The rules of Ops.def for single elements: how a dtype's values are ordered, the
// NaN-ignoring minimum/maximum, float arithmetic "computed in f32 and rounded once",
// wrapping integer arithmetic, and conversions. Elementwise ops, reductions, atomics
// and dot all use these so that they agree to the bit.
//
// This header is private to ir/interp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/interp/Machine.h"
#include "support/FloatFormats.h"

#include <cmath>
#include <cstdint>

namespace kiln::interp::detail {

/// How the values of a dtype sit in a Slot.
enum class Repr : uint8_t {
  Signed,   ///< signed integers, sign-extended in `i`
  Unsigned, ///< unsigned integers and bool, zero-extended in `i` (u64: its bit pattern)
  Float,    ///< floats in `f`
  Pointer,  ///< packed pointers in `i`
};

inline Repr reprOf(const Type &t) {
  if (t.pointer)
    return Repr::Pointer;
  if (isFloat(t.dtype))
    return Repr::Float;
  return isSigned(t.dtype) ? Repr::Signed : Repr::Unsigned;
}

//===--------------------------------------------------------------------===//
// Floats
//===--------------------------------------------------------------------===//

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

//===--------------------------------------------------------------------===//
// Integers
//===--------------------------------------------------------------------===//

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

/// a < b in the order of representation `r` (floats: IEEE, false on NaN).
inline bool slotLess(Repr r, Slot a, Slot b) {
  switch (r) {
  case Repr::Signed:
    return a.i < b.i;
  case Repr::Unsigned:
    return uint64_t(a.i) < uint64_t(b.i);
  case Repr::Float:
    return a.f < b.f;
  case Repr::Pointer: {
    size_t ba = pointerBuffer(a.i), bb = pointerBuffer(b.i);
    return ba != bb ? ba < bb : pointerOffset(a.i) < pointerOffset(b.i);
  }
  }
  return false;
}
inline bool slotEqual(Repr r, Slot a, Slot b) { return r == Repr::Float ? a.f == b.f : a.i == b.i; }

//===--------------------------------------------------------------------===//
// Combining two values of one dtype (reductions, scans, atomics)
//===--------------------------------------------------------------------===//

inline Slot addSlots(DType t, Slot a, Slot b) {
  if (isFloat(t))
    return floatSlot(floatApply2(t, a.f, b.f, [](auto x, auto y) { return x + y; }));
  return intSlot(intAdd(t, a.i, b.i));
}
inline Slot mulSlots(DType t, Slot a, Slot b) {
  if (isFloat(t))
    return floatSlot(floatApply2(t, a.f, b.f, [](auto x, auto y) { return x * y; }));
  return intSlot(intMul(t, a.i, b.i));
}
/// Maximum (`wantMax`) or minimum; floats ignore NaN (the result is NaN only when both
/// are NaN).
inline Slot extremumSlots(Repr r, bool wantMax, Slot a, Slot b) {
  if (r == Repr::Float)
    return floatSlot(wantMax ? maxNum(a.f, b.f) : minNum(a.f, b.f));
  bool aWins = wantMax ? slotLess(r, b, a) : slotLess(r, a, b);
  return aWins || slotEqual(r, a, b) ? a : b;
}

//===--------------------------------------------------------------------===//
// Conversions
//===--------------------------------------------------------------------===//

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

/// Converts one element from `from` to `to` (neither a pointer) with the cast rules.
inline Slot convertSlot(DType from, DType to, Slot v) {
  if (isFloat(from)) {
    if (isFloat(to))
      return floatSlot(roundToFloatDType(to, v.f));
    return intSlot(floatToIntDType(to, v.f)); // bool: != 0
  }
  if (isFloat(to))
    return floatSlot(intToFloatDType(to, v.i, !isSigned(from)));
  return intSlot(wrapToIntDType(to, v.i));
}

/// The bits an element has in memory (zero-extended), e.g. for bitcast and CAS.
uint64_t storageBits(DType t, Slot v);
/// Inverse of storageBits.
Slot fromStorageBits(DType t, uint64_t bits);

} // namespace kiln::interp::detail
