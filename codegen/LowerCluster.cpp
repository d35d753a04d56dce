//===- LowerCluster.cpp - Values shared by the programs of a cluster ------===//
//
// cluster_exchange on sm_90, through distributed shared memory:
//
//   every thread stores its registers of each operand in its program's exchange area
//   (register j of thread t at j·T + t; the area follows the arena the other ops
//   share, SharedMemory.h);
//   barrier.cluster.arrive (release) + barrier.cluster.wait (acquire);
//   for each rank r: mapa turns each of those addresses into rank r's, and the thread
//   loads what the same thread of program r stored;
//   barrier.cluster.arrive (release): this program has read what it needed.
//
// The matching wait, which keeps every program alive until the others have read its
// area, comes at the kernel's end when every path runs at most one exchange, so that
// a program writes its output while the others still read; otherwise it follows the
// arrive at once. Every program of a cluster lays its tiles out alike, so a thread
// finds its own elements at the same places in every program and no layout changes
// hands.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

namespace kiln::codegen::detail {

namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;

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

void arrive(llvm::IRBuilder<> &b) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, llvm::ArrayRef<llvm::Value *>{});
}

void wait(llvm::IRBuilder<> &b) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, llvm::ArrayRef<llvm::Value *>{});
}

} // namespace

bool Lowering::clusterWaitCanBeDeferred() const {
  if (!kernel.gridSplit.cluster)
    return false;
  size_t returns = 0;
  ir::walk(*kernel.body, [&](ir::Op &op) { returns += op.kind() == OpKind::Return; });
  return returns == 1 && exchangesOnAPath(*kernel.body) <= 1;
}

void Lowering::clusterBarrier() {
  arrive(b);
  wait(b);
  // The wait also waits for every thread of this program.
  arenaInUse = {};
  outstanding.clear();
}

void Lowering::finishClusterExchanges() { wait(b); }

void Lowering::lowerClusterExchange(const ir::Op &op) {
  kiln_assert(nvptx, "cluster_exchange reaches code generation only for sm_90 (checkSupported)");
  const ScratchPlan plan = scratchPlan(op);
  const unsigned n = op.numOperands();
  const int64_t ranks = op.intAttr("ranks");
  std::vector<std::vector<llvm::Value *>> places(n); // this thread's addresses in the area
  for (unsigned i = 0; i < n; ++i) {
    const Type &t = op.operand(i)->type;
    const Regs &regs = get(op.operand(i));
    for (size_t j = 0; j < regs.v.size(); ++j) {
      llvm::Value *index = b.CreateAdd(tid, i32(static_cast<int64_t>(j) * T));
      llvm::Value *at = sharedAddr(exchangeBase + plan.offsets[i], index, sharedType(t));
      b.CreateStore(toShared(regs.v[j], t), at);
      places[i].push_back(at);
    }
  }
  clusterBarrier();
  auto *remoteTy = llvm::PointerType::get(ctx, 7); // shared::cluster
  for (int64_t r = 0; r < ranks; ++r)
    for (unsigned i = 0; i < n; ++i) {
      const Type &t = op.operand(i)->type;
      Regs out;
      for (llvm::Value *at : places[i]) {
        llvm::Value *remote = b.CreateIntrinsic(remoteTy, llvm::Intrinsic::nvvm_mapa_shared_cluster, {at, i32(r)});
        out.v.push_back(fromShared(b.CreateLoad(sharedType(t), remote), t));
      }
      set(op.result(static_cast<unsigned>(r * n + i)), std::move(out));
    }
  arrive(b);
  if (!deferClusterWait)
    wait(b);
}

} // namespace kiln::codegen::detail
