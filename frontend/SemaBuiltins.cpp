//===- SemaBuiltins.cpp - Program, creation, memory, math and debug builtins ===//
//
// Each builtin is a row of the table at the bottom: its parameter names (which are
// also its keyword names), how many are required, and a handler that reads the matched
// arguments, checks them, and emits the op. The shape builtins and the reductions live
// in SemaBuiltinsShape.cpp and SemaBuiltinsReduce.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"
#include "frontend/SemaTileOps.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::sema {

using ir::OpKind;

/// The dtype three operands meet in (weak literals yield to typed operands).
static DType meet3(const Sema &s, const Val &a, const Val &b, const Val &c) {
  Val ab = a;
  ab.type = Type::scalar(s.meetDType(a, b));
  ab.weak = a.weak && b.weak;
  return s.meetDType(ab, c);
}

static bool rejectPointer(Sema &s, CallArgs &a, const Val &v, size_t i) {
  if (!v.type.pointer)
    return false;
  s.error(a.locs[i], DiagCode::TypeMismatch,
          a.callee + " does not take pointers, got " + s.describe(v),
          "load the values first: load(p)");
  return true;
}

//===--------------------------------------------------------------------===//
// Program geometry and creation
//===--------------------------------------------------------------------===//

static Val gridQuery(Sema &s, CallArgs &a) {
  auto axis = s.argConstInt(a, 0, "the axis");
  if (!axis)
    return Val::poison();
  if (*axis < 0 || *axis > 2) {
    s.error(a.locs[0], DiagCode::InvalidArgument,
            a.callee + " axis must be 0, 1 or 2, got " + std::to_string(*axis));
    return Val::poison();
  }
  return s.emitValue(a.callee == "program_id" ? OpKind::ProgramId : OpKind::NumPrograms, a.loc, {},
                     Type::scalar(DType::I32), {{"axis", ir::Attr(*axis)}});
}

static Val arange(Sema &s, CallArgs &a) {
  auto start = s.argConstInt(a, 0, "start");
  auto end = s.argConstInt(a, 1, "end");
  if (!start || !end)
    return Val::poison();
  constexpr int64_t lo = std::numeric_limits<int32_t>::min(),
                    hi = std::numeric_limits<int32_t>::max();
  if (*start < lo || *start > hi || *end < lo || *end > hi) {
    s.error(a.loc, DiagCode::InvalidArgument, "arange bounds must fit in i32");
    return Val::poison();
  }
  if (*end <= *start) {
    s.error(a.loc, DiagCode::InvalidArgument,
            "arange needs end > start, got arange(" + std::to_string(*start) + ", " +
                std::to_string(*end) + ")");
    return Val::poison();
  }
  if (!s.checkTileSize({*end - *start}, a.loc))
    return Val::poison();
  return s.emitValue(OpKind::Arange, a.loc, {}, Type::tile(DType::I32, {*end - *start}),
                     {{"start", ir::Attr(*start)}, {"end", ir::Attr(*end)}});
}

/// zeros and full take the rank-0 shape `[]` too: a scalar, as Triton's full([], ...).
static Val zeros(Sema &s, CallArgs &a) {
  auto shape = s.argShape(a, 0, /*allowRank0=*/true);
  auto dtype = s.argDType(a, 1, DType::F32);
  if (!shape || !dtype)
    return Val::poison();
  ConstVal zero = isFloat(*dtype)  ? ConstVal::ofFloat(0)
                  : isBool(*dtype) ? ConstVal::ofBool(false)
                                   : ConstVal::ofInt(0);
  return Val::ofIR(s.buildConstant(Type::tile(*dtype, *shape), zero, a.loc), a.loc);
}

static Val full(Sema &s, CallArgs &a) {
  auto shape = s.argShape(a, 0, /*allowRank0=*/true);
  Val v = s.argValue(a, 1);
  auto dtype = s.argDType(a, 2, DType::F32);
  if (!shape || !dtype || !v.isValue())
    return Val::poison();
  if (rejectPointer(s, a, v, 1))
    return Val::poison();
  if (!v.type.isScalar()) {
    s.error(a.locs[1], DiagCode::TypeMismatch,
            "the value of full must be a scalar, got " + s.describe(v),
            "use broadcast_to(x, shape) to broadcast a tile");
    return Val::poison();
  }
  // An integer literal is checked against the dtype; anything else converts like a cast.
  Val c = v.weak && v.cst->isInt() ? s.adopt(v, *dtype) : s.castTo(s.strengthen(v), *dtype, a.loc);
  if (c.isConst())
    return Val::ofIR(s.buildConstant(Type::tile(*dtype, *shape), *c.cst, a.loc), a.loc);
  return s.broadcastTo(c, *shape, a.loc);
}

//===--------------------------------------------------------------------===//
// Memory
//===--------------------------------------------------------------------===//

static bool inCombiner(Sema &s, CallArgs &a) {
  if (!s.combinerDepth)
    return false;
  s.error(a.loc, DiagCode::InvalidArgument,
          "a reduce/scan combine fn cannot call " + a.callee + " (it must only compute)");
  return true;
}

