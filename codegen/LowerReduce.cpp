//===- LowerReduce.cpp - reduce, argmax and argmin ------------------------===//
//
// A reduction along an axis sees the tile as `lines` independent lines of `length`
// elements. The tile goes to shared memory in row-major order; then each line gets a
// group of threads (LineSplit): every thread combines one contiguous segment of its
// line in index order, the group combines the segment results in index order (warp
// shuffles on NVPTX, a tree in shared memory on SPIR-V, whose OpenCL 1.2 devices lack
// sub-group operations), and one thread per line writes the line's result, which is
// read back in the result's layout.
//
// A float max or min to a scalar first combines with the hardware's max/min, which
// differs from the exact combination only in the sign of a zero result; only then is the
// exact combination run again.
//
// Because segments and combining steps keep index order, a custom combiner that is
// associative gives the interpreter's result; sums and products of floats differ only
// by reassociation. max/min (NaN-ignoring, -0 < +0) and argmax/argmin (lowest index on
// ties, NaN skipped) are associative and commutative, hence exact.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

namespace kiln::codegen::detail {

/// Flat index of element `l` of line `line` for a tile viewed as [outer, length, inner].
llvm::Value *lineElement(Lowering &L, const LineGeometry &geo, llvm::Value *line,
                                llvm::Value *l) {
  auto &b = L.b;
  if (geo.inner == 1)
    return b.CreateAdd(b.CreateMul(line, L.i32(geo.split.length)), l);
  llvm::Value *o = b.CreateUDiv(line, L.i32(geo.inner));
  llvm::Value *i = b.CreateURem(line, L.i32(geo.inner));
  llvm::Value *row = b.CreateAdd(b.CreateMul(o, L.i32(geo.split.length)), l);
  return b.CreateAdd(b.CreateMul(row, L.i32(geo.inner)), i);
}

LineGeometry lineGeometry(Lowering &L, const Shape &shape, int64_t axis) {
  LineGeometry geo;
  int64_t lines = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) > axis)
      geo.inner *= shape[d];
    if (static_cast<int64_t>(d) != axis)
      lines *= shape[d];
  }
  geo.split = LineSplit::make(lines, shape[axis], L.T);
  auto &b = L.b;
  const int64_t G = geo.split.group;
  if (G == 1)
    return geo; // threads walk whole lines
  llvm::Value *line = b.CreateLShr(L.tid, L.i32(__builtin_ctzll(G)));
  if (geo.split.lines * G < L.T) {
    geo.active = b.CreateICmpULT(line, L.i32(geo.split.lines));
    line = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, line, L.i32(geo.split.lines - 1));
  }
  geo.line = line;
  geo.g = b.CreateAnd(L.tid, L.i32(G - 1));
  // Segment bounds g * length / G in 64 bits (the product may not fit 32).
  auto bound = [&](llvm::Value *k) {
    llvm::Value *p = b.CreateMul(b.CreateZExt(k, b.getInt64Ty()), L.i64(geo.split.length));
    return b.CreateTrunc(b.CreateLShr(p, L.i64(__builtin_ctzll(G))), b.getInt32Ty());
  };
  geo.begin = bound(geo.g);
  geo.end = bound(b.CreateAdd(geo.g, L.i32(1)));
  return geo;
}

