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

} // namespace
} // namespace kiln::jit::test
