//===- VerifyOp.cpp - The local rules of each Tile IR op ------------------===//
//
// verifyOpLocal() checks one op in isolation: its arity against Ops.def, its attributes
// and the types and shapes of its operands and results. It never looks inside regions
// (the module verifier does that), so Builder::create can run it on a freshly made op
// whose regions are still empty, and the .tir parser can run it on user text before an
// op is accepted. It must therefore cope with any malformed op without crashing: every
// rule first checks that what it indexes exists.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "ir/Printer.h"
#include "support/FloatFormats.h"

#include <cmath>
#include <limits>

namespace kiln::ir {

using Err = std::optional<std::string>;

//===--------------------------------------------------------------------===//
// Helpers
//===--------------------------------------------------------------------===//

static std::string typeStr(const Value *v) { return v->type.str(); }

static Err checkArity(const Op &op) {
  const OpInfo &info = opInfo(op.kind());
  int n = static_cast<int>(op.numOperands());
  if (n < info.minOperands || (info.maxOperands >= 0 && n > info.maxOperands)) {
    std::string expected = info.maxOperands < 0 ? "at least " + std::to_string(info.minOperands)
                           : info.minOperands == info.maxOperands
                               ? std::to_string(info.minOperands)
                               : std::to_string(info.minOperands) + " to " +
                                     std::to_string(info.maxOperands);
    return "expects " + expected + " operands, got " + std::to_string(n);
  }
  if (info.numResults >= 0 && static_cast<int>(op.numResults()) != info.numResults)
    return "expects " + std::to_string(info.numResults) + " results, got " +
           std::to_string(op.numResults());
  bool regionsOk = info.numRegions >= 0 ? static_cast<int>(op.numRegions()) == info.numRegions
                                        : op.numRegions() <= 1;
  if (!regionsOk)
    return "expects " +
           (info.numRegions >= 0 ? std::to_string(info.numRegions) : std::string("0 or 1")) +
           " regions, got " + std::to_string(op.numRegions());
  for (Value *v : op.operands())
    if (!v)
      return std::string("has a null operand");
  return std::nullopt;
}

/// Every dimension of every type an op touches is positive.
static Err checkShapes(const Op &op) {
  auto check = [](const Type &t) -> Err {
    for (int64_t d : t.shape)
      if (d <= 0)
        return "type " + t.str() + " has a non-positive dimension";
    return std::nullopt;
  };
  for (Value *v : op.operands())
    if (auto e = check(v->type))
      return e;
  for (const auto &r : op.results())
    if (auto e = check(r->type))
      return e;
  return std::nullopt;
}

template <typename T> static const T *findAttr(const Op &op, const char *name) {
  auto it = op.attrs().find(name);
  return it == op.attrs().end() ? nullptr : std::get_if<T>(&it->second);
}

static Err needAttr(const Op &op, const char *name, const char *what, bool present) {
  if (present)
    return std::nullopt;
  if (!op.hasAttr(name))
    return std::string("requires attribute '") + name + "'";
  return std::string("attribute '") + name + "' must be " + what;
}

static Err needInt(const Op &op, const char *name, int64_t &out) {
  const int64_t *v = findAttr<int64_t>(op, name);
  if (auto e = needAttr(op, name, "an integer", v != nullptr))
    return e;
  out = *v;
  return std::nullopt;
}

/// A string attribute that must be one of `choices`.
static Err needChoice(const Op &op, const char *name, std::initializer_list<const char *> choices,
                      std::string &out) {
  const std::string *v = findAttr<std::string>(op, name);
  if (auto e = needAttr(op, name, "a string", v != nullptr))
    return e;
  for (const char *c : choices)
    if (*v == c) {
      out = *v;
      return std::nullopt;
    }
  std::string list;
  for (const char *c : choices)
    list += std::string(list.empty() ? "" : ", ") + c;
  return std::string("attribute '") + name + "' is \"" + *v + "\"; expected one of " + list;
}

/// An optional string attribute: absent, or one of `choices`.
static Err optionalChoice(const Op &op, const char *name,
                          std::initializer_list<const char *> choices) {
  if (!op.hasAttr(name))
    return std::nullopt;
  std::string ignored;
  return needChoice(op, name, choices, ignored);
}

/// Attribute `axis` in [0, rank).
static Err needAxis(const Op &op, unsigned rank, int64_t &axis) {
  if (auto e = needInt(op, "axis", axis))
    return e;
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
  return std::nullopt;
}

static Err resultIs(const Op &op, const Type &expected) {
  if (op.result()->type != expected)
    return "result type is " + typeStr(op.result()) + "; expected " + expected.str();
  return std::nullopt;
}

static Err notPointer(const Value *v, const char *role) {
  if (v->type.pointer)
    return std::string(role) + " must not be a pointer, got " + typeStr(v);
  return std::nullopt;
}

static Shape withoutAxis(const Shape &s, int64_t axis) {
  Shape r = s;
  r.erase(r.begin() + axis);
  return r;
}

//===--------------------------------------------------------------------===//
// Rules by group
//===--------------------------------------------------------------------===//

enum class Elem { Numeric, Integer, IntegerOrBool, Float };

static Err checkElemClass(const Type &t, Elem cls) {
  if (t.pointer)
    return "operands must not be pointers, got " + t.str();
  DType d = t.dtype;
  switch (cls) {
  case Elem::Numeric:
    if (isBool(d))
      return "operands must be integers or floats, got " + t.str();
    break;
  case Elem::Integer:
    if (!isInteger(d))
      return "operands must be integers, got " + t.str();
    break;
  case Elem::IntegerOrBool:
    if (isFloat(d))
      return "operands must be integers or bool, got " + t.str();
    break;
  case Elem::Float:
    if (!isFloat(d))
      return "operands must be floats, got " + t.str();
    break;
  }
  return std::nullopt;
}

/// Operands of one type, the result of that type too.
static Err checkElementwise(const Op &op, Elem cls) {
  const Type &t = op.operand(0)->type;
  for (unsigned i = 1; i < op.numOperands(); ++i)
    if (op.operand(i)->type != t)
      return "operand types differ: " + t.str() + " and " + typeStr(op.operand(i));
  if (auto e = checkElemClass(t, cls))
    return e;
  return resultIs(op, t);
}

static Err checkConstant(const Op &op) {
  const Type &t = op.result()->type;
  auto it = op.attrs().find("value");
  if (it == op.attrs().end())
    return std::string("requires attribute 'value'");
  if (t.pointer)
    return "cannot have pointer type " + t.str();
  if (isFloat(t.dtype)) {
    const double *v = std::get_if<double>(&it->second);
    if (!v)
      return "attribute 'value' of a " + t.str() + " constant must be a float";
    // Constants are kept exactly representable so that folding and printing agree
    // with what the target computes.
    if (!std::isnan(*v) && roundToFloatDType(t.dtype, *v) != *v)
      return "value " + printAttr(*v) + " is not representable in " +
             std::string(dtypeName(t.dtype));
    return std::nullopt;
  }
  const int64_t *v = std::get_if<int64_t>(&it->second);
  if (!v)
    return "attribute 'value' of a " + t.str() + " constant must be an integer";
  if (wrapToIntDType(t.dtype, *v) != *v)
    return "value " + std::to_string(*v) + " is out of range for " +
           std::string(dtypeName(t.dtype));
  return std::nullopt;
}

static Err checkGridQuery(const Op &op) {
  int64_t axis = 0;
  if (auto e = needInt(op, "axis", axis))
    return e;
  if (axis < 0 || axis > 2)
    return "axis " + std::to_string(axis) + " is not 0, 1 or 2";
  return resultIs(op, Type::scalar(DType::I32));
}

static Err checkArange(const Op &op) {
  int64_t start = 0, end = 0;
  if (auto e = needInt(op, "start", start))
    return e;
  if (auto e = needInt(op, "end", end))
    return e;
  constexpr int64_t lo = std::numeric_limits<int32_t>::min();
  constexpr int64_t hi = std::numeric_limits<int32_t>::max();
  if (start < lo || start > hi || end < lo || end > hi)
    return std::string("start and end must fit in i32");
  if (start >= end)
    return "start " + std::to_string(start) + " must be less than end " + std::to_string(end);
  return resultIs(op, Type::tile(DType::I32, {end - start}));
}

static Err checkBlockElements(const Op &op) {
  const Type &bitmaps = op.operand(0)->type, &slot = op.operand(1)->type;
  if (!bitmaps.pointer || !bitmaps.isScalar() || bitmaps.dtype != DType::U32)
    return "the bitmaps operand must be a scalar *u32, got " + typeStr(op.operand(0));
  if (slot != Type::scalar(DType::I32))
    return "the slot operand must be an i32 scalar, got " + typeStr(op.operand(1));
  const Type &r = op.result()->type;
  if (r.pointer || r.dtype != DType::Bool || r.shape.size() != 2)
    return "the result must be a 2-D bool tile, got " + r.str();
  return std::nullopt;
}

static Err checkSplat(const Op &op) {
  const Type &in = op.operand(0)->type;
  if (!in.isScalar())
    return "operand must be a scalar, got " + in.str();
  if (op.result()->type.element() != in)
    return "result type " + typeStr(op.result()) + " does not have element type " + in.str();
  return std::nullopt;
}

static Err checkBroadcast(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  if (in.element() != out.element() || in.rank() != out.rank())
    return "cannot broadcast " + in.str() + " to " + out.str() +
           " (element type and rank must match)";
  for (unsigned i = 0; i < in.rank(); ++i)
    if (in.shape[i] != out.shape[i] && in.shape[i] != 1)
      return "cannot broadcast " + in.str() + " to " + out.str() + ": dimension " +
             std::to_string(i) + " is neither equal nor 1";
  return std::nullopt;
}

static Err checkExpandDims(const Op &op) {
  const Type &in = op.operand(0)->type;
  int64_t axis = 0;
  if (auto e = needInt(op, "axis", axis))
    return e;
  if (axis < 0 || axis > static_cast<int64_t>(in.rank()))
    return "axis " + std::to_string(axis) + " is out of range for inserting into rank " +
           std::to_string(in.rank());
  Shape s = in.shape;
  s.insert(s.begin() + axis, 1);
  return resultIs(op, in.withShape(s));
}

static Err checkReshape(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  if (in.element() != out.element())
    return "cannot reshape " + in.str() + " to " + out.str() + " (element types differ)";
  if (in.numElements() != out.numElements())
    return "cannot reshape " + in.str() + " to " + out.str() + " (element counts differ)";
  return std::nullopt;
}

static Err checkPermute(const Op &op) {
  const Type &in = op.operand(0)->type;
  const auto *perm = findAttr<std::vector<int64_t>>(op, "perm");
  if (auto e = needAttr(op, "perm", "an integer list", perm != nullptr))
    return e;
  if (perm->size() != in.rank())
    return "perm has " + std::to_string(perm->size()) + " entries for rank " +
           std::to_string(in.rank());
  std::vector<bool> seen(in.rank(), false);
  Shape s;
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.rank()) || seen[p])
      return "perm " + printAttr(*perm) + " is not a permutation of 0.." +
             std::to_string(static_cast<int64_t>(in.rank()) - 1);
    seen[p] = true;
    s.push_back(in.shape[p]);
  }
  return resultIs(op, in.withShape(s));
}

