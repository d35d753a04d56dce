//===- AutotuneTest.cpp - @autotune: time, choose, keep, reuse ------------===//
//
// The fake driver is told how long each config's code takes (matched on a number only
// that config's PTX holds), so the test knows which config must win. It also counts
// launches in the memory each pointer argument points at, which shows whether the
// timing runs left the caller's data as it was.
//
//===----------------------------------------------------------------------===//
#include "JitFixture.h"

namespace kiln::jit::test {
namespace {

// Each config stores its TAG, so its PTX holds the number; num_warps differ too.
const char *kTagged = R"(@autotune(configs = [{TAG: 7001, num_warps: 1}, {TAG: 7002, num_warps: 2},
                      {TAG: 7003, num_warps: 4}], key = [n])
kernel tagged(x: *i32, n: i32, const TAG: i32 = 0) {
    let offs = program_id(0) * 64 + arange(0, 64);
    store(x + offs, offs * 0 + TAG, mask = offs < n);
}
)";

class Autotune : public ThreeTimedConfigs {};

TEST_F(Autotune, FirstLaunchTimesEveryConfigAndKeepsTheFastest) {
  Buffer x = runtime->alloc<int32_t>(1024);
  x.fill(0);
  fake.markMemory(1);
  Jit::Options options;
  options.autotune_warmup = 1;
  options.autotune_runs = 3;
  auto jit = makeJit(options);
  JitKernel k = jit->compile_string(kTagged, "tagged", {}, "tagged.kiln");
  EXPECT_EQ(k.configs(), (std::vector<std::string>{"{TAG: 7001, num_warps: 1}", "{TAG: 7002, num_warps: 2}",
                                                   "{TAG: 7003, num_warps: 4}"}));
  k.launch({16, 1, 1}, x, 1024);
  EXPECT_EQ(fake.launchCount(), 3 * (1 + 3) + 1) << "each config: 1 warm-up and 3 timed launches; then the real one";
  unsigned grid[3], block[3], shared = 0;
  char function[64];
  ASSERT_TRUE(fake.lastLaunch(grid, block, &shared, function, sizeof function));
  EXPECT_EQ(block[0], 64u) << "the real launch runs the fastest config, num_warps 2";
  EXPECT_EQ(x.download<uint32_t>()[0], 1u) << "the timing runs' writes were undone; only the real launch counts";

  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "kernel 'tagged' autotuned for n=1024: {TAG: 7002, num_warps: 2} (0.1250 ms"))
      << notes[0];
  auto records = filesEndingIn(cache.path(), ".tune");
  ASSERT_EQ(records.size(), 1u);
  std::string record = readFile(records[0]);
  EXPECT_TRUE(contains(record, "best 1 {TAG: 7002, num_warps: 2}\n")) << record;
  EXPECT_TRUE(contains(record, "time 0 0.500000 ms {TAG: 7001, num_warps: 1}\n")) << record;
  EXPECT_EQ(bundles().size(), 3u) << "every config's code is cached too";

  // The same key again: no timing.
  k.launch({16, 1, 1}, x, 1024);
  EXPECT_EQ(fake.launchCount(), 14);
  EXPECT_EQ(x.download<uint32_t>()[0], 2u);
}

TEST_F(Autotune, TheChoiceOnDiskIsReusedWithoutTiming) {
  Buffer x = runtime->alloc<int32_t>(1024);
  makeJit()->compile_string(kTagged, "tagged").launch({16, 1, 1}, x, 1024);
  int afterTuning = fake.launchCount();
  EXPECT_EQ(afterTuning, 3 * (2 + 5) + 1) << "default: 2 warm-up and 5 timed launches per config";

  // A new JIT, as a later process: the record and the code come from disk.
  auto jit = makeJit();
  JitKernel k = jit->compile_string(kTagged, "tagged");
  JitKernel::Selection s = k.select({16, 1, 1}, x, 1024);
  EXPECT_EQ(s.config, 1u);
  EXPECT_EQ(s.block_size(), 64u);
  k.launch({16, 1, 1}, x, 1024);
  EXPECT_EQ(fake.launchCount(), afterTuning + 1);
  EXPECT_EQ(logged(KILN_JIT_NOTE).size(), 1u) << "only the first tuning is noted";

  // Another key value is tuned on its own.
  int before = fake.launchCount();
  EXPECT_EQ(k.select({8, 1, 1}, x, 512).config, 1u);
  EXPECT_EQ(fake.launchCount(), before + 3 * 7) << "timed, not launched";
  EXPECT_EQ(k.select({16, 1, 1}, x, 1024).config, 1u);
  EXPECT_EQ(fake.launchCount(), before + 3 * 7) << "a kept choice is not timed again";
  EXPECT_EQ(filesEndingIn(cache.path(), ".tune").size(), 2u);
}

