//===- LowerAtomic.cpp - atomic_rmw, atomic_cas and fence on global memory ===//
//
// Each lane of a tile atomic is applied by the thread that owns it (a lane with a false
// mask is not applied and returns 0); a scalar atomic is applied once, by thread 0, and
// its old value reaches the other threads through shared memory. The lanes of one op
// hit memory in an unspecified order on a GPU (the interpreter applies them in
// row-major order); each single update is atomic.
//
// Integer add/max/min/xchg/and/or/xor on 32 and 64 bits and float add on NVPTX are
// native atomic instructions. Everything else (float max/min, float add on SPIR-V, 8-
// and 16-bit types) is a compare-and-swap loop on the aligned 32-bit word (or the
// 64-bit value) holding the element, computing the new value with the same code as the
// elementwise ops, so the result of each update is exactly the interpreter's.
//
// An atomic's `sem` and `scope` become the LLVM ordering and synchronization scope of
// every instruction it is made of (the loop's compare-and-swap and its first load
// included). Without them an atomic is acq_rel at LLVM's default (system) scope, as
// atomics were before the attributes existed, and `gpu` keeps that scope, which is at
// least as wide as the device; `cta` narrows it to the program ("block" on NVPTX,
// "workgroup" on SPIR-V).
//
// A fence is a barrier of the program's threads, a device-scope acquire-release fence
// in every thread, and a second barrier. The first barrier brings every thread's
// earlier accesses to the fence of the thread that then makes the atomic (fences are
// cumulative over what a thread has observed, and bar.sync / the OpenCL barrier order
// the threads' global accesses); the second keeps every thread's later accesses, loads
// of what other programs wrote included, after the fence.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "support/CheckRecord.h"

namespace kiln::codegen::detail {

namespace {

/// How one atomic orders the thread's other memory accesses, and for which threads.
struct Ordering {
  llvm::AtomicOrdering success = llvm::AtomicOrdering::AcquireRelease;
  /// A compare-and-swap that fails only reads: it keeps the acquire half, if any.
  llvm::AtomicOrdering failure = llvm::AtomicOrdering::Acquire;
  llvm::SyncScope::ID scope = llvm::SyncScope::System;
};

/// The memory word an element lives in, and where in it.
struct Word {
  llvm::Value *ptr = nullptr;   ///< pointer to the i32 (or i64) word
  llvm::Value *shift = nullptr; ///< bit offset of the element in the word (word type)
  llvm::Type *ty = nullptr;     ///< i32 or i64
  unsigned bits = 0;            ///< element width in memory
};

} // namespace

static Ordering orderingOf(Lowering &L, const ir::Op &op) {
  using AO = llvm::AtomicOrdering;
  Ordering o;
  const std::string sem = op.hasAttr("sem") ? op.stringAttr("sem") : "acq_rel";
  if (sem == "acquire")
    o.success = AO::Acquire;
  else if (sem == "release")
    o.success = AO::Release, o.failure = AO::Monotonic;
  else if (sem == "relaxed")
    o.success = AO::Monotonic, o.failure = AO::Monotonic;
  if (op.hasAttr("scope") && op.stringAttr("scope") == "cta")
    o.scope = L.ctx.getOrInsertSyncScopeID(L.nvptx ? "block" : "workgroup");
  return o;
}

static Word wordOf(Lowering &L, llvm::Value *ptr, const Type &elem) {
  auto &b = L.b;
  Word w;
  w.bits = dtypeBytes(elem.dtype) * 8;
  if (w.bits >= 32) {
    w.ty = b.getIntNTy(w.bits);
    w.ptr = ptr;
    w.shift = llvm::ConstantInt::get(w.ty, 0);
    return w;
  }
  // Sub-word elements: the aligned 32-bit word around them (little-endian lanes).
  w.ty = b.getInt32Ty();
  llvm::Value *addr = b.CreatePtrToInt(ptr, b.getInt64Ty());
  llvm::Value *low = b.CreateAnd(addr, L.i64(3));
  w.ptr = b.CreateGEP(b.getInt8Ty(), ptr, b.CreateNeg(low));
  w.shift = b.CreateMul(b.CreateTrunc(low, b.getInt32Ty()), L.i32(8));
  return w;
}

/// Updates the element at `ptr` with `update(old) -> new` (register form) in a
/// compare-and-swap loop. Returns the old value (register form).
static llvm::Value *casLoop(Lowering &L, llvm::Value *ptr, const Type &elem, const Ordering &ord,
                            const std::function<llvm::Value *(llvm::Value *)> &update) {
  auto &b = L.b;
  const Word w = wordOf(L, ptr, elem);
  llvm::Type *mty = L.memType(elem);
  const uint64_t mask = w.bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << w.bits) - 1;
  llvm::Value *maskV = llvm::ConstantInt::get(w.ty, mask);

