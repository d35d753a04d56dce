//===- ConstEval.cpp - Compile-time arithmetic on scalar constants --------===//
//
// Shapes, static_range bounds, const parameters and constant conditions are computed
// here. Strong (typed) constants follow the run-time semantics of Ops.def exactly —
// integers wrap, floats round to their dtype — so folding never changes a result.
// Weak constants (literals and expressions of literals and consts) have no dtype yet:
// integers compute in 64 bits (overflow is E0308 rather than a silent wrap) and floats
// in unrounded doubles; they are checked and rounded when they adopt a dtype.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include "support/FloatFormats.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace kiln::sema {

using ast::BinaryOp;
using ast::UnaryOp;

static double constToDouble(const ConstVal &c, DType dtype) {
  switch (c.kind) {
  case ConstVal::Kind::Float: return c.f;
  case ConstVal::Kind::Bool: return c.i ? 1.0 : 0.0;
  case ConstVal::Kind::Int:
    if (dtype == DType::U64)
      return static_cast<double>(static_cast<uint64_t>(c.i));
    return static_cast<double>(c.i);
  }
  return 0;
}

ConstVal castConst(const ConstVal &c, DType from, DType to) {
  if (isFloat(to))
    return ConstVal::ofFloat(roundToFloatDType(to, constToDouble(c, from)));
  if (isBool(to)) {
    if (c.isFloat())
      return ConstVal::ofBool(c.f != 0 || std::isnan(c.f));
    return ConstVal::ofBool(c.i != 0);
  }
  if (c.isFloat())
    return ConstVal::ofInt(floatToIntDType(to, c.f));
  return ConstVal::ofInt(wrapToIntDType(to, c.i));
}

/// Integer arithmetic in 64 bits with overflow detection (weak) or wrapping (strong).
static std::optional<int64_t> intArith(BinaryOp op, int64_t a, int64_t b, DType dtype, bool weak,
                                       std::string &error) {
  bool isU64 = dtype == DType::U64;
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t r = 0;
  bool overflow = false;
  switch (op) {
  case BinaryOp::Add:
    overflow = __builtin_add_overflow(a, b, &r);
    if (!weak)
      r = static_cast<int64_t>(ua + ub);
    break;
  case BinaryOp::Sub:
    overflow = __builtin_sub_overflow(a, b, &r);
    if (!weak)
      r = static_cast<int64_t>(ua - ub);
    break;
  case BinaryOp::Mul:
    overflow = __builtin_mul_overflow(a, b, &r);
    if (!weak)
      r = static_cast<int64_t>(ua * ub);
    break;
  case BinaryOp::Div:
  case BinaryOp::Rem:
    // A constant division by zero is a mistake in the program (the run-time rule x/0 = 0
    // exists for masked-off lanes, which a constant never is).
    if (b == 0) {
      error = "division by zero in a constant expression";
      return std::nullopt;
    }
    if (isU64) {
      r = static_cast<int64_t>(op == BinaryOp::Div ? ua / ub : ua % ub);
    } else if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      // The one signed division that overflows: it wraps back to INT64_MIN.
      overflow = op == BinaryOp::Div;
      r = op == BinaryOp::Div ? a : 0;
    } else {
      r = op == BinaryOp::Div ? a / b : a % b;
    }
    break;
  case BinaryOp::BitAnd: r = a & b; break;
  case BinaryOp::BitOr: r = a | b; break;
  case BinaryOp::BitXor: r = a ^ b; break;
  case BinaryOp::Shl:
  case BinaryOp::Shr: {
    unsigned bits = weak ? 64 : dtypeBits(dtype);
    bool sign = weak || isSigned(dtype);
    // Exact arithmetic has no value for a negative amount (1 << -1 is 1/2), and a left
    // shift of a nonzero value by 64 or more overflows like any other: errors, not the
    // run-time rule for out-of-range amounts, which typed constants keep.
    if (weak && b < 0) {
      error = "negative shift amount " + std::to_string(b) + " in a constant expression";
      return std::nullopt;
    }
    if (weak && op == BinaryOp::Shl && b >= 64 && a != 0) {
      error = "integer overflow in a constant expression";
      return std::nullopt;
    }
    if (b < 0 || b >= static_cast<int64_t>(bits)) {
      // Ops.def: out-of-range amounts give 0, or the sign fill for a signed shr.
      r = (op == BinaryOp::Shr && sign && a < 0) ? -1 : 0;
    } else if (op == BinaryOp::Shl) {
      r = static_cast<int64_t>(ua << b);
      if (weak && (r >> b) != a)
        overflow = true;
    } else {
      r = sign ? (a >> b) : static_cast<int64_t>(ua >> b);
    }
    break;
  }
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::LogicalAnd:
  case BinaryOp::LogicalOr:
  case BinaryOp::Pow: KILN_ICE("intArith called for a comparison, logical operator or '**'");
  }
  if (weak && overflow) {
    error = "integer overflow in a constant expression";
    return std::nullopt;
  }
  return weak ? r : wrapToIntDType(dtype, r);
}

