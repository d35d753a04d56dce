//===- Lexer.cpp - Tokens of the .tir text format -------------------------===//
//
// Columns count bytes from 1, like every Location in Kiln. Lexing stops at the first
// malformed token, which becomes an Error token; everything before it is still
// delivered so that the parser reports errors in text order.
//
//===----------------------------------------------------------------------===//
#include "ir/Lexer.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace kiln::ir::tir {

namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

class Lexer {
public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> toks;
    for (;;) {
      skipSpaceAndComments();
      Token t = next();
      Tok kind = t.kind;
      toks.push_back(std::move(t));
      if (kind == Tok::Eof || kind == Tok::Error)
        return toks;
    }
  }

private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (!atEnd() && peek() != '\n')
          advance();
      } else {
        return;
      }
    }
  }

  Token make(Tok kind, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = startLine_;
    t.col = startCol_;
    return t;
  }

  Token error(std::string message) { return make(Tok::Error, std::move(message)); }

  std::string identChars() {
    size_t start = pos_;
    while (!atEnd() && isIdentChar(peek()))
      advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  Token next() {
    startLine_ = line_;
    startCol_ = col_;
    if (atEnd())
      return make(Tok::Eof);
    char c = peek();
    if (isIdentStart(c))
      return make(Tok::Ident, identChars());
    if (isDigit(c) || (c == '-' && isDigit(peek(1))))
      return number();
    if (c == '"')
      return string();
    if (c == '%') {
      advance();
      std::string name = identChars();
      if (name.empty())
        return error("expected a value name after '%'");
      return make(Tok::ValueName, name);
    }
    if (c == '@') {
      advance();
      if (peek() == '"') {
        Token s = string();
        if (s.kind == Tok::String)
          s.kind = Tok::AtName;
        return s;
      }
      std::string name = identChars();
      if (name.empty())
        return error("expected a kernel name after '@'");
      return make(Tok::AtName, name);
    }
    advance();
    switch (c) {
    case '^': return make(Tok::Caret);
    case '(': return make(Tok::LParen);
    case ')': return make(Tok::RParen);
    case '{': return make(Tok::LBrace);
    case '}': return make(Tok::RBrace);
    case '[': return make(Tok::LBracket);
    case ']': return make(Tok::RBracket);
    case '<': return make(Tok::Less);
    case '>': return make(Tok::Greater);
    case ',': return make(Tok::Comma);
    case ':': return make(Tok::Colon);
    case '=': return make(Tok::Equal);
    case '*': return make(Tok::Star);
    case '-': return make(Tok::Minus);
    }
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      return error(std::string("unexpected character '") + c + "'");
    char buf[48];
    std::snprintf(buf, sizeof buf, "unexpected byte 0x%02x", u);
    return error(buf);
  }

  Token number() {
    size_t start = pos_;
    bool isFloatLit = false;
    if (peek() == '-')
      advance();
    while (isDigit(peek()))
      advance();
    if (peek() == '.' && isDigit(peek(1))) {
      isFloatLit = true;
      advance();
      while (isDigit(peek()))
        advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      isFloatLit = true;
      advance();
      if (peek() == '+' || peek() == '-')
        advance();
      while (isDigit(peek()))
        advance();
    }
    if (isIdentChar(peek()) || peek() == '.')
      return error("malformed number");
    std::string_view digits = text_.substr(start, pos_ - start);
    const char *first = digits.data(), *last = digits.data() + digits.size();
    if (isFloatLit) {
      Token t = make(Tok::Float, std::string(digits));
      // from_chars does not take a leading '+' but does take '-', as printed.
      auto res = std::from_chars(first, last, t.floatValue);
      if (res.ec != std::errc() || res.ptr != last)
        return error("float literal '" + std::string(digits) + "' is out of range");
      return t;
    }
    Token t = make(Tok::Int, std::string(digits));
    auto res = std::from_chars(first, last, t.intValue);
    if (res.ec != std::errc() || res.ptr != last)
      return error("integer literal '" + std::string(digits) + "' is out of range");
    return t;
  }

  Token string() {
    advance(); // opening quote
    std::string value;
    for (;;) {
      if (atEnd() || peek() == '\n')
        return error("unterminated string");
      char c = peek();
      if (c == '"') {
        advance();
        return make(Tok::String, value);
      }
      if (c != '\\') {
        value += c;
        advance();
        continue;
      }
      advance();
      char e = atEnd() ? '\0' : peek();
      switch (e) {
      case 'n': value += '\n'; break;
      case 't': value += '\t'; break;
      case '"': value += '"'; break;
      case '\\': value += '\\'; break;
      case 'x': {
        int hi = hexDigit(peek(1)), lo = hexDigit(peek(2));
        if (hi < 0 || lo < 0)
          return error("\\x must be followed by two hex digits");
        value += static_cast<char>(hi * 16 + lo);
        advance();
        advance();
        break;
      }
      default:
        return error("unknown escape sequence in string");
      }
      advance();
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
  uint32_t startLine_ = 1, startCol_ = 1;
};

} // namespace

std::vector<Token> lexTir(std::string_view text) { return Lexer(text).run(); }

std::string describe(const Token &tok) {
  switch (tok.kind) {
  case Tok::Eof: return "end of file";
  case Tok::Error: return "invalid token";
  case Tok::Ident: return "'" + tok.text + "'";
  case Tok::ValueName: return "'%" + tok.text + "'";
  case Tok::AtName: return "'@" + tok.text + "'";
  case Tok::Int:
  case Tok::Float: return "number " + tok.text;
  case Tok::String: return "a string";
  case Tok::Caret: return "'^'";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::Less: return "'<'";
  case Tok::Greater: return "'>'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Equal: return "'='";
  case Tok::Star: return "'*'";
  case Tok::Minus: return "'-'";
  }
  return "token";
}

} // namespace kiln::ir::tir
