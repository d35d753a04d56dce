//===- SemaBuiltinsShape.cpp - reshape, trans, permute, broadcast, join ---===//
//
// The shape builtins change how a tile's elements are arranged, never their values.
// Shapes and axes are compile-time constants; each builtin checks them against the
// operand's shape and emits one shape op (or none, when nothing changes).
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"
#include "frontend/SemaTileOps.h"

#include <algorithm>

namespace kiln::sema {

using ir::OpKind;

/// The tile operand `i`: constants are materialized at their dtype.
static std::optional<Val> tileArg(Sema &s, CallArgs &a, size_t i) {
  Val v = s.argValue(a, i);
  if (!v.isValue())
    return std::nullopt;
  return s.strengthen(v);
}

static Val reshape(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  auto shape = s.argShape(a, 1);
  if (!x || !shape)
    return Val::poison();
  if (numElements(*shape) != x->type.numElements()) {
    s.error(a.locs[1], DiagCode::InvalidArgument,
            "cannot reshape " + x->type.str() + " (" + std::to_string(x->type.numElements()) +
                " elements) to " + shapeString(*shape) + " (" +
                std::to_string(numElements(*shape)) + " elements)");
    return Val::poison();
  }
  return tile::reshape(s, *x, *shape, a.loc);
}

static Val trans(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  if (!x)
    return Val::poison();
  if (x->type.rank() != 2) {
    s.error(a.locs[0], DiagCode::InvalidArgument, "trans needs a 2-D tile, got " + s.describe(*x),
            "use permute(x, [...]) for other ranks");
    return Val::poison();
  }
  return tile::permute(s, *x, {1, 0}, a.loc);
}

static Val permute(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  auto dims = s.argIntList(a, 1, "the permutation");
  if (!x || !dims)
    return Val::poison();
  int64_t rank = x->type.rank();
  std::vector<int64_t> perm = *dims;
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t &p : perm) {
    if (!ok)
      break;
    if (p < 0)
      p += rank;
    ok = p >= 0 && p < rank && !seen[p];
    if (ok)
      seen[p] = true;
  }
  if (!ok) {
    s.error(a.locs[1], DiagCode::InvalidArgument,
            "permute needs a permutation of the " + std::to_string(rank) + " axes of " +
                s.describe(*x) + ", got " + shapeString(*dims));
    return Val::poison();
  }
  return tile::permute(s, *x, perm, a.loc);
}

static Val broadcastToBuiltin(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  auto shape = s.argShape(a, 1);
  if (!x || !shape)
    return Val::poison();
  if (!broadcastsTo(x->type.shape, *shape)) {
    s.error(a.loc, DiagCode::ShapeMismatch,
            "cannot broadcast " + s.describe(*x) + " to " + shapeString(*shape),
            "dimensions must be equal or 1, aligned from the last");
    return Val::poison();
  }
  return s.broadcastTo(*x, *shape, a.loc);
}

static Val expandDims(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  auto axis = s.argConstInt(a, 1, "the axis");
  if (!x || !axis)
    return Val::poison();
  int64_t rank = x->type.rank();
  int64_t ax = *axis < 0 ? *axis + rank + 1 : *axis;
  if (ax < 0 || ax > rank) {
    s.error(a.locs[1], DiagCode::InvalidArgument,
            "axis " + std::to_string(*axis) +
                " is out of range for inserting into a tile of rank " + std::to_string(rank),
            "valid axes are " + std::to_string(-rank - 1) + " .. " + std::to_string(rank));
    return Val::poison();
  }
  Shape out = x->type.shape;
  out.insert(out.begin() + ax, 1);
  return s.emitValue(OpKind::ExpandDims, a.loc, {s.materialize(*x)}, x->type.withShape(out),
                     {{"axis", ir::Attr(ax)}});
}

static Val join(Sema &s, CallArgs &a) {
  Val x = s.argValue(a, 0), y = s.argValue(a, 1);
  if (!x.isValue() || !y.isValue())
    return Val::poison();
  if (x.type.pointer != y.type.pointer || (x.type.pointer && x.type.dtype != y.type.dtype)) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "join needs two values of compatible types, got " + s.describe(x) + " and " +
                s.describe(y));
    return Val::poison();
  }
  DType d = x.type.pointer ? x.type.dtype : s.meetDType(x, y);
  auto shape = s.commonShape(x.type.shape, y.type.shape, a.loc, "(arguments of join)");
  if (!shape)
    return Val::poison();
  Shape out = *shape;
  out.push_back(2);
  if (!s.checkTileSize(out, a.loc))
    return Val::poison();
  auto prep = [&](const Val &v) {
    return s.broadcastTo(v.type.pointer ? v : s.convertTo(v, d, a.loc), *shape, a.loc);
  };
  Val xx = prep(x), yy = prep(y);
  return s.emitValue(OpKind::Join, a.loc, {s.materialize(xx), s.materialize(yy)},
                     xx.type.withShape(out));
}

static Val split(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  if (!x)
    return Val::poison();
  if (x->type.rank() == 0 || x->type.shape.back() != 2) {
    s.error(a.locs[0], DiagCode::InvalidArgument,
            "split needs a tile whose last dimension is 2, got " + s.describe(*x),
            "join(a, b) builds such a tile");
    return Val::poison();
  }
  Shape half(x->type.shape.begin(), x->type.shape.end() - 1);
  Type t = x->type.withShape(half);
  ir::Op *op = s.emit(OpKind::Split, a.loc, {s.materialize(*x)}, {t, t});
  Val tuple;
  tuple.kind = Val::Kind::Tuple;
  tuple.loc = a.loc;
  tuple.elems = {Val::ofIR(op->result(0), a.loc), Val::ofIR(op->result(1), a.loc)};
  return tuple;
}

