//===- GridFunctionTest.cpp - Launch grids computed from the config that runs ===//
//
// The configs of an @autotune kernel cover different amounts of the problem per
// program, so a launch takes a grid function that sizes the grid from the config's
// consts. These tests check which configs it is asked about, that the fake driver saw
// each config run with its own grid, and that a grid function which fails stops the
// launch cleanly: the caller's data as it was, no tuning choice kept, the JIT usable.
//
//===----------------------------------------------------------------------===//
#include "JitFixture.h"

#include <stdexcept>

namespace kiln::jit::test {
namespace {

// BLOCK decides the grid; TAG, a number only that config's PTX holds, lets the fake
// driver give each config its own launch time.
const char *kBlocks = R"(@autotune(configs = [{BLOCK: 64, TAG: 7001, num_warps: 1},
                      {BLOCK: 128, TAG: 7002, num_warps: 2},
                      {BLOCK: 256, TAG: 7003, num_warps: 4}], key = [n])
kernel blocks(x: *i32, n: i32, const BLOCK: i32 = 16, const TAG: i32 = 0) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, offs * 0 + TAG, mask = offs < n);
}
)";

const char *kConfig0 = "{BLOCK: 64, TAG: 7001, num_warps: 1}";
const char *kConfig1 = "{BLOCK: 128, TAG: 7002, num_warps: 2}";

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Call {
  int64_t block, tag;
  uint32_t threads;
  bool operator==(const Call &) const = default;
};

std::ostream &operator<<(std::ostream &os, const Call &c) {
  return os << "{BLOCK " << c.block << ", TAG " << c.tag << ", " << c.threads << " threads}";
}

class GridFunction : public ThreeTimedConfigs {
protected:
  /// A grid function of `n` that notes every config it is asked about in `calls`.
  auto cdivGrid(int64_t n) {
    return [this, n](const KernelInfo &config) {
      calls.push_back(Call{config.const_int("BLOCK"), config.const_int("TAG"), config.block_size()});
      return Grid(cdiv(n, config.const_int("BLOCK")));
    };
  }

  /// The grid x and block x of the fake driver's launches [from, to).
  std::vector<std::pair<unsigned, unsigned>> shapes(int from, int to) {
    std::vector<std::pair<unsigned, unsigned>> out;
    for (int i = from; i < to; ++i) {
      unsigned grid[3] = {}, block[3] = {};
      EXPECT_TRUE(fake.launchShape(i, grid, block)) << "launch " << i;
      EXPECT_EQ(grid[1] * grid[2], 1u);
      out.emplace_back(grid[0], block[0]);
    }
    return out;
  }

  std::vector<Call> calls;
};

using Shapes = std::vector<std::pair<unsigned, unsigned>>;

TEST_F(GridFunction, EachConfigTimedRunsWithItsOwnGridAndTheChosenOneLaunches) {
  Buffer x = runtime->alloc<int32_t>(1000);
  Jit::Options options;
  options.autotune_warmup = 1;
  options.autotune_runs = 2;
  auto jit = makeJit(options);
  JitKernel k = jit->compile_string(kBlocks, "blocks", {}, "blocks.kiln");
  k.launch(cdivGrid(1000), x, 1000);

  EXPECT_EQ(calls, (std::vector<Call>{{64, 7001, 32}, {128, 7002, 64}, {256, 7003, 128}, {128, 7002, 64}}))
      << "once per config timed, then once for the chosen config's launch";
  // Config i: 1 warm-up and 2 timed launches of cdiv(1000, BLOCK) programs; then the
  // real launch with the fastest config's grid.
  EXPECT_EQ(shapes(0, fake.launchCount()), (Shapes{{16, 32}, {16, 32}, {16, 32},
                                                   {8, 64}, {8, 64}, {8, 64},
                                                   {4, 128}, {4, 128}, {4, 128},
                                                   {8, 64}}));
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], std::string("autotuned for n=1000: ") + kConfig1)) << notes[0];

  // The choice is kept: the grid function is asked about the chosen config only.
  calls.clear();
  k.launch(cdivGrid(1000), x, 1000);
  EXPECT_EQ(calls, (std::vector<Call>{{128, 7002, 64}}));
  EXPECT_EQ(shapes(10, fake.launchCount()), (Shapes{{8, 64}}));

  // Another size is another key value: timed again with that size's grids.
  calls.clear();
  k.launch(cdivGrid(5000), x, 5000);
  EXPECT_EQ(calls.size(), 4u);
  EXPECT_EQ(shapes(11, fake.launchCount()), (Shapes{{79, 32}, {79, 32}, {79, 32},
                                                    {40, 64}, {40, 64}, {40, 64},
                                                    {20, 128}, {20, 128}, {20, 128},
                                                    {40, 64}}));
}

