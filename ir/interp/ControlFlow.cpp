//===- ControlFlow.cpp - for, if and while --------------------------------===//
//
// Structured control flow runs its regions in place: region arguments are slots like
// any other, bound before each iteration, and a yield's values move into the carried
// slots through scratch tiles (so `yield(b, a)` swapping two carried values reads the
// old ones). Scratch and slot storage keep their capacity between iterations, so a
// loop allocates only on its first iteration.
//
// Loop bounds are compared in 128-bit arithmetic: the induction variable never wraps,
// so `for i in range(0, INT_MAX, 2)` ends instead of running forever.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

namespace kiln::interp::detail {

__extension__ typedef __int128 Wide;

static Wide boundValue(const Type &t, Slot s) {
  return isSigned(t.dtype) ? Wide(s.i) : Wide(uint64_t(s.i));
}

/// Binds the values `term` yields to the slots dst[first ...].
static void carry(Machine &m, const PreparedOp &term, const std::vector<uint32_t> &dst,
                  size_t first, std::vector<TileData> &scratch) {
  for (size_t j = 0; j < scratch.size(); ++j)
    scratch[j] = m.env[term.operands[j]];
  for (size_t j = 0; j < scratch.size(); ++j)
    m.env[dst[first + j]].swap(scratch[j]);
}

void execFor(Machine &m, const PreparedOp &op) {
  const Type &boundT = m.inType(op, 0);
  const Wide lb = boundValue(boundT, m.in(op, 0)[0]);
  const Wide ub = boundValue(boundT, m.in(op, 1)[0]);
  const Wide step = boundValue(boundT, m.in(op, 2)[0]);
  if (step == 0)
    m.fail(op.op->loc(), DiagCode::LoopStepZero,
           "for loop step is 0 at run time in program " + m.programString() +
               "; the loop would never end");
  const PreparedBlock &body = op.regions[0];
  const size_t n = op.results.size();
  for (size_t j = 0; j < n; ++j)
    m.env[body.args[1 + j]] = m.in(op, 3 + j);
  std::vector<TileData> scratch(n);
  TileData &iv = m.env[body.args[0]];
  for (Wide i = lb; step > 0 ? i < ub : i > ub; i += step) {
    m.step(op.op->loc()); // an iteration counts even when the body is empty
    iv.assign(1, intSlot(static_cast<int64_t>(static_cast<uint64_t>(i))));
    const PreparedOp *term = m.run(body);
    carry(m, *term, body.args, 1, scratch);
  }
  for (size_t j = 0; j < n; ++j)
    m.env[op.results[j]] = m.env[body.args[1 + j]];
}

void execIf(Machine &m, const PreparedOp &op) {
  const PreparedBlock &region = op.regions[m.in(op, 0)[0].i ? 0 : 1];
  const PreparedOp *term = m.run(region);
  for (size_t j = 0; j < op.results.size(); ++j)
    m.env[op.results[j]] = m.env[term->operands[j]];
}

void execWhile(Machine &m, const PreparedOp &op) {
  const PreparedBlock &before = op.regions[0], &after = op.regions[1];
  const size_t n = op.results.size();
  for (size_t j = 0; j < n; ++j)
    m.env[before.args[j]] = m.in(op, j);
  std::vector<TileData> scratch(n);
  for (;;) {
    m.step(op.op->loc());
    const PreparedOp *cond = m.run(before);
    if (!m.env[cond->operands[0]][0].i)
      break;
    for (size_t j = 0; j < n; ++j)
      m.env[after.args[j]] = m.env[before.args[j]];
    const PreparedOp *term = m.run(after);
    carry(m, *term, before.args, 0, scratch);
  }
  for (size_t j = 0; j < n; ++j)
    m.env[op.results[j]] = m.env[before.args[j]];
}

} // namespace kiln::interp::detail
