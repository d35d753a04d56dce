//===- SemaValues.cpp - Building IR for values: constants, casts, broadcasts ===//
//
// Tile IR ops never convert or broadcast implicitly (Ops.def), so every implicit rule
// of the language becomes explicit ops here: a weak literal adopting a dtype, a scalar
// splatted over a tile, a lower-rank tile expanded and broadcast numpy-style, a lossless
// conversion for an annotated binding. Constants stay unmaterialized until an op needs
// them, and are then built directly with the type the use wants.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include "support/FloatFormats.h"

namespace kiln::sema {

ir::Op *Sema::emit(ir::OpKind kind, Location loc, std::vector<ir::Value *> operands,
                   std::vector<Type> results, ir::AttrMap attrs, unsigned regions) {
  // Unrolling and inlining multiply a program's size; bound the work so that no input
  // can make the compiler run for hours or exhaust memory.
  if (++opsEmitted > kMaxOps)
    throw BudgetExceeded{};
  return builder.create(kind, loc, std::move(operands), std::move(results), std::move(attrs),
                        regions);
}

Val Sema::emitValue(ir::OpKind kind, Location loc, std::vector<ir::Value *> operands, Type result,
                    ir::AttrMap attrs) {
  ir::Op *op = emit(kind, loc, std::move(operands), {std::move(result)}, std::move(attrs));
  return Val::ofIR(op->result(), loc);
}

/// A weak integer constant read against its nominal dtype: literals above INT64_MAX
/// carry the u64 dtype and a negative pattern.
static bool weakIsU64(const Val &v) { return v.type.dtype == DType::U64; }

/// A `constant` op of `type` (a scalar, or a tile splatting the value).
ir::Value *Sema::buildConstant(const Type &type, const ConstVal &c, Location loc) {
  if (++opsEmitted > kMaxOps)
    throw BudgetExceeded{};
  if (isBool(type.dtype))
    return builder.boolConstant(loc, type, c.i != 0);
  if (isFloat(type.dtype))
    return builder.floatConstant(loc, type, c.isFloat() ? c.f : static_cast<double>(c.i));
  return builder.intConstant(loc, type, c.i);
}

ir::Value *Sema::materialize(Val &v) {
  if (v.ir)
    return v.ir;
  kiln_assert(v.isConst(), "materializing a value that is neither IR nor constant");
  if (v.weak)
    v = strengthen(v);
  v.ir = buildConstant(v.type, *v.cst, v.loc);
  return v.ir;
}

Val Sema::adopt(const Val &v, DType d) {
  kiln_assert(v.weak && v.cst, "adopt() of a value that is not weak");
  const ConstVal &c = *v.cst;
  Val out = v;
  out.weak = false;
  out.type = Type::scalar(d);
  // The value is still used (wrapped) after an error, so that checking goes on.
  if (c.isInt() && !isFloat(d) && !intFitsDType(c.i, weakIsU64(v), d))
    error(v.loc, DiagCode::BadLiteral,
          "integer constant " + constString(c, v.type.dtype) + " does not fit in " + dtStr(d),
          isBool(d) ? std::string()
                    : "write a value in the range of " + dtStr(d) +
                          ", or convert the other operand with .to(...)");
  out.cst = castConst(c, v.type.dtype, d);
  return out;
}

Val Sema::strengthen(const Val &v) {
  if (!v.weak)
    return v;
  return adopt(v, v.type.dtype);
}

Val Sema::castTo(const Val &v, DType d, Location loc) {
  if (!v.isValue())
    return v;
  kiln_assert(!v.type.pointer, "castTo on a pointer value");
  if (v.isConst())
    return Val::ofConst(Type::scalar(d), castConst(*v.cst, v.type.dtype, d), false, loc);
  if (v.type.dtype == d)
    return v;
  Val src = v;
  return emitValue(ir::OpKind::Cast, loc, {materialize(src)}, v.type.withDType(d));
}

Val Sema::convertTo(const Val &v, DType d, Location loc) {
  if (!v.isValue())
    return v;
  if (v.weak)
    return adopt(v, d);
  if (v.type.dtype == d && !v.type.pointer)
    return v;
  return castTo(v, d, loc);
}

Val Sema::broadcastTo(const Val &v, const Shape &shape, Location loc) {
  if (!v.isValue() || v.type.shape == shape)
    return v;
  kiln_assert(broadcastsTo(v.type.shape, shape),
              "broadcastTo: " + v.type.str() + " does not broadcast to " + shapeString(shape));
  Val cur = v;
  if (cur.type.isScalar()) {
    // A constant becomes a constant tile directly; anything else is splatted.
    if (cur.isConst()) {
      Val s = strengthen(cur);
      return Val::ofIR(buildConstant(s.type.withShape(shape), *s.cst, loc), loc);
    }
    return emitValue(ir::OpKind::Splat, loc, {materialize(cur)}, cur.type.withShape(shape));
  }
  // Lower rank: insert leading unit axes first (numpy aligns trailing dimensions).
  while (cur.type.rank() < shape.size()) {
    Shape s = cur.type.shape;
    s.insert(s.begin(), 1);
    cur = emitValue(ir::OpKind::ExpandDims, loc, {materialize(cur)}, cur.type.withShape(s),
                    {{"axis", ir::Attr(int64_t(0))}});
  }
  if (cur.type.shape != shape)
    cur = emitValue(ir::OpKind::Broadcast, loc, {materialize(cur)}, cur.type.withShape(shape));
  return cur;
}

DType Sema::meetDType(const Val &a, const Val &b) const {
  if (a.weak == b.weak)
    return promoteDTypes(a.type.dtype, b.type.dtype);
  const Val &w = a.weak ? a : b;
  const Val &s = a.weak ? b : a;
  DType wd = w.type.dtype, sd = s.type.dtype;
  if (isFloat(wd))
    // A float literal keeps a float operand's dtype; meeting an integer or bool it
    // gives the default float (its own nominal dtype).
    return isFloat(sd) ? sd : wd;
  if (isBool(wd))
    return promoteDTypes(wd, sd);
  // An integer literal takes the other operand's dtype unless that is bool.
  return isBool(sd) ? wd : sd;
}

bool Sema::checkTileSize(const Shape &shape, Location loc) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      error(loc, DiagCode::InvalidShape,
            "tile dimensions must be positive, got " + shapeString(shape));
      return false;
    }
    if (n > kMaxTileElements / d) {
      n = kMaxTileElements + 1;
      break;
    }
    n *= d;
  }
  if (n > kMaxTileElements) {
    error(loc, DiagCode::InvalidShape,
          "tile " + shapeString(shape) + " has more than 2^24 elements",
          "split the work over more programs or loop over smaller tiles");
    return false;
  }
  return true;
}