TEST_F(GridFunction, ALaterProcessAsksOnlyAboutTheRecordedChoice) {
  Buffer x = runtime->alloc<int32_t>(1000);
  makeJit()->compile_string(kBlocks, "blocks").launch(cdivGrid(1000), x, 1000);
  int afterTuning = fake.launchCount();

  calls.clear();
  JitKernel k = makeJit()->compile_string(kBlocks, "blocks");
  JitKernel::Selection s = k.select(cdivGrid(1000), x, 1000);
  EXPECT_EQ(s.config, 1u);
  EXPECT_EQ(s.grid.x, 8u);
  EXPECT_EQ(s.info().const_int("BLOCK"), 128);
  EXPECT_EQ(calls, (std::vector<Call>{{128, 7002, 64}}));
  EXPECT_EQ(fake.launchCount(), afterTuning) << "select launches nothing, and the choice came from disk";
  k.launch(cdivGrid(1000), x, 1000);
  EXPECT_EQ(shapes(afterTuning, fake.launchCount()), (Shapes{{8, 64}}));
}

TEST_F(GridFunction, WhatTheGridFunctionThrowsIsRethrownAndNothingIsKept) {
  Buffer x = runtime->alloc<int32_t>(1000);
  x.fill(0);
  fake.markMemory(1); // every launch adds 1 where x points
  auto jit = makeJit();
  JitKernel k = jit->compile_string(kBlocks, "blocks");
  auto throwsOnBlock128 = [&](const KernelInfo &config) {
    if (config.const_int("BLOCK") == 128)
      throw std::invalid_argument("no grid for BLOCK 128");
    return Grid(cdiv(1000, config.const_int("BLOCK")));
  };
  try {
    k.launch(throwsOnBlock128, x, 1000);
    FAIL() << "the grid function's exception was swallowed";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "no grid for BLOCK 128") << "the caller's own exception, unchanged";
  }
  EXPECT_EQ(std::string(kiln_last_error()), std::string("kernel 'blocks': the grid function failed for config ") +
                                                kConfig1 + ": no grid for BLOCK 128");
  EXPECT_EQ(fake.launchCount(), 7) << "config 0 was timed before config 1's grid was asked for";
  EXPECT_EQ(x.download<uint32_t>()[0], 0u) << "config 0's timing runs were undone";
  EXPECT_TRUE(filesEndingIn(cache.path(), ".tune").empty()) << "no choice is recorded";

  // The kernel object is as it was: a working grid function tunes from the start.
  k.launch(cdivGrid(1000), x, 1000);
  EXPECT_EQ(calls.size(), 4u);
  EXPECT_EQ(fake.launchCount(), 7 + 3 * 7 + 1);
  EXPECT_EQ(x.download<uint32_t>()[0], 1u) << "only the real launch counts";
  EXPECT_EQ(filesEndingIn(cache.path(), ".tune").size(), 1u);

  // A kiln::RuntimeError from inside (a misspelt const) comes back as it was thrown.
  try {
    k.launch([](const KernelInfo &config) { return Grid(cdiv(1000, config.const_int("BLOK"))); }, x, 1000);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
    EXPECT_STREQ(e.what(), "kernel 'blocks' has no const 'BLOK' (its consts: BLOCK, TAG)");
  }
  // So does a grid that is no grid.
  try {
    k.launch([](const KernelInfo &) { return Grid(-1); }, x, 1000);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "grid size -1 is outside 0..4294967295");
  }
}

TEST_F(GridFunction, AGridTheDeviceCannotRunSkipsThatConfig) {
  Buffer x = runtime->alloc<int32_t>(1000);
  auto jit = makeJit();
  JitKernel k = jit->compile_string(kBlocks, "blocks");
  // The fake device allows 65535 programs along y; config 0 asks for more.
  k.launch([](const KernelInfo &config) {
    int64_t block = config.const_int("BLOCK");
    return Grid(cdiv(1000, block), block == 64 ? 70000 : 1);
  }, x, 1000);
  EXPECT_EQ(k.select({8}, x, 1000).config, 1u);
  auto records = filesEndingIn(cache.path(), ".tune");
  ASSERT_EQ(records.size(), 1u);
  std::string record = readFile(records[0]);
  EXPECT_TRUE(contains(record, std::string("skipped 0 ") + kConfig0 +
                                   ": kernel 'blocks': grid (16, 70000, 1) exceeds the device's limit"))
      << record;
}

TEST_F(GridFunction, AnEmptyGridTimesNothingAndKeepsNothing) {
  Buffer x = runtime->alloc<int32_t>(16);
  auto jit = makeJit();
  JitKernel k = jit->compile_string(kBlocks, "blocks");
  k.launch(cdivGrid(0), x, 0);
  EXPECT_EQ(fake.launchCount(), 0);
  EXPECT_EQ(calls.size(), 4u) << "every config was asked, then the first for the launch";
  EXPECT_EQ(calls.back(), (Call{64, 7001, 32}));
  EXPECT_TRUE(filesEndingIn(cache.path(), ".tune").empty());
}

// ---- the C ABI ----------------------------------------------------------------------

struct CGrid {
  int64_t n;
  const char *constName;
  int calls = 0;
};

