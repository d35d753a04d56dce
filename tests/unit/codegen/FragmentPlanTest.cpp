//===- FragmentPlanTest.cpp - Which values stay in fragment order ---------===//
#include "codegen/FragmentPlan.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln::codegen {
namespace {

using Kind = FragForm::Kind;

/// The flash-attention loop in miniature: a row max and sum of a dot's scores, the
/// probabilities rounded to bf16 as the A operand of a second dot, and three carried
/// values; after it, the output and the row sums are stored.
const char *kAttentionLoop = R"(
kernel @k(%x: bf16, %n: i32, %o: *f32, %ol: *f32) attributes {num_warps = 4} {
  %a = splat %x : tile<bf16, [64, 32]>
  %b = splat %x : tile<bf16, [32, 32]>
  %m0 = constant {value = -inf} : tile<f32, [64]>
  %l0 = constant {value = 0.0} : tile<f32, [64]>
  %acc0 = constant {value = 0.0} : tile<f32, [64, 32]>
  %lb = constant {value = 0} : i32
  %st = constant {value = 1} : i32
  %m, %l, %acc = for %lb, %n, %st, %m0, %l0, %acc0 : tile<f32, [64]>, tile<f32, [64]>, tile<f32, [64, 32]> {
  ^(%i: i32, %m1: tile<f32, [64]>, %l1: tile<f32, [64]>, %acc1: tile<f32, [64, 32]>):
    %s = dot %a, %b : tile<f32, [64, 32]>
    %rm = reduce %s {axis = 1, kind = "max"} : tile<f32, [64]>
    %m2 = maximum %m1, %rm : tile<f32, [64]>
    %m2e = expand_dims %m2 {axis = 1} : tile<f32, [64, 1]>
    %mb = broadcast %m2e : tile<f32, [64, 32]>
    %d = sub %s, %mb : tile<f32, [64, 32]>
    %p = exp2 %d : tile<f32, [64, 32]>
    %rs = reduce %p {axis = 1, kind = "sum"} : tile<f32, [64]>
    %l2 = add %l1, %rs : tile<f32, [64]>
    %pb = cast %p : tile<bf16, [64, 32]>
    %acc2 = dot %pb, %b, %acc1 : tile<f32, [64, 32]>
    yield %m2, %l2, %acc2
  }
  %r = arange {end = 2048, start = 0} : tile<i32, [2048]>
  %r2 = reshape %r : tile<i32, [64, 32]>
  %ps = splat %o : tile<*f32, [64, 32]>
  %ptr = ptr_add %ps, %r2 : tile<*f32, [64, 32]>
  store %ptr, %acc
  %rl = arange {end = 64, start = 0} : tile<i32, [64]>
  %pl = splat %ol : tile<*f32, [64]>
  %ptrl = ptr_add %pl, %rl : tile<*f32, [64]>
  store %ptrl, %l
  return
}
)";

struct Planned {
  std::unique_ptr<ir::Module> module;
  FragmentPlan plan;
  std::map<std::string, const ir::Value *> byName;
  std::map<std::string, const ir::Op *> defs;

  const FragForm &form(const std::string &name) const { return plan.formOf(byName.at(name)); }
};

void collect(const ir::Block &block, Planned &p) {
  for (unsigned i = 0; i < block.numArguments(); ++i)
    p.byName[block.argument(i)->nameHint] = block.argument(i);
  for (const auto &op : block.ops()) {
    for (const auto &r : op->results()) {
      p.byName[r->nameHint] = r.get();
      p.defs[r->nameHint] = op.get();
    }
    for (unsigned i = 0; i < op->numRegions(); ++i)
      collect(*op->region(i), p);
  }
}

/// Plans the one kernel of `tir` with every dot tiled as `tiling` (for 4 warps), on
/// wgmma when `wgmma` says so.
std::unique_ptr<Planned> plan(const std::string &tir, std::optional<MmaTiling> tiling, bool wgmma = false) {
  auto sources = std::make_shared<SourceManager>();
  std::ostringstream errors;
  DiagnosticEngine diags(*sources, errors);
  auto p = std::make_unique<Planned>();
  p->module = ir::parseTir(sources, sources->addBuffer("k.tir", tir), diags);
  EXPECT_TRUE(p->module) << errors.str();
  if (!p->module)
    return p;
  const ir::Kernel &k = *p->module->kernels.front();
  collect(*k.body, *p);
  p->plan.compute(
      *k.body,
      [&](const ir::Op &dot) -> std::optional<FragmentPlan::DotFacts> {
        if (!tiling)
          return std::nullopt;
        MmaTiling t = *tiling;
        t.nTiles = dot.result()->type.shape[1] / 8 / t.wn;
        return FragmentPlan::DotFacts{t, true, wgmma};
      },
      [](const ir::Value *v) {
        const ir::Op *def = v->definingOp();
        return def && (def->kind() == ir::OpKind::Splat || def->kind() == ir::OpKind::Constant);
      });
  return p;
}

