//===- GraphPlan.cpp - One call's launches from a graph bundle's program ---===//
//
// Evaluates the scalar program of a graph bundle (GraphBundle.h) on a call's arguments,
// value by value, in the interpreter's arithmetic (support/ScalarArithmetic.h): no
// value traps (x / 0 = 0), so a value computed for a launch whose `if` is false is
// harmless and the program needs no branches. A pointer value is the graph parameter
// whose buffer it views and an offset in elements. Then each launch whose guard holds
// gets its grid and arguments, and the dependencies between the launches that run:
// one that holds only when two parameters are one buffer counts when the caller's
// buffer ids say they are.
//
//===----------------------------------------------------------------------===//
#include "runtime/GraphBundle.h"

#include "runtime/DTypes.h"
#include "support/ScalarArithmetic.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::rt {

namespace {

/// One value: integers and bools in `i` (as the interpreter holds them: wrapped to their
/// dtype, unsigned ones zero-extended), floats in `f`, a pointer as (param, i).
struct Slot {
  int64_t i = 0;
  double f = 0;
  uint32_t param = 0;
};

bool less(const GraphValue &t, const Slot &a, const Slot &b) {
  if (dtypeIsFloat(t.dtype))
    return a.f < b.f;
  return dtypeIsSigned(t.dtype) ? a.i < b.i : uint64_t(a.i) < uint64_t(b.i);
}
bool equal(const GraphValue &t, const Slot &a, const Slot &b) {
  return dtypeIsFloat(t.dtype) ? a.f == b.f : a.i == b.i;
}

Slot evaluate(const GraphValue &v, const std::vector<GraphValue> &values, const std::vector<Slot> &slots,
              std::span<const GraphArgValue> args) {
  auto in = [&](size_t k) -> const Slot & { return slots[v.operands[k]]; };
  auto typeOf = [&](size_t k) -> const GraphValue & { return values[v.operands[k]]; };
  const DType t = v.dtype;
  const bool isF = dtypeIsFloat(t), sgn = dtypeIsSigned(t);
  const int64_t bits = int64_t(dtypeSizeBytes(t)) * 8;
  Slot r;
  auto f2 = [&](auto op) {
    r.f = floatApply2(t, in(0).f, in(1).f, op);
    return r;
  };
  auto i2 = [&](int64_t value) {
    r.i = wrapToIntDType(t, value);
    return r;
  };
  switch (v.op) {
  case GraphOp::Param: {
    const GraphArgValue &a = args[v.imm];
    if (v.pointer)
      r.param = static_cast<uint32_t>(v.imm);
    else if (isF)
      r.f = roundToFloatDType(t, a.f);
    else
      r.i = wrapToIntDType(t, a.i);
    return r;
  }
  case GraphOp::Const:
    if (isF)
      r.f = roundToFloatDType(t, v.fimm);
    else
      r.i = wrapToIntDType(t, v.imm);
    return r;
  case GraphOp::Add:
    return isF ? f2([](auto x, auto y) { return x + y; }) : (r.i = intAdd(t, in(0).i, in(1).i), r);
  case GraphOp::Sub:
    return isF ? f2([](auto x, auto y) { return x - y; }) : (r.i = intSub(t, in(0).i, in(1).i), r);
  case GraphOp::Mul:
    return isF ? f2([](auto x, auto y) { return x * y; }) : (r.i = intMul(t, in(0).i, in(1).i), r);
  case GraphOp::Div:
    return isF ? f2([](auto x, auto y) { return x / y; }) : (r.i = intDiv(t, sgn, in(0).i, in(1).i), r);
  case GraphOp::Rem:
    return isF ? f2([](auto x, auto y) { return std::fmod(x, y); }) : (r.i = intRem(t, sgn, in(0).i, in(1).i), r);
  case GraphOp::Min:
  case GraphOp::Max: {
    const bool wantMax = v.op == GraphOp::Max;
    if (isF)
      return wantMax ? f2([](auto x, auto y) { return maxNum(x, y); }) : f2([](auto x, auto y) { return minNum(x, y); });
    const bool firstWins = wantMax ? less(v, in(1), in(0)) : less(v, in(0), in(1));
    return firstWins || equal(v, in(0), in(1)) ? in(0) : in(1);
  }
  case GraphOp::And:
    return i2(in(0).i & in(1).i);
  case GraphOp::Or:
    return i2(in(0).i | in(1).i);
  case GraphOp::Xor:
    return i2(in(0).i ^ in(1).i);
  case GraphOp::Shl: {
    const int64_t y = in(1).i;
    const bool inRange = sgn ? (y >= 0 && y < bits) : uint64_t(y) < uint64_t(bits);
    return i2(inRange ? static_cast<int64_t>(uint64_t(in(0).i) << y) : 0);
  }
  case GraphOp::Shr: {
    const int64_t x = in(0).i, y = in(1).i;
    if (sgn)
      r.i = y >= 0 && y < bits ? x >> y : (x < 0 ? -1 : 0);
    else
      r.i = uint64_t(y) < uint64_t(bits) ? static_cast<int64_t>(uint64_t(x) >> y) : 0;
    return r;
  }
  case GraphOp::Neg:
    if (isF) {
      r.f = floatApply1(t, in(0).f, [](auto x) { return -x; });
      return r;
    }
    return i2(intSub(t, 0, in(0).i));
  case GraphOp::Not:
    return t == DType::Bool ? (r.i = in(0).i == 0, r) : i2(~in(0).i);
  case GraphOp::Cmp: {
    const GraphValue &ot = typeOf(0);
    const Slot &a = in(0), &b = in(1);
    const bool isNaN = dtypeIsFloat(ot.dtype) && (std::isnan(a.f) || std::isnan(b.f));
    bool result = false;
    switch (static_cast<GraphPredicate>(v.imm)) {
    case GraphPredicate::EQ: result = !isNaN && equal(ot, a, b); break;
    case GraphPredicate::NE: result = isNaN || !equal(ot, a, b); break;
    case GraphPredicate::LT: result = less(ot, a, b); break;
    case GraphPredicate::LE: result = !isNaN && !less(ot, b, a); break;
    case GraphPredicate::GT: result = less(ot, b, a); break;
    case GraphPredicate::GE: result = !isNaN && !less(ot, a, b); break;
    }
    r.i = result;
    return r;
  }
  case GraphOp::Select:
    return in(0).i ? in(1) : in(2);
  case GraphOp::Cast: {
    const DType from = typeOf(0).dtype;
    if (dtypeIsFloat(from))
      return isF ? (r.f = roundToFloatDType(t, in(0).f), r) : (r.i = floatToIntDType(t, in(0).f), r);
    if (isF) {
      r.f = intToFloatDType(t, in(0).i, !dtypeIsSigned(from));
      return r;
    }
    return i2(in(0).i);
  }
  case GraphOp::PtrAdd:
    r.param = in(0).param;
    r.i = static_cast<int64_t>(uint64_t(in(0).i) + uint64_t(in(1).i));
    return r;
  }
  return r;
}

} // namespace

