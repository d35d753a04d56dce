//===- ControlFlowTest.cpp - Interpreter: for/if/while and run-time errors ===//
//
// Structured control flow with carried values; the grid, program ids and the order of
// programs; argument checking; assert, print, the step limit; and the speed of a large
// elementwise kernel.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include <chrono>
#include <limits>

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

using Ints = std::vector<int64_t>;

/// Builds `for iv in range(lb, ub, step)` carrying `inits`; `body` receives the block's
/// arguments (iv first) and returns the values to yield.
ir::Op *
forLoop(KernelBuilder &kb, Value *lb, Value *ub, Value *step, std::vector<Value *> inits,
        const std::function<std::vector<Value *>(KernelBuilder &, std::vector<Value *>)> &body) {
  std::vector<Value *> operands = {lb, ub, step};
  std::vector<Type> resultTypes;
  for (Value *v : inits) {
    operands.push_back(v);
    resultTypes.push_back(v->type);
  }
  ir::Op *op = kb.make(OpKind::For, operands, resultTypes, {}, 1);
  ir::Block *block = op->region(0);
  std::vector<Value *> args = {block->addArgument(lb->type, "i")};
  for (Value *v : inits)
    args.push_back(block->addArgument(v->type));
  ir::Block *outer = kb.builder().block();
  auto pos = kb.builder().position();
  kb.builder().setInsertionPointToEnd(block);
  std::vector<Value *> yielded = body(kb, args);
  kb.builder().create(OpKind::Yield, kb.loc(), yielded, {});
  kb.builder().setInsertionPoint(outer, pos);
  return op;
}

/// Stores scalar `v` at out[index].
void storeScalar(KernelBuilder &kb, Value *out, int64_t index, Value *v) {
  Value *p = kb.ptrs(out, kb.ci(index, DType::I32, {1}));
  kb.store(p, kb.splat(v, {1}));
}

/// Runs a kernel with one i32 output buffer of `n` elements; returns its contents.
Ints runWithOutput(KernelBuilder &kb, size_t n, RunOptions opts = {}) {
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, n)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  EXPECT_TRUE(o.ok) << o.message();
  return intsOf(bufs[0]);
}

} // namespace

//===--------------------------------------------------------------------===//
// for
//===--------------------------------------------------------------------===//

TEST(InterpFor, CarriedSumsAndSteps) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  auto sumRange = [&](int64_t lb, int64_t ub, int64_t step) {
    ir::Op *f = forLoop(kb, kb.ci(lb), kb.ci(ub), kb.ci(step), {kb.ci(0)},
                        [](KernelBuilder &b, std::vector<Value *> a) {
                          return std::vector<Value *>{b.bin(OpKind::Add, a[1], a[0])};
                        });
    return f->result(0);
  };
  storeScalar(kb, out, 0, sumRange(0, 10, 1));  // 45
  storeScalar(kb, out, 1, sumRange(0, 10, 3));  // 0+3+6+9
  storeScalar(kb, out, 2, sumRange(10, 0, -3)); // 10+7+4+1
  storeScalar(kb, out, 3, sumRange(5, 5, 1));   // no iteration: the init
  storeScalar(kb, out, 4, sumRange(5, 0, 1));   // none either
  kb.finish();
  EXPECT_EQ(runWithOutput(kb, 5), (Ints{45, 18, 22, 0, 0}));
}

