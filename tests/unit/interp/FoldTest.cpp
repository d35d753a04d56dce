//===- FoldTest.cpp - Constant folding with the interpreter's semantics ---===//
//
// foldElementwise must give exactly what the op computes at run time: each case here
// is checked against hand-computed values, and a sweep compares folding with running
// the same op in a kernel.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Fold.h"

#include "InterpTestUtil.h"

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::test;

namespace {

/// Makes `kind` on constant operands in a fresh kernel and folds it.
struct FoldCase {
  KernelBuilder kb;
  std::vector<Value *> operands;
  std::vector<ir::Attr> attrs;

  Value *add(Value *constant) {
    operands.push_back(constant);
    attrs.push_back(constant->definingOp()->attrs().at("value"));
    return constant;
  }
  std::optional<ir::Attr> fold(OpKind kind, Type result, ir::AttrMap a = {}) {
    Value *v = kb.op(kind, operands, result, std::move(a));
    return foldElementwise(*v->definingOp(), attrs);
  }
};

int64_t asInt(const std::optional<ir::Attr> &a) {
  EXPECT_TRUE(a.has_value());
  return a ? std::get<int64_t>(*a) : -12345;
}
double asFloat(const std::optional<ir::Attr> &a) {
  EXPECT_TRUE(a.has_value());
  return a ? std::get<double>(*a) : -12345.0;
}

} // namespace

TEST(InterpFold, IntegerArithmeticWrapsAndDividesLikeTheInterpreter) {
  {
    FoldCase c;
    c.add(c.kb.ci(std::numeric_limits<int32_t>::max()));
    c.add(c.kb.ci(1));
    EXPECT_EQ(asInt(c.fold(OpKind::Add, Type::scalar(DType::I32))), std::numeric_limits<int32_t>::min());
  }
  {
    FoldCase c;
    c.add(c.kb.ci(7, DType::I32, {4}));
    c.add(c.kb.ci(0, DType::I32, {4}));
    EXPECT_EQ(asInt(c.fold(OpKind::Div, Type::tile(DType::I32, {4}))), 0);
  }
  {
    FoldCase c;
    c.add(c.kb.ci(-8, DType::I8));
    c.add(c.kb.ci(9, DType::I8));
    EXPECT_EQ(asInt(c.fold(OpKind::Shr, Type::scalar(DType::I8))), -1);
  }
  {
    FoldCase c;
    c.add(c.kb.ci(200, DType::U8));
    EXPECT_EQ(asInt(c.fold(OpKind::Not, Type::scalar(DType::U8))), 55);
  }
}

TEST(InterpFold, FloatsRoundInTheirDType) {
  {
    FoldCase c;
    c.add(c.kb.cf(2048.0, DType::F16));
    c.add(c.kb.cf(1.0, DType::F16));
    EXPECT_EQ(asFloat(c.fold(OpKind::Add, Type::scalar(DType::F16))), 2048.0);
  }
  {
    FoldCase c;
    c.add(c.kb.cf(0.1, DType::F32));
    c.add(c.kb.cf(0.2, DType::F32));
    EXPECT_EQ(asFloat(c.fold(OpKind::Add, Type::scalar(DType::F32))), double(0.1f + 0.2f));
  }
  {
    FoldCase c;
    c.add(c.kb.cf(std::numeric_limits<double>::quiet_NaN()));
    c.add(c.kb.cf(3.0));
    EXPECT_EQ(asFloat(c.fold(OpKind::Maximum, Type::scalar(DType::F32))), 3.0);
  }
  {
    FoldCase c;
    c.add(c.kb.cf(std::numeric_limits<double>::quiet_NaN()));
    c.add(c.kb.cf(3.0));
    EXPECT_EQ(asInt(c.fold(OpKind::Cmp, Type::scalar(DType::Bool), {{"pred", std::string("ne")}})), 1);
  }
  {
    FoldCase c;
    c.add(c.kb.cf(2.0));
    EXPECT_EQ(asFloat(c.fold(OpKind::Sqrt, Type::scalar(DType::F32))), double(std::sqrt(2.0f)));
  }
}