static bool requirePointer(Sema &s, CallArgs &a, const Val &p) {
  if (p.type.pointer)
    return true;
  s.error(a.locs[0], DiagCode::TypeMismatch,
          "the first argument of " + a.callee + " must be a pointer or a tile of pointers, got " +
              s.describe(p),
          "offset a pointer parameter, e.g. x + offs");
  return false;
}

static bool requireMask(Sema &s, CallArgs &a, const Val &m, size_t i) {
  if (!m.type.pointer && isBool(m.type.dtype))
    return true;
  s.error(a.locs[i], DiagCode::NotBool,
          "the mask of " + a.callee + " must be bool, got " + s.describe(m),
          "build it from a comparison, e.g. mask = offs < n");
  return false;
}

/// A value stored through pointers `p` (already of the final shape): broadcast to it
/// and converted to the pointee dtype.
static std::optional<Val> storedValue(Sema &s, CallArgs &a, size_t i, const Type &p) {
  Val v = s.argValue(a, i);
  if (!v.isValue())
    return std::nullopt;
  if (v.type.pointer) {
    s.error(a.locs[i], DiagCode::TypeMismatch,
            a.callee + " cannot store pointers (got " + s.describe(v) + ")");
    return std::nullopt;
  }
  if (!broadcastsTo(v.type.shape, p.shape)) {
    s.error(a.locs[i], DiagCode::ShapeMismatch,
            "the " + std::string(i == 1 && a.callee == "atomic_cas" ? "cmp" : "value") + " " +
                s.describe(v) + " of " + a.callee + " does not broadcast to the pointers' shape " +
                shapeString(p.shape));
    return std::nullopt;
  }
  Val c = s.convertTo(v, p.dtype, a.locs[i]);
  return s.broadcastTo(c, p.shape, a.locs[i]);
}

/// Pointers and optional mask broadcast to one shape.
static bool pointersAndMask(Sema &s, CallArgs &a, size_t maskIndex, Val &p,
                            std::optional<Val> &mask) {
  p = s.argValue(a, 0);
  if (!p.isValue() || !requirePointer(s, a, p))
    return false;
  if (!a.has(maskIndex))
    return true;
  Val m = s.argValue(a, maskIndex);
  if (!m.isValue() || !requireMask(s, a, m, maskIndex))
    return false;
  auto shape = s.commonShape(p.type.shape, m.type.shape, a.locs[maskIndex],
                             "(pointers and mask of " + a.callee + ")");
  if (!shape)
    return false;
  p = s.broadcastTo(p, *shape, a.loc);
  mask = s.broadcastTo(m, *shape, a.locs[maskIndex]);
  return true;
}

// String options: the cache hints of loads and stores, the ordering of atomics.

namespace {
/// One way of writing an option's value and the attribute value it stands for; an empty
/// attribute is the default, which the op leaves out.
struct Spelling {
  const char *written;
  const char *attr;
};
} // namespace

/// The option at argument `i` (`sem = "relaxed"`), a string literal among `spellings`:
/// adds its attribute `name` to `attrs` unless it is the default. E0404, naming the valid
/// values (`valid`), for anything else; returns false then.
static bool stringOption(Sema &s, CallArgs &a, size_t i, const char *name, const char *valid,
                         std::initializer_list<Spelling> spellings, ir::AttrMap &attrs) {
  if (!a.has(i))
    return true;
  const auto *lit = ast::dyn_cast<ast::StringLit>(a.exprs[i]);
  if (lit)
    for (const Spelling &sp : spellings)
      if (lit->value == sp.written) {
        if (*sp.attr)
          attrs[name] = ir::Attr(std::string(sp.attr));
        return true;
      }
  const std::string what = std::string("the ") + name + " of " + a.callee + " must be ";
  s.error(a.locs[i], DiagCode::InvalidArgument,
          lit ? what + valid + ", got \"" + lit->value + "\""
              : what + "a string literal, one of " + valid);
  return false;
}

/// `sem` and `scope` of an atomic: how its update orders the thread's other memory
/// accesses, and which threads that ordering is for (Triton's values and defaults).
static bool atomicOrdering(Sema &s, CallArgs &a, size_t semIndex, ir::AttrMap &attrs) {
  bool ok = stringOption(
      s, a, semIndex, "sem", "\"acq_rel\", \"acquire\", \"release\" or \"relaxed\"",
      {{"acq_rel", ""}, {"acquire", "acquire"}, {"release", "release"}, {"relaxed", "relaxed"}},
      attrs);
  ok &= stringOption(s, a, semIndex + 1, "scope", "\"gpu\", \"cta\" or \"sys\"",
                     {{"gpu", ""}, {"cta", "cta"}, {"sys", "sys"}}, attrs);
  return ok;
}

/// `eviction_policy` of a load or store: how long the touched lines should stay cached.
static bool evictionPolicy(Sema &s, CallArgs &a, size_t i, ir::AttrMap &attrs) {
  return stringOption(s, a, i, "eviction_policy",
                      "\"\", \"evict_first\", \"evict_last\" or \"evict_normal\"",
                      {{"", ""}, {"evict_normal", ""}, {"evict_first", "evict_first"},
                       {"evict_last", "evict_last"}},
                      attrs);
}

