//===- ElementwiseTest.cpp - Interpreter: arithmetic, cmp, select, casts --===//
//
// Each elementwise op runs in a real kernel (load, op, store) on hand-picked values,
// with the edge cases of Ops.def: wrapping, division by zero, INT_MIN / -1, shift
// amounts out of range, NaN in minimum/maximum and comparisons, rounding of the narrow
// float formats and saturating conversions.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> intBinary(OpKind k, DType t, std::vector<int64_t> a, std::vector<int64_t> b) {
  Buffer out =
      mapKernel({intBuffer("a", t, a), intBuffer("b", t, b)}, t,
                [&](KernelBuilder &kb, std::vector<Value *> v) { return kb.bin(k, v[0], v[1]); });
  return intsOf(out);
}

std::vector<double> floatBinary(OpKind k, DType t, std::vector<double> a, std::vector<double> b) {
  Buffer out =
      mapKernel({floatBuffer("a", t, a), floatBuffer("b", t, b)}, t,
                [&](KernelBuilder &kb, std::vector<Value *> v) { return kb.bin(k, v[0], v[1]); });
  return floatsOf(out);
}

std::vector<int64_t> intUnary(OpKind k, DType t, std::vector<int64_t> a) {
  Buffer out = mapKernel({intBuffer("a", t, a)}, t, [&](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.op(k, {v[0]}, v[0]->type);
  });
  return intsOf(out);
}

std::vector<double> floatUnary(OpKind k, DType t, std::vector<double> a) {
  Buffer out =
      mapKernel({floatBuffer("a", t, a)}, t, [&](KernelBuilder &kb, std::vector<Value *> v) {
        return kb.op(k, {v[0]}, v[0]->type);
      });
  return floatsOf(out);
}

/// NaN-aware and sign-of-zero-aware equality of float vectors.
void expectFloats(const std::vector<double> &actual, const std::vector<double> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << " is " << actual[i];
      continue;
    }
    EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    EXPECT_EQ(std::signbit(actual[i]), std::signbit(expected[i])) << "sign of element " << i;
  }
}

const int64_t I32_MIN = std::numeric_limits<int32_t>::min();
const int64_t I32_MAX = std::numeric_limits<int32_t>::max();
const int64_t I64_MIN = std::numeric_limits<int64_t>::min();
const int64_t I64_MAX = std::numeric_limits<int64_t>::max();

} // namespace

//===--------------------------------------------------------------------===//
// Integer arithmetic
//===--------------------------------------------------------------------===//

