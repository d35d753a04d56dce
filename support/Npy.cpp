//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// NumPy reads a header by decoding it (latin-1 for formats 1.0 and 2.0, UTF-8 for 3.0),
// dropping, in 1.0 and 2.0 only, the 'L' that Python 2 wrote after long integers, and
// evaluating the rest with ast.literal_eval. The parser here reads Python's literal
// syntax as literal_eval does (dicts, sets, tuples, lists, strings side by side,
// numbers, True, False, None, comments and blank lines), so that a repeated key's first
// value may be anything Python takes, and refuses what it does not; it also refuses the
// syntax no header writer produces (escapes, string prefixes, triple quotes, line
// continuations, odd indentation), so that no file means one thing to NumPy and another
// to Kiln. tests/fuzz/npy_header_fuzz.py checks that against NumPy itself.
//
//===----------------------------------------------------------------------===//
#include "support/Npy.h"
#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

namespace {
constexpr char kMagic[] = "\x93NUMPY";

/// `text` as a message can show it: bytes that are not printable ASCII as \xHH, so that
/// a hostile header cannot write to the user's terminal; long text cut short.
std::string printable(std::string_view text) {
  constexpr size_t kMaxShown = 60;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > kMaxShown)
    out += "...";
  return out;
}

/// One value of the Python literal syntax a header can hold.
struct PyLiteral {
  // The first four in the order of parseItems' names.
  enum class Kind { Dict, Set, Tuple, List, Str, Int, Float, Complex, Bool, None, Ellipsis };
  Kind kind = Kind::None;
  std::string text;             ///< Str: the characters
  uint64_t magnitude = 0;       ///< Int: the absolute value, when it fits
  bool negative = false;        ///< Int
  bool tooLarge = false;        ///< Int: beyond 64 bits
  bool signedLiteral = false;   ///< a number written with a sign, which Python allows once
  bool sum = false;             ///< Complex: a real number plus or minus an imaginary one
  bool truth = false;           ///< Bool
  std::vector<PyLiteral> items; ///< Set, Tuple, List; Dict: key, value, key, value, ...
  size_t begin = 0, end = 0;    ///< where it is written in the header
};

bool isNumber(const PyLiteral &value) {
  return value.kind == PyLiteral::Kind::Int || value.kind == PyLiteral::Kind::Float ||
         value.kind == PyLiteral::Kind::Complex;
}

/// Whether Python can hash the value: literal_eval fails on a dict key or set element
/// that it cannot.
bool isHashable(const PyLiteral &value) {
  switch (value.kind) {
  case PyLiteral::Kind::Dict:
  case PyLiteral::Kind::Set:
  case PyLiteral::Kind::List:
    return false;
  case PyLiteral::Kind::Tuple:
    return std::all_of(value.items.begin(), value.items.end(), isHashable);
  default:
    return true;
  }
}