TEST(InterpFor, CarriedTilesAndSwappedYields) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  // (a, b) <- (b, a + b) five times from (0, 1): Fibonacci; the yield reads the old a.
  ir::Op *fib = forLoop(kb, kb.ci(0), kb.ci(5), kb.ci(1), {kb.ci(0), kb.ci(1)},
                        [](KernelBuilder &b, std::vector<Value *> a) {
                          return std::vector<Value *>{a[2], b.bin(OpKind::Add, a[1], a[2])};
                        });
  storeScalar(kb, out, 0, fib->result(0));
  storeScalar(kb, out, 1, fib->result(1));
  // A carried tile: acc += arange(0, 3) * i for i in 0..3.
  ir::Op *tile = forLoop(kb, kb.ci(0), kb.ci(4), kb.ci(1), {kb.ci(0, DType::I32, {3})},
                         [](KernelBuilder &b, std::vector<Value *> a) {
                           Value *scaled = b.bin(OpKind::Mul, b.arange(0, 3), b.splat(a[0], {3}));
                           return std::vector<Value *>{b.bin(OpKind::Add, a[1], scaled)};
                         });
  kb.store(kb.ptrs(out, kb.arange(2, 5)), tile->result(0));
  // A loop whose swap yields (b, a) an odd number of times.
  ir::Op *swap = forLoop(kb, kb.ci(0), kb.ci(3), kb.ci(1), {kb.ci(7), kb.ci(9)},
                         [](KernelBuilder &, std::vector<Value *> a) {
                           return std::vector<Value *>{a[2], a[1]};
                         });
  storeScalar(kb, out, 5, swap->result(0));
  storeScalar(kb, out, 6, swap->result(1));
  kb.finish();
  EXPECT_EQ(runWithOutput(kb, 7), (Ints{5, 8, 0, 6, 12, 9, 7}));
}

TEST(InterpFor, NestedLoopsAndI64BoundsNearTheLimit) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  // sum over i < 4, j < i of (i * 10 + j).
  ir::Op *outer = forLoop(
      kb, kb.ci(0), kb.ci(4), kb.ci(1), {kb.ci(0)}, [](KernelBuilder &b, std::vector<Value *> a) {
        ir::Op *inner = forLoop(
            b, b.ci(0), a[0], b.ci(1), {a[1]}, [&](KernelBuilder &c, std::vector<Value *> ia) {
              Value *term = c.bin(OpKind::Add, c.bin(OpKind::Mul, a[0], c.ci(10)), ia[0]);
              return std::vector<Value *>{c.bin(OpKind::Add, ia[1], term)};
            });
        return std::vector<Value *>{inner->result(0)};
      });
  storeScalar(kb, out, 0, outer->result(0));
  // i64 loops that end right at INT64_MAX must not wrap around and run forever.
  const int64_t big = std::numeric_limits<int64_t>::max();
  ir::Op *count =
      forLoop(kb, kb.ci(big - 2, DType::I64), kb.ci(big, DType::I64), kb.ci(1, DType::I64),
              {kb.ci(0)}, [](KernelBuilder &b, std::vector<Value *> a) {
                return std::vector<Value *>{b.bin(OpKind::Add, a[1], b.ci(1))};
              });
  storeScalar(kb, out, 1, count->result(0));
  ir::Op *jump =
      forLoop(kb, kb.ci(big - 3, DType::I64), kb.ci(big, DType::I64), kb.ci(5, DType::I64),
              {kb.ci(0)}, [](KernelBuilder &b, std::vector<Value *> a) {
                return std::vector<Value *>{b.bin(OpKind::Add, a[1], b.ci(1))};
              });
  storeScalar(kb, out, 2, jump->result(0));
  // Unsigned bounds compare as unsigned: 4000000000 .. 4000000003.
  ir::Op *u =
      forLoop(kb, kb.ci(4000000000LL, DType::U32), kb.ci(4000000003LL, DType::U32),
              kb.ci(1, DType::U32), {kb.ci(0)}, [](KernelBuilder &b, std::vector<Value *> a) {
                return std::vector<Value *>{b.bin(OpKind::Add, a[1], b.ci(1))};
              });
  storeScalar(kb, out, 3, u->result(0));
  kb.finish();
  // i=1: 10; i=2: 20+21; i=3: 30+31+32.
  EXPECT_EQ(runWithOutput(kb, 4), (Ints{10 + 41 + 93, 2, 1, 3}));
}