std::optional<std::vector<PlannedGraphLaunch>> planGraph(const GraphBundle &g, std::span<const GraphArgValue> args,
                                                         GraphPlanError &error) {
  if (args.size() != g.params.size()) {
    error.message = "graph '" + g.name + "' takes " + std::to_string(g.params.size()) + " argument" +
            (g.params.size() == 1 ? "" : "s") + ", " + std::to_string(args.size()) + " given";
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const BundleParam &p = g.params[i];
    const GraphArgValue::Kind want = p.pointer                ? GraphArgValue::Kind::Buffer
                                     : dtypeIsFloat(p.dtype) ? GraphArgValue::Kind::Float
                                                             : GraphArgValue::Kind::Int;
    if (args[i].kind != want) {
      error.message = "argument " + std::to_string(i) + " of graph '" + g.name + "' (" + p.name + ": " +
              paramTypeSpelling(p.dtype, p.pointer) + ") needs " +
              (want == GraphArgValue::Kind::Buffer  ? "a buffer"
               : want == GraphArgValue::Kind::Float ? "a float"
                                                    : "an integer");
      return std::nullopt;
    }
  }

  std::vector<Slot> slots;
  slots.reserve(g.values.size());
  for (const GraphValue &v : g.values)
    slots.push_back(evaluate(v, g.values, slots, args));

  std::vector<PlannedGraphLaunch> planned;
  std::vector<int64_t> plannedIndex(g.launches.size(), -1);
  for (uint32_t s = 0; s < g.launches.size(); ++s) {
    const GraphLaunchStep &l = g.launches[s];
    if (l.guard && slots[*l.guard].i == 0)
      continue;
    PlannedGraphLaunch p;
    p.step = s;
    for (unsigned d = 0; d < 3; ++d) {
      p.grid[d] = slots[l.grid[d]].i;
      // An unsigned u64 above INT64_MAX reads as negative here: out of range either way.
    }
    for (unsigned d = 0; d < 3; ++d)
      if (p.grid[d] < 1 || p.grid[d] > std::numeric_limits<int32_t>::max()) {
        const Bundle &k = g.kernels[l.kernel];
        error.kind = GraphPlanError::Kind::Grid;
        error.step = s;
        error.message = "graph '" + g.name + "' launches kernel '" + k.kernelName + "'" +
                (l.where.empty() ? "" : " at " + l.where) + " on grid (" + std::to_string(p.grid[0]) + ", " +
                std::to_string(p.grid[1]) + ", " + std::to_string(p.grid[2]) +
                "); every dimension must be between 1 and 2147483647";
        return std::nullopt;
      }
    for (uint32_t a : l.args) {
      const GraphValue &v = g.values[a];
      GraphArgValue arg;
      if (v.pointer) {
        arg.kind = GraphArgValue::Kind::Buffer;
        arg.param = slots[a].param;
        arg.i = slots[a].i;
        arg.bufferId = args[arg.param].bufferId;
      } else if (dtypeIsFloat(v.dtype)) {
        arg.kind = GraphArgValue::Kind::Float;
        arg.f = slots[a].f;
      } else {
        arg.i = slots[a].i;
      }
      p.args.push_back(arg);
    }
    plannedIndex[s] = static_cast<int64_t>(planned.size());
    planned.push_back(std::move(p));
  }
  for (const GraphEdge &e : g.edges) {
    const int64_t from = plannedIndex[e.from], to = plannedIndex[e.to];
    if (from < 0 || to < 0)
      continue;
    if (e.aliasParams && args[(*e.aliasParams)[0]].bufferId != args[(*e.aliasParams)[1]].bufferId)
      continue;
    std::vector<uint32_t> &after = planned[to].after;
    if (std::find(after.begin(), after.end(), uint32_t(from)) == after.end())
      after.push_back(static_cast<uint32_t>(from));
  }
  return planned;
}

} // namespace kiln::rt
