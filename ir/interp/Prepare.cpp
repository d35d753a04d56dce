//===- Prepare.cpp - Turning a Kernel into the interpreter's flat form ----===//
//
// Preparation runs once per runKernel call: it numbers every value, decodes the
// attributes each op needs at run time (so the hot loop never looks a string up in an
// attribute map) and checks the structure the executor relies on: each op's local
// rules (verifyOpLocal) and the shape of its regions. The interpreter is handed
// verified IR, so a violation here is a compiler bug and raised as one.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"
#include "ir/interp/Scalar.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace kiln::interp::detail {

using ir::OpKind;

/// Largest tile the interpreter materialises (8 bytes per element).
constexpr int64_t kMaxTileElements = int64_t(1) << 26;

[[noreturn]] static void malformed(const ir::Op &op, const std::string &what) {
  KILN_ICE(std::string("interpreter: malformed '") + op.mnemonic() + "': " + what);
}

/// Region `r` of `op` has `numArgs` arguments and ends in `term` with `numValues`
/// operands whose types are `types` (when given).
static void expectRegion(const ir::Op &op, unsigned r, size_t numArgs, OpKind term,
                         size_t numValues, const std::vector<const Type *> &types = {}) {
  const ir::Block &block = *op.region(r);
  if (block.numArguments() != numArgs)
    malformed(op, "region " + std::to_string(r) + " has " + std::to_string(block.numArguments()) +
                      " arguments, expected " + std::to_string(numArgs));
  const ir::Op *t = block.terminator();
  if (!t && numValues == 0 && term == OpKind::Yield)
    return; // an empty `else` or a body without results may omit its yield
  if (!t || t->kind() != term || t->numOperands() != numValues)
    malformed(op, "region " + std::to_string(r) + " does not end in a " + opInfo(term).mnemonic +
                      " of " + std::to_string(numValues) + " values");
  for (size_t i = 0; i < types.size(); ++i)
    if (t->operand(static_cast<unsigned>(i))->type != *types[i])
      malformed(op, "region " + std::to_string(r) + " yields a value of the wrong type");
}

static uint8_t cmpPred(const std::string &s) {
  static const char *names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (uint8_t i = 0; i < 6; ++i)
    if (s == names[i])
      return i;
  KILN_ICE("interpreter: unknown cmp predicate '" + s + "'");
}
static uint8_t reduceKind(const std::string &s) {
  static const char *names[] = {"sum", "prod", "max", "min", "custom"};
  for (uint8_t i = 0; i < 5; ++i)
    if (s == names[i])
      return i;
  KILN_ICE("interpreter: unknown reduction kind '" + s + "'");
}
/// In RmwKind's order. An atomic's `sem` and `scope` say how other threads see it; a
/// sequential run has no other threads, so they are not read here.
static uint8_t rmwKind(const std::string &s) {
  static const char *names[] = {"add", "max", "min", "xchg", "and", "or", "xor"};
  for (uint8_t i = 0; i < 7; ++i)
    if (s == names[i])
      return i;
  KILN_ICE("interpreter: unknown atomic kind '" + s + "'");
}

/// The constant's value attribute in the representation of `t`.
static Slot constantValue(const ir::Op &op, const Type &t) {
  const ir::Attr &a = op.attrs().at("value");
  double f = 0;
  int64_t i = 0;
  if (const double *d = std::get_if<double>(&a))
    f = *d, i = floatToIntDType(DType::I64, *d);
  else if (const int64_t *v = std::get_if<int64_t>(&a))
    i = *v, f = static_cast<double>(*v);
  else if (const bool *b = std::get_if<bool>(&a))
    i = *b, f = *b;
  else
    malformed(op, "its value is neither a number nor a bool");
  if (isFloat(t.dtype))
    return floatSlot(roundToFloatDType(t.dtype, f));
  return intSlot(wrapToIntDType(t.dtype, i));
}

