//===- NpyHeader.h - A .npy header read as NumPy reads it --------*- C++ -*-===//
//
// A .npy header is a Python dict literal with the keys 'descr', 'fortran_order' and
// 'shape' and no others, a repeated key meaning its last value (numpy/lib/format.py).
// Kiln reads it exactly as NumPy does, so that no file means one array to NumPy and
// another to Kiln: whatever NumPy refuses, Kiln refuses, and a few things NumPy takes
// but no writer produces are refused too (see parseNpyHeader).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

/// The most dimensions NumPy gives an array (NPY_MAXDIMS); a header with more is refused.
inline constexpr size_t kNpyMaxDims = 32;
/// The longest header NumPy reads, in characters (numpy.load refuses longer ones).
inline constexpr size_t kNpyMaxHeaderChars = 10000;

/// What a .npy header says about its array.
struct NpyHeader {
  std::string descr;         ///< the dtype string as written, e.g. "<f4"
  bool fortranOrder = false; ///< the array is stored in Fortran (column-major) order
  Shape shape;               ///< non-negative dimensions; empty for a 0-d array
};

/// Parses the header text of a .npy file of format `majorVersion`.0 (1-3): the dict
/// literal and its padding, the bytes between the header length and the data. Refuses,
/// with `error` saying why ("unterminated dict", "shape has 33 dimensions; NumPy allows
/// at most 32", ...), whatever NumPy's numpy.load refuses. Also refuses what NumPy would
/// take but no writer produces: Python syntax beyond plain literals (escapes in strings,
/// string prefixes, triple quotes, line continuations, indentation, nesting over 100
/// deep), a descr
/// that is not a string (a structured dtype), and negative dimensions (which NumPy
/// reads as "whatever is left").
std::optional<NpyHeader> parseNpyHeader(std::string_view text, int majorVersion, std::string &error);

} // namespace kiln
