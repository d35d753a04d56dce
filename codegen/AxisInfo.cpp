//===- AxisInfo.cpp - Contiguity, divisibility and constancy of tiles -----===//
//
// One forward walk over the kernel in program order. Loop-carried values and results
// of ops the rules do not understand are conservative, so no fixpoint is needed. The
// rules follow Triton's AxisInfo: sums keep contiguity when one side is constant along
// the axis, products multiply divisibilities of values that are not runs, and an
// ordered comparison of a contiguous run against a constant keeps its result constant
// over blocks that cannot straddle the bound.
//
//===----------------------------------------------------------------------===//
#include "codegen/AxisInfo.h"

#include "codegen/Layout.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <numeric>

namespace kiln::codegen {

using ir::Op;
using ir::OpKind;

static int64_t capDiv(int64_t d) { return std::clamp<int64_t>(d, 1, kMaxDivisibility); }

static int64_t pow2Divisor(int64_t v) {
  if (v == 0)
    return kMaxDivisibility;
  uint64_t u = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  return capDiv(static_cast<int64_t>(u & (~u + 1)));
}

AxisInfo AxisInfo::unknown(unsigned rank) {
  unsigned n = std::max(rank, 1u);
  AxisInfo a;
  a.contiguity.assign(n, 1);
  a.divisibility.assign(n, 1);
  a.constancy.assign(n, 1);
  return a;
}

/// A value equal everywhere: `shape`'s extents as constancy.
static AxisInfo uniformInfo(const Shape &shape, int64_t divisibility,
                            std::optional<int64_t> constant) {
  AxisInfo a = AxisInfo::unknown(static_cast<unsigned>(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d)
    a.constancy[d] = shape[d];
  std::fill(a.divisibility.begin(), a.divisibility.end(), capDiv(divisibility));
  a.constant = constant;
  return a;
}

/// The divisibility every single element has (what an axis of extent 1 gets).
static int64_t elementDivisibility(const AxisInfo &a) {
  int64_t d = kMaxDivisibility;
  for (unsigned i = 0; i < a.rank(); ++i)
    d = std::min(d, a.contiguity[i] > 1 ? 1 : a.divisibility[i]);
  return d;
}

AxisAnalysis::AxisAnalysis(const ir::Kernel &kernel, AxisOptions options) : options_(options) {
  const auto &params = kernel.params();
  for (size_t i = 0; i < params.size(); ++i) {
    AxisInfo a = AxisInfo::unknown(0);
    if (params[i]->type.pointer)
      a.divisibility[0] = capDiv(options_.pointerAlignment);
    else if (i < options_.paramDivisibility.size() && options_.paramDivisibility[i] > 0 &&
             isInteger(params[i]->type.dtype))
      a.divisibility[0] = capDiv(largestPow2Divisor(options_.paramDivisibility[i], kMaxDivisibility));
    infos_[params[i].get()] = a;
  }
  visitBlock(*kernel.body);
}

const AxisInfo &AxisAnalysis::info(const ir::Value *value) const {
  auto it = infos_.find(value);
  if (it != infos_.end())
    return it->second;
  unsigned rank = value->type.rank();
  auto u = unknowns_.find(rank);
  if (u == unknowns_.end())
    u = unknowns_.emplace(rank, AxisInfo::unknown(rank)).first;
  return u->second;
}

void AxisAnalysis::setUnknown(const ir::Value *value) {
  infos_[value] = AxisInfo::unknown(value->type.rank());
}

void AxisAnalysis::visitBlock(const ir::Block &block) {
  for (const auto &op : block.ops())
    visitOp(*op);
}

void AxisAnalysis::visitOp(const Op &op) {
  // Region arguments: a for loop's induction variable steps from lb by `step`; every
  // other region argument (carried values, combiner operands) is unknown.
  for (const auto &region : op.regions())
    for (const auto &arg : region->arguments())
      setUnknown(arg.get());
  if (op.kind() == OpKind::For && op.region(0)->numArguments() > 0) {
    AxisInfo iv = AxisInfo::unknown(0);
    iv.divisibility[0] = std::gcd(info(op.operand(0)).divisibility[0],
                                  info(op.operand(2)).divisibility[0]);
    infos_[op.region(0)->argument(0)] = iv;
  }
  for (const auto &region : op.regions())
    visitBlock(*region);
  if (op.numResults() == 1) {
    infos_[op.result()] = compute(op);
  } else {
    for (const auto &r : op.results())
      setUnknown(r.get());
  }
}

/// Element-wise fold of two constants (only the cases the rules need).
static std::optional<int64_t> foldConstant(OpKind kind, std::optional<int64_t> a,
                                           std::optional<int64_t> b) {
  if (!a || !b)
    return std::nullopt;
  uint64_t x = uint64_t(*a), y = uint64_t(*b);
  if (kind == OpKind::Add)
    return static_cast<int64_t>(x + y);
  if (kind == OpKind::Sub)
    return static_cast<int64_t>(x - y);
  if (kind == OpKind::Mul)
    return static_cast<int64_t>(x * y);
  return std::nullopt;
}

AxisInfo AxisAnalysis::compute(const Op &op) const {
  const Type &rt = op.result()->type;
  const unsigned rank = rt.rank();
  const unsigned n = std::max(rank, 1u);
  auto in = [&](unsigned i) -> const AxisInfo & { return info(op.operand(i)); };
  AxisInfo r = AxisInfo::unknown(rank);
  const bool trackable = rt.pointer || isInteger(rt.dtype) || isBool(rt.dtype);

  switch (op.kind()) {
  case OpKind::Constant: {
    if (!trackable)
      return r;
    const ir::Attr &v = op.attrs().at("value");
    if (const int64_t *iv = std::get_if<int64_t>(&v))
      return uniformInfo(rt.shape, pow2Divisor(*iv), *iv);
    if (const bool *bv = std::get_if<bool>(&v))
      return uniformInfo(rt.shape, pow2Divisor(*bv), *bv ? 1 : 0);
    return uniformInfo(rt.shape, 1, std::nullopt);
  }
  case OpKind::Arange: {
    const int64_t start = op.intAttr("start");
    r.contiguity[0] = rt.shape[0];
    r.divisibility[0] = pow2Divisor(start);
    return r;
  }
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
    return r;
  case OpKind::Splat: {
    const AxisInfo &s = in(0);
    return uniformInfo(rt.shape, s.divisibility[0], s.constant);
  }
  case OpKind::Broadcast: {
    const AxisInfo &s = in(0);
    const Shape &srcShape = op.operand(0)->type.shape;
    r = s;
    for (unsigned d = 0; d < rank; ++d)
      if (srcShape[d] == 1 && rt.shape[d] != 1) {
        r.contiguity[d] = 1;
        r.constancy[d] = rt.shape[d];
      }
    return r;
  }
  case OpKind::ExpandDims: {
    const AxisInfo &s = in(0);
    const int64_t axis = op.intAttr("axis");
    const int64_t div = elementDivisibility(s);
    if (op.operand(0)->type.isScalar()) {
      r.divisibility.assign(n, s.divisibility[0]);
      r.constant = s.constant;
      return r;
    }
    r = s;
    r.contiguity.insert(r.contiguity.begin() + axis, 1);
    r.divisibility.insert(r.divisibility.begin() + axis, div);
    r.constancy.insert(r.constancy.begin() + axis, 1);
    return r;
  }
  case OpKind::Reshape: {
    // Only the element divisibility survives an arbitrary reshape; a reshape that keeps
    // the last extent keeps the last axis' facts too.
    const AxisInfo &s = in(0);
    const Type &st = op.operand(0)->type;
    const int64_t div = elementDivisibility(s);
    r.divisibility.assign(n, div);
    r.constant = s.constant;
    if (!st.isScalar() && rank > 0 && st.shape.back() == rt.shape.back()) {
      r.contiguity[n - 1] = s.contiguity.back();
      r.divisibility[n - 1] = s.divisibility.back();
      r.constancy[n - 1] = s.constancy.back();
    }
    return r;
  }
  case OpKind::Permute: {
    const AxisInfo &s = in(0);
    const std::vector<int64_t> &perm = op.intsAttr("perm");
    for (unsigned d = 0; d < rank; ++d) {
      r.contiguity[d] = s.contiguity[perm[d]];
      r.divisibility[d] = s.divisibility[perm[d]];
      r.constancy[d] = s.constancy[perm[d]];
    }
    r.constant = s.constant;
    return r;
  }
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::PtrAdd: {
    if (!trackable)
      return r;
    const AxisInfo &a = in(0), &b = in(1);
    // ptr_add advances by elements: the offsets' divisibility scales by the size.
    const int64_t scale = op.kind() == OpKind::PtrAdd ? dtypeBytes(rt.dtype) : 1;
    for (unsigned d = 0; d < n; ++d) {
      int64_t c = std::gcd(a.contiguity[d], b.constancy[d]);
      if (op.kind() != OpKind::Sub)
        c = std::max(c, std::gcd(a.constancy[d], b.contiguity[d]));
      r.contiguity[d] = c;
      r.divisibility[d] = std::gcd(a.divisibility[d], capDiv(b.divisibility[d] * scale));
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    if (op.kind() != OpKind::PtrAdd)
      r.constant = foldConstant(op.kind(), a.constant, b.constant);
    return r;
  }
  case OpKind::Mul: {
    if (!trackable)
      return r;
    const AxisInfo &a = in(0), &b = in(1);
    for (unsigned d = 0; d < n; ++d) {
      // A run [2^k, 2^k + 1, ...] is only divisible by 1 element-wise.
      int64_t da = a.contiguity[d] > 1 && b.constant != 1 ? 1 : a.divisibility[d];
      int64_t db = b.contiguity[d] > 1 && a.constant != 1 ? 1 : b.divisibility[d];
      r.divisibility[d] = capDiv(da * db);
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
      if (b.constant == 1)
        r.contiguity[d] = a.contiguity[d];
      else if (a.constant == 1)
        r.contiguity[d] = b.contiguity[d];
    }
    r.constant = foldConstant(op.kind(), a.constant, b.constant);
    return r;
  }
  case OpKind::Cmp: {
    const AxisInfo &a = in(0), &b = in(1);
    const std::string &pred = op.stringAttr("pred");
    for (unsigned d = 0; d < n; ++d) {
      int64_t c = std::gcd(a.constancy[d], b.constancy[d]);
      // a < b and a >= b with a a run and b constant change value only where a crosses
      // b, which cannot happen inside a block aligned to both divisibilities.
      if ((pred == "lt" || pred == "ge") && a.contiguity[d] > 1 && b.constancy[d] > 1)
        c = std::max(c, std::gcd(std::gcd(a.contiguity[d], b.constancy[d]),
                                 std::gcd(a.divisibility[d], b.divisibility[d])));
      if ((pred == "gt" || pred == "le") && b.contiguity[d] > 1 && a.constancy[d] > 1)
        c = std::max(c, std::gcd(std::gcd(b.contiguity[d], a.constancy[d]),
                                 std::gcd(a.divisibility[d], b.divisibility[d])));
      r.constancy[d] = c;
    }
    return r;
  }
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor: {
    const AxisInfo &a = in(0), &b = in(1);
    for (unsigned d = 0; d < n; ++d)
      r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    return r;
  }
  case OpKind::Not: {
    r.constancy = in(0).constancy;
    return r;
  }
  case OpKind::Select: {
    const AxisInfo &c = in(0), &a = in(1), &b = in(2);
    if (!trackable)
      return r;
    for (unsigned d = 0; d < n; ++d) {
      r.constancy[d] = std::gcd(c.constancy[d], std::gcd(a.constancy[d], b.constancy[d]));
      r.contiguity[d] = std::gcd(c.constancy[d], std::gcd(a.contiguity[d], b.contiguity[d]));
      r.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
    }
    return r;
  }
  case OpKind::Cast: {
    // Widening integer casts keep every fact; others keep constancy only.
    const Type &st = op.operand(0)->type;
    const AxisInfo &s = in(0);
    if (isInteger(st.dtype) && isInteger(rt.dtype) && dtypeBits(rt.dtype) >= dtypeBits(st.dtype) &&
        (isSigned(st.dtype) || !isSigned(rt.dtype) || dtypeBits(rt.dtype) > dtypeBits(st.dtype)))
      return s;
    r.constancy = s.constancy;
    // Narrowing keeps the value modulo 2^bits: a multiple of 2^k (k <= bits) stays one,
    // and a run aligned to it cannot straddle a multiple of 2^bits (a segment's i64
    // bounds cast back to i32).
    if (isInteger(st.dtype) && isInteger(rt.dtype)) {
      const int64_t cap = dtypeBits(rt.dtype) >= 62 ? kMaxDivisibility : int64_t(1) << dtypeBits(rt.dtype);
      for (unsigned d = 0; d < n; ++d) {
        r.divisibility[d] = std::min(s.divisibility[d], cap);
        r.contiguity[d] = std::min(s.contiguity[d], r.divisibility[d]);
      }
    }
    return r;
  }
  case OpKind::Div:
  case OpKind::Rem:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Minimum:
  case OpKind::Maximum:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Bitcast: {
    // Constant along an axis in, constant out.
    for (unsigned i = 0; i < op.numOperands(); ++i)
      for (unsigned d = 0; d < n && i == 0; ++d)
        r.constancy[d] = in(0).constancy[d];
    for (unsigned i = 1; i < op.numOperands(); ++i)
      for (unsigned d = 0; d < n; ++d)
        r.constancy[d] = std::gcd(r.constancy[d], in(i).constancy[d]);
    return r;
  }
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
  case OpKind::BlockElements:
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
  case OpKind::Load:
  case OpKind::Store:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCas:
  case OpKind::Fence:
  case OpKind::ClusterExchange:
  case OpKind::Reduce:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Scan:
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK:
  case OpKind::Dot:
  case OpKind::For:
  case OpKind::If:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
    return r;
  }
  return r;
}

int64_t accessVectorWidth(const AxisInfo &ptrs, const Shape &shape, int64_t chunk,
                          int64_t elemBytes) {
  if (shape.empty())
    return 1;
  const int64_t last = shape.back();
  const unsigned d = ptrs.rank() - 1;
  int64_t w = 1;
  while (true) {
    int64_t next = w * 2;
    if (chunk % next != 0 || ptrs.contiguity[d] % next != 0 || last % next != 0)
      break;
    if (next * elemBytes > 16 || ptrs.divisibility[d] < next * elemBytes)
      break;
    w = next;
  }
  return w;
}

} // namespace kiln::codegen