Values Lowering::combineGroup(const Values &partial, int64_t group, int64_t scratchOffset,
                              const std::vector<llvm::Type *> &sharedTypes,
                              const std::function<Values(const Values &, const Values &)> &fn) {
  if (group == 1)
    return partial;
  Values cur = partial;
  // Left/right order: the lower thread's value is always the left operand.
  auto step = [&](const Values &self, const Values &other, llvm::Value *selfIsLeft) {
    Values left, right;
    for (size_t c = 0; c < self.size(); ++c) {
      left.push_back(b.CreateSelect(selfIsLeft, self[c], other[c]));
      right.push_back(b.CreateSelect(selfIsLeft, other[c], self[c]));
    }
    return fn(left, right);
  };
  // Component c of the partials lives in its own area (partialAreaBytes).
  auto sizeOf = [&](llvm::Type *ty) {
    return static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  };
  auto bytesOf = [&](llvm::Type *ty, int64_t count) { return (count * sizeOf(ty) + 15) / 16 * 16; };
  std::vector<int64_t> offsets, areaBytes;
  {
    int64_t at = scratchOffset;
    for (llvm::Type *ty : sharedTypes) {
      offsets.push_back(at);
      areaBytes.push_back(partialAreaBytes(sizeOf(ty), T, hasWarpShuffle()));
      at += areaBytes.back();
    }
  }
  auto toS = [&](llvm::Value *v, llvm::Type *ty) -> llvm::Value * {
    return v->getType() == ty ? v : b.CreateZExt(v, ty);
  };
  auto fromS = [&](llvm::Value *v, llvm::Type *regTy) -> llvm::Value * {
    return v->getType() == regTy ? v : b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  };

  if (hasWarpShuffle()) {
    const int64_t inWarp = std::min<int64_t>(group, 32);
    for (int64_t s = 1; s < inWarp; s *= 2) {
      Values other;
      for (llvm::Value *v : cur)
        other.push_back(shuffleXor(v, s));
      cur = step(cur, other, b.CreateICmpEQ(b.CreateAnd(tid, i32(s)), i32(0)));
    }
    if (group <= 32)
      return cur;
    // Across warps: lane 0 of each warp publishes its warp's total; every thread then
    // combines the totals of its group's warps in order. The totals of the T / 32 warps
    // fill a fraction of each component's array, which therefore holds two slots: when
    // the previous combine (the max before a softmax's sum, say) still reads one, this
    // one writes the other and needs no barrier before its writes, only the one after.
    std::vector<int64_t> slotBytes;
    bool twoSlots = true;
    for (size_t c = 0; c < sharedTypes.size(); ++c) {
      slotBytes.push_back(bytesOf(sharedTypes[c], T / 32));
      twoSlots = twoSlots && 2 * slotBytes.back() <= areaBytes[c];
    }
    auto slotSpan = [&](int64_t slot) {
      ArenaUse span;
      for (size_t c = 0; c < offsets.size(); ++c)
        span.add(offsets[c] + slot * slotBytes[c], offsets[c] + (slot + 1) * slotBytes[c]);
      return span;
    };
    const ArenaUse slot0 = slotSpan(0), slot1 = slotSpan(1);
    const int64_t slot = twoSlots && arenaInUse.overlaps(slot0.begin, slot0.end) &&
                                 !arenaInUse.overlaps(slot1.begin, slot1.end)
                             ? 1
                             : 0;
    const ArenaUse span = slot ? slot1 : slot0;
    for (size_t c = 0; c < offsets.size(); ++c)
      offsets[c] += slot * slotBytes[c];
    beginSharedUse(span.begin, span.end);
    guardedVoid(b.CreateICmpEQ(b.CreateAnd(tid, i32(31)), i32(0)), [&] {
      llvm::Value *warp = b.CreateLShr(tid, i32(5));
      for (size_t c = 0; c < cur.size(); ++c)
        storeShared(toS(cur[c], sharedTypes[c]), offsets[c], warp);
    });
    barrier();
    const int64_t warps = group / 32;
    llvm::Value *first = b.CreateMul(b.CreateLShr(tid, i32(__builtin_ctzll(group))), i32(warps));
    Values acc;
    for (int64_t w = 0; w < warps; ++w) {
      llvm::Value *idx = b.CreateAdd(first, i32(w));
      Values got;
      for (size_t c = 0; c < cur.size(); ++c)
        got.push_back(fromS(loadShared(sharedTypes[c], offsets[c], idx), cur[c]->getType()));
      acc = w == 0 ? got : fn(acc, got);
    }
    sharedRead(span.begin, span.end);
    return acc;
  }

  // Shared-memory tree: after the step of stride s, thread g (a multiple of 2s) holds
  // the combination of threads g .. g + 2s - 1.
  beginSharedUse();
  for (size_t c = 0; c < cur.size(); ++c)
    storeShared(toS(cur[c], sharedTypes[c]), offsets[c], tid);
  barrier();
  llvm::Value *g = b.CreateAnd(tid, i32(group - 1));
  for (int64_t s = 1; s < group; s *= 2) {
    llvm::Value *mine = b.CreateICmpEQ(b.CreateAnd(g, i32(2 * s - 1)), i32(0));
    guardedVoid(mine, [&] {
      llvm::Value *peer = b.CreateAdd(tid, i32(s));
      Values left, right;
      for (size_t c = 0; c < cur.size(); ++c) {
        left.push_back(fromS(loadShared(sharedTypes[c], offsets[c], tid), cur[c]->getType()));
        right.push_back(fromS(loadShared(sharedTypes[c], offsets[c], peer), cur[c]->getType()));
      }
      Values r = fn(left, right);
      for (size_t c = 0; c < cur.size(); ++c)
        storeShared(toS(r[c], sharedTypes[c]), offsets[c], tid);
    });
    barrier();
  }
  llvm::Value *leader = b.CreateSub(tid, g);
  Values total;
  for (size_t c = 0; c < cur.size(); ++c)
    total.push_back(fromS(loadShared(sharedTypes[c], offsets[c], leader), cur[c]->getType()));
  sharedRead();
  return total;
}

