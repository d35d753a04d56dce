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
#include "support/ScalarArithmetic.h"

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

// The arithmetic of one element of each dtype is support/ScalarArithmetic.h.

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
