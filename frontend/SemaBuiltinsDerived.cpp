//===- SemaBuiltinsDerived.cpp - Builtins made of other builtins ----------===//
//
// The math a PyTorch or CUDA user expects by name (log1p, expm1, round, trunc, sign,
// isnan, isinf, isfinite, relu, gelu, silu, softplus, umulhi, sqrt_rn, div_rn) needs no
// op of its own: each is a short composition of the core ops, written once here, so that the interpreter and
// every backend compute it the same way and the optimizer sees ordinary ops.
//
// The compositions keep the accuracy their names promise. log1p and expm1 use Kahan's
// correction (the rounding error of 1 + x is divided out), so they stay accurate for
// tiny x where log(1 + x) and exp(x) - 1 lose every digit. round is half to even, as
// torch.round and numpy.round are. 16-bit and f8 inputs compute in f32 and round once
// at the end, as PyTorch does for its half-precision activations.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include <cmath>

namespace kiln::sema {

namespace {

using ast::BinaryOp;

/// Builds one derived builtin from the others, at the call's location.
struct Compose {
  Sema &s;
  CallArgs &call;

  Val lit(double v) const {
    return Val::ofConst(Type::scalar(DType::F32), ConstVal::ofFloat(v), true, call.loc);
  }
  Val intLit(int64_t v) const {
    return Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(v), true, call.loc);
  }
  Val bin(BinaryOp op, const Val &x, const Val &y) const { return s.binaryOp(op, x, y, call.loc); }
  Val add(const Val &x, const Val &y) const { return bin(BinaryOp::Add, x, y); }
  Val sub(const Val &x, const Val &y) const { return bin(BinaryOp::Sub, x, y); }
  Val mul(const Val &x, const Val &y) const { return bin(BinaryOp::Mul, x, y); }
  Val div(const Val &x, const Val &y) const { return bin(BinaryOp::Div, x, y); }