TEST(FragmentPlan, FlashAttentionLoopStaysInFragments) {
  auto p = plan(kAttentionLoop, MmaTiling::rowStrips(32, 4));
  ASSERT_TRUE(p->module);
  EXPECT_EQ(p->form("s").kind, Kind::Tile);
  EXPECT_EQ(p->form("rm").kind, Kind::Rows);
  EXPECT_EQ(p->form("m2").kind, Kind::Rows);
  EXPECT_EQ(p->form("mb").kind, Kind::RowBroadcast);
  EXPECT_EQ(p->form("p").kind, Kind::Tile);
  EXPECT_EQ(p->form("pb").kind, Kind::Tile);
  // The carried values found their forms: rows for m and l, the dot's tile for acc.
  EXPECT_EQ(p->form("m1").kind, Kind::Rows);
  EXPECT_EQ(p->form("l1").kind, Kind::Rows);
  EXPECT_EQ(p->form("acc1").kind, Kind::Tile);
  EXPECT_EQ(p->form("acc").kind, Kind::Tile);
  // The second dot reads P's registers as A and carries its accumulator.
  const ir::Op &dot2 = *p->defs.at("acc2");
  EXPECT_TRUE(p->plan.consumes(dot2, 0));
  EXPECT_FALSE(p->plan.consumes(dot2, 1));
  EXPECT_TRUE(p->plan.consumes(dot2, 2));
  // Nothing in the loop needs the blocked layout; the stores after it do.
  for (const char *name : {"s", "rm", "m2", "p", "pb", "m1", "l1", "acc1", "acc2", "mb"})
    EXPECT_FALSE(p->plan.needsBlocked(p->byName.at(name))) << name;
  EXPECT_TRUE(p->plan.needsBlocked(p->byName.at("acc")));
  EXPECT_TRUE(p->plan.needsBlocked(p->byName.at("l")));
  // The first dot's A is defined before the loop and read by it alone: packed once.
  EXPECT_EQ(p->form("a").kind, Kind::AOperand);
  EXPECT_EQ(p->form("a").numRegs(), 32 / 16 * 4);
  EXPECT_TRUE(p->plan.consumes(*p->defs.at("s"), 0));
  EXPECT_FALSE(p->plan.needsBlocked(p->byName.at("a")));
  EXPECT_EQ(p->form("b").kind, Kind::None); // a B operand
  EXPECT_TRUE(p->plan.lowersInFragments(*p->defs.at("rm")));
  EXPECT_FALSE(p->plan.lowersInFragments(*p->defs.at("acc2"))); // dots lower themselves
}

/// A loop whose body branches (a sparse loop's full-block version) around a dot whose
/// A operand is defined before it.
const char *kBranchingLoop = R"(
kernel @k(%x: bf16, %n: i32, %o: *f32) attributes {num_warps = 4} {
  %a = splat %x : tile<bf16, [64, 32]>
  %b = splat %x : tile<bf16, [32, 32]>
  %acc0 = constant {value = 0.0} : tile<f32, [64, 32]>
  %lb = constant {value = 0} : i32
  %st = constant {value = 1} : i32
  %acc = for %lb, %n, %st, %acc0 : tile<f32, [64, 32]> {
  ^(%i: i32, %acc1: tile<f32, [64, 32]>):
    %full = cmp %i, %st {pred = "lt"} : bool
    %bb = if %full : tile<bf16, [32, 32]> {
      yield %b
    } {
      %z = constant {value = 0.0} : tile<bf16, [32, 32]>
      yield %z
    }
    %acc2 = dot %a, %bb, %acc1 : tile<f32, [64, 32]>
    yield %acc2
  }
  %r = arange {end = 2048, start = 0} : tile<i32, [2048]>
  %r2 = reshape %r : tile<i32, [64, 32]>
  %ps = splat %o : tile<*f32, [64, 32]>
  %ptr = ptr_add %ps, %r2 : tile<*f32, [64, 32]>
  store %ptr, %acc
  return
}
)";

TEST(FragmentPlan, WgmmaRegisterAIsNotHeldAcrossABranchingLoop) {
  // On mma.sync the loop-invariant A is packed once before the loop; on wgmma, in a loop
  // that branches, it is not (ptxas reuses such registers: FragmentPlan.cpp says why).
  auto sync = plan(kBranchingLoop, MmaTiling::rowStrips(32, 4), /*wgmma=*/false);
  ASSERT_TRUE(sync->module);
  EXPECT_EQ(sync->form("a").kind, Kind::AOperand);
  auto async = plan(kBranchingLoop, MmaTiling::rowStrips(32, 4), /*wgmma=*/true);
  ASSERT_TRUE(async->module);
  EXPECT_TRUE(async->form("a").none());
  EXPECT_EQ(async->form("acc2").kind, Kind::Tile) << "the accumulator still stays in registers";
  // Without the branch, wgmma keeps A in registers (the attention loop above).
  auto plain = plan(kAttentionLoop, MmaTiling::rowStrips(32, 4), /*wgmma=*/true);
  ASSERT_TRUE(plain->module);
  EXPECT_EQ(plain->form("a").kind, Kind::AOperand);
}

