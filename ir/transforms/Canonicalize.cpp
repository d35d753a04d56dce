//===- Canonicalize.cpp - Constant folding and exact simplifications ------===//
//
// Two kinds of rewrites, applied until nothing changes:
//  * folding: an op whose operands are all constants (scalars or splats) becomes a
//    constant. The values are computed by the interpreter's own element functions
//    (interp::foldElementwise), so a folded result is exactly what the op would have
//    produced at run time — there is one definition of each op's semantics.
//  * simplification: identities that hold bit for bit in the dtype (x * 1, x - 0,
//    x + 0 on integers, x || true and x && false on bools, cast to the same type,
//    select on a constant condition, shape ops of splats, a reshape of a reshape, a
//    reduction over an axis of one element, ...). Float identities that change -0.0 or NaN payloads
//    (x + 0.0, x * 0) are not applied.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

#include "ir/interp/Fold.h"

#include <cmath>
#include <optional>

namespace kiln::ir {

namespace {

/// The scalar value of a `constant` op (scalar or splat), if `v` is one.
const Attr *constantAttr(const Value *v) {
  const Op *def = v->definingOp();
  if (!def || def->kind() != OpKind::Constant)
    return nullptr;
  return &def->attrs().at("value");
}

bool isConstantEqualTo(const Value *v, double expected) {
  const Attr *a = constantAttr(v);
  if (!a)
    return false;
  if (auto *i = std::get_if<int64_t>(a))
    return static_cast<double>(*i) == expected;
  if (auto *d = std::get_if<double>(a))
    return *d == expected && !std::signbit(*d) == !std::signbit(expected);
  if (auto *b = std::get_if<bool>(a))
    return (*b ? 1.0 : 0.0) == expected;
  return false;
}

class Canonicalizer {
public:
  bool run(Block &block) {
    bool changed = false;
    for (auto it = block.ops().begin(); it != block.ops().end(); ++it) {
      Op &op = **it;
      for (Value *&v : op.operands()) {
        auto r = replacements_.find(v);
        if (r != replacements_.end())
          v = r->second;
      }
      for (const auto &region : op.regions())
        changed |= run(*region);
      changed |= dropAllTrueMask(op);
      Builder builder;
      builder.setInsertionPoint(&block, it);
      if (Value *replacement = simplify(op, builder)) {
        replacements_[op.result()] = replacement;
        replaced_.push_back(&op);
        changed = true;
      }
    }
    return changed;
  }

  /// Rewrites every use of a replaced result, then deletes the replaced ops (all pure,
  /// and unused once their uses are rewritten).
  void commit(Block &body) {
    replaceUses(body, replacements_);
    for (Op *op : replaced_) {
      Block *parent = op->parentBlock();
      parent->erase(parent->find(op));
    }
  }

private:
  /// A load or store whose mask is the constant true accesses every lane: the mask (and
  /// a load's `other`) goes, in place (the full-block version of a blocks() loop).
  static bool dropAllTrueMask(Op &op) {
    const unsigned maskAt = op.kind() == OpKind::Load ? 1 : op.kind() == OpKind::Store ? 2 : 0;
    if (!maskAt || op.numOperands() <= maskAt || !isConstantEqualTo(op.operand(maskAt), 1))
      return false;
    op.operands().resize(maskAt);
    return true;
  }

