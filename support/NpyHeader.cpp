//===- NpyHeader.cpp - A .npy header read as NumPy reads it ---------------===//
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
#include "support/NpyHeader.h"
#include "support/Utf8.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kiln {

namespace {

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

/// The number of characters in `text` when it is UTF-8 as Python's strict decoder takes
/// it (no overlong forms, no surrogates, nothing past U+10FFFF); nullopt otherwise.
std::optional<size_t> utf8Length(std::string_view text) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++chars) {
    const size_t length = decodeUtf8(text.substr(i)).second;
    if (length == 0)
      return std::nullopt;
    i += length;
  }
  return chars;
}
} // namespace

std::optional<NpyHeader> parseNpyHeader(std::string_view text, int majorVersion, std::string &error) {
  auto malformed = [&](const std::string &why) {
    error = "malformed .npy header: " + why;
    return std::nullopt;
  };
  std::optional<size_t> chars = majorVersion >= 3 ? utf8Length(text) : text.size();
  if (!chars)
    return malformed("a format 3.0 header must be UTF-8");
  if (*chars > kNpyMaxHeaderChars) {
    error = ".npy header too long: " + std::to_string(*chars) + " characters; NumPy reads at most " +
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

} // namespace kiln
