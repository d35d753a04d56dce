//===- Type.cpp - Scalar dtypes and the Type of Tile IR values ------------===//
//
// Everything about a dtype comes from the KILN_DTYPES table in Type.h, so the
// spelling, width and class of a dtype are defined in exactly one place. Types are
// spelled the same in Kiln source, in .tir text and in messages.
//
//===----------------------------------------------------------------------===//
#include "ir/Type.h"

#include <array>
#include <cctype>
#include <limits>

namespace kiln {

namespace {
struct DTypeInfo {
  const char *name;
  unsigned bits;
  bool isFloat;
  bool isSigned;
};

constexpr std::array kDTypes = {
#define KILN_DTYPE_INFO(E, S, B, F, SG) DTypeInfo{S, B, F, SG},
    KILN_DTYPES(KILN_DTYPE_INFO)
#undef KILN_DTYPE_INFO
};

const DTypeInfo &info(DType t) { return kDTypes[static_cast<size_t>(t)]; }
} // namespace

std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (size_t i = 0; i < kDTypes.size(); ++i)
    if (name == kDTypes[i].name)
      return static_cast<DType>(i);
  return std::nullopt;
}

unsigned dtypeBits(DType t) { return info(t).bits; }

unsigned dtypeBytes(DType t) { return (info(t).bits + 7) / 8; }

bool isFloat(DType t) { return info(t).isFloat; }

bool isInteger(DType t) { return !info(t).isFloat && t != DType::Bool; }

bool isSigned(DType t) { return info(t).isSigned; }

bool agreeBesidesAxis(const Shape &a, const Shape &b, int64_t axis) {
  if (a.size() != b.size())
    return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (static_cast<int64_t>(d) != axis && a[d] != b[d])
      return false;
  return true;
}

int64_t numElements(const Shape &shape) {
  // Saturates instead of overflowing: shapes come from user text too, and a product
  // past int64 must read as "too large", never as undefined behaviour.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return 0;
    if (__builtin_mul_overflow(n, d, &n))
      return std::numeric_limits<int64_t>::max();
  }
  return n;
}

std::string Type::str() const {
  std::string elem = pointer ? "*" : "";
  elem += dtypeName(dtype);
  if (shape.empty())
    return elem;
  std::string s = "tile<" + elem + ", [";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]>";
}

namespace {
/// A tiny cursor over the type text; whitespace between tokens is allowed so that
/// hand-written .tir stays forgiving.
class TypeCursor {
public:
  explicit TypeCursor(std::string_view text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view w) {
    skipSpace();
    if (text_.substr(pos_, w.size()) == w) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  std::string_view word() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::optional<int64_t> positiveInt() {
    skipSpace();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v))
        return std::nullopt;
      ++pos_;
    }
    if (pos_ == start || v <= 0)
      return std::nullopt;
    return v;
  }
  bool atEnd() {
    skipSpace();
    return pos_ == text_.size();
  }

private:
  std::string_view text_;
  size_t pos_ = 0;
};

std::optional<Type> parseElement(TypeCursor &cur) {
  bool ptr = cur.consume('*');
  auto dt = parseDType(cur.word());
  if (!dt)
    return std::nullopt;
  return Type{*dt, ptr, {}};
}
} // namespace

std::optional<Type> parseType(std::string_view text) {
  TypeCursor cur(text);
  std::optional<Type> result;
  if (cur.consumeWord("tile<")) {
    result = parseElement(cur);
    if (!result || !cur.consume(',') || !cur.consume('['))
      return std::nullopt;
    // A rank-0 tile is spelled as its scalar, so `tile<f32, []>` is not accepted.
    do {
      auto d = cur.positiveInt();
      if (!d)
        return std::nullopt;
      result->shape.push_back(*d);
    } while (cur.consume(','));
    if (!cur.consume(']') || !cur.consume('>'))
      return std::nullopt;
  } else {
    result = parseElement(cur);
  }
  if (!result || !cur.atEnd())
    return std::nullopt;
  return result;
}

} // namespace kiln
