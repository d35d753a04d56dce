//===- LowerCluster.cpp - Values shared by the programs of a cluster ------===//
//
// cluster_exchange on sm_90, through distributed shared memory. Each program's
// exchange area (after the arena the other ops share, SharedMemory.h) holds an
// mbarrier and one slot per rank for each operand, in 32- or 64-bit words: register j of
// thread t at j·T + t, a scalar in one word.
//
// Where every path through the kernel runs at most one exchange, the programs push:
//
//   kernel entry:  thread 0 initializes the mbarrier (one arrival, the bytes to come);
//                  fence.mbarrier_init; barrier.cluster.arrive.relaxed
//   exchange:      barrier.cluster.wait            (every program's mbarrier is ready)
//                  thread 0: mbarrier.arrive.expect_tx(S · the bytes of one rank)
//                  each thread, for each rank r: st.async its words into its own slot
//                  of rank r's area, completing bytes on rank r's mbarrier (a scalar:
//                  thread 0 alone)
//                  wait for the mbarrier's phase; read the S slots locally
//                  barrier.cluster.arrive.relaxed
//   kernel end:    barrier.cluster.wait            (no program leaves while a store
//                                                   into another may be in flight)
//
// No release fence at cluster scope is needed: a store completes on the receiving
// mbarrier, whose wait makes it visible. (A barrier.cluster.arrive with release
// semantics at each exchange cost a split softmax 15% on an H200.)
//
// Elsewhere (several exchanges on a path) each program stores its own slot, passes a
// cluster barrier (arrive.release, wait.acquire), reads every rank's slot with mapa and
// ld.shared::cluster, and passes a second barrier before its area may be written again.
//
// Every program of a cluster lays its tiles out alike, so a thread finds its own
// elements at the same places in every rank's words and no layout changes hands.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

namespace kiln::codegen::detail {

namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;
/// An mbarrier counts at most 2^20 - 1 bytes of transactions.
constexpr int64_t kMaxTransactionBytes = (int64_t(1) << 20) - 1;

/// The most exchanges one path through `block` runs (a loop's body: unbounded).
int64_t exchangesOnAPath(const ir::Block &block) {
  int64_t n = 0;
  for (const auto &op : block.ops()) {
    if (op->kind() == OpKind::ClusterExchange) {
      ++n;
      continue;
    }
    int64_t most = 0;
    for (const auto &region : op->regions()) {
      int64_t inside = exchangesOnAPath(*region);
      most = std::max(most, op->kind() == OpKind::If || inside == 0 ? inside : kUnbounded);
    }
    n = std::min(n + most, kUnbounded);
  }
  return n;
}

} // namespace

void Lowering::clusterArrive(bool relaxed) {
  b.CreateIntrinsic(relaxed ? llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned
                            : llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned,
                    llvm::ArrayRef<llvm::Value *>{});
}

void Lowering::clusterWait() {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, llvm::ArrayRef<llvm::Value *>{});
  // The wait also waits for every thread of this program.
  arenaInUse = {};
  outstanding.clear();
}

bool Lowering::clusterExchangesPush() const {
  if (!kernel.gridSplit.cluster)
    return false;
  size_t returns = 0;
  bool fits = true;
  ir::walk(*kernel.body, [&](ir::Op &op) {
    returns += op.kind() == OpKind::Return;
    if (op.kind() == OpKind::ClusterExchange)
      fits = fits && exchangeBytesPerRank(op) * op.intAttr("ranks") <= kMaxTransactionBytes;
  });
  return fits && returns == 1 && exchangesOnAPath(*kernel.body) <= 1;
}

int64_t Lowering::exchangeBytesPerRank(const ir::Op &op) const {
  int64_t bytes = 0;
  for (const ir::Value *v : op.operands())
    bytes += exchangeWords(v->type, T, maxVec) * exchangeWordBytes(v->type);
  return bytes;
}

llvm::Type *Lowering::wordType(const Type &t) {
  return exchangeWordBytes(t) == 8 ? b.getInt64Ty() : b.getInt32Ty();
}

void Lowering::beginClusterExchanges() {
  if (!pushClusterExchanges)
    return;
  llvm::Value *bar = sharedAddr(exchangeBase, i32(0), b.getInt64Ty());
  guardedVoid(b.CreateICmpEQ(tid, i32(0)), [&] {
    voidAsm("mbarrier.init.shared::cta.b64 [$0], 1;", "l", {bar});
    voidAsm("fence.mbarrier_init.release.cluster;", "", {});
  });
  clusterArrive(/*relaxed=*/true);
}

void Lowering::finishClusterExchanges() {
  if (pushClusterExchanges)
    clusterWait();
}

/// A value as the word a slot holds, and back.
llvm::Value *Lowering::toWord(llvm::Value *v, const Type &t) {
  llvm::Value *s = toShared(v, t);
  llvm::Type *word = wordType(t);
  if (s->getType()->isFloatingPointTy())
    return b.CreateBitCast(s, word);
  if (s->getType()->isPointerTy())
    return b.CreatePtrToInt(s, word);
  return s->getType() == word ? s : b.CreateZExt(s, word);
}

llvm::Value *Lowering::fromWord(llvm::Value *w, const Type &t) {
  llvm::Type *sty = sharedType(t);
  llvm::Value *s = sty->isFloatingPointTy() ? b.CreateBitCast(w, sty)
                   : sty == w->getType()    ? w
                                            : b.CreateTrunc(w, sty);
  return fromShared(s, t);
}