TEST(InterpFor, RuntimeStepZeroIsReported) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *step = kb.param(Type::scalar(DType::I32), "step");
  ir::Op *f = forLoop(kb, kb.ci(0), kb.ci(10), step, {kb.ci(0)},
                      [](KernelBuilder &b, std::vector<Value *> a) {
                        return std::vector<Value *>{b.bin(OpKind::Add, a[1], b.ci(1))};
                      });
  storeScalar(kb, out, 0, f->result(0));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofInt(0)}, bufs);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::LoopStepZero);
  EXPECT_EQ(o.diags[0].loc, f->loc());
  Outcome ok = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofInt(3)}, bufs);
  ASSERT_TRUE(ok.ok) << ok.message();
  EXPECT_EQ(intsOf(bufs[0]), (Ints{4}));
}

//===--------------------------------------------------------------------===//
// if and while
//===--------------------------------------------------------------------===//

TEST(InterpIf, PicksTheBranchAndItsResults) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *n = kb.param(Type::scalar(DType::I32), "n");
  Value *cond = kb.cmp("gt", n, kb.ci(5));
  ir::Op *ifOp =
      kb.make(OpKind::If, {cond}, {Type::scalar(DType::I32), Type::tile(DType::I32, {2})}, {}, 2);
  ir::Block *outer = kb.builder().block();
  kb.builder().setInsertionPointToEnd(ifOp->region(0));
  Value *t = kb.bin(OpKind::Mul, n, kb.ci(2));
  kb.builder().create(OpKind::Yield, kb.loc(), {t, kb.arange(0, 2)}, {});
  kb.builder().setInsertionPointToEnd(ifOp->region(1));
  kb.builder().create(OpKind::Yield, kb.loc(), {kb.ci(-1), kb.ci(9, DType::I32, {2})}, {});
  kb.builder().setInsertionPointToEnd(outer);
  storeScalar(kb, out, 0, ifOp->result(0));
  kb.store(kb.ptrs(out, kb.arange(1, 3)), ifOp->result(1));
  kb.finish();
  for (int64_t arg : {7, 3}) {
    std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 3)};
    ASSERT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofInt(arg)}, bufs).ok);
    EXPECT_EQ(intsOf(bufs[0]), arg == 7 ? (Ints{14, 0, 1}) : (Ints{-1, 9, 9}));
  }
}

TEST(InterpWhile, RunsWhileTheConditionHolds) {
  // (x, steps) = (3, 0); while x < limit: (x * 2, steps + 1).
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *limit = kb.param(Type::scalar(DType::I32), "limit");
  ir::Op *w = kb.make(OpKind::While, {kb.ci(3), kb.ci(0)},
                      {Type::scalar(DType::I32), Type::scalar(DType::I32)}, {}, 2);
  ir::Block *outer = kb.builder().block();
  ir::Block *before = w->region(0);
  Value *bx = before->addArgument(Type::scalar(DType::I32));
  before->addArgument(Type::scalar(DType::I32));
  kb.builder().setInsertionPointToEnd(before);
  kb.builder().create(OpKind::Condition, kb.loc(), {kb.cmp("lt", bx, limit)}, {});
  ir::Block *after = w->region(1);
  Value *ax = after->addArgument(Type::scalar(DType::I32));
  Value *as = after->addArgument(Type::scalar(DType::I32));
  kb.builder().setInsertionPointToEnd(after);
  kb.builder().create(OpKind::Yield, kb.loc(),
                      {kb.bin(OpKind::Mul, ax, kb.ci(2)), kb.bin(OpKind::Add, as, kb.ci(1))}, {});
  kb.builder().setInsertionPointToEnd(outer);
  storeScalar(kb, out, 0, w->result(0));
  storeScalar(kb, out, 1, w->result(1));
  kb.finish();
  for (int64_t lim : {100, 3, -5}) {
    std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 2)};
    ASSERT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofInt(lim)}, bufs).ok);
    EXPECT_EQ(intsOf(bufs[0]), lim == 100 ? (Ints{192, 6}) : (Ints{3, 0})) << lim;
  }
}

