//===- Sorting.cpp - sort, topk and argtopk -------------------------------===//
//
// Each line along the axis is ordered with a stable sort of its indices, so equal
// elements keep their original order (which gives topk's "lower index first" on ties).
// NaNs go last in both directions: they are neither large nor small.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

#include <algorithm>
#include <numeric>

namespace kiln::interp::detail {

/// Stable-sorts `order` (indices 0..len-1 of one line) by the line's values.
static void sortLine(std::vector<int64_t> &order, const TileData &x, int64_t base, int64_t stride,
                     Repr r, bool descending) {
  std::iota(order.begin(), order.end(), 0);
  auto at = [&](int64_t l) { return x[base + l * stride]; };
  auto before = [&](int64_t a, int64_t b) {
    Slot va = at(a), vb = at(b);
    if (r == Repr::Float) {
      bool na = std::isnan(va.f), nb = std::isnan(vb.f);
      if (na || nb)
        return !na && nb; // a NaN sorts after every number
    }
    return descending ? slotLess(r, vb, va) : slotLess(r, va, vb);
  };
  std::stable_sort(order.begin(), order.end(), before);
}

void execSort(Machine &m, const PreparedOp &op) {
  const Type &inT = m.inType(op, 0);
  const Repr r = reprOf(inT);
  const AxisView v(inT.shape, op.axis);
  const TileData &x = m.in(op, 0);
  TileData &out = m.out(op);
  std::vector<int64_t> order(v.len);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = v.at(o, 0, i);
      sortLine(order, x, base, v.inner, r, op.flag);
      for (int64_t l = 0; l < v.len; ++l)
        out[base + l * v.inner] = x[base + order[l] * v.inner];
    }
}

void execTopK(Machine &m, const PreparedOp &op, bool indices) {
  const Type &inT = m.inType(op, 0);
  const Repr r = reprOf(inT);
  const AxisView v(inT.shape, op.axis);
  const int64_t k = op.k;
  const TileData &x = m.in(op, 0);
  TileData &out = m.out(op);
  std::vector<int64_t> order(v.len);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = v.at(o, 0, i);
      sortLine(order, x, base, v.inner, r, /*descending=*/true);
      for (int64_t j = 0; j < k; ++j) {
        Slot &dst = out[(o * k + j) * v.inner + i];
        if (indices)
          dst.i = order[j];
        else
          dst = x[base + order[j] * v.inner];
      }
    }
}

} // namespace kiln::interp::detail