static Err checkJoin(const Op &op) {
  const Type &a = op.operand(0)->type;
  if (op.operand(1)->type != a)
    return "operand types differ: " + a.str() + " and " + typeStr(op.operand(1));
  Shape s = a.shape;
  s.push_back(2);
  return resultIs(op, a.withShape(s));
}

static Err checkCat(const Op &op) {
  const Type &a = op.operand(0)->type, &b = op.operand(1)->type;
  int64_t axis = 0;
  if (auto e = needAxis(op, a.rank(), axis))
    return e;
  if (a.withShape(b.shape) != b || !agreeBesidesAxis(a.shape, b.shape, axis))
    return "operands " + a.str() + " and " + b.str() + " differ other than along axis " + std::to_string(axis);
  Shape s = a.shape;
  s[axis] += b.shape[axis];
  return resultIs(op, a.withShape(s));
}

static Err checkGather(const Op &op) {
  const Type &x = op.operand(0)->type, &idx = op.operand(1)->type;
  int64_t axis = 0;
  if (auto e = needAxis(op, x.rank(), axis))
    return e;
  if (idx.pointer || !isInteger(idx.dtype) || !agreeBesidesAxis(x.shape, idx.shape, axis))
    return "indices " + idx.str() + " must be integers of " + x.str() + "'s shape other than along axis " +
           std::to_string(axis);
  return resultIs(op, x.withShape(idx.shape));
}