TEST_F(Autotune, DamagedRecordIsNotedAndTunedAgain) {
  Buffer x = runtime->alloc<int32_t>(1024);
  makeJit()->compile_string(kTagged, "tagged").launch({16, 1, 1}, x, 1024);
  auto records = filesEndingIn(cache.path(), ".tune");
  ASSERT_EQ(records.size(), 1u);
  std::string record = readFile(records[0]);
  // Points at a config whose text no longer matches: a record of some other build.
  writeFile(records[0], "kiln-autotune 1\nbest 2 {TAG: 1, num_warps: 4}\n");
  messages.clear();
  int before = fake.launchCount();
  makeJit()->compile_string(kTagged, "tagged").launch({16, 1, 1}, x, 1024);
  EXPECT_EQ(fake.launchCount(), before + 3 * 7 + 1);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_TRUE(contains(notes[0], "is damaged")) << notes[0];
  EXPECT_EQ(readFile(records[0]), record) << "rewritten by the new tuning";
}

TEST_F(Autotune, ConfigsThatDoNotCompileAreSkipped) {
  const char *source = R"(@autotune(configs = [{BLOCK: 1.5}, {BLOCK: 64}], key = [n])
kernel k(x: *i32, n: i32, const BLOCK: i32 = 16) {
    let offs = arange(0, BLOCK);
    store(x + offs, offs, mask = offs < n);
}
)";
  Buffer x = runtime->alloc<int32_t>(64);
  auto jit = makeJit();
  JitKernel k = jit->compile_string(source, "k", {}, "odd.kiln");
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "@autotune config {BLOCK: 1.5} does not compile and is skipped: odd.kiln:2:"))
      << notes[0];
  EXPECT_EQ(k.select({1, 1, 1}, x, 64).config, 1u);
}

TEST_F(Autotune, TunedConstsCannotAlsoBeSet) {
  auto jit = makeJit();
  try {
    jit->compile_string(kTagged, "tagged", {{"TAG", 1}});
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
    EXPECT_EQ(std::string(e.what()),
              "kernel 'tagged': const TAG is tuned by its @autotune configs and cannot also be set");
  }
}

// A kernel over a block mask: which config is fastest depends on the mask's sparsity,
// so the tuning is keyed by the mask's content as well as by n.
const char *kMasked = R"(@autotune(configs = [{TAG: 7001, num_warps: 1}, {TAG: 7002, num_warps: 2},
                      {TAG: 7003, num_warps: 4}], key = [n])
kernel masked(x: *i32, mask: block_mask<4, 8>, n: i32, const TAG: i32 = 0) {
    let rb = program_id(0);
    for kb in blocks(mask, rb) {
        store(x + rb * n + kb, TAG);
    }
}
)";

TEST_F(Autotune, AMaskPassedWholeKeysTheTuningByItsContent) {
  Buffer x = runtime->alloc<int32_t>(256);
  std::vector<uint8_t> lower(16 * 32), band(16 * 32);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c) {
      lower[r * 32 + c] = c <= r;
      band[r * 32 + c] = std::abs(r - c) <= 2;
    }
  BlockMask causal = runtime->block_mask_from_dense(std::span<const uint8_t>(lower), 16, 32, 4, 8);
  BlockMask banded = runtime->block_mask_from_dense(std::span<const uint8_t>(band), 16, 32, 4, 8);
  BlockMask causalAgain = runtime->block_mask_from_dense(std::span<const uint8_t>(lower), 16, 32, 4, 8);
  const std::string digest = kiln_block_mask_digest(causal.handle());
  ASSERT_EQ(digest.size(), 16u);
  EXPECT_EQ(digest, kiln_block_mask_digest(causalAgain.handle())) << "the same pattern, the same digest";
  EXPECT_NE(digest, kiln_block_mask_digest(banded.handle()));
  EXPECT_STREQ(kiln_block_mask_digest(nullptr), "");

  Jit::Options options;
  options.autotune_warmup = 1;
  options.autotune_runs = 1;
  auto jit = makeJit(options);
  JitKernel k = jit->compile_string(kMasked, "masked", {}, "masked.kiln");
  const int tuning = 3 * (1 + 1);
  k.launch({4, 1, 1}, x, causal, 8);
  EXPECT_EQ(fake.launchCount(), tuning + 1);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "autotuned for n=8, mask=" + digest + ": {TAG: 7002, num_warps: 2}")) << notes[0];
  EXPECT_TRUE(contains(notes[0], "tuning took ")) << notes[0];
  k.launch({4, 1, 1}, x, causalAgain, 8);
  EXPECT_EQ(fake.launchCount(), tuning + 2) << "the same content: the choice is reused";
  k.launch({4, 1, 1}, x, banded, 8);
  EXPECT_EQ(fake.launchCount(), 2 * tuning + 3) << "another mask: timed again";
  EXPECT_EQ(filesEndingIn(cache.path(), ".tune").size(), 2u);

  // A new process finds both choices on disk.
  auto fresh = makeJit(options);
  JitKernel again = fresh->compile_string(kMasked, "masked", {}, "masked.kiln");
  again.launch({4, 1, 1}, x, causal, 8);
  again.launch({4, 1, 1}, x, banded, 8);
  EXPECT_EQ(fake.launchCount(), 2 * tuning + 5);
}

} // namespace
} // namespace kiln::jit::test
