//===- Literals.h - Decoding the text of Kiln literal tokens ----*- C++ -*-===//
//
// The lexer only recognises the shape of a literal; these functions turn its text into a
// value and say precisely what is wrong with it. They are shared by the token checks in
// Parser.cpp (which report E0005/E0007 while the file is lexed, so that literal errors
// appear together with syntax errors) and by the AST builder (which stores the values).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::syntax {

enum class NumberStatus {
  Ok,
  Malformed,  ///< not a number at all: `12abc`, `0x`, `1__0`
  OutOfRange, ///< an integer above 2^64-1, a float above the largest double
};

/// Decimal `1_000` or hexadecimal `0x2A`; underscores only between digits.
NumberStatus decodeIntLiteral(std::string_view text, uint64_t &value);

/// `3.5`, `1e-6`, `2.5E+3`, with underscores between digits. Values too small for a
/// double become 0 (as in C); values too large are OutOfRange.
NumberStatus decodeFloatLiteral(std::string_view text, double &value);

struct StringDecodeResult {
  enum Status {
    Ok,
    Unterminated, ///< no closing quote on the line
    BadEscape,    ///< a backslash not followed by one of `" \ n t`
  } status = Ok;
  std::string value;      ///< the unescaped contents (Ok only)
  size_t errorOffset = 0; ///< byte offset of the problem within the token text
  std::string escape;     ///< BadEscape: the escape as written, e.g. `\q`
};

/// `text` is the whole token including its quotes (the closing one may be missing).
StringDecodeResult decodeStringLiteral(std::string_view text);

/// The inverse for printing: `value` in double quotes with `" \ newline tab` escaped
/// and other control bytes written as \xNN, so that the result stays on one line.
std::string quoteString(std::string_view value);

} // namespace kiln::syntax