bool isNewline(char c) { return c == '\n' || c == '\r'; }
bool isHorizontalSpace(char c) { return c == ' ' || c == '\t' || c == '\f'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
/// A character that continues a Python name or number. Any non-ASCII byte counts:
/// Python would read it as part of an identifier or refuse it, and either way the
/// header is refused.
bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
unsigned digitValue(char c) {
  if (isDigit(c))
    return static_cast<unsigned>(c - '0');
  if (c >= 'a' && c <= 'f')
    return static_cast<unsigned>(c - 'a') + 10;
  if (c >= 'A' && c <= 'F')
    return static_cast<unsigned>(c - 'A') + 10;
  return 99; // no digit in any base
}

/// Recursive descent over one header. Positions in messages are byte offsets into the
/// header text (the dict starts at 0 in every file NumPy writes).
class HeaderParser {
public:
  HeaderParser(std::string_view text, bool dropLongSuffix) : Text(text), DropLongSuffix(dropLongSuffix) {}

  /// The header's one value, with only blank lines and comments around it.
  bool parse(PyLiteral &out) {
    // literal_eval strips leading spaces and tabs. Blank lines may follow, and then the
    // value must start its line: Python refuses an indented one.
    while (peek() == ' ' || peek() == '\t')
      ++Pos;
    while (skipBlankLine()) {
    }
    if (Pos < Text.size() && isHorizontalSpace(peek()))
      return fail("the header dict is indented at offset " + std::to_string(Pos) +
                  "; it must begin its line");
    if (!parseValue(out))
      return false;
    // The rest of the line, then blank lines to the end.
    skipHorizontalSpace();
    skipComment();
    if (Pos < Text.size()) {
      if (!isNewline(peek()))
        return fail("unexpected text after the header dict at offset " + std::to_string(Pos) + ": " +
                    describeAt(Pos));
      skipNewline();
      while (Pos < Text.size()) {
        const size_t line = Pos;
        if (!skipBlankLine()) {
          skipHorizontalSpace();
          return fail("unexpected text after the header dict at offset " + std::to_string(Pos) + ": " +
                      describeAt(Pos));
        }
        // Python takes a last line of spaces or tabs without a newline for an indented
        // statement (a form feed resets the indentation).
        if (atEnd() && !isNewline(Text[Pos - 1]) && Text[Pos - 1] != '\f' &&
            Text.substr(line).find('#') == std::string_view::npos)
          return fail("the header ends in an indented line of spaces at offset " + std::to_string(line));
      }
    }
    return true;
  }

  const std::string &error() const { return Error; }

private:
  static constexpr unsigned kMaxNesting = 100;

  std::string_view Text;
  size_t Pos = 0;
  /// Formats 1.0 and 2.0: drop the 'L' after an integer, as NumPy's _filter_header does.
  bool DropLongSuffix;
  /// The brackets open at Pos, innermost last, with where each opened.
  std::vector<std::pair<char, size_t>> Open;
  std::string Error;

  char peek(size_t ahead = 0) const { return Pos + ahead < Text.size() ? Text[Pos + ahead] : '\0'; }
  bool atEnd() const { return Pos >= Text.size(); }
  bool fail(std::string message) {
    if (Error.empty())
      Error = std::move(message);
    return false;
  }

  /// What the character at `at` is, for a message.
  std::string describeAt(size_t at) const {
    char c = Text[at];
    if (c == '\\')
      return "a line continuation ('\\'), which a header does not need";
    if (static_cast<unsigned char>(c) >= 0x80)
      return "a non-ASCII character outside a string";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return "control character " + printable(Text.substr(at, 1));
    return "'" + printable(Text.substr(at, 1)) + "'";
  }
  bool unterminated() {
    static const std::pair<char, const char *> names[] = {{'{', "dict"}, {'(', "tuple"}, {'[', "list"}};
    const char *name = "value";
    for (auto &[bracket, what] : names)
      if (!Open.empty() && Open.back().first == bracket)
        name = what;
    if (Open.empty())
      return fail("the header ends where a value should begin");
    return fail(std::string("unterminated ") + name + " (opened at offset " + std::to_string(Open.back().second) +
                ")");
  }
  /// Refuses the character at Pos, saying what was `expected` there.
  bool expected(const std::string &expected) {
    if (atEnd())
      return unterminated();
    return fail("expected " + expected + " at offset " + std::to_string(Pos) + ", found " + describeAt(Pos));
  }

  void skipHorizontalSpace() {
    while (isHorizontalSpace(peek()))
      ++Pos;
  }
  void skipComment() {
    if (peek() == '#')
      while (!atEnd() && !isNewline(peek()))
        ++Pos;
  }
  void skipNewline() {
    if (peek() == '\r' && peek(1) == '\n')
      ++Pos;
    ++Pos;
  }
  /// Skips a line holding only whitespace and perhaps a comment, with its newline (or
  /// running to the end of the text); false, moving nowhere, at any other line.
  bool skipBlankLine() {
    size_t start = Pos;
    skipHorizontalSpace();
    skipComment();
    if (isNewline(peek())) {
      skipNewline();
      return true;
    }
    if (atEnd() && Pos > start)
      return true;
    Pos = start;
    return false;
  }
  /// Between the tokens inside brackets, where Python ignores newlines.
  void skipSpace() {
    for (;;) {
      skipHorizontalSpace();
      skipComment();
      if (!isNewline(peek()))
        return;
      skipNewline();
    }
  }
  /// Skips what may follow a token before the next: inside brackets newlines too.
  void skipSpaceHere() {
    if (Open.empty())
      skipHorizontalSpace();
    else
      skipSpace();
  }

  bool openBracket() {
    if (Open.size() >= kMaxNesting)
      return fail("values nested more than " + std::to_string(kMaxNesting) + " deep");
    Open.push_back({peek(), Pos});
    ++Pos;
    return true;
  }

  /// A value: literal_eval's grammar has one operator besides signs, a real number plus
  /// or minus an imaginary one (`1+2j`).
  bool parseValue(PyLiteral &out) {
    if (!parseFactor(out))
      return false;
    if (out.kind != PyLiteral::Kind::Int && out.kind != PyLiteral::Kind::Float)
      return true;
    const size_t save = Pos;
    skipSpaceHere();
    if (peek() != '+' && peek() != '-') {
      Pos = save;
      return true;
    }
    const size_t op = Pos++;
    skipSpaceHere();
    PyLiteral imaginary;
    if (!parseFactor(imaginary))
      return false;
    if (imaginary.kind != PyLiteral::Kind::Complex || imaginary.signedLiteral || imaginary.sum)
      return fail("the '" + std::string(1, Text[op]) + "' at offset " + std::to_string(op) +
                  " is not followed by an imaginary number");
    out.kind = PyLiteral::Kind::Complex;
    out.sum = true;
    out.end = Pos;
    return true;
  }

  /// A value without a binary operator.
  bool parseFactor(PyLiteral &out) {
    if (atEnd())
      return unterminated();
    const size_t start = Pos;
    out.begin = start;
    const char c = peek();
    bool ok;
    if (c == '{') {
      ok = parseBraces(out);
    } else if (c == '(' || c == '[') {
      ok = parseSequence(out);
    } else if (c == '\'' || c == '"') {
      ok = parseStrings(out);
    } else if (isDigit(c) || (c == '.' && isDigit(peek(1)))) {
      ok = parseNumber(out);
    } else if (c == '.' && peek(1) == '.' && peek(2) == '.') {
      Pos += 3;
      out.kind = PyLiteral::Kind::Ellipsis;
      ok = true;
    } else if (c == '+' || c == '-') {
      ok = parseSigned(out);
    } else if (isNameChar(c) && !isDigit(c) && static_cast<unsigned char>(c) < 0x80) {
      ok = parseName(out);
    } else {
      ok = expected("a value");
    }
    if (ok && out.end == 0)
      out.end = Pos;
    return ok;
  }

  /// The items of the bracket just opened for `out` (a dict, set, tuple or list) up to
  /// its closing bracket, a trailing comma allowed; `parseItem` reads one. Sets `comma`
  /// when there was one.
  template <typename ParseItem>
  bool parseItems(const PyLiteral &out, bool &comma, ParseItem parseItem) {
    for (;;) {
      const bool braces = out.kind == PyLiteral::Kind::Dict || out.kind == PyLiteral::Kind::Set;
      const char close = braces ? '}' : out.kind == PyLiteral::Kind::Tuple ? ')' : ']';
      skipSpace();
      if (peek() == close)
        break;
      if (!parseItem())
        return false;
      skipSpace();
      if (peek() == ',') {
        ++Pos;
        comma = true;
        continue;
      }
      if (peek() != close) {
        static const char *const names[] = {"dict", "set", "tuple", "list"};
        return expected(std::string("',' or '") + close + "' in a " + names[static_cast<int>(out.kind)]);
      }
    }
    ++Pos;
    Open.pop_back();
    return true;
  }

  /// `{key: value, ...}`, or a set `{a, b}`; `{}` is a dict.
  bool parseBraces(PyLiteral &out) {
    out.kind = PyLiteral::Kind::Dict;
    if (!openBracket())
      return false;
    bool comma = false;
    return parseItems(out, comma, [&] {
      PyLiteral key;
      if (!parseValue(key))
        return false;
      skipSpace();
      if (out.items.empty() && (peek() == ',' || peek() == '}'))
        out.kind = PyLiteral::Kind::Set;
      const bool isDict = out.kind == PyLiteral::Kind::Dict;
      if (!isHashable(key))
        return fail(std::string(isDict ? "the dict key" : "the set element") + " at offset " +
                    std::to_string(key.begin) + " cannot be hashed");
      out.items.push_back(std::move(key));
      if (!isDict)
        return true;
      if (peek() != ':')
        return expected("':' after a dict key");
      ++Pos;
      skipSpace();
      PyLiteral value;
      if (!parseValue(value))
        return false;
      out.items.push_back(std::move(value));
      return true;
    });
  }

  /// `(a, b)`, `(a,)`, `()`, `[a, b]`; `(a)` is `a` itself.
  bool parseSequence(PyLiteral &out) {
    out.kind = peek() == '(' ? PyLiteral::Kind::Tuple : PyLiteral::Kind::List;
    if (!openBracket())
      return false;
    bool comma = false;
    const bool ok = parseItems(out, comma, [&] {
      PyLiteral item;
      if (!parseValue(item))
        return false;
      out.items.push_back(std::move(item));
      return true;
    });
    if (ok && out.kind == PyLiteral::Kind::Tuple && out.items.size() == 1 && !comma) {
      // Parentheses around one value group it; the value keeps its own kind.
      PyLiteral inner = std::move(out.items.front());
      out = std::move(inner);
    }
    return ok;
  }

  /// One string or several side by side, which Python joins.
  bool parseStrings(PyLiteral &out) {
    out.kind = PyLiteral::Kind::Str;
    while (peek() == '\'' || peek() == '"') {
      const char quote = peek();
      const size_t start = Pos;
      if (peek(1) == quote && peek(2) == quote)
        return fail("a triple-quoted string at offset " + std::to_string(start) +
                    "; a header's strings are plain");
      for (++Pos;; ++Pos) {
        if (atEnd() || isNewline(peek()))
          return fail("unterminated string (opened at offset " + std::to_string(start) + ")");
        if (peek() == '\\')
          return fail("an escape sequence ('\\') in the string at offset " + std::to_string(start) +
                      "; a header's strings are plain");
        if (peek() == quote)
          break;
        out.text += peek();
      }
      ++Pos;
      out.end = Pos;
      skipSpaceHere();
    }
    return true;
  }

  /// A Python number: an integer (decimal, or 0x, 0o, 0b), a float or an imaginary
  /// number, with single underscores between digits.
  bool parseNumber(PyLiteral &out) {
    const size_t start = Pos;
    auto malformed = [&] {
      while (isNameChar(peek()) || peek() == '.')
        ++Pos;
      return fail("malformed number '" + printable(Text.substr(start, Pos - start)) + "' at offset " +
                  std::to_string(start));
    };
    // One or more digits of `base`, an underscore between two of them; their value is
    // accumulated into out.magnitude.
    auto digits = [&](unsigned base) {
      if (digitValue(peek()) >= base)
        return false;
      for (;;) {
        const unsigned digit = digitValue(peek());
        if (digit >= base)
          return true;
        if (out.magnitude > (UINT64_MAX - digit) / base)
          out.tooLarge = true;
        else
          out.magnitude = out.magnitude * base + digit;
        ++Pos;
        if (peek() == '_' && digitValue(peek(1)) >= base)
          return false;
        if (peek() == '_')
          ++Pos;
      }
    };
    out.kind = PyLiteral::Kind::Int;
    if (peek() == '0' && peek(1) != '\0' && std::strchr("xXoObB", peek(1)) != nullptr) {
      const unsigned base = std::strchr("xX", peek(1)) ? 16 : std::strchr("oO", peek(1)) ? 8 : 2;
      Pos += 2;
      if (peek() == '_')
        ++Pos;
      if (!digits(base))
        return malformed();
    } else {
      const bool leadingZero = peek() == '0';
      if (isDigit(peek()) && !digits(10))
        return malformed();
      if (peek() == '.') {
        ++Pos;
        out.kind = PyLiteral::Kind::Float;
        if (isDigit(peek()) && !digits(10))
          return malformed();
      }
      if (peek() == 'e' || peek() == 'E') {
        ++Pos;
        if (peek() == '+' || peek() == '-')
          ++Pos;
        out.kind = PyLiteral::Kind::Float;
        if (!digits(10))
          return malformed();
      }
      if (peek() == 'j' || peek() == 'J') {
        ++Pos;
        out.kind = PyLiteral::Kind::Complex;
      }
      // Python refuses leading zeros in a decimal integer, but for zero itself ("00").
      if (out.kind == PyLiteral::Kind::Int && leadingZero && (out.magnitude != 0 || out.tooLarge))
        return malformed();
    }
    out.end = Pos;
    if (DropLongSuffix) {
      // NumPy drops a name token 'L' that follows a number token, with nothing but spaces
      // between; a second 'L' after the first too.
      for (;;) {
        const size_t save = Pos;
        skipHorizontalSpace();
        if (peek() == 'L' && !isNameChar(peek(1))) {
          ++Pos;
          continue;
        }
        Pos = save;
        break;
      }
    }
    if (isNameChar(peek()) || peek() == '.')
      return malformed();
    return true;
  }

  /// `-3`, `+ 3`, `-(3)`, `-1.5j`: Python takes one sign before a number.
  bool parseSigned(PyLiteral &out) {
    const size_t start = Pos;
    const bool minus = peek() == '-';
    ++Pos;
    skipSpaceHere();
    // A second sign would be refused below; stopping here bounds the recursion too.
    if (peek() == '+' || peek() == '-')
      return fail("the sign at offset " + std::to_string(start) + " is not followed by a number");
    PyLiteral operand;
    if (!parseFactor(operand))
      return false;
    if (!isNumber(operand) || operand.signedLiteral || operand.sum)
      return fail("the sign at offset " + std::to_string(start) + " is not followed by a number");
    out = std::move(operand);
    out.begin = start;
    out.negative = minus && (out.magnitude != 0 || out.tooLarge);
    out.signedLiteral = true;
    return true;
  }

  bool parseName(PyLiteral &out) {
    const size_t start = Pos;
    while (isNameChar(peek()))
      ++Pos;
    std::string_view name = Text.substr(start, Pos - start);
    if (name == "True" || name == "False") {
      out.kind = PyLiteral::Kind::Bool;
      out.truth = name == "True";
      return true;
    }
    if (name == "None") {
      out.kind = PyLiteral::Kind::None;
      return true;
    }
    if (name == "set") {
      // literal_eval's one call: set() for an empty set.
      const size_t save = Pos;
      skipSpaceHere();
      if (peek() == '(') {
        ++Pos;
        skipSpace();
        if (peek() == ')') {
          ++Pos;
          out.kind = PyLiteral::Kind::Set;
          return true;
        }
      }
      Pos = save;
    }
    static const char *const prefixes[] = {"r", "u", "b", "f", "br", "rb", "fr", "rf"};
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return c | 0x20; });
    const bool isPrefix = std::find_if(std::begin(prefixes), std::end(prefixes),
                                       [&](const char *p) { return lower == p; }) != std::end(prefixes);
    if ((peek() == '\'' || peek() == '"') && isPrefix)
      return fail("a string prefix '" + printable(name) + "' at offset " + std::to_string(start) +
                  "; a header's strings are plain");
    return fail("unexpected name '" + printable(name) + "' at offset " + std::to_string(start) +
                " (a header's only names are True, False, None and set())");
  }
};

