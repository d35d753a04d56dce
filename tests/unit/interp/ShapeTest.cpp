//===- ShapeTest.cpp - Interpreter: arange, splat and the shape ops -------===//
#include "InterpTestUtil.h"

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {
/// The 2x3 tile [[0, 1, 2], [10, 11, 12]].
std::pair<Buffer, Shape> tile2x3() {
  return {intBuffer("x", DType::I32, {0, 1, 2, 10, 11, 12}), {2, 3}};
}

using Ints = std::vector<int64_t>;
} // namespace

TEST(InterpShape, Arange) {
  Buffer out = mapShaped({{intBuffer("unused", DType::I32, {0}), {1}}}, DType::I32,
                         [](KernelBuilder &kb, std::vector<Value *>) { return kb.arange(5, 9); });
  EXPECT_EQ(intsOf(out), (Ints{5, 6, 7, 8}));
  Buffer neg = mapShaped({{intBuffer("unused", DType::I32, {0}), {1}}}, DType::I32,
                         [](KernelBuilder &kb, std::vector<Value *>) { return kb.arange(-2, 1); });
  EXPECT_EQ(intsOf(neg), (Ints{-2, -1, 0}));
}

TEST(InterpShape, SplatAndConstantTiles) {
  Buffer out = mapShaped({{intBuffer("s", DType::I32, {7}), {1}}}, DType::I32,
                         [](KernelBuilder &kb, std::vector<Value *> v) {
                           Value *scalar = kb.op(OpKind::Reshape, {v[0]}, Type::scalar(DType::I32));
                           return kb.splat(scalar, {2, 3});
                         });
  EXPECT_EQ(intsOf(out), (Ints{7, 7, 7, 7, 7, 7}));
  Buffer c = mapShaped({{intBuffer("unused", DType::I32, {0}), {1}}}, DType::F16,
                       [](KernelBuilder &kb, std::vector<Value *>) {
                         return kb.cf(0.5, DType::F16, {2, 2});
                       });
  EXPECT_EQ(floatsOf(c), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
}

TEST(InterpShape, Broadcast) {
  auto bc = [](Shape in, Shape out) {
    Buffer b = intBuffer("x", DType::I32, {1, 2, 3, 4, 5, 6});
    b.data.resize(numElements(in) * 4);
    return intsOf(mapShaped({{b, in}}, DType::I32, [&](KernelBuilder &kb, std::vector<Value *> v) {
      return kb.op(OpKind::Broadcast, {v[0]}, v[0]->type.withShape(out));
    }));
  };
  EXPECT_EQ(bc({1, 3}, {2, 3}), (Ints{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(bc({2, 1}, {2, 3}), (Ints{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(bc({1, 1}, {3, 2}), (Ints{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(bc({2, 1, 3}, {2, 2, 3}), (Ints{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(bc({3}, {3}), (Ints{1, 2, 3}));
}

TEST(InterpShape, ExpandDimsAndReshapeKeepRowMajorOrder) {
  for (int64_t axis : {0, 1, 2}) {
    Buffer out = mapShaped({tile2x3()}, DType::I32, [&](KernelBuilder &kb, std::vector<Value *> v) {
      Shape s = {2, 3};
      s.insert(s.begin() + axis, 1);
      Value *e = kb.op(OpKind::ExpandDims, {v[0]}, v[0]->type.withShape(s), {{"axis", axis}});
      return e;
    });
    EXPECT_EQ(intsOf(out), (Ints{0, 1, 2, 10, 11, 12})) << axis;
  }
  Buffer r = mapShaped({tile2x3()}, DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.op(OpKind::Reshape, {v[0]}, v[0]->type.withShape({3, 2}));
  });
  EXPECT_EQ(intsOf(r), (Ints{0, 1, 2, 10, 11, 12}));
}

TEST(InterpShape, Permute) {
  Buffer t = mapShaped({tile2x3()}, DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
    return kb.op(OpKind::Permute, {v[0]}, v[0]->type.withShape({3, 2}),
                 {{"perm", std::vector<int64_t>{1, 0}}});
  });
  EXPECT_EQ(intsOf(t), (Ints{0, 10, 1, 11, 2, 12}));
  // 3-D: x[i][j][k] = 100 i + 10 j + k of shape [2, 3, 4]; perm [2, 0, 1] gives
  // y[k][i][j] = x[i][j][k] of shape [4, 2, 3].
  Ints vals;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        vals.push_back(100 * i + 10 * j + k);
  Buffer y = mapShaped({{intBuffer("x", DType::I32, vals), {2, 3, 4}}}, DType::I32,
                       [](KernelBuilder &kb, std::vector<Value *> v) {
                         return kb.op(OpKind::Permute, {v[0]}, v[0]->type.withShape({4, 2, 3}),
                                      {{"perm", std::vector<int64_t>{2, 0, 1}}});
                       });
  Ints expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        expected.push_back(100 * i + 10 * j + k);
  EXPECT_EQ(intsOf(y), expected);
}

TEST(InterpShape, JoinAndSplit) {
  Buffer a = intBuffer("a", DType::I32, {1, 2, 3});
  Buffer b = intBuffer("b", DType::I32, {-1, -2, -3});
  Buffer j =
      mapShaped({{a, {3}}, {b, {3}}}, DType::I32, [](KernelBuilder &kb, std::vector<Value *> v) {
        return kb.op(OpKind::Join, {v[0], v[1]}, v[0]->type.withShape({3, 2}));
      });
  EXPECT_EQ(intsOf(j), (Ints{1, -1, 2, -2, 3, -3}));
  for (unsigned half : {0u, 1u}) {
    Buffer s = mapShaped({{intBuffer("x", DType::I32, {1, -1, 2, -2, 3, -3}), {3, 2}}}, DType::I32,
                         [&](KernelBuilder &kb, std::vector<Value *> v) {
                           ir::Op *split =
                               kb.make(OpKind::Split, {v[0]},
                                       {Type::tile(DType::I32, {3}), Type::tile(DType::I32, {3})});
                           return split->result(half);
                         });
    EXPECT_EQ(intsOf(s), half == 0 ? (Ints{1, 2, 3}) : (Ints{-1, -2, -3}));
  }
}
