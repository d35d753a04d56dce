//===- LowerFragments.cpp - Ops on values in tensor-core fragment order ---===//
//
// The lowering side of FragmentPlan.h. A value the plan keeps in a fragment form has
// its registers in `frags` rather than `vals`: for a Tile, the registers of the dot
// tiling's fragments; for Rows, one register per row the thread holds. Elementwise ops
// on such values work register by register, exactly as on the blocked layout, once
// every operand is in the result's form: a row broadcast reads its row's register, a
// recomputable operand is recomputed at each register's (row, column), and a small
// blocked row vector goes through shared memory.
//
// A row reduction combines the thread's registers of each row, then the four lanes of
// the quad that share the row (shuffles with lane masks 1 and 2): the tiling has one
// warp column, so no row spans warps and no shared memory is needed. Every lane of the
// quad ends with the same bits (each combine is commutative).
//
// Conversions to and from the blocked layout write the tile to shared memory at
// offset 0 and read it back: at most M * N * 4 bytes, which the scratch of the dot that
// set the tiling already reserves.
//
//===----------------------------------------------------------------------===//
#include "codegen/MmaFragments.h"
#include "codegen/Wgmma.h"

namespace kiln::codegen::detail {

using Kind = FragForm::Kind;

MmaLane mmaLane(Lowering &L, const MmaTiling &tl, int64_t M, int64_t N) {
  auto &b = L.b;
  MmaLane m;
  m.warp = b.CreateLShr(L.tid, L.i32(5));
  const int64_t warps = L.T / 32;
  m.writer = tl.active == warps ? nullptr : b.CreateICmpULT(m.warp, L.i32(tl.active));
  llvm::Value *w = tl.active == warps ? m.warp : b.CreateAnd(m.warp, L.i32(tl.active - 1));
  m.lane = b.CreateAnd(L.tid, L.i32(31));
  m.rowBase = b.CreateMul(b.CreateUDiv(w, L.i32(tl.wn)), L.i32(M / tl.wm));
  m.colBase = b.CreateMul(b.CreateURem(w, L.i32(tl.wn)), L.i32(N / tl.wn));
  m.g = b.CreateLShr(m.lane, L.i32(2));
  m.t2 = b.CreateShl(b.CreateAnd(m.lane, L.i32(3)), L.i32(1));
  return m;
}

std::pair<llvm::Value *, llvm::Value *> fragmentCoord(Lowering &L, const MmaTiling &tl,
                                                      const MmaLane &m, int64_t reg) {
  auto &b = L.b;
  const int64_t tile = reg / 4, c = reg % 4, mi = tile / tl.nTiles, ni = tile % tl.nTiles;
  llvm::Value *row = b.CreateAdd(m.rowBase, b.CreateAdd(m.g, L.i32(mi * 16 + (c >= 2 ? 8 : 0))));
  llvm::Value *col = b.CreateAdd(m.colBase, b.CreateAdd(m.t2, L.i32(ni * 8 + (c & 1))));
  return {row, col};
}

llvm::Value *fragmentRow(Lowering &L, const MmaLane &m, int64_t reg) {
  return L.b.CreateAdd(m.rowBase, L.b.CreateAdd(m.g, L.i32(reg / 2 * 16 + reg % 2 * 8)));
}

/// True when `v` reaches a reduction along its rows through elementwise ops alone (at
/// most `depth` of them): the scores of flash attention, whose row max and sum then stay
/// in fragments if every warp holds whole rows.
static bool reducedAlongRows(const Lowering &L, const ir::Value *v, int depth = 8) {
  auto it = L.users.find(v);
  if (it == L.users.end() || depth == 0)
    return false;
  for (const ir::Op *u : it->second) {
    if (u->kind() == OpKind::Reduce && u->numOperands() == 1 && u->intAttr("axis") == 1)
      return true;
    if (fragmentElementwise(u->kind()) && u->result()->type.shape == v->type.shape &&
        reducedAlongRows(L, u->result(), depth - 1))
      return true;
  }
  return false;
}

/// True when `v` is computed elementwise (at most `depth` ops) from the result of a dot
/// that reducedAlongRows: flash attention's probabilities, the A operand of its second
/// product, which reads them from registers when it holds the same rows.
static bool fromRowReducedDot(const Lowering &L, const ir::Value *v, int depth = 8) {
  const ir::Op *def = v->definingOp();
  if (!def || depth == 0)
    return false;
  if (def->kind() == OpKind::Dot)
    return reducedAlongRows(L, def->result());
  if (!fragmentElementwise(def->kind()))
    return false;
  for (const ir::Value *o : def->operands())
    if (o->type.shape == v->type.shape && fromRowReducedDot(L, o, depth - 1))
      return true;
  return false;
}

MmaTiling Lowering::tilingOf(const ir::Op &dot) const {
  const int64_t M = dot.operand(0)->type.shape[0], N = dot.operand(1)->type.shape[1];
  if (dotPath(dot) == DotPath::Wgmma)
    return MmaTiling::rowStrips(N, T / 32);
  const bool wholeRows =
      reducedAlongRows(*this, dot.result()) || fromRowReducedDot(*this, dot.operand(0));
  return MmaTiling::make(M, N, T / 32, wholeRows);
}

std::optional<FragmentPlan::DotFacts> Lowering::dotFacts(const ir::Op &dot) const {
  if (!useTensorCores(dot) || dot.result()->type.dtype != DType::F32)
    return std::nullopt;
  const MmaTiling t = tilingOf(dot);
  if (t.active != T / 32)
    return std::nullopt;
  // B staged K-major ([N, K]) takes N * (K + pad) elements with mma.sync's padded rows,
  // more than the K * (N + pad) of its area when N > K; wgmma's swizzled tiles are the
  // same size either way.
  const int64_t K = dot.operand(0)->type.shape[1], N = dot.operand(1)->type.shape[1];
  const bool wgmma = dotPath(dot) == DotPath::Wgmma;
  return FragmentPlan::DotFacts{t, wgmma || N <= K, wgmma, opts.checked};
}

Regs &Lowering::getFrag(const ir::Value *v) {
  auto it = frags.find(v);
  kiln_assert(it != frags.end(), "codegen: fragments used before they were lowered");
  return it->second;
}

/// Flat index (i32), in the shape of a value of form `f`, of the element that register
/// `reg` holds: row * N + column for a Tile, the row for Rows ([M] or [M, 1]).
static llvm::Value *elementOfRegister(Lowering &L, const FragForm &f, const MmaLane &m,
                                      int64_t reg) {
  if (f.kind == Kind::Rows)
    return fragmentRow(L, m, reg);
  auto [row, col] = fragmentCoord(L, f.tiling, m, reg);
  return L.b.CreateAdd(L.b.CreateMul(row, L.i32(f.N)), col);
}

Regs Lowering::fragmentsOf(const ir::Value *v, const FragForm &f) {
  const FragForm &vf = fragPlan.formOf(v);
  if (vf.holdsRegisters()) {
    kiln_assert(vf == f, "codegen: fragments of another tiling");
    return getFrag(v);
  }
  Regs out;
  if (vf.kind == Kind::RowBroadcast) {
    const Regs &rows = getFrag(v->definingOp()->operand(0));
    for (int64_t reg = 0; reg < f.numRegs(); ++reg)
      out.v.push_back(rows.v[f.tiling.rowRegOf(reg)]);
    return out;
  }
  int budget = kRecomputeBudget;
  if (!canRematerialize(v, budget, /*scalarsLowered=*/true, Recompute::ReadOnlyLoads))
    return blockedToFragments(v, f);
  const MmaLane m = mmaLane(*this, f.tiling, f.M, f.N);
  for (int64_t reg = 0; reg < f.numRegs(); ++reg)
    out.v.push_back(rematerialize(v, elementOfRegister(*this, f, m, reg)));
  return out;
}

/// A 16-bit [M, K] tile from the blocked layout into the packed A fragments of its
/// dots: written to shared memory as 16-bit values, then each thread reads, for every
/// 16 of K and row of tiles, rows g and g + 8 at columns 2t and 2t + 8 as 32-bit pairs
/// (the order aFragmentsFromRegisters gives a Tile's registers).
static Regs blockedToAOperand(Lowering &L, const ir::Value *v, const FragForm &f) {
  auto &b = L.b;
  const Type &t = v->type;
  const Layout l = L.layoutOf(t);
  const Regs &blocked = L.get(v);
  const int64_t K = t.shape[1];
  L.beginSharedUse();
  for (int64_t reg = 0; reg < l.numRegs(); ++reg)
    L.storeShared(L.encodeNarrow(t.dtype, blocked.v[reg], false), 0, L.elementIndex(l, reg));
  L.sharedWritten();
  const MmaLane m = mmaLane(L, f.tiling, f.M, K);
  Regs out;
  for (int64_t ks = 0; ks < K / 16; ++ks)
    for (int64_t mi = 0; mi < f.tiling.mTiles; ++mi) {
      llvm::Value *row = b.CreateAdd(m.rowBase, b.CreateAdd(m.g, L.i32(mi * 16)));
      for (int64_t half : {0, 8})
        for (int64_t dr : {0, 8}) {
          llvm::Value *col = b.CreateAdd(m.t2, L.i32(ks * 16 + half));
          llvm::Value *e = b.CreateAdd(b.CreateMul(b.CreateAdd(row, L.i32(dr)), L.i32(K)), col);
          out.v.push_back(L.loadShared(b.getInt32Ty(), 0, b.CreateLShr(e, L.i32(1))));
        }
    }
  L.sharedRead();
  return out;
}

Regs Lowering::blockedToFragments(const ir::Value *v, const FragForm &f) {
  if (f.kind == Kind::AOperand)
    return blockedToAOperand(*this, v, f);
  const Regs &blocked = get(v);
  // A splat constant (zeros, -inf) is the same in any order.
  if (auto *c = llvm::dyn_cast<llvm::Constant>(blocked.v[0]))
    if (std::all_of(blocked.v.begin(), blocked.v.end(), [&](llvm::Value *x) { return x == c; }))
      return Regs{Values(static_cast<size_t>(f.numRegs()), c)};
  beginSharedUse();
  storeTileToShared(blocked, v->type, 0);
  sharedWritten();
  const MmaLane m = mmaLane(*this, f.tiling, f.M, f.N);
  llvm::Type *sty = sharedType(v->type);
  Regs out;
  for (int64_t reg = 0; reg < f.numRegs(); ++reg)
    out.v.push_back(fromShared(loadShared(sty, 0, elementOfRegister(*this, f, m, reg)), v->type));
  sharedRead();
  return out;
}

Regs Lowering::fragmentsToBlocked(const ir::Value *v) {
  const FragForm &f = fragPlan.formOf(v);
  const Regs &fr = getFrag(v);
  beginSharedUse();
  const MmaLane m = mmaLane(*this, f.tiling, f.M, f.N);
  // The four lanes of a quad hold the same rows: one of them writes.
  llvm::Value *writes = f.kind == Kind::Rows ? b.CreateICmpEQ(m.t2, i32(0)) : nullptr;
  guardedVoid(writes, [&] {
    for (int64_t reg = 0; reg < f.numRegs(); ++reg)
      storeShared(toShared(fr.v[reg], v->type), 0, elementOfRegister(*this, f, m, reg));
  });
  sharedWritten();
  return gatherFromShared(v->type, v->type, 0, [](llvm::Value *e) { return e; });
}

/// The sum, max, min or product along the rows of a Tile: each row's registers in this
/// thread, then across the quad of lanes that hold the row.
static Regs reduceRows(Lowering &L, const ir::Op &op, const FragForm &tile) {
  const Regs &x = L.getFrag(op.operand(0));
  const ReduceKind kind = reduceKindOf(op);
  const DType t = op.operand(0)->type.dtype;
  const MmaTiling &tl = tile.tiling;
  Regs out;
  for (int64_t mi = 0; mi < tl.mTiles; ++mi)
    for (int64_t half = 0; half < 2; ++half) {
      llvm::Value *acc = nullptr;
      for (int64_t ni = 0; ni < tl.nTiles; ++ni)
        for (int64_t c = 0; c < 2; ++c) {
          llvm::Value *v = x.v[(mi * tl.nTiles + ni) * 4 + half * 2 + c];
          acc = acc ? L.combine(kind, t, acc, v, nullptr) : v;
        }
      for (int64_t mask : {1, 2})
        acc = L.combine(kind, t, acc, L.shuffleXor(acc, mask), nullptr);
      out.v.push_back(acc);
    }
  return out;
}

void Lowering::lowerInFragments(const ir::Op &op) {
  const FragForm &f = fragPlan.formOf(op.result());
  switch (op.kind()) {
  case OpKind::Broadcast:
    return; // a row broadcast: its readers take the rows' registers
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    frags[op.result()] = getFrag(op.operand(0));
    return;
  case OpKind::Reduce:
    frags[op.result()] = reduceRows(*this, op, fragPlan.formOf(op.operand(0)));
    return;
  default:
    break;
  }
  std::vector<Regs> in;
  for (const ir::Value *o : op.operands())
    in.push_back(fragmentsOf(o, f));
  Regs out;
  Values args(in.size());
  for (int64_t reg = 0; reg < f.numRegs(); ++reg) {
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = in[k].v[reg];
    out.v.push_back(op.kind() == OpKind::Cast
                        ? convert(op.operand(0)->type.dtype, op.result()->type.dtype, args[0])
                        : emitElementwise(op, args));
  }
  frags[op.result()] = std::move(out);
}

void Lowering::finishFragments(const ir::Op &op) {
  for (const auto &r : op.results()) {
    const FragForm &f = fragPlan.formOf(r.get());
    if (f.kind == Kind::AOperand) { // lowered blocked, read as A fragments
      frags[r.get()] = blockedToFragments(r.get(), f);
      continue;
    }
    if (!fragPlan.needsBlocked(r.get()))
      continue;
    if (fragPlan.formOf(r.get()).kind == Kind::RowBroadcast)
      lowerBroadcast(op); // from its operand's blocked registers
    else
      set(r.get(), fragmentsToBlocked(r.get()));
  }
}

} // namespace kiln::codegen::detail