TEST(InterpWhile, EndlessLoopHitsTheStepLimit) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  ir::Op *w = kb.make(OpKind::While, {kb.ci(0)}, {Type::scalar(DType::I32)}, {}, 2);
  ir::Block *outer = kb.builder().block();
  ir::Block *before = w->region(0);
  before->addArgument(Type::scalar(DType::I32));
  kb.builder().setInsertionPointToEnd(before);
  kb.builder().create(OpKind::Condition, kb.loc(), {kb.cb(true)}, {});
  ir::Block *after = w->region(1);
  Value *ax = after->addArgument(Type::scalar(DType::I32));
  kb.builder().setInsertionPointToEnd(after);
  kb.builder().create(OpKind::Yield, kb.loc(), {kb.bin(OpKind::Add, ax, kb.ci(1))}, {});
  kb.builder().setInsertionPointToEnd(outer);
  storeScalar(kb, out, 0, w->result(0));
  kb.finish();
  std::vector<Buffer> bufs = {intBuffer("out", DType::I32, {42})};
  RunOptions opts;
  opts.maxSteps = 1000;
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  ASSERT_FALSE(o.ok);
  ASSERT_EQ(o.diags.size(), 1u);
  EXPECT_EQ(o.diags[0].code, DiagCode::StepLimit);
  EXPECT_EQ(o.message(), "interpreter step limit of 1000 exceeded; the kernel may loop forever");
  EXPECT_EQ(intsOf(bufs[0]), (Ints{42}));
}

TEST(InterpSteps, AnOpCountsItsElements) {
  // One store of 1024 elements is 1024 steps: an endless loop over a large tile meets
  // the limit as soon as a scalar one doing the same work.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  kb.store(kb.ptrs(out, kb.arange(0, 1024)), kb.splat(kb.programId(0), {1024}));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1024)};
  RunOptions opts;
  opts.maxSteps = 1000;
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::StepLimit);
  opts.maxSteps = 10000;
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts).ok);
}

TEST(InterpSteps, ADotCountsItsProducts) {
  // A [64, 64] x [64, 64] dot makes 4096 elements from 262144 products. It costs the
  // interpreter the products, so the limit counts those: a loop of large dots meets
  // the limit in the time a loop of elementwise ops would.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::F32, "out");
  Value *a = kb.cf(1.0, DType::F32, {64, 64});
  Value *d = kb.op(OpKind::Dot, {a, a}, Type::tile(DType::F32, {64, 64}));
  Value *row = kb.op(OpKind::Reduce, {d}, Type::tile(DType::F32, {64}),
                     {{"axis", int64_t{0}}, {"kind", std::string("sum")}});
  kb.store(kb.ptrRange(out, 64), row);
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::F32, 64)};
  RunOptions opts;
  opts.maxSteps = 200000; // far more than the elements any op makes, fewer than the products
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::StepLimit);
  opts.maxSteps = 300000;
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts).ok);
  EXPECT_EQ(floatsOf(bufs[0])[0], 64.0 * 64.0);
}

TEST(InterpSteps, LimitCountsOpsOverAllPrograms) {
  // A straight-line kernel of a handful of ops: fine once, too many over 1000 programs.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  kb.store(kb.ptrs(out, kb.ci(0, DType::I32, {1})), kb.splat(kb.programId(0), {1}));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1)};
  RunOptions opts;
  opts.maxSteps = 100;
  opts.grid = {10, 1, 1};
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts).ok);
  EXPECT_EQ(intsOf(bufs[0]), (Ints{9}));
  opts.grid = {1000, 1, 1};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::StepLimit);
  opts.maxSteps = 0; // no limit
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts).ok);
  EXPECT_EQ(intsOf(bufs[0]), (Ints{999}));
}

//===--------------------------------------------------------------------===//
// The grid
//===--------------------------------------------------------------------===//

