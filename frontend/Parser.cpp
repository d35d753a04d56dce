//===- Parser.cpp - Kiln source text to AST -------------------------------===//
//
// parseFile runs in stages, each of which can only let through input that the next
// one handles safely:
//  1. the whole file: size limit (E0003), then UTF-8 without NUL bytes (E0002);
//  2. lexing, one token at a time, so that the token limit (E0003) and the depth
//     limits (E0004, NestingScan.h) stop a hostile file before it costs memory; the
//     same loop reports bad characters, strings, comments (E0005) and numbers (E0007);
//  3. ANTLR's parser with readable errors (E0006, see SyntaxErrors.h) and recovery;
//  4. the AST builder, only if nothing above reported an error.
// Stages 2-4 run on a thread with a large stack: the generated parser recurses once per
// bracket, block and prefix operator, which the nesting limit bounds, and the large stack
// keeps that bound far from the edge.
//
// The lexer is fed one symbol per byte (bytes 0x80-0xFF as the code points U+0080-
// U+00FF) instead of decoded UTF-8. Kiln's tokens are ASCII, and non-ASCII text can only
// appear inside strings and comments, whose rules accept any symbol; in exchange,
// ANTLR's character positions and indices are byte columns and byte offsets, which is
// what Location promises, with no conversion table for files with non-ASCII text.
//
//===----------------------------------------------------------------------===//
#include "frontend/Parser.h"

#include "frontend/ASTBuilder.h"
#include "frontend/Literals.h"
#include "frontend/NestingScan.h"
#include "frontend/SyntaxErrors.h"
#include "support/LargeStack.h"

#include "KilnLexer.h"
#include "KilnParser.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <unordered_set>

namespace kiln {

using grammar::KilnLexer;
using grammar::KilnParser;

namespace {

/// Thrown once the DiagnosticEngine's error limit is reached, to stop lexing and parsing.
struct StopParsing {};

/// One parseFile call: where its errors go and whether it reported any.
struct Session {
  Session(uint32_t file, std::string_view text, DiagnosticEngine &diags)
      : file(file), text(text), diags(diags) {}

  uint32_t file;
  std::string_view text;
  DiagnosticEngine &diags;
  bool hadError = false;
  /// Byte offsets of the tokens right after a bad character or comment. A syntax error
  /// there is the same mistake seen again by the parser, so it is not reported twice.
  std::unordered_set<size_t> afterLexError;
  /// Token index of the last syntax error. ANTLR's recovery often stumbles again within
  /// a token or two of an error; such follow-on errors are dropped.
  size_t lastSyntaxError = 0;
  /// Syntax errors up to this token index follow from an earlier one (SyntaxErrorReport).
  size_t quietThrough = 0;
  bool anySyntaxError = false;

  Location at(const antlr4::Token *tok) const {
    return Location{file, static_cast<uint32_t>(tok->getLine()),
                    static_cast<uint32_t>(tok->getCharPositionInLine() + 1)};
  }

  /// E0006 from the parser's error strategy, unless it repeats an earlier error.
  void syntaxError(const syntax::SyntaxErrorReport &r) {
    kiln_assert(r.at != nullptr, "syntax error without a token");
    constexpr size_t kFollowOnTokens = 3;
    size_t index = r.at->getTokenIndex();
    bool followOn = anySyntaxError && index >= lastSyntaxError &&
                    index - lastSyntaxError <= kFollowOnTokens;
    followOn |= anySyntaxError && index <= quietThrough;
    anySyntaxError = true;
    lastSyntaxError = index;
    quietThrough = std::max(quietThrough, r.quietThrough);
    if (followOn || afterLexError.count(r.at->getStartIndex())) {
      hadError = true; // the same mistake, already reported
      return;
    }
    std::optional<Location> noteAt;
    if (r.noteAt)
      noteAt = at(r.noteAt);
    Location where = at(r.at);
    if (r.atOffset) {
      // A place between tokens (just after the one before, or a `//` there): on the line
      // of the token before, which the offset is on by construction.
      where = at(r.after);
      where.col += static_cast<uint32_t>(*r.atOffset - r.after->getStartIndex());
    }
    error(where, DiagCode::SyntaxError, r.message, r.hint, noteAt, r.note);
  }

