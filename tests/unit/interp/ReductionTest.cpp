//===- ReductionTest.cpp - Interpreter: reduce, scan, arg*, sort, topk, dot ===//
//
// Reductions combine from index 0 upwards with one rounding per step, which several
// tests make visible with values whose sum depends on the order. Custom combiners are
// deliberately non-associative for the same reason.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Shape without(Shape s, int64_t axis) {
  s.erase(s.begin() + axis);
  return s;
}

Value *reduce(KernelBuilder &kb, Value *x, const char *kind, int64_t axis) {
  return kb.op(OpKind::Reduce, {x}, x->type.withShape(without(x->type.shape, axis)),
               {{"axis", axis}, {"kind", std::string(kind)}});
}

Value *scan(KernelBuilder &kb, Value *x, const char *kind, int64_t axis) {
  return kb.op(OpKind::Scan, {x}, x->type, {{"axis", axis}, {"kind", std::string(kind)}});
}

/// reduce/scan with the combiner acc * 2 + x (not associative, so the order shows).
Value *customCombine(KernelBuilder &kb, Value *x, int64_t axis, bool isScan) {
  Type resultT = isScan ? x->type : x->type.withShape(without(x->type.shape, axis));
  ir::Op *op = kb.make(isScan ? OpKind::Scan : OpKind::Reduce, {x}, {resultT},
                       {{"axis", axis}, {"kind", std::string("custom")}}, 1);
  ir::Block *body = op->region(0);
  Type elem = Type::scalar(x->type.dtype);
  Value *acc = body->addArgument(elem, "acc");
  Value *e = body->addArgument(elem, "x");
  ir::Builder rb(body);
  Value *two = isFloat(elem.dtype) ? rb.floatConstant(kb.loc(), elem, 2.0)
                                   : rb.intConstant(kb.loc(), elem, 2);
  Value *m = rb.createValue(OpKind::Mul, kb.loc(), {acc, two}, elem);
  Value *s = rb.createValue(OpKind::Add, kb.loc(), {m, e}, elem);
  rb.create(OpKind::Yield, kb.loc(), {s}, {});
  return op->result();
}

Ints intResult(const std::pair<Buffer, Shape> &in, DType outT,
               const std::function<Value *(KernelBuilder &, Value *)> &f) {
  return intsOf(mapShaped({in}, outT,
                          [&](KernelBuilder &kb, std::vector<Value *> v) { return f(kb, v[0]); }));
}

Floats floatResult(const std::pair<Buffer, Shape> &in, DType outT,
                   const std::function<Value *(KernelBuilder &, Value *)> &f) {
  return floatsOf(mapShaped(
      {in}, outT, [&](KernelBuilder &kb, std::vector<Value *> v) { return f(kb, v[0]); }));
}

void expectFloats(const Floats &actual, const Floats &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << i;
    else
      EXPECT_EQ(actual[i], expected[i]) << i;
  }
}

/// [[1, 2, 3], [4, 5, 6]] as i32.
std::pair<Buffer, Shape> ints2x3() {
  return {intBuffer("x", DType::I32, {1, 2, 3, 4, 5, 6}), {2, 3}};
}

} // namespace

//===--------------------------------------------------------------------===//
// reduce
//===--------------------------------------------------------------------===//

TEST(InterpReduce, SumProdMaxMinAlongEachAxis) {
  auto r = [](const char *kind, int64_t axis) {
    return intResult(ints2x3(), DType::I32,
                     [&](KernelBuilder &kb, Value *x) { return reduce(kb, x, kind, axis); });
  };
  EXPECT_EQ(r("sum", 0), (Ints{5, 7, 9}));
  EXPECT_EQ(r("sum", 1), (Ints{6, 15}));
  EXPECT_EQ(r("prod", 0), (Ints{4, 10, 18}));
  EXPECT_EQ(r("prod", 1), (Ints{6, 120}));
  EXPECT_EQ(r("max", 1), (Ints{3, 6}));
  EXPECT_EQ(r("min", 0), (Ints{1, 2, 3}));
  // 1-D to a scalar.
  EXPECT_EQ(intResult({intBuffer("x", DType::I32, {4, -9, 2}), {3}}, DType::I32,
                      [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "min", 0); }),
            (Ints{-9}));
  // 3-D middle axis: x[i][j][k] = i*100 + j*10 + k over [2, 2, 2] -> sum over j.
  EXPECT_EQ(intResult({intBuffer("x", DType::I32, {0, 1, 10, 11, 100, 101, 110, 111}), {2, 2, 2}},
                      DType::I32,
                      [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "sum", 1); }),
            (Ints{10, 12, 210, 212}));
}