TEST(InterpGrid, ProgramIdsOverA3DGridXFastest) {
  // Each program records 100x + 10y + z at its linear index, the grid size, and the
  // order in which it ran (an atomic counter's old value).
  KernelBuilder kb;
  Value *ids = kb.ptrParam(DType::I32, "ids");
  Value *order = kb.ptrParam(DType::I32, "order");
  Value *dims = kb.ptrParam(DType::I32, "dims");
  Value *x = kb.programId(0), *y = kb.programId(1), *z = kb.programId(2);
  auto np = [&](int axis) {
    return kb.op(OpKind::NumPrograms, {}, Type::scalar(DType::I32), {{"axis", int64_t(axis)}});
  };
  Value *linear =
      kb.bin(OpKind::Add, x,
             kb.bin(OpKind::Mul, np(0), kb.bin(OpKind::Add, y, kb.bin(OpKind::Mul, np(1), z))));
  Value *code = kb.bin(OpKind::Add, kb.bin(OpKind::Mul, x, kb.ci(100)),
                       kb.bin(OpKind::Add, kb.bin(OpKind::Mul, y, kb.ci(10)), z));
  Value *lin1 = kb.splat(linear, {1});
  kb.store(kb.ptrs(ids, lin1), kb.splat(code, {1}));
  Value *counter = kb.ptrs(dims, kb.ci(3, DType::I32, {1}));
  Value *old = kb.op(OpKind::AtomicRMW, {counter, kb.ci(1, DType::I32, {1})},
                     Type::tile(DType::I32, {1}), {{"kind", std::string("add")}});
  kb.store(kb.ptrs(order, lin1), old);
  for (int axis = 0; axis < 3; ++axis)
    kb.store(kb.ptrs(dims, kb.ci(axis, DType::I32, {1})), kb.splat(np(axis), {1}));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("ids", DType::I32, 24),
                              zeroBuffer("order", DType::I32, 24),
                              zeroBuffer("dims", DType::I32, 4)};
  RunOptions opts;
  opts.grid = {2, 3, 4};
  Outcome o = runKernelChecked(
      kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2)}, bufs, opts);
  ASSERT_TRUE(o.ok) << o.message();
  Ints expectIds, expectOrder;
  for (int zz = 0; zz < 4; ++zz)
    for (int yy = 0; yy < 3; ++yy)
      for (int xx = 0; xx < 2; ++xx) {
        expectIds.push_back(100 * xx + 10 * yy + zz);
        expectOrder.push_back(static_cast<int64_t>(expectOrder.size()));
      }
  EXPECT_EQ(intsOf(bufs[0]), expectIds);
  EXPECT_EQ(intsOf(bufs[1]), expectOrder);
  EXPECT_EQ(intsOf(bufs[2]), (Ints{2, 3, 4, 24}));
}

TEST(InterpGrid, BadGridIsRejected) {
  KernelBuilder kb;
  kb.ptrParam(DType::I32, "out");
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1)};
  for (std::array<int64_t, 3> g :
       {std::array<int64_t, 3>{0, 1, 1}, {1, -2, 1}, {1, 1, int64_t(1) << 40}}) {
    RunOptions opts;
    opts.grid = g;
    Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.diags[0].code, DiagCode::BadGrid);
  }
}

//===--------------------------------------------------------------------===//
// Arguments
//===--------------------------------------------------------------------===//

namespace {
/// kernel k(x: *f32, n: i32, s: f32, b: bool): x[0] = n; x[1] = s; x[2] = b.
struct ArgKernel {
  KernelBuilder kb{"scale"};
  ArgKernel() {
    Value *x = kb.ptrParam(DType::F32, "x");
    Value *n = kb.param(Type::scalar(DType::I32), "n");
    Value *s = kb.param(Type::scalar(DType::F32), "s");
    Value *b = kb.param(Type::scalar(DType::Bool), "b");
    storeScalar(kb, x, 0, kb.cast(n, DType::F32));
    storeScalar(kb, x, 1, s);
    storeScalar(kb, x, 2, kb.cast(b, DType::F32));
    kb.finish();
  }
};
} // namespace