/// Runs `segment(line, begin, end)` -> partial for this thread's share of the lines,
/// combines partials per line and writes each line's result with `write(line, value)`.
static void forEachLine(Lowering &L, const LineGeometry &geo, int64_t partialsOffset,
                        const std::vector<llvm::Type *> &sharedTypes,
                        const std::function<Values(llvm::Value *, llvm::Value *, llvm::Value *)> &segment,
                        const std::function<Values(const Values &, const Values &)> &fn,
                        const std::function<void(llvm::Value *, const Values &)> &write) {
  if (geo.split.group == 1) {
    // At least as many lines as threads: each thread walks lines tid, tid + T, ...
    L.loop(L.tid, L.i32(geo.split.lines), L.T, {}, [&](llvm::Value *line, const Values &) {
      write(line, segment(line, L.i32(0), L.i32(geo.split.length)));
      return Values{};
    });
    return;
  }
  Values partial = segment(geo.line, geo.begin, geo.end);
  Values total = L.combineGroup(partial, geo.split.group, partialsOffset, sharedTypes, fn);
  llvm::Value *leader = L.b.CreateICmpEQ(geo.g, L.i32(0));
  L.guardedVoid(leader, [&] { write(geo.line, total); });
}

bool Lowering::holdLineTotals(const ir::Op &op, const Layout &l, const std::function<llvm::Value *(int64_t)> &total) {
  // A thread's register of a round without an element holds a copy of the tile's last
  // element (its index is clamped), and stores of the tile rely on that; a line total
  // there would be the total of no line. So only layouts whose every round is whole.
  for (int64_t round = 0; round < l.numRounds(); ++round)
    if (!l.roundAlwaysValid(round))
      return false;
  LineTotals held{op.operand(0)->type.shape, {}};
  for (int64_t round = 0; round < l.numRounds(); ++round)
    held.perRound.push_back(total(round));
  lineTotals[op.result()] = std::move(held);
  return true;
}

bool Lowering::onlyBroadcastBack(const ir::Op &op) const {
  const Type &t = op.operand(0)->type;
  auto uses = [&](const ir::Value *v) -> const std::vector<const ir::Op *> & {
    static const std::vector<const ir::Op *> none;
    auto it = users.find(v);
    return it == users.end() ? none : it->second;
  };
  if (uses(op.result()).empty())
    return false;
  for (const ir::Op *expand : uses(op.result())) {
    if (expand->kind() != OpKind::ExpandDims || expand->intAttr("axis") != static_cast<int64_t>(t.rank()) - 1 ||
        uses(expand->result()).empty())
      return false;
    for (const ir::Op *use : uses(expand->result()))
      if (use->kind() != OpKind::Broadcast || use->result()->type.shape != t.shape)
        return false;
  }
  return true;
}

