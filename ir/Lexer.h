//===- Lexer.h - Tokens of the .tir text format ------------------*- C++ -*-===//
//
// Internal to the .tir parser. The lexer never fails: malformed input becomes an
// Error token carrying the message, and the parser reports it when it gets there, so
// errors come out in text order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir::tir {

enum class Tok {
  Eof,
  Error,     ///< text: the message
  Ident,     ///< kernel, add, f32, tile, loc, true, inf, ...
  ValueName, ///< %name (text without the %)
  AtName,    ///< @name or @"name" (text without the @, unquoted)
  Int,
  Float,
  String, ///< text: the decoded contents
  Caret,
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Less,
  Greater,
  Comma,
  Colon,
  Equal,
  Star,
  Minus,
};

struct Token {
  Tok kind = Tok::Eof;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
  uint32_t line = 1, col = 1;
};

/// Splits `text` into tokens; the last one is always Eof (or an Error).
std::vector<Token> lexTir(std::string_view text);

/// A readable description of a token for "expected X, found Y" messages.
std::string describe(const Token &tok);

} // namespace kiln::ir::tir