TEST(InterpArgs, ScalarsConvertToTheParameterType) {
  ArgKernel k;
  std::vector<Buffer> bufs = {zeroBuffer("x", DType::F32, 3)};
  Outcome o = runKernelChecked(
      k.kb,
      {KernelArg::ofBuffer(0), KernelArg::ofFloat(-2.7), KernelArg::ofInt(3), KernelArg::ofInt(5)},
      bufs);
  ASSERT_TRUE(o.ok) << o.message();
  EXPECT_EQ(floatsOf(bufs[0]), (std::vector<double>{-2.0, 3.0, 1.0}));
  Outcome o2 = runKernelChecked(k.kb,
                                {KernelArg::ofBuffer(0), KernelArg::ofInt(int64_t(1) << 32 | 7),
                                 KernelArg::ofFloat(0.1), KernelArg::ofFloat(0.0)},
                                bufs);
  ASSERT_TRUE(o2.ok) << o2.message();
  EXPECT_EQ(floatsOf(bufs[0]), (std::vector<double>{7.0, double(0.1f), 0.0}));
}

TEST(InterpArgs, MismatchesAreReported) {
  ArgKernel k;
  auto expectError = [&](std::vector<KernelArg> args, std::vector<Buffer> bufs,
                         const std::string &message) {
    std::vector<Buffer> before = bufs;
    Outcome o = runKernelChecked(k.kb, args, bufs);
    ASSERT_FALSE(o.ok);
    ASSERT_FALSE(o.diags.empty());
    EXPECT_EQ(o.diags[0].code, DiagCode::RunArgument);
    EXPECT_EQ(o.message(), message);
    for (size_t i = 0; i < bufs.size(); ++i)
      EXPECT_EQ(bufs[i].data, before[i].data);
  };
  std::vector<Buffer> f32 = {zeroBuffer("x.npy", DType::F32, 3)};
  expectError({KernelArg::ofBuffer(0)}, f32, "kernel 'scale' takes 4 arguments but 1 was given");
  expectError(
      {KernelArg::ofInt(1), KernelArg::ofInt(1), KernelArg::ofFloat(1), KernelArg::ofInt(1)}, f32,
      "argument 1 ('x') of kernel 'scale' must be a buffer of f32, got an integer");
  expectError(
      {KernelArg::ofBuffer(0), KernelArg::ofBuffer(0), KernelArg::ofFloat(1), KernelArg::ofInt(1)},
      f32, "argument 2 ('n') of kernel 'scale' is a scalar i32, got a buffer");
  expectError(
      {KernelArg::ofBuffer(0), KernelArg::ofInt(1), KernelArg::ofFloat(1), KernelArg::ofInt(1)},
      {zeroBuffer("h.npy", DType::F16, 3)},
      "argument 1 ('x') of kernel 'scale' expects a buffer of f32 but 'h.npy' holds f16");
  expectError(
      {KernelArg::ofBuffer(3), KernelArg::ofInt(1), KernelArg::ofFloat(1), KernelArg::ofInt(1)},
      f32, "argument 1 ('x') of kernel 'scale' names buffer #3 but there is 1 buffer");
  Buffer ragged = zeroBuffer("r.npy", DType::F32, 3);
  ragged.data.pop_back();
  expectError(
      {KernelArg::ofBuffer(0), KernelArg::ofInt(1), KernelArg::ofFloat(1), KernelArg::ofInt(1)},
      {ragged}, "buffer 'r.npy' has 11 bytes, not a whole number of f32 elements");
}

//===--------------------------------------------------------------------===//
// assert and print
//===--------------------------------------------------------------------===//