TEST(InterpIntArith, AddSubMulWrap) {
  EXPECT_EQ(intBinary(OpKind::Add, DType::I32, {I32_MAX, -5, 7}, {1, 3, -7}),
            (std::vector<int64_t>{I32_MIN, -2, 0}));
  EXPECT_EQ(intBinary(OpKind::Sub, DType::I32, {I32_MIN, 10}, {1, 20}),
            (std::vector<int64_t>{I32_MAX, -10}));
  EXPECT_EQ(intBinary(OpKind::Mul, DType::I32, {65536, -3, 46341}, {65536, 7, 46341}),
            (std::vector<int64_t>{0, -21, 46341LL * 46341 - (1LL << 32)}));
  EXPECT_EQ(intBinary(OpKind::Add, DType::I8, {127, -128}, {1, -1}),
            (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(intBinary(OpKind::Sub, DType::U8, {0, 5}, {1, 3}), (std::vector<int64_t>{255, 2}));
  EXPECT_EQ(intBinary(OpKind::Mul, DType::U8, {200, 16}, {2, 16}), (std::vector<int64_t>{144, 0}));
  EXPECT_EQ(intBinary(OpKind::Add, DType::I16, {32767}, {1}), (std::vector<int64_t>{-32768}));
  EXPECT_EQ(intBinary(OpKind::Add, DType::U16, {65535}, {2}), (std::vector<int64_t>{1}));
  EXPECT_EQ(intBinary(OpKind::Add, DType::I64, {I64_MAX}, {1}), (std::vector<int64_t>{I64_MIN}));
  EXPECT_EQ(intBinary(OpKind::Mul, DType::U64, {-1}, {2}), (std::vector<int64_t>{-2})); // 2^64-2
  EXPECT_EQ(intBinary(OpKind::Add, DType::U32, {4294967295LL}, {1}), (std::vector<int64_t>{0}));
}

TEST(InterpIntArith, DivisionAndRemainder) {
  EXPECT_EQ(intBinary(OpKind::Div, DType::I32, {7, -7, 7, -7, 5, I32_MIN, I32_MIN, 0},
                      {2, 2, -2, -2, 0, -1, 1, 3}),
            (std::vector<int64_t>{3, -3, -3, 3, 0, I32_MIN, I32_MIN, 0}));
  EXPECT_EQ(intBinary(OpKind::Rem, DType::I32, {7, -7, 7, -7, 5, I32_MIN}, {3, 3, -3, -3, 0, -1}),
            (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  EXPECT_EQ(intBinary(OpKind::Div, DType::I64, {I64_MIN, I64_MIN}, {-1, 0}),
            (std::vector<int64_t>{I64_MIN, 0}));
  EXPECT_EQ(intBinary(OpKind::Rem, DType::I64, {I64_MIN}, {-1}), (std::vector<int64_t>{0}));
  EXPECT_EQ(intBinary(OpKind::Div, DType::I8, {-128, -128}, {-1, 3}),
            (std::vector<int64_t>{-128, -42}));
  // Unsigned: the operands are unsigned values, not the signed reading of their bits.
  EXPECT_EQ(intBinary(OpKind::Div, DType::U32, {4000000000LL, 9}, {3, 0}),
            (std::vector<int64_t>{1333333333, 0}));
  EXPECT_EQ(intBinary(OpKind::Rem, DType::U32, {4000000000LL, 9}, {7, 0}),
            (std::vector<int64_t>{4000000000LL % 7, 0}));
  EXPECT_EQ(intBinary(OpKind::Div, DType::U64, {-1}, {2}), (std::vector<int64_t>{I64_MAX}));
  EXPECT_EQ(intBinary(OpKind::Rem, DType::U64, {-1}, {10}),
            (std::vector<int64_t>{5})); // 2^64-1 = ...615
  EXPECT_EQ(intBinary(OpKind::Div, DType::U8, {255}, {2}), (std::vector<int64_t>{127}));
}

TEST(InterpIntArith, Bitwise) {
  EXPECT_EQ(intBinary(OpKind::And, DType::I32, {0b1100, -1}, {0b1010, 0x1234}),
            (std::vector<int64_t>{0b1000, 0x1234}));
  EXPECT_EQ(intBinary(OpKind::Or, DType::I32, {0b1100, I32_MIN}, {0b1010, 1}),
            (std::vector<int64_t>{0b1110, I32_MIN + 1}));
  EXPECT_EQ(intBinary(OpKind::Xor, DType::U8, {0xF0, 0xFF}, {0xFF, 0xFF}),
            (std::vector<int64_t>{0x0F, 0}));
  // On bool they are the logical operations.
  EXPECT_EQ(intBinary(OpKind::And, DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}),
            (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(intBinary(OpKind::Or, DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(intBinary(OpKind::Xor, DType::Bool, {0, 0, 1, 1}, {0, 1, 0, 1}),
            (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(InterpIntArith, Shifts) {
  // shl: amounts outside [0, 32) give 0; the result wraps to the dtype.
  EXPECT_EQ(intBinary(OpKind::Shl, DType::I32, {1, 1, 3, 1, 1, -1}, {31, 32, 2, -1, 100, 4}),
            (std::vector<int64_t>{I32_MIN, 0, 12, 0, 0, -16}));
  EXPECT_EQ(intBinary(OpKind::Shl, DType::U8, {0xFF, 1, 1}, {4, 7, 8}),
            (std::vector<int64_t>{0xF0, 128, 0}));
  // Signed shr is arithmetic and fills with the sign beyond the width.
  EXPECT_EQ(
      intBinary(OpKind::Shr, DType::I32, {-8, -8, 8, -1, I32_MIN, -8}, {1, 40, 40, 31, 31, -3}),
      (std::vector<int64_t>{-4, -1, 0, -1, -1, -1}));
  EXPECT_EQ(intBinary(OpKind::Shr, DType::I8, {-128, 64}, {7, 8}), (std::vector<int64_t>{-1, 0}));
  // Unsigned shr is logical.
  EXPECT_EQ(
      intBinary(OpKind::Shr, DType::U32, {0x80000000LL, 0x80000000LL, 0xFFFFFFFFLL}, {31, 32, 4}),
      (std::vector<int64_t>{1, 0, 0x0FFFFFFF}));
  EXPECT_EQ(intBinary(OpKind::Shr, DType::U64, {-1, -1}, {63, 64}), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(intBinary(OpKind::Shl, DType::I64, {1, 1}, {63, 64}),
            (std::vector<int64_t>{I64_MIN, 0}));
}

TEST(InterpIntArith, MinimumMaximum) {
  EXPECT_EQ(intBinary(OpKind::Minimum, DType::I32, {-5, 3, 7}, {2, 3, -9}),
            (std::vector<int64_t>{-5, 3, -9}));
  EXPECT_EQ(intBinary(OpKind::Maximum, DType::I32, {-5, 3, 7}, {2, 3, -9}),
            (std::vector<int64_t>{2, 3, 7}));
  // Unsigned order: 0xFFFFFFFF is the largest u32, not -1.
  EXPECT_EQ(intBinary(OpKind::Maximum, DType::U32, {0xFFFFFFFFLL, 0}, {1, 5}),
            (std::vector<int64_t>{0xFFFFFFFFLL, 5}));
  EXPECT_EQ(intBinary(OpKind::Minimum, DType::U64, {-1, 3}, {1, -2}), (std::vector<int64_t>{1, 3}));
}

TEST(InterpIntArith, Unary) {
  EXPECT_EQ(intUnary(OpKind::Neg, DType::I32, {5, -7, 0, I32_MIN}),
            (std::vector<int64_t>{-5, 7, 0, I32_MIN}));
  EXPECT_EQ(intUnary(OpKind::Neg, DType::U8, {1, 0}), (std::vector<int64_t>{255, 0}));
  EXPECT_EQ(intUnary(OpKind::Abs, DType::I32, {-5, 5, I32_MIN}),
            (std::vector<int64_t>{5, 5, I32_MIN}));
  EXPECT_EQ(intUnary(OpKind::Abs, DType::I8, {-128, -1}), (std::vector<int64_t>{-128, 1}));
  EXPECT_EQ(intUnary(OpKind::Abs, DType::U16, {65535}), (std::vector<int64_t>{65535}));
  EXPECT_EQ(intUnary(OpKind::Not, DType::I32, {0, -1, 5}), (std::vector<int64_t>{-1, 0, -6}));
  EXPECT_EQ(intUnary(OpKind::Not, DType::U8, {0, 0x0F}), (std::vector<int64_t>{255, 0xF0}));
  EXPECT_EQ(intUnary(OpKind::Not, DType::Bool, {0, 1}), (std::vector<int64_t>{1, 0}));
}

//===--------------------------------------------------------------------===//
// Float arithmetic
//===--------------------------------------------------------------------===//

TEST(InterpFloatArith, F32IsExactlySinglePrecision) {
  float a = 0.1f, b = 0.2f, c = 1e-8f;
  expectFloats(floatBinary(OpKind::Add, DType::F32, {a, 1.0, 3e38}, {b, c, 3e38}),
               {double(a + b), double(1.0f + c), kInf});
  expectFloats(floatBinary(OpKind::Mul, DType::F32, {a, 1e38}, {3.0, 10.0}),
               {double(a * 3.0f), kInf});
  expectFloats(floatBinary(OpKind::Div, DType::F32, {1.0, 1.0, -1.0, 0.0}, {3.0, 0.0, 0.0, 0.0}),
               {double(1.0f / 3.0f), kInf, -kInf, kNaN});
  expectFloats(floatBinary(OpKind::Sub, DType::F32, {1.0, 0.0}, {1.0, 0.0}), {0.0, 0.0});
  // f64 keeps double precision.
  expectFloats(floatBinary(OpKind::Add, DType::F64, {0.1}, {0.2}), {0.1 + 0.2});
  expectFloats(floatBinary(OpKind::Div, DType::F64, {1.0}, {3.0}), {1.0 / 3.0});
}

TEST(InterpFloatArith, RemainderIsFmod) {
  expectFloats(
      floatBinary(OpKind::Rem, DType::F32, {5.5, -5.5, 5.5, 1.0, kInf}, {2.0, 2.0, -2.0, 0.0, 2.0}),
      {1.5, -1.5, 1.5, kNaN, kNaN});
}

TEST(InterpFloatArith, MinimumMaximumIgnoreNaN) {
  expectFloats(floatBinary(OpKind::Minimum, DType::F32, {kNaN, 1.0, kNaN, 2.0, -0.0, 0.0},
                           {1.0, kNaN, kNaN, -3.0, 0.0, -0.0}),
               {1.0, 1.0, kNaN, -3.0, -0.0, -0.0});
  expectFloats(floatBinary(OpKind::Maximum, DType::F32, {kNaN, 1.0, kNaN, 2.0, -0.0, 0.0},
                           {1.0, kNaN, kNaN, -3.0, 0.0, -0.0}),
               {1.0, 1.0, kNaN, 2.0, 0.0, 0.0});
  expectFloats(floatBinary(OpKind::Maximum, DType::F16, {kNaN, -kInf}, {-2.5, kInf}), {-2.5, kInf});
}

TEST(InterpFloatArith, Pow) {
  expectFloats(
      floatBinary(OpKind::Pow, DType::F32, {2.0, 9.0, -8.0, 0.0}, {10.0, 0.5, 1.0 / 3, 0.0}),
      {1024.0, 3.0, kNaN, 1.0});
}

TEST(InterpFloatArith, NarrowFormatsRoundEveryResult) {
  // f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> even (1); 2048 + 1 likewise.
  expectFloats(floatBinary(OpKind::Add, DType::F16, {1.0, 2048.0, 65504.0, 65504.0},
                           {std::ldexp(1.0, -11), 1.0, 15.0, 16.0}),
               {1.0, 2048.0, 65504.0, kInf});
  // bf16: 3 * (1 + 2^-7) = 3.0234375 is a tie between 3.015625 and 3.03125 (even).
  expectFloats(floatBinary(OpKind::Mul, DType::BF16, {3.0}, {1.0078125}), {3.03125});
  // f8: saturating to the largest finite value on overflow.
  expectFloats(floatBinary(OpKind::Add, DType::F8E4M3, {448.0, 1.0, 0.5}, {448.0, 0.125, 0.0625}),
               {448.0, 1.125, 0.5625});
  expectFloats(floatBinary(OpKind::Mul, DType::F8E5M2, {57344.0, 1.25}, {2.0, 1.25}),
               {57344.0, 1.5});
  // (1.25 * 1.25 = 1.5625 lies between 1.5 and 1.75 in e5m2 and rounds to 1.5.)
}

TEST(InterpFloatArith, UnaryMath) {
  expectFloats(floatUnary(OpKind::Exp, DType::F32, {0.0, 1.0, -kInf}),
               {1.0, double(std::exp(1.0f)), 0.0});
  expectFloats(floatUnary(OpKind::Exp2, DType::F32, {3.0, -1.0}), {8.0, 0.5});
  expectFloats(floatUnary(OpKind::Log, DType::F32, {1.0, 0.0, -1.0}), {0.0, -kInf, kNaN});
  expectFloats(floatUnary(OpKind::Log2, DType::F32, {8.0, 0.25}), {3.0, -2.0});
  expectFloats(floatUnary(OpKind::Sqrt, DType::F32, {4.0, 2.0, -1.0}),
               {2.0, double(std::sqrt(2.0f)), kNaN});
  expectFloats(floatUnary(OpKind::Rsqrt, DType::F32, {4.0, 0.0}), {0.5, kInf});
  expectFloats(floatUnary(OpKind::Sin, DType::F32, {0.0, 1.0}), {0.0, double(std::sin(1.0f))});
  expectFloats(floatUnary(OpKind::Cos, DType::F32, {0.0}), {1.0});
  expectFloats(floatUnary(OpKind::Tanh, DType::F32, {0.0, 100.0, -100.0}), {0.0, 1.0, -1.0});
  expectFloats(floatUnary(OpKind::Erf, DType::F32, {0.0, 10.0}), {0.0, 1.0});
  expectFloats(floatUnary(OpKind::Sigmoid, DType::F32, {0.0, 200.0, -200.0}), {0.5, 1.0, 0.0});
  expectFloats(floatUnary(OpKind::Floor, DType::F32, {-1.5, 1.5, -0.0}), {-2.0, 1.0, -0.0});
  expectFloats(floatUnary(OpKind::Ceil, DType::F32, {-1.5, 1.5, -0.5}), {-1.0, 2.0, -0.0});
  expectFloats(floatUnary(OpKind::Abs, DType::F32, {-0.0, -3.0, -kInf}), {0.0, 3.0, kInf});
  expectFloats(floatUnary(OpKind::Neg, DType::F32, {0.0, -3.0}), {-0.0, 3.0});
  // f16 math is computed in f32 and rounded: sqrt(2) = 1.41421.. -> 1.4140625 (0x3DA8).
  expectFloats(floatUnary(OpKind::Sqrt, DType::F16, {2.0}), {1.4140625});
  expectFloats(floatUnary(OpKind::Exp, DType::BF16, {1.0}), {2.71875});
  // f64 uses double math.
  expectFloats(floatUnary(OpKind::Exp, DType::F64, {1.0}), {std::exp(1.0)});
}

TEST(InterpFloatArith, FmaRoundsOnce) {
  // (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly; a separate multiply would round the
  // product to 1 + 2^-11 first and give 2^-11.
  double a = 1.0 + std::ldexp(1.0, -12);
  Buffer out =
      mapKernel({floatBuffer("a", DType::F32, {a, 2.0}), floatBuffer("b", DType::F32, {a, 3.0}),
                 floatBuffer("c", DType::F32, {-1.0, 0.5})},
                DType::F32, [](KernelBuilder &kb, std::vector<Value *> v) {
                  return kb.op(OpKind::Fma, {v[0], v[1], v[2]}, v[0]->type);
                });
  expectFloats(floatsOf(out), {std::ldexp(1.0, -11) + std::ldexp(1.0, -24), 6.5});
  // And the unfused form in the same kernel language gives the doubly rounded value.
  Buffer sep = mapKernel({floatBuffer("a", DType::F32, {a}), floatBuffer("c", DType::F32, {-1.0})},
                         DType::F32, [](KernelBuilder &kb, std::vector<Value *> v) {
                           return kb.bin(OpKind::Add, kb.bin(OpKind::Mul, v[0], v[0]), v[1]);
                         });
  expectFloats(floatsOf(sep), {std::ldexp(1.0, -11)});
}

//===--------------------------------------------------------------------===//
// cmp and select
//===--------------------------------------------------------------------===//

namespace {
std::vector<int64_t> compare(const char *pred, const Buffer &a, const Buffer &b) {
  return intsOf(mapKernel({a, b}, DType::Bool, [&](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.cmp(pred, v[0], v[1]);
  }));
}
} // namespace

TEST(InterpCmp, Integers) {
  Buffer a = intBuffer("a", DType::I32, {1, 2, 3, -1});
  Buffer b = intBuffer("b", DType::I32, {2, 2, 2, 1});
  EXPECT_EQ(compare("eq", a, b), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(compare("ne", a, b), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(compare("lt", a, b), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(compare("le", a, b), (std::vector<int64_t>{1, 1, 0, 1}));
  EXPECT_EQ(compare("gt", a, b), (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(compare("ge", a, b), (std::vector<int64_t>{0, 1, 1, 0}));
  // Unsigned: 0xFFFFFFFF > 1.
  Buffer ua = intBuffer("a", DType::U32, {0xFFFFFFFFLL, 0});
  Buffer ub = intBuffer("b", DType::U32, {1, 0xFFFFFFFFLL});
  EXPECT_EQ(compare("gt", ua, ub), (std::vector<int64_t>{1, 0}));
  Buffer la = intBuffer("a", DType::U64, {-1});
  Buffer lb = intBuffer("b", DType::U64, {1});
  EXPECT_EQ(compare("lt", la, lb), (std::vector<int64_t>{0}));
}

TEST(InterpCmp, FloatsAreOrderedExceptNe) {
  Buffer a = floatBuffer("a", DType::F32, {kNaN, 1.0, kNaN, -0.0, 1.0, -kInf});
  Buffer b = floatBuffer("b", DType::F32, {1.0, kNaN, kNaN, 0.0, 2.0, kInf});
  EXPECT_EQ(compare("eq", a, b), (std::vector<int64_t>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(compare("ne", a, b), (std::vector<int64_t>{1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(compare("lt", a, b), (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(compare("le", a, b), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(compare("gt", a, b), (std::vector<int64_t>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(compare("ge", a, b), (std::vector<int64_t>{0, 0, 0, 1, 0, 0}));
}

TEST(InterpCmp, Select) {
  Buffer c = intBuffer("c", DType::Bool, {1, 0, 1});
  Buffer a = floatBuffer("a", DType::F32, {1.0, 2.0, 3.0});
  Buffer b = floatBuffer("b", DType::F32, {-1.0, -2.0, -3.0});
  Buffer out = mapKernel({c, a, b}, DType::F32, [](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.op(OpKind::Select, {v[0], v[1], v[2]}, v[1]->type);
  });
  expectFloats(floatsOf(out), {1.0, -2.0, 3.0});
}

//===--------------------------------------------------------------------===//
// Casts
//===--------------------------------------------------------------------===//

namespace {
Buffer castTo(const Buffer &in, DType to) {
  return mapKernel({in}, to,
                   [&](KernelBuilder &kb, std::vector<Value *> v) { return kb.cast(v[0], to); });
}
Buffer bitcastTo(const Buffer &in, DType to) {
  return mapKernel({in}, to, [&](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.op(OpKind::Bitcast, {v[0]}, v[0]->type.withDType(to));
  });
}
} // namespace

TEST(InterpCast, FloatToIntTruncatesAndSaturates) {
  Buffer f = floatBuffer("f", DType::F32, {2.9, -2.9, 3e9, -3e9, kNaN, kInf, -kInf, -0.5});
  EXPECT_EQ(intsOf(castTo(f, DType::I32)),
            (std::vector<int64_t>{2, -2, I32_MAX, I32_MIN, 0, I32_MAX, I32_MIN, 0}));
  EXPECT_EQ(intsOf(castTo(f, DType::U8)), (std::vector<int64_t>{2, 0, 255, 0, 0, 255, 0, 0}));
  EXPECT_EQ(intsOf(castTo(f, DType::I8)),
            (std::vector<int64_t>{2, -2, 127, -128, 0, 127, -128, 0}));
  EXPECT_EQ(intsOf(castTo(f, DType::I64)),
            (std::vector<int64_t>{2, -2, 3000000000LL, -3000000000LL, 0, I64_MAX, I64_MIN, 0}));
  EXPECT_EQ(intsOf(castTo(floatBuffer("f", DType::F64, {1e20, 4294967295.9}), DType::U32)),
            (std::vector<int64_t>{4294967295LL, 4294967295LL}));
  // To bool: != 0, so NaN is true and -0.0 false.
  EXPECT_EQ(intsOf(castTo(floatBuffer("f", DType::F32, {0.5, -0.0, kNaN, 0.0}), DType::Bool)),
            (std::vector<int64_t>{1, 0, 1, 0}));
}

TEST(InterpCast, IntToIntWrapsAndBool) {
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::I32, {300, -129, -1}), DType::I8)),
            (std::vector<int64_t>{44, 127, -1}));
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::U8, {200, 5}), DType::I8)),
            (std::vector<int64_t>{-56, 5}));
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::I8, {-1}), DType::U32)),
            (std::vector<int64_t>{4294967295LL}));
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::I8, {-1}), DType::I64)),
            (std::vector<int64_t>{-1}));
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::U32, {4294967295LL}), DType::I64)),
            (std::vector<int64_t>{4294967295LL}));
  EXPECT_EQ(intsOf(castTo(intBuffer("i", DType::I32, {5, 0, -3}), DType::Bool)),
            (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(intsOf(castTo(intBuffer("b", DType::Bool, {1, 0}), DType::I32)),
            (std::vector<int64_t>{1, 0}));
  expectFloats(floatsOf(castTo(intBuffer("b", DType::Bool, {1, 0}), DType::F16)), {1.0, 0.0});
}

TEST(InterpCast, IntToFloatRoundsOnceToNearestEven) {
  expectFloats(
      floatsOf(castTo(intBuffer("i", DType::I32, {16777217, 16777219, -16777217}), DType::F32)),
      {16777216.0, 16777220.0, -16777216.0});
  // 2^60 + 2^36 + 1 is just above the f32 tie at 2^60 + 2^36: it must round up. Going
  // through double first would land on the tie and round down to 2^60.
  int64_t big = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
  expectFloats(
      floatsOf(castTo(intBuffer("i", DType::I64, {big, -big}), DType::F32)),
      {std::ldexp(1.0, 60) + std::ldexp(1.0, 37), -(std::ldexp(1.0, 60) + std::ldexp(1.0, 37))});
  int64_t bigBf = (int64_t(1) << 60) + (int64_t(1) << 52) + 1; // above the bf16 tie
  expectFloats(floatsOf(castTo(intBuffer("i", DType::I64, {bigBf}), DType::BF16)),
               {std::ldexp(1.0, 60) + std::ldexp(1.0, 53)});
  expectFloats(floatsOf(castTo(intBuffer("u", DType::U32, {4294967295LL}), DType::F32)),
               {4294967296.0});
  expectFloats(floatsOf(castTo(intBuffer("u", DType::U64, {-1}), DType::F64)),
               {18446744073709551616.0});
  expectFloats(floatsOf(castTo(intBuffer("i", DType::I32, {70000, 2049}), DType::F16)),
               {kInf, 2048.0});
  expectFloats(floatsOf(castTo(intBuffer("i", DType::I32, {1000, -1000, 17}), DType::F8E4M3)),
               {448.0, -448.0, 16.0});
}

TEST(InterpCast, FloatToNarrowFloat) {
  Buffer f = floatBuffer("f", DType::F32, {0.1, 65520.0, 1e-8, 3e-8, -kInf, kNaN});
  expectFloats(floatsOf(castTo(f, DType::F16)),
               {f16BitsToDouble(0x2E66), kInf, 0.0, std::ldexp(1.0, -24), -kInf, kNaN});
  Buffer g =
      floatBuffer("g", DType::F32, {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8)});
  expectFloats(floatsOf(castTo(g, DType::BF16)), {1.0, 1.0 + std::ldexp(1.0, -6)});
  Buffer h = floatBuffer("h", DType::F32, {1000.0, 0.3, -500.0, kNaN, kInf, std::ldexp(1.0, -10)});
  expectFloats(floatsOf(castTo(h, DType::F8E4M3)), {448.0, 0.3125, -448.0, kNaN, 448.0, 0.0});
  Buffer e = floatBuffer("e", DType::F32, {1e6, -kInf, 0.3});
  expectFloats(floatsOf(castTo(e, DType::F8E5M2)), {57344.0, -57344.0, 0.3125});
  // f64 -> f16 rounds directly (1 + 2^-11 + 2^-40 is above the tie).
  Buffer d = floatBuffer("d", DType::F64, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  expectFloats(floatsOf(castTo(d, DType::F16)), {1.0 + std::ldexp(1.0, -10)});
  // Widening is exact.
  expectFloats(floatsOf(castTo(floatBuffer("x", DType::F16, {0.1}), DType::F32)),
               {f16BitsToDouble(0x2E66)});
  expectFloats(floatsOf(castTo(floatBuffer("x", DType::F32, {0.1}), DType::F64)), {double(0.1f)});
  Buffer e5Inf = bitcastTo(intBuffer("u", DType::U8, {0x7C, 0xFC}), DType::F8E5M2);
  expectFloats(floatsOf(castTo(e5Inf, DType::F32)), {kInf, -kInf});
}

TEST(InterpCast, BitcastIsBitExact) {
  EXPECT_EQ(intsOf(bitcastTo(floatBuffer("f", DType::F32, {1.0, -2.0}), DType::U32)),
            (std::vector<int64_t>{0x3F800000, 0xC0000000LL}));
  EXPECT_EQ(intsOf(bitcastTo(floatBuffer("f", DType::F16, {1.0}), DType::I16)),
            (std::vector<int64_t>{0x3C00}));
  EXPECT_EQ(intsOf(bitcastTo(floatBuffer("f", DType::BF16, {-1.0}), DType::U16)),
            (std::vector<int64_t>{0xBF80}));
  EXPECT_EQ(intsOf(bitcastTo(intBuffer("i", DType::I16, {-1}), DType::U16)),
            (std::vector<int64_t>{65535}));
  expectFloats(floatsOf(bitcastTo(intBuffer("u", DType::U8, {0x7E, 0x38}), DType::F8E4M3)),
               {448.0, 1.0});
  expectFloats(floatsOf(bitcastTo(intBuffer("u", DType::I64, {0x3FF0000000000000LL}), DType::F64)),
               {1.0});
  // NaN payloads survive a round trip through bitcasts, even signalling ones.
  Buffer nanBits = intBuffer("n", DType::I32, {-1, 0x7F800001, 0x7FC00123});
  Buffer back = mapKernel({nanBits}, DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
    Value *f = kb.op(OpKind::Bitcast, {v[0]}, v[0]->type.withDType(DType::F32));
    return kb.op(OpKind::Bitcast, {f}, f->type.withDType(DType::I32));
  });
  EXPECT_EQ(intsOf(back), (std::vector<int64_t>{-1, 0x7F800001, 0x7FC00123}));
  Buffer halfNan = intBuffer("n", DType::U16, {0x7C01, 0xFE00});
  Buffer halfBack = mapKernel({halfNan}, DType::U16, [](KernelBuilder &kb, std::vector<Value *> v) {
    Value *f = kb.op(OpKind::Bitcast, {v[0]}, v[0]->type.withDType(DType::F16));
    return kb.op(OpKind::Bitcast, {f}, f->type.withDType(DType::U16));
  });
  EXPECT_EQ(intsOf(halfBack), (std::vector<int64_t>{0x7C01, 0xFE00}));
}