TEST(InterpReduce, IntegersWrapAndUnsignedOrder) {
  EXPECT_EQ(intResult({intBuffer("x", DType::I8, {100, 100, 100}), {3}}, DType::I8,
                      [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "sum", 0); }),
            (Ints{44})); // 300 wraps to 44
  EXPECT_EQ(intResult({intBuffer("x", DType::U32, {5, 0xFFFFFFFFLL, 7}), {3}}, DType::U32,
                      [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "max", 0); }),
            (Ints{0xFFFFFFFFLL}));
}

TEST(InterpReduce, FloatSumRunsFromIndexZeroInTheDType) {
  // f32: ((1e8 + 1) - 1e8) + 1: the first + 1 is lost (1e8 + 1 == 1e8 in f32).
  expectFloats(floatResult({floatBuffer("x", DType::F32, {1e8, 1, -1e8, 1}), {4}}, DType::F32,
                           [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "sum", 0); }),
               {1.0});
  // f16: every step rounds to f16, 2048 + 1 stays 2048.
  expectFloats(floatResult({floatBuffer("x", DType::F16, {2048, 1, 1, 1, 1}), {5}}, DType::F16,
                           [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "sum", 0); }),
               {2048.0});
  // ...but the same values in another order add up.
  expectFloats(floatResult({floatBuffer("x", DType::F16, {1, 1, 1, 1, 2048}), {5}}, DType::F16,
                           [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "sum", 0); }),
               {2052.0});
  expectFloats(floatResult({floatBuffer("x", DType::F32, {1.5, -2, 4}), {3}}, DType::F32,
                           [](KernelBuilder &kb, Value *x) { return reduce(kb, x, "prod", 0); }),
               {-12.0});
}

TEST(InterpReduce, MaxMinIgnoreNaNUnlessAllNaN) {
  auto r = [](const char *kind, Floats v) {
    Shape s = {int64_t(v.size())};
    return floatResult({floatBuffer("x", DType::F32, v), s}, DType::F32,
                       [&](KernelBuilder &kb, Value *x) { return reduce(kb, x, kind, 0); });
  };
  expectFloats(r("max", {kNaN, 1.0, 3.0, kNaN, 2.0}), {3.0});
  expectFloats(r("min", {kNaN, 1.0, -3.0, kNaN}), {-3.0});
  expectFloats(r("max", {kNaN, kNaN}), {kNaN});
  expectFloats(r("min", {-std::numeric_limits<double>::infinity(), kNaN}),
               {-std::numeric_limits<double>::infinity()});
}

TEST(InterpReduce, CustomCombinerRunsInOrder) {
  // ((1 * 2 + 2) * 2 + 3) = 11 and for the second row ((4*2+5)*2+6) = 32.
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return customCombine(kb, x, 1, false); }),
            (Ints{11, 32}));
  // Along axis 0: 1*2+4, 2*2+5, 3*2+6.
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return customCombine(kb, x, 0, false); }),
            (Ints{6, 9, 12}));
  expectFloats(
      floatResult({floatBuffer("x", DType::F32, {0.5, 0.25}), {2}}, DType::F32,
                  [](KernelBuilder &kb, Value *x) { return customCombine(kb, x, 0, false); }),
      {1.25});
}

//===--------------------------------------------------------------------===//
// scan
//===--------------------------------------------------------------------===//

