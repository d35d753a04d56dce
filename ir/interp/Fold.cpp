//===- Fold.cpp - Constant folding through the interpreter's handlers -----===//
//
// Folding evaluates the op on one element with the very handlers the interpreter
// runs, on a throw-away machine whose slots hold the constant operands. Every element
// of a splat is the same, so one element is the whole answer, and compile-time and
// run-time results cannot drift apart.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Fold.h"

#include "ir/Verifier.h"
#include "ir/interp/Scalar.h"

#include <sstream>

namespace kiln::interp {

using ir::OpKind;

namespace {

enum class FoldClass { Compute, PassThrough, No };

FoldClass classify(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Rem:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Minimum:
  case OpKind::Maximum:
  case OpKind::Pow:
  case OpKind::Fma:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sigmoid:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Cmp:
  case OpKind::Select:
  case OpKind::Cast:
  case OpKind::Bitcast:
    return FoldClass::Compute;
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Permute:
    return FoldClass::PassThrough; // a shape op of a splat is the same splat
  case OpKind::Constant:
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::Arange:
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
  case OpKind::PtrAdd:
  case OpKind::Load:
  case OpKind::BlockElements:
  case OpKind::Store:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCas:
  case OpKind::Fence:
  case OpKind::ClusterExchange:
  case OpKind::Reduce:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Scan:
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK:
  case OpKind::Dot:
  case OpKind::For:
  case OpKind::If:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
    return FoldClass::No;
  }
  return FoldClass::No;
}

/// A constant's attribute as a slot of type `t`; nullopt when it is not the
/// representation constants of `t` use (int64/bool for integers and bool, double for
/// floats).
std::optional<detail::Slot> toSlot(const Type &t, const ir::Attr &a) {
  if (isFloat(t.dtype)) {
    if (const double *d = std::get_if<double>(&a))
      return detail::floatSlot(roundToFloatDType(t.dtype, *d));
    return std::nullopt;
  }
  if (const int64_t *i = std::get_if<int64_t>(&a))
    return detail::intSlot(wrapToIntDType(t.dtype, *i));
  if (const bool *b = std::get_if<bool>(&a))
    return detail::intSlot(*b ? 1 : 0);
  return std::nullopt;
}

/// A slot of type `t` as a constant's attribute.
ir::Attr toAttr(const Type &t, detail::Slot s) {
  ir::Attr a;
  if (isFloat(t.dtype))
    a.emplace<double>(s.f);
  else
    a.emplace<int64_t>(s.i);
  return a;
}

} // namespace

std::optional<ir::Attr> foldElementwise(const ir::Op &op, const std::vector<ir::Attr> &operands) {
  const FoldClass cls = classify(op.kind());
  if (cls == FoldClass::No || operands.size() != op.numOperands() || op.numResults() != 1 ||
      op.numRegions() != 0 || ir::verifyOpLocal(op))
    return std::nullopt;
  for (const ir::Value *v : op.operands())
    if (v->type.pointer)
      return std::nullopt;
  const Type &resultT = op.result()->type;
  if (resultT.pointer)
    return std::nullopt;

  std::vector<detail::Slot> in;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    std::optional<detail::Slot> s = toSlot(op.operand(i)->type, operands[i]);
    if (!s)
      return std::nullopt;
    in.push_back(*s);
  }
  if (cls == FoldClass::PassThrough)
    return toAttr(resultT, in[0]);

  // A one-element machine: slots 0..n-1 the operands, slot n the result.
  RunOptions options;
  SourceManager sources;
  std::ostringstream sink;
  DiagnosticEngine diags(sources, sink);
  std::vector<Buffer> memory;
  detail::Machine m(options, diags, memory);
  detail::PreparedOp p;
  p.op = &op;
  p.kind = op.kind();
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    p.operands.push_back(i);
    m.types.push_back(&op.operand(i)->type);
    m.sizes.push_back(1);
    m.env.push_back({in[i]});
  }
  p.results.push_back(op.numOperands());
  m.types.push_back(&resultT);
  m.sizes.push_back(1);
  m.env.emplace_back();
  detail::decodeOp(op, p);
  m.exec(p);
  return toAttr(resultT, m.env.back().at(0));
}

} // namespace kiln::interp
