//===- LowerCluster.cpp - Values shared by the programs of a cluster ------===//
//
// cluster_exchange on sm_90, through distributed shared memory:
//
//   every thread stores its registers of each operand in its program's arena
//   (register j of thread t at j·T + t);
//   barrier.cluster.arrive (release) + barrier.cluster.wait (acquire);
//   for each rank r: mapa turns each of those addresses into rank r's, and the thread
//   loads what the same thread of program r stored;
//   barrier.cluster.arrive + wait again: no program reuses its arena, or exits while
//   the others may still read it.
//
// Every program of a cluster lays its tiles out alike, so a thread finds its own
// elements at the same places in every program and no layout changes hands.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

void Lowering::clusterBarrier() {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, llvm::ArrayRef<llvm::Value *>{});
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, llvm::ArrayRef<llvm::Value *>{});
  // The wait also waits for every thread of this program.
  arenaInUse = {};
  outstanding.clear();
}

void Lowering::lowerClusterExchange(const ir::Op &op) {
  kiln_assert(nvptx, "cluster_exchange reaches code generation only for sm_90 (checkSupported)");
  const ScratchPlan plan = scratchPlan(op);
  const unsigned n = op.numOperands();
  const int64_t ranks = op.intAttr("ranks");
  beginSharedUse();
  std::vector<std::vector<llvm::Value *>> places(n); // this thread's arena addresses
  for (unsigned i = 0; i < n; ++i) {
    const Type &t = op.operand(i)->type;
    const Regs &regs = get(op.operand(i));
    for (size_t j = 0; j < regs.v.size(); ++j) {
      llvm::Value *index = b.CreateAdd(tid, i32(static_cast<int64_t>(j) * T));
      llvm::Value *at = sharedAddr(plan.offsets[i], index, sharedType(t));
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
  clusterBarrier();
}

} // namespace kiln::codegen::detail