TEST(InterpFold, ConversionsSelectAndShapes) {
  {
    FoldCase c;
    c.add(c.kb.cf(1000.0));
    EXPECT_EQ(asFloat(c.fold(OpKind::Cast, Type::scalar(DType::F8E4M3))), 448.0);
  }
  {
    FoldCase c;
    c.add(c.kb.cf(-3e9));
    EXPECT_EQ(asInt(c.fold(OpKind::Cast, Type::scalar(DType::I32))), std::numeric_limits<int32_t>::min());
  }
  {
    FoldCase c;
    c.add(c.kb.cf(1.0));
    EXPECT_EQ(asInt(c.fold(OpKind::Bitcast, Type::scalar(DType::U32))), 0x3F800000);
  }
  {
    FoldCase c;
    c.add(c.kb.cb(false));
    c.add(c.kb.ci(1));
    c.add(c.kb.ci(2));
    EXPECT_EQ(asInt(c.fold(OpKind::Select, Type::scalar(DType::I32))), 2);
  }
  {
    FoldCase c;
    c.add(c.kb.cf(0.5, DType::BF16, {1, 4}));
    EXPECT_EQ(asFloat(c.fold(OpKind::Broadcast, Type::tile(DType::BF16, {3, 4}))), 0.5);
  }
  {
    FoldCase c;
    c.add(c.kb.ci(-4, DType::I16));
    EXPECT_EQ(asInt(c.fold(OpKind::Splat, Type::tile(DType::I16, {8}))), -4);
  }
}

TEST(InterpFold, OtherOpsAreNotFolded) {
  FoldCase c;
  c.add(c.kb.ci(1, DType::I32, {4}));
  EXPECT_FALSE(c.fold(OpKind::Reduce, Type::scalar(DType::I32), {{"axis", int64_t(0)}, {"kind", std::string("sum")}}));
  FoldCase d;
  d.add(d.kb.ci(1, DType::I32, {4}));
  d.add(d.kb.ci(2, DType::I32, {4}));
  EXPECT_FALSE(d.fold(OpKind::Join, Type::tile(DType::I32, {4, 2})));
  // A mismatched operand list is refused rather than misread.
  FoldCase e;
  Value *x = e.add(e.kb.ci(1));
  Value *sum = e.kb.bin(OpKind::Add, x, x);
  EXPECT_FALSE(foldElementwise(*sum->definingOp(), {}));
}

TEST(InterpFold, AgreesWithRunningTheOp) {
  // Every float binary op on a few f16 values: folding equals running it in a kernel.
  const std::vector<double> vals = {0.1, -2.5, 1000.0, 65504.0, 0.0, -0.0};
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Rem, OpKind::Pow,
                   OpKind::Minimum, OpKind::Maximum}) {
    std::vector<double> as, bs;
    for (double a : vals)
      for (double b : vals)
        as.push_back(a), bs.push_back(b);
    Buffer run = mapKernel({floatBuffer("a", DType::F16, as), floatBuffer("b", DType::F16, bs)}, DType::F16,
                           [&](KernelBuilder &kb, std::vector<Value *> v) { return kb.bin(k, v[0], v[1]); });
    std::vector<uint64_t> ranBits = bitsOf(run);
    for (size_t i = 0; i < as.size(); ++i) {
      FoldCase c;
      c.add(c.kb.cf(as[i], DType::F16));
      c.add(c.kb.cf(bs[i], DType::F16));
      double folded = asFloat(c.fold(k, Type::scalar(DType::F16)));
      if (std::isnan(folded))
        EXPECT_TRUE(std::isnan(floatFromBits(DType::F16, ranBits[i])));
      else
        EXPECT_EQ(floatBits(DType::F16, folded), ranBits[i]) << as[i] << " op " << bs[i];
    }
  }
}
