//===- GridSplitTest.cpp - Running a kernel split over programs ------------===//
//
// A kernel with ir::GridSplit is launched as its contract says: S programs for each
// program asked for, and a zeroed workspace, which the caller does not pass and does
// not get back, as the last parameter.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

namespace kiln::interp::test {
namespace {

/// out[pid] = workspace[pid + offset] + pid for every program of the split grid.
struct SplitKernel {
  KernelBuilder kb;
  explicit SplitKernel(int64_t offset) {
    Value *out = kb.ptrParam(DType::I32, "out");
    Value *workspace = kb.ptrParam(DType::I32, "workspace");
    kb.kernel().gridSplit = {3, 16};
    Value *pid = kb.programId(0);
    Value *word = kb.op(OpKind::PtrAdd, {workspace, kb.bin(OpKind::Add, pid, kb.ci(offset))}, workspace->type);
    Value *seen = kb.load(word);
    kb.store(kb.op(OpKind::PtrAdd, {out, pid}, out->type), kb.bin(OpKind::Add, seen, pid));
    kb.finish();
  }
};

TEST(GridSplit, RunsSProgramsPerProgramOverAZeroedWorkspace) {
  SplitKernel k(0);
  std::vector<Buffer> buffers = {intBuffer("out", DType::I32, std::vector<int64_t>(6, -1))};
  RunOptions options;
  options.grid = {2, 1, 1};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers, options);
  ASSERT_TRUE(o.ok) << o.message();
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(intsOf(buffers[0]), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(GridSplit, TheWorkspaceHoldsWorkspaceBytesPerProgramAskedFor) {
  // 2 programs asked for, 16 bytes each: 8 words, so program 5 reading word 8 is out.
  SplitKernel k(3);
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 6)};
  RunOptions options;
  options.grid = {2, 1, 1};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers, options);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.message().find("element 8 of 'the workspace of the split reduction' (8 elements)"), std::string::npos)
      << o.message();
  EXPECT_EQ(intsOf(buffers[0]), std::vector<int64_t>(6, 0)) << "a failed run changed the caller's buffer";
}

TEST(GridSplit, TheCallerDoesNotPassTheWorkspace) {
  SplitKernel k(0);
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 3), zeroBuffer("w", DType::I32, 16)};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, buffers);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.message(), "kernel 'k' takes 1 argument but 2 were given");
}

TEST(GridSplit, TheSplitGridMustFitAxisZero) {
  SplitKernel k(0);
  std::vector<Buffer> buffers = {zeroBuffer("out", DType::I32, 3)};
  RunOptions options;
  options.grid = {1'000'000'000, 1, 1};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0)}, buffers, options);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.message().find("runs 3 programs for each"), std::string::npos) << o.message();
}

} // namespace
} // namespace kiln::interp::test