static Err checkSplit(const Op &op) {
  const Type &in = op.operand(0)->type;
  if (in.rank() == 0 || in.shape.back() != 2)
    return "operand " + in.str() + " must have a trailing dimension of size 2";
  Shape s(in.shape.begin(), in.shape.end() - 1);
  Type half = in.withShape(s);
  for (unsigned i = 0; i < 2; ++i)
    if (op.result(i)->type != half)
      return "result " + std::to_string(i) + " has type " + typeStr(op.result(i)) +
             "; expected " + half.str();
  return std::nullopt;
}

static Err checkPtrAdd(const Op &op) {
  const Type &p = op.operand(0)->type, &off = op.operand(1)->type;
  if (!p.pointer)
    return "first operand must be pointers, got " + p.str();
  if (off.pointer || !isInteger(off.dtype))
    return "offset must be integers, got " + off.str();
  if (off.shape != p.shape)
    return "offset shape of " + off.str() + " differs from " + p.str();
  return resultIs(op, p);
}

static Err checkCmp(const Op &op) {
  std::string pred;
  if (auto e = needChoice(op, "pred", {"eq", "ne", "lt", "le", "gt", "ge"}, pred))
    return e;
  const Type &t = op.operand(0)->type;
  if (op.operand(1)->type != t)
    return "operand types differ: " + t.str() + " and " + typeStr(op.operand(1));
  return resultIs(op, Type::tile(DType::Bool, t.shape));
}