  /// Returns a value equal to `op`'s single result, or null to keep the op.
  Value *simplify(Op &op, Builder &builder) {
    if (op.numResults() != 1 || op.kind() == OpKind::Constant)
      return nullptr;
    if (Value *folded = fold(op, builder))
      return folded;
    const Type &type = op.result()->type;
    Value *a = op.numOperands() > 0 ? op.operand(0) : nullptr;
    Value *b = op.numOperands() > 1 ? op.operand(1) : nullptr;
    bool integral = !type.pointer && !isFloat(type.dtype);
    switch (op.kind()) {
    case OpKind::Add:
      if (integral && isConstantEqualTo(b, 0))
        return a;
      if (integral && isConstantEqualTo(a, 0))
        return b;
      // x + (-0.0) is x for every float x, including -0.0.
      if (!integral && isConstantEqualTo(b, -0.0))
        return a;
      return nullptr;
    case OpKind::Sub:
      return isConstantEqualTo(b, 0) ? a : nullptr;
    case OpKind::Mul:
      if (isConstantEqualTo(b, 1))
        return a;
      if (isConstantEqualTo(a, 1))
        return b;
      return nullptr;
    case OpKind::Div:
      return isConstantEqualTo(b, 1) ? a : nullptr;
    case OpKind::PtrAdd:
      return isConstantEqualTo(b, 0) ? a : nullptr;
    case OpKind::And:
      if (type.dtype == DType::Bool && isConstantEqualTo(b, 1))
        return a;
      if (type.dtype == DType::Bool && isConstantEqualTo(a, 1))
        return b;
      // x && false is false: the constant operand, when it already has the result type.
      if (type.dtype == DType::Bool)
        return absorbing(a, b, type, 0);
      return nullptr;
    case OpKind::Or:
      if (isConstantEqualTo(b, 0))
        return a;
      if (isConstantEqualTo(a, 0))
        return b;
      // x || true is true (`!CAUSAL || mask` with CAUSAL false).
      if (type.dtype == DType::Bool)
        return absorbing(a, b, type, 1);
      return nullptr;
    case OpKind::Cast:
    case OpKind::Bitcast:
      return a->type == type ? a : nullptr;
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
      return a->type == type ? a : nullptr;
    case OpKind::Reshape:
      if (a->type == type)
        return a;
      // reshape(reshape(x)) is one reshape of x: row-major order is kept by both.
      if (const Op *inner = a->definingOp(); inner && inner->kind() == OpKind::Reshape) {
        Value *x = inner->operand(0);
        return x->type == type ? x : builder.createValue(OpKind::Reshape, op.loc(), {x}, type);
      }
      return nullptr;
    case OpKind::Reduce:
      // A reduction over an axis of one element is that element, whatever the kind
      // (elements are combined from the first on, with no identity): a reshape, which
      // moves no data, where a reduction would go through shared memory. Kept where the
      // result is rank 0, a uniform value of another layout.
      if (a->type.shape.at(static_cast<size_t>(op.intAttr("axis"))) == 1 && !type.shape.empty()) {
        Value *reshaped = builder.createValue(OpKind::Reshape, op.loc(), {a}, type);
        reshaped->nameHint = op.result()->nameHint;
        return reshaped;
      }
      return nullptr;
    case OpKind::Select:
      if (const Attr *c = constantAttr(a))
        return (std::holds_alternative<bool>(*c) ? std::get<bool>(*c) : std::get<int64_t>(*c) != 0)
                   ? b
                   : op.operand(2);
      return op.operand(1) == op.operand(2) ? op.operand(1) : nullptr;
    default:
      return nullptr;
    }
  }

  /// The operand of `a`, `b` that is the constant `value` and has type `type` (the
  /// absorbing element of a bool and/or), or null.
  static Value *absorbing(Value *a, Value *b, const Type &type, double value) {
    for (Value *v : {a, b})
      if (v->type == type && isConstantEqualTo(v, value))
        return v;
    return nullptr;
  }

  /// Folds an op whose operands are all constants into a constant.
  Value *fold(Op &op, Builder &builder) {
    std::vector<Attr> values;
    for (Value *v : op.operands()) {
      const Attr *a = constantAttr(v);
      if (!a)
        return nullptr;
      values.push_back(*a);
    }
    std::optional<Attr> result = interp::foldElementwise(op, values);
    if (!result)
      return nullptr;
    Op *constant = builder.create(OpKind::Constant, op.loc(), {}, {op.result()->type},
                                  {{"value", *result}});
    constant->result()->nameHint = op.result()->nameHint;
    return constant->result();
  }

  ValueMap replacements_;
  std::vector<Op *> replaced_;
};

} // namespace

bool canonicalize(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    // Each sweep replaces uses as it goes; iterate while folding exposes more.
    for (int round = 0; round < 16; ++round) {
      Canonicalizer canonicalizer;
      bool roundChanged = canonicalizer.run(*kernel->body);
      if (roundChanged)
        canonicalizer.commit(*kernel->body);
      changed |= roundChanged;
      if (!roundChanged)
        break;
    }
  }
  return changed;
}

} // namespace kiln::ir
