//===- FloatFormats.h - Narrow float formats: f16, bf16, f8 -----*- C++ -*-===//
//
// Bit-exact conversions between double and the narrow formats Kiln supports. Rounding
// is to nearest, ties to even. f16/bf16 overflow to +-inf. The f8 formats follow the
// OCP FP8 spec: e4m3 is the "fn" variant (no infinities, NaN = S.1111.111, max 448),
// e5m2 has infinities; conversion to either saturates to the largest finite value
// (PTX's .satfinite), NaN stays NaN.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"

#include <cstdint>

namespace kiln {

uint16_t doubleToF16Bits(double v);
double f16BitsToDouble(uint16_t bits);
uint16_t doubleToBF16Bits(double v);
double bf16BitsToDouble(uint16_t bits);
uint8_t doubleToF8E4M3Bits(double v);
double f8E4M3BitsToDouble(uint8_t bits);
uint8_t doubleToF8E5M2Bits(double v);
double f8E5M2BitsToDouble(uint8_t bits);

/// Rounds `v` to the nearest value representable in float dtype `t` (f64: unchanged,
/// f32: (double)(float)v, narrow formats through their bits).
double roundToFloatDType(DType t, double v);

/// Converts an integer value to the integer dtype `t` with two's-complement wrapping
/// (bool: v != 0). The result is sign- or zero-extended back to 64 bits.
int64_t wrapToIntDType(DType t, int64_t v);

/// float -> integer dtype: truncate toward zero, saturate to the range, NaN -> 0.
int64_t floatToIntDType(DType t, double v);

} // namespace kiln
