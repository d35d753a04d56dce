//===- Utf8.h - Decoding one UTF-8 character ---------------------*- C++ -*-===//
//
// Text from files is checked and shown one character at a time (TerminalText's escapes,
// a .npy 3.0 header's length in characters). Both need the same strict reading of
// UTF-8, the one Python's decoder and the Unicode standard give: no overlong forms, no
// surrogates, nothing past U+10FFFF.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace kiln {

/// The code point of the well-formed UTF-8 sequence at the start of `text` and its length
/// in bytes, or a length of 0 when the bytes there are not one (or `text` is empty).
std::pair<uint32_t, size_t> decodeUtf8(std::string_view text);

} // namespace kiln
