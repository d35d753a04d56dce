//===- TypeRules.h - Promotion, broadcasting and conversion rules -*- C++ -*-===//
//
// The pure typing rules of Kiln's operators, kept apart from the rest of semantic
// analysis so that they can be unit-tested as a table (docs/language.md, "Promotion
// of binary operators"). Nothing here reports diagnostics or builds IR: callers turn
// a nullopt into the right located error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::sema {

/// Largest number of elements one tile may hold (E0304 beyond).
constexpr int64_t kMaxTileElements = int64_t(1) << 24;

/// The dtype two typed operands of a binary operator promote to (rules 1-4 of
/// docs/language.md). Symmetric.
DType promoteDTypes(DType a, DType b);

/// numpy broadcasting: align trailing dimensions; each pair equal or one of them 1.
/// nullopt when the shapes are incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// True when a value of shape `from` broadcasts to exactly `to` (no growth of `to`).
bool broadcastsTo(const Shape &from, const Shape &to);

/// True when converting `from` to `to` loses nothing by Kiln's definition: promoting
/// the two gives `to` (docs/language.md, "Bindings").
bool isLosslessConversion(DType from, DType to);

/// True when the integer `value` (read as unsigned when `valueIsU64` — a 64-bit
/// pattern above INT64_MAX) is representable in integer or bool dtype `t`.
/// Always true for float dtypes.
bool intFitsDType(int64_t value, bool valueIsU64, DType t);

/// The dtype `sum`/`prod` (and cumsum/cumprod) accumulate in: f16/bf16/f8 -> f32,
/// bool/i8/i16 -> i32, u8/u16 -> u32, everything else unchanged.
DType sumAccumulatorDType(DType t);

/// The result dtype of `dot` for inputs of dtype `t` (already equal): f32 for floats
/// narrower than f64, i32 for integers; nullopt when dot does not take `t`.
std::optional<DType> dotResultDType(DType t);

/// "[64, 128]" for messages.
std::string shapeString(const Shape &shape);

} // namespace kiln::sema
