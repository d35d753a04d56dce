//===- Convert.cpp - Comparisons, select, casts and bitcasts --------------===//
//
// The elementwise ops whose result type differs from their operands': cmp produces
// bool, select picks between two tiles, cast converts values with the saturating
// rules of Ops.def and bitcast reinterprets the bits an element has in memory.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

#include <cmath>
#include <cstring>

namespace kiln::interp::detail {

//===--------------------------------------------------------------------===//
// Storage bits
//===--------------------------------------------------------------------===//

uint64_t storageBits(DType t, Slot v) {
  switch (t) {
  case DType::Bool:
    return v.i != 0;
  case DType::I8:
  case DType::U8:
    return uint64_t(v.i) & 0xFF;
  case DType::I16:
  case DType::U16:
    return uint64_t(v.i) & 0xFFFF;
  case DType::I32:
  case DType::U32:
    return uint64_t(v.i) & 0xFFFFFFFF;
  case DType::I64:
  case DType::U64:
    return uint64_t(v.i);
  case DType::F8E4M3:
    return doubleToF8E4M3Bits(v.f);
  case DType::F8E5M2:
    // An infinity already in the slot (loaded or bitcast) keeps its encoding; the
    // saturating conversion is for rounding results, not for storing values.
    if (std::isinf(v.f))
      return v.f > 0 ? 0x7C : 0xFC;
    return doubleToF8E5M2Bits(v.f);
  case DType::F16:
    return doubleToF16Bits(v.f);
  case DType::BF16:
    return doubleToBF16Bits(v.f);
  case DType::F32: {
    if (std::isnan(v.f)) {
      // By hand: the hardware conversion would quieten a signalling NaN.
      uint64_t d;
      std::memcpy(&d, &v.f, sizeof d);
      uint32_t man = uint32_t((d >> 29) & 0x7FFFFF);
      return uint32_t(d >> 63) << 31 | 0x7F800000u | (man ? man : 0x400000u);
    }
    float f = static_cast<float>(v.f);
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  }
  case DType::F64: {
    uint64_t b;
    std::memcpy(&b, &v.f, sizeof b);
    return b;
  }
  }
  return 0;
}

Slot fromStorageBits(DType t, uint64_t bits) {
  switch (t) {
  case DType::Bool:
    return intSlot(bits != 0);
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::U32:
  case DType::I64:
  case DType::U64:
    return intSlot(wrapToIntDType(t, static_cast<int64_t>(bits)));
  case DType::F8E4M3:
    return floatSlot(f8E4M3BitsToDouble(uint8_t(bits)));
  case DType::F8E5M2:
    return floatSlot(f8E5M2BitsToDouble(uint8_t(bits)));
  case DType::F16:
    return floatSlot(f16BitsToDouble(uint16_t(bits)));
  case DType::BF16:
    return floatSlot(bf16BitsToDouble(uint16_t(bits)));
  case DType::F32: {
    uint32_t b = uint32_t(bits);
    if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu)) {
      // A NaN, widened by hand so that a signalling payload is kept as it is.
      uint64_t d = uint64_t(b >> 31) << 63 | uint64_t(0x7FF) << 52 | uint64_t(b & 0x7FFFFF) << 29;
      double v;
      std::memcpy(&v, &d, sizeof v);
      return floatSlot(v);
    }
    float f;
    std::memcpy(&f, &b, sizeof f);
    return floatSlot(f);
  }
  case DType::F64: {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return floatSlot(d);
  }
  }
  return intSlot(0);
}

//===--------------------------------------------------------------------===//
// cmp and select
//===--------------------------------------------------------------------===//

template <typename F>
static void cmpLoop(const TileData &a, const TileData &b, TileData &out, F pred) {
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    out[i].i = pred(a[i], b[i]) ? 1 : 0;
}

void execCmp(Machine &m, const PreparedOp &op) {
  const Repr r = reprOf(m.inType(op, 0));
  const TileData &a = m.in(op, 0), &b = m.in(op, 1);
  TileData &out = m.out(op);
  // Every predicate is built from "less" and "equal", both false on NaN, so the float
  // comparisons are ordered and only `ne` is true on NaN.
  auto less = [r](Slot x, Slot y) { return slotLess(r, x, y); };
  auto equal = [r](Slot x, Slot y) { return slotEqual(r, x, y); };
  switch (static_cast<CmpPred>(op.sub)) {
  case CmpPred::Eq:
    return cmpLoop(a, b, out, equal);
  case CmpPred::Ne:
    return cmpLoop(a, b, out, [&](Slot x, Slot y) { return !equal(x, y); });
  case CmpPred::Lt:
    return cmpLoop(a, b, out, less);
  case CmpPred::Le:
    return cmpLoop(a, b, out, [&](Slot x, Slot y) { return less(x, y) || equal(x, y); });
  case CmpPred::Gt:
    return cmpLoop(a, b, out, [&](Slot x, Slot y) { return less(y, x); });
  case CmpPred::Ge:
    return cmpLoop(a, b, out, [&](Slot x, Slot y) { return less(y, x) || equal(x, y); });
  }
}

void execSelect(Machine &m, const PreparedOp &op) {
  const TileData &c = m.in(op, 0), &a = m.in(op, 1), &b = m.in(op, 2);
  TileData &out = m.out(op);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    out[i] = c[i].i ? a[i] : b[i];
}

//===--------------------------------------------------------------------===//
// cast and bitcast
//===--------------------------------------------------------------------===//

void execCast(Machine &m, const PreparedOp &op) {
  const Type &inT = m.inType(op, 0), &outT = m.outType(op);
  kiln_assert(!inT.pointer && !outT.pointer, "cast of pointers");
  const DType from = inT.dtype, to = outT.dtype;
  const TileData &a = m.in(op, 0);
  TileData &out = m.out(op);
  const size_t n = out.size();
  // The class of conversion is decided once; the loops only do the arithmetic.
  if (isFloat(from) && isFloat(to)) {
    for (size_t i = 0; i < n; ++i)
      out[i].f = roundToFloatDType(to, a[i].f);
  } else if (isFloat(from)) {
    for (size_t i = 0; i < n; ++i)
      out[i].i = floatToIntDType(to, a[i].f);
  } else if (isFloat(to)) {
    const bool isUnsigned = !isSigned(from);
    for (size_t i = 0; i < n; ++i)
      out[i].f = intToFloatDType(to, a[i].i, isUnsigned);
  } else {
    for (size_t i = 0; i < n; ++i)
      out[i].i = wrapToIntDType(to, a[i].i);
  }
}

void execBitcast(Machine &m, const PreparedOp &op) {
  const Type &inT = m.inType(op, 0), &outT = m.outType(op);
  kiln_assert(!inT.pointer && !outT.pointer, "bitcast of pointers");
  kiln_assert(dtypeBits(inT.dtype) == dtypeBits(outT.dtype), "bitcast between widths");
  const TileData &a = m.in(op, 0);
  TileData &out = m.out(op);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    out[i] = fromStorageBits(outT.dtype, storageBits(inT.dtype, a[i]));
}

} // namespace kiln::interp::detail