static Val load(Sema &s, CallArgs &a) {
  if (inCombiner(s, a))
    return Val::poison();
  // Triton's cache modifiers, with or without the dot of PTX's spelling. ".ca" caches
  // at every level, which an ordinary load already does.
  ir::AttrMap hints;
  bool hintsOk = stringOption(
      s, a, 3, "cache_modifier", "\"\", \".ca\", \".cg\" or \".cv\" (the dot may be left out)",
      {{"", ""}, {".ca", ""}, {"ca", ""}, {".cg", "cg"}, {"cg", "cg"}, {".cv", "cv"}, {"cv", "cv"}},
      hints);
  hintsOk &= evictionPolicy(s, a, 4, hints);
  if (!hintsOk)
    return Val::poison();
  Val p;
  std::optional<Val> mask;
  if (!pointersAndMask(s, a, 1, p, mask))
    return Val::poison();
  std::vector<ir::Value *> operands = {s.materialize(p)};
  if (mask)
    operands.push_back(s.materialize(*mask));
  if (a.has(2)) {
    if (!mask) {
      s.error(a.locs[2], DiagCode::InvalidArgument, "load(other = ...) needs a mask",
              "other is what masked-off lanes read; without a mask every lane is read");
      return Val::poison();
    }
    auto other = storedValue(s, a, 2, p.type);
    if (!other)
      return Val::poison();
    operands.push_back(s.materialize(*other));
  }
  return s.emitValue(OpKind::Load, a.loc, std::move(operands), p.type.withDType(p.type.dtype),
                     std::move(hints));
}

static Val store(Sema &s, CallArgs &a) {
  if (inCombiner(s, a))
    return Val::poison();
  ir::AttrMap hints;
  if (!evictionPolicy(s, a, 3, hints))
    return Val::poison();
  Val p;
  std::optional<Val> mask;
  if (!pointersAndMask(s, a, 2, p, mask))
    return Val::poison();
  auto v = storedValue(s, a, 1, p.type);
  if (!v)
    return Val::poison();
  std::vector<ir::Value *> operands = {s.materialize(p), s.materialize(*v)};
  if (mask)
    operands.push_back(s.materialize(*mask));
  s.emit(OpKind::Store, a.loc, std::move(operands), {}, std::move(hints));
  return Val::makeVoid();
}

static Val atomicRMW(Sema &s, CallArgs &a) {
  if (inCombiner(s, a))
    return Val::poison();
  const std::string kind = a.callee.substr(std::string("atomic_").size());
  ir::AttrMap attrs = {{"kind", ir::Attr(kind)}};
  if (!atomicOrdering(s, a, 3, attrs))
    return Val::poison();
  Val p;
  std::optional<Val> mask;
  if (!pointersAndMask(s, a, 2, p, mask))
    return Val::poison();
  const bool bitwise = kind == "and" || kind == "or" || kind == "xor";
  if (bitwise && !isInteger(p.type.dtype)) {
    // Integers only, as in Triton: a float has no bitwise meaning, and bool flags are
    // set and cleared with atomic_xchg.
    s.error(a.locs[0], DiagCode::TypeMismatch,
            a.callee + " needs integer memory, got " + s.describe(p),
            isBool(p.type.dtype) ? "keep the flags as 0 and 1 in an integer buffer, or use atomic_xchg"
                                 : "");
    return Val::poison();
  }
  if (isBool(p.type.dtype) && a.callee != "atomic_xchg") {
    s.error(a.locs[0], DiagCode::TypeMismatch, a.callee + " does not work on bool memory");
    return Val::poison();
  }
  auto v = storedValue(s, a, 1, p.type);
  if (!v)
    return Val::poison();
  std::vector<ir::Value *> operands = {s.materialize(p), s.materialize(*v)};
  if (mask)
    operands.push_back(s.materialize(*mask));
  return s.emitValue(OpKind::AtomicRMW, a.loc, std::move(operands), p.type.withDType(p.type.dtype),
                     std::move(attrs));
}

static Val atomicCas(Sema &s, CallArgs &a) {
  if (inCombiner(s, a))
    return Val::poison();
  ir::AttrMap attrs;
  if (!atomicOrdering(s, a, 3, attrs))
    return Val::poison();
  Val p = s.argValue(a, 0);
  if (!p.isValue() || !requirePointer(s, a, p))
    return Val::poison();
  auto cmp = storedValue(s, a, 1, p.type);
  auto v = storedValue(s, a, 2, p.type);
  if (!cmp || !v)
    return Val::poison();
  return s.emitValue(OpKind::AtomicCas, a.loc,
                     {s.materialize(p), s.materialize(*cmp), s.materialize(*v)},
                     p.type.withDType(p.type.dtype), std::move(attrs));
}

//===--------------------------------------------------------------------===//
// Math
//===--------------------------------------------------------------------===//