static Err checkSelect(const Op &op) {
  const Type &c = op.operand(0)->type, &a = op.operand(1)->type;
  if (op.operand(2)->type != a)
    return "operand types differ: " + a.str() + " and " + typeStr(op.operand(2));
  if (c != Type::tile(DType::Bool, a.shape))
    return "condition " + c.str() + " must be bool of shape of " + a.str();
  return resultIs(op, a);
}

static Err checkCast(const Op &op, bool bitcast) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  if (auto e = notPointer(op.operand(0), "operand"))
    return e;
  if (out.pointer)
    return "result must not be a pointer, got " + out.str();
  if (in.shape != out.shape)
    return "cannot convert " + in.str() + " to " + out.str() + " (shapes differ)";
  if (bitcast && dtypeBits(in.dtype) != dtypeBits(out.dtype))
    return "cannot bitcast " + in.str() + " to " + out.str() + " (widths differ)";
  return std::nullopt;
}

/// ptrs, then operands that must be pointee-typed values of the ptrs' shape, then an
/// optional bool mask.
static Err checkMemoryOperands(const Op &op, unsigned numValues, unsigned maskIndex) {
  const Type &p = op.operand(0)->type;
  if (!p.pointer)
    return "first operand must be pointers, got " + p.str();
  Type value = p.withDType(p.dtype);
  for (unsigned i = 1; i <= numValues && i < op.numOperands(); ++i)
    if (op.operand(i)->type != value)
      return "operand " + std::to_string(i) + " has type " + typeStr(op.operand(i)) +
             "; expected " + value.str();
  if (maskIndex < op.numOperands() && op.operand(maskIndex)->type != p.withDType(DType::Bool))
    return "mask has type " + typeStr(op.operand(maskIndex)) + "; expected " +
           p.withDType(DType::Bool).str();
  return std::nullopt;
}

/// The cache hints of a load or store: optional, and only from the known lists.
static Err checkCacheHints(const Op &op) {
  if (op.kind() == OpKind::Load)
    if (auto e = optionalChoice(op, "cache_modifier", {"ca", "cg", "cv"}))
      return e;
  return optionalChoice(op, "eviction_policy", {"evict_first", "evict_last", "evict_normal"});
}

