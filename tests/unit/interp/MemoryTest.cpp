//===- MemoryTest.cpp - Interpreter: loads, stores, bounds and atomics ----===//
//
// Memory semantics: bit-exact copies for every dtype, masks and `other`, bounds
// checking with the exact message and location, buffers left untouched by a failed
// run, the `written` flag, aliasing arguments and the atomics applied lane by lane.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

/// out[i] = x[i] for n elements of dtype t.
Buffer copyThrough(const Buffer &x) {
  return mapKernel({x}, x.dtype, [](KernelBuilder &, std::vector<Value *> v) { return v[0]; });
}

Buffer rawBuffer(std::string name, DType t, const std::vector<uint64_t> &bits) {
  Buffer b = zeroBuffer(std::move(name), t, bits.size());
  unsigned bytes = dtypeBytes(t);
  for (size_t i = 0; i < bits.size(); ++i)
    std::memcpy(b.data.data() + i * bytes, &bits[i], bytes);
  return b;
}

} // namespace

TEST(InterpMemory, CopiesAreBitExactForEveryDType) {
  // Every pattern of the 8- and 16-bit float formats, NaN payloads and e5m2
  // infinities included, survives a load and a store unchanged.
  for (DType t : {DType::F8E4M3, DType::F8E5M2, DType::F16, DType::BF16}) {
    std::vector<uint64_t> bits(size_t(1) << (8 * dtypeBytes(t)));
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = i;
    Buffer in = rawBuffer("x", t, bits);
    EXPECT_EQ(bitsOf(copyThrough(in)), bits) << dtypeName(t);
  }
  std::vector<uint64_t> words = {0,          1,          0x7F800000, 0xFF800000,
                                 0x7F800001, 0x7FC00000, 0xFFFFFFFF, 0x80000000,
                                 0x00000001, 0x3F800000, 0x12345678};
  for (DType t : {DType::F32, DType::I32, DType::U32})
    EXPECT_EQ(bitsOf(copyThrough(rawBuffer("x", t, words))), words) << dtypeName(t);
  std::vector<uint64_t> dwords = {0,
                                  0x7FF0000000000001,
                                  0xFFF8000000000000,
                                  0x8000000000000000,
                                  0xFFFFFFFFFFFFFFFF,
                                  0x0123456789ABCDEF};
  for (DType t : {DType::F64, DType::I64, DType::U64})
    EXPECT_EQ(bitsOf(copyThrough(rawBuffer("x", t, dwords))), dwords) << dtypeName(t);
  std::vector<uint64_t> bytes = {0, 1, 0x7F, 0x80, 0xFF};
  for (DType t : {DType::I8, DType::U8})
    EXPECT_EQ(bitsOf(copyThrough(rawBuffer("x", t, bytes))), bytes) << dtypeName(t);
}

TEST(InterpMemory, BoolIsOneByteZeroOrOne) {
  // A nonzero byte reads as true and is written back as 1.
  Buffer in = rawBuffer("b", DType::Bool, {0, 1, 2, 0xFF});
  EXPECT_EQ(bitsOf(copyThrough(in)), (std::vector<uint64_t>{0, 1, 1, 1}));
  EXPECT_EQ(in.data.size(), 4u);
}

TEST(InterpMemory, MaskedLoadUsesOtherAndNeverTouchesMaskedLanes) {
  // x has 5 elements; 8 lanes are loaded under offs < 5, so lanes 5..7 would be out of
  // bounds if they were read.
  for (bool withOther : {true, false}) {
    KernelBuilder kb;
    Value *x = kb.ptrParam(DType::F32, "x");
    Value *out = kb.ptrParam(DType::F32, "out");
    Value *offs = kb.arange(0, 8);
    Value *mask = kb.cmp("lt", offs, kb.ci(5, DType::I32, {8}));
    Value *other = withOther ? kb.cf(-1.5, DType::F32, {8}) : nullptr;
    Value *v = kb.load(kb.ptrs(x, offs), mask, other);
    kb.store(kb.ptrs(out, offs), v);
    kb.finish();
    std::vector<Buffer> bufs = {floatBuffer("x", DType::F32, {1, 2, 3, 4, 5}),
                                zeroBuffer("out", DType::F32, 8)};
    Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
    ASSERT_TRUE(o.ok) << o.message();
    double fill = withOther ? -1.5 : 0.0;
    EXPECT_EQ(floatsOf(bufs[1]), (std::vector<double>{1, 2, 3, 4, 5, fill, fill, fill}));
    EXPECT_TRUE(bufs[1].written);
    EXPECT_FALSE(bufs[0].written); // only read
  }
}