/// The register path of reduce / argmax / argmin (reducesInRegisters holds): each thread
/// combines the elements it holds of a line, the threads holding the line combine their
/// partials (combineGroup), and the line totals reach the result's layout directly
/// (a scalar result) or through a small area of shared memory. `element(reg)` is the
/// tuple a register contributes; component `keep` of a total is the result.
static void reduceInRegisters(Lowering &L, const ir::Op &op,
                              const std::vector<llvm::Type *> &sharedTypes,
                              const std::function<Values(int64_t)> &element,
                              const std::function<Values(const Values &, const Values &)> &fn,
                              unsigned keep, const Type &keepType, int64_t partialsOffset,
                              int64_t resultsOffset) {
  auto &b = L.b;
  const Type &t = op.operand(0)->type;
  const Type &rt = op.result()->type;
  const Layout l = L.layoutOf(t);
  const int64_t len = t.shape.back(), cpl = len / l.vec, lines = t.numElements() / len;
  auto storeResult = [&](const Values &total, llvm::Value *line) {
    L.storeShared(L.toShared(total[keep], keepType), resultsOffset, line);
  };
  if (cpl % L.T == 0) {
    // Every line fills whole rounds of all threads: rounds [line * rpl, (line + 1) * rpl).
    const int64_t rpl = cpl / L.T;
    std::vector<Values> totals;
    for (int64_t line = 0; line < lines; ++line) {
      // A thread's elements as a balanced tree (the kinds that reach here are
      // order-free): its levels run in parallel, where a chain in index order would
      // make every combination wait for the one before.
      std::vector<Values> level;
      for (int64_t reg = line * rpl * l.vec; reg < (line + 1) * rpl * l.vec; ++reg)
        level.push_back(element(reg));
      while (level.size() > 1) {
        std::vector<Values> next;
        for (size_t i = 0; i + 1 < level.size(); i += 2)
          next.push_back(fn(level[i], level[i + 1]));
        if (level.size() % 2)
          next.push_back(level.back());
        level = std::move(next);
      }
      totals.push_back(L.combineGroup(level[0], L.T, partialsOffset, sharedTypes, fn));
    }
    if (L.holdLineTotals(op, l, [&](int64_t round) { return totals[round / rpl][keep]; }) && !rt.isScalar() &&
        L.onlyBroadcastBack(op))
      return L.set(op.result(), Regs{Values(L.layoutOf(rt).numRegs(), llvm::PoisonValue::get(L.regType(keepType)))});
    if (rt.isScalar()) // every thread holds the total
      return L.set(op.result(), Regs{{totals[0][keep]}});
    L.beginSharedUse();
    L.guardedVoid(L.isThread0(), [&] {
      for (int64_t line = 0; line < lines; ++line)
        storeResult(totals[line], L.i32(line));
    });
  } else {
    // Aligned groups of `cpl` threads hold one line per round.
    std::vector<std::pair<Values, int64_t>> totals;
    for (int64_t round = 0; round < l.numRounds(); ++round) {
      Values acc;
      for (int64_t j = 0; j < l.vec; ++j)
        acc = acc.empty() ? element(round * l.vec + j) : fn(acc, element(round * l.vec + j));
      totals.push_back({L.combineGroup(acc, cpl, partialsOffset, sharedTypes, fn), round});
    }
    if (L.holdLineTotals(op, l, [&](int64_t round) { return totals[round].first[keep]; }) && L.onlyBroadcastBack(op))
      return L.set(op.result(), Regs{Values(L.layoutOf(rt).numRegs(), llvm::PoisonValue::get(L.regType(keepType)))});
    L.beginSharedUse();
    for (auto &[total, round] : totals) {
      llvm::Value *chunk = b.CreateAdd(L.tid, L.i32(round * L.T));
      llvm::Value *writer = b.CreateICmpEQ(b.CreateAnd(L.tid, L.i32(cpl - 1)), L.i32(0));
      if (llvm::Value *valid = L.roundValid(l, round))
        writer = b.CreateAnd(writer, valid);
      L.guardedVoid(writer, [&] { storeResult(total, b.CreateUDiv(chunk, L.i32(cpl))); });
    }
  }
  L.sharedWritten();
  L.set(op.result(), L.gatherFromShared(keepType, rt, resultsOffset,
                                        [](llvm::Value *e) { return e; }));
}