TEST(FragmentPlan, TransposedBIsReadThrough) {
  const char *tir = R"(
kernel @t(%x: bf16, %y: bf16, %o: *f32) attributes {num_warps = 4} {
  %a = splat %x : tile<bf16, [64, 32]>
  %k = splat %y : tile<bf16, [16, 32]>
  %kt = permute %k {perm = [1, 0]} : tile<bf16, [32, 16]>
  %s = dot %a, %kt : tile<f32, [64, 16]>
  %k2 = splat %y : tile<bf16, [32, 32]>
  %kt2 = permute %k2 {perm = [1, 0]} : tile<bf16, [32, 32]>
  %s2 = dot %a, %kt2 : tile<f32, [64, 32]>
  %c = cast %kt2 : tile<f32, [32, 32]>
  %r = arange {end = 1024, start = 0} : tile<i32, [1024]>
  %r2 = reshape %r : tile<i32, [64, 16]>
  %ps = splat %o : tile<*f32, [64, 16]>
  %ptr = ptr_add %ps, %r2 : tile<*f32, [64, 16]>
  store %ptr, %s
  %q = arange {end = 1024, start = 0} : tile<i32, [1024]>
  %q2 = reshape %q : tile<i32, [32, 32]>
  %pq = splat %o : tile<*f32, [32, 32]>
  %ptq = ptr_add %pq, %q2 : tile<*f32, [32, 32]>
  store %ptq, %c
  return
}
)";
  auto p = plan(tir, MmaTiling::rowStrips(16, 4));
  ASSERT_TRUE(p->module);
  const ir::Op &dot = *p->defs.at("s");
  EXPECT_EQ(p->plan.transposedB(dot), p->byName.at("k"));
  EXPECT_TRUE(p->plan.elided(*p->defs.at("kt")));
  // A transpose something else reads too is lowered as written.
  EXPECT_EQ(p->plan.transposedB(*p->defs.at("s2")), nullptr);
  EXPECT_FALSE(p->plan.elided(*p->defs.at("kt2")));
  // Not inside a loop: A is staged as usual.
  EXPECT_EQ(p->form("a").kind, Kind::None);
}

TEST(FragmentPlan, RowsNeedOneWarpColumn) {
  // With two warps across the columns a row spans warps: the reductions stay blocked,
  // and so do the loop's m and l; the dots' tiles and the accumulator still qualify.
  auto p = plan(kAttentionLoop, MmaTiling{2, 2, 2, 2, 4});
  ASSERT_TRUE(p->module);
  EXPECT_EQ(p->form("s").kind, Kind::Tile);
  EXPECT_EQ(p->form("rm").kind, Kind::None);
  EXPECT_EQ(p->form("m1").kind, Kind::None);
  EXPECT_EQ(p->form("mb").kind, Kind::None);
  EXPECT_EQ(p->form("d").kind, Kind::None);
  EXPECT_TRUE(p->plan.needsBlocked(p->byName.at("s")));
  EXPECT_EQ(p->form("acc1").kind, Kind::Tile);
  EXPECT_FALSE(p->plan.consumes(*p->defs.at("acc2"), 0));
}

TEST(FragmentPlan, NothingWithoutTensorCores) {
  auto p = plan(kAttentionLoop, std::nullopt);
  ASSERT_TRUE(p->module);
  EXPECT_TRUE(p->plan.empty());
}

TEST(FragmentPlan, WholeRowsTilingHasOneWarpColumn) {
  // 128x128 on 8 warps: the cheapest grid in fragment loads has warp columns...
  const MmaTiling cheap = MmaTiling::make(128, 128, 8);
  EXPECT_GT(cheap.wn, 1);
  // ...whole rows give every warp 16 rows across all columns.
  const MmaTiling rows = MmaTiling::make(128, 128, 8, /*wholeRows=*/true);
  EXPECT_EQ(rows, (MmaTiling{8, 1, 1, 16, 8}));
  EXPECT_EQ(MmaTiling::make(64, 32, 4, true), (MmaTiling{4, 1, 1, 4, 4}));
  // Too few rows for every warp: the usual choice.
  EXPECT_EQ(MmaTiling::make(32, 64, 4, true), MmaTiling::make(32, 64, 4));
}

TEST(FragmentPlan, RowRegisterOfTileRegister) {
  const MmaTiling t{1, 1, 2, 4, 1}; // two rows of four tiles
  EXPECT_EQ(t.rowRegsPerThread(), 4);
  EXPECT_EQ(t.rowRegOf(0), 0);  // tile (0, 0), c0: row g
  EXPECT_EQ(t.rowRegOf(2), 1);  // c2: row g + 8
  EXPECT_EQ(t.rowRegOf(13), 0); // tile (0, 3), c1
  EXPECT_EQ(t.rowRegOf(16), 2); // tile (1, 0), c0
  EXPECT_EQ(t.rowRegOf(31), 3); // tile (1, 3), c3
}

} // namespace
} // namespace kiln::codegen