std::optional<Shape> Sema::commonShape(const Shape &a, const Shape &b, Location loc,
                                       const std::string &what) {
  auto s = broadcastShapes(a, b);
  if (!s) {
    error(loc, DiagCode::ShapeMismatch,
          "cannot broadcast shapes " + shapeString(a) + " and " + shapeString(b) + " " + what,
          "dimensions must be equal or 1, aligned from the last; insert axes with x[:, None]");
    return std::nullopt;
  }
  if (!checkTileSize(*s, loc))
    return std::nullopt;
  return s;
}

std::optional<Val> Sema::coerce(const Val &v, const Type &to, Location loc, DiagCode code,
                                const std::string &what) {
  if (!v.isValue())
    return v;
  if (v.type.pointer != to.pointer || (v.type.pointer && v.type.dtype != to.dtype)) {
    error(loc, code, what + " has type " + to.str() + " but the value is " + describe(v));
    return std::nullopt;
  }
  bool dtypeOk = v.weak ? true : isLosslessConversion(v.type.dtype, to.dtype);
  if (v.weak && v.cst->isFloat() && !isFloat(to.dtype))
    dtypeOk = false; // a float literal does not silently become an integer
  if (!dtypeOk) {
    error(loc, code,
          what + " has type " + to.str() + " but the value is " + describe(v) +
              ", which does not convert to " + dtStr(to.dtype) + " without loss",
          "convert explicitly with .to(" + dtStr(to.dtype) + ")");
    return std::nullopt;
  }
  if (!broadcastsTo(v.type.shape, to.shape)) {
    error(loc, code == DiagCode::TypeMismatch ? DiagCode::ShapeMismatch : code,
          what + " has type " + to.str() + " but the value is " + describe(v) +
              ", whose shape does not broadcast to " + shapeString(to.shape));
    return std::nullopt;
  }
  Val out = v.type.pointer ? v : convertTo(v, to.dtype, loc);
  return broadcastTo(out, to.shape, loc);
}

std::string Sema::describe(const Val &v) const {
  switch (v.kind) {
  case Val::Kind::Poison: return "<error>";
  case Val::Kind::Void: return "no value";
  case Val::Kind::Tuple: return std::to_string(v.elems.size()) + " values";
  case Val::Kind::Fn: return "fn " + v.fn->name;
  case Val::Kind::Mask: return "block mask " + masks[v.mask].name;
  case Val::Kind::Value: break;
  }
  if (v.weak)
    return (v.cst->isFloat()  ? "float literal "
            : v.cst->isBool() ? "bool literal "
                              : "integer literal ") +
           constString(*v.cst, v.type.dtype);
  return v.type.str();
}

} // namespace kiln::sema