TEST(InterpScan, InclusiveSumProdAndCustom) {
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return scan(kb, x, "sum", 1); }),
            (Ints{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return scan(kb, x, "sum", 0); }),
            (Ints{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return scan(kb, x, "prod", 1); }),
            (Ints{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(intResult(ints2x3(), DType::I32,
                      [](KernelBuilder &kb, Value *x) { return customCombine(kb, x, 1, true); }),
            (Ints{1, 4, 11, 4, 13, 32}));
  // f16 cumsum rounds each prefix.
  expectFloats(floatResult({floatBuffer("x", DType::F16, {2048, 1, 1, 2}), {4}}, DType::F16,
                           [](KernelBuilder &kb, Value *x) { return scan(kb, x, "sum", 0); }),
               {2048, 2048, 2048, 2050});
  EXPECT_EQ(intResult({intBuffer("x", DType::I8, {100, 100, -50}), {3}}, DType::I8,
                      [](KernelBuilder &kb, Value *x) { return scan(kb, x, "sum", 0); }),
            (Ints{100, -56, -106}));
}

//===--------------------------------------------------------------------===//
// argmax / argmin
//===--------------------------------------------------------------------===//

namespace {
Ints arg(OpKind k, const std::pair<Buffer, Shape> &in, int64_t axis) {
  return intResult(in, DType::I32, [&](KernelBuilder &kb, Value *x) {
    return kb.op(k, {x}, Type::tile(DType::I32, without(x->type.shape, axis)), {{"axis", axis}});
  });
}
} // namespace

TEST(InterpArgReduce, TiesTakeTheLowestIndex) {
  EXPECT_EQ(arg(OpKind::Argmax, {intBuffer("x", DType::I32, {3, 7, 7, 1, 7}), {5}}, 0), (Ints{1}));
  EXPECT_EQ(arg(OpKind::Argmin, {intBuffer("x", DType::I32, {3, 1, 7, 1, 7}), {5}}, 0), (Ints{1}));
  EXPECT_EQ(arg(OpKind::Argmax, {intBuffer("x", DType::U8, {3, 255, 7}), {3}}, 0), (Ints{1}));
  // 2-D along both axes: [[1, 9, 9], [8, 2, 9]].
  std::pair<Buffer, Shape> m = {intBuffer("x", DType::I32, {1, 9, 9, 8, 2, 9}), {2, 3}};
  EXPECT_EQ(arg(OpKind::Argmax, m, 1), (Ints{1, 2}));
  EXPECT_EQ(arg(OpKind::Argmax, m, 0), (Ints{1, 0, 0}));
  EXPECT_EQ(arg(OpKind::Argmin, m, 0), (Ints{0, 1, 0}));
}

TEST(InterpArgReduce, NaNIsIgnoredUnlessAllNaN) {
  EXPECT_EQ(
      arg(OpKind::Argmax, {floatBuffer("x", DType::F32, {kNaN, 2.0, kNaN, 5.0, 5.0}), {5}}, 0),
      (Ints{3}));
  EXPECT_EQ(arg(OpKind::Argmin, {floatBuffer("x", DType::F32, {kNaN, 2.0, kNaN, -5.0}), {4}}, 0),
            (Ints{3}));
  EXPECT_EQ(arg(OpKind::Argmax, {floatBuffer("x", DType::F32, {kNaN, kNaN}), {2}}, 0), (Ints{0}));
  EXPECT_EQ(arg(OpKind::Argmin, {floatBuffer("x", DType::F16, {-0.0, 0.0}), {2}}, 0), (Ints{0}));
}

//===--------------------------------------------------------------------===//
// sort, topk, argtopk
//===--------------------------------------------------------------------===//

namespace {
Value *sortOp(KernelBuilder &kb, Value *x, int64_t axis, bool descending) {
  return kb.op(OpKind::Sort, {x}, x->type, {{"axis", axis}, {"descending", descending}});
}
Value *topk(KernelBuilder &kb, Value *x, int64_t k, int64_t axis, bool indices) {
  Shape s = x->type.shape;
  s[axis] = k;
  return kb.op(indices ? OpKind::ArgTopK : OpKind::TopK, {x},
               indices ? Type::tile(DType::I32, s) : x->type.withShape(s),
               {{"axis", axis}, {"k", k}});
}
} // namespace

TEST(InterpSort, AscendingDescendingNaNLast) {
  std::pair<Buffer, Shape> in = {floatBuffer("x", DType::F32, {3, kNaN, -1, 2, kNaN, 0}), {6}};
  expectFloats(floatResult(in, DType::F32,
                           [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, false); }),
               {-1, 0, 2, 3, kNaN, kNaN});
  expectFloats(floatResult(in, DType::F32,
                           [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, true); }),
               {3, 2, 0, -1, kNaN, kNaN});
  // Rows and columns of [[3, 1, 2], [0, 5, 4]].
  std::pair<Buffer, Shape> m = {intBuffer("x", DType::I32, {3, 1, 2, 0, 5, 4}), {2, 3}};
  EXPECT_EQ(
      intResult(m, DType::I32, [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 1, false); }),
      (Ints{1, 2, 3, 0, 4, 5}));
  EXPECT_EQ(
      intResult(m, DType::I32, [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, true); }),
      (Ints{3, 5, 4, 0, 1, 2}));
  EXPECT_EQ(intResult({intBuffer("x", DType::U16, {65535, 1, 300}), {3}}, DType::U16,
                      [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, false); }),
            (Ints{1, 300, 65535}));
}