TEST(InterpMemory, MaskedStoreWritesOnlyActiveLanes) {
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *offs = kb.arange(0, 8);
  // Even lanes only; the pointers of lanes >= 4 are out of bounds but masked off.
  Value *even =
      kb.cmp("eq", kb.bin(OpKind::Rem, offs, kb.ci(2, DType::I32, {8})), kb.ci(0, DType::I32, {8}));
  Value *inRange = kb.cmp("lt", offs, kb.ci(4, DType::I32, {8}));
  Value *mask = kb.bin(OpKind::And, even, inRange);
  kb.store(kb.ptrs(out, offs), kb.bin(OpKind::Add, offs, kb.ci(100, DType::I32, {8})), mask);
  kb.finish();
  std::vector<Buffer> bufs = {intBuffer("out", DType::I32, {-1, -1, -1, -1})};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs);
  ASSERT_TRUE(o.ok) << o.message();
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{100, -1, 102, -1}));
}

TEST(InterpMemory, StoreLanesApplyInRowMajorOrder) {
  // Every lane stores to element 0: the last lane wins.
  KernelBuilder kb;
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *zeros = kb.ci(0, DType::I32, {4});
  kb.store(kb.ptrs(out, zeros), kb.arange(10, 14));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("out", DType::I32, 1)};
  ASSERT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0)}, bufs).ok);
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{13}));
}

namespace {
/// offs = program_id(0) * 256 + arange(0, 256) + shift; out[offs] = x[offs] + 1.
struct ShiftedCopy {
  KernelBuilder kb;
  ir::Op *loadOp = nullptr, *storeOp = nullptr;

  explicit ShiftedCopy(int64_t loadShift, int64_t storeShift) {
    Value *x = kb.ptrParam(DType::F32, "x");
    Value *out = kb.ptrParam(DType::F32, "out");
    Value *base = kb.bin(OpKind::Mul, kb.programId(0), kb.ci(256));
    Value *offs = kb.bin(OpKind::Add, kb.splat(base, {256}), kb.arange(0, 256));
    Value *lo = kb.bin(OpKind::Add, offs, kb.ci(loadShift, DType::I32, {256}));
    Value *so = kb.bin(OpKind::Add, offs, kb.ci(storeShift, DType::I32, {256}));
    Value *v = kb.load(kb.ptrs(x, lo));
    loadOp = v->definingOp();
    storeOp = kb.store(kb.ptrs(out, so), kb.bin(OpKind::Add, v, kb.cf(1.0, DType::F32, {256})));
    kb.finish();
  }
};
} // namespace

TEST(InterpMemory, OutOfBoundsLoadIsReportedAndBuffersStayUntouched) {
  ShiftedCopy k(/*loadShift=*/6, /*storeShift=*/0);
  std::vector<Buffer> bufs = {floatBuffer("x", DType::F32, std::vector<double>(1024, 2.0)),
                              floatBuffer("out", DType::F32, std::vector<double>(1024, 7.0))};
  std::vector<Buffer> before = bufs;
  RunOptions opts;
  opts.grid = {4, 1, 1};
  Outcome o = runKernelChecked(k.kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs, opts);
  ASSERT_FALSE(o.ok);
  ASSERT_EQ(o.diags.size(), 1u);
  EXPECT_EQ(o.diags[0].code, DiagCode::OutOfBounds);
  EXPECT_EQ(o.diags[0].loc, k.loadOp->loc());
  EXPECT_EQ(o.message(),
            "load out of bounds: element 1024 of 'x' (1024 elements) in program (3, 0, 0)");
  // Programs 0..2 stored before program 3 failed; none of it may reach the caller.
  EXPECT_EQ(bufs[1].data, before[1].data);
  EXPECT_FALSE(bufs[1].written);
  EXPECT_EQ(bufs[0].data, before[0].data);

  // The same kernel with the shift removed succeeds and writes everything.
  ShiftedCopy ok(0, 0);
  Outcome o2 =
      runKernelChecked(ok.kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs, opts);
  ASSERT_TRUE(o2.ok) << o2.message();
  EXPECT_EQ(floatsOf(bufs[1]), std::vector<double>(1024, 3.0));
  EXPECT_TRUE(bufs[1].written);
}