TEST(InterpAssert, FailsWithMessageElementAndProgram) {
  // assert(arange(0, 4) < 4 - pid): program 0 passes, program 1 fails at element 3.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  kb.store(kb.ptrs(out, kb.splat(kb.programId(0), {1})), kb.ci(1, DType::I32, {1}));
  Value *limit = kb.bin(OpKind::Sub, kb.ci(4), kb.programId(0));
  Value *cond = kb.cmp("lt", kb.arange(0, 4), kb.splat(limit, {4}));
  kb.stmt(OpKind::Assert, {cond}, {{"message", std::string("index in range")}});
  Location assertLoc = kb.kernel().body->ops().back()->loc();
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 2)};
  RunOptions opts;
  opts.grid = {1, 1, 1};
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts).ok);
  EXPECT_EQ(intsOf(bufs[0]), (Ints{1, 0}));
  opts.grid = {2, 1, 1};
  std::vector<Buffer> fresh = {zeroBuffer("out", DType::I32, 2)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, fresh, opts);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::DeviceAssert);
  EXPECT_EQ(o.diags[0].loc, assertLoc);
  EXPECT_EQ(o.message(),
            "device assert failed: index in range (element [3] is false) in program (1, 0, 0)");
  EXPECT_EQ(intsOf(fresh[0]), (Ints{0, 0})); // nothing written back
}

TEST(InterpAssert, ScalarAssertAndTwoDimensionalIndex) {
  KernelBuilder kb;
  Value *n = kb.param(Type::scalar(DType::I32), "n");
  kb.stmt(OpKind::Assert, {kb.cmp("gt", n, kb.ci(0))},
          {{"message", std::string("n must be positive")}});
  Value *m = kb.op(OpKind::Reshape, {kb.arange(0, 6)}, Type::tile(DType::I32, {2, 3}));
  kb.stmt(OpKind::Assert, {kb.cmp("ne", m, kb.splat(n, {2, 3}))},
          {{"message", std::string("hit")}});
  kb.finish();
  std::vector<Buffer> none;
  Outcome o = runKernelChecked(kb, {KernelArg::ofInt(-1)}, none);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.message(), "device assert failed: n must be positive in program (0, 0, 0)");
  Outcome o2 = runKernelChecked(kb, {KernelArg::ofInt(4)}, none);
  ASSERT_FALSE(o2.ok);
  EXPECT_EQ(o2.message(),
            "device assert failed: hit (element [1, 1] is false) in program (0, 0, 0)");
  EXPECT_TRUE(runKernelChecked(kb, {KernelArg::ofInt(9)}, none).ok);
}

TEST(InterpPrint, FormatsScalarsTilesAndDTypes) {
  KernelBuilder kb;
  Value *x = kb.ptrParam(DType::F32, "x");
  Value *f = kb.load(kb.ptrRange(x, 2));
  Value *m = kb.op(OpKind::Reshape, {kb.arange(0, 6)}, Type::tile(DType::I32, {2, 3}));
  kb.stmt(OpKind::Print, {kb.programId(0), f, m}, {{"label", std::string("vals")}});
  kb.stmt(OpKind::Print,
          {kb.cb(true), kb.ci(255, DType::U8), kb.cf(0.1, DType::F16), kb.cf(0.1, DType::F64), x},
          {{"label", std::string("misc")}});
  kb.stmt(OpKind::Print, {}, {{"label", std::string("hello")}});
  kb.finish();
  std::vector<Buffer> bufs = {
      floatBuffer("x", DType::F32, {1.5, -std::numeric_limits<double>::infinity()})};
  RunOptions opts;
  opts.grid = {2, 1, 1};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs, opts);
  ASSERT_TRUE(o.ok) << o.message();
  EXPECT_EQ(o.printed, "[pid (0, 0, 0)] vals: 0, [1.5, -inf], [[0, 1, 2], [3, 4, 5]]\n"
                       "[pid (0, 0, 0)] misc: true, 255, 0.1, 0.1, &x[0]\n"
                       "[pid (0, 0, 0)] hello\n"
                       "[pid (1, 0, 0)] vals: 1, [1.5, -inf], [[0, 1, 2], [3, 4, 5]]\n"
                       "[pid (1, 0, 0)] misc: true, 255, 0.1, 0.1, &x[0]\n"
                       "[pid (1, 0, 0)] hello\n");
}

//===--------------------------------------------------------------------===//
// Limits and malformed IR
//===--------------------------------------------------------------------===//