void Lowering::lowerClusterExchange(const ir::Op &op) {
  kiln_assert(nvptx, "cluster_exchange reaches code generation only for sm_90 (checkSupported)");
  const ScratchPlan plan = scratchPlan(op);
  const unsigned n = op.numOperands();
  const int64_t ranks = op.intAttr("ranks");
  auto slotOf = [&](int64_t rank, unsigned i) { return exchangeBase + plan.offsets[1 + rank * n + i]; };
  // This thread's word j of operand i in the slot of `rank`.
  // Word j of this thread's share of operand i: a scalar's one word, else j·T + tid.
  auto wordIndex = [&](unsigned i, size_t j) {
    return op.operand(i)->type.isScalar() ? i32(0) : b.CreateAdd(tid, i32(static_cast<int64_t>(j) * T));
  };
  auto word = [&](int64_t rank, unsigned i, size_t j) {
    return sharedAddr(slotOf(rank, i), wordIndex(i, j), wordType(op.operand(i)->type));
  };
  auto *remoteTy = llvm::PointerType::get(ctx, 7); // shared::cluster
  auto mapa = [&](llvm::Value *local, llvm::Value *rank) {
    return b.CreateIntrinsic(remoteTy, llvm::Intrinsic::nvvm_mapa_shared_cluster, {local, rank});
  };
  // Result r·n + i from rank r's words of operand i, each at `at(r, i, j)`.
  auto readAll = [&](const std::function<llvm::Value *(int64_t, unsigned, size_t)> &at) {
    for (int64_t r = 0; r < ranks; ++r)
      for (unsigned i = 0; i < n; ++i) {
        const Type &t = op.operand(i)->type;
        Regs out;
        for (size_t j = 0; j < get(op.operand(i)).v.size(); ++j)
          out.v.push_back(fromWord(b.CreateLoad(wordType(t), at(r, i, j)), t));
        set(op.result(static_cast<unsigned>(r * n + i)), std::move(out));
      }
  };

  if (!pushClusterExchanges) {
    // An earlier exchange's area is free after its second barrier. Each program uses
    // rank 0's slot of its own area, which the others read through mapa.
    for (unsigned i = 0; i < n; ++i) {
      const Regs &regs = get(op.operand(i));
      for (size_t j = 0; j < regs.v.size(); ++j)
        b.CreateStore(toWord(regs.v[j], op.operand(i)->type), word(0, i, j));
    }
    clusterArrive(/*relaxed=*/false);
    clusterWait();
    readAll([&](int64_t r, unsigned i, size_t j) { return mapa(word(0, i, j), i32(r)); });
    clusterArrive(/*relaxed=*/false);
    clusterWait();
    return;
  }

  // Push: every program's mbarrier is initialized once the entry's arrive is matched.
  clusterWait();
  llvm::Value *bar = sharedAddr(exchangeBase, i32(0), b.getInt64Ty());
  llvm::Value *first = b.CreateICmpEQ(tid, i32(0));
  guardedVoid(first, [&] {
    voidAsm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,n",
               {bar, i32(exchangeBytesPerRank(op) * ranks)});
  });
  // This thread's word j of operand i in the slot of this program's rank, whose offset
  // is a run-time choice among the ranks' evenly spaced slots.
  llvm::Value *self =
      b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, llvm::ArrayRef<llvm::Value *>{});
  const int64_t rankStride = plan.offsets[1 + n] - plan.offsets[1];
  auto ownSlot = [&](unsigned i, size_t j) {
    llvm::Value *at = b.CreateAdd(i32(exchangeBase + plan.offsets[1 + i]), b.CreateMul(self, i32(rankStride)));
    return b.CreateInBoundsGEP(wordType(op.operand(i)->type), b.CreateInBoundsGEP(b.getInt8Ty(), arena, at),
                               wordIndex(i, j));
  };
  for (int64_t r = 0; r < ranks; ++r) {
    llvm::Value *remoteBar = mapa(bar, i32(r));
    for (unsigned i = 0; i < n; ++i) {
      const Type &t = op.operand(i)->type;
      const Regs &regs = get(op.operand(i));
      const bool wide = exchangeWordBytes(t) == 8;
      const char *store = wide ? "st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [$0], $1, [$2];"
                                            : "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [$0], $1, [$2];";
      const char *constraints = wide ? "l,l,l" : "l,r,l";
      auto push = [&] {
        for (size_t j = 0; j < (t.isScalar() ? 1 : regs.v.size()); ++j)
          voidAsm(store, constraints, {mapa(ownSlot(i, j), i32(r)), toWord(regs.v[j], t), remoteBar});
      };
      if (t.isScalar())
        guardedVoid(first, push); // every thread holds it: one sends it
      else
        push();
    }
  }
  // Wait for phase 0 of this program's mbarrier: its arrival and all S ranks' bytes. The
  // acquire is at cluster scope, as the stores come from the other programs.
  {
    auto *fty = llvm::FunctionType::get(b.getInt32Ty(), {bar->getType()}, false);
    auto *tryWait = llvm::InlineAsm::get(
        fty,
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [$1], 0; selp.u32 $0, 1, 0, p; }",
        "=r,l",
        /*hasSideEffects=*/true);
    llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx, "exchange.wait", fn);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "exchange.done", fn);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::Value *ready = b.CreateCall(fty, tryWait, {bar});
    b.CreateCondBr(b.CreateICmpNE(ready, i32(0)), done, loop);
    b.SetInsertPoint(done);
  }
  readAll([&](int64_t r, unsigned i, size_t j) { return word(r, i, j); });
  clusterArrive(/*relaxed=*/true);
}

} // namespace kiln::codegen::detail
