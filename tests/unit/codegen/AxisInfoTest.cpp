//===- AxisInfoTest.cpp - Contiguity, divisibility, constancy, scratch ----===//
#include "codegen/AxisInfo.h"
#include "codegen/MemoryAccess.h"
#include "codegen/SharedMemory.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln::codegen {
namespace {

struct Parsed {
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
  std::unique_ptr<ir::Module> module;
  const ir::Kernel &kernel() const { return *module->kernels.at(0); }
  /// The value named `%name` (first op result or argument with that hint).
  const ir::Value *value(const std::string &name) const {
    const ir::Value *found = nullptr;
    for (const auto &p : kernel().params())
      if (p->nameHint == name)
        found = p.get();
    ir::walk(*kernel().body, [&](ir::Op &op) {
      for (const auto &r : op.results())
        if (r->nameHint == name)
          found = r.get();
    });
    return found;
  }
};

AxisOptions aligned(int64_t bytes, std::vector<int64_t> paramDivisibility = {}) {
  AxisOptions o;
  o.pointerAlignment = bytes;
  o.paramDivisibility = std::move(paramDivisibility);
  return o;
}

Parsed parse(const std::string &text) {
  Parsed p;
  uint32_t f = p.sources->addBuffer("test.tir", text);
  std::ostringstream os;
  DiagnosticEngine diags(*p.sources, os);
  p.module = ir::parseTir(p.sources, f, diags);
  EXPECT_TRUE(p.module && ir::verifyModule(*p.module, diags)) << os.str();
  return p;
}

const char *kVectorAdd = R"(
kernel @add(%x: *f32, %out: *f32, %n: i32) attributes {num_warps = 4} {
  %pid = program_id {axis = 0} : i32
  %c = constant {value = 1024} : i32
  %base = mul %pid, %c : i32
  %r = arange {end = 1024, start = 0} : tile<i32, [1024]>
  %bs = splat %base : tile<i32, [1024]>
  %offs = add %bs, %r : tile<i32, [1024]>
  %ns = splat %n : tile<i32, [1024]>
  %m = cmp %offs, %ns {pred = "lt"} : tile<bool, [1024]>
  %xs = splat %x : tile<*f32, [1024]>
  %px = ptr_add %xs, %offs : tile<*f32, [1024]>
  %a = load %px, %m : tile<f32, [1024]>
  %os = splat %out : tile<*f32, [1024]>
  %po = ptr_add %os, %offs : tile<*f32, [1024]>
  store %po, %a, %m
  return
}
)";

TEST(AxisInfo, ContiguousAlignedPointersOfAVectorAdd) {
  Parsed p = parse(kVectorAdd);
  AxisAnalysis a(p.kernel(), aligned(16));
  const AxisInfo &offs = a.info(p.value("offs"));
  EXPECT_EQ(offs.contiguity[0], 1024);
  EXPECT_EQ(offs.divisibility[0], 1024);
  const AxisInfo &px = a.info(p.value("px"));
  EXPECT_EQ(px.contiguity[0], 1024);
  EXPECT_EQ(px.divisibility[0], 16); // the parameter's alignment bounds it
  // n is unknown, so the mask may change at any element.
  EXPECT_EQ(a.info(p.value("m")).constancy[0], 1);
  EXPECT_EQ(accessVectorWidth(px, {1024}, 4, 4), 4);
  EXPECT_EQ(accessVectorWidth(px, {1024}, 4, 8), 2); // 16 bytes at most
  EXPECT_EQ(accessVectorWidth(px, {1024}, 2, 4), 2); // never wider than a chunk
  // Without the alignment assumption only scalar accesses are safe.
  AxisAnalysis unaligned(p.kernel(), aligned(1));
  EXPECT_EQ(accessVectorWidth(unaligned.info(p.value("px")), {1024}, 4, 4), 1);
}