static Err checkLoad(const Op &op) {
  const Type &p = op.operand(0)->type;
  // load(ptrs, mask, other): `other` is operand 2, after the mask.
  if (auto e = checkMemoryOperands(op, 0, 1))
    return e;
  if (auto e = checkCacheHints(op))
    return e;
  if (op.numOperands() == 3 && op.operand(2)->type != p.withDType(p.dtype))
    return "other has type " + typeStr(op.operand(2)) + "; expected " +
           p.withDType(p.dtype).str();
  return resultIs(op, p.withDType(p.dtype));
}

/// N operands, `ranks` (2..8, a cluster's size) times N results: rank r's copy of each.
static Err checkClusterExchange(const Op &op) {
  const int64_t *ranks = findAttr<int64_t>(op, "ranks");
  if (!ranks || *ranks < 2 || *ranks > kMaxClusterSize)
    return "needs an int attribute 'ranks' in 2.." + std::to_string(kMaxClusterSize);
  const unsigned n = op.numOperands();
  if (op.numResults() != n * *ranks)
    return "has " + std::to_string(n) + " operands and 'ranks' " + std::to_string(*ranks) + ", so " +
           std::to_string(n * *ranks) + " results, got " + std::to_string(op.numResults());
  for (unsigned i = 0; i < n; ++i) {
    if (op.operand(i)->type.pointer)
      return "operand " + std::to_string(i) + " is a pointer, which means nothing to another program";
    for (int64_t r = 0; r < *ranks; ++r)
      if (op.result(r * n + i)->type != op.operand(i)->type)
        return "result " + std::to_string(r * n + i) + " must have the type of operand " + std::to_string(i) + ", " +
               op.operand(i)->type.str();
  }
  return std::nullopt;
}

/// The memory ordering of an atomic and the threads it orders with: both optional.
static Err checkAtomicOrdering(const Op &op) {
  if (auto e = optionalChoice(op, "sem", {"acq_rel", "acquire", "release", "relaxed"}))
    return e;
  return optionalChoice(op, "scope", {"gpu", "cta", "sys"});
}

static Err checkAtomicRMW(const Op &op) {
  std::string kind;
  if (auto e = needChoice(op, "kind", {"add", "max", "min", "xchg", "and", "or", "xor"}, kind))
    return e;
  if (auto e = checkAtomicOrdering(op))
    return e;
  if (auto e = checkMemoryOperands(op, 1, 2))
    return e;
  const Type &p = op.operand(0)->type;
  // Bitwise updates are defined on integers only, as Triton defines them (bool memory
  // is updated with xchg).
  if ((kind == "and" || kind == "or" || kind == "xor") && !isInteger(p.dtype))
    return "with kind \"" + kind + "\" needs integer memory, got " + p.str();
  return resultIs(op, p.withDType(p.dtype));
}

static Err checkAtomicCas(const Op &op) {
  if (auto e = checkAtomicOrdering(op))
    return e;
  if (auto e = checkMemoryOperands(op, 2, 3))
    return e;
  const Type &p = op.operand(0)->type;
  return resultIs(op, p.withDType(p.dtype));
}

/// reduce / scan: axis, kind, and a region exactly for `custom`.
static Err checkReduceLike(const Op &op, bool scan) {
  const Type &in = op.operand(0)->type;
  if (auto e = notPointer(op.operand(0), "operand"))
    return e;
  int64_t axis = 0;
  if (auto e = needAxis(op, in.rank(), axis))
    return e;
  std::string kind;
  Err e = scan ? needChoice(op, "kind", {"sum", "prod", "custom"}, kind)
               : needChoice(op, "kind", {"sum", "prod", "max", "min", "custom"}, kind);
  if (e)
    return e;
  if ((kind == "custom") != (op.numRegions() == 1))
    return kind == "custom" ? std::string("with kind \"custom\" needs a combiner region")
                            : "with kind \"" + kind + "\" must not have a region";
  return resultIs(op, scan ? in : in.withShape(withoutAxis(in.shape, axis)));
}

static Err checkArgReduce(const Op &op) {
  const Type &in = op.operand(0)->type;
  if (auto e = notPointer(op.operand(0), "operand"))
    return e;
  int64_t axis = 0;
  if (auto e = needAxis(op, in.rank(), axis))
    return e;
  return resultIs(op, Type::tile(DType::I32, withoutAxis(in.shape, axis)));
}