// The one switch over every op kind that turns attributes into PreparedOp fields and
// checks region structure.
void decodeOp(const ir::Op &op, PreparedOp &p) {
  auto sub = [&](auto e) { p.sub = static_cast<uint8_t>(e); };
  std::vector<const Type *> resultTypes;
  for (const auto &r : op.results())
    resultTypes.push_back(&r->type);

  switch (op.kind()) {
  case OpKind::Constant:
    p.value = constantValue(op, op.result()->type);
    break;
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::ExpandDims:
  case OpKind::Argmax:
  case OpKind::Argmin:
    p.axis = op.intAttr("axis");
    break;
  case OpKind::Arange:
    p.axis = op.intAttr("start");
    break;
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
  case OpKind::PtrAdd:
  case OpKind::Select:
  case OpKind::Fma:
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::Load:
  case OpKind::BlockElements:
  case OpKind::Store:
  case OpKind::AtomicCas:
  case OpKind::Fence:
  case OpKind::ClusterExchange:
  case OpKind::Dot:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
    break;
  // clang-format off
  case OpKind::Add: sub(BinaryKind::Add); break;
  case OpKind::Sub: sub(BinaryKind::Sub); break;
  case OpKind::Mul: sub(BinaryKind::Mul); break;
  case OpKind::Div: sub(BinaryKind::Div); break;
  case OpKind::Rem: sub(BinaryKind::Rem); break;
  case OpKind::And: sub(BinaryKind::And); break;
  case OpKind::Or: sub(BinaryKind::Or); break;
  case OpKind::Xor: sub(BinaryKind::Xor); break;
  case OpKind::Shl: sub(BinaryKind::Shl); break;
  case OpKind::Shr: sub(BinaryKind::Shr); break;
  case OpKind::Minimum: sub(BinaryKind::Minimum); break;
  case OpKind::Maximum: sub(BinaryKind::Maximum); break;
  case OpKind::Pow: sub(BinaryKind::Pow); break;
  case OpKind::Neg: sub(UnaryKind::Neg); break;
  case OpKind::Not: sub(UnaryKind::Not); break;
  case OpKind::Abs: sub(UnaryKind::Abs); break;
  case OpKind::Exp: sub(UnaryKind::Exp); break;
  case OpKind::Exp2: sub(UnaryKind::Exp2); break;
  case OpKind::Log: sub(UnaryKind::Log); break;
  case OpKind::Log2: sub(UnaryKind::Log2); break;
  case OpKind::Sqrt: sub(UnaryKind::Sqrt); break;
  case OpKind::Rsqrt: sub(UnaryKind::Rsqrt); break;
  case OpKind::Sin: sub(UnaryKind::Sin); break;
  case OpKind::Cos: sub(UnaryKind::Cos); break;
  case OpKind::Tanh: sub(UnaryKind::Tanh); break;
  case OpKind::Erf: sub(UnaryKind::Erf); break;
  case OpKind::Sigmoid: sub(UnaryKind::Sigmoid); break;
  case OpKind::Floor: sub(UnaryKind::Floor); break;
  case OpKind::Ceil: sub(UnaryKind::Ceil); break;
  // clang-format on
  case OpKind::Cmp:
    p.sub = cmpPred(op.stringAttr("pred"));
    break;
  case OpKind::AtomicRMW:
    p.sub = rmwKind(op.stringAttr("kind"));
    break;
  case OpKind::Reduce:
  case OpKind::Scan: {
    p.axis = op.intAttr("axis");
    p.sub = reduceKind(op.stringAttr("kind"));
    if (static_cast<ReduceKind>(p.sub) == ReduceKind::Custom) {
      if (op.numRegions() != 1)
        malformed(op, "a custom combiner needs one region");
      Type elem = op.operand(0)->type.element();
      for (const auto &arg : op.region(0)->arguments())
        if (arg->type != elem)
          malformed(op, "combiner arguments must be " + elem.str());
      expectRegion(op, 0, 2, OpKind::Yield, 1, {&elem});
    }
    break;
  }
  case OpKind::Sort:
    p.axis = op.intAttr("axis");
    p.flag = op.boolAttr("descending");
    break;
  case OpKind::TopK:
  case OpKind::ArgTopK:
    p.axis = op.intAttr("axis");
    p.k = op.intAttr("k");
    break;
  case OpKind::For: {
    if (op.numRegions() != 1)
      malformed(op, "expects one region");
    expectRegion(op, 0, 1 + op.numResults(), OpKind::Yield, op.numResults(), resultTypes);
    const ir::Block &body = *op.region(0);
    if (body.argument(0)->type != op.operand(0)->type)
      malformed(op, "the induction variable's type differs from the bounds'");
    for (unsigned j = 0; j < op.numResults(); ++j)
      if (body.argument(1 + j)->type != op.result(j)->type)
        malformed(op, "a carried argument's type differs from its result's");
    break;
  }
  case OpKind::If:
    if (op.numRegions() != 2)
      malformed(op, "expects two regions");
    expectRegion(op, 0, 0, OpKind::Yield, op.numResults(), resultTypes);
    expectRegion(op, 1, 0, OpKind::Yield, op.numResults(), resultTypes);
    break;
  case OpKind::While: {
    if (op.numRegions() != 2)
      malformed(op, "expects two regions");
    expectRegion(op, 0, op.numResults(), OpKind::Condition, 1);
    expectRegion(op, 1, op.numResults(), OpKind::Yield, op.numResults(), resultTypes);
    for (unsigned r = 0; r < 2; ++r)
      for (unsigned j = 0; j < op.numResults(); ++j)
        if (op.region(r)->argument(j)->type != op.result(j)->type)
          malformed(op, "a carried argument's type differs from its result's");
    break;
  }
  }
}

