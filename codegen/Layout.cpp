//===- Layout.cpp - The blocked layout of tiles over threads --------------===//
//
// See Layout.h. All functions are small integer arithmetic; the lowering asks for the
// same facts at compile time (to unroll registers) that the generated code computes at
// run time from the thread index.
//
//===----------------------------------------------------------------------===//
#include "codegen/Layout.h"

#include "codegen/AxisInfo.h"

#include "support/Diagnostics.h"

#include <algorithm>

namespace kiln::codegen {

Layout Layout::forElements(int64_t numElements, int64_t numThreads, int64_t maxVec) {
  kiln_assert(numElements >= 1 && numThreads >= 1, "layout of an empty tile or no threads");
  kiln_assert(maxVec >= 1 && (maxVec & (maxVec - 1)) == 0, "chunk limit not a power of two");
  Layout l;
  l.numElements = numElements;
  l.numThreads = numThreads;
  l.uniform = false;
  // As wide as possible while every thread still gets a chunk; a tile smaller than the
  // thread count uses vec 1 and leaves threads idle.
  int64_t vec = 1;
  while (vec * 2 <= maxVec && numElements % (vec * 2) == 0 &&
         numElements / (vec * 2) >= numThreads)
    vec *= 2;
  l.vec = vec;
  return l;
}

Layout Layout::uniformScalar(int64_t numThreads) {
  Layout l;
  l.numElements = 1;
  l.vec = 1;
  l.numThreads = numThreads;
  l.uniform = true;
  return l;
}

Layout Layout::forType(const Type &type, int64_t numThreads, int64_t maxVec) {
  if (type.isScalar())
    return uniformScalar(numThreads);
  return forElements(type.numElements(), numThreads, maxVec);
}

/// How many times an op is taken to run per run of its enclosing loop: trip counts are
/// rarely constants, and this only ranks accesses in a loop above those outside it.
static constexpr int64_t kAssumedTripCount = 8;

static int64_t loopDepth(const ir::Op &op) {
  int64_t depth = 0;
  for (const ir::Op *p = op.parentOp(); p; p = p->parentOp())
    if (p->kind() == ir::OpKind::For || p->kind() == ir::OpKind::While)
      ++depth;
  return depth;
}

int64_t chunkLimit(const ir::Kernel &kernel) {
  // Bytes moved by global tile accesses of 2-byte-or-narrower elements and of wider ones,
  // each access weighted by its loop depth.
  int64_t narrowBytes = 0, wideBytes = 0;
  const AxisAnalysis axis(kernel, AxisOptions{});
  ir::walk(*kernel.body, [&](ir::Op &op) {
    if (op.kind() != ir::OpKind::Load && op.kind() != ir::OpKind::Store)
      return;
    const Type &pt = op.operand(0)->type;
    if (pt.isScalar())
      return;
    // An access whose addresses are never consecutive along the last axis (a sparse
    // block's bitmap words, a gather) is made element by element at any chunk size.
    if (axis.info(op.operand(0)).contiguity.back() == 1 && pt.shape.back() > 1)
      return;
    int64_t bytes = pt.numElements() * dtypeBytes(pt.dtype); // of the pointees
    for (int64_t d = loopDepth(op); d > 0; --d)
      bytes *= kAssumedTripCount;
    (dtypeBytes(pt.dtype) <= 2 ? narrowBytes : wideBytes) += bytes;
  });
  return narrowBytes > wideBytes ? kWideChunkLimit : kDefaultChunkLimit;
}

int64_t Layout::numRounds() const {
  if (uniform)
    return 1;
  return (numChunks() + numThreads - 1) / numThreads;
}

bool Layout::roundAlwaysValid(int64_t round) const {
  return uniform || (round + 1) * numThreads <= numChunks();
}

int64_t Layout::chunkOf(int64_t thread, int64_t round) const {
  return uniform ? 0 : round * numThreads + thread;
}

int64_t Layout::elementOf(int64_t thread, int64_t reg) const {
  if (uniform)
    return 0;
  int64_t chunk = chunkOf(thread, reg / vec);
  if (chunk >= numChunks())
    return -1;
  return chunk * vec + reg % vec;
}

int64_t Layout::ownerOf(int64_t e) const { return uniform ? 0 : (e / vec) % numThreads; }

int64_t Layout::regOf(int64_t e) const {
  if (uniform)
    return 0;
  return (e / (vec * numThreads)) * vec + e % vec;
}

std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> unravelIndex(int64_t e, const Shape &shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = e % shape[d];
    e /= shape[d];
  }
  return index;
}

int64_t nextPowerOf2(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

int64_t prevPowerOf2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n)
    p *= 2;
  return p;
}

int64_t largestPow2Divisor(int64_t n, int64_t cap) {
  if (n == 0)
    return cap;
  uint64_t u = n < 0 ? 0 - uint64_t(n) : uint64_t(n);
  uint64_t p = u & (~u + 1);
  return std::min<int64_t>(cap, static_cast<int64_t>(std::min<uint64_t>(p, uint64_t(cap))));
}

LineSplit LineSplit::make(int64_t lines, int64_t length, int64_t numThreads) {
  kiln_assert(lines >= 1 && length >= 1 && numThreads >= 1, "empty line split");
  LineSplit s;
  s.lines = lines;
  s.length = length;
  if (lines >= numThreads) {
    s.group = 1;
  } else {
    // Enough threads for several per line: a power of two of them, never more than
    // the line has elements, so that every segment holds at least one element.
    s.group = std::min(prevPowerOf2(numThreads / lines), prevPowerOf2(length));
  }
  s.linesPerPass = numThreads / s.group;
  return s;
}

} // namespace kiln::codegen