TEST(AxisInfo, RowsTimesStrideAndBroadcastColumns) {
  Parsed p = parse(R"(
kernel @k(%x: *f32) attributes {num_warps = 4} {
  %rows = arange {end = 16, start = 0} : tile<i32, [16]>
  %cols = arange {end = 64, start = 0} : tile<i32, [64]>
  %c = constant {value = 64} : i32
  %cs = splat %c : tile<i32, [16]>
  %rs = mul %rows, %cs : tile<i32, [16]>
  %r2 = expand_dims %rs {axis = 1} : tile<i32, [16, 1]>
  %rb = broadcast %r2 : tile<i32, [16, 64]>
  %c2 = expand_dims %cols {axis = 0} : tile<i32, [1, 64]>
  %cb = broadcast %c2 : tile<i32, [16, 64]>
  %off = add %rb, %cb : tile<i32, [16, 64]>
  %m = cmp %cb, %rb {pred = "lt"} : tile<bool, [16, 64]>
  %n16 = constant {value = 48} : i32
  %ns = splat %n16 : tile<i32, [16, 64]>
  %m2 = cmp %cb, %ns {pred = "lt"} : tile<bool, [16, 64]>
  %xs = splat %x : tile<*f32, [16, 64]>
  %p = ptr_add %xs, %off : tile<*f32, [16, 64]>
  %v = load %p : tile<f32, [16, 64]>
  store %p, %v
  return
}
)");
  AxisAnalysis a(p.kernel(), aligned(16));
  const AxisInfo &rb = a.info(p.value("rb"));
  EXPECT_EQ(rb.constancy[1], 64);
  EXPECT_EQ(rb.divisibility[1], 64);
  const AxisInfo &off = a.info(p.value("off"));
  EXPECT_EQ(off.contiguity[1], 64);
  EXPECT_EQ(off.divisibility[1], 64);
  EXPECT_EQ(off.contiguity[0], 1);
  EXPECT_EQ(a.info(p.value("p")).divisibility[1], 16);
  // cols < 48 is constant over blocks of 16 (48's largest power-of-two divisor).
  EXPECT_EQ(a.info(p.value("m2")).constancy[1], 16);
}

// A runtime row stride known to be a multiple of 16 makes the rows of a 2-D access
// aligned; without the hint only scalar accesses are provably safe.
TEST(AxisInfo, ParameterDivisibilityHints) {
  Parsed p = parse(R"(
kernel @k(%x: *f32, %stride: i32) attributes {num_warps = 4} {
  %rows = arange {end = 8, start = 0} : tile<i32, [8]>
  %cols = arange {end = 64, start = 0} : tile<i32, [64]>
  %ss = splat %stride : tile<i32, [8]>
  %rs = mul %rows, %ss : tile<i32, [8]>
  %r2 = expand_dims %rs {axis = 1} : tile<i32, [8, 1]>
  %rb = broadcast %r2 : tile<i32, [8, 64]>
  %c2 = expand_dims %cols {axis = 0} : tile<i32, [1, 64]>
  %cb = broadcast %c2 : tile<i32, [8, 64]>
  %off = add %rb, %cb : tile<i32, [8, 64]>
  %xs = splat %x : tile<*f32, [8, 64]>
  %p = ptr_add %xs, %off : tile<*f32, [8, 64]>
  %v = load %p : tile<f32, [8, 64]>
  store %p, %v
  return
}
)");
  AxisAnalysis none(p.kernel(), aligned(16));
  EXPECT_EQ(none.info(p.value("p")).divisibility[1], 4);
  EXPECT_EQ(accessVectorWidth(none.info(p.value("p")), {8, 64}, 4, 4), 1);
  AxisAnalysis hinted(p.kernel(), aligned(16, {0, 16}));
  EXPECT_EQ(hinted.info(p.value("p")).divisibility[1], 16);
  EXPECT_EQ(accessVectorWidth(hinted.info(p.value("p")), {8, 64}, 4, 4), 4);
}

TEST(Provenance, PointersKeepTheirParameterAndLoopsMerge) {
  Parsed p = parse(R"(
kernel @k(%x: *f32, %y: *f32, %n: i32) attributes {num_warps = 1} {
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %r = for %c0, %n, %c1, %x : *f32 {
  ^(%i: i32, %q: *f32):
    %q2 = ptr_add %q, %c1 : *f32
    %v = load %q2 : f32
    store %y, %v
    yield %q2
  }
  return
}
)");
  PointerProvenance prov(p.kernel());
  EXPECT_EQ(prov.bases(p.kernel().params()[0].get()), 1u);
  EXPECT_EQ(prov.bases(p.kernel().params()[1].get()), 2u);
  EXPECT_EQ(prov.bases(p.value("q2")), 1u);
  EXPECT_EQ(prov.bases(p.value("r")), 1u);
  std::vector<MemAccess> acc;
  collectAccesses(*p.kernel().body, prov, acc);
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_FALSE(accessesConflict(acc[0], acc[1])); // load x, store y: different buffers
  EXPECT_TRUE(accessesConflict(acc[1], acc[1]));  // scalar stores: thread 0 vs all
}

