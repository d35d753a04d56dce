//===- TypeRules.cpp - Promotion, broadcasting and conversion rules ------===//
//
// Implements the tables of docs/language.md. Every function is total over DType so
// that a new dtype in ir/Type.h is caught by -Wswitch here.
//
//===----------------------------------------------------------------------===//
#include "frontend/TypeRules.h"

#include <algorithm>
#include <limits>

namespace kiln::sema {

static bool isF8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

static DType promoteFloats(DType a, DType b) {
  if (a == b)
    return a;
  // The two 8-bit formats have no common 8-bit superset; f16 holds both exactly.
  if (isF8(a) && isF8(b))
    return DType::F16;
  // f16 and bf16 trade range for precision; only f32 holds both.
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
    return DType::F32;
  return dtypeBits(a) >= dtypeBits(b) ? a : b;
}

static DType promoteIntegers(DType a, DType b) {
  if (a == b)
    return a;
  if (isBool(a))
    return b;
  if (isBool(b))
    return a;
  bool sa = isSigned(a), sb = isSigned(b);
  unsigned wa = dtypeBits(a), wb = dtypeBits(b);
  if (sa == sb)
    return wa >= wb ? a : b;
  // C's rule for mixed signedness: the unsigned type wins when it is at least as wide.
  DType u = sa ? b : a, s = sa ? a : b;
  return dtypeBits(u) >= dtypeBits(s) ? u : s;
}

DType promoteDTypes(DType a, DType b) {
  bool fa = isFloat(a), fb = isFloat(b);
  if (fa && fb)
    return promoteFloats(a, b);
  if (fa)
    return a;
  if (fb)
    return b;
  return promoteIntegers(a, b);
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Walk from the trailing dimension; a missing leading dimension counts as 1.
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  auto common = broadcastShapes(from, to);
  return common && *common == to;
}

bool isLosslessConversion(DType from, DType to) { return promoteDTypes(from, to) == to; }

bool intFitsDType(int64_t value, bool valueIsU64, DType t) {
  // A u64 pattern above INT64_MAX fits only the 64-bit unsigned type (and floats).
  if (valueIsU64 && value < 0)
    return t == DType::U64 || isFloat(t);
  switch (t) {
  case DType::Bool: return value == 0 || value == 1;
  case DType::I8:
    return value >= std::numeric_limits<int8_t>::min() &&
           value <= std::numeric_limits<int8_t>::max();
  case DType::I16:
    return value >= std::numeric_limits<int16_t>::min() &&
           value <= std::numeric_limits<int16_t>::max();
  case DType::I32:
    return value >= std::numeric_limits<int32_t>::min() &&
           value <= std::numeric_limits<int32_t>::max();
  case DType::I64: return true;
  case DType::U8: return value >= 0 && value <= std::numeric_limits<uint8_t>::max();
  case DType::U16: return value >= 0 && value <= std::numeric_limits<uint16_t>::max();
  case DType::U32: return value >= 0 && value <= int64_t(std::numeric_limits<uint32_t>::max());
  case DType::U64: return value >= 0;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64: return true;
  }
  return false;
}

DType sumAccumulatorDType(DType t) {
  switch (t) {
  case DType::Bool:
  case DType::I8:
  case DType::I16: return DType::I32;
  case DType::U8:
  case DType::U16: return DType::U32;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16: return DType::F32;
  case DType::I32:
  case DType::I64:
  case DType::U32:
  case DType::U64:
  case DType::F32:
  case DType::F64: return t;
  }
  return t;
}

std::optional<DType> dotResultDType(DType t) {
  switch (t) {
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32: return DType::F32;
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::U32: return DType::I32;
  case DType::Bool:
  case DType::I64:
  case DType::U64:
  case DType::F64:
    // Ops.def accumulates floats in f32 and integers in i32: 64-bit inputs would be
    // silently narrowed, so they are rejected instead.
    return std::nullopt;
  }
  return std::nullopt;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

} // namespace kiln::sema