static OpKind mathOpKind(const std::string &name) {
  static const std::pair<const char *, OpKind> table[] = {
      {"exp", OpKind::Exp},   {"exp2", OpKind::Exp2},       {"log", OpKind::Log},
      {"log2", OpKind::Log2}, {"sqrt", OpKind::Sqrt},       {"rsqrt", OpKind::Rsqrt},
      {"sin", OpKind::Sin},   {"cos", OpKind::Cos},         {"tanh", OpKind::Tanh},
      {"erf", OpKind::Erf},   {"sigmoid", OpKind::Sigmoid}, {"floor", OpKind::Floor},
      {"ceil", OpKind::Ceil},
  };
  for (const auto &[n, k] : table)
    if (name == n)
      return k;
  KILN_ICE("mathOpKind: not a math builtin: " + name);
}

static Val mathUnary(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  if (!x.isValue() || rejectPointer(s, a, x, 0))
    return Val::poison();
  if (x.weak && !x.cst->isBool()) {
    // A literal argument folds (exp(1.0) is a constant, usable in consts).
    double in = x.cst->isFloat() ? x.cst->f : static_cast<double>(x.cst->i);
    auto r = foldMath(a.callee, in);
    kiln_assert(r.has_value(), "math builtin without a folding rule: " + a.callee);
    return Val::ofConst(Type::scalar(isFloat(x.type.dtype) ? x.type.dtype : DType::F32),
                        ConstVal::ofFloat(*r), true, a.loc);
  }
  if (!isFloat(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch,
            a.callee + " needs a float operand, got " + s.describe(x), "use .to(f32)");
    return Val::poison();
  }
  return s.emitValue(mathOpKind(a.callee), a.loc, {s.materialize(x)}, x.type);
}

static Val absBuiltin(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  if (!x.isValue() || rejectPointer(s, a, x, 0))
    return Val::poison();
  if (isBool(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch,
            "abs needs an integer or float operand, got " + s.describe(x));
    return Val::poison();
  }
  if (x.weak) {
    ConstVal c = *x.cst;
    if (c.isFloat())
      c.f = std::fabs(c.f);
    else if (c.i < 0 && x.type.dtype != DType::U64) {
      if (c.i == std::numeric_limits<int64_t>::min()) {
        s.error(a.loc, DiagCode::ConstEvalError, "integer overflow in a constant expression");
        return Val::poison();
      }
      c.i = -c.i;
    }
    return Val::ofConst(x.type, c, true, a.loc);
  }
  if (!isSigned(x.type.dtype))
    return x;
  return s.emitValue(OpKind::Abs, a.loc, {s.materialize(x)}, x.type);
}

/// Operands `idx` of `a` converted to dtype `d` and broadcast to one common shape.
static std::optional<std::vector<Val>> unify(Sema &s, CallArgs &a, std::vector<Val> vals, DType d) {
  Shape shape;
  for (const Val &v : vals) {
    auto sh = s.commonShape(shape, v.type.shape, a.loc, "(arguments of " + a.callee + ")");
    if (!sh)
      return std::nullopt;
    shape = *sh;
  }
  for (Val &v : vals)
    v = s.broadcastTo(s.convertTo(v, d, a.loc), shape, a.loc);
  return vals;
}

Val minMaxPow(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue() || rejectPointer(s, a, x, 0) || rejectPointer(s, a, y, 1))
    return Val::poison();
  bool isPow = a.callee == "pow";
  DType d = s.meetDType(x, y);
  if (isPow && !isFloat(d) && x.weak && y.weak)
    d = DType::F32;
  if (isPow ? !isFloat(d) : isBool(d)) {
    s.error(a.loc, DiagCode::TypeMismatch,
            a.callee + " needs " + (isPow ? "float" : "integer or float") + " operands, got " +
                s.describe(x) + " and " + s.describe(y),
            isPow ? "use .to(f32)" : "");
    return Val::poison();
  }
  // propagate_nan = true: a NaN operand gives NaN (torch.maximum), where IEEE maxNum
  // and minNum, the default, ignore it.
  std::optional<bool> propagate = false;
  if (!isPow && a.exprs.size() > 2 && a.has(2))
    propagate = s.argConstBool(a, 2, "propagate_nan");
  if (x.isConst() && y.isConst() && x.weak && y.weak && propagate) {
    double fx = x.cst->isFloat() ? x.cst->f : double(x.cst->i);
    double fy = y.cst->isFloat() ? y.cst->f : double(y.cst->i);
    if (*propagate && isFloat(d) && (std::isnan(fx) || std::isnan(fy)))
      return Val::ofConst(Type::scalar(d), ConstVal::ofFloat(NAN), true, a.loc);
    if (isPow)
      return Val::ofConst(Type::scalar(d), ConstVal::ofFloat(std::pow(fx, fy)), true, a.loc);
    bool takeX = a.callee == "minimum"
                     ? (isFloat(d) ? std::fmin(fx, fy) == fx : x.cst->i <= y.cst->i)
                     : (isFloat(d) ? std::fmax(fx, fy) == fx : x.cst->i >= y.cst->i);
    Val r = takeX ? x : y;
    r.type = Type::scalar(d);
    if (isFloat(d))
      r.cst = ConstVal::ofFloat(takeX ? fx : fy);
    r.loc = a.loc;
    return r;
  }
  auto ops = unify(s, a, {x, y}, d);
  if (!ops || !propagate)
    return Val::poison();
  OpKind k = isPow ? OpKind::Pow : a.callee == "minimum" ? OpKind::Minimum : OpKind::Maximum;
  Val r = s.emitValue(k, a.loc, {s.materialize((*ops)[0]), s.materialize((*ops)[1])}, (*ops)[0].type);
  if (!*propagate || !isFloat(d))
    return r;
  Val nan = s.binaryOp(ast::BinaryOp::LogicalOr, s.binaryOp(ast::BinaryOp::Ne, (*ops)[0], (*ops)[0], a.loc),
                       s.binaryOp(ast::BinaryOp::Ne, (*ops)[1], (*ops)[1], a.loc), a.loc);
  Val nanValue = s.broadcastTo(Val::ofConst(Type::scalar(d), ConstVal::ofFloat(NAN), false, a.loc), r.type.shape,
                               a.loc);
  return s.emitValue(OpKind::Select, a.loc, {s.materialize(nan), s.materialize(nanValue), s.materialize(r)}, r.type);
}

