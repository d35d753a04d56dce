//===- Type.h - Kiln value types: scalars, pointers, tiles -------*- C++ -*-===//
//
// Every Tile IR value has a Type: an element kind and a static shape. A scalar is a
// rank-0 tile, so one struct describes `f32`, `*bf16`, `tile<f32, [128]>` and
// `tile<*f32, [64, 64]>` alike. Pointers always point to global memory and their
// pointee is a scalar dtype (no pointers to pointers).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// The spelling used in Kiln source and in .tir text ("f32", "bf16", ...).
std::string_view dtypeName(DType t);
/// Inverse of dtypeName; nullopt for an unknown spelling.
std::optional<DType> parseDType(std::string_view name);
/// Width in bits (bool counts as 1; it is stored in one byte).
unsigned dtypeBits(DType t);
/// Bytes one element occupies in memory (bool: 1).
unsigned dtypeBytes(DType t);
bool isFloat(DType t);
bool isInteger(DType t); // bool is not an integer
bool isSigned(DType t);  // signed integers and all floats
inline bool isBool(DType t) { return t == DType::Bool; }

/// Product of the dimensions (1 for a scalar).
int64_t numElements(const Shape &shape);
/// True when `a` and `b` have one rank and agree on every axis but `axis` (the operands
/// of cat, and gather's source and indices).
bool agreeBesidesAxis(const Shape &a, const Shape &b, int64_t axis);

/// The type of a Tile IR value.
struct Type {
  DType dtype = DType::I32; ///< element dtype, or the pointee when `pointer`
  bool pointer = false;     ///< elements are `*dtype` (global-memory pointers)
  Shape shape;              ///< empty: a scalar

  static Type scalar(DType t) { return Type{t, false, {}}; }
  static Type ptr(DType pointee) { return Type{pointee, true, {}}; }
  static Type tile(DType t, Shape s) { return Type{t, false, std::move(s)}; }

  unsigned rank() const { return static_cast<unsigned>(shape.size()); }
  bool isScalar() const { return shape.empty(); }
  int64_t numElements() const { return kiln::numElements(shape); }
  /// Same element kind, different shape.
  Type withShape(Shape s) const { return Type{dtype, pointer, std::move(s)}; }
  /// Same shape, a non-pointer element dtype.
  Type withDType(DType t) const { return Type{t, false, shape}; }
  /// The element type alone (rank 0).
  Type element() const { return Type{dtype, pointer, {}}; }

  bool operator==(const Type &o) const = default;

  /// `f32`, `*bf16`, `tile<f32, [64, 128]>`, `tile<*f32, [128]>`.
  std::string str() const;
};

/// Parses the spelling produced by Type::str(); nullopt on malformed text.
std::optional<Type> parseType(std::string_view text);

} // namespace kiln