  /// Calls builtin `name` on values already computed; messages point at the call.
  Val builtin(const char *name, std::vector<Val> args) const {
    const BuiltinInfo *b = findBuiltin(name);
    kiln_assert(b != nullptr, std::string("derived builtin uses an unknown builtin: ") + name);
    CallArgs c;
    c.callee = name;
    c.loc = call.loc;
    c.calleeLoc = call.calleeLoc;
    for (size_t i = 0; i < b->params.size(); ++i) {
      const bool given = i < args.size();
      c.exprs.push_back(given ? call.exprs[0] : nullptr);
      c.locs.push_back(call.loc);
      c.positional.push_back(false);
      c.vals.push_back(given ? std::optional<Val>(args[i]) : std::nullopt);
    }
    return b->handler(s, c);
  }
  Val where(const Val &c, const Val &x, const Val &y) const { return builtin("where", {c, x, y}); }
  Val math(const char *name, const Val &x) const { return builtin(name, {x}); }
};

/// The operand of a float builtin: a float value (a literal becomes f32). Reports the
/// builtin by its own name when the operand is not a float.
std::optional<Val> floatOperand(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  if (!x.isValue())
    return std::nullopt;
  if (x.type.pointer) {
    s.error(a.locs[0], DiagCode::TypeMismatch, a.callee + " does not take pointers, got " + s.describe(x),
            "load the values first: load(p)");
    return std::nullopt;
  }
  if (x.weak && !x.cst->isBool())
    return s.castTo(x, isFloat(x.type.dtype) ? x.type.dtype : DType::F32, a.loc);
  if (!isFloat(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, a.callee + " needs a float operand, got " + s.describe(x),
            "use .to(f32)");
    return std::nullopt;
  }
  return x;
}

/// The operand of a numeric builtin that also works on integers (sign, relu, isnan...).
std::optional<Val> numericOperand(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  if (!x.isValue())
    return std::nullopt;
  if (x.type.pointer || isBool(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch,
            a.callee + " needs an integer or float operand, got " + s.describe(x),
            x.type.pointer ? "load the values first: load(p)" : "");
    return std::nullopt;
  }
  return x;
}

/// A literal argument folds, like the core math builtins (`const EPS = log1p(1e-7)`), in
/// double precision; nullopt when the call is not of a lone literal.
std::optional<Val> foldLiteral(Sema &s, CallArgs &a) {
  for (size_t i = 1; i < a.exprs.size(); ++i)
    if (a.has(i))
      return std::nullopt; // gelu's form, softplus's beta: computed as ops
  Val x = s.argValue(a, 0);
  if (!x.isValue() || !x.weak || !x.cst || x.cst->isBool())
    return std::nullopt;
  const bool isInt = x.cst->isInt();
  const double v = isInt ? double(x.cst->i) : x.cst->f;
  const std::string &name = a.callee;
  if (name == "isnan" || name == "isinf" || name == "isfinite") {
    bool r = name == "isnan" ? std::isnan(v) : name == "isinf" ? std::isinf(v) : std::isfinite(v);
    return Val::ofConst(Type::scalar(DType::Bool), ConstVal::ofBool(r), true, a.loc);
  }
  if (isInt && (name == "sign" || name == "relu")) {
    int64_t i = x.cst->i;
    int64_t r = name == "sign" ? (i > 0) - (i < 0) : (i < 0 ? 0 : i);
    return Val::ofConst(x.type, ConstVal::ofInt(r), true, a.loc);
  }
  auto r = foldMath(name, v);
  kiln_assert(r.has_value(), "derived builtin without a folding rule: " + name);
  return Val::ofConst(Type::scalar(isInt ? DType::F32 : x.type.dtype), ConstVal::ofFloat(*r), true, a.loc);
}

/// f16, bf16 and f8 compute in f32; the result is rounded back once.
bool computesWide(DType d) { return isFloat(d) && dtypeBits(d) < 32; }

/// Runs `body` on x, widened to f32 first when x is narrow, and narrows the result.
template <typename Body> Val widened(Sema &s, const CallArgs &a, const Val &x, Body body) {
  DType d = x.type.dtype;
  if (!computesWide(d))
    return body(x);
  Val r = body(s.castTo(x, DType::F32, a.loc));
  return r.isValue() ? s.castTo(r, d, a.loc) : r;
}

/// What a derived builtin accepts: floats only, or integers too.
enum class Accepts { Floats, Numbers };

/// The body of a derived builtin: its value for an operand x already checked (and
/// widened to f32 when it computes wide); poison after an error of its own.
using DerivedBody = Val (*)(const Compose &c, const Val &x);

/// A derived builtin: literals fold, the operand is checked, narrow floats compute in
/// f32 when `wide`, and `body` composes the rest.
template <DerivedBody body, Accepts accepts, bool wide> Val derived(Sema &s, CallArgs &a) {
  if (auto folded = foldLiteral(s, a))
    return *folded;
  auto x = accepts == Accepts::Floats ? floatOperand(s, a) : numericOperand(s, a);
  if (!x)
    return Val::poison();
  Compose c{s, a};
  if (!wide)
    return body(c, *x);
  return widened(s, a, *x, [&](const Val &v) { return body(c, v); });
}

/// log1p(x) = log(1 + x), accurate for tiny x: with u = 1 + x rounded, log(u) * x / (u - 1)
/// divides out the rounding of u (u - 1 is exact here). u == 1 means x is below half an
/// ulp of 1, where log1p(x) rounds to x; u == inf gives inf.
Val log1p(const Compose &c, const Val &x) {
  Val u = c.add(c.lit(1.0), x);
  Val corrected = c.mul(c.math("log", u), c.div(x, c.sub(u, c.lit(1.0))));
  Val big = c.bin(BinaryOp::Eq, u, c.lit(INFINITY));
  return c.where(c.bin(BinaryOp::Eq, u, c.lit(1.0)), x, c.where(big, u, corrected));
}

/// expm1(x) = exp(x) - 1, accurate for small x: below |x| = 0.5, (u - 1) * x / log(u)
/// with u = exp(x) divides out the rounding of u; above it u - 1 loses nothing.
Val expm1(const Compose &c, const Val &x) {
  Val u = c.math("exp", x);
  Val um1 = c.sub(u, c.lit(1.0));
  Val corrected = c.div(c.mul(um1, x), c.math("log", u));
  Val small = c.bin(BinaryOp::Lt, c.math("abs", x), c.lit(0.5));
  Val tiny = c.bin(BinaryOp::Eq, u, c.lit(1.0));
  return c.where(small, c.where(tiny, x, corrected), um1);
}

/// round(x): to the nearest integer, halves to even (torch.round, numpy.round). With
/// r = floor(x), the fraction x - r is exact; r is odd when r - 2 floor(r / 2) == 1.
Val round(const Compose &c, const Val &x) {
  Val r = c.math("floor", x);
  Val frac = c.sub(x, r);
  Val odd = c.bin(BinaryOp::Eq, c.sub(r, c.mul(c.lit(2.0), c.math("floor", c.mul(r, c.lit(0.5))))), c.lit(1.0));
  Val up = c.bin(BinaryOp::LogicalOr, c.bin(BinaryOp::Gt, frac, c.lit(0.5)),
                 c.bin(BinaryOp::LogicalAnd, c.bin(BinaryOp::Eq, frac, c.lit(0.5)), odd));
  return c.where(up, c.add(r, c.lit(1.0)), r);
}

/// trunc(x): toward zero.
Val trunc(const Compose &c, const Val &x) {
  return c.where(c.bin(BinaryOp::Lt, x, c.lit(0.0)), c.math("ceil", x), c.math("floor", x));
}

/// sign(x): 1, -1 or 0 in x's dtype; a float zero keeps its sign and NaN stays NaN.
Val sign(const Compose &c, const Val &x) {
  Val zero = isFloat(x.type.dtype) ? x : c.intLit(0);
  Val negative = isSigned(x.type.dtype) || isFloat(x.type.dtype)
                     ? c.where(c.bin(BinaryOp::Lt, x, c.intLit(0)), c.intLit(-1), zero)
                     : zero;
  return c.where(c.bin(BinaryOp::Gt, x, c.intLit(0)), c.intLit(1), negative);
}

/// isnan, isinf, isfinite: a bool tile of x's shape; integers are never NaN or infinite.
Val classify(const Compose &c, const Val &x) {
  const std::string &name = c.call.callee;
  if (!isFloat(x.type.dtype)) {
    // x == x is true for every integer: it gives the shape, and folds away.
    return c.bin(name == "isfinite" ? BinaryOp::Eq : BinaryOp::Ne, x, x);
  }
  if (name == "isnan")
    return c.bin(BinaryOp::Ne, x, x);
  Val magnitude = c.math("abs", x);
  return c.bin(name == "isinf" ? BinaryOp::Eq : BinaryOp::Lt, magnitude, c.lit(INFINITY));
}

/// relu(x) = max(x, 0); NaN stays NaN (torch.relu), unlike maximum(x, 0), which gives 0.
Val relu(const Compose &c, const Val &x) {
  return c.where(c.bin(BinaryOp::Lt, x, c.intLit(0)), c.intLit(0), x);
}

/// silu(x) = x * sigmoid(x) (swish).
Val silu(const Compose &c, const Val &x) { return c.mul(x, c.math("sigmoid", x)); }

/// gelu(x, approximate = "none"): x * Phi(x) through erf, or with "tanh" the tanh form
/// of torch.nn.functional.gelu(approximate="tanh").
Val gelu(const Compose &c, const Val &x) {
  std::optional<std::string> form = c.call.has(1) ? c.s.argString(c.call, 1) : std::string("none");
  if (!form)
    return Val::poison();
  if (*form == "none")
    return c.mul(c.mul(c.lit(0.5), x), c.add(c.lit(1.0), c.math("erf", c.mul(x, c.lit(M_SQRT1_2)))));
  if (*form != "tanh") {
    c.s.error(c.call.locs[1], DiagCode::InvalidArgument,
              "gelu's approximate must be \"none\" or \"tanh\", got \"" + *form + "\"");
    return Val::poison();
  }
  // (1 + tanh(u)) / 2 is sigmoid(2u): the same value without the cancellation of
  // 1 + tanh(u) in the negative tail.
  const double sqrt2OverPi = M_2_SQRTPI * M_SQRT1_2; // sqrt(2 / pi)
  Val cube = c.mul(c.mul(x, x), x);
  Val inner = c.mul(c.lit(2.0 * sqrt2OverPi), c.add(x, c.mul(c.lit(0.044715), cube)));
  return c.mul(x, c.math("sigmoid", inner));
}

/// A number argument of softplus (beta, threshold), or `fallback` when not given.
std::optional<Val> numberArg(const Compose &c, size_t i, double fallback) {
  if (!c.call.has(i))
    return c.lit(fallback);
  Val v = c.s.argValue(c.call, i);
  if (!v.isValue())
    return std::nullopt;
  if (v.type.pointer || !v.type.isScalar() || isBool(v.type.dtype)) {
    c.s.error(c.call.locs[i], DiagCode::TypeMismatch,
              "softplus's " + std::string(i == 1 ? "beta" : "threshold") +
                  " must be a number, got " + c.s.describe(v));
    return std::nullopt;
  }
  return v;
}

/// softplus(x, beta = 1, threshold = 20) = log1p(exp(beta x)) / beta, and x itself where
/// beta x > threshold (torch.nn.functional.softplus), where the exponential would overflow.
Val softplus(const Compose &c, const Val &x) {
  auto beta = numberArg(c, 1, 1.0), threshold = numberArg(c, 2, 20.0);
  if (!beta || !threshold)
    return Val::poison();
  Val bx = c.mul(x, *beta);
  Val smooth = c.div(log1p(c, c.math("exp", bx)), *beta);
  return c.where(c.bin(BinaryOp::Gt, bx, *threshold), x, smooth);
}

/// umulhi(x, y): the high 32 bits of the 64-bit product of two 32-bit integers (CUDA's
/// __umulhi / __mulhi), signed when the operands are.
Val umulhi(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  DType d = s.meetDType(x, y);
  if (x.type.pointer || y.type.pointer || !isInteger(d) || dtypeBits(d) != 32) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "umulhi needs two 32-bit integers, got " + s.describe(x) + " and " + s.describe(y));
    return Val::poison();
  }
  Compose c{s, a};
  const DType wide = isSigned(d) ? DType::I64 : DType::U64;
  Val product = c.mul(s.castTo(s.convertTo(x, d, a.loc), wide, a.loc), s.castTo(s.convertTo(y, d, a.loc), wide, a.loc));
  return s.castTo(c.bin(BinaryOp::Shr, product, c.intLit(32)), d, a.loc);
}