/// The arguments of a call of `callee` on values already computed, placed where the
/// arguments `from` of `a` were written (for messages): for builtins made of others.
CallArgs callOn(const CallArgs &a, const char *callee, const std::vector<std::pair<size_t, Val>> &from) {
  CallArgs b;
  b.callee = callee;
  b.loc = a.loc;
  b.calleeLoc = a.calleeLoc;
  for (const auto &[i, v] : from) {
    b.exprs.push_back(a.exprs[i]);
    b.locs.push_back(a.locs[i]);
    b.positional.push_back(a.positional[i]);
    b.vals.push_back(v);
  }
  return b;
}

/// clamp(x, lo, hi) = minimum(maximum(x, lo), hi), elementwise, all three broadcast and
/// promoted together. A NaN x gives lo, as maximum ignores a NaN operand.
static Val clamp(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), lo = s.argValue(a, 1), hi = s.argValue(a, 2);
  if (!x.isValue() || !lo.isValue() || !hi.isValue() || rejectPointer(s, a, x, 0) || rejectPointer(s, a, lo, 1) ||
      rejectPointer(s, a, hi, 2))
    return Val::poison();
  CallArgs low = callOn(a, "maximum", {{0, x}, {1, lo}});
  Val raised = minMaxPow(s, low);
  if (!raised.isValue())
    return Val::poison();
  CallArgs high = callOn(a, "minimum", {{0, raised}, {2, hi}});
  return minMaxPow(s, high);
}

/// cdiv(a, b) = (a + b - 1) / b for integers: the blocks of b that cover a (Triton's
/// tl.cdiv), a grid size or a loop bound. Constants fold.
static Val cdiv(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  for (size_t i = 0; i < 2; ++i) {
    const Val &v = i == 0 ? x : y;
    if (v.type.pointer || !isInteger(v.type.dtype)) {
      s.error(a.locs[i], DiagCode::TypeMismatch, "cdiv needs integer operands, got " + s.describe(v),
              "for floats, ceil(a / b)");
      return Val::poison();
    }
  }
  Val one = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(1), true, a.loc);
  Val top = s.binaryOp(ast::BinaryOp::Sub, s.binaryOp(ast::BinaryOp::Add, x, y, a.loc), one, a.loc);
  return s.binaryOp(ast::BinaryOp::Div, top, y, a.loc);
}

static Val fma(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1), z = s.argValue(a, 2);
  if (!x.isValue() || !y.isValue() || !z.isValue())
    return Val::poison();
  if (rejectPointer(s, a, x, 0) || rejectPointer(s, a, y, 1) || rejectPointer(s, a, z, 2))
    return Val::poison();
  DType d = meet3(s, x, y, z);
  if (!isFloat(d)) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "fma needs float operands, got " + s.describe(x) + ", " + s.describe(y) + " and " +
                s.describe(z),
            "use .to(f32)");
    return Val::poison();
  }
  auto ops = unify(s, a, {x, y, z}, d);
  if (!ops)
    return Val::poison();
  return s.emitValue(OpKind::Fma, a.loc,
                     {s.materialize((*ops)[0]), s.materialize((*ops)[1]), s.materialize((*ops)[2])},
                     (*ops)[0].type);
}

static Val where(Sema &s, CallArgs &a) {
  Val c = s.argValue(a, 0), x = s.argValue(a, 1), y = s.argValue(a, 2);
  if (!c.isValue() || !x.isValue() || !y.isValue())
    return Val::poison();
  if (!requireMask(s, a, c, 0))
    return Val::poison();
  if (x.type.pointer != y.type.pointer || (x.type.pointer && x.type.dtype != y.type.dtype)) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "where needs two values of compatible types, got " + s.describe(x) + " and " +
                s.describe(y));
    return Val::poison();
  }
  DType d = x.type.pointer ? x.type.dtype : s.meetDType(x, y);
  Shape shape = c.type.shape;
  for (const Val *v : {&x, &y}) {
    auto sh = s.commonShape(shape, v->type.shape, a.loc, "(arguments of where)");
    if (!sh)
      return Val::poison();
    shape = *sh;
  }
  auto prep = [&](const Val &v) {
    return s.broadcastTo(v.type.pointer ? v : s.convertTo(v, d, a.loc), shape, a.loc);
  };
  if (c.isConst())
    return prep(c.cst->i ? x : y);
  Val cc = s.broadcastTo(c, shape, a.loc), xx = prep(x), yy = prep(y);
  return s.emitValue(OpKind::Select, a.loc,
                     {s.materialize(cc), s.materialize(xx), s.materialize(yy)}, xx.type);
}

