//===- Reductions.cpp - reduce, scan, argmax and argmin -------------------===//
//
// A tile is seen as [outer, len, inner] around the reduced axis. Each of the
// outer * inner lines is combined strictly from index 0 upwards, one rounding per
// step in the element dtype; this fixed order is what makes the interpreter a
// deterministic oracle (GPU backends may reassociate and are compared with a
// tolerance).
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

namespace kiln::interp::detail {

/// acc (op) x for the built-in kinds and for a custom combiner region.
static Slot combineOne(Machine &m, const PreparedOp &op, ReduceKind kind, DType t, Repr r, Slot acc,
                       Slot x) {
  switch (kind) {
  case ReduceKind::Sum:
    return addSlots(t, acc, x);
  case ReduceKind::Prod:
    return mulSlots(t, acc, x);
  case ReduceKind::Max:
    return extremumSlots(r, true, acc, x);
  case ReduceKind::Min:
    return extremumSlots(r, false, acc, x);
  case ReduceKind::Custom:
    return m.combine(op.regions[0], acc, x);
  }
  return acc;
}

void execReduce(Machine &m, const PreparedOp &op) {
  const Type &inT = m.inType(op, 0);
  const DType t = inT.dtype;
  const Repr r = reprOf(inT);
  const ReduceKind kind = static_cast<ReduceKind>(op.sub);
  const AxisView v(inT.shape, op.axis);
  const TileData &x = m.in(op, 0);
  TileData &out = m.out(op);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      Slot acc = x[v.at(o, 0, i)];
      for (int64_t l = 1; l < v.len; ++l)
        acc = combineOne(m, op, kind, t, r, acc, x[v.at(o, l, i)]);
      out[o * v.inner + i] = acc;
    }
}

void execScan(Machine &m, const PreparedOp &op) {
  const Type &inT = m.inType(op, 0);
  const DType t = inT.dtype;
  const Repr r = reprOf(inT);
  const ReduceKind kind = static_cast<ReduceKind>(op.sub);
  const AxisView v(inT.shape, op.axis);
  const TileData &x = m.in(op, 0);
  TileData &out = m.out(op);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      Slot acc = x[v.at(o, 0, i)];
      out[v.at(o, 0, i)] = acc;
      for (int64_t l = 1; l < v.len; ++l) {
        acc = combineOne(m, op, kind, t, r, acc, x[v.at(o, l, i)]);
        out[v.at(o, l, i)] = acc;
      }
    }
}

void execArgReduce(Machine &m, const PreparedOp &op, bool wantMax) {
  const Type &inT = m.inType(op, 0);
  const Repr r = reprOf(inT);
  const AxisView v(inT.shape, op.axis);
  const TileData &x = m.in(op, 0);
  TileData &out = m.out(op);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      // NaNs are skipped; a line of NaNs only yields index 0. A strict comparison
      // keeps the lowest index among equal values.
      int64_t best = -1;
      Slot bestValue{};
      for (int64_t l = 0; l < v.len; ++l) {
        Slot e = x[v.at(o, l, i)];
        if (r == Repr::Float && std::isnan(e.f))
          continue;
        if (best < 0 || (wantMax ? slotLess(r, bestValue, e) : slotLess(r, e, bestValue))) {
          best = l;
          bestValue = e;
        }
      }
      out[o * v.inner + i].i = best < 0 ? 0 : best;
    }
}

} // namespace kiln::interp::detail