TEST(InterpMemory, NegativeIndexAndOutOfBoundsStore) {
  ShiftedCopy neg(-1, 0);
  std::vector<Buffer> bufs = {zeroBuffer("x", DType::F32, 256), zeroBuffer("out", DType::F32, 256)};
  Outcome o = runKernelChecked(neg.kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.message(),
            "load out of bounds: element -1 of 'x' (256 elements) in program (0, 0, 0)");

  ShiftedCopy st(0, 1);
  Outcome o2 = runKernelChecked(st.kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
  ASSERT_FALSE(o2.ok);
  EXPECT_EQ(o2.diags[0].code, DiagCode::OutOfBounds);
  EXPECT_EQ(o2.diags[0].loc, st.storeOp->loc());
  EXPECT_EQ(o2.message(),
            "store out of bounds: element 256 of 'out' (256 elements) in program (0, 0, 0)");
  EXPECT_EQ(floatsOf(bufs[1]), std::vector<double>(256, 0.0)); // lanes 0..254 were not kept
}

TEST(InterpMemory, PointersCannotReachAnotherBuffer) {
  // x is first; stepping past its end must not land in y even if y follows it.
  KernelBuilder kb;
  Value *x = kb.ptrParam(DType::I32, "x");
  Value *y = kb.ptrParam(DType::I32, "y");
  Value *v = kb.load(kb.ptrs(x, kb.ci(4, DType::I32, {1})));
  kb.store(kb.ptrs(y, kb.ci(0, DType::I32, {1})), v);
  kb.finish();
  std::vector<Buffer> bufs = {intBuffer("x", DType::I32, {1, 2, 3, 4}),
                              intBuffer("y", DType::I32, {5, 6})};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.message(), "load out of bounds: element 4 of 'x' (4 elements) in program (0, 0, 0)");
}

TEST(InterpMemory, AliasedArgumentsShareOneBuffer) {
  // in-place: out and x name the same buffer.
  KernelBuilder kb;
  Value *x = kb.ptrParam(DType::I32, "x");
  Value *out = kb.ptrParam(DType::I32, "out");
  Value *v = kb.load(kb.ptrRange(x, 3));
  kb.store(kb.ptrRange(out, 3), kb.bin(OpKind::Mul, v, kb.ci(10, DType::I32, {3})));
  Value *again = kb.load(kb.ptrRange(x, 3)); // sees the store
  kb.store(kb.ptrs(out, kb.arange(3, 6)), again);
  kb.finish();
  std::vector<Buffer> bufs = {intBuffer("x", DType::I32, {1, 2, 3, 0, 0, 0})};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(0)}, bufs);
  ASSERT_TRUE(o.ok) << o.message();
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{10, 20, 30, 10, 20, 30}));
}

TEST(InterpMemory, PointerComparisonAndArithmetic) {
  KernelBuilder kb;
  Value *x = kb.ptrParam(DType::I32, "x");
  Value *out = kb.ptrParam(DType::Bool, "out");
  Value *p = kb.ptrs(x, kb.arange(0, 4));
  Value *q = kb.ptrs(x, kb.op(OpKind::Sub, {kb.ci(3, DType::I32, {4}), kb.arange(0, 4)},
                              Type::tile(DType::I32, {4})));
  Value *lt = kb.cmp("lt", p, q);
  Value *eq = kb.cmp("eq", p, q);
  kb.store(kb.ptrRange(out, 4), lt);
  kb.store(kb.ptrs(out, kb.arange(4, 8)), eq);
  // u8 offsets are unsigned: 255 is +255, not -1.
  Value *u = kb.ptrs(x, kb.ci(255, DType::U8, {1}));
  Value *back = kb.op(OpKind::PtrAdd, {u, kb.ci(-254, DType::I32, {1})}, u->type);
  kb.store(kb.ptrs(out, kb.ci(8, DType::I32, {1})),
           kb.cmp("eq", back, kb.ptrs(x, kb.ci(1, DType::I32, {1}))));
  kb.finish();
  std::vector<Buffer> bufs = {zeroBuffer("x", DType::I32, 4), zeroBuffer("out", DType::Bool, 9)};
  Outcome o = runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
  ASSERT_TRUE(o.ok) << o.message();
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{1, 1, 0, 0, 0, 0, 0, 0, 1}));
}