//===--------------------------------------------------------------------===//
// Conversions
//===--------------------------------------------------------------------===//

static Val toBuiltin(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  auto d = s.argDType(a, 1, DType::F32);
  if (!x.isValue() || !d)
    return Val::poison();
  if (x.type.pointer) {
    s.error(a.locs[0], DiagCode::InvalidCast,
            "cannot convert pointers (" + s.describe(x) + ") to " + dtStr(*d));
    return Val::poison();
  }
  return s.castTo(x, *d, a.loc);
}

static Val bitcast(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  auto d = s.argDType(a, 1, DType::F32);
  if (!x.isValue() || !d)
    return Val::poison();
  x = s.strengthen(x);
  if (x.type.pointer || dtypeBits(x.type.dtype) != dtypeBits(*d) || isBool(*d) ||
      isBool(x.type.dtype)) {
    s.error(a.loc, DiagCode::InvalidCast, "cannot bitcast " + s.describe(x) + " to " + dtStr(*d),
            x.type.pointer ? std::string("pointers cannot be bitcast")
                           : "bitcast needs two non-bool dtypes of the same width (" +
                                 std::to_string(dtypeBits(x.type.dtype)) + " and " +
                                 std::to_string(dtypeBits(*d)) + " bits here)");
    return Val::poison();
  }
  if (x.type.dtype == *d)
    return x;
  return s.emitValue(OpKind::Bitcast, a.loc, {s.materialize(x)}, x.type.withDType(*d));
}

//===--------------------------------------------------------------------===//
// Matrix product
//===--------------------------------------------------------------------===//

static Val dot(Sema &s, CallArgs &a);

/// x (f32) rounded to TF32 (10 mantissa bits, to nearest, halves away from zero, as the
/// tensor cores' conversion does); NaN and infinities unchanged.
static Val roundToTf32(Sema &s, Val x, Location loc) {
  using ast::BinaryOp;
  auto u32 = [&](int64_t v) { return Val::ofConst(Type::scalar(DType::U32), ConstVal::ofInt(v), true, loc); };
  Val bits = s.emitValue(OpKind::Bitcast, loc, {s.materialize(x)}, x.type.withDType(DType::U32));
  Val rounded = s.binaryOp(BinaryOp::BitAnd, s.binaryOp(BinaryOp::Add, bits, u32(0x1000), loc), u32(0xFFFFE000), loc);
  Val back = s.emitValue(OpKind::Bitcast, loc, {s.materialize(rounded)}, x.type);
  Val special = s.binaryOp(BinaryOp::Eq, s.binaryOp(BinaryOp::BitAnd, bits, u32(0x7F800000), loc), u32(0x7F800000), loc);
  return s.emitValue(OpKind::Select, loc, {s.materialize(special), s.materialize(x), s.materialize(back)}, x.type);
}

/// The largest batch a 3-D dot unrolls.
constexpr int64_t kMaxDotBatch = 64;

/// Batch `b` of a [B, R, C] tile, as [R, C].
static Val batchOf(Sema &s, const Val &t, int64_t b, Location loc) {
  Shape one = t.type.shape;
  one[0] = 1;
  Val index = s.broadcastTo(Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(b), true, loc), one, loc);
  return tile::reshape(s, tile::gatherAlong(s, t, index, 0, loc), {one[1], one[2]}, loc);
}

/// dot of [B, M, K] and [B, K, N] tiles (Triton's 3-D tl.dot): one 2-D dot per batch,
/// unrolled (B is at most kMaxDotBatch), stacked along the leading axis; `acc` is
/// [B, M, N] or broadcasts to it.
static Val batchedDot(Sema &s, CallArgs &a, const Val &x, const Val &y) {
  const int64_t batch = x.type.shape[0];
  if (y.type.shape[0] != batch || x.type.shape[2] != y.type.shape[1]) {
    s.error(a.loc, DiagCode::ShapeMismatch,
            "a batched dot needs [B, M, K] x [B, K, N], got " + shapeString(x.type.shape) + " x " +
                shapeString(y.type.shape));
    return Val::poison();
  }
  if (batch > kMaxDotBatch) {
    s.error(a.locs[0], DiagCode::InvalidArgument,
            "a batched dot unrolls its batch, which may have at most " + std::to_string(kMaxDotBatch) +
                " entries, got " + std::to_string(batch),
            "loop over the batch with a 2-D dot per iteration");
    return Val::poison();
  }
  const Shape out = {batch, x.type.shape[1], y.type.shape[2]};
  if (!s.checkTileSize(out, a.loc))
    return Val::poison();
  std::optional<Val> acc;
  if (a.has(2)) {
    Val c = s.argValue(a, 2);
    if (!c.isValue())
      return Val::poison();
    if (c.type.pointer || !broadcastsTo(c.type.shape, out)) {
      s.error(a.locs[2], DiagCode::ShapeMismatch,
              "the accumulator of a batched dot must broadcast to " + shapeString(out) + ", got " + s.describe(c));
      return Val::poison();
    }
    acc = c.isConst() ? c : s.broadcastTo(c, out, a.locs[2]);
  }
  Val stacked;
  for (int64_t b = 0; b < batch; ++b) {
    CallArgs one = a;
    one.vals.assign(a.vals.size(), std::nullopt);
    one.vals[0] = batchOf(s, x, b, a.loc);
    one.vals[1] = batchOf(s, y, b, a.loc);
    if (acc)
      one.vals[2] = acc->isConst() ? *acc : batchOf(s, *acc, b, a.locs[2]);
    Val r = dot(s, one);
    if (!r.isValue())
      return Val::poison();
    r = tile::reshape(s, r, {1, r.type.shape[0], r.type.shape[1]}, a.loc);
    if (b == 0) {
      stacked = r;
      continue;
    }
    Shape grown = stacked.type.shape;
    grown[0] += 1;
    stacked = s.emitValue(OpKind::Cat, a.loc, {s.materialize(stacked), s.materialize(r)},
                          stacked.type.withShape(grown), {{"axis", ir::Attr(int64_t(0))}});
  }
  return stacked;
}

