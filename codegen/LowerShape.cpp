//===- LowerShape.cpp - Constants, arange, splat and the shape ops --------===//
//
// Ops that keep the row-major order (expand_dims, reshape) keep the registers: the
// layout depends only on the element count. Ops that reorder elements (broadcast,
// permute, join, split) write the source tile to the shared-memory arena and read each
// register's source element back. A broadcast or permute of a value that can be
// recomputed at any index (index arithmetic such as `rows[:, None] * n + cols[None, :]`)
// is instead recomputed in place, which needs no shared memory and no barrier. So is a
// broadcast along leading axes of values read from memory the kernel never writes (the
// vector of a matrix-vector product, `v[None, :]` against a weight tile): each thread
// reads the source elements its own registers need, as vectors, once per distinct
// run of columns; the extra reads hit L1, where the exchange would put two barriers
// into every iteration of the loop streaming the weights.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <unordered_map>

namespace kiln::codegen::detail {

//===--------------------------------------------------------------------===//
// Index maps (flat result index -> flat source index)
//===--------------------------------------------------------------------===//

/// Source element of a broadcast from `src` to `dst` (equal ranks).
static llvm::Value *broadcastSource(Lowering &L, llvm::Value *e, const Shape &src,
                                    const Shape &dst) {
  Values idx = L.unravel(e, dst);
  const std::vector<int64_t> strides = rowMajorStrides(src);
  llvm::Value *s = L.i32(0);
  for (size_t d = 0; d < dst.size(); ++d)
    if (src[d] != 1)
      s = L.b.CreateAdd(s, L.b.CreateMul(idx[d], L.i32(strides[d])));
  return s;
}

/// Source element of permute(src, perm) at result index `e`.
static llvm::Value *permuteSource(Lowering &L, llvm::Value *e, const Shape &src,
                                  const Shape &dst, const std::vector<int64_t> &perm) {
  Values idx = L.unravel(e, dst);
  const std::vector<int64_t> strides = rowMajorStrides(src);
  llvm::Value *s = L.i32(0);
  for (size_t d = 0; d < dst.size(); ++d)
    s = L.b.CreateAdd(s, L.b.CreateMul(idx[d], L.i32(strides[perm[d]])));
  return s;
}

//===--------------------------------------------------------------------===//
// Constants
//===--------------------------------------------------------------------===//

static llvm::Value *constantValue(Lowering &L, const ir::Op &op) {
  const Type &t = op.result()->type;
  if (t.pointer)
    L.unsupported(op, "pointer constants");
  const ir::Attr &v = op.attrs().at("value");
  if (const double *f = std::get_if<double>(&v))
    return L.constantOf(t.dtype, 0, *f, true);
  if (const bool *bv = std::get_if<bool>(&v))
    return L.constantOf(t.dtype, *bv ? 1 : 0, 0, false);
  if (const int64_t *iv = std::get_if<int64_t>(&v))
    return L.constantOf(t.dtype, *iv, 0, false);
  KILN_ICE("codegen: constant without a numeric value");
}

void Lowering::lowerConstant(const ir::Op &op) {
  llvm::Value *c = constantValue(*this, op);
  set(op.result(), Regs{Values(layoutOf(op.result()->type).numRegs(), c)});
}

void Lowering::lowerArange(const ir::Op &op) {
  const Layout l = layoutOf(op.result()->type);
  const int64_t start = op.intAttr("start");
  Regs out;
  for (int64_t r = 0; r < l.numRegs(); ++r)
    out.v.push_back(b.CreateAdd(elementIndex(l, r), i32(start)));
  set(op.result(), std::move(out));
}

void Lowering::lowerSplat(const ir::Op &op) {
  llvm::Value *s = get(op.operand(0)).v[0];
  set(op.result(), Regs{Values(layoutOf(op.result()->type).numRegs(), s)});
}

void Lowering::lowerSameOrder(const ir::Op &op) {
  // Same element count, same layout; a tile of one element and a scalar both have the
  // element in every thread (an idle thread's register copies the last element).
  Regs r = get(op.operand(0));
  const int64_t n = layoutOf(op.result()->type).numRegs();
  kiln_assert(static_cast<int64_t>(r.v.size()) == n, "codegen: reshape changed the layout");
  set(op.result(), std::move(r));
}

//===--------------------------------------------------------------------===//
// Rematerialization
//===--------------------------------------------------------------------===//

static bool rematerializableKind(OpKind k) {
  switch (k) {
  case OpKind::Constant:
  case OpKind::Arange:
  case OpKind::Splat:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Broadcast:
  case OpKind::Permute:
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
  case OpKind::PtrAdd:
  case OpKind::Cmp:
  case OpKind::Select:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Cast:
    return true;
  // Library calls and everything that is not a pure function of the index are better
  // computed once and moved.
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::Join:
  case OpKind::Split:
  case OpKind::Cat:
  case OpKind::Gather:
  case OpKind::BlockElements:
  case OpKind::Pow:
  case OpKind::Fma:
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
  case OpKind::Bitcast:
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

bool Lowering::canRematerialize(const ir::Value *v, int &budget, bool scalarsLowered,
                                Recompute what) const {
  if (v->type.isScalar())
    return !scalarsLowered || vals.count(v) != 0; // every thread holds every scalar
  const ir::Op *def = v->definingOp();
  if (!def || --budget < 0)
    return false;
  const bool load = def->kind() == OpKind::Load && what == Recompute::ReadOnlyLoads &&
                    !v->type.pointer && readOnly(*def);
  if (!load && !rematerializableKind(def->kind()))
    return false;
  if (def->kind() == OpKind::Splat)
    return true;
  for (const ir::Value *o : def->operands())
    if (!canRematerialize(o, budget, scalarsLowered, what))
      return false;
  return true;
}

llvm::Value *Lowering::rematerialize(const ir::Value *v, llvm::Value *e) {
  if (v->type.isScalar())
    return get(v).v[0];
  const ir::Op &op = *v->definingOp();
  const OpKind k = op.kind();
  if (k == OpKind::Constant)
    return constantValue(*this, op);
  if (k == OpKind::Arange)
    return b.CreateAdd(e, i32(op.intAttr("start")));
  if (k == OpKind::Splat)
    return get(op.operand(0)).v[0];
  if (k == OpKind::ExpandDims || k == OpKind::Reshape)
    return rematerialize(op.operand(0), e);
  if (k == OpKind::Broadcast)
    return rematerialize(op.operand(0), broadcastSource(*this, e, op.operand(0)->type.shape,
                                                        v->type.shape));
  if (k == OpKind::Permute)
    return rematerialize(op.operand(0), permuteSource(*this, e, op.operand(0)->type.shape,
                                                      v->type.shape, op.intsAttr("perm")));
  if (k == OpKind::Cast)
    return convert(op.operand(0)->type.dtype, v->type.dtype, rematerialize(op.operand(0), e));
  if (k == OpKind::Load) { // read-only memory (canRematerialize): the element's own read
    const Type elem = Type::scalar(v->type.dtype);
    llvm::Value *p = rematerialize(op.operand(0), e);
    if (op.numOperands() == 1)
      return readElement(elem, p, nullptr, nullptr);
    llvm::Value *other = op.numOperands() > 2 ? rematerialize(op.operand(2), e)
                                              : llvm::Constant::getNullValue(regType(elem));
    return readElement(elem, p, rematerialize(op.operand(1), e), other);
  }
  if (k == OpKind::PtrAdd) {
    llvm::Value *p = rematerialize(op.operand(0), e);
    llvm::Value *d = rematerialize(op.operand(1), e);
    d = isSigned(op.operand(1)->type.dtype) ? b.CreateSExtOrTrunc(d, b.getInt64Ty())
                                            : b.CreateZExtOrTrunc(d, b.getInt64Ty());
    return b.CreateGEP(memType(Type::scalar(v->type.dtype)), p, d);
  }
  Values args;
  for (const ir::Value *o : op.operands())
    args.push_back(rematerialize(o, e));
  return emitElementwise(op, args);
}

//===--------------------------------------------------------------------===//
// Reordering ops
//===--------------------------------------------------------------------===//

/// Recomputes every register of `result` when its definition allows it.
static bool tryRematerialize(Lowering &L, const ir::Op &op) {
  int budget = 32;
  if (!L.canRematerialize(op.result(), budget))
    return false;
  const Layout l = L.layoutOf(op.result()->type);
  Regs out;
  for (int64_t r = 0; r < l.numRegs(); ++r)
    out.v.push_back(L.rematerialize(op.result(), L.elementIndex(l, r)));
  L.set(op.result(), std::move(out));
  return true;
}

void Lowering::lowerBroadcast(const ir::Op &op) {
  const Type &st = op.operand(0)->type, &rt = op.result()->type;
  // A reduction's result broadcast back over the reduced tile: each thread already holds
  // the totals of the lines its registers belong to.
  if (const ir::Op *expand = op.operand(0)->definingOp();
      expand && expand->kind() == OpKind::ExpandDims && expand->intAttr("axis") == static_cast<int64_t>(st.rank()) - 1) {
    if (auto held = lineTotals.find(expand->operand(0));
        held != lineTotals.end() && held->second.operandShape == rt.shape) {
      const Layout l = layoutOf(rt);
      Regs out;
      for (int64_t reg = 0; reg < l.numRegs(); ++reg)
        out.v.push_back(held->second.perRound[reg / l.vec]);
      return set(op.result(), std::move(out));
    }
  }
  if (st.shape == rt.shape)
    return set(op.result(), get(op.operand(0)));
  if (st.numElements() == 1) // one element: every thread holds it already
    return set(op.result(), Regs{Values(layoutOf(rt).numRegs(), get(op.operand(0)).v[0])});
  if (tryRematerialize(*this, op) || broadcastByReading(op))
    return;
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), st, plan.offsets[0]);
  sharedWritten();
  set(op.result(), gatherFromShared(st, rt, plan.offsets[0], [&](llvm::Value *e) {
        return broadcastSource(*this, e, st.shape, rt.shape);
      }));
}

//===--------------------------------------------------------------------===//
// Broadcasts read where they are needed
//===--------------------------------------------------------------------===//

namespace {

/// A broadcast's source recomputed in the result's layout, with its loads read by each
/// thread for its own registers. Every value of the source tree has the source's
/// element count, so one flat source index per register serves them all. Rounds of a
/// thread that need the same source elements (a broadcast along leading axes repeats
/// the source every P result elements) are computed once.
class BroadcastReader {
public:
  BroadcastReader(Lowering &L, const ir::Op &op) : L(L), st(op.operand(0)->type), rt(op.result()->type) {}

