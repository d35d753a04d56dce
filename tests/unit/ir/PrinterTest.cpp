//===- PrinterTest.cpp - Exact .tir text of hand-built IR -----------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::ir::test;

namespace {

const Type kI32 = Type::scalar(DType::I32);
const Type kF32 = Type::scalar(DType::F32);

TEST(PrintAttr, EveryKindOfValue) {
  EXPECT_EQ(printAttr(int64_t(3)), "3");
  EXPECT_EQ(printAttr(int64_t(-42)), "-42");
  EXPECT_EQ(printAttr(1.5), "1.5");
  EXPECT_EQ(printAttr(2.0), "2.0");
  EXPECT_EQ(printAttr(-0.0), "-0.0");
  EXPECT_EQ(printAttr(1e20), "1e+20");
  EXPECT_EQ(printAttr(0.1), "0.1");
  EXPECT_EQ(printAttr(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(printAttr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(printAttr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(printAttr(std::nan("")), "nan");
  EXPECT_EQ(printAttr(true), "true");
  EXPECT_EQ(printAttr(false), "false");
  EXPECT_EQ(printAttr(std::string("a \"q\" \\ \n\t\x01\xff")), "\"a \\\"q\\\" \\\\ \\n\\t\\x01\\xff\"");
  EXPECT_EQ(printAttr(DType::BF16), "bf16");
  EXPECT_EQ(printAttr(std::vector<int64_t>{0, -1, 2}), "[0, -1, 2]");
  EXPECT_EQ(printAttr(std::vector<int64_t>{}), "[]");
}

/// A vector-add kernel as the frontend would build it, with a few naming hazards:
/// two values hinted "offs", a hint "offs_1" already taken, unnamed values, a hint that
/// is not an identifier and a numeric hint.
std::unique_ptr<Module> buildAdd() {
  auto m = std::make_unique<Module>();
  uint32_t file = m->sources->addName("add.kiln");
  auto L = [&](uint32_t line, uint32_t col) { return Location{file, line, col}; };
  auto k = std::make_unique<Kernel>();
  k->name = "add";
  k->loc = L(1, 1);
  k->constValues = {{"BLOCK", int64_t(4)}, {"ALPHA", 0.5}};
  Block *body = k->body.get();
  Value *x = body->addArgument(Type::ptr(DType::F32), "x");
  Value *out = body->addArgument(Type::ptr(DType::F32), "out");
  Value *n = body->addArgument(kI32, "n");
  Builder b(body);
  Value *pid = b.createValue(OpKind::ProgramId, L(2, 14), {}, kI32, {{"axis", int64_t(0)}});
  pid->nameHint = "pid";
  Value *four = b.intConstant(L(2, 30), kI32, 4);
  Value *base = b.createValue(OpKind::Mul, L(2, 28), {pid, four}, kI32);
  Type vi = Type::tile(DType::I32, {4});
  Value *ar = b.createValue(OpKind::Arange, L(2, 40), {}, vi,
                            {{"start", int64_t(0)}, {"end", int64_t(4)}});
  Value *baseV = b.createValue(OpKind::Splat, L(2, 38), {base}, vi);
  Value *offs = b.createValue(OpKind::Add, L(2, 38), {baseV, ar}, vi);
  offs->nameHint = "offs";
  Value *offs1 = b.createValue(OpKind::Add, L(3, 5), {offs, ar}, vi);
  offs1->nameHint = "offs_1";
  Value *offs2 = b.createValue(OpKind::Add, L(4, 5), {offs1, ar}, vi);
  offs2->nameHint = "offs";
  Value *nv = b.createValue(OpKind::Splat, L(5, 18), {n}, vi);
  nv->nameHint = "7";
  Value *mask = b.createValue(OpKind::Cmp, L(5, 14), {offs2, nv}, vi.withDType(DType::Bool),
                              {{"pred", std::string("lt")}});
  mask->nameHint = "m.1";
  Type vp = Type::ptr(DType::F32).withShape({4});
  Value *xs = b.createValue(OpKind::Splat, L(6, 20), {x}, vp);
  Value *xp = b.createValue(OpKind::PtrAdd, L(6, 20), {xs, offs2}, vp);
  Value *v = b.createValue(OpKind::Load, L(6, 13), {xp, mask}, Type::tile(DType::F32, {4}));
  Value *acc0 = b.floatConstant({}, kF32, 0.0);
  Value *one = b.intConstant({}, kI32, 1);
  Op *loop = b.create(OpKind::For, L(7, 5), {four, n, one, acc0}, {kF32}, {}, 1);
  Block *lb = loop->region(0);
  Value *i = lb->addArgument(kI32, "i");
  Value *acc = lb->addArgument(kF32, "acc");
  Builder ib(lb);
  Value *fi = ib.createValue(OpKind::Cast, L(8, 16), {i}, kF32);
  Value *sum = ib.createValue(OpKind::Add, L(8, 12), {acc, fi}, kF32);
  ib.create(OpKind::Yield, L(9, 5), {sum}, {});
  loop->result()->nameHint = "s";
  Op *halves = b.create(OpKind::Split, L(10, 5),
                        {b.createValue(OpKind::Join, L(10, 11), {v, v}, Type::tile(DType::F32, {4, 2}))},
                        {Type::tile(DType::F32, {4}), Type::tile(DType::F32, {4})});
  halves->result(0)->nameHint = "lo";
  Value *os = b.createValue(OpKind::Splat, L(11, 11), {out}, vp);
  Value *op = b.createValue(OpKind::PtrAdd, L(11, 11), {os, offs2}, vp);
  b.create(OpKind::Store, L(11, 5), {op, halves->result(1), mask}, {});
  b.create(OpKind::Print, L(12, 5), {loop->result()}, {}, {{"label", std::string("s = ")}});
  b.create(OpKind::Return, L(13, 1), {}, {});
  m->kernels.push_back(std::move(k));
  return m;
}

const char *const kAddText =
    "kernel @add(%x: *f32, %out: *f32, %n: i32) attributes {consts = {BLOCK = 4, ALPHA = 0.5}, "
    "num_stages = 1, num_warps = 4} {\n"
    "  %pid = program_id {axis = 0} : i32\n"
    "  %0 = constant {value = 4} : i32\n"
    "  %1 = mul %pid, %0 : i32\n"
    "  %2 = arange {end = 4, start = 0} : tile<i32, [4]>\n"
    "  %3 = splat %1 : tile<i32, [4]>\n"
    "  %offs = add %3, %2 : tile<i32, [4]>\n"
    "  %offs_1 = add %offs, %2 : tile<i32, [4]>\n"
    "  %offs_2 = add %offs_1, %2 : tile<i32, [4]>\n"
    "  %4 = splat %n : tile<i32, [4]>\n"
    "  %m_1 = cmp %offs_2, %4 {pred = \"lt\"} : tile<bool, [4]>\n"
    "  %5 = splat %x : tile<*f32, [4]>\n"
    "  %6 = ptr_add %5, %offs_2 : tile<*f32, [4]>\n"
    "  %7 = load %6, %m_1 : tile<f32, [4]>\n"
    "  %8 = constant {value = 0.0} : f32\n"
    "  %9 = constant {value = 1} : i32\n"
    "  %s = for %0, %n, %9, %8 : f32 {\n"
    "  ^(%i: i32, %acc: f32):\n"
    "    %10 = cast %i : f32\n"
    "    %11 = add %acc, %10 : f32\n"
    "    yield %11\n"
    "  }\n"
    "  %12 = join %7, %7 : tile<f32, [4, 2]>\n"
    "  %lo, %13 = split %12 : tile<f32, [4]>, tile<f32, [4]>\n"
    "  %14 = splat %out : tile<*f32, [4]>\n"
    "  %15 = ptr_add %14, %offs_2 : tile<*f32, [4]>\n"
    "  store %15, %13, %m_1\n"
    "  print %s {label = \"s = \"}\n"
    "  return\n"
    "}\n";

TEST(Printer, HandBuiltKernelExactText) {
  auto m = buildAdd();
  EXPECT_TRUE(verify(*m).empty());
  EXPECT_EQ(printModule(*m), kAddText);
}

TEST(Printer, LocationsComeFromTheSourceManager) {
  auto m = buildAdd();
  std::string text = printModule(*m, PrintOptions{true});
  EXPECT_NE(text.find("num_warps = 4} loc(\"add.kiln\":1:1) {\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  %pid = program_id {axis = 0} : i32 loc(\"add.kiln\":2:14)\n"),
            std::string::npos);
  EXPECT_NE(text.find("  %8 = constant {value = 0.0} : f32 loc(unknown)\n"), std::string::npos);
  EXPECT_NE(text.find("  %s = for %0, %n, %9, %8 : f32 loc(\"add.kiln\":7:5) {\n"),
            std::string::npos);
  EXPECT_NE(text.find("  return loc(\"add.kiln\":13:1)\n"), std::string::npos);
}

TEST(Printer, HandBuiltKernelRoundTrips) {
  auto m = buildAdd();
  for (bool locs : {false, true}) {
    std::string text = printModule(*m, PrintOptions{locs});
    Parsed p = parseText(text, "add.tir");
    ASSERT_TRUE(p.module) << p.first();
    EXPECT_EQ(printModule(*p.module, PrintOptions{locs}), text);
    EXPECT_TRUE(verify(*p.module).empty());
  }
}

TEST(Printer, PrintOpNumbersLocally) {
  auto m = buildAdd();
  const Op *loop = nullptr;
  for (auto &op : m->kernels[0]->body->ops())
    if (op->kind() == OpKind::For)
      loop = op.get();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(printOp(*loop), "%s = for %0, %n, %1, %2 : f32 {\n"
                            "^(%i: i32, %acc: f32):\n"
                            "  %3 = cast %i : f32\n"
                            "  %4 = add %acc, %3 : f32\n"
                            "  yield %4\n"
                            "}\n");
}

TEST(Printer, KernelNamesAndKeysThatAreNotIdentifiersAreQuoted) {
  Module m;
  auto k = std::make_unique<Kernel>();
  k->name = "soft max";
  k->constValues = {{"odd key", DType::F16}, {"L", std::vector<int64_t>{1, 2}}, {"B", false}};
  k->numWarps = 2;
  k->numStages = 3;
  Builder(k->body.get()).create(OpKind::Return, {}, {}, {});
  m.kernels.push_back(std::move(k));
  m.kernels.push_back(std::make_unique<Kernel>());
  m.kernels.back()->name = "second";
  Builder(m.kernels.back()->body.get()).create(OpKind::Return, {}, {}, {});
  std::string text = printModule(m);
  EXPECT_EQ(text, "kernel @\"soft max\"() attributes {consts = {\"odd key\" = f16, L = [1, 2], "
                  "B = false}, num_stages = 3, num_warps = 2} {\n"
                  "  return\n"
                  "}\n"
                  "\n"
                  "kernel @second() attributes {consts = {}, num_stages = 1, num_warps = 4} {\n"
                  "  return\n"
                  "}\n");
  Parsed p = parseText(text);
  ASSERT_TRUE(p.module) << p.first();
  EXPECT_EQ(p.module->kernels[0]->name, "soft max");
  EXPECT_EQ(printModule(*p.module), text);
}

} // namespace
