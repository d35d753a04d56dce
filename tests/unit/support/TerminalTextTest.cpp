//===- TerminalTextTest.cpp - Untrusted text made safe to print -----------===//
#include "support/TerminalText.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(TerminalText, PlainTextAndUtf8PassThrough) {
  EXPECT_EQ(escapeForTerminal("/home/ana/kernels/softmax.kiln"), "/home/ana/kernels/softmax.kiln");
  EXPECT_EQ(escapeForTerminal("/tmp/n\xC3\xA4me/\xE6\xB8\xA9.kiln"), "/tmp/n\xC3\xA4me/\xE6\xB8\xA9.kiln");
  EXPECT_EQ(escapeForTerminal("\xF0\x9F\x94\xA5"), "\xF0\x9F\x94\xA5"); // a 4-byte character
  EXPECT_EQ(escapeForTerminal(""), "");
}

TEST(TerminalText, ControlsAreShownNotActedOn) {
  EXPECT_EQ(escapeForTerminal("a\x1B[2Jb"), "a\\u{001B}[2Jb"); // ESC: clear screen
  EXPECT_EQ(escapeForTerminal("a\rb\nc\td"), "a\\u{000D}b\\u{000A}c\\u{0009}d");
  EXPECT_EQ(escapeForTerminal("\x7F"), "\\u{007F}");
  EXPECT_EQ(escapeForTerminal("x\xC2\x9B" "31m"), "x\\u{009B}31m"); // U+009B, CSI as a character
  EXPECT_EQ(escapeForTerminal("x\x9B" "31m"), "x\\x9B31m");        // 0x9B, CSI as a raw byte
  EXPECT_EQ(escapeForTerminal("back\\slash"), "back\\\\slash");
}

TEST(TerminalText, BidirectionalControlsAreShown) {
  // "evil\u202Elnik.kbin" displays as "evilnbik.knil"-like reversed text.
  EXPECT_EQ(escapeForTerminal("evil\xE2\x80\xAElnik.kbin"), "evil\\u{202E}lnik.kbin");
  EXPECT_EQ(escapeForTerminal("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u{2066}x\\u{2069}");
  EXPECT_EQ(escapeForTerminal("\xE2\x80\x8F"), "\\u{200F}");
  EXPECT_EQ(escapeForTerminal("\xD8\x9C"), "\\u{061C}");
}

TEST(TerminalText, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(escapeForTerminal("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_EQ(escapeForTerminal("\xC3"), "\\xC3");                 // truncated sequence
  EXPECT_EQ(escapeForTerminal("\xC0\xAF"), "\\xC0\\xAF");        // overlong '/'
  EXPECT_EQ(escapeForTerminal("\xED\xA0\x80"), "\\xED\\xA0\\x80"); // a surrogate
  EXPECT_EQ(escapeForTerminal("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80"); // above U+10FFFF
  EXPECT_EQ(escapeForTerminal("a\xE2\x80" "b"), "a\\xE2\\x80b");
}

} // namespace
} // namespace kiln