static Val dot(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  if (!x.type.pointer && !y.type.pointer && x.type.rank() == 3 && y.type.rank() == 3)
    return batchedDot(s, a, x, y);
  if (x.type.pointer || y.type.pointer || x.type.rank() != 2 || y.type.rank() != 2) {
    s.error(a.loc, DiagCode::ShapeMismatch,
            "dot needs two 2-D tiles (or two 3-D ones, a batch), got " + s.describe(x) + " and " + s.describe(y),
            "shapes are [M, K] x [K, N], or [B, M, K] x [B, K, N]");
    return Val::poison();
  }
  auto rx = dotResultDType(x.type.dtype), ry = dotResultDType(y.type.dtype);
  if (!rx || !ry || *rx != *ry) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "dot cannot multiply " + x.type.str() + " by " + y.type.str(),
            !rx || !ry
                ? "dot takes f8/f16/bf16/f32 or 8..32-bit integer tiles"
                : "both operands must be floats or both integers; convert one with .to(...)");
    return Val::poison();
  }
  if (x.type.shape[1] != y.type.shape[0]) {
    s.error(a.loc, DiagCode::ShapeMismatch,
            "dot inner dimensions differ: " + shapeString(x.type.shape) + " x " +
                shapeString(y.type.shape));
    return Val::poison();
  }
  Shape mn = {x.type.shape[0], y.type.shape[1]};
  if (!s.checkTileSize(mn, a.loc))
    return Val::poison();
  // input_precision: "ieee" (the default) multiplies f32 operands in full f32, and so
  // does "tf32x3" (Triton's emulation of it); "tf32" rounds f32 operands to TF32 first,
  // the numbers Triton's default gets from TF32 tensor cores.
  if (a.exprs.size() > 3 && a.has(3)) {
    auto precision = s.argString(a, 3);
    if (!precision)
      return Val::poison();
    if (*precision != "ieee" && *precision != "tf32" && *precision != "tf32x3") {
      s.error(a.locs[3], DiagCode::InvalidArgument,
              "dot's input_precision must be \"ieee\", \"tf32\" or \"tf32x3\", got \"" + *precision + "\"");
      return Val::poison();
    }
    if (*precision == "tf32") {
      if (x.type.dtype == DType::F32)
        x = roundToTf32(s, x, a.locs[0]);
      if (y.type.dtype == DType::F32)
        y = roundToTf32(s, y, a.locs[1]);
    }
  }
  std::vector<ir::Value *> operands = {s.materialize(x), s.materialize(y)};
  Type result = Type::tile(*rx, mn);
  if (a.has(2)) {
    Val acc = s.argValue(a, 2);
    if (!acc.isValue())
      return Val::poison();
    bool floats = isFloat(*rx);
    bool okType = !acc.type.pointer &&
                  (floats ? (isFloat(acc.type.dtype) || acc.weak)
                          : (acc.type.dtype == DType::I32 || (acc.weak && acc.cst->isInt())));
    if (!okType || !broadcastsTo(acc.type.shape, mn)) {
      s.error(a.locs[2], okType ? DiagCode::ShapeMismatch : DiagCode::TypeMismatch,
              "the accumulator of dot must be " +
                  std::string(floats ? "a float tile" : "an i32 tile") + " of shape " +
                  shapeString(mn) + ", got " + s.describe(acc));
      return Val::poison();
    }
    DType accType = acc.weak ? *rx : acc.type.dtype;
    Val c = s.broadcastTo(s.convertTo(acc, accType, a.locs[2]), mn, a.locs[2]);
    operands.push_back(s.materialize(c));
    result = c.type;
  }
  return s.emitValue(OpKind::Dot, a.loc, std::move(operands), result);
}

//===--------------------------------------------------------------------===//
// Debugging
//===--------------------------------------------------------------------===//