  auto *load = b.CreateAlignedLoad(w.ty, w.ptr, llvm::Align(w.ty->getIntegerBitWidth() / 8));
  load->setAtomic(llvm::AtomicOrdering::Monotonic, ord.scope);
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *loopBB = llvm::BasicBlock::Create(L.ctx, "cas.loop", L.fn);
  llvm::BasicBlock *tryBB = llvm::BasicBlock::Create(L.ctx, "cas.try", L.fn);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(L.ctx, "cas.done", L.fn);
  b.CreateBr(loopBB);
  b.SetInsertPoint(loopBB);
  llvm::PHINode *cur = b.CreatePHI(w.ty, 2);
  cur->addIncoming(load, pre);
  llvm::Value *oldBits =
      b.CreateTrunc(b.CreateAnd(b.CreateLShr(cur, w.shift), maskV), b.getIntNTy(w.bits));
  llvm::Value *oldMem = mty->isIntegerTy() ? oldBits : b.CreateBitCast(oldBits, mty);
  llvm::Value *old = L.fromMemory(oldMem, elem);
  llvm::Value *nextMem = L.toMemory(update(old), elem);
  llvm::Value *nextBits =
      mty->isIntegerTy() ? nextMem : b.CreateBitCast(nextMem, b.getIntNTy(w.bits));
  nextBits = b.CreateZExtOrTrunc(nextBits, w.ty);
  llvm::Value *word = b.CreateOr(b.CreateAnd(cur, b.CreateNot(b.CreateShl(maskV, w.shift))),
                                 b.CreateShl(nextBits, w.shift));
  b.CreateBr(tryBB);
  b.SetInsertPoint(tryBB);
  auto *cx = b.CreateAtomicCmpXchg(w.ptr, cur, word,
                                   llvm::MaybeAlign(w.ty->getIntegerBitWidth() / 8), ord.success,
                                   ord.failure, ord.scope);
  cur->addIncoming(b.CreateExtractValue(cx, 0), tryBB);
  b.CreateCondBr(b.CreateExtractValue(cx, 1), done, loopBB);
  b.SetInsertPoint(done);
  return old;
}