  /// At most this many loads per thread (loads of the tree times the distinct rounds).
  static constexpr int kMaxReads = 8;

  bool plan(const ir::Op &op) {
    // The last axis must not be broadcast: a chunk of the result is then a run of
    // consecutive source elements, so the source reads as vectors.
    if (st.rank() != rt.rank() || st.rank() == 0 || st.shape.back() != rt.shape.back())
      return false;
    int budget = Lowering::kRecomputeBudget;
    if (!fits(op.operand(0), budget) || loads == 0)
      return false;
    layout = L.layoutOf(rt);
    pickRounds();
    if (loads * static_cast<int64_t>(rounds.size()) > kMaxReads)
      return false;
    // Each thread computes the tree for its own registers: `replicas` times the
    // elements it holds of the source. Cheap arithmetic on them costs less than the
    // exchange; a library call or a division per element does not (a SiLU of the vector
    // of a matrix-vector product, computed on 8 elements per thread instead of 2, made
    // the H200's decode chain compute-bound: 14.2 us a product against 8.6 without it).
    const int64_t replicas =
        static_cast<int64_t>(rounds.size()) * layout.vec / std::max<int64_t>(L.layoutOf(st).numRegs(), 1);
    return !costly || replicas <= 1;
  }

  Regs read(const ir::Op &op) {
    for (int64_t round : rounds)
      for (int64_t j = 0; j < layout.vec; ++j)
        srcIndex.push_back(broadcastSource(L, L.elementIndex(layout, round * layout.vec + j), st.shape, rt.shape));
    const Regs compact = eval(op.operand(0));
    Regs out;
    for (int64_t r = 0; r < layout.numRounds(); ++r)
      for (int64_t j = 0; j < layout.vec; ++j)
        out.v.push_back(compact.v[static_cast<size_t>(slotOf[r] * layout.vec + j)]);
    return out;
  }

private:
  /// Whether `v` can be computed in the result's layout: values every thread can
  /// recompute, loads of read-only memory at such addresses, and elementwise ops,
  /// casts and reshapes of those.
  bool fits(const ir::Value *v, int &budget) {
    if (v->type.isScalar())
      return true;
    if (int pure = budget; L.canRematerialize(v, pure)) {
      budget = pure;
      return true;
    }
    const ir::Op *def = v->definingOp();
    if (!def || --budget < 0)
      return false;
    if (def->kind() == OpKind::Load) {
      if (v->type.pointer || !L.readOnly(*def))
        return false;
      ++loads;
      for (const ir::Value *o : def->operands())
        if (!L.canRematerialize(o, budget))
          return false;
      return true;
    }
    const OpKind k = def->kind();
    if (k != OpKind::ExpandDims && k != OpKind::Reshape && k != OpKind::Cast && !ir::isElementwise(k) &&
        k != OpKind::Cmp && k != OpKind::Select)
      return false;
    costly = costly || expensive(k);
    for (const ir::Value *o : def->operands())
      if (!fits(o, budget))
        return false;
    return true;
  }

