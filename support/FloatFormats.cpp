//===- FloatFormats.cpp - Narrow float formats: f16, bf16, f8 -------------===//
//
// One generic encoder and decoder, parameterised by a format description, implement
// all four narrow formats. Encoding rounds directly from double (never through float)
// so a value is rounded exactly once, which is what the interpreter's "round once in
// the result dtype" rule needs.
//
//===----------------------------------------------------------------------===//
#include "support/FloatFormats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln {

namespace {

/// What happens to values beyond the largest finite one.
enum class Overflow {
  ToInfinity, ///< IEEE: f16, bf16
  Saturate,   ///< OCP f8 with .satfinite: clamp to the largest finite value
};

/// A binary floating-point format narrower than double.
struct Format {
  int expBits;
  int manBits;
  bool hasInfinity; ///< exponent all ones + mantissa 0 is infinity
  bool e4m3fnStyle; ///< the all-ones exponent holds normals; only S.1111.111 is NaN
  Overflow overflow;

  int bias() const { return (1 << (expBits - 1)) - 1; }
  int maxBiasedExp() const { return (1 << expBits) - 1; }
  /// Largest unbiased exponent of a finite value.
  int emax() const { return e4m3fnStyle ? maxBiasedExp() - bias() : maxBiasedExp() - 1 - bias(); }
  int emin() const { return 1 - bias(); }
  uint32_t manMask() const { return (1u << manBits) - 1; }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
  /// Largest finite magnitude as (biased exponent, mantissa) bits, without sign.
  uint32_t maxFiniteBits() const {
    if (e4m3fnStyle) // the all-ones mantissa at the top exponent is NaN
      return (uint32_t(maxBiasedExp()) << manBits) | (manMask() - 1);
    return (uint32_t(maxBiasedExp() - 1) << manBits) | manMask();
  }
  uint32_t infBits() const { return uint32_t(maxBiasedExp()) << manBits; }
};

constexpr Format kF16{5, 10, true, false, Overflow::ToInfinity};
constexpr Format kBF16{8, 7, true, false, Overflow::ToInfinity};
constexpr Format kE4M3{4, 3, false, true, Overflow::Saturate};
constexpr Format kE5M2{5, 2, true, false, Overflow::Saturate};

} // namespace

static uint64_t doubleBits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

static double bitsToDouble(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

/// The NaN encoding for a double NaN: the sign and the top mantissa bits of the payload
/// are kept, so every NaN pattern of a narrow format survives decode + encode bit for
/// bit (memory copies through the interpreter are exact). A payload whose kept bits are
/// all zero would read as infinity, so it becomes the quiet NaN.
static uint32_t encodeNaN(const Format &f, double v) {
  uint32_t sign = std::signbit(v) ? f.signBit() : 0;
  if (f.e4m3fnStyle) // exactly one NaN per sign
    return sign | (uint32_t(f.maxBiasedExp()) << f.manBits) | f.manMask();
  uint64_t payload = doubleBits(v) & ((uint64_t(1) << 52) - 1);
  uint32_t man = uint32_t(payload >> (52 - f.manBits));
  if (man == 0)
    man = 1u << (f.manBits - 1);
  return sign | f.infBits() | man;
}

static uint32_t encode(const Format &f, double v) {
  if (std::isnan(v))
    return encodeNaN(f, v);
  const uint32_t sign = std::signbit(v) ? f.signBit() : 0;
  const double a = std::fabs(v);
  const uint32_t tooLarge = f.overflow == Overflow::Saturate ? f.maxFiniteBits() : f.infBits();
  if (std::isinf(a))
    return sign | tooLarge;
  if (a == 0)
    return sign;

  // a = m * 2^ex with m in [0.5, 1): the leading bit is 2^(ex-1). Below the normal
  // range the quantum stays that of the smallest normal exponent (subnormals).
  int ex;
  std::frexp(a, &ex);
  int e = ex - 1;
  if (e < f.emin())
    e = f.emin();
  // Scale so that one unit in the last place of the target is 1.0; powers of two scale
  // exactly, and the scaled value is below 2^(manBits + 1), far inside double's exact
  // integer range, so nearbyint (ties to even in the default mode) rounds exactly once.
  double scaled = std::ldexp(a, f.manBits - e);
  uint64_t q = static_cast<uint64_t>(std::nearbyint(scaled));
  if (q == (uint64_t(1) << (f.manBits + 1))) { // rounded up to the next binade
    q >>= 1;
    ++e;
  }
  if (q < (uint64_t(1) << f.manBits)) // subnormal (or rounded to zero); e == emin here
    return sign | uint32_t(q);
  const uint32_t man = uint32_t(q) & f.manMask();
  if (e > f.emax() || (f.e4m3fnStyle && e == f.emax() && man == f.manMask()))
    return sign | tooLarge;
  return sign | (uint32_t(e + f.bias()) << f.manBits) | man;
}

static double decode(const Format &f, uint32_t bits) {
  const bool negative = (bits & f.signBit()) != 0;
  const uint32_t biased = (bits >> f.manBits) & uint32_t(f.maxBiasedExp());
  const uint32_t man = bits & f.manMask();
  double mag;
  if (biased == uint32_t(f.maxBiasedExp()) && !f.e4m3fnStyle) {
    if (man == 0) {
      mag = std::numeric_limits<double>::infinity();
    } else {
      // Keep the payload in the top mantissa bits (and the sign) so encode() finds it.
      uint64_t b = (uint64_t(0x7FF) << 52) | (uint64_t(man) << (52 - f.manBits));
      return negative ? -bitsToDouble(b) : bitsToDouble(b);
    }
  } else if (f.e4m3fnStyle && biased == uint32_t(f.maxBiasedExp()) && man == f.manMask()) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    return negative ? -nan : nan;
  } else if (biased == 0) {
    mag = std::ldexp(double(man), f.emin() - f.manBits);
  } else {
    mag = std::ldexp(double(man | (1u << f.manBits)), int(biased) - f.bias() - f.manBits);
  }
  return negative ? -mag : mag;
}

