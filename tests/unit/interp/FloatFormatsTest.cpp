//===- FloatFormatsTest.cpp - Bit-exact checks of f16, bf16 and f8 --------===//
//
// Every bit pattern of every narrow format is decoded and re-encoded, every midpoint
// between neighbouring values is checked to round to the even neighbour, and f16 is
// compared against the compiler's own _Float16 conversions where it has them.
//
//===----------------------------------------------------------------------===//
#include "support/FloatFormats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace kiln;

namespace {

/// A narrow format under test, seen through the public functions.
struct Fmt {
  const char *name;
  unsigned bits;
  unsigned manBits;
  std::function<uint32_t(double)> encode;
  std::function<double(uint32_t)> decode;
  bool saturates; ///< overflow gives the largest finite value instead of infinity
};

std::vector<Fmt> allFormats() {
  return {
      {"f16", 16, 10, [](double v) { return uint32_t(doubleToF16Bits(v)); },
       [](uint32_t b) { return f16BitsToDouble(uint16_t(b)); }, false},
      {"bf16", 16, 7, [](double v) { return uint32_t(doubleToBF16Bits(v)); },
       [](uint32_t b) { return bf16BitsToDouble(uint16_t(b)); }, false},
      {"f8e4m3", 8, 3, [](double v) { return uint32_t(doubleToF8E4M3Bits(v)); },
       [](uint32_t b) { return f8E4M3BitsToDouble(uint8_t(b)); }, true},
      {"f8e5m2", 8, 2, [](double v) { return uint32_t(doubleToF8E5M2Bits(v)); },
       [](uint32_t b) { return f8E5M2BitsToDouble(uint8_t(b)); }, true},
  };
}

double inf() { return std::numeric_limits<double>::infinity(); }

/// The positive finite values of a format in increasing order with their bits.
std::vector<std::pair<double, uint32_t>> positiveFinite(const Fmt &f) {
  std::vector<std::pair<double, uint32_t>> out;
  for (uint32_t b = 0; b < (1u << (f.bits - 1)); ++b) {
    double v = f.decode(b);
    if (std::isfinite(v))
      out.push_back({v, b});
  }
  return out;
}

#ifdef __FLT16_MAX__ // the compiler has _Float16
uint16_t halfBits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

_Float16 halfFromBits(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, sizeof h);
  return h;
}
#endif

} // namespace

TEST(FloatFormats, EveryPatternRoundTrips) {
  for (const Fmt &f : allFormats()) {
    SCOPED_TRACE(f.name);
    unsigned nans = 0;
    for (uint32_t b = 0; b < (1u << f.bits); ++b) {
      double v = f.decode(b);
      uint32_t back = f.encode(v);
      if (std::isnan(v)) {
        ++nans;
        // NaN payloads (signalling ones too) survive bit for bit.
        ASSERT_EQ(back, b) << b;
        continue;
      }
      if (std::isinf(v) && f.saturates) {
        // e5m2 has infinities but conversion to it saturates (.satfinite): an
        // infinity comes back as the largest finite value of its sign.
        EXPECT_EQ(f.decode(back), v > 0 ? 57344.0 : -57344.0) << b;
        continue;
      }
      ASSERT_EQ(back, b) << "pattern " << b << " decodes to " << v;
    }
    // NaN counts: f16 2*(2^10-1), bf16 2*(2^7-1), e4m3fn exactly 2, e5m2 2*3.
    unsigned expected = f.bits == 8 ? (f.manBits == 3 ? 2u : 6u) : 2u * ((1u << f.manBits) - 1);
    EXPECT_EQ(nans, expected);
  }
}

TEST(FloatFormats, DecodedValuesAreStrictlyIncreasing) {
  for (const Fmt &f : allFormats()) {
    SCOPED_TRACE(f.name);
    auto vals = positiveFinite(f);
    for (size_t i = 1; i < vals.size(); ++i)
      ASSERT_LT(vals[i - 1].first, vals[i].first) << i;
    // Negative patterns mirror positive ones.
    for (auto [v, b] : vals)
      EXPECT_EQ(f.decode(b | (1u << (f.bits - 1))), -v);
  }
}

