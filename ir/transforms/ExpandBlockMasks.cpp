//===- ExpandBlockMasks.cpp - block_elements as loads of its bitmap words -===//
//
// The last sparsity stage before code generation: each `block_elements(bitmaps, slot)`
// left after SpecializeBlockLoops becomes ordinary tile ops, so neither back end needs
// to know about block masks. Element (r, c) of a BM x BN block is bit f % 32 of word
// slot * W + f / 32, f = r * BN + c, W = ceil(BM * BN / 32) (support/BlockMask.h):
//
//   words = load(bitmaps + (slot * W + (f >> 5)))      masked off on a full block
//   keep  = ((words >> (f & 31)) & 1) != 0  ||  slot < 0
//
// A read marked `partial` has a slot known not to be negative: the load needs no mask
// and the result no `|| slot < 0`. The loads of one row of the block hit BN / 32 words,
// so they are served by a few cache lines whatever the thread layout.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Passes.h"

namespace kiln::ir {

namespace {

Value *expand(Op &read) {
  Builder b;
  b.setInsertionPoint(&read);
  const Location loc = read.loc();
  Value *bitmaps = read.operand(0), *slot = read.operand(1);
  const Shape &shape = read.result()->type.shape;
  const int64_t rows = shape[0], cols = shape[1];
  const int64_t words = (rows * cols + 31) / 32;
  const bool partial = read.hasAttr("partial") && read.boolAttr("partial");
  const Type i32 = Type::scalar(DType::I32), index = Type::tile(DType::I32, shape);

  auto splat = [&](Value *v, DType d) { return b.createValue(OpKind::Splat, loc, {v}, Type::tile(d, shape)); };
  auto tileConst = [&](int64_t v, DType d) { return b.intConstant(loc, Type::tile(d, shape), v); };
  // f = r * BN + c over the block.
  Value *r = b.createValue(OpKind::Arange, loc, {}, Type::tile(DType::I32, {rows}), {{"start", int64_t(0)}, {"end", rows}});
  Value *c = b.createValue(OpKind::Arange, loc, {}, Type::tile(DType::I32, {cols}), {{"start", int64_t(0)}, {"end", cols}});
  r = b.createValue(OpKind::ExpandDims, loc, {r}, Type::tile(DType::I32, {rows, 1}), {{"axis", int64_t(1)}});
  c = b.createValue(OpKind::ExpandDims, loc, {c}, Type::tile(DType::I32, {1, cols}), {{"axis", int64_t(0)}});
  r = b.createValue(OpKind::Broadcast, loc, {r}, index);
  c = b.createValue(OpKind::Broadcast, loc, {c}, index);
  Value *f = b.createValue(OpKind::Add, loc, {b.createValue(OpKind::Mul, loc, {r, tileConst(cols, DType::I32)}, index), c},
                           index);

  Value *base = b.createValue(OpKind::Mul, loc, {slot, b.intConstant(loc, i32, words)}, i32);
  Value *word = b.createValue(OpKind::Add, loc,
                              {splat(base, DType::I32), b.createValue(OpKind::Shr, loc, {f, tileConst(5, DType::I32)}, index)},
                              index);
  Value *ptrs = b.createValue(OpKind::PtrAdd, loc, {b.createValue(OpKind::Splat, loc, {bitmaps}, Type::ptr(DType::U32).withShape(shape)), word},
                              Type::ptr(DType::U32).withShape(shape));
  Value *fullBlock = nullptr;
  std::vector<Value *> loadOperands = {ptrs};
  if (!partial) {
    fullBlock = b.createValue(OpKind::Cmp, loc, {slot, b.intConstant(loc, i32, 0)}, Type::scalar(DType::Bool),
                              {{"pred", std::string("lt")}});
    Value *readWords = b.createValue(OpKind::Not, loc, {fullBlock}, Type::scalar(DType::Bool));
    loadOperands.push_back(splat(readWords, DType::Bool));
    loadOperands.push_back(tileConst(0, DType::U32));
  }
  Value *bits = b.createValue(OpKind::Load, loc, loadOperands, Type::tile(DType::U32, shape));
  Value *shift = b.createValue(OpKind::Cast, loc, {b.createValue(OpKind::And, loc, {f, tileConst(31, DType::I32)}, index)},
                               Type::tile(DType::U32, shape));
  Value *bit = b.createValue(OpKind::And, loc,
                             {b.createValue(OpKind::Shr, loc, {bits, shift}, Type::tile(DType::U32, shape)),
                              tileConst(1, DType::U32)},
                             Type::tile(DType::U32, shape));
  Value *keep = b.createValue(OpKind::Cmp, loc, {bit, tileConst(0, DType::U32)}, Type::tile(DType::Bool, shape),
                              {{"pred", std::string("ne")}});
  if (fullBlock)
    keep = b.createValue(OpKind::Or, loc, {keep, splat(fullBlock, DType::Bool)}, Type::tile(DType::Bool, shape));
  keep->nameHint = read.result()->nameHint;
  return keep;
}

} // namespace

bool expandBlockMasks(Module &module) {
  bool changed = false;
  for (auto &kernel : module.kernels) {
    std::vector<Op *> reads;
    walkPostOrder(*kernel->body, [&](Op &op) {
      if (op.kind() == OpKind::BlockElements)
        reads.push_back(&op);
    });
    ValueMap replaced;
    for (Op *read : reads)
      replaced[read->result()] = expand(*read);
    replaceUses(*kernel->body, replaced);
    for (Op *read : reads)
      read->parentBlock()->erase(read->parentBlock()->find(read));
    changed |= !reads.empty();
  }
  return changed;
}

} // namespace kiln::ir
