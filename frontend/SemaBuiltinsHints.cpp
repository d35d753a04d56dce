//===- SemaBuiltinsHints.cpp - multiple_of, max_contiguous, assume --------===//
//
// Triton's compiler hints, in Kiln's terms. Kiln's code generator derives the
// divisibility and contiguity of every value computed from program_id, arange and
// constants on its own (codegen/AxisInfo), so a hint on such a value changes nothing
// and is accepted as it stands. What it cannot know is a property of a run-time
// parameter: `multiple_of(n, 16)` or `assume(n % 16 == 0)` on an integer parameter
// of the kernel is a promise, recorded on the kernel (ir::Kernel::paramMultiples) and
// used as --assume-multiple is: strided accesses through it may become vector loads,
// and a bundle records it, so that a launch whose argument breaks it is refused.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

namespace kiln::sema {

namespace {

/// The index of `v` among the current kernel's runtime parameters, if it is one of its
/// integer parameters as passed (not a value computed from it).
std::optional<unsigned> integerParamIndex(const Sema &s, const Val &v) {
  if (!s.current || !v.isValue() || !v.ir || v.type.pointer || !v.type.isScalar() || !isInteger(v.type.dtype))
    return std::nullopt;
  for (unsigned i = 0; i < s.current->params().size(); ++i)
    if (s.current->params()[i].get() == v.ir)
      return i;
  return std::nullopt;
}

/// A constant power of two from 1 to 2^30 (the runtime checks divisibility by those).
std::optional<int64_t> powerOfTwoArg(Sema &s, CallArgs &a, size_t i, const char *what) {
  auto n = s.argConstInt(a, i, what);
  if (!n)
    return std::nullopt;
  if (*n < 1 || *n > (int64_t{1} << 30) || (*n & (*n - 1)) != 0) {
    s.error(a.locs[i], DiagCode::InvalidArgument,
            std::string(what) + " of " + a.callee + " must be a power of two from 1 to 1073741824, got " +
                std::to_string(*n));
    return std::nullopt;
  }
  return n;
}

/// Records that parameter `index` is a multiple of `n` (the larger promise wins).
void promiseMultiple(Sema &s, unsigned index, int64_t n) {
  for (auto &[i, m] : s.current->paramMultiples)
    if (i == index) {
      m = std::max(m, n);
      return;
    }
  s.current->paramMultiples.emplace_back(index, n);
}

/// multiple_of(x, n): x, promised to be a multiple of n.
Val multipleOf(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  auto n = powerOfTwoArg(s, a, 1, "the multiple");
  if (!x.isValue() || !n)
    return Val::poison();
  if (x.type.pointer || !isInteger(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, "multiple_of needs an integer value, got " + s.describe(x),
            "pointers are taken as 16-byte aligned; the hint is for integer offsets and sizes");
    return Val::poison();
  }
  if (auto index = integerParamIndex(s, x))
    promiseMultiple(s, *index, *n);
  return x;
}

/// max_contiguous(x, n): x; contiguity is derived from arange (see the file comment).
Val maxContiguous(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0);
  auto n = powerOfTwoArg(s, a, 1, "the run length");
  if (!x.isValue() || !n)
    return Val::poison();
  if (x.type.pointer || !isInteger(x.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, "max_contiguous needs an integer value, got " + s.describe(x));
    return Val::poison();
  }
  return x;
}

/// assume(p % n == 0) for an integer parameter p and a power of two n: the same promise
/// as multiple_of(p, n). Other conditions are refused rather than ignored.
Val assumeBuiltin(Sema &s, CallArgs &a) {
  const auto *eq = ast::dyn_cast<ast::BinaryExpr>(a.exprs[0]);
  const auto *rem = eq && eq->op == ast::BinaryOp::Eq ? ast::dyn_cast<ast::BinaryExpr>(eq->lhs.get()) : nullptr;
  const auto *zero = eq ? ast::dyn_cast<ast::IntLit>(eq->rhs.get()) : nullptr;
  if (!rem || rem->op != ast::BinaryOp::Rem || !zero || zero->value != 0) {
    s.error(a.locs[0], DiagCode::InvalidArgument,
            "assume understands one condition: an integer parameter that is a multiple of a power of two",
            "write assume(n % 16 == 0), or multiple_of(n, 16)");
    return Val::poison();
  }
  Val p = s.evalValue(*rem->lhs);
  Val n = s.evalValue(*rem->rhs);
  if (!p.isValue() || !n.isValue())
    return Val::poison();
  auto index = integerParamIndex(s, p);
  if (!index) {
    s.error(rem->lhs->loc, DiagCode::InvalidArgument,
            "assume(x % n == 0) needs x to be an integer parameter of the kernel, got " + s.describe(p),
            "Kiln derives what is known of values computed in the kernel itself");
    return Val::poison();
  }
  if (!n.isConst() || !n.cst->isInt() || n.cst->i < 1 || n.cst->i > (int64_t{1} << 30) ||
      (n.cst->i & (n.cst->i - 1)) != 0) {
    s.error(rem->rhs->loc, DiagCode::InvalidArgument,
            "assume(x % n == 0) needs n to be a constant power of two from 1 to 1073741824");
    return Val::poison();
  }
  promiseMultiple(s, *index, n.cst->i);
  return Val::makeVoid();
}

} // namespace

void addHintBuiltins(std::vector<BuiltinInfo> &t) {
  t.push_back({"multiple_of", {"x", "n"}, 2, multipleOf});
  t.push_back({"max_contiguous", {"x", "n"}, 2, maxContiguous});
  t.push_back({"assume", {"cond"}, 1, assumeBuiltin});
}

} // namespace kiln::sema