//===--------------------------------------------------------------------===//
// Atomics
//===--------------------------------------------------------------------===//

namespace {
/// old = atomic_<kind>(p + offs, vals, mask?) with the old values stored to `old`;
/// `extra` adds attributes (sem, scope) to the op.
Outcome atomicKernel(const char *kind, DType t, std::vector<int64_t> offs,
                     Value *(*vals)(KernelBuilder &, int64_t), std::vector<Buffer> &bufs,
                     bool maskOddLanes = false, ir::AttrMap extra = {}) {
  KernelBuilder kb;
  const int64_t n = static_cast<int64_t>(offs.size());
  Value *p = kb.ptrParam(t, "mem");
  Value *oldOut = kb.ptrParam(t, "old");
  Value *o = kb.ci(0, DType::I32, {n});
  for (int64_t i = 0; i < n; ++i) {
    // offs as a constant tile: select lane i's offset by comparing with arange.
    Value *isLane = kb.cmp("eq", kb.arange(0, n), kb.ci(i, DType::I32, {n}));
    o = kb.op(OpKind::Select, {isLane, kb.ci(offs[i], DType::I32, {n}), o}, o->type);
  }
  std::vector<Value *> operands = {kb.ptrs(p, o), vals(kb, n)};
  if (maskOddLanes)
    operands.push_back(kb.cmp("eq", kb.bin(OpKind::Rem, kb.arange(0, n), kb.ci(2, DType::I32, {n})),
                              kb.ci(0, DType::I32, {n})));
  extra["kind"] = std::string(kind);
  Value *old = kb.op(OpKind::AtomicRMW, operands, Type::tile(t, {n}), std::move(extra));
  kb.store(kb.ptrRange(oldOut, n), old);
  kb.finish();
  return runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs);
}
} // namespace

TEST(InterpAtomics, AddAppliesLaneByLaneAndReturnsOldValues) {
  std::vector<Buffer> bufs = {intBuffer("mem", DType::I32, {100, 0}),
                              zeroBuffer("old", DType::I32, 4)};
  Outcome o = atomicKernel(
      "add", DType::I32, {0, 0, 1, 0},
      [](KernelBuilder &kb, int64_t n) {
        return kb.bin(OpKind::Add, kb.arange(0, n), kb.ci(1, DType::I32, {n}));
      },
      bufs);
  ASSERT_TRUE(o.ok) << o.message();
  // Lanes add 1, 2, 3, 4 in order: element 0 sees 100 -> 101 -> 103 -> 107.
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{107, 3}));
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{100, 101, 0, 103}));
  EXPECT_TRUE(bufs[0].written);
}

TEST(InterpAtomics, MaskedLanesReturnZeroAndDoNothing) {
  std::vector<Buffer> bufs = {intBuffer("mem", DType::I32, {5, 6}),
                              intBuffer("old", DType::I32, {9, 9, 9, 9})};
  Outcome o = atomicKernel(
      "xchg", DType::I32, {0, 1, 1, 0},
      [](KernelBuilder &kb, int64_t n) { return kb.arange(20, 20 + n); }, bufs,
      /*maskOddLanes=*/true);
  ASSERT_TRUE(o.ok) << o.message();
  // Lane 0 swaps 20 into element 0, lane 2 swaps 22 into element 1; lanes 1, 3 are off.
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{20, 22}));
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{5, 0, 6, 0}));
}