  /// Which rounds to compute. With the broadcast axes leading (source [1, .., 1, S..]),
  /// result element e reads source element e mod P, P the product of S..; rounds that
  /// differ by a multiple of P elements read the same source elements.
  void pickRounds() {
    size_t lead = 0;
    while (lead < st.rank() && st.shape[lead] == 1 && rt.shape[lead] != 1)
      ++lead;
    int64_t period = 1;
    bool leading = true;
    for (size_t d = lead; d < st.rank(); ++d) {
      leading = leading && st.shape[d] == rt.shape[d];
      period *= rt.shape[d];
    }
    const int64_t roundElements = layout.numThreads * layout.vec;
    slotOf.assign(static_cast<size_t>(layout.numRounds()), -1);
    for (int64_t r = 0; r < layout.numRounds(); ++r) {
      for (size_t s = 0; leading && layout.roundAlwaysValid(r) && s < rounds.size(); ++s)
        if (layout.roundAlwaysValid(rounds[s]) && ((r - rounds[s]) * roundElements) % period == 0) {
          slotOf[r] = static_cast<int64_t>(s);
          break;
        }
      if (slotOf[r] < 0) {
        slotOf[r] = static_cast<int64_t>(rounds.size());
        rounds.push_back(r);
      }
    }
  }