TEST(InterpSort, IsStable) {
  // -0.0 and +0.0 compare equal: a stable sort keeps their order in both directions.
  std::pair<Buffer, Shape> in = {floatBuffer("x", DType::F32, {0.0, 1.0, -0.0, -1.0}), {4}};
  Floats up = floatResult(in, DType::F32,
                          [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, false); });
  ASSERT_EQ(up.size(), 4u);
  EXPECT_EQ(up[0], -1.0);
  EXPECT_FALSE(std::signbit(up[1])); // +0.0 came first in the input
  EXPECT_TRUE(std::signbit(up[2]));
  Floats down = floatResult(in, DType::F32,
                            [](KernelBuilder &kb, Value *x) { return sortOp(kb, x, 0, true); });
  EXPECT_EQ(down[0], 1.0);
  EXPECT_FALSE(std::signbit(down[1]));
  EXPECT_TRUE(std::signbit(down[2]));
}

TEST(InterpTopK, LargestFirstTiesLowerIndexFirst) {
  std::pair<Buffer, Shape> in = {intBuffer("x", DType::I32, {5, 9, 1, 9, 7, 5}), {6}};
  EXPECT_EQ(intResult(in, DType::I32,
                      [](KernelBuilder &kb, Value *x) { return topk(kb, x, 4, 0, false); }),
            (Ints{9, 9, 7, 5}));
  EXPECT_EQ(intResult(in, DType::I32,
                      [](KernelBuilder &kb, Value *x) { return topk(kb, x, 4, 0, true); }),
            (Ints{1, 3, 4, 0}));
  // NaN is never among the largest (it sorts last).
  std::pair<Buffer, Shape> f = {floatBuffer("x", DType::F32, {kNaN, 1.0, 3.0, kNaN}), {4}};
  EXPECT_EQ(
      intResult(f, DType::I32, [](KernelBuilder &kb, Value *x) { return topk(kb, x, 3, 0, true); }),
      (Ints{2, 1, 0}));
  // 2-D, along axis 0 of [[1, 8], [6, 2], [4, 4]].
  std::pair<Buffer, Shape> m = {intBuffer("x", DType::I32, {1, 8, 6, 2, 4, 4}), {3, 2}};
  EXPECT_EQ(intResult(m, DType::I32,
                      [](KernelBuilder &kb, Value *x) { return topk(kb, x, 2, 0, false); }),
            (Ints{6, 8, 4, 4}));
  EXPECT_EQ(
      intResult(m, DType::I32, [](KernelBuilder &kb, Value *x) { return topk(kb, x, 2, 0, true); }),
      (Ints{1, 0, 2, 2}));
}

//===--------------------------------------------------------------------===//
// dot
//===--------------------------------------------------------------------===//

namespace {
Value *dot(KernelBuilder &kb, Value *a, Value *b, Value *acc, DType outT) {
  std::vector<Value *> ops = {a, b};
  if (acc)
    ops.push_back(acc);
  return kb.op(OpKind::Dot, ops, Type::tile(outT, {a->type.shape[0], b->type.shape[1]}));
}
} // namespace