static Val assertBuiltin(Sema &s, CallArgs &a) {
  if (inCombiner(s, a))
    return Val::poison();
  Val c = s.argValue(a, 0);
  std::optional<std::string> msg = a.has(1) ? s.argString(a, 1) : std::string("assertion failed");
  if (!c.isValue() || !msg)
    return Val::poison();
  if (c.type.pointer || !isBool(c.type.dtype)) {
    s.error(a.locs[0], DiagCode::NotBool,
            "the condition of assert must be bool, got " + s.describe(c),
            "compare, e.g. assert(x >= 0, \"...\")");
    return Val::poison();
  }
  if (c.isConst() && c.cst->i)
    return Val::makeVoid(); // statically true: nothing to check at run time
  s.emit(OpKind::Assert, a.loc, {s.materialize(c)}, {}, {{"message", ir::Attr(*msg)}});
  return Val::makeVoid();
}

static Val staticAssert(Sema &s, CallArgs &a) {
  Val c = s.argValue(a, 0);
  std::optional<std::string> msg = a.has(1) ? s.argString(a, 1) : std::string();
  if (!c.isValue() || !msg)
    return Val::poison();
  if (!c.isConst()) {
    s.error(a.locs[0], DiagCode::NotConstant,
            "the condition of static_assert must be a compile-time constant",
            "use assert(...) for a check at run time");
    return Val::poison();
  }
  if (!c.cst->isBool()) {
    s.error(a.locs[0], DiagCode::NotBool,
            "the condition of static_assert must be bool, got " + s.describe(c));
    return Val::poison();
  }
  if (!c.cst->i)
    s.error(a.loc, DiagCode::StaticAssertFailed,
            msg->empty() ? std::string("static_assert failed") : "static_assert failed: " + *msg);
  return Val::makeVoid();
}

//===--------------------------------------------------------------------===//
// The table
//===--------------------------------------------------------------------===//

void addCoreBuiltins(std::vector<BuiltinInfo> &t) {
  t.push_back({"program_id", {"axis"}, 1, gridQuery});
  t.push_back({"num_programs", {"axis"}, 1, gridQuery});
  t.push_back({"arange", {"start", "end"}, 2, arange});
  t.push_back({"zeros", {"shape", "dtype"}, 1, zeros});
  t.push_back({"full", {"shape", "value", "dtype"}, 2, full});
  t.push_back({"load", {"ptr", "mask", "other", "cache_modifier", "eviction_policy"}, 1, load});
  t.push_back({"store", {"ptr", "value", "mask", "eviction_policy"}, 2, store});
  for (const char *n : {"atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and",
                        "atomic_or", "atomic_xor"})
    t.push_back({n, {"ptr", "val", "mask", "sem", "scope"}, 2, atomicRMW});
  t.push_back({"atomic_cas", {"ptr", "cmp", "val", "sem", "scope"}, 3, atomicCas});
  for (const char *n : {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf",
                        "sigmoid", "floor", "ceil"})
    t.push_back({n, {"x"}, 1, mathUnary});
  t.push_back({"abs", {"x"}, 1, absBuiltin});
  t.push_back({"minimum", {"x", "y", "propagate_nan"}, 2, minMaxPow});
  t.push_back({"maximum", {"x", "y", "propagate_nan"}, 2, minMaxPow});
  t.push_back({"pow", {"x", "y"}, 2, minMaxPow});
  t.push_back({"fma", {"x", "y", "z"}, 3, fma});
  t.push_back({"clamp", {"x", "lo", "hi"}, 3, clamp});
  t.push_back({"cdiv", {"x", "div"}, 2, cdiv});
  t.push_back({"where", {"cond", "x", "y"}, 3, where});
  t.push_back({"to", {"x", "dtype"}, 2, toBuiltin});
  t.push_back({"bitcast", {"x", "dtype"}, 2, bitcast});
  t.push_back({"dot", {"a", "b", "acc", "input_precision"}, 2, dot});
  t.push_back({"assert", {"cond", "msg"}, 1, assertBuiltin});
  t.push_back({"static_assert", {"cond", "msg"}, 1, staticAssert});
}

const std::vector<BuiltinInfo> &allBuiltins() {
  static const std::vector<BuiltinInfo> table = [] {
    std::vector<BuiltinInfo> t;
    addCoreBuiltins(t);
    addShapeBuiltins(t);
    addReduceBuiltins(t);
    addRandomBuiltins(t);
    addDerivedBuiltins(t);
    addHintBuiltins(t);
    return t;
  }();
  return table;
}

const BuiltinInfo *findBuiltin(std::string_view name) {
  for (const BuiltinInfo &b : allBuiltins())
    if (name == b.name)
      return &b;
  return nullptr;
}

} // namespace kiln::sema

namespace kiln {

std::vector<BuiltinSignature> builtinSignatures() {
  std::vector<BuiltinSignature> out;
  for (const sema::BuiltinInfo &b : sema::allBuiltins())
    out.push_back({b.name, std::vector<std::string>(b.params.begin(), b.params.end()), b.numRequired});
  out.push_back({"print", {"values"}, 0, true}); // checked by hand in SemaCall.cpp
  return out;
}

} // namespace kiln