  Regs eval(const ir::Value *v) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    Regs out;
    if (v->type.isScalar()) {
      out.v.assign(srcIndex.size(), L.get(v).v[0]);
    } else if (int budget = Lowering::kRecomputeBudget; L.canRematerialize(v, budget)) {
      for (llvm::Value *e : srcIndex)
        out.v.push_back(L.rematerialize(v, e));
    } else {
      const ir::Op &op = *v->definingOp();
      std::vector<Regs> in;
      for (const ir::Value *o : op.operands())
        in.push_back(eval(o));
      if (op.kind() == OpKind::Load) {
        out = L.readTile(op, in[0], in.size() > 1 ? &in[1] : nullptr, in.size() > 2 ? &in[2] : nullptr, layout.vec);
      } else if (op.kind() == OpKind::ExpandDims || op.kind() == OpKind::Reshape) {
        out = in[0];
      } else {
        Values args(in.size());
        for (size_t i = 0; i < srcIndex.size(); ++i) {
          for (size_t k = 0; k < in.size(); ++k)
            args[k] = in[k].v[i];
          out.v.push_back(op.kind() == OpKind::Cast
                              ? L.convert(op.operand(0)->type.dtype, v->type.dtype, args[0])
                              : L.emitElementwise(op, args));
        }
      }
    }
    memo[v] = out;
    return out;
  }

  /// Library calls and divisions: tens of instructions an element.
  static bool expensive(OpKind k) {
    switch (k) {
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::Pow:
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
      return true;
    default:
      return false;
    }
  }

  Lowering &L;
  const Type &st, &rt;
  Layout layout;
  int64_t loads = 0;
  bool costly = false; ///< the tree has an expensive op
  std::vector<int64_t> rounds;  ///< the rounds computed
  std::vector<int64_t> slotOf;  ///< per round: the index in `rounds` it copies
  Values srcIndex;              ///< per computed register: its flat source index
  std::unordered_map<const ir::Value *, Regs> memo;
};

} // namespace

bool Lowering::broadcastByReading(const ir::Op &op) {
  // Checked mode: the source's own loads already check every element; reading them
  // again would check (and could report) the same elements twice.
  if (opts.checked)
    return false;
  BroadcastReader reader(*this, op);
  if (!reader.plan(op))
    return false;
  set(op.result(), reader.read(op));
  return true;
}

void Lowering::lowerPermute(const ir::Op &op) {
  const Type &st = op.operand(0)->type, &rt = op.result()->type;
  const std::vector<int64_t> &perm = op.intsAttr("perm");
  if (tryRematerialize(*this, op))
    return;
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), st, plan.offsets[0]);
  sharedWritten();
  set(op.result(), gatherFromShared(st, rt, plan.offsets[0], [&](llvm::Value *e) {
        return permuteSource(*this, e, st.shape, rt.shape, perm);
      }));
}