TEST(InterpDot, F16InputsWithAccumulator) {
  // a = [[1, 2, 3], [4, 5, 6]], b = [[0.5, 1], [0.25, -1], [2, 0]], acc = [[10, 20], [30, 40]].
  Buffer a = floatBuffer("a", DType::F16, {1, 2, 3, 4, 5, 6});
  Buffer b = floatBuffer("b", DType::F16, {0.5, 1, 0.25, -1, 2, 0});
  Buffer acc = floatBuffer("acc", DType::F32, {10, 20, 30, 40});
  Buffer out = mapShaped({{a, {2, 3}}, {b, {3, 2}}, {acc, {2, 2}}}, DType::F32,
                         [](KernelBuilder &kb, std::vector<Value *> v) {
                           return dot(kb, v[0], v[1], v[2], DType::F32);
                         });
  expectFloats(floatsOf(out),
               {10 + 0.5 + 0.5 + 6, 20 + 1 - 2 + 0, 30 + 2 + 1.25 + 12, 40 + 4 - 5 + 0});
  Buffer noAcc = mapShaped({{a, {2, 3}}, {b, {3, 2}}}, DType::F32,
                           [](KernelBuilder &kb, std::vector<Value *> v) {
                             return dot(kb, v[0], v[1], nullptr, DType::F32);
                           });
  expectFloats(floatsOf(noAcc), {7, -1, 15.25, -1});
}

TEST(InterpDot, SumsInF32FromKZero) {
  // Row [1e8, 1, -1e8, 1] times a column of ones: f32 sums in order give 1, not 2.
  Buffer a = floatBuffer("a", DType::F32, {1e8, 1, -1e8, 1});
  Buffer b = floatBuffer("b", DType::F32, {1, 1, 1, 1});
  Buffer out = mapShaped({{a, {1, 4}}, {b, {4, 1}}}, DType::F32,
                         [](KernelBuilder &kb, std::vector<Value *> v) {
                           return dot(kb, v[0], v[1], nullptr, DType::F32);
                         });
  expectFloats(floatsOf(out), {1.0});
  // The products of f16 inputs are exact in f32: 2049 (not an f16) is formed by the sum.
  Buffer h = floatBuffer("a", DType::F16, {2048, 1});
  Buffer o = floatBuffer("b", DType::F16, {1, 1});
  Buffer hs = mapShaped({{h, {1, 2}}, {o, {2, 1}}}, DType::F32,
                        [](KernelBuilder &kb, std::vector<Value *> v) {
                          return dot(kb, v[0], v[1], nullptr, DType::F32);
                        });
  expectFloats(floatsOf(hs), {2049.0});
  // With an f16 accumulator the f32 sum is rounded to f16 once at the end.
  Buffer acc = floatBuffer("acc", DType::F16, {0});
  Buffer h16 = mapShaped({{h, {1, 2}}, {o, {2, 1}}, {acc, {1, 1}}}, DType::F16,
                         [](KernelBuilder &kb, std::vector<Value *> v) {
                           return dot(kb, v[0], v[1], v[2], DType::F16);
                         });
  expectFloats(floatsOf(h16), {2048.0});
}

TEST(InterpDot, Int8AccumulatesInI32) {
  // 4 products of -128 * -128 = 16384 each: 65536, far outside i8; plus an i32 acc that
  // makes the sum wrap around.
  Buffer a = intBuffer("a", DType::I8, {-128, -128, -128, -128, 1, 2, 3, 4});
  Buffer b = intBuffer("b", DType::I8, {-128, 1, -128, 1, -128, 1, -128, 1});
  Buffer acc = intBuffer("acc", DType::I32, {0, 0, std::numeric_limits<int32_t>::max(), 0});
  Buffer out = mapShaped({{a, {2, 4}}, {b, {4, 2}}, {acc, {2, 2}}}, DType::I32,
                         [](KernelBuilder &kb, std::vector<Value *> v) {
                           return dot(kb, v[0], v[1], v[2], DType::I32);
                         });
  // Row 1 . column 0 = (1+2+3+4) * -128 = -1280; + INT32_MAX = 2147482367.
  EXPECT_EQ(intsOf(out), (Ints{65536, -512, 2147482367LL, 10}));
  Buffer wrap = mapShaped({{intBuffer("a", DType::I32, {65536, 65536}), {1, 2}},
                           {intBuffer("b", DType::I32, {65536, 1}), {2, 1}}},
                          DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
                            return dot(kb, v[0], v[1], nullptr, DType::I32);
                          });
  EXPECT_EQ(intsOf(wrap), (Ints{65536})); // 2^32 wraps to 0, + 65536
  Buffer u8 = mapShaped({{intBuffer("a", DType::U8, {255, 255}), {1, 2}},
                         {intBuffer("b", DType::U8, {255, 2}), {2, 1}}},
                        DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
                          return dot(kb, v[0], v[1], nullptr, DType::I32);
                        });
  EXPECT_EQ(intsOf(u8), (Ints{255 * 255 + 510}));
}