/// sqrt_rn(x) and div_rn(x, y), Triton's names for the correctly rounded square root and
/// quotient: Kiln's sqrt and `/` are already correctly rounded where the target
/// promises it (docs/codegen.md), so these are those, under the names ported code uses.
Val sqrtRn(Sema &s, CallArgs &a) {
  CallArgs sqrtCall = a;
  sqrtCall.callee = "sqrt";
  return findBuiltin("sqrt")->handler(s, sqrtCall);
}

Val divRn(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  if (x.type.pointer || y.type.pointer || !isFloat(s.meetDType(x, y))) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "div_rn needs float operands, got " + s.describe(x) + " and " + s.describe(y), "use .to(f32)");
    return Val::poison();
  }
  return s.binaryOp(BinaryOp::Div, x, y, a.loc);
}

} // namespace

void addDerivedBuiltins(std::vector<BuiltinInfo> &t) {
  constexpr Accepts F = Accepts::Floats, N = Accepts::Numbers;
  t.push_back({"log1p", {"x"}, 1, derived<log1p, F, true>});
  t.push_back({"expm1", {"x"}, 1, derived<expm1, F, true>});
  t.push_back({"round", {"x"}, 1, derived<round, F, false>});
  t.push_back({"trunc", {"x"}, 1, derived<trunc, F, false>});
  t.push_back({"sign", {"x"}, 1, derived<sign, N, false>});
  for (const char *n : {"isnan", "isinf", "isfinite"})
    t.push_back({n, {"x"}, 1, derived<classify, N, false>});
  t.push_back({"relu", {"x"}, 1, derived<relu, N, false>});
  t.push_back({"silu", {"x"}, 1, derived<silu, F, true>});
  t.push_back({"gelu", {"x", "approximate"}, 1, derived<gelu, F, true>});
  t.push_back({"softplus", {"x", "beta", "threshold"}, 1, derived<softplus, F, true>});
  t.push_back({"umulhi", {"x", "y"}, 2, umulhi});
  t.push_back({"sqrt_rn", {"x"}, 1, sqrtRn});
  t.push_back({"div_rn", {"x", "y"}, 2, divRn});
}

} // namespace kiln::sema