  void error(Location where, DiagCode code, const std::string &message,
             const std::string &hint = {}, std::optional<Location> noteAt = {},
             const std::string &note = {}) {
    hadError = true;
    {
      InFlightDiagnostic d = diags.error(where, code);
      d << message;
      if (!hint.empty())
        d.hint(hint);
      if (noteAt)
        d.note(*noteAt, note);
    }
    if (diags.reachedErrorLimit())
      throw StopParsing{};
  }
};

/// The lexer's input: one symbol per byte (see the file comment).
class ByteStream : public antlr4::ANTLRInputStream {
public:
  ByteStream(std::string_view bytes, std::string sourceName) {
    _data.resize(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
      _data[i] = static_cast<char32_t>(static_cast<unsigned char>(bytes[i]));
    // A UTF-8 byte order mark is not part of the program; reading it as three spaces
    // keeps every column right.
    if (bytes.substr(0, 3) == "\xEF\xBB\xBF")
      _data[0] = _data[1] = _data[2] = U' ';
    name = std::move(sourceName);
    p = 0;
  }
};

/// Hands the parser the tokens that the checking loop collected.
class VectorTokenSource : public antlr4::TokenSource {
public:
  VectorTokenSource(std::vector<std::unique_ptr<antlr4::Token>> tokens, antlr4::Lexer &lexer)
      : tokens_(std::move(tokens)), lexer_(lexer) {}

  std::unique_ptr<antlr4::Token> nextToken() override {
    // The last token is EOF; hand out copies of it for as long as the parser asks.
    if (next_ + 1 < tokens_.size())
      return std::move(tokens_[next_++]);
    return std::make_unique<antlr4::CommonToken>(tokens_.back().get());
  }
  size_t getLine() const override { return upcoming()->getLine(); }
  size_t getCharPositionInLine() override { return upcoming()->getCharPositionInLine(); }
  antlr4::CharStream *getInputStream() override { return lexer_.getInputStream(); }
  std::string getSourceName() override { return lexer_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override {
    return lexer_.getTokenFactory();
  }

private:
  const antlr4::Token *upcoming() const {
    return tokens_[std::min(next_, tokens_.size() - 1)].get();
  }

  std::vector<std::unique_ptr<antlr4::Token>> tokens_;
  size_t next_ = 0;
  antlr4::Lexer &lexer_;
};

/// The lexer has a catch-all rule, so this only fires if the grammar loses it.
class LexerErrorListener : public antlr4::BaseErrorListener {
public:
  explicit LexerErrorListener(Session &s) : s_(s) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t col,
                   const std::string &, std::exception_ptr) override {
    s_.error(Location{s_.file, static_cast<uint32_t>(line), static_cast<uint32_t>(col + 1)},
             DiagCode::LexError, "unexpected input");
  }

private:
  Session &s_;
};

/// Errors that reach the parser's listeners without going through KilnErrorStrategy.
class ParserErrorListener : public antlr4::BaseErrorListener {
public:
  explicit ParserErrorListener(Session &s) : s_(s) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *tok, size_t line, size_t col,
                   const std::string &msg, std::exception_ptr) override {
    Location where = tok ? s_.at(tok)
                         : Location{s_.file, static_cast<uint32_t>(line),
                                    static_cast<uint32_t>(col + 1)};
    s_.error(where, DiagCode::SyntaxError, msg);
  }

private:
  Session &s_;
};

} // namespace

//===--------------------------------------------------------------------===//
// Stage 1: the file as a whole
//===--------------------------------------------------------------------===//

struct EncodingProblem {
  size_t offset;
  std::string message;
};

static std::string hexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
  return buf;
}

/// The first byte that keeps `s` from being UTF-8 text: a NUL, a byte that cannot start a
/// sequence, or the start of a truncated, overlong or out-of-range sequence.
static std::optional<EncodingProblem> findEncodingProblem(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0)
      return EncodingProblem{i, "the file contains a NUL byte; Kiln sources are UTF-8 text"};
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return EncodingProblem{i, "invalid UTF-8: byte " + hexByte(c) + " cannot start a character"};
    }
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= n || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return EncodingProblem{i, "invalid UTF-8: the character starting with byte " +
                                      hexByte(c) + " is cut short"};
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return EncodingProblem{i, "invalid UTF-8: the bytes starting with " + hexByte(c) +
                                    " do not encode a valid character"};
    i += len;
  }
  return std::nullopt;
}

static Location locationOfOffset(uint32_t file, std::string_view text, size_t offset) {
  uint32_t line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i)
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  return Location{file, line, static_cast<uint32_t>(offset - lineStart + 1)};
}

//===--------------------------------------------------------------------===//
// Stage 2: lexing with limits and token checks
//===--------------------------------------------------------------------===//