void Lowering::lowerReduce(const ir::Op &op) {
  const Type &t = op.operand(0)->type;
  const Type &rt = op.result()->type;
  const Type elem = t.element();
  const int64_t axisAttr = op.intAttr("axis");
  const ReduceKind kind = reduceKindOf(op);
  const ir::Block *region = op.numRegions() ? op.region(0) : nullptr;
  const ScratchPlan plan = scratchPlan(op);
  llvm::Type *sty = sharedType(elem);
  auto fn = [&](const Values &a, const Values &c) {
    return Values{combine(kind, t.dtype, a[0], c[0], region)};
  };
  if (reducesInRegisters(op, T, maxVec)) {
    const Regs &x = get(op.operand(0));
    auto inRegisters = [&](const std::function<Values(const Values &, const Values &)> &f) {
      reduceInRegisters(
          *this, op, {sty}, [&](int64_t reg) { return Values{x.v[reg]}; }, f, 0, elem,
          plan.offsets[1], plan.offsets[2]);
      return get(op.result()).v;
    };
    const bool minMax = kind == ReduceKind::Max || kind == ReduceKind::Min;
    if (!(minMax && !t.pointer && isFloat(t.dtype) && rt.isScalar())) {
      inRegisters(fn);
      return;
    }
    // A float max/min to a scalar: the hardware's max/min (NaN ignored, one instruction)
    // gives the exact result unless that result is a zero, whose sign it may get wrong
    // (-0 < +0 here). Every thread holds the scalar, so all take the same branch.
    // PTX's max.f32 orders zeros itself (hardwareMinMax), yet the branch stays there
    // too: without it ptxas hoists the loads after the reduction above it, and the
    // split softmax kernels took 8 more registers and lost a program per SM (0.81-0.92x
    // on the H200); the path it guards runs only for a zero result.
    const bool wantMax = kind == ReduceKind::Max;
    const Values fast = inRegisters([&](const Values &a, const Values &c) {
      return Values{b.CreateBinaryIntrinsic(wantMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum,
                                            a[0], c[0])};
    });
    llvm::Type *fty = fast[0]->getType();
    llvm::Type *bitsTy = b.getIntNTy(fty->getPrimitiveSizeInBits());
    llvm::Value *plusZero = llvm::ConstantFP::get(fty, 0.0);
    llvm::Value *minusZero = llvm::ConstantFP::get(fty, -0.0);
    // The exact result is then the zero of the wanted sign (+0 for max, -0 for min) if
    // any element is that zero, else the other one: an "any" over the elements' bits,
    // which shares no work with the fast combination (so none of it stays live for this
    // rare path). The path starts with a barrier, so that its combination reuses the
    // shared-memory slot the fast one read: past the branch only that slot is in use,
    // and the next reduction (a softmax's sum) writes the other without a barrier.
    llvm::Value *wanted = wantMax ? plusZero : minusZero;
    llvm::Value *wantedBits = b.CreateBitCast(wanted, bitsTy);
    set(op.result(),
        Regs{ifElse(
            b.CreateFCmpOEQ(fast[0], plusZero),
            [&] {
              barrier();
              reduceInRegisters(
                  *this, op, {b.getInt32Ty()},
                  [&](int64_t reg) {
                    llvm::Value *is = b.CreateICmpEQ(b.CreateBitCast(x.v[reg], bitsTy), wantedBits);
                    return Values{b.CreateZExt(is, b.getInt32Ty())};
                  },
                  [&](const Values &a, const Values &c) { return Values{b.CreateOr(a[0], c[0])}; }, 0,
                  Type::scalar(DType::I32), plan.offsets[1], plan.offsets[2]);
              llvm::Value *any = b.CreateICmpNE(get(op.result()).v[0], i32(0));
              return Values{b.CreateSelect(any, wanted, wantMax ? minusZero : plusZero)};
            },
            [&] { return fast; })});
    return;
  }

  beginSharedUse();
  storeTileToShared(get(op.operand(0)), t, plan.offsets[0]);
  sharedWritten();
  const LineGeometry geo = lineGeometry(*this, t.shape, axisAttr);
  forEachLine(
      *this, geo, plan.offsets[1], {sty},
      [&](llvm::Value *line, llvm::Value *begin, llvm::Value *end) {
        llvm::Value *first = fromShared(
            loadShared(sty, plan.offsets[0], lineElement(*this, geo, line, begin)), elem);
        Values acc = loop(b.CreateAdd(begin, i32(1)), end, 1, {first},
                          [&](llvm::Value *l, const Values &cur) {
                            llvm::Value *x = fromShared(
                                loadShared(sty, plan.offsets[0], lineElement(*this, geo, line, l)),
                                elem);
                            return fn(cur, {x});
                          });
        return acc;
      },
      fn, [&](llvm::Value *line, const Values &v) {
        storeShared(toShared(v[0], elem), plan.offsets[2], line);
      });
  sharedWritten();
  set(op.result(), gatherFromShared(elem, rt, plan.offsets[2], [](llvm::Value *e) { return e; }));
}

