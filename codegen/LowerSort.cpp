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

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

llvm::Value *Lowering::sortsBefore(const Type &elem, bool descending, int64_t len, llvm::Value *a,
                                   llvm::Value *ia, llvm::Value *c, llvm::Value *ic) {
  llvm::Value *lowerIdx = b.CreateICmpULT(ia, ic);
  llvm::Value *first = descending ? emitCmp("gt", elem, a, c) : emitCmp("lt", elem, a, c);
  llvm::Value *r = b.CreateOr(first, b.CreateAnd(emitCmp("eq", elem, a, c), lowerIdx));
  if (!elem.pointer && isFloat(elem.dtype)) {
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
}

/// The topk / argtopk of the same operand, k and axis as `op`, later in its block.
static const ir::Op *topKSibling(const ir::Op &op) {
  const OpKind other = op.kind() == OpKind::TopK ? OpKind::ArgTopK : OpKind::TopK;
  const ir::Block *block = op.parentBlock();
  bool after = false;
  for (const auto &candidate : block->ops()) {
    if (candidate.get() == &op) {
      after = true;
      continue;
    }
    if (after && candidate->kind() == other && candidate->operand(0) == op.operand(0) &&
        candidate->intAttr("k") == op.intAttr("k") && candidate->intAttr("axis") == op.intAttr("axis"))
      return candidate.get();
  }
  return nullptr;
}

/// A line's candidates as one lane holds them: (value, position along the line) pairs;
/// a position of `len` or more is no candidate.
using Candidates = std::vector<std::pair<llvm::Value *, llvm::Value *>>;

/// An i32 whose unsigned order is sorting's descending order of `v` (a value of at most
/// 32 bits): larger values higher, -0 equal to +0, NaN below every number.
static llvm::Value *orderedBits(Lowering &L, llvm::Value *v, const Type &elem) {
  auto &b = L.b;
  if (!isFloat(elem.dtype)) {
    if (!isSigned(elem.dtype))
      return b.CreateZExt(v, b.getInt32Ty());
    return b.CreateXor(b.CreateSExt(v, b.getInt32Ty()), L.i32(0x80000000u));
  }
  llvm::Value *f = v->getType()->isFloatTy() ? v : b.CreateFPExt(v, b.getFloatTy()); // exact
  f = b.CreateFAdd(f, llvm::ConstantFP::get(b.getFloatTy(), 0.0)); // -0 + 0 = +0
  llvm::Value *bits = b.CreateBitCast(f, b.getInt32Ty());
  // Negative numbers flip every bit, the others only the sign: one shift and one xor.
  llvm::Value *flip = b.CreateOr(b.CreateAShr(bits, L.i32(31)), L.i32(0x80000000u));
  return b.CreateSelect(b.CreateFCmpUNO(f, f), L.i32(0), b.CreateXor(bits, flip));
}

/// The comparators (i, j), i < j, of Batcher's odd-even merge sort of n elements; after
/// them, in order, every element is at least the next when each comparator puts the
/// larger of its two first. Comparators past n are dropped: the missing elements would be
/// the smallest, at the end, and never move.
static std::vector<std::pair<size_t, size_t>> mergeSortNetwork(size_t n) {
  size_t padded = 1;
  while (padded < n)
    padded *= 2;
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t p = 1; p < padded; p *= 2)
    for (size_t k = p; k >= 1; k /= 2)
      for (size_t j = k % p; j + k < padded; j += 2 * k)
        for (size_t i = 0; i < std::min(k, padded - j - k); ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p) && i + j + k < n)
            out.emplace_back(i + j, i + j + k);
  return out;
}

