//===- Utf8.cpp - Decoding one UTF-8 character ----------------------------===//
#include "support/Utf8.h"

namespace kiln {

std::pair<uint32_t, size_t> decodeUtf8(std::string_view text) {
  if (text.empty())
    return {0, 0};
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80)
    return {lead, 1};
  size_t length;
  uint32_t cp, smallest;
  if ((lead & 0xE0) == 0xC0)
    length = 2, cp = lead & 0x1F, smallest = 0x80;
  else if ((lead & 0xF0) == 0xE0)
    length = 3, cp = lead & 0x0F, smallest = 0x800;
  else if ((lead & 0xF8) == 0xF0)
    length = 4, cp = lead & 0x07, smallest = 0x10000;
  else
    return {0, 0};
  if (text.size() < length)
    return {0, 0};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return {0, 0};
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < smallest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {0, 0};
  return {cp, length};
}

} // namespace kiln