TEST(FloatFormats, KnownValues) {
  // f16
  EXPECT_EQ(f16BitsToDouble(0x3C00), 1.0);
  EXPECT_EQ(f16BitsToDouble(0x7BFF), 65504.0);
  EXPECT_EQ(f16BitsToDouble(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(f16BitsToDouble(0x0400), std::ldexp(1.0, -14));
  EXPECT_EQ(f16BitsToDouble(0x7C00), inf());
  EXPECT_EQ(f16BitsToDouble(0xFC00), -inf());
  EXPECT_EQ(doubleToF16Bits(-0.0), 0x8000);
  EXPECT_EQ(doubleToF16Bits(1.0 / 3), 0x3555);
  // bf16 is the top half of f32.
  EXPECT_EQ(bf16BitsToDouble(0x3F80), 1.0);
  EXPECT_EQ(bf16BitsToDouble(0x7F7F), 3.3895313892515355e38);
  EXPECT_EQ(bf16BitsToDouble(0x0001), std::ldexp(1.0, -133));
  EXPECT_EQ(doubleToBF16Bits(3.140625), 0x4049);
  // f8e4m3fn: max 448, no infinity, S.1111.111 is NaN, smallest subnormal 2^-9.
  EXPECT_EQ(f8E4M3BitsToDouble(0x7E), 448.0);
  EXPECT_EQ(f8E4M3BitsToDouble(0x78), 256.0);
  EXPECT_EQ(f8E4M3BitsToDouble(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(f8E4M3BitsToDouble(0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(f8E4M3BitsToDouble(0x38), 1.0);
  EXPECT_TRUE(std::isnan(f8E4M3BitsToDouble(0x7F)));
  EXPECT_TRUE(std::isnan(f8E4M3BitsToDouble(0xFF)));
  EXPECT_EQ(f8E4M3BitsToDouble(0xFE), -448.0);
  // f8e5m2: max 57344, has infinities, smallest subnormal 2^-16.
  EXPECT_EQ(f8E5M2BitsToDouble(0x7B), 57344.0);
  EXPECT_EQ(f8E5M2BitsToDouble(0x7C), inf());
  EXPECT_EQ(f8E5M2BitsToDouble(0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(f8E5M2BitsToDouble(0x3C), 1.0);
  EXPECT_TRUE(std::isnan(f8E5M2BitsToDouble(0x7D)));
  EXPECT_EQ(doubleToF8E5M2Bits(1.5), 0x3E);
  EXPECT_EQ(doubleToF8E4M3Bits(-1.125), 0xB9);
}

TEST(FloatFormats, MidpointsRoundToEven) {
  for (const Fmt &f : allFormats()) {
    SCOPED_TRACE(f.name);
    auto vals = positiveFinite(f);
    for (size_t i = 0; i + 1 < vals.size(); ++i) {
      auto [lo, loBits] = vals[i];
      auto [hi, hiBits] = vals[i + 1];
      double mid = (lo + hi) / 2; // exact: both have few significant bits
      uint32_t even = (loBits & 1) == 0 ? loBits : hiBits;
      ASSERT_EQ(f.encode(mid), even) << "midpoint of " << lo << " and " << hi;
      ASSERT_EQ(f.encode(std::nextafter(mid, 0.0)), loBits) << mid;
      ASSERT_EQ(f.encode(std::nextafter(mid, inf())), hiBits) << mid;
      ASSERT_EQ(f.encode(-mid), even | (1u << (f.bits - 1))) << mid;
    }
    // Half of the smallest subnormal is a tie between 0 and it: 0 is even.
    double tiny = vals[1].first;
    EXPECT_EQ(f.encode(tiny / 2), 0u);
    EXPECT_EQ(f.encode(std::nextafter(tiny / 2, 1.0)), 1u);
    EXPECT_EQ(f.encode(-tiny / 4), 1u << (f.bits - 1)); // underflow keeps the sign
  }
}

TEST(FloatFormats, OverflowAndSaturation) {
  for (const Fmt &f : allFormats()) {
    SCOPED_TRACE(f.name);
    auto vals = positiveFinite(f);
    auto [maxVal, maxBits] = vals.back();
    double ulp = maxVal - vals[vals.size() - 2].first;
    uint32_t signBit = 1u << (f.bits - 1);
    uint32_t over = f.saturates ? maxBits : f.encode(inf());
    if (!f.saturates) {
      EXPECT_EQ(f.decode(over), inf());
    }
    // Just below the midpoint to the next binade value stays at max; the tie and beyond
    // overflow (max has an odd mantissa so the tie goes away from it).
    EXPECT_EQ(f.encode(maxVal + ulp / 2 - ulp / 1024), maxBits);
    EXPECT_EQ(f.encode(maxVal + ulp / 2), over);
    EXPECT_EQ(f.encode(maxVal * 4), over);
    EXPECT_EQ(f.encode(1e300), over);
    EXPECT_EQ(f.encode(-1e300), over | signBit);
    EXPECT_EQ(f.encode(inf()), over);
    EXPECT_EQ(f.encode(-inf()), over | signBit);
    EXPECT_TRUE(std::isnan(f.decode(f.encode(std::nan("")))));
    EXPECT_TRUE(std::isnan(f.decode(f.encode(-std::nan("")))));
    // A NaN whose payload lies only in bits the format drops must stay a NaN (the
    // kept bits alone would spell infinity).
    uint64_t lowPayload = 0x7FF0000000000001ull;
    double lowNaN;
    std::memcpy(&lowNaN, &lowPayload, sizeof lowNaN);
    EXPECT_TRUE(std::isnan(f.decode(f.encode(lowNaN))));
  }
  EXPECT_EQ(f8E4M3BitsToDouble(doubleToF8E4M3Bits(1000.0)), 448.0);
  EXPECT_EQ(f8E4M3BitsToDouble(doubleToF8E4M3Bits(-464.0)), -448.0); // tie, saturated
  EXPECT_EQ(f8E4M3BitsToDouble(doubleToF8E4M3Bits(463.0)), 448.0);
  EXPECT_EQ(f8E5M2BitsToDouble(doubleToF8E5M2Bits(70000.0)), 57344.0);
  EXPECT_EQ(f8E5M2BitsToDouble(doubleToF8E5M2Bits(-inf())), -57344.0);
  EXPECT_EQ(f16BitsToDouble(doubleToF16Bits(65520.0)), inf());
  EXPECT_EQ(f16BitsToDouble(doubleToF16Bits(65519.99)), 65504.0);
}

#ifdef __FLT16_MAX__
TEST(FloatFormats, F16MatchesCompilerFloat16) {
  // Decoding: every pattern against _Float16 -> double.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double mine = f16BitsToDouble(uint16_t(b));
    double ref = static_cast<double>(halfFromBits(uint16_t(b)));
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(mine)) << b;
      continue;
    }
    ASSERT_EQ(mine, ref) << b;
    ASSERT_EQ(std::signbit(mine), std::signbit(ref)) << b;
  }
  // Encoding: random doubles over the whole f16 range and beyond, plus values near
  // every midpoint (where rounding through float first would go wrong).
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> expo(-30.0, 17.0);
  std::uniform_int_distribution<int> coin(0, 1);
  for (int i = 0; i < 200000; ++i) {
    double v = std::exp2(expo(rng)) * (coin(rng) ? -1 : 1);
    volatile double dv = v;
    ASSERT_EQ(doubleToF16Bits(v), halfBits(static_cast<_Float16>(dv))) << v;
  }
  for (uint32_t b = 0; b < 0x7BFF; ++b) {
    double lo = f16BitsToDouble(uint16_t(b)), hi = f16BitsToDouble(uint16_t(b + 1));
    double mid = (lo + hi) / 2;
    // A double a hair above the tie: a float would round it onto the tie.
    for (double v : {mid, mid + (hi - lo) * 1e-9, mid - (hi - lo) * 1e-9}) {
      volatile double dv = v;
      ASSERT_EQ(doubleToF16Bits(v), halfBits(static_cast<_Float16>(dv))) << v;
    }
  }
}
#endif

TEST(FloatFormats, BF16MatchesFloatTruncationRule) {
  // For values exactly representable in f32 the classic bias-and-truncate formula is the
  // round-to-nearest-even reference for bf16.
  std::mt19937 rng(99);
  for (int i = 0; i < 500000; ++i) {
    uint32_t fb = rng();
    float fv;
    std::memcpy(&fv, &fb, sizeof fv);
    if (std::isnan(fv))
      continue;
    uint32_t ref = (fb + 0x7FFF + ((fb >> 16) & 1)) >> 16;
    ASSERT_EQ(doubleToBF16Bits(fv), ref) << fv;
  }
}

TEST(FloatFormats, RoundToFloatDType) {
  EXPECT_EQ(roundToFloatDType(DType::F64, 0.1), 0.1);
  EXPECT_EQ(roundToFloatDType(DType::F32, 0.1), double(0.1f));
  EXPECT_EQ(roundToFloatDType(DType::F32, 1e39), inf());
  EXPECT_EQ(roundToFloatDType(DType::F16, 0.1), f16BitsToDouble(0x2E66));
  EXPECT_EQ(roundToFloatDType(DType::BF16, 1.0 + 1.0 / 256), 1.0); // tie -> even
  EXPECT_EQ(roundToFloatDType(DType::BF16, 1.0 + 3.0 / 256), 1.0 + 4.0 / 256);
  EXPECT_EQ(roundToFloatDType(DType::F8E4M3, 0.3), 0.3125);
  EXPECT_EQ(roundToFloatDType(DType::F8E5M2, 0.3), 0.3125);
  EXPECT_EQ(roundToFloatDType(DType::F8E4M3, 1e6), 448.0);
  // Direct rounding from double: 1 + 2^-11 + 2^-40 is above the f16 tie, a float-first
  // rounding would land on the tie and then round down to 1.
  EXPECT_EQ(roundToFloatDType(DType::F16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)),
            1.0 + std::ldexp(1.0, -10));
}

TEST(FloatFormats, WrapToIntDType) {
  EXPECT_EQ(wrapToIntDType(DType::I8, 128), -128);
  EXPECT_EQ(wrapToIntDType(DType::I8, -129), 127);
  EXPECT_EQ(wrapToIntDType(DType::U8, -1), 255);
  EXPECT_EQ(wrapToIntDType(DType::U8, 256), 0);
  EXPECT_EQ(wrapToIntDType(DType::I16, 40000), 40000 - 65536);
  EXPECT_EQ(wrapToIntDType(DType::U16, -2), 65534);
  EXPECT_EQ(wrapToIntDType(DType::I32, int64_t(1) << 31), INT32_MIN);
  EXPECT_EQ(wrapToIntDType(DType::U32, -1), int64_t(UINT32_MAX));
  EXPECT_EQ(wrapToIntDType(DType::I64, INT64_MIN), INT64_MIN);
  EXPECT_EQ(wrapToIntDType(DType::U64, -1), -1); // the all-ones pattern
  EXPECT_EQ(wrapToIntDType(DType::Bool, 2), 1);
  EXPECT_EQ(wrapToIntDType(DType::Bool, 0), 0);
  EXPECT_EQ(wrapToIntDType(DType::Bool, int64_t(1) << 40), 1);
}

TEST(FloatFormats, FloatToIntDType) {
  EXPECT_EQ(floatToIntDType(DType::I32, 2.9), 2);
  EXPECT_EQ(floatToIntDType(DType::I32, -2.9), -2);
  EXPECT_EQ(floatToIntDType(DType::I32, 3e9), INT32_MAX);
  EXPECT_EQ(floatToIntDType(DType::I32, -3e9), INT32_MIN);
  EXPECT_EQ(floatToIntDType(DType::I32, inf()), INT32_MAX);
  EXPECT_EQ(floatToIntDType(DType::I32, std::nan("")), 0);
  EXPECT_EQ(floatToIntDType(DType::I8, 200.0), 127);
  EXPECT_EQ(floatToIntDType(DType::I8, -200.0), -128);
  EXPECT_EQ(floatToIntDType(DType::U8, -5.0), 0);
  EXPECT_EQ(floatToIntDType(DType::U8, 255.9), 255);
  EXPECT_EQ(floatToIntDType(DType::U8, 300.0), 255);
  EXPECT_EQ(floatToIntDType(DType::U16, 70000.0), 65535);
  EXPECT_EQ(floatToIntDType(DType::U32, 5e9), int64_t(UINT32_MAX));
  EXPECT_EQ(floatToIntDType(DType::U32, -0.5), 0);
  EXPECT_EQ(floatToIntDType(DType::I64, 1e19), INT64_MAX);
  EXPECT_EQ(floatToIntDType(DType::I64, -1e19), INT64_MIN);
  EXPECT_EQ(floatToIntDType(DType::I64, -9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(floatToIntDType(DType::I64, 4611686018427387904.0), int64_t(1) << 62);
  EXPECT_EQ(uint64_t(floatToIntDType(DType::U64, 1e19)), 10000000000000000000ull);
  EXPECT_EQ(uint64_t(floatToIntDType(DType::U64, 1e20)), UINT64_MAX);
  EXPECT_EQ(floatToIntDType(DType::U64, -1.0), 0);
  EXPECT_EQ(floatToIntDType(DType::U64, std::nan("")), 0);
  EXPECT_EQ(floatToIntDType(DType::Bool, 0.5), 1);
  EXPECT_EQ(floatToIntDType(DType::Bool, -0.0), 0);
  EXPECT_EQ(floatToIntDType(DType::Bool, std::nan("")), 1); // NaN != 0
}