/// One atomic read-modify-write of `kind` on the element at `ptr`; returns the old value.
static llvm::Value *atomicUpdate(Lowering &L, const std::string &kind, llvm::Value *ptr,
                                 llvm::Value *v, const Type &elem, const Ordering &ord) {
  auto &b = L.b;
  const DType t = elem.dtype;
  const unsigned bits = dtypeBytes(t) * 8;
  const bool flt = isFloat(t);
  // Native instructions.
  if (!flt && bits >= 32 && t != DType::Bool) {
    llvm::AtomicRMWInst::BinOp opc = llvm::AtomicRMWInst::Xchg;
    if (kind == "add")
      opc = llvm::AtomicRMWInst::Add;
    else if (kind == "max")
      opc = isSigned(t) ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::UMax;
    else if (kind == "min")
      opc = isSigned(t) ? llvm::AtomicRMWInst::Min : llvm::AtomicRMWInst::UMin;
    else if (kind == "and")
      opc = llvm::AtomicRMWInst::And;
    else if (kind == "or")
      opc = llvm::AtomicRMWInst::Or;
    else if (kind == "xor")
      opc = llvm::AtomicRMWInst::Xor;
    return b.CreateAtomicRMW(opc, ptr, v, llvm::MaybeAlign(bits / 8), ord.success, ord.scope);
  }
  if (flt && (t == DType::F32 || t == DType::F64)) {
    if (kind == "add" && L.nvptx)
      return b.CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, ptr, v, llvm::MaybeAlign(bits / 8),
                               ord.success, ord.scope);
    if (kind == "xchg") {
      llvm::Type *ity = b.getIntNTy(bits);
      llvm::Value *old = b.CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, ptr, b.CreateBitCast(v, ity),
                                           llvm::MaybeAlign(bits / 8), ord.success, ord.scope);
      return b.CreateBitCast(old, v->getType());
    }
  }
  return casLoop(L, ptr, elem, ord, [&](llvm::Value *old) -> llvm::Value * {
    if (kind == "add")
      return L.emitBinary(nullptr, OpKind::Add, t, old, v);
    if (kind == "max")
      return L.emitMinMax(t, true, old, v);
    if (kind == "min")
      return L.emitMinMax(t, false, old, v);
    // 8- and 16-bit integers (the only ones that get here for the bitwise kinds).
    if (kind == "and")
      return b.CreateAnd(old, v);
    if (kind == "or")
      return b.CreateOr(old, v);
    if (kind == "xor")
      return b.CreateXor(old, v);
    return v;
  });
}

/// Compare-and-swap of the element at `ptr`: stores `v` where the stored bits equal
/// those of `cmp`; returns the old value.
static llvm::Value *atomicCas(Lowering &L, llvm::Value *ptr, llvm::Value *cmp, llvm::Value *v,
                              const Type &elem, const Ordering &ord) {
  auto &b = L.b;
  const unsigned bits = dtypeBytes(elem.dtype) * 8;
  if (bits >= 32) {
    llvm::Type *ity = b.getIntNTy(bits);
    auto asBits = [&](llvm::Value *x) {
      llvm::Value *m = L.toMemory(x, elem);
      return m->getType()->isIntegerTy() ? m : b.CreateBitCast(m, ity);
    };
    auto *cx = b.CreateAtomicCmpXchg(ptr, asBits(cmp), asBits(v), llvm::MaybeAlign(bits / 8),
                                     ord.success, ord.failure, ord.scope);
    llvm::Value *old = b.CreateExtractValue(cx, 0);
    llvm::Type *mty = L.memType(elem);
    return L.fromMemory(mty->isIntegerTy() ? old : b.CreateBitCast(old, mty), elem);
  }
  // Sub-word: compare the element's stored bits inside the word loop.
  llvm::Value *cmpBits = L.toMemory(cmp, elem);
  return casLoop(L, ptr, elem, ord, [&](llvm::Value *old) -> llvm::Value * {
    llvm::Value *same = b.CreateICmpEQ(L.toMemory(old, elem), cmpBits);
    // When the bits differ, write the old value back unchanged: the loop then ends
    // at once (or retries if the word changed meanwhile), and returns the old value.
    return b.CreateSelect(same, v, old);
  });
}

/// Checked mode: the lanes of atomic `op` in bounds (and in `mask`), LowerChecks.cpp.
static Regs checkAtomic(Lowering &L, const ir::Op &op, const Regs &ptrs, const Regs *mask) {
  const Type &pt = op.operand(0)->type;
  const std::optional<Layout> tile = pt.isScalar() ? std::nullopt : std::optional(L.layoutOf(op.result()->type));
  return L.boundsCheck(
      op, ptrs, mask, [&](int64_t i) { return tile ? L.roundValid(*tile, i / tile->vec) : L.isThread0(); },
      dtypeBytes(pt.dtype), check::CheckKind::Atomic).ok;
}