/// Float dtypes are not valid targets of floatToIntDType; they are treated as i64 so
/// that a misuse still never invokes an undefined out-of-range conversion.
static bool isFloatTarget(DType t) {
  switch (t) {
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
    return true;
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return false;
  }
  return false;
}

uint16_t doubleToF16Bits(double v) { return static_cast<uint16_t>(encode(kF16, v)); }
double f16BitsToDouble(uint16_t bits) { return decode(kF16, bits); }
uint16_t doubleToBF16Bits(double v) { return static_cast<uint16_t>(encode(kBF16, v)); }
double bf16BitsToDouble(uint16_t bits) { return decode(kBF16, bits); }
uint8_t doubleToF8E4M3Bits(double v) { return static_cast<uint8_t>(encode(kE4M3, v)); }
double f8E4M3BitsToDouble(uint8_t bits) { return decode(kE4M3, bits); }
uint8_t doubleToF8E5M2Bits(double v) { return static_cast<uint8_t>(encode(kE5M2, v)); }
double f8E5M2BitsToDouble(uint8_t bits) { return decode(kE5M2, bits); }

double roundToFloatDType(DType t, double v) {
  switch (t) {
  case DType::F64:
    return v;
  case DType::F32:
    return static_cast<double>(static_cast<float>(v));
  case DType::F16:
    return decode(kF16, encode(kF16, v));
  case DType::BF16:
    return decode(kBF16, encode(kBF16, v));
  case DType::F8E4M3:
    return decode(kE4M3, encode(kE4M3, v));
  case DType::F8E5M2:
    return decode(kE5M2, encode(kE5M2, v));
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    break;
  }
  // Not a float dtype: the value is left alone (callers only pass float dtypes).
  return v;
}

int64_t wrapToIntDType(DType t, int64_t v) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::I8:
    return static_cast<int8_t>(v);
  case DType::I16:
    return static_cast<int16_t>(v);
  case DType::I32:
    return static_cast<int32_t>(v);
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::U16:
    return static_cast<uint16_t>(v);
  case DType::U32:
    return static_cast<uint32_t>(v);
  case DType::I64:
  case DType::U64: // u64 lives in the 64-bit slot as its bit pattern
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
    break;
  }
  return v;
}

int64_t floatToIntDType(DType t, double v) {
  if (t == DType::Bool)
    return v != 0; // "!= 0", so NaN (unequal to everything) is true
  if (std::isnan(v))
    return 0;
  const double x = std::trunc(v);
  if (t == DType::U64) {
    // 2^64 is exactly representable; every double below it converts exactly.
    if (x <= 0)
      return 0;
    if (x >= 18446744073709551616.0)
      return static_cast<int64_t>(std::numeric_limits<uint64_t>::max());
    return static_cast<int64_t>(static_cast<uint64_t>(x));
  }
  if (t == DType::I64 || isFloatTarget(t)) {
    if (x >= 9223372036854775808.0)
      return std::numeric_limits<int64_t>::max();
    if (x < -9223372036854775808.0)
      return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(x);
  }
  int64_t lo = 0, hi = 0;
  switch (t) {
  case DType::I8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case DType::I16:
    lo = INT16_MIN, hi = INT16_MAX;
    break;
  case DType::I32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  case DType::U8:
    lo = 0, hi = UINT8_MAX;
    break;
  case DType::U16:
    lo = 0, hi = UINT16_MAX;
    break;
  case DType::U32:
    lo = 0, hi = UINT32_MAX;
    break;
  case DType::Bool:
  case DType::I64:
  case DType::U64:
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
    break; // handled above
  }
  if (x <= double(lo))
    return lo;
  if (x >= double(hi))
    return hi;
  return static_cast<int64_t>(x);
}

} // namespace kiln