extern "C" kiln_status cdivOfConst(void *user, const kiln_kernel *config, kiln_grid *grid) {
  auto *g = static_cast<CGrid *>(user);
  ++g->calls;
  int64_t block = 0;
  if (kiln_status s = kiln_kernel_const_int(config, g->constName, &block); s != KILN_SUCCESS)
    return s; // its message is kept in the launch's
  *grid = kiln_grid{static_cast<uint32_t>(cdiv(g->n, block)), 1, 1};
  return KILN_SUCCESS;
}

extern "C" kiln_status failsSilently(void *user, const kiln_kernel *, kiln_grid *) {
  return static_cast<kiln_status>(reinterpret_cast<intptr_t>(user));
}

TEST_F(GridFunction, TheCAbi) {
  Buffer x = runtime->alloc<int32_t>(1000);
  auto jit = makeJit();
  JitKernel k = jit->compile_string(kBlocks, "blocks");
  kiln_arg args[2] = {detail::toArg(x), detail::toArg(1000)};

  CGrid grid{1000, "BLOCK"};
  kiln_kernel *selected = nullptr;
  size_t config = 9;
  kiln_grid g{0, 0, 0};
  ASSERT_EQ(kiln_jit_kernel_select_with_grid_fn(k.handle(), cdivOfConst, &grid, args, 2, &selected, &config, &g),
            KILN_SUCCESS)
      << kiln_last_error();
  EXPECT_EQ(grid.calls, 4);
  EXPECT_EQ(config, 1u);
  EXPECT_EQ(g.x, 8u);
  int64_t block = 0;
  ASSERT_EQ(kiln_kernel_const_int(selected, "BLOCK", &block), KILN_SUCCESS);
  EXPECT_EQ(block, 128);
  int before = fake.launchCount();
  ASSERT_EQ(kiln_jit_launch_with_grid_fn(k.handle(), cdivOfConst, &grid, args, 2), KILN_SUCCESS);
  EXPECT_EQ(grid.calls, 5);
  EXPECT_EQ(shapes(before, fake.launchCount()), (Shapes{{8, 64}}));

  // The grid function's failure, with its message, inside the launch's.
  CGrid misspelt{1000, "BLOK"};
  kiln_status s = kiln_jit_launch_with_grid_fn(k.handle(), cdivOfConst, &misspelt, args, 2);
  EXPECT_EQ(s, KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(std::string(kiln_last_error()),
            std::string("kernel 'blocks': the grid function failed for config ") + kConfig1 +
                ": kernel 'blocks' has no const 'BLOK' (its consts: BLOCK, TAG)");
  // Without a message of its own, the status is named; a status that is none is made one.
  kiln_set_last_error(KILN_ERROR_IO, "an older error that must not be reported");
  s = kiln_jit_launch_with_grid_fn(k.handle(), failsSilently, reinterpret_cast<void *>(intptr_t(KILN_ERROR_LAUNCH)),
                                   args, 2);
  EXPECT_EQ(s, KILN_ERROR_LAUNCH);
  EXPECT_TRUE(contains(kiln_last_error(), "the grid function failed for config " + std::string(kConfig1) +
                                              ": it returned KILN_ERROR_LAUNCH without a message"))
      << kiln_last_error();
  s = kiln_jit_launch_with_grid_fn(k.handle(), failsSilently, reinterpret_cast<void *>(intptr_t(12345)), args, 2);
  EXPECT_EQ(s, KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "it returned KILN_STATUS_UNKNOWN without a message")) << kiln_last_error();

  EXPECT_EQ(kiln_jit_launch_with_grid_fn(k.handle(), nullptr, nullptr, args, 2), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(), "kiln_jit_launch_with_grid_fn: null kernel, grid function or argument array");
  EXPECT_EQ(kiln_jit_kernel_select_with_grid_fn(k.handle(), nullptr, nullptr, args, 2, nullptr, nullptr, nullptr),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.launchCount(), before + 1) << "no failing call launched anything";
}

TEST_F(GridFunction, AKernelWithoutAutotuneAsksOnceAndNamesNoConfig) {
  const char *plain = R"(kernel plain(x: *i32, n: i32, const BLOCK: i32 = 32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, offs, mask = offs < n);
}
)";
  Buffer x = runtime->alloc<int32_t>(100);
  auto jit = makeJit();
  JitKernel k = jit->compile_string(plain, "plain");
  int calls = 0;
  k.launch([&](const KernelInfo &config) {
    ++calls;
    return Grid(cdiv(100, config.const_int("BLOCK")));
  }, x, 100);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(shapes(0, fake.launchCount()), (Shapes{{4, 128}}));

  kiln_arg args[2] = {detail::toArg(x), detail::toArg(100)};
  CGrid misspelt{100, "BLK"};
  EXPECT_EQ(kiln_jit_launch_with_grid_fn(k.handle(), cdivOfConst, &misspelt, args, 2), KILN_ERROR_INVALID_VALUE);
  EXPECT_STREQ(kiln_last_error(),
               "kernel 'plain': the grid function failed: kernel 'plain' has no const 'BLK' (its consts: BLOCK)");
}

} // namespace
} // namespace kiln::jit::test