/// Applies `one(lane)` to every lane the op owns and returns the results.
static void lowerAtomicLanes(Lowering &L, const ir::Op &op,
                             const std::function<llvm::Value *(int64_t)> &one,
                             const std::function<llvm::Value *(int64_t)> &maskAt) {
  const Type &rt = op.result()->type;
  llvm::Value *zero = llvm::Constant::getNullValue(L.regType(rt.element()));
  if (rt.isScalar()) {
    const ScratchPlan plan = L.scratchPlan(op);
    L.beginSharedUse();
    llvm::Value *cond = L.isThread0();
    if (llvm::Value *m = maskAt(0))
      cond = L.b.CreateAnd(cond, m);
    llvm::Value *old = L.guarded(cond, [&] { return Values{one(0)}; }, {zero})[0];
    L.guardedVoid(L.isThread0(), [&] { L.storeShared(L.toShared(old, rt), plan.offsets[0], L.i32(0)); });
    L.sharedWritten();
    llvm::Value *all = L.fromShared(L.loadShared(L.sharedType(rt), plan.offsets[0], L.i32(0)), rt);
    L.sharedRead();
    L.set(op.result(), Regs{{all}});
    return;
  }
  const Layout l = L.layoutOf(rt);
  Regs out;
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *cond = L.roundValid(l, reg / l.vec);
    if (llvm::Value *m = maskAt(reg))
      cond = cond ? L.b.CreateAnd(cond, m) : m;
    out.v.push_back(L.guarded(cond, [&] { return Values{one(reg)}; }, {zero})[0]);
  }
  L.set(op.result(), std::move(out));
}

void Lowering::lowerAtomicRMW(const ir::Op &op) {
  orderAccess(op);
  const Type elem = Type::scalar(op.operand(0)->type.dtype);
  const std::string &kind = op.stringAttr("kind");
  const Ordering ord = orderingOf(*this, op);
  const Regs &ptrs = get(op.operand(0)), &v = get(op.operand(1));
  const Regs *mask = op.numOperands() > 2 ? &get(op.operand(2)) : nullptr;
  Regs inBounds;
  if (opts.checked) {
    inBounds = checkAtomic(*this, op, ptrs, mask);
    mask = &inBounds;
  }
  lowerAtomicLanes(
      *this, op,
      [&](int64_t i) { return atomicUpdate(*this, kind, ptrs.v[i], v.v[i], elem, ord); },
      [&](int64_t i) -> llvm::Value * { return mask ? mask->v[i] : nullptr; });
}

void Lowering::lowerAtomicCas(const ir::Op &op) {
  orderAccess(op);
  const Type elem = Type::scalar(op.operand(0)->type.dtype);
  const Ordering ord = orderingOf(*this, op);
  const Regs &ptrs = get(op.operand(0)), &cmp = get(op.operand(1)), &v = get(op.operand(2));
  const Regs inBounds = opts.checked ? checkAtomic(*this, op, ptrs, nullptr) : Regs{};
  lowerAtomicLanes(
      *this, op,
      [&](int64_t i) { return atomicCas(*this, ptrs.v[i], cmp.v[i], v.v[i], elem, ord); },
      [&](int64_t i) -> llvm::Value * { return opts.checked ? inBounds.v[i] : nullptr; });
}

void Lowering::lowerFence(const ir::Op &) {
  barrier();
  if (nvptx) {
    // fence.acq_rel.gpu
    b.CreateFence(llvm::AtomicOrdering::AcquireRelease, ctx.getOrInsertSyncScopeID("device"));
  } else {
    // atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acq_rel, memory_scope_device)
    auto *ty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty(), b.getInt32Ty(), b.getInt32Ty()}, false);
    llvm::CallInst *call = b.CreateCall(
        declareBuiltin("_Z22atomic_work_item_fencej12memory_order12memory_scope", ty, /*convergent=*/true),
        {i32(2), i32(4), i32(2)});
    call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  }
  barrier();
}

} // namespace kiln::codegen::detail
