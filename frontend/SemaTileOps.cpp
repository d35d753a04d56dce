//===- SemaTileOps.cpp - Tile rearrangements for builtins made of ops -----===//
#include "frontend/SemaTileOps.h"

namespace kiln::sema::tile {

using ir::OpKind;

Val indexAlong(Sema &s, const Shape &shape, int64_t axis, Location loc) {
  const int64_t n = shape[axis];
  Val iota = s.emitValue(OpKind::Arange, loc, {}, Type::tile(DType::I32, {n}),
                         {{"start", ir::Attr(int64_t(0))}, {"end", ir::Attr(n)}});
  // [n] -> [1, .., n, .., 1] with n at `axis`, then broadcast.
  Shape placed(shape.size(), 1);
  placed[axis] = n;
  if (placed.size() > 1)
    iota = reshape(s, iota, placed, loc);
  return s.broadcastTo(iota, shape, loc);
}

Val gatherAlong(Sema &s, Val x, Val idx, int64_t axis, Location loc) {
  Type result = x.type.withShape(idx.type.shape);
  return s.emitValue(OpKind::Gather, loc, {s.materialize(x), s.materialize(idx)}, result, {{"axis", ir::Attr(axis)}});
}

Val select(Sema &s, Val cond, Val x, Val y, Location loc) {
  Type result = x.type;
  return s.emitValue(OpKind::Select, loc, {s.materialize(cond), s.materialize(x), s.materialize(y)}, result);
}

Val flip(Sema &s, const Val &x, int64_t axis, Location loc) {
  const int64_t n = x.type.shape[axis];
  if (n == 1)
    return x;
  Val last = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(n - 1), true, loc);
  Val reversed = s.binaryOp(ast::BinaryOp::Sub, last, indexAlong(s, x.type.shape, axis, loc), loc);
  return gatherAlong(s, x, reversed, axis, loc);
}

Val permute(Sema &s, const Val &x, const std::vector<int64_t> &perm, Location loc) {
  bool identity = true;
  Shape out;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity &= perm[i] == static_cast<int64_t>(i);
    out.push_back(x.type.shape[perm[i]]);
  }
  if (identity)
    return x;
  Val v = x;
  return s.emitValue(OpKind::Permute, loc, {s.materialize(v)}, x.type.withShape(out), {{"perm", ir::Attr(perm)}});
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> axisLast(unsigned rank, int64_t axis) {
  std::vector<int64_t> forward, inverse(rank);
  for (int64_t i = 0; i < static_cast<int64_t>(rank); ++i)
    if (i != axis)
      forward.push_back(i);
  forward.push_back(axis);
  for (size_t i = 0; i < forward.size(); ++i)
    inverse[forward[i]] = static_cast<int64_t>(i);
  return {forward, inverse};
}

Val reshape(Sema &s, const Val &x, const Shape &shape, Location loc) {
  if (x.type.shape == shape)
    return x;
  Val v = x;
  return s.emitValue(OpKind::Reshape, loc, {s.materialize(v)}, x.type.withShape(shape));
}

std::pair<Val, Val> pairsAlongLast(Sema &s, const Val &x, Location loc) {
  Shape shape = x.type.shape;
  kiln_assert(!shape.empty() && shape.back() % 2 == 0, "pairsAlongLast: the last axis must have even length");
  shape.back() /= 2;
  Shape pairs = shape;
  pairs.push_back(2);
  Val v = reshape(s, x, pairs, loc);
  ir::Op *op = s.emit(OpKind::Split, loc, {s.materialize(v)}, {x.type.withShape(shape), x.type.withShape(shape)});
  return {Val::ofIR(op->result(0), loc), Val::ofIR(op->result(1), loc)};
}

Val dropLast(Sema &s, const Val &x, Location loc) {
  kiln_assert(!x.type.shape.empty() && x.type.shape.back() == 1, "dropLast: the last axis must have length 1");
  if (x.type.rank() > 1)
    return reshape(s, x, Shape(x.type.shape.begin(), x.type.shape.end() - 1), loc);
  // A single element to a scalar: a reduction of one element is that element (bool
  // goes through i32: a reduction of bool values is not lowered on every target).
  Val v = isBool(x.type.dtype) ? s.castTo(x, DType::I32, loc) : x;
  Val one = s.emitValue(OpKind::Reduce, loc, {s.materialize(v)}, Type::scalar(v.type.dtype),
                        {{"axis", ir::Attr(int64_t(0))}, {"kind", ir::Attr(std::string("max"))}});
  return isBool(x.type.dtype) ? s.castTo(one, DType::Bool, loc) : one;
}

} // namespace kiln::sema::tile
