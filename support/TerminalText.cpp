//===- TerminalText.cpp - Untrusted text made safe to print ---------------===//
#include "support/TerminalText.h"
#include "support/Utf8.h"

#include <cstdint>
#include <cstdio>

namespace kiln {

namespace {

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