TEST(InterpAtomics, MaxMinOnIntsAndFloats) {
  std::vector<Buffer> bufs = {intBuffer("mem", DType::U32, {10, 10}),
                              zeroBuffer("old", DType::U32, 3)};
  ASSERT_TRUE(atomicKernel(
                  "max", DType::U32, {0, 0, 1},
                  [](KernelBuilder &kb, int64_t n) {
                    Value *v =
                        kb.op(OpKind::Select,
                              {kb.cmp("eq", kb.arange(0, n), kb.ci(1, DType::I32, {n})),
                               kb.ci(0xFFFFFFFFLL, DType::U32, {n}), kb.ci(3, DType::U32, {n})},
                              Type::tile(DType::U32, {n}));
                    return v;
                  },
                  bufs)
                  .ok);
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{0xFFFFFFFFLL, 10}));
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{10, 10, 10}));

  // Float min ignores a NaN operand.
  std::vector<Buffer> fb = {floatBuffer("mem", DType::F32, {1.0, 5.0}),
                            zeroBuffer("old", DType::F32, 2)};
  ASSERT_TRUE(atomicKernel(
                  "min", DType::F32, {0, 1},
                  [](KernelBuilder &kb, int64_t n) {
                    return kb.op(OpKind::Select,
                                 {kb.cmp("eq", kb.arange(0, n), kb.ci(0, DType::I32, {n})),
                                  kb.cf(std::nan(""), DType::F32, {n}),
                                  kb.cf(-2.0, DType::F32, {n})},
                                 Type::tile(DType::F32, {n}));
                  },
                  fb)
                  .ok);
  EXPECT_EQ(floatsOf(fb[0]), (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(floatsOf(fb[1]), (std::vector<double>{1.0, 5.0}));
}

TEST(InterpAtomics, BitwiseKindsFoldLaneByLane) {
  // i8 memory: the slots hold sign-extended values, which the bitwise ops keep so.
  auto lanes = [](KernelBuilder &kb, int64_t n) {
    // -128, 0x0F, 0x70, -1 (as i8)
    Value *v = kb.ci(-1, DType::I8, {n});
    const int64_t vals[] = {-128, 0x0F, 0x70};
    for (int64_t i = 0; i < 3; ++i)
      v = kb.op(OpKind::Select,
                {kb.cmp("eq", kb.arange(0, n), kb.ci(i, DType::I32, {n})),
                 kb.ci(vals[i], DType::I8, {n}), v},
                Type::tile(DType::I8, {n}));
    return v;
  };
  struct Expect {
    const char *kind;
    std::vector<int64_t> mem, old;
  };
  // Lanes 0, 1, 3 hit element 0 (initially 0x33 = 51), lane 2 element 1 (initially -2).
  const Expect cases[] = {
      // 51 | -128 = -77 (0xB3), | 0x0F = -65 (0xBF), | -1 = -1; -2 | 0x70 = -2.
      {"or", {-1, -2}, {51, -77, -2, -65}},
      // 51 & -128 = 0, & 0x0F = 0, & -1 = 0; -2 & 0x70 = 112.
      {"and", {0, 112}, {51, 0, -2, 0}},
      // 51 ^ -128 = -77, ^ 0x0F = -68 (0xBC), ^ -1 = 67; -2 ^ 0x70 = -114 (0x8E).
      {"xor", {67, -114}, {51, -77, -2, -68}},
  };
  for (const Expect &e : cases) {
    std::vector<Buffer> bufs = {intBuffer("mem", DType::I8, {51, -2}),
                                zeroBuffer("old", DType::I8, 4)};
    Outcome o = atomicKernel(e.kind, DType::I8, {0, 0, 1, 0}, lanes, bufs);
    ASSERT_TRUE(o.ok) << e.kind << ": " << o.message();
    EXPECT_EQ(intsOf(bufs[1]), e.old) << e.kind;
    EXPECT_EQ(intsOf(bufs[0]), e.mem) << e.kind;
  }
}

TEST(InterpAtomics, BitwiseOnU64KeepsTheHighBit) {
  std::vector<Buffer> bufs = {intBuffer("mem", DType::U64, {int64_t(0x8000000000000001ULL)}),
                              zeroBuffer("old", DType::U64, 2)};
  Outcome o = atomicKernel(
      "xor", DType::U64, {0, 0},
      [](KernelBuilder &kb, int64_t n) {
        return kb.ci(int64_t(0xC000000000000000ULL), DType::U64, {n});
      },
      bufs);
  ASSERT_TRUE(o.ok) << o.message();
  // Two xors with the same value cancel; the first returns the initial value.
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{int64_t(0x8000000000000001ULL)}));
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{int64_t(0x8000000000000001ULL),
                                                   int64_t(0x4000000000000001ULL)}));
}

