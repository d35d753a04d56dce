//===- Dot.cpp - Matrix multiplication of tiles ---------------------------===//
//
// dot(a [M,K], b [K,N] [, acc [M,N]]). Float inputs: each product is taken of the
// inputs converted to f32 and rounded to f32, and the sum runs k = 0..K-1 in f32,
// starting from acc (or 0); the sum is rounded to the result dtype at the end. (f64
// inputs use double throughout instead, as f64 tensor-core MMA does.) Integer inputs
// accumulate modulo 2^32 into the i32 result. Products and sums are separate roundings:
// the library is built without floating-point contraction so no fma sneaks in.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

namespace kiln::interp::detail {

template <typename T>
static void floatDot(const TileData &a, const TileData &b, const TileData *acc, DType outT,
                     int64_t M, int64_t N, int64_t K, TileData &out) {
  // b transposed, so that the k loop reads both operands contiguously.
  std::vector<T> av(a.size()), bt(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    av[i] = static_cast<T>(a[i].f);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      bt[n * K + k] = static_cast<T>(b[k * N + n].f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      T s = acc ? static_cast<T>((*acc)[m * N + n].f) : T(0);
      const T *ar = &av[m * K], *bc = &bt[n * K];
      for (int64_t k = 0; k < K; ++k) {
        T p = ar[k] * bc[k];
        s = s + p;
      }
      out[m * N + n].f = roundToFloatDType(outT, double(s));
    }
}

void execDot(Machine &m, const PreparedOp &op) {
  const Type &aT = m.inType(op, 0), &bT = m.inType(op, 1);
  const int64_t M = aT.shape[0], K = aT.shape[1], N = bT.shape[1];
  const TileData &a = m.in(op, 0), &b = m.in(op, 1);
  const TileData *acc = op.operands.size() > 2 ? &m.in(op, 2) : nullptr;
  const DType outT = m.outType(op).dtype;
  TileData &out = m.out(op);
  if (isFloat(aT.dtype)) {
    if (aT.dtype == DType::F64 || bT.dtype == DType::F64)
      floatDot<double>(a, b, acc, outT, M, N, K, out);
    else
      floatDot<float>(a, b, acc, outT, M, N, K, out);
    return;
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      uint64_t s = acc ? uint64_t((*acc)[i * N + j].i) : 0;
      for (int64_t k = 0; k < K; ++k)
        s += uint64_t(a[i * K + k].i) * uint64_t(b[k * N + j].i);
      out[i * N + j].i = wrapToIntDType(outT, static_cast<int64_t>(s));
    }
}

} // namespace kiln::interp::detail