static Err checkSort(const Op &op) {
  const Type &in = op.operand(0)->type;
  if (auto e = notPointer(op.operand(0), "operand"))
    return e;
  int64_t axis = 0;
  if (auto e = needAxis(op, in.rank(), axis))
    return e;
  if (auto e = needAttr(op, "descending", "a bool", findAttr<bool>(op, "descending")))
    return e;
  return resultIs(op, in);
}

static Err checkTopK(const Op &op, bool indices) {
  const Type &in = op.operand(0)->type;
  if (auto e = notPointer(op.operand(0), "operand"))
    return e;
  int64_t axis = 0, k = 0;
  if (auto e = needAxis(op, in.rank(), axis))
    return e;
  if (auto e = needInt(op, "k", k))
    return e;
  if (k < 1 || k > in.shape[axis])
    return "k = " + std::to_string(k) + " is not in 1.." + std::to_string(in.shape[axis]);
  Shape s = in.shape;
  s[axis] = k;
  return resultIs(op, indices ? Type::tile(DType::I32, s) : in.withShape(s));
}

static Err checkDot(const Op &op) {
  const Type &a = op.operand(0)->type, &b = op.operand(1)->type;
  if (a.pointer || b.pointer || a.rank() != 2 || b.rank() != 2)
    return "operands must be rank-2 tiles, got " + a.str() + " and " + b.str();
  if (a.shape[1] != b.shape[0])
    return "inner dimensions differ: " + a.str() + " x " + b.str();
  bool floats = isFloat(a.dtype) && isFloat(b.dtype);
  bool ints = isInteger(a.dtype) && isInteger(b.dtype);
  if (!floats && !ints)
    return "operands must be both floats or both integers, got " + a.str() + " and " + b.str();
  Shape mn = {a.shape[0], b.shape[1]};
  if (op.numOperands() == 3) {
    const Type &acc = op.operand(2)->type;
    if (acc.pointer || acc.shape != mn || (floats && !isFloat(acc.dtype)) ||
        (ints && acc.dtype != DType::I32))
      return "accumulator " + acc.str() + " must be " +
             (floats ? "a float tile" : std::string("an i32 tile")) + " of shape [" +
             std::to_string(mn[0]) + ", " + std::to_string(mn[1]) + "]";
    return resultIs(op, acc);
  }
  return resultIs(op, Type::tile(floats ? DType::F32 : DType::I32, mn));
}

static Err checkFor(const Op &op) {
  const Type &lb = op.operand(0)->type;
  if (!lb.isScalar() || lb.pointer || !isInteger(lb.dtype))
    return "lower bound must be an integer scalar, got " + lb.str();
  for (unsigned i = 1; i < 3; ++i)
    if (op.operand(i)->type != lb)
      return std::string(i == 1 ? "upper bound" : "step") + " has type " +
             typeStr(op.operand(i)) + "; expected " + lb.str() + " like the lower bound";
  if (op.numResults() != op.numOperands() - 3)
    return "has " + std::to_string(op.numOperands() - 3) + " carried values but " +
           std::to_string(op.numResults()) + " results";
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (op.result(i)->type != op.operand(3 + i)->type)
      return "result " + std::to_string(i) + " has type " + typeStr(op.result(i)) +
             " but its initial value has type " + typeStr(op.operand(3 + i));
  return std::nullopt;
}

static Err checkWhile(const Op &op) {
  if (op.numResults() != op.numOperands())
    return "has " + std::to_string(op.numOperands()) + " carried values but " +
           std::to_string(op.numResults()) + " results";
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (op.result(i)->type != op.operand(i)->type)
      return "result " + std::to_string(i) + " has type " + typeStr(op.result(i)) +
             " but its initial value has type " + typeStr(op.operand(i));
  return std::nullopt;
}

static Err boolScalar(const Op &op, const char *role) {
  if (op.operand(0)->type != Type::scalar(DType::Bool))
    return std::string(role) + " must be a bool scalar, got " + typeStr(op.operand(0));
  return std::nullopt;
}

//===--------------------------------------------------------------------===//
// Dispatch
//===--------------------------------------------------------------------===//

