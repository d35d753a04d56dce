//===- LowerSort.cpp - sort, topk and argtopk -----------------------------===//
//
// Each line along the axis is padded to a power of two and sorted in shared memory by
// a bitonic network over (value, index) pairs. The comparison is a total order — NaNs
// after numbers, equal values by index, padding after everything — so the network's
// result is exactly the stable sort of the interpreter, for ascending and descending
// order alike; topk and argtopk are the first k of a descending sort.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

namespace kiln::codegen::detail {

void Lowering::lowerSort(const ir::Op &op) {
  const Type &t = op.operand(0)->type;
  const Type elem = t.element();
  const Type &rt = op.result()->type;
  const int64_t ax = op.intAttr("axis");
  const bool descending = op.kind() == OpKind::Sort ? op.boolAttr("descending") : true;
  const ScratchPlan plan = scratchPlan(op);
  const int64_t data = plan.offsets[0], keys = plan.offsets[1], idxs = plan.offsets[2];
  llvm::Type *sty = sharedType(elem);
  const bool flt = !t.pointer && isFloat(t.dtype);

  int64_t inner = 1, lines = 1;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (static_cast<int64_t>(d) > ax)
      inner *= t.shape[d];
    if (static_cast<int64_t>(d) != ax)
      lines *= t.shape[d];
  }
  const int64_t len = t.shape[ax], P = nextPowerOf2(len);
  auto at = [&](llvm::Value *line, llvm::Value *l) { // flat index in the tile
    llvm::Value *o = b.CreateUDiv(line, i32(inner));
    llvm::Value *i = b.CreateURem(line, i32(inner));
    return b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, i32(len)), l), i32(inner)), i);
  };

  beginSharedUse();
  storeTileToShared(get(op.operand(0)), t, data);
  sharedWritten();
  // Lines as padded (value, index) rows; an index >= len marks padding.
  loop(tid, i32(lines * P), T, {}, [&](llvm::Value *p, const Values &) {
    llvm::Value *line = b.CreateUDiv(p, i32(P));
    llvm::Value *l = b.CreateURem(p, i32(P));
    llvm::Value *src = at(line, b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, l, i32(len - 1)));
    storeShared(loadShared(sty, data, src), keys, p);
    storeShared(l, idxs, p);
    return Values{};
  });
  sharedRead();
  barrier();

  // a goes before c?
  auto before = [&](llvm::Value *va, llvm::Value *ia, llvm::Value *vc, llvm::Value *ic) {
    llvm::Value *lowerIdx = b.CreateICmpULT(ia, ic);
    llvm::Value *a = fromShared(va, elem), *c = fromShared(vc, elem);
    llvm::Value *first = descending ? emitCmp("gt", elem, a, c) : emitCmp("lt", elem, a, c);
    llvm::Value *r = b.CreateOr(first, b.CreateAnd(emitCmp("eq", elem, a, c), lowerIdx));
    if (flt) {
      llvm::Value *nanA = b.CreateFCmpUNO(a, a), *nanC = b.CreateFCmpUNO(c, c);
      r = b.CreateSelect(b.CreateOr(nanA, nanC),
                         b.CreateOr(b.CreateAnd(b.CreateNot(nanA), nanC),
                                    b.CreateAnd(b.CreateAnd(nanA, nanC), lowerIdx)),
                         r);
    }
    llvm::Value *padA = b.CreateICmpUGE(ia, i32(len)), *padC = b.CreateICmpUGE(ic, i32(len));
    return b.CreateSelect(b.CreateOr(padA, padC),
                          b.CreateOr(b.CreateAnd(b.CreateNot(padA), padC),
                                     b.CreateAnd(b.CreateAnd(padA, padC), lowerIdx)),
                          r);
  };

  // The bitonic network: stages k = 2, 4, ..., P; steps j = k/2, ..., 1. Each step
  // compares pairs (i, i + j) with bit j of i clear, ascending where bit k of i is clear.
  const int64_t halfPairs = lines * P / 2;
  for (int64_t k = 2; k <= P; k *= 2)
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      loop(tid, i32(halfPairs), T, {}, [&](llvm::Value *q, const Values &) {
        llvm::Value *line = b.CreateUDiv(q, i32(P / 2));
        llvm::Value *r = b.CreateURem(q, i32(P / 2));
        // The r-th index of the line with bit j clear.
        llvm::Value *i = b.CreateAdd(b.CreateMul(b.CreateUDiv(r, i32(j)), i32(2 * j)),
                                     b.CreateURem(r, i32(j)));
        llvm::Value *pi = b.CreateAdd(b.CreateMul(line, i32(P)), i);
        llvm::Value *pc = b.CreateAdd(pi, i32(j));
        llvm::Value *va = loadShared(sty, keys, pi), *ia = loadShared(b.getInt32Ty(), idxs, pi);
        llvm::Value *vc = loadShared(sty, keys, pc), *ic = loadShared(b.getInt32Ty(), idxs, pc);
        llvm::Value *ascending = b.CreateICmpEQ(b.CreateAnd(i, i32(k)), i32(0));
        // Out of order: c must come first in this direction.
        llvm::Value *swap = b.CreateSelect(ascending, before(vc, ic, va, ia), before(va, ia, vc, ic));
        guardedVoid(swap, [&] {
          storeShared(vc, keys, pi);
          storeShared(ic, idxs, pi);
          storeShared(va, keys, pc);
          storeShared(ia, idxs, pc);
        });
        return Values{};
      });
      sharedRead();
      barrier();
    }

  // Read back: element (o, j, i) of the result is position j of line (o, i).
  const int64_t outLen = rt.shape[ax];
  const bool indices = op.kind() == OpKind::ArgTopK;
  const Type readType = indices ? Type::scalar(DType::I32) : elem;
  set(op.result(), gatherFromShared(readType, rt, indices ? idxs : keys, [&](llvm::Value *e) {
        llvm::Value *i = b.CreateURem(e, i32(inner));
        llvm::Value *rest = b.CreateUDiv(e, i32(inner));
        llvm::Value *j = b.CreateURem(rest, i32(outLen));
        llvm::Value *o = b.CreateUDiv(rest, i32(outLen));
        llvm::Value *line = b.CreateAdd(b.CreateMul(o, i32(inner)), i);
        return b.CreateAdd(b.CreateMul(line, i32(P)), j);
      }));
}

} // namespace kiln::codegen::detail
