//===- Literals.cpp - Decoding the text of Kiln literal tokens ------------===//
#include "frontend/Literals.h"

#include <charconv>
#include <cstdio>
#include <system_error>

namespace kiln::syntax {

static bool isDecDigit(char c) { return c >= '0' && c <= '9'; }

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Checks that `digits` is a non-empty run of digits (per `digitValue`) where an
/// underscore only ever sits between two digits, and accumulates the value in `base`.
template <typename DigitValue>
static NumberStatus accumulate(std::string_view digits, unsigned base, DigitValue digitValue,
                               uint64_t &value) {
  if (digits.empty() || digits.front() == '_' || digits.back() == '_')
    return NumberStatus::Malformed;
  uint64_t v = 0;
  bool overflow = false;
  char prev = 0;
  for (char c : digits) {
    if (c == '_') {
      if (prev == '_')
        return NumberStatus::Malformed;
      prev = c;
      continue;
    }
    int d = digitValue(c);
    if (d < 0 || static_cast<unsigned>(d) >= base)
      return NumberStatus::Malformed;
    // Keep scanning after an overflow: a malformed spelling is the better message.
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / base)
      overflow = true;
    else
      v = v * base + static_cast<uint64_t>(d);
    prev = c;
  }
  if (overflow)
    return NumberStatus::OutOfRange;
  value = v;
  return NumberStatus::Ok;
}

NumberStatus decodeIntLiteral(std::string_view text, uint64_t &value) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    return accumulate(text.substr(2), 16, hexValue, value);
  return accumulate(text, 10, [](char c) { return isDecDigit(c) ? c - '0' : -1; }, value);
}

/// A run of decimal digits with single underscores between them (the grammar's DEC).
static bool isDecRun(std::string_view s) {
  uint64_t ignored;
  // Only the shape matters here, so an overflow of the 64-bit accumulator is fine.
  return accumulate(s, 10, [](char c) { return isDecDigit(c) ? 0 : -1; }, ignored) !=
         NumberStatus::Malformed;
}

NumberStatus decodeFloatLiteral(std::string_view text, double &value) {
  // Validate the exact shape DEC '.' DEC EXPONENT? | DEC EXPONENT before handing the
  // digits (without underscores) to from_chars, which would accept more than Kiln does.
  size_t expPos = text.find_first_of("eE");
  std::string_view mantissa = text.substr(0, expPos);
  std::string_view exponent = expPos == std::string_view::npos ? "" : text.substr(expPos + 1);
  size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) {
    if (expPos == std::string_view::npos || !isDecRun(mantissa))
      return NumberStatus::Malformed;
  } else if (!isDecRun(mantissa.substr(0, dot)) || !isDecRun(mantissa.substr(dot + 1))) {
    return NumberStatus::Malformed;
  }
  bool negativeExponent = false;
  if (expPos != std::string_view::npos) {
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      negativeExponent = exponent[0] == '-';
      exponent.remove_prefix(1);
    }
    if (!isDecRun(exponent))
      return NumberStatus::Malformed;
  }

  std::string digits;
  digits.reserve(text.size());
  for (char c : text)
    if (c != '_')
      digits.push_back(c);
  double v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v,
                                   std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; only overflow is an error.
    if (!negativeExponent)
      return NumberStatus::OutOfRange;
    v = 0.0;
  } else if (ec != std::errc() || end != digits.data() + digits.size()) {
    return NumberStatus::Malformed;
  }
  value = v;
  return NumberStatus::Ok;
}

StringDecodeResult decodeStringLiteral(std::string_view text) {
  StringDecodeResult r;
  // The lexer guarantees an opening quote; be defensive anyway.
  if (text.empty() || text[0] != '"') {
    r.status = StringDecodeResult::Unterminated;
    return r;
  }
  for (size_t i = 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      if (i + 1 != text.size())
        break; // a quote before the end: not a single string token
      r.status = StringDecodeResult::Ok;
      return r;
    }
    if (c != '\\') {
      r.value.push_back(c);
      continue;
    }
    if (i + 1 >= text.size()) {
      r.status = StringDecodeResult::Unterminated;
      r.value.clear();
      return r;
    }
    char e = text[i + 1];
    switch (e) {
    case '"': r.value.push_back('"'); break;
    case '\\': r.value.push_back('\\'); break;
    case 'n': r.value.push_back('\n'); break;
    case 't': r.value.push_back('\t'); break;
    default: {
      r.status = StringDecodeResult::BadEscape;
      r.errorOffset = i;
      // Quote the whole UTF-8 sequence after the backslash, not just its first byte.
      size_t len = 1;
      unsigned char lead = static_cast<unsigned char>(e);
      if (lead >= 0xF0)
        len = 4;
      else if (lead >= 0xE0)
        len = 3;
      else if (lead >= 0xC0)
        len = 2;
      r.escape = std::string(text.substr(i, 1 + len));
      r.value.clear();
      return r;
    }
    }
    ++i;
  }
  r.status = StringDecodeResult::Unterminated;
  r.value.clear();
  return r;
}

std::string quoteString(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
        char buf[8];
        unsigned byte = static_cast<unsigned char>(c);
        std::snprintf(buf, sizeof buf, "\\x%02X", byte);
        out += buf;
      } else {
        out.push_back(c);
      }
    }
  }
  out.push_back('"');
  return out;
}

} // namespace kiln::syntax