namespace {

class Preparer {
public:
  Preparer(const ir::Kernel &kernel, Machine &m) : kernel_(kernel), m_(m) {}

  PreparedBlock run() {
    numberBlock(*kernel_.body, kernel_.loc);
    m_.env.assign(m_.types.size(), TileData{});
    return buildBlock(*kernel_.body);
  }

private:
  void numberValue(const ir::Value *v, Location loc) {
    if (!ids_.emplace(v, static_cast<uint32_t>(m_.types.size())).second)
      KILN_ICE("interpreter: a value is defined twice");
    const int64_t n = v->type.numElements();
    if (n > kMaxTileElements)
      m_.fail(loc, DiagCode::InputTooLarge,
              "tile " + v->type.str() + " has " + std::to_string(n) +
                  " elements, more than the interpreter's limit of " +
                  std::to_string(kMaxTileElements));
    m_.types.push_back(&v->type);
    m_.sizes.push_back(static_cast<size_t>(n));
  }

  void numberBlock(const ir::Block &block, Location loc) {
    for (const auto &arg : block.arguments())
      numberValue(arg.get(), loc);
    for (const auto &op : block.ops()) {
      for (const auto &r : op->results())
        numberValue(r.get(), op->loc());
      for (const auto &region : op->regions())
        numberBlock(*region, op->loc());
    }
  }

  uint32_t idOf(const ir::Value *v) const {
    auto it = ids_.find(v);
    if (it == ids_.end())
      KILN_ICE("interpreter: an operand is not defined in the kernel");
    return it->second;
  }

  PreparedBlock buildBlock(const ir::Block &block) {
    PreparedBlock b;
    for (const auto &arg : block.arguments())
      b.args.push_back(idOf(arg.get()));
    for (const auto &op : block.ops())
      b.ops.push_back(buildOp(*op));
    return b;
  }

  /// Steps an op counts (PreparedOp::work): what it costs the interpreter, so that the
  /// limit stands for a bounded time whatever the ops. An op reads or makes every
  /// element of its operands and results (a reduction of a [4096, 4096] tile costs 16M,
  /// not the 4096 it makes); a dot makes each result element from K products (a
  /// [4096, 4096] x [4096, 4096] dot is 2^36 steps, not 2^24); a sort compares
  /// n log2 n times.
  static uint64_t workOf(const ir::Op &op) {
    uint64_t work = 1;
    auto atLeast = [&](int64_t n) { work = std::max<uint64_t>(work, static_cast<uint64_t>(std::max<int64_t>(n, 0))); };
    for (const auto &r : op.results())
      atLeast(r->type.numElements());
    for (const ir::Value *v : op.operands())
      atLeast(v->type.numElements());
    if (op.kind() == OpKind::Dot && op.numResults() == 1 && op.numOperands() >= 2 && op.operand(0)->type.rank() >= 1) {
      const Shape &a = op.operand(0)->type.shape;
      const uint64_t k = static_cast<uint64_t>(std::max<int64_t>(a.back(), 1));
      const uint64_t made = static_cast<uint64_t>(std::max<int64_t>(op.result(0)->type.numElements(), 1));
      atLeast(static_cast<int64_t>(std::min<uint64_t>(made * k, uint64_t{1} << 62)));
    }
    if (op.kind() == OpKind::Sort || op.kind() == OpKind::TopK || op.kind() == OpKind::ArgTopK)
      work *= static_cast<uint64_t>(std::bit_width(work));
    return work;
  }

  PreparedOp buildOp(const ir::Op &op) {
    if (auto err = ir::verifyOpLocal(op))
      malformed(op, *err);
    PreparedOp p;
    p.op = &op;
    p.kind = op.kind();
    for (const ir::Value *v : op.operands())
      p.operands.push_back(idOf(v));
    for (const auto &r : op.results())
      p.results.push_back(idOf(r.get()));
    p.work = workOf(op);
    for (const auto &region : op.regions())
      p.regions.push_back(buildBlock(*region));

    decodeOp(op, p);
    return p;
  }

  const ir::Kernel &kernel_;
  Machine &m_;
  std::unordered_map<const ir::Value *, uint32_t> ids_;
};

} // namespace

PreparedBlock prepareKernel(const ir::Kernel &kernel, Machine &m) {
  return Preparer(kernel, m).run();
}

} // namespace kiln::interp::detail