/// Applies comparison `op` to an ordering result (-1, 0, 1) or, for unordered float
/// operands (a NaN), to "unordered": only `ne` is true then, as for the `cmp` op.
static bool applyComparison(BinaryOp op, int order, bool unordered) {
  if (op == BinaryOp::Ne)
    return unordered || order != 0;
  if (unordered)
    return false;
  if (op == BinaryOp::Eq)
    return order == 0;
  if (op == BinaryOp::Lt)
    return order < 0;
  if (op == BinaryOp::Le)
    return order <= 0;
  if (op == BinaryOp::Gt)
    return order > 0;
  kiln_assert(op == BinaryOp::Ge, "applyComparison: not a comparison");
  return order >= 0;
}

static bool compareConsts(BinaryOp op, const ConstVal &a, const ConstVal &b, DType dtype) {
  if (isFloat(dtype)) {
    double x = constToDouble(a, dtype), y = constToDouble(b, dtype);
    if (std::isnan(x) || std::isnan(y))
      return applyComparison(op, 0, true);
    return applyComparison(op, x < y ? -1 : x > y ? 1 : 0, false);
  }
  if (dtype == DType::U64) {
    uint64_t x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
    return applyComparison(op, x < y ? -1 : x > y ? 1 : 0, false);
  }
  return applyComparison(op, a.i < b.i ? -1 : a.i > b.i ? 1 : 0, false);
}

std::optional<ConstVal> foldBinary(BinaryOp op, const ConstVal &a, const ConstVal &b, DType dtype,
                                   bool weak, std::string &error) {
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return ConstVal::ofBool(compareConsts(op, a, b, dtype));
  case BinaryOp::LogicalAnd: return ConstVal::ofBool(a.i && b.i);
  case BinaryOp::LogicalOr: return ConstVal::ofBool(a.i || b.i);
  case BinaryOp::Pow: KILN_ICE("foldBinary: '**' is expanded before folding (powerOp)");
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Rem:
  case BinaryOp::BitAnd:
  case BinaryOp::BitOr:
  case BinaryOp::BitXor:
  case BinaryOp::Shl:
  case BinaryOp::Shr: break;
  }
  if (isBool(dtype)) {
    // Only the bitwise operators reach here for bool (arithmetic on bool is rejected).
    bool x = a.i != 0, y = b.i != 0;
    if (op == BinaryOp::BitAnd)
      return ConstVal::ofBool(x && y);
    if (op == BinaryOp::BitOr)
      return ConstVal::ofBool(x || y);
    kiln_assert(op == BinaryOp::BitXor, "foldBinary: arithmetic on bool constants");
    return ConstVal::ofBool(x != y);
  }
  if (isFloat(dtype)) {
    double x = constToDouble(a, dtype), y = constToDouble(b, dtype), r = 0;
    if (op == BinaryOp::Add)
      r = x + y;
    else if (op == BinaryOp::Sub)
      r = x - y;
    else if (op == BinaryOp::Mul)
      r = x * y;
    else if (op == BinaryOp::Div)
      r = x / y;
    else if (op == BinaryOp::Rem)
      r = std::fmod(x, y);
    else
      KILN_ICE("foldBinary: bitwise operator on float constants");
    return ConstVal::ofFloat(weak ? r : roundToFloatDType(dtype, r));
  }
  auto r = intArith(op, a.i, b.i, dtype, weak, error);
  if (!r)
    return std::nullopt;
  return ConstVal::ofInt(*r);
}

std::optional<ConstVal> foldUnary(UnaryOp op, const ConstVal &a, DType dtype, bool weak,
                                  std::string &error) {
  switch (op) {
  case UnaryOp::Plus: return a;
  case UnaryOp::Not: return ConstVal::ofBool(a.i == 0);
  case UnaryOp::BitNot:
    if (isBool(dtype))
      return ConstVal::ofBool(a.i == 0);
    return ConstVal::ofInt(weak ? ~a.i : wrapToIntDType(dtype, ~a.i));
  case UnaryOp::Neg:
    if (a.isFloat())
      return ConstVal::ofFloat(-a.f);
    if (weak && a.i == std::numeric_limits<int64_t>::min()) {
      error = "integer overflow in a constant expression";
      return std::nullopt;
    }
    return ConstVal::ofInt(
        weak ? -a.i : wrapToIntDType(dtype, static_cast<int64_t>(0 - static_cast<uint64_t>(a.i))));
  }
  return std::nullopt;
}