TEST(InterpLimits, HugeTilesAreRefusedNotAllocated) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::F32, "out");
  Value *big = kb.cf(1.0, DType::F32, {int64_t(1) << 20, 1024});
  Value *s = kb.op(OpKind::Reduce, {big}, Type::tile(DType::F32, {1024}),
                   {{"axis", int64_t(0)}, {"kind", std::string("sum")}});
  kb.store(kb.ptrRange(out, 1024), s);
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::F32, 1024)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::InputTooLarge);
  EXPECT_EQ(o.diags[0].loc, big->definingOp()->loc());
}

TEST(InterpLimits, MalformedIRIsAnInternalError) {
  // A for op with a result whose body never yields: the verifier rejects it, and an
  // interpreter handed it anyway raises an internal error instead of misbehaving.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  ir::Op *f = kb.make(OpKind::For, {kb.ci(0), kb.ci(4), kb.ci(1), kb.ci(0)},
                      {Type::scalar(DType::I32)}, {}, 1);
  f->region(0)->addArgument(Type::scalar(DType::I32));
  f->region(0)->addArgument(Type::scalar(DType::I32));
  storeScalar(kb, out, 0, f->result(0));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1)};
  std::ostringstream sink;
  DiagnosticEngine diags(*kb.module().sources, sink);
  EXPECT_THROW(runKernel(kb.kernel(), {KernelArg::ofBuffer(0)}, bufs, RunOptions{}, diags),
               InternalCompilerError);
  EXPECT_EQ(intsOf(bufs[0]), (Ints{0}));
}

//===--------------------------------------------------------------------===//
// Speed
//===--------------------------------------------------------------------===//

TEST(InterpSpeed, MillionElementElementwiseKernel) {
  // out = x * 2 + y over 2^20 elements, 1024 programs of 1024 lanes.
  constexpr int64_t kBlock = 1024, kPrograms = 1024, kN = kBlock * kPrograms;
  KernelBuilder kb;
  Value *x = kb.ptrParam(DType::F32, "x");
  Value *y = kb.ptrParam(DType::F32, "y");
  Value *out = kb.ptrParam(DType::F32, "out");
  Value *offs =
      kb.bin(OpKind::Add, kb.splat(kb.bin(OpKind::Mul, kb.programId(0), kb.ci(kBlock)), {kBlock}),
             kb.arange(0, kBlock));
  Value *mask = kb.cmp("lt", offs, kb.ci(kN, DType::I32, {kBlock}));
  Value *xv = kb.load(kb.ptrs(x, offs), mask);
  Value *yv = kb.load(kb.ptrs(y, offs), mask);
  Value *r = kb.bin(OpKind::Add, kb.bin(OpKind::Mul, xv, kb.cf(2.0, DType::F32, {kBlock})), yv);
  kb.store(kb.ptrs(out, offs), r, mask);
  kb.finish();
  std::vector<double> xs(kN), ys(kN);
  for (int64_t i = 0; i < kN; ++i) {
    xs[i] = double(i % 1000) * 0.5;
    ys[i] = -double(i % 7);
  }
  std::vector<Buffer> bufs = {floatBuffer("x", DType::F32, xs), floatBuffer("y", DType::F32, ys),
                              zeroBuffer("out", DType::F32, kN)};
  RunOptions opts;
  opts.grid = {kPrograms, 1, 1};
  auto start = std::chrono::steady_clock::now();
  Outcome o = runKernelChecked(
      kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2)}, bufs, opts);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(o.ok) << o.message();
  std::vector<double> got = floatsOf(bufs[2]);
  for (int64_t i = 0; i < kN; i += 4099)
    ASSERT_EQ(got[i], xs[i] * 2 + ys[i]) << i;
  EXPECT_EQ(got[kN - 1], xs[kN - 1] * 2 + ys[kN - 1]);
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
  // Only an optimised, uninstrumented build says anything about speed.
  EXPECT_LT(seconds, 1.0) << "a 1M-element elementwise kernel took " << seconds << " s";
#else
  (void)seconds;
#endif
}