/// The UTF-8 character at `offset` (validated in stage 1) for messages.
static std::string describeCharacter(std::string_view text, size_t offset) {
  unsigned char c = static_cast<unsigned char>(text[offset]);
  char buf[32];
  if (c < 0x20 || c == 0x7F) {
    std::snprintf(buf, sizeof buf, "control character U+%04X", static_cast<unsigned>(c));
    return buf;
  }
  if (c < 0x80)
    return std::string("character '") + static_cast<char>(c) + "'";
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  uint32_t cp = c & (c >= 0xF0 ? 0x07 : c >= 0xE0 ? 0x0F : 0x1F);
  for (size_t k = 1; k < len && offset + k < text.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(text[offset + k]) & 0x3F);
  std::snprintf(buf, sizeof buf, " (U+%04X)", static_cast<unsigned>(cp));
  return "character '" + std::string(text.substr(offset, len)) + "'" + buf;
}

static std::string_view tokenBytes(std::string_view text, const antlr4::Token *tok) {
  size_t start = tok->getStartIndex(), stop = tok->getStopIndex();
  if (start > stop || stop >= text.size())
    return {};
  return text.substr(start, stop - start + 1);
}

/// E0005/E0007 for a token whose text the lexer accepted only in shape.
static void checkToken(Session &s, const antlr4::Token *tok) {
  switch (tok->getType()) {
  case KilnLexer::BAD_CHAR: {
    size_t offset = tok->getStartIndex();
    char c = s.text[offset];
    std::string hint;
    if (c == '#')
      hint = "comments start with // or are enclosed in /* */";
    else if (c == '?')
      hint = "Kiln writes the conditional as in Python: a if c else b (or where(c, a, b) "
             "for tiles)";
    s.error(s.at(tok), DiagCode::LexError, "unexpected " + describeCharacter(s.text, offset), hint);
    return;
  }
  case KilnLexer::UNTERMINATED_COMMENT:
    s.error(s.at(tok), DiagCode::LexError, "unterminated block comment",
            "close it with */ (block comments do not nest)");
    return;
  case KilnLexer::STRING: {
    std::string_view bytes = tokenBytes(s.text, tok);
    if (!bytes.empty() && bytes[0] == '\'') {
      s.error(s.at(tok), DiagCode::LexError, "string literals use double quotes",
              "write \"...\" instead of '...'");
      return;
    }
    syntax::StringDecodeResult r = syntax::decodeStringLiteral(bytes);
    if (r.status == syntax::StringDecodeResult::Unterminated) {
      s.error(s.at(tok), DiagCode::LexError, "unterminated string literal",
              "close it with \" on the same line");
    } else if (r.status == syntax::StringDecodeResult::BadEscape) {
      Location where = s.at(tok);
      where.col += static_cast<uint32_t>(r.errorOffset); // strings never span lines
      s.error(where, DiagCode::LexError, "unknown escape sequence '" + r.escape + "'",
              "the escapes are \\\" \\\\ \\n and \\t");
    }
    return;
  }
  case KilnLexer::INT: {
    uint64_t value;
    std::string text = tok->getText();
    switch (syntax::decodeIntLiteral(text, value)) {
    case syntax::NumberStatus::Ok: return;
    case syntax::NumberStatus::Malformed:
      s.error(s.at(tok), DiagCode::BadLiteral, "malformed number '" + text + "'",
              "numbers are written 42, 0x2A, 1_000, 3.5 or 1e-6");
      return;
    case syntax::NumberStatus::OutOfRange:
      s.error(s.at(tok), DiagCode::BadLiteral,
              "integer literal '" + text + "' does not fit in 64 bits");
      return;
    }
    return;
  }
  case KilnLexer::FLOAT: {
    double value;
    std::string text = tok->getText();
    switch (syntax::decodeFloatLiteral(text, value)) {
    case syntax::NumberStatus::Ok: return;
    case syntax::NumberStatus::Malformed:
      s.error(s.at(tok), DiagCode::BadLiteral, "malformed number '" + text + "'");
      return;
    case syntax::NumberStatus::OutOfRange:
      s.error(s.at(tok), DiagCode::BadLiteral,
              "float literal '" + text + "' is too large for a 64-bit float");
      return;
    }
    return;
  }
  default: return;
  }
}

