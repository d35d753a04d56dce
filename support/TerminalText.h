//===- TerminalText.h - Untrusted text made safe to print -------*- C++ -*-===//
//
// Text that comes from a file rather than from the user (a bundle's source path, its
// compiler string) can hold bytes that a terminal acts on instead of showing: invalid
// UTF-8, C0 and C1 control characters (0x9B alone is a CSI introducer to some
// terminals, U+009B to others) and the Unicode bidirectional controls that make text
// display in an order other than its bytes' (U+202E). Tools print such text through
// this one function, which shows every one of them as a visible escape and leaves all
// other text, UTF-8 included, as it is.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// `text` with each byte that is not part of valid UTF-8 written as `\xNN`, each
/// control character (C0, DEL, C1) and bidirectional formatting character written as
/// `\u{XXXX}`, and a backslash written as `\\`, so that the result is unambiguous.
std::string escapeForTerminal(std::string_view text);

} // namespace kiln
