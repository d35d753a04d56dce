//===- LowerScan.cpp - Inclusive scans along an axis ----------------------===//
//
// The tile goes to shared memory; each line gets a group of threads (LineSplit). Every
// thread scans its contiguous segment in place, publishes the segment's total, then
// combines the totals of the segments before its own (in index order) into a prefix
// and applies it to its segment. The result is read back in the tile's layout. As for
// reductions, index order is kept everywhere, so associative custom combiners give the
// interpreter's result.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

namespace kiln::codegen::detail {

void Lowering::lowerScan(const ir::Op &op) {
  const Type &t = op.operand(0)->type;
  const Type elem = t.element();
  const ReduceKind kind = reduceKindOf(op);
  const ir::Block *region = op.numRegions() ? op.region(0) : nullptr;
  const ScratchPlan plan = scratchPlan(op);
  llvm::Type *sty = sharedType(elem);
  const int64_t data = plan.offsets[0], totals = plan.offsets[1];
  auto at = [&](const LineGeometry &geo, llvm::Value *line, llvm::Value *l) {
    return lineElement(*this, geo, line, l);
  };
  auto read = [&](llvm::Value *idx) { return fromShared(loadShared(sty, data, idx), elem); };
  auto write = [&](llvm::Value *v, llvm::Value *idx) { storeShared(toShared(v, elem), data, idx); };
  auto comb = [&](llvm::Value *a, llvm::Value *x) { return combine(kind, t.dtype, a, x, region); };

  beginSharedUse();
  storeTileToShared(get(op.operand(0)), t, data);
  sharedWritten();
  const LineGeometry geo = lineGeometry(*this, t.shape, op.intAttr("axis"));

  // Scans [begin, end) of `line` in place; returns the segment's total.
  auto scanSegment = [&](llvm::Value *line, llvm::Value *begin, llvm::Value *end) {
    llvm::Value *first = read(at(geo, line, begin));
    return loop(b.CreateAdd(begin, i32(1)), end, 1, {first},
                [&](llvm::Value *l, const Values &cur) {
                  llvm::Value *idx = at(geo, line, l);
                  llvm::Value *acc = comb(cur[0], read(idx));
                  write(acc, idx);
                  return Values{acc};
                })[0];
  };

  if (geo.split.group == 1) {
    loop(tid, i32(geo.split.lines), T, {}, [&](llvm::Value *line, const Values &) {
      scanSegment(line, i32(0), i32(geo.split.length));
      return Values{};
    });
  } else {
    // Threads of a group beyond the last line have nothing to do; they must not write.
    llvm::Value *total = guarded(
        geo.active, [&] { return Values{scanSegment(geo.line, geo.begin, geo.end)}; },
        {llvm::PoisonValue::get(regType(elem))})[0];
    storeShared(toShared(total, elem), totals, tid);
    barrier();
    llvm::Value *leader = b.CreateSub(tid, geo.g);
    llvm::Value *needsPrefix = b.CreateICmpNE(geo.g, i32(0));
    if (geo.active)
      needsPrefix = b.CreateAnd(needsPrefix, geo.active);
    guardedVoid(needsPrefix, [&] {
      llvm::Value *first = fromShared(loadShared(sty, totals, leader), elem);
      llvm::Value *prefix =
          loop(i32(1), geo.g, 1, {first}, [&](llvm::Value *j, const Values &cur) {
            llvm::Value *x = fromShared(loadShared(sty, totals, b.CreateAdd(leader, j)), elem);
            return Values{comb(cur[0], x)};
          })[0];
      loop(geo.begin, geo.end, 1, {}, [&](llvm::Value *l, const Values &) {
        llvm::Value *idx = at(geo, geo.line, l);
        write(comb(prefix, read(idx)), idx);
        return Values{};
      });
    });
  }
  sharedWritten();
  set(op.result(), gatherFromShared(elem, op.result()->type, data, [](llvm::Value *e) { return e; }));
}

} // namespace kiln::codegen::detail
