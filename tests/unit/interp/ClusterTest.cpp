//===- ClusterTest.cpp - Running the programs of a thread-block cluster ----===//
//
// A kernel split over clusters (ir::GridSplit::cluster) runs S programs for each
// program asked for, and its cluster_exchange hands every program of a cluster what
// each offered. The interpreter gets there by running a cluster in passes
// (ir/interp/Cluster.cpp); these tests pin down the values and the errors.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

namespace kiln::interp::test {
namespace {

constexpr int64_t kRanks = 3;

/// Each program offers 10·pid (and pid + 0.5 as f32), then writes, at out[pid·3 + r],
/// what rank r offered plus the f32 it offered truncated: a second exchange follows
/// when `twice`, offering the sum of the first.
struct ClusterKernel {
  KernelBuilder kb;
  ClusterKernel(bool twice, bool writeFirst = false) {
    Value *out = kb.ptrParam(DType::I32, "out");
    kb.kernel().gridSplit.segments = kRanks;
    kb.kernel().gridSplit.cluster = true;
    Value *pid = kb.programId(0);
    if (writeFirst)
      kb.store(out, pid);
    Value *ten = kb.bin(OpKind::Mul, pid, kb.ci(10));
    Value *half = kb.bin(OpKind::Add, kb.op(OpKind::Cast, {pid}, Type::scalar(DType::F32)), kb.cf(0.5));
    std::vector<Type> types;
    for (int64_t r = 0; r < kRanks; ++r) {
      types.push_back(Type::scalar(DType::I32));
      types.push_back(Type::scalar(DType::F32));
    }
    ir::Op *exchange = kb.make(OpKind::ClusterExchange, {ten, half}, types, {{"ranks", kRanks}});
    std::vector<Value *> got;
    for (int64_t r = 0; r < kRanks; ++r)
      got.push_back(kb.bin(OpKind::Add, exchange->result(2 * r),
                           kb.op(OpKind::Cast, {exchange->result(2 * r + 1)}, Type::scalar(DType::I32))));
    if (twice) {
      Value *sum = kb.bin(OpKind::Add, kb.bin(OpKind::Add, got[0], got[1]), got[2]);
      ir::Op *again = kb.make(OpKind::ClusterExchange, {sum}, std::vector<Type>(kRanks, Type::scalar(DType::I32)),
                              {{"ranks", kRanks}});
      for (int64_t r = 0; r < kRanks; ++r)
        got[r] = kb.bin(OpKind::Add, got[r], again->result(r));
    }
    Value *base = kb.bin(OpKind::Mul, pid, kb.ci(kRanks));
    for (int64_t r = 0; r < kRanks; ++r)
      kb.store(kb.op(OpKind::PtrAdd, {out, kb.bin(OpKind::Add, base, kb.ci(r))}, out->type), got[r]);
    kb.finish();
  }
};

TEST(Cluster, EveryProgramGetsWhatEachRankOffered) {
  ClusterKernel k(/*twice=*/false);
  std::vector<Buffer> buffers = {intBuffer("out", DType::I32, std::vector<int64_t>(18, -1))};
  RunOptions options;
  options.grid = {2, 1, 1}; // two clusters: programs 0..2 and 3..5
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers, options);
  ASSERT_TRUE(o.ok) << o.message();
  std::vector<int64_t> want;
  for (int64_t pid = 0; pid < 6; ++pid)
    for (int64_t r = 0; r < kRanks; ++r) {
      const int64_t peer = pid / kRanks * kRanks + r; // rank r of pid's cluster
      want.push_back(10 * peer + peer);
    }
  EXPECT_EQ(intsOf(buffers[0]), want);
}

TEST(Cluster, ALaterExchangeSeesTheValuesOfAnEarlierOne) {
  ClusterKernel k(/*twice=*/true);
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 9)};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers);
  ASSERT_TRUE(o.ok) << o.message();
  // The first exchange gives 11·r; every program then offers 0 + 11 + 22 = 33.
  std::vector<int64_t> want;
  for (int64_t pid = 0; pid < 3; ++pid)
    for (int64_t r = 0; r < kRanks; ++r)
      want.push_back(11 * r + 33);
  EXPECT_EQ(intsOf(buffers[0]), want);
}

TEST(Cluster, WritingBeforeAnExchangeIsReported) {
  ClusterKernel k(/*twice=*/false, /*writeFirst=*/true);
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 9)};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.message().find("writes memory or prints before this cluster_exchange"), std::string::npos)
      << o.message();
  EXPECT_EQ(intsOf(buffers[0]), std::vector<int64_t>(9, 0)) << "a failed run changed the caller's buffer";
}

TEST(Cluster, ProgramsThatDoNotMeetAreReported) {
  // Program 1 of the cluster skips the exchange (it sits under pid != 1).
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  kb.kernel().gridSplit.segments = 2;
  kb.kernel().gridSplit.cluster = true;
  Value *pid = kb.programId(0);
  Value *skip = kb.op(OpKind::Cmp, {pid, kb.ci(1)}, Type::scalar(DType::Bool), {{"pred", std::string("ne")}});
  ir::Op *branch = kb.make(OpKind::If, {skip}, {}, {}, 2);
  {
    ir::Builder then(branch->region(0));
    then.create(OpKind::ClusterExchange, Location{}, {pid}, {Type::scalar(DType::I32), Type::scalar(DType::I32)},
                {{"ranks", int64_t(2)}});
    then.create(OpKind::Yield, Location{}, {}, {});
    ir::Builder(branch->region(1)).create(OpKind::Yield, Location{}, {}, {});
  }
  kb.store(out, pid);
  kb.finish();
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 1)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, buffers);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.message().find("program (1, 0, 0) ends after 0 exchanges while the others run more"), std::string::npos)
      << o.message();
}

} // namespace
} // namespace kiln::interp::test
