//===- FusionPolicy.h - What reduction-chain fusion may assume ---*- C++ -*-===//
//
// Fusion is exact algebra up to floating-point reassociation, and the rounding of formats
// with f32's exponent range (bf16, f32, f64), whose place a rescale moves but whose size
// it does not change. Anything beyond that is asked for here, by the user.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace kiln::ir {

/// What fusion may assume beyond exact algebra and the rounding of formats with f32's
/// exponent range (bf16, f32, f64), whose rounding a rescale only moves.
struct FusionPolicy {
  /// Fuse through a rounding to f16 or an f8 format: F = q(G(x) · P(y)) is computed with
  /// the running y and the accumulator rescaled by P(y)/P(y_prev) (dynamic-scale
  /// quantization inside a GEMM). Each block is then rounded at the scale known when it
  /// was read, not at the final one: results differ from the program as written by
  /// rounding, within the format's precision. Off unless asked for (--fuse-quantized).
  bool quantized = false;
};

} // namespace kiln::ir
