//===- IRTest.cpp - Op table, Builder, walking, rewriting, cloning --------===//
#include "TestUtil.h"

#include "support/FloatFormats.h"

#include <gtest/gtest.h>

#include <set>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::ir::test;

namespace {

const Type kI32 = Type::scalar(DType::I32);
const Type kF32 = Type::scalar(DType::F32);

/// A kernel `@k(%p: *f32, %n: i32)` whose body holds a sum loop over `n`:
///   %zero, %one, %acc0 constants; %s = for 0, n, 1, acc0 { acc + cast(i) }; return
struct LoopKernel {
  Module module;
  Kernel *kernel;
  Op *loop;
  Op *ret;

  LoopKernel() {
    auto k = std::make_unique<Kernel>();
    k->name = "k";
    kernel = k.get();
    module.kernels.push_back(std::move(k));
    Block *body = kernel->body.get();
    body->addArgument(Type::ptr(DType::F32), "p");
    Value *n = body->addArgument(kI32, "n");
    Builder b(body);
    Location loc{0, 1, 1};
    Value *zero = b.intConstant(loc, kI32, 0);
    Value *one = b.intConstant(loc, kI32, 1);
    Value *acc0 = b.floatConstant(loc, kF32, 0.0);
    loop = b.create(OpKind::For, loc, {zero, n, one, acc0}, {kF32}, {}, 1);
    Block *region = loop->region(0);
    Value *iv = region->addArgument(kI32, "i");
    Value *acc = region->addArgument(kF32, "acc");
    Builder inner(region);
    Value *ivf = inner.createValue(OpKind::Cast, loc, {iv}, kF32);
    Value *next = inner.createValue(OpKind::Add, loc, {acc, ivf}, kF32);
    inner.create(OpKind::Yield, loc, {next}, {});
    loop->result()->nameHint = "s";
    ret = b.create(OpKind::Return, loc, {}, {});
  }
};

TEST(OpTable, MnemonicsRoundTripForEveryKind) {
  unsigned count = 0;
#define KILN_OP(Enum, Mnemonic, MinOps, MaxOps, NumResults, NumRegions)                      \
  EXPECT_EQ(opKindFromMnemonic(Mnemonic), OpKind::Enum);                                   \
  EXPECT_STREQ(opInfo(OpKind::Enum).mnemonic, Mnemonic);                                   \
  EXPECT_EQ(opInfo(OpKind::Enum).minOperands, MinOps);                                     \
  EXPECT_EQ(opInfo(OpKind::Enum).maxOperands, MaxOps);                                     \
  EXPECT_EQ(opInfo(OpKind::Enum).numResults, NumResults);                                  \
  EXPECT_EQ(opInfo(OpKind::Enum).numRegions, NumRegions);                                  \
  ++count;
#include "ir/Ops.def"
  EXPECT_GT(count, 60u);
  EXPECT_FALSE(opKindFromMnemonic("addf"));
  EXPECT_FALSE(opKindFromMnemonic(""));
}

TEST(OpTable, Classification) {
  EXPECT_TRUE(isTerminator(OpKind::Yield));
  EXPECT_TRUE(isTerminator(OpKind::Condition));
  EXPECT_TRUE(isTerminator(OpKind::Return));
  EXPECT_FALSE(isTerminator(OpKind::Store));
  EXPECT_TRUE(isElementwise(OpKind::Add));
  EXPECT_TRUE(isElementwise(OpKind::Exp));
  EXPECT_TRUE(isElementwise(OpKind::Fma));
  EXPECT_FALSE(isElementwise(OpKind::Cmp));
  EXPECT_FALSE(isElementwise(OpKind::Cast));
  EXPECT_FALSE(isElementwise(OpKind::Reduce));
  EXPECT_TRUE(isPure(OpKind::Add));
  EXPECT_TRUE(isPure(OpKind::Dot));
  EXPECT_TRUE(isPure(OpKind::ProgramId));
  EXPECT_FALSE(isPure(OpKind::Load));
  EXPECT_FALSE(isPure(OpKind::Store));
  EXPECT_FALSE(isPure(OpKind::AtomicRMW));
  EXPECT_FALSE(isPure(OpKind::Print));
  EXPECT_FALSE(isPure(OpKind::For));
}

TEST(Builder, BuildsValidIrWithConsistentLinks) {
  LoopKernel lk;
  EXPECT_TRUE(verify(lk.module).empty());
  Block &body = *lk.kernel->body;
  EXPECT_EQ(body.terminator(), lk.ret);
  EXPECT_EQ(lk.loop->parentBlock(), &body);
  EXPECT_EQ(lk.loop->parentOp(), nullptr);
  Block *region = lk.loop->region(0);
  EXPECT_EQ(region->parentOp(), lk.loop);
  Op *yield = region->terminator();
  ASSERT_NE(yield, nullptr);
  EXPECT_EQ(yield->parentOp(), lk.loop);
  EXPECT_EQ(region->argument(1)->ownerBlock(), region);
  EXPECT_EQ(region->argument(1)->index(), 1u);
  EXPECT_TRUE(region->argument(1)->isBlockArgument());
  EXPECT_EQ(lk.loop->result()->definingOp(), lk.loop);
  EXPECT_FALSE(lk.loop->result()->isBlockArgument());
  EXPECT_EQ(lk.kernel->params().size(), 2u);
  EXPECT_EQ(lk.module.findKernel("k"), lk.kernel);
  EXPECT_EQ(lk.module.findKernel("q"), nullptr);
}

TEST(Builder, InsertsBeforeTheGivenOp) {
  LoopKernel lk;
  Builder b;
  b.setInsertionPoint(lk.ret);
  Value *pid = b.createValue(OpKind::ProgramId, {}, {}, kI32, {{"axis", int64_t(0)}});
  Value *pid2 = b.createValue(OpKind::ProgramId, {}, {}, kI32, {{"axis", int64_t(1)}});
  auto &ops = lk.kernel->body->ops();
  auto it = ops.end();
  --it;
  EXPECT_EQ(it->get(), lk.ret);
  --it;
  EXPECT_EQ(it->get(), pid2->definingOp());
  --it;
  EXPECT_EQ(it->get(), pid->definingOp());
}

TEST(Builder, RejectsBadOpsAsInternalErrorsNamingTheOp) {
  LoopKernel lk;
  Builder b;
  b.setInsertionPoint(lk.ret);
  Value *n = lk.kernel->body->argument(1);
  Value *p = lk.kernel->body->argument(0);
  auto message = [&](auto fn) -> std::string {
    try {
      fn();
    } catch (const InternalCompilerError &e) {
      return e.what();
    }
    return "(no error)";
  };
  size_t before = countOps(*lk.kernel->body);
  EXPECT_NE(message([&] { b.create(OpKind::Add, {}, {n}, {kI32}); })
                .find("'add' op expects 2 operands, got 1"),
            std::string::npos);
  EXPECT_NE(message([&] { b.create(OpKind::Add, {}, {n, n}, {kF32}); })
                .find("'add' op result type is f32; expected i32"),
            std::string::npos);
  EXPECT_NE(message([&] { b.create(OpKind::Exp, {}, {n}, {kI32}); })
                .find("'exp' op operands must be floats, got i32"),
            std::string::npos);
  EXPECT_NE(message([&] { b.create(OpKind::Load, {}, {p}, {kF32, kF32}); })
                .find("'load' op expects 1 results, got 2"),
            std::string::npos);
  EXPECT_NE(message([&] { b.create(OpKind::For, {}, {n, n, n}, {}, {}, 0); })
                .find("'for' op expects 1 regions, got 0"),
            std::string::npos);
  EXPECT_NE(message([&] { b.create(OpKind::ProgramId, {}, {}, {kI32}); })
                .find("'program_id' op requires attribute 'axis'"),
            std::string::npos);
  // Nothing was inserted by the failed attempts.
  EXPECT_EQ(countOps(*lk.kernel->body), before);
}

TEST(Builder, ConstantsAreCanonical) {
  Module m;
  m.kernels.push_back(std::make_unique<Kernel>());
  Builder b(m.kernels[0]->body.get());
  Value *c8 = b.intConstant({}, Type::scalar(DType::I8), 300);
  EXPECT_EQ(c8->definingOp()->intAttr("value"), 44);
  Value *cu = b.intConstant({}, Type::scalar(DType::U8), -1);
  EXPECT_EQ(cu->definingOp()->intAttr("value"), 255);
  Value *cf = b.intConstant({}, Type::tile(DType::F16, {4}), 3);
  EXPECT_EQ(cf->definingOp()->floatAttr("value"), 3.0);
  EXPECT_EQ(cf->type, Type::tile(DType::F16, {4}));
  Value *h = b.floatConstant({}, Type::scalar(DType::F16), 0.1);
  EXPECT_EQ(h->definingOp()->floatAttr("value"), roundToFloatDType(DType::F16, 0.1));
  EXPECT_NE(h->definingOp()->floatAttr("value"), 0.1);
  Value *t = b.boolConstant({}, Type::scalar(DType::Bool), true);
  EXPECT_EQ(t->definingOp()->intAttr("value"), 1);
  EXPECT_THROW(b.floatConstant({}, kI32, 1.0), InternalCompilerError);
  EXPECT_THROW(b.boolConstant({}, kI32, true), InternalCompilerError);
}

TEST(Op, AttributeGettersCheckPresenceAndType) {
  Op op(OpKind::Reduce, {});
  op.setAttr("axis", int64_t(1));
  op.setAttr("kind", std::string("sum"));
  op.setAttr("scale", 0.5);
  op.setAttr("flag", true);
  op.setAttr("dt", DType::BF16);
  op.setAttr("perm", std::vector<int64_t>{1, 0});
  EXPECT_EQ(op.intAttr("axis"), 1);
  EXPECT_EQ(op.stringAttr("kind"), "sum");
  EXPECT_EQ(op.floatAttr("scale"), 0.5);
  EXPECT_TRUE(op.boolAttr("flag"));
  EXPECT_EQ(op.dtypeAttr("dt"), DType::BF16);
  EXPECT_EQ(op.intsAttr("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(op.hasAttr("axis"));
  EXPECT_FALSE(op.hasAttr("k"));
  try {
    op.intAttr("k");
    ADD_FAILURE() << "no error for an absent attribute";
  } catch (const InternalCompilerError &e) {
    EXPECT_NE(std::string(e.what()).find("'reduce' has no attribute 'k'"), std::string::npos);
  }
  try {
    op.intAttr("kind");
    ADD_FAILURE() << "no error for a mistyped attribute";
  } catch (const InternalCompilerError &e) {
    EXPECT_NE(std::string(e.what()).find("'kind' of op 'reduce' is not an integer"),
              std::string::npos);
  }
  EXPECT_THROW(op.boolAttr("axis"), InternalCompilerError);
  EXPECT_THROW(op.floatAttr("axis"), InternalCompilerError);
  EXPECT_THROW(op.dtypeAttr("kind"), InternalCompilerError);
  EXPECT_THROW(op.intsAttr("axis"), InternalCompilerError);
  EXPECT_THROW(op.stringAttr("flag"), InternalCompilerError);
}

TEST(Walk, PreOrderVisitsParentsFirstPostOrderChildrenFirst) {
  LoopKernel lk;
  std::vector<std::string> pre, post;
  walk(*lk.kernel->body, [&](Op &op) { pre.push_back(op.mnemonic()); });
  walkPostOrder(*lk.kernel->body, [&](Op &op) { post.push_back(op.mnemonic()); });
  EXPECT_EQ(pre, (std::vector<std::string>{"constant", "constant", "constant", "for", "cast",
                                           "add", "yield", "return"}));
  EXPECT_EQ(post, (std::vector<std::string>{"constant", "constant", "constant", "cast", "add",
                                            "yield", "for", "return"}));
  EXPECT_EQ(countOps(*lk.kernel->body), 8u);
}

TEST(Walk, PostOrderAllowsErasingTheVisitedOp) {
  LoopKernel lk;
  // Erase every constant (they are top-level, so their iterator is in the body).
  walkPostOrder(*lk.kernel->body, [&](Op &op) {
    if (op.kind() == OpKind::Constant)
      op.parentBlock()->erase(op.parentBlock()->find(&op));
  });
  EXPECT_EQ(countOps(*lk.kernel->body), 5u);
}

TEST(Rewrite, ReplaceUsesFollowsChainsAndCounts) {
  LoopKernel lk;
  Block *body = lk.kernel->body.get();
  Builder b;
  b.setInsertionPoint(lk.loop);
  Value *a = b.intConstant({}, kI32, 7);
  Value *c = b.intConstant({}, kI32, 9);
  Value *n = body->argument(1);
  ValueMap map = {{n, a}, {a, c}};
  // n is used once (the loop's upper bound).
  EXPECT_EQ(replaceUses(*body, map), 1u);
  EXPECT_EQ(lk.loop->operand(1), c);
  // A cyclic map terminates and changes nothing harmful.
  ValueMap cyclic = {{c, a}, {a, c}};
  EXPECT_EQ(replaceUses(*body, cyclic), 1u);
  EXPECT_EQ(replaceUses(*body, {}), 0u);
  // Uses inside regions are rewritten too.
  Block *region = lk.loop->region(0);
  Value *acc = region->argument(1);
  Value *iv = region->argument(0);
  Op *add = std::next(region->ops().begin())->get();
  ASSERT_EQ(add->kind(), OpKind::Add);
  Builder inner;
  inner.setInsertionPoint(add);
  Value *k = inner.floatConstant({}, kF32, 2.0);
  EXPECT_EQ(replaceUses(*body, {{acc, k}}), 1u);
  EXPECT_EQ(add->operand(0), k);
  EXPECT_EQ(add->operand(1)->definingOp()->operand(0), iv); // the cast is untouched
}

TEST(Clone, CloneModuleIsDeepAndIndependent) {
  LoopKernel lk;
  lk.kernel->constValues = {{"BLOCK", int64_t(64)}};
  lk.kernel->numWarps = 8;
  auto copy = cloneModule(lk.module);
  EXPECT_EQ(printModule(*copy), printModule(lk.module));
  EXPECT_EQ(copy->sources, lk.module.sources);
  Kernel &ck = *copy->kernels[0];
  EXPECT_EQ(ck.numWarps, 8);
  EXPECT_EQ(ck.constValues.size(), 1u);
  EXPECT_TRUE(verify(*copy).empty());
  // No value of the copy belongs to the original.
  std::set<const Value *> originals;
  walk(*lk.kernel->body, [&](Op &op) {
    for (auto &r : op.results())
      originals.insert(r.get());
    for (auto &region : op.regions())
      for (auto &arg : region->arguments())
        originals.insert(arg.get());
  });
  for (auto &arg : lk.kernel->body->arguments())
    originals.insert(arg.get());
  walk(*ck.body, [&](Op &op) {
    for (Value *v : op.operands())
      EXPECT_FALSE(originals.count(v)) << "clone uses an original value in " << op.mnemonic();
  });
  // Changing the copy leaves the original alone.
  std::string before = printModule(lk.module);
  ck.body->erase(std::prev(ck.body->ops().end()));
  EXPECT_EQ(printModule(lk.module), before);
  EXPECT_NE(printModule(*copy), before);
}

TEST(Clone, CloneOpMapsOperandsAndRecordsResults) {
  LoopKernel lk;
  Block *body = lk.kernel->body.get();
  Builder b;
  b.setInsertionPoint(lk.ret);
  Value *n2 = b.intConstant({}, kI32, 10);
  ValueMap mapping = {{body->argument(1), n2}};
  Op *copy = cloneOp(b, *lk.loop, mapping);
  EXPECT_EQ(copy->operand(1), n2);
  EXPECT_EQ(copy->operand(0), lk.loop->operand(0)); // unmapped operands are kept
  EXPECT_EQ(mapping.at(lk.loop->result()), copy->result());
  EXPECT_EQ(copy->result()->nameHint, "s");
  // The copy's body uses the copy's block arguments.
  Op *cast = copy->region(0)->ops().front().get();
  EXPECT_EQ(cast->operand(0), copy->region(0)->argument(0));
  EXPECT_EQ(countOps(*body), 8u + 1u + 4u);
  EXPECT_TRUE(verify(lk.module).empty());
}

TEST(Block, TakeAndInsertMoveOps) {
  LoopKernel lk;
  Block *body = lk.kernel->body.get();
  auto first = body->take(body->ops().begin());
  EXPECT_EQ(first->parentBlock(), nullptr);
  Op *placed = body->insert(body->find(lk.loop), std::move(first));
  EXPECT_EQ(placed->parentBlock(), body);
  EXPECT_EQ(std::prev(body->find(lk.loop))->get(), placed);
  EXPECT_EQ(body->find(nullptr), body->ops().end());
}

} // namespace