/// Whether `text` is UTF-8 as Python's strict decoder takes it (no overlong forms, no
/// surrogates, nothing past U+10FFFF); counts its characters into `chars`.
bool decodeUtf8(std::string_view text, size_t &chars) {
  chars = 0;
  for (size_t i = 0; i < text.size(); ++chars) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length;
    uint32_t point;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
      point = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      point = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      point = c & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size())
      return false;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80)
        return false;
      point = (point << 6) | (next & 0x3f);
    }
    static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff))
      return false;
    i += length;
  }
  return true;
}

/// Element size in bytes of a descr Kiln reads, or 0: a byte order NumPy treats as
/// little-endian here ('<', '|' or '=') and one of the codes npyDescrFor writes, or raw
/// void elements of 1 to 99 bytes.
size_t descrItemSize(const std::string &descr) {
  static const char *const codes[] = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"};
  if (descr.size() < 3 || std::strchr("<|=", descr[0]) == nullptr || descr[0] == '\0')
    return 0;
  const std::string code = descr.substr(1);
  for (const char *known : codes)
    if (code == known)
      return static_cast<size_t>(code[1] - '0');
  const std::string digits = code.substr(1);
  if (code[0] != 'V' || digits.size() > 2 || digits[0] == '0' ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoul(digits);
}
} // namespace

