//===- IR.cpp - Tile IR data structures, building, walking, cloning -------===//
//
// The op table comes from Ops.def; everything else here is bookkeeping that keeps
// parent pointers, result indices and block-argument indices consistent. Builder::create
// is the single place ops are made, and it refuses (as an internal error) to make one
// that breaks the op's local rules, so lowering bugs surface where they happen.
//
//===----------------------------------------------------------------------===//
#include "ir/IR.h"

#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/FloatFormats.h"

#include <array>

namespace kiln::ir {

//===--------------------------------------------------------------------===//
// Op kinds
//===--------------------------------------------------------------------===//

static constexpr std::array kOpInfos = {
#define KILN_OP(Enum, Mnemonic, MinOps, MaxOps, NumResults, NumRegions)                  \
  OpInfo{Mnemonic, MinOps, MaxOps, NumResults, NumRegions},
#include "ir/Ops.def"
};

const OpInfo &opInfo(OpKind kind) { return kOpInfos[static_cast<size_t>(kind)]; }

std::optional<OpKind> opKindFromMnemonic(std::string_view mnemonic) {
  for (size_t i = 0; i < kOpInfos.size(); ++i)
    if (mnemonic == kOpInfos[i].mnemonic)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

bool isTerminator(OpKind kind) {
  return kind == OpKind::Yield || kind == OpKind::Condition || kind == OpKind::Return;
}

bool isElementwise(OpKind kind) {
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
    return true;
  // Elementwise in spirit, but their result type is not simply the operands' type.
  case OpKind::PtrAdd:
  case OpKind::Cmp:
  case OpKind::Select:
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::Constant:
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::Arange:
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
  case OpKind::BlockElements:
  case OpKind::Load:
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
    return false;
  }
  return false;
}

bool readsAfresh(const Op &load) {
  return load.kind() == OpKind::Load && load.hasAttr("cache_modifier") &&
         load.stringAttr("cache_modifier") == "cv";
}

bool isPure(OpKind kind) {
  switch (kind) {
  // Memory: a load may not be moved across stores or merged with another load, so it
  // is treated as impure along with everything that writes or fails.
  case OpKind::Load:
  case OpKind::Store:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCas:
  case OpKind::Fence:
  case OpKind::ClusterExchange:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
  // Control flow: purity would depend on the regions' contents.
  case OpKind::For:
  case OpKind::If:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
    return false;
  // Reads memory, but a mask's bitmaps are never written while a kernel runs.
  case OpKind::BlockElements:
  case OpKind::Constant:
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::Arange:
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
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
  case OpKind::PtrAdd:
  case OpKind::Cmp:
  case OpKind::Select:
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
  case OpKind::Cast:
  case OpKind::Bitcast:
  // A custom combiner region is made of pure ops only (the verifier checks it).
  case OpKind::Reduce:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Scan:
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK:
  case OpKind::Dot:
    return true;
  }
  return false;
}

//===--------------------------------------------------------------------===//
// Blocks and ops
//===--------------------------------------------------------------------===//

Value *Block::addArgument(Type type, std::string nameHint) {
  auto v = std::make_unique<Value>();
  v->type = std::move(type);
  v->nameHint = std::move(nameHint);
  v->ownerBlock_ = this;
  v->index_ = static_cast<unsigned>(args_.size());
  args_.push_back(std::move(v));
  return args_.back().get();
}

Op *Block::terminator() const {
  if (ops_.empty() || !isTerminator(ops_.back()->kind()))
    return nullptr;
  return ops_.back().get();
}

Op *Block::insert(iterator pos, std::unique_ptr<Op> op) {
  kiln_assert(op != nullptr, "inserting a null op");
  op->parent_ = this;
  return ops_.insert(pos, std::move(op))->get();
}

Block::iterator Block::erase(iterator pos) { return ops_.erase(pos); }

std::unique_ptr<Op> Block::take(iterator pos) {
  std::unique_ptr<Op> op = std::move(*pos);
  ops_.erase(pos);
  op->parent_ = nullptr;
  return op;
}

Block::iterator Block::find(const Op *op) {
  for (auto it = ops_.begin(); it != ops_.end(); ++it)
    if (it->get() == op)
      return it;
  return ops_.end();
}

Value *Op::addResult(Type type, std::string nameHint) {
  auto v = std::make_unique<Value>();
  v->type = std::move(type);
  v->nameHint = std::move(nameHint);
  v->defOp_ = this;
  v->index_ = static_cast<unsigned>(results_.size());
  results_.push_back(std::move(v));
  return results_.back().get();
}

Block *Op::addRegion() {
  regions_.push_back(std::make_unique<Block>());
  regions_.back()->parent_ = this;
  return regions_.back().get();
}

Op *Op::parentOp() const { return parent_ ? parent_->parentOp() : nullptr; }

/// Finds attribute `name` holding a T, raising an internal error otherwise: a pass that
/// asks for an attribute the verifier guarantees must never find it missing.
template <typename T>
static const T &getAttr(const Op &op, const std::string &name, const char *what) {
  auto it = op.attrs().find(name);
  if (it == op.attrs().end())
    KILN_ICE(std::string("op '") + op.mnemonic() + "' has no attribute '" + name + "'");
  const T *v = std::get_if<T>(&it->second);
  if (!v)
    KILN_ICE(std::string("attribute '") + name + "' of op '" + op.mnemonic() + "' is not " +
             what);
  return *v;
}

int64_t Op::intAttr(const std::string &name) const {
  return getAttr<int64_t>(*this, name, "an integer");
}
double Op::floatAttr(const std::string &name) const {
  return getAttr<double>(*this, name, "a float");
}
bool Op::boolAttr(const std::string &name) const { return getAttr<bool>(*this, name, "a bool"); }
const std::string &Op::stringAttr(const std::string &name) const {
  return getAttr<std::string>(*this, name, "a string");
}
DType Op::dtypeAttr(const std::string &name) const {
  return getAttr<DType>(*this, name, "a dtype");
}
const std::vector<int64_t> &Op::intsAttr(const std::string &name) const {
  return getAttr<std::vector<int64_t>>(*this, name, "an integer list");
}

Kernel *Module::findKernel(std::string_view name) const {
  for (const auto &k : kernels)
    if (k->name == name)
      return k.get();
  return nullptr;
}

Kernel *Module::findGraph(std::string_view name) const {
  for (const auto &g : graphs)
    if (g->name == name)
      return g.get();
  return nullptr;
}

//===--------------------------------------------------------------------===//
// Builder
//===--------------------------------------------------------------------===//

void Builder::setInsertionPoint(Op *op) {
  kiln_assert(op && op->parentBlock(), "insertion point op is not in a block");
  block_ = op->parentBlock();
  pos_ = block_->find(op);
}

Op *Builder::create(OpKind kind, Location loc, std::vector<Value *> operands,
                    std::vector<Type> resultTypes, AttrMap attrs, unsigned numRegions) {
  const OpInfo &info = opInfo(kind);
  kiln_assert(block_ != nullptr, std::string("no insertion point for '") + info.mnemonic + "'");
  // Arity (from Ops.def) is the first thing verifyOpLocal checks.
  auto op = std::make_unique<Op>(kind, loc);
  op->operands() = std::move(operands);
  for (Type &t : resultTypes)
    op->addResult(std::move(t));
  op->attrs() = std::move(attrs);
  for (unsigned i = 0; i < numRegions; ++i)
    op->addRegion();
  if (auto err = verifyOpLocal(*op))
    KILN_ICE(std::string("Builder::create: '") + info.mnemonic + "' op " + *err);
  return block_->insert(pos_, std::move(op));
}

Value *Builder::intConstant(Location loc, Type type, int64_t value) {
  // Integer constants are stored canonically (wrapped to their dtype) so that equal
  // values always compare equal as attributes.
  if (isFloat(type.dtype) && !type.pointer)
    return floatConstant(loc, type, static_cast<double>(value));
  if (!type.pointer)
    value = wrapToIntDType(type.dtype, value);
  return createValue(OpKind::Constant, loc, {}, type, {{"value", Attr(value)}});
}

Value *Builder::floatConstant(Location loc, Type type, double value) {
  kiln_assert(isFloat(type.dtype) && !type.pointer,
              "float constant of non-float type " + type.str());
  return createValue(OpKind::Constant, loc, {}, type,
                     {{"value", Attr(roundToFloatDType(type.dtype, value))}});
}

Value *Builder::boolConstant(Location loc, Type type, bool value) {
  kiln_assert(isBool(type.dtype) && !type.pointer, "bool constant of type " + type.str());
  return createValue(OpKind::Constant, loc, {}, type, {{"value", Attr(int64_t(value ? 1 : 0))}});
}

//===--------------------------------------------------------------------===//
// Walking and rewriting
//===--------------------------------------------------------------------===//

void walk(Block &block, const std::function<void(Op &)> &fn) {
  for (auto &op : block.ops()) {
    fn(*op);
    for (const auto &region : op->regions())
      walk(*region, fn);
  }
}

void walkPostOrder(Block &block, const std::function<void(Op &)> &fn) {
  // The iterator is advanced before `fn` runs so that `fn` may even erase the op it
  // is given.
  for (auto it = block.ops().begin(); it != block.ops().end();) {
    Op &op = **it;
    ++it;
    for (const auto &region : op.regions())
      walkPostOrder(*region, fn);
    fn(op);
  }
}

size_t replaceUses(Block &block, const ValueMap &map) {
  if (map.empty())
    return 0;
  size_t changed = 0;
  walk(block, [&](Op &op) {
    for (Value *&operand : op.operands()) {
      Value *v = operand;
      // Follow a -> b -> c; the step bound guards against a cyclic map.
      for (size_t steps = 0; steps <= map.size(); ++steps) {
        auto it = map.find(v);
        if (it == map.end() || it->second == v)
          break;
        v = it->second;
      }
      if (v != operand) {
        operand = v;
        ++changed;
      }
    }
  });
  return changed;
}

Value *lookup(const ValueMap &mapping, Value *v) {
  auto it = mapping.find(v);
  return it == mapping.end() ? v : it->second;
}

Op *cloneOp(Builder &builder, const Op &op, ValueMap &mapping) {
  std::vector<Value *> operands;
  operands.reserve(op.numOperands());
  for (Value *v : op.operands())
    operands.push_back(lookup(mapping, v));
  std::vector<Type> types;
  for (const auto &r : op.results())
    types.push_back(r->type);
  Op *copy = builder.create(op.kind(), op.loc(), std::move(operands), std::move(types),
                            op.attrs(), op.numRegions());
  for (unsigned i = 0; i < op.numResults(); ++i) {
    copy->result(i)->nameHint = op.result(i)->nameHint;
    mapping[op.result(i)] = copy->result(i);
  }
  for (unsigned r = 0; r < op.numRegions(); ++r) {
    const Block &src = *op.region(r);
    Block *dst = copy->region(r);
    for (const auto &arg : src.arguments())
      mapping[arg.get()] = dst->addArgument(arg->type, arg->nameHint);
    Builder inner(dst);
    for (const auto &nested : src.ops())
      cloneOp(inner, *nested, mapping);
  }
  return copy;
}

std::unique_ptr<Module> cloneModule(const Module &module) {
  auto copy = std::make_unique<Module>();
  copy->sources = module.sources;
  auto cloneEntry = [](const Kernel &k) {
    auto nk = std::make_unique<Kernel>();
    nk->name = k.name;
    nk->loc = k.loc;
    nk->constValues = k.constValues;
    nk->numWarps = k.numWarps;
    nk->numStages = k.numStages;
    nk->gridSplit = k.gridSplit;
    nk->paramMultiples = k.paramMultiples;
    nk->blockMasks = k.blockMasks;
    ValueMap mapping;
    for (const auto &arg : k.body->arguments())
      mapping[arg.get()] = nk->body->addArgument(arg->type, arg->nameHint);
    Builder b(nk->body.get());
    for (const auto &op : k.body->ops())
      cloneOp(b, *op, mapping);
    return nk;
  };
  for (const auto &k : module.kernels)
    copy->kernels.push_back(cloneEntry(*k));
  for (const auto &g : module.graphs)
    copy->graphs.push_back(cloneEntry(*g));
  return copy;
}

std::optional<int64_t> integerConstant(const Value *v) {
  const Op *def = v->definingOp();
  if (!def || def->kind() != OpKind::Constant || !isInteger(v->type.dtype) || !v->type.isScalar())
    return std::nullopt;
  const int64_t *i = std::get_if<int64_t>(&def->attrs().at("value"));
  return i ? std::optional<int64_t>(*i) : std::nullopt;
}

size_t countOps(const Block &block) {
  size_t n = 0;
  for (const auto &op : block.ops()) {
    ++n;
    for (const auto &region : op->regions())
      n += countOps(*region);
  }
  return n;
}

} // namespace kiln::ir