void Lowering::topKRounds(const Type &elem, int64_t k, int64_t len, int64_t group, const Candidates &mine,
                          bool carryValues, const RoundWinner &emit) {
  if (dtypeBits(elem.dtype) <= 32) {
    // Each candidate as a pair of words (rank, slot): rank = orderedBits(value), slot =
    // ~position, and (0, 0) for no candidate. Pairs in lexicographic order are sorting's
    // order (ties to the lower position) and no candidate is below every one. A comparator
    // compares the pairs as one u64 but moves the words by that one condition: selects
    // of a u64 key itself become a max and a min, which ptxas expands into a compare each.
    // The lane sorts its pairs once (a merge network), so its best is always its first:
    // a round is a butterfly over the group's first ranks, and the lane that holds the
    // winner writes it and moves its list up by one.
    std::vector<llvm::Value *> ranks, slots, values;
    llvm::Value *zero = i32(0);
    for (const auto &[v, pos] : mine) {
      llvm::Value *real = b.CreateICmpULT(pos, i32(len));
      ranks.push_back(b.CreateSelect(real, orderedBits(*this, v, elem), zero));
      slots.push_back(b.CreateSelect(real, b.CreateNot(pos), zero));
      values.push_back(v);
    }
    auto pair = [&](size_t e) {
      llvm::Type *i64t = b.getInt64Ty();
      return b.CreateOr(b.CreateShl(b.CreateZExt(ranks[e], i64t), 32), b.CreateZExt(slots[e], i64t));
    };
    for (const auto &[i, j] : mergeSortNetwork(ranks.size())) {
      llvm::Value *swap = b.CreateICmpULT(pair(i), pair(j));
      auto exchange = [&](std::vector<llvm::Value *> &w) {
        llvm::Value *wi = w[i];
        w[i] = b.CreateSelect(swap, w[j], wi);
        w[j] = b.CreateSelect(swap, wi, w[j]);
      };
      exchange(ranks);
      exchange(slots);
      if (carryValues)
        exchange(values);
    }
    // The lanes hold the line in order, so among the heads that share the best rank the
    // lowest lane's has the lowest position (each lane's list is sorted): a round takes
    // the maximum of the ranks over the group and a ballot of the lanes that hold it; the
    // winner is the one with no holder below it in its group. A whole warp's maximum is
    // one redux.sync (sm_80 on); a smaller group's is a butterfly, because redux.sync
    // gives one warp-wide result and ptxas loops over the groups of a partial mask.
    llvm::Value *below = nullptr; // this lane's group's lanes below it, as a lane mask
    if (group > 1) {
      kiln_assert(hasWarpShuffle(), "a top-k group of several lanes needs warp shuffles");
      llvm::Value *lane = b.CreateAnd(tid, i32(31));
      llvm::Value *groupBase = b.CreateAnd(lane, i32(~(group - 1) & 31));
      below = b.CreateSub(b.CreateShl(i32(1), lane), b.CreateShl(i32(1), groupBase));
    }
    for (int64_t r = 0; r < k; ++r) {
      llvm::Value *present = b.CreateICmpNE(slots[0], zero);
      llvm::Value *owns = present;
      if (group > 1) {
        llvm::Value *best = ranks[0];
        if (group == 32) {
          best = b.CreateIntrinsic(llvm::Intrinsic::nvvm_redux_sync_umax, {}, {best, b.getInt32(0xFFFFFFFFu)});
        } else {
          for (int64_t s = 1; s < group; s *= 2)
            best = b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, best, shuffleXor(best, s));
        }
        llvm::Value *holds = b.CreateAnd(b.CreateICmpEQ(ranks[0], best), present);
        llvm::Value *ballot = b.CreateIntrinsic(llvm::Intrinsic::nvvm_vote_ballot_sync, {},
                                                {b.getInt32(0xFFFFFFFFu), holds});
        owns = b.CreateAnd(holds, b.CreateICmpEQ(b.CreateAnd(ballot, below), zero));
      }
      emit(r, owns, carryValues ? values[0] : nullptr, b.CreateNot(slots[0]));
      // A lane gives at most k - r - 1 more winners: the list beyond that is not needed.
      const size_t live = std::min<size_t>(ranks.size(), static_cast<size_t>(k - r));
      for (size_t j = 0; j + 1 < live; ++j) {
        ranks[j] = b.CreateSelect(owns, ranks[j + 1], ranks[j]);
        slots[j] = b.CreateSelect(owns, slots[j + 1], slots[j]);
        if (carryValues)
          values[j] = b.CreateSelect(owns, values[j + 1], values[j]);
      }
      ranks[live - 1] = b.CreateSelect(owns, zero, ranks[live - 1]);
      slots[live - 1] = b.CreateSelect(owns, zero, slots[live - 1]);
      ranks.resize(live);
      slots.resize(live);
      values.resize(live);
    }
    return;
  }
  // 64-bit values: (value, position) pairs compared by sortsBefore; the group's first
  // lane writes the winner.
  llvm::Value *none = i32(len);
  llvm::Value *leader = b.CreateICmpEQ(b.CreateAnd(tid, i32(group - 1)), i32(0));
  std::vector<llvm::Value *> taken(mine.size(), b.getFalse());
  for (int64_t r = 0; r < k; ++r) {
    llvm::Value *bv = mine[0].first, *bi = none;
    for (size_t j = 0; j < mine.size(); ++j) {
      llvm::Value *i = b.CreateSelect(taken[j], none, mine[j].second);
      llvm::Value *better = sortsBefore(elem, true, len, mine[j].first, i, bv, bi);
      bv = b.CreateSelect(better, mine[j].first, bv);
      bi = b.CreateSelect(better, i, bi);
    }
    for (int64_t s = 1; s < group; s *= 2) {
      llvm::Value *ov = shuffleXor(bv, s), *oi = shuffleXor(bi, s);
      llvm::Value *better = sortsBefore(elem, true, len, ov, oi, bv, bi);
      bv = b.CreateSelect(better, ov, bv);
      bi = b.CreateSelect(better, oi, bi);
    }
    for (size_t j = 0; j < mine.size(); ++j)
      taken[j] = b.CreateOr(taken[j], b.CreateICmpEQ(bi, mine[j].second));
    emit(r, leader, carryValues ? bv : nullptr, bi);
  }
}