/// A kernel whose loop carries a [64, 64] f32 accumulator through `body` (Tile IR lines
/// that load through %pa and %pb and end in `yield`).
static Parsed streamingLoop(const std::string &body) {
  return parse(R"(
kernel @k(%a: *bf16, %b: *bf16, %n: i32) attributes {num_stages = 3, num_warps = 4} {
  %zero = constant {value = 0.0} : tile<f32, [64, 64]>
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %acc = for %c0, %n, %c1, %zero : tile<f32, [64, 64]> {
  ^(%i: i32, %acc_1: tile<f32, [64, 64]>):
    %pa = splat %a : tile<*bf16, [64, 64]>
    %pb = splat %b : tile<*bf16, [64, 64]>
)" + body + R"(
  }
  return
}
)");
}

/// The kernel's top-level loop.
static const ir::Op *loopOf(Parsed &p) {
  for (const auto &op : p.kernel().body->ops())
    if (op->kind() == ir::OpKind::For)
      return op.get();
  return nullptr;
}

TEST(SharedMemory, ArenaHoldsTheRingOfALoopThatMayStream) {
  // The loop's dot reads both operands from loads of its body: 8 KiB each on wgmma.
  Parsed p = streamingLoop(R"(
    %x = load %pa : tile<bf16, [64, 64]>
    %y = load %pb : tile<bf16, [64, 64]>
    %acc_2 = dot %x, %y, %acc_1 : tile<f32, [64, 64]>
    yield %acc_2)");
  auto wgmma = [](const ir::Op &, const void *) { return DotPath::Wgmma; };
  auto fma = [](const ir::Op &, const void *) { return DotPath::Fma; };
  const ir::Op *found = loopOf(p);
  ASSERT_NE(found, nullptr);
  const ir::Op &loop = *found;
  // Three stages of 16 KiB, more than the dot's own scratch (8 + 8 + 16 KiB).
  EXPECT_EQ(pipelineRingBytes(loop, 3, wgmma, nullptr), 3 * 16384);
  EXPECT_EQ(planArena(p.kernel(), 128, true, wgmma, nullptr), 3 * 16384);
  // One stage streams nothing; the FMA path never streams; SPIR-V plans no ring.
  EXPECT_EQ(pipelineRingBytes(loop, 1, wgmma, nullptr), 0);
  EXPECT_EQ(pipelineRingBytes(loop, 3, fma, nullptr), 0);
  EXPECT_EQ(planArena(p.kernel(), 128, true, nullptr, nullptr), 2 * 64 * 64 * 4);
  // Stages past the budget are dropped: 7 asked, 7 x 16 KiB fit 112 KiB.
  EXPECT_EQ(pipelineRingBytes(loop, 8, wgmma, nullptr), 7 * 16384);
  // An operand staged once before the loop (8 KiB here) follows the ring, which keeps
  // fewer stages within the budget: 6 x 16 KiB + 8 KiB.
  auto resident = [](const ir::Op &, const void *) -> int64_t { return 8192; };
  EXPECT_EQ(pipelineRingBytes(loop, 3, wgmma, nullptr, resident), 3 * 16384 + 8192);
  EXPECT_EQ(pipelineRingBytes(loop, 8, wgmma, nullptr, resident), 6 * 16384 + 8192);
  EXPECT_EQ(planArena(p.kernel(), 128, true, wgmma, nullptr, nullptr, resident), 3 * 16384 + 8192);
}