TEST(InterpAtomics, SemAndScopeChangeNothingInASequentialRun) {
  // The interpreter runs one program at a time: every ordering gives the same result.
  for (const char *sem : {"acq_rel", "acquire", "release", "relaxed"})
    for (const char *scope : {"gpu", "cta", "sys"}) {
      std::vector<Buffer> bufs = {intBuffer("mem", DType::I32, {100, 0}),
                                  zeroBuffer("old", DType::I32, 4)};
      Outcome o = atomicKernel(
          "add", DType::I32, {0, 0, 1, 0},
          [](KernelBuilder &kb, int64_t n) {
            return kb.bin(OpKind::Add, kb.arange(0, n), kb.ci(1, DType::I32, {n}));
          },
          bufs, false, {{"sem", std::string(sem)}, {"scope", std::string(scope)}});
      ASSERT_TRUE(o.ok) << sem << " " << scope << ": " << o.message();
      EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{107, 3}));
      EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{100, 101, 0, 103}));
    }
}

TEST(InterpAtomics, F16AddRoundsEachStep) {
  // 2048 + 1 in f16 is 2048 (tie to even) each time: adding 1 four times changes nothing.
  std::vector<Buffer> bufs = {floatBuffer("mem", DType::F16, {2048.0}),
                              zeroBuffer("old", DType::F16, 4)};
  ASSERT_TRUE(atomicKernel(
                  "add", DType::F16, {0, 0, 0, 0},
                  [](KernelBuilder &kb, int64_t n) { return kb.cf(1.0, DType::F16, {n}); }, bufs)
                  .ok);
  EXPECT_EQ(floatsOf(bufs[0]), (std::vector<double>{2048.0}));
}

TEST(InterpAtomics, CompareAndSwap) {
  KernelBuilder kb;
  Value *p = kb.ptrParam(DType::I32, "mem");
  Value *oldOut = kb.ptrParam(DType::I32, "old");
  Value *ptrs = kb.ptrs(p, kb.ci(0, DType::I32, {4}));
  // Lane i: if *p == i then *p = i + 1. Lanes run in order, so the counter climbs.
  Value *cmpv = kb.arange(0, 4);
  Value *newv = kb.arange(1, 5);
  Value *old = kb.op(OpKind::AtomicCas, {ptrs, cmpv, newv}, Type::tile(DType::I32, {4}));
  kb.store(kb.ptrRange(oldOut, 4), old);
  kb.finish();
  std::vector<Buffer> bufs = {intBuffer("mem", DType::I32, {1}), zeroBuffer("old", DType::I32, 4)};
  ASSERT_TRUE(runKernelChecked(kb, {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs).ok);
  // Lane 0 (cmp 0) fails, lane 1 (cmp 1) writes 2, lane 2 writes 3, lane 3 writes 4.
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{4}));
  EXPECT_EQ(intsOf(bufs[1]), (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(InterpAtomics, OutOfBoundsAtomicIsReported) {
  std::vector<Buffer> bufs = {intBuffer("mem", DType::I32, {0, 0}),
                              zeroBuffer("old", DType::I32, 2)};
  Outcome o = atomicKernel(
      "add", DType::I32, {1, 2},
      [](KernelBuilder &kb, int64_t n) { return kb.ci(1, DType::I32, {n}); }, bufs);
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.diags[0].code, DiagCode::OutOfBounds);
  EXPECT_EQ(o.message(),
            "atomic_add out of bounds: element 2 of 'mem' (2 elements) in program (0, 0, 0)");
  EXPECT_EQ(intsOf(bufs[0]), (std::vector<int64_t>{0, 0})); // lane 0's add was discarded
  EXPECT_FALSE(bufs[0].written);
}