bool Lowering::lowerTopKByRounds(const ir::Op &op) {
  const Type &t = op.operand(0)->type;
  const int64_t k = op.intAttr("k"), axis = op.intAttr("axis");
  if (t.isScalar() || t.pointer || t.dtype == DType::Bool || k > 16)
    return false;
  const Type elem = t.element();
  const Layout l = layoutOf(t);
  const int64_t len = t.shape[axis];
  const ScratchPlan plan = scratchPlan(op);
  const int64_t tileAt = plan.offsets[0], valuesAt = plan.offsets[1], indicesAt = plan.offsets[2];
  // The winner's value comes from `valueOf`, called only on the lane that writes.
  auto writeWinner = [&](llvm::Value *line, llvm::Value *writer, int64_t r,
                         const std::function<llvm::Value *()> &valueOf, llvm::Value *i) {
    llvm::Value *slot = b.CreateAdd(b.CreateMul(line, i32(k)), i32(r));
    guardedVoid(writer, [&] {
      storeShared(toShared(valueOf(), elem), valuesAt, slot);
      storeShared(i, indicesAt, slot);
    });
  };

  // About eight candidates per lane: a round costs a scan of the lane's candidates and a
  // butterfly over the line's lanes, so fewer, fuller lanes do less work in all (a line
  // of 64 takes 8 lanes x 8, not 16 x 4) and give each lane independent work.
  const int64_t wanted = std::min<int64_t>(8, len);
  const bool lastAxis = axis == static_cast<int64_t>(t.rank()) - 1;
  const int64_t chunksPerLine = len % l.vec == 0 ? len / l.vec : 0;
  if (lastAxis && chunksPerLine && chunksPerLine <= 32 && T % chunksPerLine == 0 && l.vec >= wanted &&
      (hasWarpShuffle() || chunksPerLine == 1)) {
    // Registers: each register round holds whole lines, one per aligned group of
    // chunksPerLine lanes, each lane `vec` consecutive elements of it.
    const Regs &x = get(op.operand(0));
    const int64_t group = chunksPerLine;
    llvm::Value *first = b.CreateMul(b.CreateAnd(tid, i32(group - 1)), i32(l.vec));
    beginSharedUse();
    for (int64_t round = 0; round < l.numRounds(); ++round) {
      Candidates mine;
      for (int64_t j = 0; j < l.vec; ++j)
        mine.push_back({x.v[round * l.vec + j], b.CreateAdd(first, i32(j))});
      llvm::Value *line = b.CreateUDiv(b.CreateAdd(tid, i32(round * T)), i32(group));
      llvm::Value *valid = roundValid(l, round);
      topKRounds(elem, k, len, group, mine, /*carryValues=*/true,
                 [&](int64_t r, llvm::Value *writer, llvm::Value *v, llvm::Value *i) {
                   writeWinner(line, valid ? b.CreateAnd(writer, valid) : writer, r, [v] { return v; }, i);
                 });
    }
  } else {
    // Shared memory: the tile goes there in row-major order, and groups of up to a
    // warp's lanes take a line each, lane g the positions g * perLane, g * perLane + 1,
    // ... (read as 16-byte vectors where the line is contiguous and splits evenly).
    const int64_t group = std::min<int64_t>(32, nextPowerOf2((len + wanted - 1) / wanted));
    const int64_t perLane = (len + group - 1) / group, linesPerPass = T / group;
    LineGeometry geo;
    geo.split.lines = t.numElements() / len;
    geo.split.length = len;
    geo.inner = rowMajorStrides(t.shape)[axis];
    const int64_t passes = (geo.split.lines + linesPerPass - 1) / linesPerPass;
    if (perLane > 16 || passes > 16 || linesPerPass == 0 || (!hasWarpShuffle() && group > 1))
      return false;
    beginSharedUse();
    storeTileToShared(get(op.operand(0)), t, tileAt);
    sharedWritten();
    llvm::Type *sty = sharedType(elem);
    llvm::Value *g = b.CreateAnd(tid, i32(group - 1));
    // Whole 16-byte pieces: contiguous lines that the lanes split exactly, 4-byte
    // elements, every line starting 16-byte aligned.
    const bool vectorReads = geo.inner == 1 && group * perLane == len && perLane % 4 == 0 &&
                             sharedElementBytes(elem) == 4 && len % 4 == 0 && tileAt % 16 == 0;
    for (int64_t pass = 0; pass < passes; ++pass) {
      llvm::Value *line = b.CreateAdd(i32(pass * linesPerPass), b.CreateLShr(tid, i32(__builtin_ctzll(group))));
      llvm::Value *active = b.CreateICmpULT(line, i32(geo.split.lines));
      llvm::Value *safeLine = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, line, i32(geo.split.lines - 1));
      Candidates mine;
      llvm::Value *segment = b.CreateMul(g, i32(perLane));
      if (vectorReads) {
        llvm::Value *start = lineElement(*this, geo, safeLine, segment);
        auto *vty = llvm::FixedVectorType::get(sty, 4);
        for (int64_t j = 0; j < perLane; j += 4) {
          llvm::Value *at = sharedAddr(tileAt, b.CreateAdd(start, i32(j)), sty);
          llvm::Value *vec = b.CreateAlignedLoad(vty, at, llvm::Align(16));
          for (int64_t q = 0; q < 4; ++q)
            mine.push_back({fromShared(b.CreateExtractElement(vec, q), elem),
                            b.CreateAdd(segment, i32(j + q))});
        }
      } else {
        for (int64_t j = 0; j < perLane; ++j) {
          llvm::Value *pos = b.CreateAdd(segment, i32(j));
          llvm::Value *inLine = b.CreateICmpULT(pos, i32(len));
          llvm::Value *at = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, pos, i32(len - 1));
          llvm::Value *v = fromShared(loadShared(sty, tileAt, lineElement(*this, geo, safeLine, at)), elem);
          mine.push_back({v, b.CreateSelect(inLine, pos, i32(len))});
        }
      }
      // The values stay in the shared tile: the writer reads its winner's from there.
      auto winnerValue = [&](llvm::Value *i) {
        return fromShared(loadShared(sty, tileAt, lineElement(*this, geo, safeLine, i)), elem);
      };
      topKRounds(elem, k, len, group, mine, /*carryValues=*/false,
                 [&](int64_t r, llvm::Value *writer, llvm::Value *, llvm::Value *i) {
                   writeWinner(line, b.CreateAnd(writer, active), r, [&] { return winnerValue(i); }, i);
                 });
    }
    sharedRead();
  }
  sharedWritten();
  // Line (o, i) around the axis wrote its winners at (o, i) * k + r; result element
  // (o, r, i) reads them.
  const int64_t inner = rowMajorStrides(t.shape)[axis];
  auto slotOf = [&, inner](llvm::Value *e) -> llvm::Value * {
    if (inner == 1)
      return e;
    llvm::Value *i = b.CreateURem(e, i32(inner));
    llvm::Value *rest = b.CreateUDiv(e, i32(inner));
    llvm::Value *r = b.CreateURem(rest, i32(k));
    llvm::Value *o = b.CreateUDiv(rest, i32(k));
    return b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, i32(inner)), i), i32(k)), r);
  };
  auto read = [&](const ir::Op &o) {
    const bool indices = o.kind() == OpKind::ArgTopK;
    set(o.result(), gatherFromShared(indices ? Type::scalar(DType::I32) : elem, o.result()->type,
                                     indices ? indicesAt : valuesAt, slotOf));
  };
  read(op);
  if (const ir::Op *sibling = topKSibling(op)) {
    read(*sibling);
    loweredWithSibling.insert(sibling);
  }
  return true;
}

void Lowering::lowerSort(const ir::Op &op) {
  if (loweredWithSibling.count(&op))
    return;
  if (op.kind() != OpKind::Sort && lowerTopKByRounds(op))
    return;
  const Type &t = op.operand(0)->type;
  const Type elem = t.element();
  const Type &rt = op.result()->type;
  const int64_t ax = op.intAttr("axis");
  const bool descending = op.kind() == OpKind::Sort ? op.boolAttr("descending") : true;
  const ScratchPlan plan = scratchPlan(op);
  const int64_t data = plan.offsets[0], keys = plan.offsets[1], idxs = plan.offsets[2];
  llvm::Type *sty = sharedType(elem);

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
    return sortsBefore(elem, descending, len, fromShared(va, elem), ia, fromShared(vc, elem), ic);
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