std::optional<double> foldMath(std::string_view name, double x) {
  if (name == "exp")
    return std::exp(x);
  if (name == "exp2")
    return std::exp2(x);
  if (name == "log")
    return std::log(x);
  if (name == "log2")
    return std::log2(x);
  if (name == "sqrt")
    return std::sqrt(x);
  if (name == "rsqrt")
    return 1.0 / std::sqrt(x);
  if (name == "sin")
    return std::sin(x);
  if (name == "cos")
    return std::cos(x);
  if (name == "tanh")
    return std::tanh(x);
  if (name == "erf")
    return std::erf(x);
  if (name == "sigmoid")
    return 1.0 / (1.0 + std::exp(-x));
  if (name == "floor")
    return std::floor(x);
  if (name == "ceil")
    return std::ceil(x);
  if (name == "abs")
    return std::fabs(x);
  // The derived builtins (SemaBuiltinsDerived.cpp).
  if (name == "log1p")
    return std::log1p(x);
  if (name == "expm1")
    return std::expm1(x);
  if (name == "round")
    return std::nearbyint(x); // the default rounding mode: halves to even
  if (name == "trunc")
    return std::trunc(x);
  if (name == "sign")
    return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  if (name == "relu")
    return x < 0 ? 0.0 : x;
  if (name == "silu")
    return x / (1.0 + std::exp(-x));
  if (name == "gelu")
    return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
  if (name == "softplus")
    return x > 20 ? x : std::log1p(std::exp(x));
  return std::nullopt;
}

std::string constString(const ConstVal &c, DType dtype) {
  switch (c.kind) {
  case ConstVal::Kind::Bool: return c.i ? "true" : "false";
  case ConstVal::Kind::Int:
    if (dtype == DType::U64)
      return std::to_string(static_cast<uint64_t>(c.i));
    return std::to_string(c.i);
  case ConstVal::Kind::Float: {
    if (std::isnan(c.f))
      return "nan";
    if (std::isinf(c.f))
      return c.f < 0 ? "-inf" : "inf";
    std::ostringstream os;
    os.precision(17);
    os << c.f;
    return os.str();
  }
  }
  return "?";
}

ir::Attr constAttr(const ConstVal &c) {
  switch (c.kind) {
  case ConstVal::Kind::Bool: return ir::Attr(c.i != 0);
  case ConstVal::Kind::Int: return ir::Attr(c.i);
  case ConstVal::Kind::Float: return ir::Attr(c.f);
  }
  return ir::Attr(int64_t(0));
}

std::string defineText(const ConstVal &c, DType dtype) {
  if (!c.isFloat() || !std::isfinite(c.f))
    return constString(c, dtype == DType::U64 ? DType::U64 : DType::I64);
  // The shortest text that reads back to the same double, kept a float by its '.'.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, c.f);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::optional<DefineValue> parseDefineValue(std::string_view text, std::string &why) {
  if (text == "true")
    return DefineValue{ConstVal::ofBool(true), DType::Bool};
  if (text == "false")
    return DefineValue{ConstVal::ofBool(false), DType::Bool};
  why = "'" + std::string(text) + "' is not an integer, a float, true or false";
  if (text.empty())
    return std::nullopt;
  // Integers: optional sign, decimal or 0x hex, underscores as digit separators.
  std::string digits;
  bool negative = false;
  std::string_view t = text;
  if (t[0] == '-' || t[0] == '+') {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  for (char ch : t)
    if (ch != '_')
      digits += ch;
  if (!digits.empty()) {
    uint64_t u = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
    if (p == digits.data() + digits.size()) {
      const uint64_t i64Max = uint64_t(std::numeric_limits<int64_t>::max());
      if (ec == std::errc::result_out_of_range || (negative && u > i64Max + 1)) {
        why = "'" + std::string(text) + "' is outside the range of every integer type (i64 and u64)";
        return std::nullopt;
      }
      if (ec == std::errc()) {
        if (negative)
          return DefineValue{ConstVal::ofInt(static_cast<int64_t>(0 - u)), DType::I64};
        // Above i64's range only u64 holds it: its bits, as u64 constants keep them.
        return DefineValue{ConstVal::ofInt(static_cast<int64_t>(u)), u > i64Max ? DType::U64 : DType::I64};
      }
    }
  }
  // Floats: what strtod reads, consuming everything (inf and nan included).
  std::string s(text);
  char *end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && end != s.c_str() && s.find_first_of("xX") == std::string::npos)
    return DefineValue{ConstVal::ofFloat(d), DType::F64};
  return std::nullopt;
}

} // namespace kiln::sema