void Lowering::lowerArgReduce(const ir::Op &op, bool wantMax) {
  const Type &t = op.operand(0)->type;
  const Type &rt = op.result()->type;
  const Type elem = t.element();
  const ScratchPlan plan = scratchPlan(op);
  llvm::Type *sty = sharedType(elem);
  const bool flt = !t.pointer && isFloat(t.dtype);

  // (value, index) pairs: the better value wins, equal values go to the lower index,
  // NaN loses to every number (two NaNs: the lower index). Commutative and associative,
  // so any combining order gives the interpreter's answer.
  auto fn = [&](const Values &a, const Values &c) {
    llvm::Value *va = a[0], *vc = c[0], *ia = a[1], *ic = c[1];
    llvm::Value *better = wantMax ? emitCmp("gt", elem, vc, va) : emitCmp("lt", elem, vc, va);
    llvm::Value *lowerIdx = b.CreateICmpSLT(ic, ia);
    llvm::Value *takeC =
        b.CreateOr(better, b.CreateAnd(emitCmp("eq", elem, vc, va), lowerIdx));
    if (flt) {
      llvm::Value *nanA = b.CreateFCmpUNO(va, va), *nanC = b.CreateFCmpUNO(vc, vc);
      llvm::Value *bothNan = b.CreateAnd(nanA, nanC);
      takeC = b.CreateSelect(bothNan, lowerIdx,
                             b.CreateSelect(nanA, b.getTrue(),
                                            b.CreateSelect(nanC, b.getFalse(), takeC)));
    }
    return Values{b.CreateSelect(takeC, vc, va), b.CreateSelect(takeC, ic, ia)};
  };
  if (reducesInRegisters(op, T, maxVec)) {
    const Regs &x = get(op.operand(0));
    const Layout l = layoutOf(t);
    const int64_t len = t.shape.back();
    return reduceInRegisters(
        *this, op, {sty, b.getInt32Ty()},
        [&](int64_t reg) {
          return Values{x.v[reg], b.CreateURem(elementIndex(l, reg), i32(len))};
        },
        fn, 1, Type::scalar(DType::I32), plan.offsets[1], plan.offsets[3]);
  }

  beginSharedUse();
  storeTileToShared(get(op.operand(0)), t, plan.offsets[0]);
  sharedWritten();
  const LineGeometry geo = lineGeometry(*this, t.shape, op.intAttr("axis"));
  // The scratch plan has separate partial areas for values and indices.
  kiln_assert(plan.offsets[2] - plan.offsets[1] >=
                  partialAreaBytes(static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(sty)),
                                   T, hasWarpShuffle()),
              "codegen: argmax partial areas overlap");
  forEachLine(
      *this, geo, plan.offsets[1], {sty, b.getInt32Ty()},
      [&](llvm::Value *line, llvm::Value *begin, llvm::Value *end) {
        llvm::Value *first = fromShared(
            loadShared(sty, plan.offsets[0], lineElement(*this, geo, line, begin)), elem);
        return loop(b.CreateAdd(begin, i32(1)), end, 1, {first, begin},
                    [&](llvm::Value *l, const Values &cur) {
                      llvm::Value *x = fromShared(
                          loadShared(sty, plan.offsets[0], lineElement(*this, geo, line, l)),
                          elem);
                      return fn(cur, {x, l});
                    });
      },
      fn, [&](llvm::Value *line, const Values &v) { storeShared(v[1], plan.offsets[3], line); });
  sharedWritten();
  set(op.result(), gatherFromShared(Type::scalar(DType::I32), rt, plan.offsets[3],
                                    [](llvm::Value *e) { return e; }));
}

} // namespace kiln::codegen::detail