void Lowering::lowerJoin(const ir::Op &op) {
  const Type &st = op.operand(0)->type, &rt = op.result()->type;
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), st, plan.offsets[0]);
  storeTileToShared(get(op.operand(1)), st, plan.offsets[1]);
  sharedWritten();
  // Element 2i + k of the result is element i of operand k; the second area starts a
  // whole number of elements after the first.
  const int64_t gap = (plan.offsets[1] - plan.offsets[0]) / sharedElementBytes(st);
  set(op.result(), gatherFromShared(st, rt, plan.offsets[0], [&](llvm::Value *e) {
        llvm::Value *i = b.CreateLShr(e, i32(1));
        llvm::Value *k = b.CreateAnd(e, i32(1));
        return b.CreateAdd(i, b.CreateMul(k, i32(gap)));
      }));
}

void Lowering::lowerCat(const ir::Op &op) {
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  const int64_t axis = op.intAttr("axis");
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), at, plan.offsets[0]);
  storeTileToShared(get(op.operand(1)), bt, plan.offsets[1]);
  sharedWritten();
  // Result element (o, j, i) around the axis is a's (o, j, i) for j < na, else b's
  // (o, j - na, i); b's area starts a whole number of elements after a's.
  const int64_t inner = rowMajorStrides(rt.shape)[axis];
  const int64_t na = at.shape[axis], nb = bt.shape[axis], n = na + nb;
  const int64_t gap = (plan.offsets[1] - plan.offsets[0]) / sharedElementBytes(at);
  set(op.result(), gatherFromShared(at, rt, plan.offsets[0], [&](llvm::Value *e) {
        llvm::Value *i = b.CreateURem(e, i32(inner));
        llvm::Value *rest = b.CreateUDiv(e, i32(inner));
        llvm::Value *j = b.CreateURem(rest, i32(n));
        llvm::Value *o = b.CreateUDiv(rest, i32(n));
        llvm::Value *inA = b.CreateICmpULT(j, i32(na));
        llvm::Value *fromA = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, i32(na)), j), i32(inner)), i);
        llvm::Value *jb = b.CreateSub(j, i32(na));
        llvm::Value *fromB = b.CreateAdd(
            i32(gap), b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, i32(nb)), jb), i32(inner)), i));
        return b.CreateSelect(inA, fromA, fromB);
      }));
}

void Lowering::lowerGather(const ir::Op &op) {
  const Type &xt = op.operand(0)->type, &it = op.operand(1)->type, &rt = op.result()->type;
  const int64_t axis = op.intAttr("axis");
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), xt, plan.offsets[0]);
  sharedWritten();
  // The indices have the result's type, so their layout is the result's: register r of
  // the index tile holds the index of the result element in register r.
  const int64_t inner = rowMajorStrides(rt.shape)[axis];
  const int64_t n = xt.shape[axis], len = rt.shape[axis];
  const Layout l = layoutOf(rt);
  const Regs &idx = get(op.operand(1));
  llvm::Type *sty = sharedType(xt);
  const Type elem = xt.element();
  Regs out;
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *e = elementIndex(l, reg);
    llvm::Value *i = b.CreateURem(e, i32(inner));
    llvm::Value *o = b.CreateUDiv(b.CreateUDiv(e, i32(inner)), i32(len));
    // An index outside [0, n) reads element 0 and yields 0. The index is compared as an
    // i64, so that n fits whatever the index type (i8 indices into 200 elements).
    llvm::Value *at = isSigned(it.dtype) ? b.CreateSExtOrTrunc(idx.v[reg], b.getInt64Ty())
                                         : b.CreateZExtOrTrunc(idx.v[reg], b.getInt64Ty());
    llvm::Value *inRange = b.CreateICmpULT(at, i64(n)); // negative indices are huge unsigned
    llvm::Value *j = b.CreateSelect(inRange, b.CreateTrunc(at, b.getInt32Ty()), i32(0));
    llvm::Value *src = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, i32(n)), j), i32(inner)), i);
    llvm::Value *v = fromShared(loadShared(sty, plan.offsets[0], src), elem);
    out.v.push_back(b.CreateSelect(inRange, v, llvm::Constant::getNullValue(v->getType())));
  }
  sharedRead();
  set(op.result(), std::move(out));
}

void Lowering::lowerSplit(const ir::Op &op) {
  const Type &st = op.operand(0)->type, &rt = op.result(0)->type;
  const ScratchPlan plan = scratchPlan(op);
  beginSharedUse();
  storeTileToShared(get(op.operand(0)), st, plan.offsets[0]);
  sharedWritten();
  for (unsigned k = 0; k < 2; ++k)
    set(op.result(k), gatherFromShared(st, rt, plan.offsets[0], [&](llvm::Value *e) {
          return b.CreateAdd(b.CreateShl(e, i32(1)), i32(k));
        }));
}

} // namespace kiln::codegen::detail