std::optional<NpyHeader> parseNpyHeader(std::string_view text, int majorVersion, std::string &error) {
  auto malformed = [&](const std::string &why) {
    error = "malformed .npy header: " + why;
    return std::nullopt;
  };
  size_t chars = text.size();
  if (majorVersion >= 3 && !decodeUtf8(text, chars))
    return malformed("a format 3.0 header must be UTF-8");
  if (chars > kNpyMaxHeaderChars) {
    error = ".npy header too long: " + std::to_string(chars) + " characters; NumPy reads at most " +
            std::to_string(kNpyMaxHeaderChars);
    return std::nullopt;
  }
  if (size_t nul = text.find('\0'); nul != std::string_view::npos)
    return malformed("a NUL byte at offset " + std::to_string(nul));
  HeaderParser parser(text, majorVersion < 3);
  PyLiteral dict;
  if (!parser.parse(dict))
    return malformed(parser.error());
  auto spelling = [&](const PyLiteral &value) { return printable(text.substr(value.begin, value.end - value.begin)); };
  if (dict.kind != PyLiteral::Kind::Dict)
    return malformed("the header is " + spelling(dict) + ", not a dict");
  // Exactly the three keys; as in any Python dict, a repeated key's last value counts.
  const PyLiteral *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (size_t i = 0; i < dict.items.size(); i += 2) {
    const PyLiteral &key = dict.items[i];
    const bool isStr = key.kind == PyLiteral::Kind::Str;
    const PyLiteral **slot = !isStr                        ? nullptr
                             : key.text == "descr"         ? &descr
                             : key.text == "fortran_order" ? &fortran
                             : key.text == "shape"         ? &shape
                                                           : nullptr;
    if (slot == nullptr)
      return malformed("unexpected key " + spelling(key) +
                       " (a header has exactly 'descr', 'fortran_order' and 'shape')");
    *slot = &dict.items[i + 1];
  }
  for (auto [value, name] : {std::pair{descr, "descr"}, {fortran, "fortran_order"}, {shape, "shape"}})
    if (value == nullptr)
      return malformed(std::string("missing key '") + name + "'");
  NpyHeader header;
  if (shape->kind != PyLiteral::Kind::Tuple)
    return malformed("shape " + spelling(*shape) + " is not a tuple such as (3, 4)");
  if (shape->items.size() > kNpyMaxDims)
    return malformed("shape has " + std::to_string(shape->items.size()) + " dimensions; NumPy allows at most " +
                     std::to_string(kNpyMaxDims));
  for (const PyLiteral &dim : shape->items) {
    if (dim.kind != PyLiteral::Kind::Int)
      return malformed("shape " + spelling(*shape) + " holds " + spelling(dim) + ", not an integer");
    if (dim.negative)
      return malformed("shape " + spelling(*shape) + " has a negative dimension");
    if (dim.tooLarge || dim.magnitude > static_cast<uint64_t>(INT64_MAX))
      return malformed("shape " + spelling(*shape) + " has a dimension too large for any array");
    header.shape.push_back(static_cast<int64_t>(dim.magnitude));
  }
  if (fortran->kind != PyLiteral::Kind::Bool)
    return malformed("fortran_order is " + spelling(*fortran) + ", not True or False");
  header.fortranOrder = fortran->truth;
  if (descr->kind != PyLiteral::Kind::Str) {
    error = "unsupported dtype " + spelling(*descr) + " (Kiln reads no structured arrays)";
    return std::nullopt;
  }
  header.descr = descr->text;
  return header;
}