static Err checkKind(const Op &op) {
  switch (op.kind()) {
  case OpKind::Constant:
    return checkConstant(op);
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
    return checkGridQuery(op);
  case OpKind::Arange:
    return checkArange(op);
  case OpKind::BlockElements:
    return checkBlockElements(op);
  case OpKind::Splat:
    return checkSplat(op);
  case OpKind::Broadcast:
    return checkBroadcast(op);
  case OpKind::ExpandDims:
    return checkExpandDims(op);
  case OpKind::Reshape:
    return checkReshape(op);
  case OpKind::Permute:
    return checkPermute(op);
  case OpKind::Join:
    return checkJoin(op);
  case OpKind::Split:
    return checkSplit(op);
  case OpKind::Cat:
    return checkCat(op);
  case OpKind::Gather:
    return checkGather(op);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Rem:
  case OpKind::Minimum:
  case OpKind::Maximum:
  case OpKind::Neg:
  case OpKind::Abs:
    return checkElementwise(op, Elem::Numeric);
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Not:
    return checkElementwise(op, Elem::IntegerOrBool);
  case OpKind::Shl:
  case OpKind::Shr:
    return checkElementwise(op, Elem::Integer);
  case OpKind::Pow:
  case OpKind::Fma:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sigmoid:
  case OpKind::Floor:
  case OpKind::Ceil:
    return checkElementwise(op, Elem::Float);
  case OpKind::PtrAdd:
    return checkPtrAdd(op);
  case OpKind::Cmp:
    return checkCmp(op);
  case OpKind::Select:
    return checkSelect(op);
  case OpKind::Cast:
    return checkCast(op, false);
  case OpKind::Bitcast:
    return checkCast(op, true);
  case OpKind::Load:
    return checkLoad(op);
  case OpKind::Store:
    if (auto e = checkMemoryOperands(op, 1, 2))
      return e;
    return checkCacheHints(op);
  case OpKind::AtomicRMW:
    return checkAtomicRMW(op);
  case OpKind::AtomicCas:
    return checkAtomicCas(op);
  case OpKind::Fence:
    return std::nullopt;
  case OpKind::ClusterExchange:
    return checkClusterExchange(op);
  case OpKind::Reduce:
    return checkReduceLike(op, false);
  case OpKind::Scan:
    return checkReduceLike(op, true);
  case OpKind::Argmax:
  case OpKind::Argmin:
    return checkArgReduce(op);
  case OpKind::Sort:
    return checkSort(op);
  case OpKind::TopK:
    return checkTopK(op, false);
  case OpKind::ArgTopK:
    return checkTopK(op, true);
  case OpKind::Dot:
    return checkDot(op);
  case OpKind::For:
    return checkFor(op);
  case OpKind::If:
    return boolScalar(op, "condition");
  case OpKind::While:
    return checkWhile(op);
  case OpKind::Yield:
  case OpKind::Return:
    // What a yield must carry depends on its parent; the module verifier checks it.
    return std::nullopt;
  case OpKind::Condition:
    return boolScalar(op, "condition");
  case OpKind::Assert: {
    const Type &c = op.operand(0)->type;
    if (c.pointer || c.dtype != DType::Bool)
      return "condition must be bool, got " + c.str();
    return needAttr(op, "message", "a string", findAttr<std::string>(op, "message"));
  }
  case OpKind::Print:
    return needAttr(op, "label", "a string", findAttr<std::string>(op, "label"));
  case OpKind::Launch:
    for (unsigned i = 0; i < 3; ++i) {
      const Type &g = op.operand(i)->type;
      if (g.pointer || !g.isScalar() || g.dtype != DType::I32)
        return "grid size " + std::to_string(i) + " must be an i32 scalar, got " + g.str();
    }
    for (unsigned i = 3; i < op.numOperands(); ++i)
      if (!op.operand(i)->type.isScalar())
        return "argument " + std::to_string(i - 2) + " must be a scalar or a pointer, got " +
               op.operand(i)->type.str();
    return needAttr(op, "kernel", "a string", findAttr<std::string>(op, "kernel"));
  }
  return std::string("has an unknown kind");
}

std::optional<std::string> verifyOpLocal(const Op &op) {
  if (auto e = checkArity(op))
    return e;
  if (auto e = checkShapes(op))
    return e;
  return checkKind(op);
}

} // namespace kiln::ir