/// cat(a, b, axis): a's elements, then b's, along `axis` (may be omitted on 1-D tiles).
static Val cat(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0), y = tileArg(s, a, 1);
  if (!x || !y)
    return Val::poison();
  if (x->type.isScalar() || y->type.isScalar() || x->type.rank() != y->type.rank() ||
      x->type.pointer != y->type.pointer || (x->type.pointer && x->type.dtype != y->type.dtype)) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "cat needs two tiles of one rank and compatible types, got " + s.describe(*x) + " and " +
                s.describe(*y));
    return Val::poison();
  }
  auto axis = s.argAxis(a, 2, x->type.rank());
  if (!axis)
    return Val::poison();
  if (!agreeBesidesAxis(x->type.shape, y->type.shape, *axis)) {
    s.error(a.loc, DiagCode::ShapeMismatch,
            "cat along axis " + std::to_string(*axis) + " needs tiles that agree on every other axis, got " +
                s.describe(*x) + " and " + s.describe(*y));
    return Val::poison();
  }
  Shape out = x->type.shape;
  out[*axis] += y->type.shape[*axis];
  if (!s.checkTileSize(out, a.loc))
    return Val::poison();
  DType d = x->type.pointer ? x->type.dtype : s.meetDType(*x, *y);
  Val xx = x->type.pointer ? *x : s.convertTo(*x, d, a.loc);
  Val yy = y->type.pointer ? *y : s.convertTo(*y, d, a.loc);
  ir::Value *xv = s.materialize(xx), *yv = s.materialize(yy);
  return s.emitValue(OpKind::Cat, a.loc, {xv, yv}, xv->type.withShape(out), {{"axis", ir::Attr(*axis)}});
}

/// gather(x, idx, axis): x's elements at the indices idx along `axis`.
static Val gatherBuiltin(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0), idx = tileArg(s, a, 1);
  if (!x || !idx)
    return Val::poison();
  if (x->type.isScalar() || idx->type.pointer || !isInteger(idx->type.dtype) ||
      idx->type.rank() != x->type.rank()) {
    s.error(a.loc, DiagCode::TypeMismatch,
            "gather needs a tile and integer indices of the same rank, got " + s.describe(*x) + " and " +
                s.describe(*idx));
    return Val::poison();
  }
  auto axis = s.argAxis(a, 2, x->type.rank());
  if (!axis)
    return Val::poison();
  if (!agreeBesidesAxis(x->type.shape, idx->type.shape, *axis)) {
    s.error(a.locs[1], DiagCode::ShapeMismatch,
            "the indices of gather along axis " + std::to_string(*axis) +
                " must have the shape of x on every other axis, got " + s.describe(*idx) + " for " +
                s.describe(*x));
    return Val::poison();
  }
  return s.emitValue(OpKind::Gather, a.loc, {s.materialize(*x), s.materialize(*idx)},
                     x->type.withShape(idx->type.shape), {{"axis", ir::Attr(*axis)}});
}

/// flip(x, axis): the elements along `axis` in reverse order (a gather).
static Val flipBuiltin(Sema &s, CallArgs &a) {
  auto x = tileArg(s, a, 0);
  if (!x)
    return Val::poison();
  if (x->type.isScalar() || x->type.pointer) {
    s.error(a.locs[0], DiagCode::TypeMismatch, "flip needs a tile of values, got " + s.describe(*x));
    return Val::poison();
  }
  auto axis = s.argAxis(a, 1, x->type.rank());
  if (!axis)
    return Val::poison();
  return tile::flip(s, *x, *axis, a.loc);
}

/// interleave(a, b): a[0], b[0], a[1], b[1], ... along the last axis, which doubles:
/// join(a, b) with its two last axes merged.
static Val interleave(Sema &s, CallArgs &a) {
  Val joined = join(s, a);
  if (!joined.isValue())
    return Val::poison();
  Shape merged(joined.type.shape.begin(), joined.type.shape.end() - 1);
  if (merged.empty()) {
    s.error(a.loc, DiagCode::TypeMismatch, "interleave needs tiles, not two scalars", "join(a, b) pairs two scalars");
    return Val::poison();
  }
  merged.back() *= 2;
  return tile::reshape(s, joined, merged, a.loc);
}

void addShapeBuiltins(std::vector<BuiltinInfo> &t) {
  t.push_back({"reshape", {"x", "shape"}, 2, reshape});
  t.push_back({"trans", {"x"}, 1, trans});
  t.push_back({"permute", {"x", "dims"}, 2, permute});
  t.push_back({"broadcast_to", {"x", "shape"}, 2, broadcastToBuiltin});
  t.push_back({"expand_dims", {"x", "axis"}, 2, expandDims});
  t.push_back({"join", {"a", "b"}, 2, join});
  t.push_back({"split", {"x"}, 1, split});
  t.push_back({"cat", {"a", "b", "axis"}, 2, cat});
  t.push_back({"gather", {"x", "idx", "axis"}, 2, gatherBuiltin});
  t.push_back({"flip", {"x", "axis"}, 1, flipBuiltin});
  t.push_back({"interleave", {"a", "b"}, 2, interleave});
}

} // namespace kiln::sema