/// Lexes the whole file into `tokens` (default channel only, ending with EOF), checking
/// tokens as they come. Returns false when a limit stopped lexing.
static bool lexFile(Session &s, KilnLexer &lexer, const ParseLimits &limits,
                    std::vector<std::unique_ptr<antlr4::Token>> &tokens) {
  size_t count = 0;
  bool lexErrorBefore = false;
  syntax::NestingScan nesting(limits.maxNesting, syntax::ASTBuilder::kMaxDepth);
  for (;;) {
    std::unique_ptr<antlr4::Token> tok = lexer.nextToken();
    size_t type = tok->getType();
    if (type == antlr4::Token::EOF) {
      if (lexErrorBefore)
        s.afterLexError.insert(tok->getStartIndex());
      tokens.push_back(std::move(tok));
      return true;
    }
    if (++count > limits.maxTokens) {
      s.error(s.at(tok.get()), DiagCode::InputTooLarge,
              "the file has more than " + std::to_string(limits.maxTokens) + " tokens");
      return false;
    }
    unsigned errorsBefore = s.diags.errorCount();
    checkToken(s, tok.get());
    bool badToken = s.diags.errorCount() != errorsBefore;
    if (tok->getChannel() != antlr4::Token::DEFAULT_CHANNEL) {
      lexErrorBefore = true; // bad characters and unterminated comments: reported, not parsed
      continue;
    }
    if (lexErrorBefore || badToken)
      s.afterLexError.insert(tok->getStartIndex());
    // A bad token the parser still sees (an unterminated string) also confuses it at the
    // token after: that is the same mistake too.
    lexErrorBefore = badToken;
    switch (nesting.next(type)) {
    case syntax::NestingScan::Verdict::Ok:
      break;
    case syntax::NestingScan::Verdict::TooDeep:
      s.error(s.at(tok.get()), DiagCode::NestingTooDeep,
              "brackets, blocks and prefix operators nest more than " +
                  std::to_string(limits.maxNesting) + " levels deep here",
              "split the expression with `let` bindings or move code into a `fn`");
      return false;
    case syntax::NestingScan::Verdict::SpineTooLong:
      // Worded like the builder's check, which this one anticipates.
      s.error(s.at(tok.get()), DiagCode::NestingTooDeep,
              "this expression or statement nests more than " +
                  std::to_string(syntax::ASTBuilder::kMaxDepth) + " levels deep",
              "split it into smaller pieces with `let` bindings");
      return false;
    }
    tokens.push_back(std::move(tok));
  }
}

//===--------------------------------------------------------------------===//
// Stages 3 and 4
//===--------------------------------------------------------------------===//

static std::unique_ptr<ast::Module> lexParseAndBuild(Session &s, std::string sourceName,
                                                     const ParseLimits &limits) {
  ByteStream input(s.text, std::move(sourceName));
  KilnLexer lexer(&input);
  LexerErrorListener lexerErrors(s);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&lexerErrors);

  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  if (!lexFile(s, lexer, limits, tokens))
    return nullptr;

  VectorTokenSource source(std::move(tokens), lexer);
  antlr4::CommonTokenStream stream(&source);
  KilnParser parser(&stream);
  ParserErrorListener parserErrors(s);
  parser.removeErrorListeners();
  parser.addErrorListener(&parserErrors);
  parser.setErrorHandler(std::make_shared<syntax::KilnErrorStrategy>(
      s.text, [&s](const syntax::SyntaxErrorReport &r) { s.syntaxError(r); }));
  KilnParser::ModuleContext *tree = parser.module();
  if (s.hadError)
    return nullptr;
  return syntax::ASTBuilder(s.file, s.text, s.diags).build(tree);
}

//===--------------------------------------------------------------------===//
// Entry point
//===--------------------------------------------------------------------===//

std::unique_ptr<ast::Module> parseFile(SourceManager &sources, uint32_t file,
                                       DiagnosticEngine &diags, const ParseLimits &limits) {
  const std::string *text = sources.text(file);
  if (!text) {
    diags.error(Location{file, 0, 0}, DiagCode::FileNotReadable)
        << "cannot read '" << sources.name(file) << "': " << sources.readError(file);
    return nullptr;
  }
  if (text->size() > limits.maxBytes) {
    diags.error(Location{file, 1, 1}, DiagCode::InputTooLarge)
        << "the file is " << text->size() << " bytes; the limit is " << limits.maxBytes
        << " bytes";
    return nullptr;
  }
  if (std::optional<EncodingProblem> problem = findEncodingProblem(*text)) {
    diags.error(locationOfOffset(file, *text, problem->offset), DiagCode::InvalidEncoding)
        << problem->message;
    return nullptr;
  }

  Session session(file, *text, diags);
  std::unique_ptr<ast::Module> module;
  std::string sourceName(sources.name(file));
  // 256 MiB of stack is reserved address space; only the pages touched are committed.
  runOnLargeStack(
      [&] {
        try {
          module = lexParseAndBuild(session, sourceName, limits);
        } catch (const StopParsing &) {
          module = nullptr;
        }
        return 0;
      },
      size_t(256) << 20);
  if (session.hadError)
    return nullptr;
  return module;
}

} // namespace kiln