TEST(SharedMemory, APublishedRingKeepsItsMbarriersAfterTheBuffers) {
  // Two products reading four 8 KiB operands from loads of the body: 32 KiB a buffer,
  // so three buffers or more may be published by mbarriers (publishesRing), 8 bytes each.
  Parsed p = streamingLoop(R"(
    %x = load %pa : tile<bf16, [64, 64]>
    %y = load %pb : tile<bf16, [64, 64]>
    %acc_2 = dot %x, %y, %acc_1 : tile<f32, [64, 64]>
    %u = load %pa : tile<bf16, [64, 64]>
    %w = load %pb : tile<bf16, [64, 64]>
    %acc_3 = dot %u, %w, %acc_2 : tile<f32, [64, 64]>
    yield %acc_3)");
  auto wgmma = [](const ir::Op &, const void *) { return DotPath::Wgmma; };
  auto mma = [](const ir::Op &, const void *) { return DotPath::MmaSync; };
  const ir::Op *loop = loopOf(p);
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(publishesRing(2, 3, 32768));
  EXPECT_EQ(pipelineRingBytes(*loop, 3, wgmma, nullptr), 3 * 32768 + ringBarrierBytes(3));
  // Two buffers, mma.sync, one product or 16 KiB buffers: the barrier ring, no mbarriers.
  EXPECT_EQ(pipelineRingBytes(*loop, 2, wgmma, nullptr), 2 * 32768);
  // (mma.sync pads each operand's rows by 16 bytes: 4 x 64 x 72 x 2 bytes a buffer.)
  EXPECT_EQ(pipelineRingBytes(*loop, 3, mma, nullptr), 3 * 4 * 64 * 72 * 2);
  EXPECT_FALSE(publishesRing(1, 3, 32768));
  EXPECT_FALSE(publishesRing(2, 3, 16384));
}

TEST(SharedMemory, ArenaIsTheLargestScratch) {
  Parsed p = parse(R"(
kernel @k(%x: *f32) attributes {num_warps = 4} {
  %v = constant {value = 1.0} : tile<f32, [64, 32]>
  %s = reduce %v {axis = 1, kind = "sum"} : tile<f32, [64]>
  %c = reduce %v {axis = 0, kind = "sum"} : tile<f32, [32]>
  %u = reduce %v {axis = 1, kind = "custom"} : tile<f32, [64]> {
  ^(%a: f32, %b: f32):
    %m = add %a, %b : f32
    yield %m
  }
  %t = permute %v {perm = [1, 0]} : tile<f32, [32, 64]>
  return
}
)");
  std::vector<const ir::Op *> ops;
  for (const auto &op : p.kernel().body->ops())
    ops.push_back(op.get());
  // Along the last axis, lines sit in aligned groups of 8 threads: combined in registers,
  // only per-thread partials (512 bytes) and the 64 results (256 bytes).
  EXPECT_TRUE(reducesInRegisters(*ops[1], 128));
  EXPECT_EQ(scratchAreas(*ops[1], 128, false), (std::vector<int64_t>{0, 512, 256}));
  // Along axis 0, or with a custom combiner, the tile is staged (8192 bytes).
  EXPECT_FALSE(reducesInRegisters(*ops[2], 128));
  EXPECT_EQ(scratchAreas(*ops[2], 128, false), (std::vector<int64_t>{8192, 512, 128}));
  EXPECT_FALSE(reducesInRegisters(*ops[3], 128));
  // The arena is the largest scratch: the custom reduction (tile, partials, 64 results).
  EXPECT_EQ(planArena(p.kernel(), 128, false, nullptr, nullptr), 8192 + 512 + 256);
  // With warp shuffles a warp publishes one partial, into one of two slots: 2 x 16
  // bytes for the 4 warps instead of one slot per thread.
  EXPECT_EQ(scratchAreas(*ops[1], 128, true), (std::vector<int64_t>{0, 32, 256}));
  EXPECT_EQ(scratchAreas(*ops[2], 128, true), (std::vector<int64_t>{8192, 32, 128}));
  EXPECT_EQ(planArena(p.kernel(), 128, true, nullptr, nullptr), 8192 + 32 + 256);
  EXPECT_EQ(partialAreaBytes(4, 256, true), 64);
  EXPECT_EQ(partialAreaBytes(8, 32, true), 32);
  EXPECT_EQ(partialAreaBytes(4, 256, false), 1024);
}

} // namespace
} // namespace kiln::codegen
