//===- Shape.cpp - arange and the shape ops of the interpreter ------------===//
//
// Shape ops move elements without changing them. Broadcast and permute are both a
// strided gather (a stride of 0 repeats an element), so they share one loop that
// walks the result in row-major order and copies its innermost rows in one go.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Machine.h"

#include <algorithm>

namespace kiln::interp::detail {

/// Row-major strides (in elements) of `shape`.
static std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// out (of shape `outShape`, row-major) gets src[sum over d of index_d * srcStrides[d]].
static void gather(const Slot *src, const Shape &outShape, const std::vector<int64_t> &srcStrides,
                   Slot *out) {
  const size_t rank = outShape.size();
  if (rank == 0) {
    out[0] = src[0];
    return;
  }
  const int64_t inner = outShape.back(), innerStride = srcStrides.back();
  const int64_t total = numElements(outShape);
  std::vector<int64_t> index(rank, 0);
  int64_t base = 0; // source offset of `index` (its last component is always 0)
  for (int64_t j = 0; j < total; j += inner) {
    for (int64_t k = 0; k < inner; ++k)
      out[j + k] = src[base + k * innerStride];
    // Advance the outer dimensions like an odometer.
    for (size_t d = rank - 1; d-- > 0;) {
      base += srcStrides[d];
      if (++index[d] < outShape[d])
        break;
      base -= srcStrides[d] * outShape[d];
      index[d] = 0;
    }
  }
}

void execArange(Machine &m, const PreparedOp &op) {
  TileData &out = m.out(op);
  for (size_t i = 0; i < out.size(); ++i)
    out[i].i = op.axis + static_cast<int64_t>(i);
}

void execSplat(Machine &m, const PreparedOp &op) {
  const Slot v = m.in(op, 0)[0];
  TileData &out = m.out(op);
  std::fill(out.begin(), out.end(), v);
}

void execBroadcast(Machine &m, const PreparedOp &op) {
  const Shape &inShape = m.inType(op, 0).shape;
  std::vector<int64_t> strides = rowMajorStrides(inShape);
  for (size_t d = 0; d < inShape.size(); ++d)
    if (inShape[d] == 1)
      strides[d] = 0;
  gather(m.in(op, 0).data(), m.outType(op).shape, strides, m.out(op).data());
}

void execSameOrder(Machine &m, const PreparedOp &op) {
  const TileData &in = m.in(op, 0);
  TileData &out = m.out(op);
  std::copy(in.begin(), in.end(), out.begin());
}

void execPermute(Machine &m, const PreparedOp &op) {
  const std::vector<int64_t> &perm = op.op->intsAttr("perm");
  const std::vector<int64_t> inStrides = rowMajorStrides(m.inType(op, 0).shape);
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    strides[i] = inStrides[perm[i]];
  gather(m.in(op, 0).data(), m.outType(op).shape, strides, m.out(op).data());
}

void execJoin(Machine &m, const PreparedOp &op) {
  const TileData &a = m.in(op, 0), &b = m.in(op, 1);
  TileData &out = m.out(op);
  for (size_t i = 0; i < a.size(); ++i) {
    out[2 * i] = a[i];
    out[2 * i + 1] = b[i];
  }
}

/// A tile seen as [outer, n, inner] around attr `axis`: the products of the dimensions
/// before and after it.
static std::pair<int64_t, int64_t> aroundAxis(const Shape &shape, int64_t axis) {
  const int64_t inner = rowMajorStrides(shape)[axis], line = shape[axis] * inner;
  return {line ? numElements(shape) / line : 0, inner};
}

void execCat(Machine &m, const PreparedOp &op) {
  const int64_t axis = op.op->intAttr("axis");
  const TileData &a = m.in(op, 0), &b = m.in(op, 1);
  const int64_t na = m.inType(op, 0).shape[axis], nb = m.inType(op, 1).shape[axis];
  auto [outer, inner] = aroundAxis(m.inType(op, 0).shape, axis);
  TileData &out = m.out(op);
  size_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < na * inner; ++i)
      out[k++] = a[o * na * inner + i];
    for (int64_t i = 0; i < nb * inner; ++i)
      out[k++] = b[o * nb * inner + i];
  }
}

void execGather(Machine &m, const PreparedOp &op) {
  const int64_t axis = op.op->intAttr("axis");
  const TileData &x = m.in(op, 0), &idx = m.in(op, 1);
  const int64_t n = m.inType(op, 0).shape[axis], len = m.outType(op).shape[axis];
  auto [outer, inner] = aroundAxis(m.outType(op).shape, axis);
  const bool unsignedIdx = !isSigned(m.inType(op, 1).dtype);
  TileData &out = m.out(op);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = (o * len + j) * inner + i;
        const int64_t at = idx[e].i;
        const bool inRange = unsignedIdx ? static_cast<uint64_t>(at) < static_cast<uint64_t>(n) : at >= 0 && at < n;
        out[e] = inRange ? x[(o * n + at) * inner + i] : intSlot(0);
      }
}

void execSplit(Machine &m, const PreparedOp &op) {
  const TileData &in = m.in(op, 0);
  TileData &lo = m.out(op, 0);
  TileData &hi = m.out(op, 1);
  for (size_t i = 0; i < lo.size(); ++i) {
    lo[i] = in[2 * i];
    hi[i] = in[2 * i + 1];
  }
}

} // namespace kiln::interp::detail