std::string npyDescrFor(DType t) {
  switch (t) {
  case DType::Bool: return "|b1";
  case DType::I8: return "|i1";
  case DType::I16: return "<i2";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::U16: return "<u2";
  case DType::U32: return "<u4";
  case DType::U64: return "<u8";
  case DType::F8E4M3:
  case DType::F8E5M2: return "|V1";
  case DType::F16: return "<f2";
  case DType::BF16: return "|V2";
  case DType::F32: return "<f4";
  case DType::F64: return "<f8";
  }
  return "?";
}

bool npyDescrMatches(const std::string &descr, DType dtype) {
  if (descr.size() < 3)
    return false;
  std::string want = npyDescrFor(dtype);
  // '<', '|' and '=' all mean little-endian/none on the machines Kiln supports.
  return descr.substr(1) == want.substr(1) && descrItemSize(descr) != 0;
}

std::string npyDescrDescription(const std::string &descr) {
  static const std::pair<const char *, const char *> names[] = {
      {"b1", "bool"},    {"i1", "int8"},    {"i2", "int16"},   {"i4", "int32"},
      {"i8", "int64"},   {"u1", "uint8"},   {"u2", "uint16"},  {"u4", "uint32"},
      {"u8", "uint64"},  {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"},
      {"V1", "raw 1-byte (f8e4m3/f8e5m2)"}, {"V2", "raw 2-byte (bf16)"}};
  std::string body = descr.size() > 1 ? descr.substr(1) : descr;
  for (auto &[code, name] : names)
    if (body == code)
      return std::string(name) + " ('" + descr + "')";
  return "'" + descr + "'";
}

namespace {
/// Reads up to `size` bytes, fewer only at the end of the file. Returns how many, or -1
/// with errno set.
ssize_t readFully(int fd, void *buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, static_cast<char *>(buffer) + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

/// Closes a descriptor on every way out of readNpy.
struct FileCloser {
  int fd;
  ~FileCloser() { ::close(fd); }
};
} // namespace

std::optional<NpyArray> readNpy(const std::string &path, std::string &error) {
  auto refuse = [&](const std::string &why) {
    error = "'" + path + "': " + why;
    return std::nullopt;
  };
  std::string why;
  const int fd = openRegularFile(path, why);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + why;
    return std::nullopt;
  }
  FileCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  // Fills `buffer` from the file; false, with `error` set, when it cannot.
  auto readExactly = [&](void *buffer, size_t size, const char *shortWhy) {
    ssize_t n = readFully(fd, buffer, size);
    if (n < 0) {
      error = "cannot read '" + path + "': " + std::strerror(errno);
      return false;
    }
    if (static_cast<size_t>(n) < size) {
      error = "'" + path + "': " + shortWhy;
      return false;
    }
    return true;
  };

  unsigned char preamble[12];
  ssize_t got = readFully(fd, preamble, 8);
  if (got < 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  if (got < 6 || std::memcmp(preamble, kMagic, 6) != 0)
    return refuse("not a .npy file (bad magic)");
  if (got < 8)
    return refuse("truncated .npy header");
  const int major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    return refuse("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " (NumPy writes 1.0, 2.0 and 3.0)");
  const size_t lengthSize = major == 1 ? 2 : 4;
  if (!readExactly(preamble + 8, lengthSize, "truncated .npy header"))
    return std::nullopt;
  uint64_t headerLength = 0;
  for (size_t i = 0; i < lengthSize; ++i)
    headerLength |= static_cast<uint64_t>(preamble[8 + i]) << (8 * i);
  const uint64_t headerStart = 8 + lengthSize;
  if (headerLength > fileSize - std::min(fileSize, headerStart))
    return refuse("truncated .npy header (" + std::to_string(headerLength) + " bytes claimed, " +
                  std::to_string(fileSize - std::min(fileSize, headerStart)) + " in the file)");
  // A character is one byte in formats 1.0 and 2.0 (latin-1), at most four in 3.0.
  const uint64_t maxHeaderBytes = kNpyMaxHeaderChars * (major == 3 ? 4 : 1);
  if (headerLength > maxHeaderBytes)
    return refuse(".npy header too long: " + std::to_string(headerLength) + " bytes; NumPy reads at most " +
                  std::to_string(kNpyMaxHeaderChars) + " characters");
  std::string text(headerLength, '\0');
  if (!readExactly(text.data(), text.size(), "truncated .npy header"))
    return std::nullopt;
  std::optional<NpyHeader> header = parseNpyHeader(text, major, why);
  if (!header)
    return refuse(why);
  if (header->fortranOrder)
    return refuse("Fortran-order arrays are not supported; save a C-contiguous array");
  if (!header->descr.empty() && header->descr[0] == '>')
    return refuse("big-endian arrays are not supported");
  const size_t item = descrItemSize(header->descr);
  if (item == 0)
    return refuse("unsupported dtype '" + printable(header->descr) + "'");
  NpyArray arr;
  arr.descr = header->descr;
  arr.shape = header->shape;
  unsigned long long count = 1;
  for (int64_t d : arr.shape)
    if (__builtin_mul_overflow(count, static_cast<unsigned long long>(d), &count) || count > (1ull << 36))
      return refuse("array too large");
  const size_t bytes = static_cast<size_t>(count) * item;
  const char *shorter = "file is shorter than its header says";
  // A header can claim any size: compare it with what the file holds before allocating.
  // The file may still shrink while it is read, so memory follows the bytes that arrive.
  if (fileSize - headerStart - headerLength < bytes)
    return refuse(std::string(shorter) + " (" + std::to_string(bytes) + " data bytes expected)");
  constexpr size_t kPiece = size_t(1) << 24;
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kPiece, bytes - done);
    arr.data.resize(done + n);
    if (!readExactly(arr.data.data() + done, n, shorter))
      return std::nullopt;
    done += n;
  }
  return arr;
}

std::optional<StagedFile> stageNpy(const std::string &path, const NpyArray &array, std::string &error) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += std::to_string(array.shape[i]) + (array.shape.size() == 1 ? "," : i + 1 < array.shape.size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64 bytes, ending the header with '\n'.
  size_t total = 6 + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) {
    error = "header too long for '" + path + "'";
    return std::nullopt;
  }
  const char preamble[10] = {kMagic[0], kMagic[1], kMagic[2], kMagic[3], kMagic[4], kMagic[5], 1, 0,
                             static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  auto bytes = [](const void *p, size_t n) { return std::span<const uint8_t>(static_cast<const uint8_t *>(p), n); };
  // The user's file is updated, not replaced by another: through a symlink to its
  // target, with its permissions kept.
  AtomicWriteOptions options;
  options.updateInPlace = true;
  return StagedFile::stage(
      path, {bytes(preamble, sizeof preamble), bytes(header.data(), header.size()), bytes(array.data.data(), array.data.size())},
      options, error);
}

bool writeNpyAtomic(const std::string &path, const NpyArray &array, std::string &error) {
  std::optional<StagedFile> staged = stageNpy(path, array, error);
  if (!staged)
    return false;
  error = staged->commit();
  return error.empty();
}

} // namespace kiln
