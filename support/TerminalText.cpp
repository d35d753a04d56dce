//===- TerminalText.cpp - Untrusted text made safe to print ---------------===//
#include "support/TerminalText.h"

#include <cstdint>
#include <cstdio>

namespace kiln {

namespace {

/// The code point of the UTF-8 sequence at the start of `s` and its length, or a
/// length of 0 when the bytes there are not well-formed UTF-8 (overlong forms,
/// surrogates and values above U+10FFFF included).
std::pair<uint32_t, size_t> decodeUtf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80)
    return {lead, 1};
  size_t length;
  uint32_t cp, min;
  if ((lead & 0xE0) == 0xC0)
    length = 2, cp = lead & 0x1F, min = 0x80;
  else if ((lead & 0xF0) == 0xE0)
    length = 3, cp = lead & 0x0F, min = 0x800;
  else if ((lead & 0xF8) == 0xF0)
    length = 4, cp = lead & 0x07, min = 0x10000;
  else
    return {0, 0};
  if (s.size() < length)
    return {0, 0};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return {0, 0};
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {0, 0};
  return {cp, length};
}

/// Characters a terminal acts on, or that reorder the text around them when shown.
bool needsEscape(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
    return true; // C0, DEL, C1
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069); // bidirectional marks, embeddings, overrides, isolates
}

} // namespace

std::string escapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    auto [cp, length] = decodeUtf8(text.substr(i));
    if (length == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[i])));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '\\') {
      out += "\\\\";
    } else if (needsEscape(cp)) {
      std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

} // namespace kiln
