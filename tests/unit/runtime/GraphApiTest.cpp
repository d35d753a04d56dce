//===- GraphApiTest.cpp - kiln_graph_* over the fake CUDA driver -------------===//
//
// A hand-made graph bundle of two vadd launches, the second under an `if` and viewing
// `out` n elements in, run through the C++ API (kiln::Graph, over kiln_graph_launch):
// what each mode hands the driver (the launches, their grids and arguments, the
// persistent kernel's launch table), the checks of the arguments, and the errors of
// misuse. The graphs dslc builds run through the same calls in tests/cli and on the GPU.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/GraphBundle.h"
#include "runtime/Runtime.h"
#include "support/CheckRecord.h"
#include "support/TaskTable.h"

#include <cstring>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// The persistent kernel's ABI (support/TaskTable.h) as PTX parameters.
const char *kPersistentPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry g_persistent(
	.param .u64 g_persistent_param_0,
	.param .u32 g_persistent_param_1,
	.param .u32 g_persistent_param_2,
	.param .u64 g_persistent_param_3,
	.param .u32 g_persistent_param_4,
	.param .u64 g_persistent_param_5,
	.param .u64 g_persistent_param_6,
	.param .u32 g_persistent_param_7,
	.param .u64 g_persistent_param_8
)
{
	ret;
}
)";

GraphValue value(GraphOp op, kiln::DType dtype, std::vector<uint32_t> operands = {}, int64_t imm = 0,
                 bool pointer = false) {
  GraphValue v;
  v.op = op;
  v.dtype = dtype;
  v.pointer = pointer;
  v.operands = std::move(operands);
  v.imm = imm;
  return v;
}

/// graph g(x: *f32, y: *f32, out: *f32, n: i32, twice: i32) {
///     launch vadd[((n + 63) / 64,)](x, y, out, n);
///     if twice > 0 { launch vadd[((n + 63) / 64,)](out, y, out + n, n); }
/// }
GraphBundle twoLaunches() {
  using kiln::DType;
  GraphBundle g;
  g.name = "g";
  g.params = {{"x", DType::F32, true}, {"y", DType::F32, true}, {"out", DType::F32, true},
              {"n", DType::I32, false},  {"twice", DType::I32, false}};
  for (int i = 0; i < 5; ++i)
    g.values.push_back(value(GraphOp::Param, g.params[i].dtype, {}, i, g.params[i].pointer)); // 0..4
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 63));                              // 5
  g.values.push_back(value(GraphOp::Add, DType::I32, {3, 5}));                                // 6
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 64));                              // 7
  g.values.push_back(value(GraphOp::Div, DType::I32, {6, 7}));                                // 8
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 1));                               // 9
  g.values.push_back(value(GraphOp::PtrAdd, DType::F32, {2, 3}, 0, true));                    // 10
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 0));                               // 11
  g.values.push_back(value(GraphOp::Cmp, DType::Bool, {4, 11}, int64_t(GraphPredicate::GT))); // 12
  g.launches.push_back(GraphLaunchStep{0, {8, 9, 9}, {0, 1, 2, 3}, std::nullopt, "g.kiln:2:5"});
  g.launches.push_back(GraphLaunchStep{0, {8, 9, 9}, {2, 1, 10, 3}, 12, "g.kiln:3:20"});
  g.edges.push_back(GraphEdge{0, 1, std::nullopt});
  Bundle vadd = vaddBundle();
  vadd.consts.clear();
  g.kernels.push_back(vadd);
  Bundle mega;
  mega.kernelName = "g";
  mega.entry = "g_persistent";
  mega.params = {{"table", DType::U64, true},      {"launches", DType::I32, false},
                 {"tasks", DType::I32, false},     {"sync", DType::U32, true},
                 {"claim_base", DType::U32, false}, {"timeout_ns", DType::I64, false},
                 {"trace", DType::U64, true},      {"table_runs", DType::U32, false},
                 {"task_events", DType::U64, true}};
  mega.consts = {{"RECORD_WORDS", int64_t(kiln::tasks::kRecordHeaderWords + 4)}};
  mega.target = Target::SM90;
  mega.compilerVersion = "dslc 0.1.0";
  mega.sourceHash = "9c1f0a";
  mega.sections.push_back(CodeSection{SectionKind::PTX, Target::SM90, bytesOf(kPersistentPtx)});
  g.persistent = mega;
  g.target = Target::SM90;
  g.compilerVersion = "dslc 0.1.0";
  g.sourceHash = "9c1f0a";
  return g;
}

/// graph gm(x: *f32, out: *f32, mask: block_mask<4, 8, n, n>, n: i32) {
///     launch row_sum[(2,)](x, out, mask);
/// }
GraphBundle maskLaunch() {
  using kiln::DType;
  GraphBundle g = twoLaunches();
  g.name = "gm";
  g.params = {{"x", DType::F32, true}, {"out", DType::F32, true}};
  for (BundleParam &p : maskParams("mask"))
    g.params.push_back(p);
  g.params.push_back({"n", DType::I32, false});
  g.blockMasks = {{"mask", 4, 8, 2, kiln::BlockMaskExtents{kiln::BlockMaskExtent{0, 7}, kiln::BlockMaskExtent{0, 7}}}};
  g.values.clear();
  for (uint32_t i = 0; i < g.params.size(); ++i)
    g.values.push_back(value(GraphOp::Param, g.params[i].dtype, {}, i, g.params[i].pointer)); // 0..7
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 2));                               // 8
  g.values.push_back(value(GraphOp::Const, DType::I32, {}, 1));                               // 9
  g.launches = {GraphLaunchStep{0, {8, 9, 9}, {0, 1, 2, 3, 4, 5, 6}, std::nullopt, "gm.kiln:2:5"}};
  g.edges.clear();
  g.kernels = {maskedBundle()};
  g.kernels[0].consts.clear();
  g.persistent->consts = {{"RECORD_WORDS", int64_t(kiln::tasks::kRecordHeaderWords + 7)}};
  return g;
}

std::vector<uint8_t> bytesOfGraph(const GraphBundle &g) {
  std::string error;
  std::vector<uint8_t> bytes = serializeGraphBundle(g, error);
  EXPECT_FALSE(bytes.empty()) << error;
  return bytes;
}


class GraphApi : public ::testing::Test {
protected:
  void SetUp() override { fake.reset(); }
  ScopedEnv env{"KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH};
  FakeCuda fake;
};

} // namespace

TEST_F(GraphApi, LaunchesOneByOneWithTheGridsAndViewsTheGraphComputes) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(twoLaunches()));
  EXPECT_EQ(g.name(), "g");
  ASSERT_EQ(g.params().size(), 5u);
  EXPECT_TRUE(g.has_persistent());
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  const int before = fake.launchCount();
  g.launch(kiln::GraphMode::Launches, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.launchCount() - before, 2);
  unsigned grid[3], block[3], shared;
  char name[64];
  fake.lastLaunch(grid, block, &shared, name, sizeof name);
  EXPECT_EQ(std::string(name), "kiln_vadd");
  EXPECT_EQ(grid[0], 4u); // (200 + 63) / 64
  // The second launch reads `out` and writes `out + 200`.
  EXPECT_EQ(fake.param(0), kiln_buffer_device_address(out.handle()));
  EXPECT_EQ(fake.param(2), kiln_buffer_device_address(out.handle()) + 200 * 4);
  EXPECT_EQ(fake.param(3), 200u);
  kiln::GraphRunInfo info = g.last_run();
  EXPECT_EQ(info.mode, kiln::GraphMode::Launches);
  EXPECT_EQ(info.launches, 2u);
  EXPECT_EQ(info.tasks, 8u);
  // With the `if` false, one launch.
  g.launch(kiln::GraphMode::Launches, x, y, out, int32_t(200), int32_t(0));
  EXPECT_EQ(g.last_run().launches, 1u);
  rt.synchronize();
  g.check();
}

TEST_F(GraphApi, ThePersistentModeIsOneLaunchOverTheResidentWorkers) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(twoLaunches()));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  const int before = fake.launchCount();
  g.launch(kiln::GraphMode::Auto, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.launchCount() - before, 1);
  unsigned grid[3], block[3], shared;
  char name[64];
  fake.lastLaunch(grid, block, &shared, name, sizeof name);
  EXPECT_EQ(std::string(name), "g_persistent");
  kiln::GraphRunInfo info = g.last_run();
  EXPECT_EQ(info.mode, kiln::GraphMode::Persistent);
  EXPECT_EQ(grid[0], info.workers);
  EXPECT_GT(info.workers, 0u);
  EXPECT_EQ(fake.param(1), 2u); // launches
  EXPECT_EQ(fake.param(2), 8u); // tasks
  EXPECT_EQ(fake.param(4), 0u); // the first run's claims start at 0
  // A second run starts its claims after the first's tasks and workers: no reset.
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.param(4), 8u + info.workers);
  g.set_workers(7);
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  fake.lastLaunch(grid, block, &shared, name, sizeof name);
  EXPECT_EQ(grid[0], 7u);
  rt.synchronize();
  g.check(); // the fake ran nothing, so no watchdog record
}

// The same arguments again reuse the table: the kernel learns how many runs it served
// (table_runs) and grows each wait's target by the event's size per run, so a repeated
// call writes nothing. New arguments write a new table, with new events whose counters
// (and the claims) start from zero. This graph records no footprints: the second
// launch waits for every task of the first.
TEST_F(GraphApi, ARepeatedPersistentCallReusesItsTable) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(twoLaunches()));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  auto taskWords = [&](unsigned task) {
    return reinterpret_cast<const uint64_t *>(fake.param(8)) + task * kiln::tasks::kTaskWords;
  };
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  const uint64_t table = fake.param(0);
  EXPECT_EQ(fake.param(7), 0u);
  // Tasks 4..7 wait on event 0, the first launch's 4 tasks, which trigger it.
  for (unsigned t = 0; t < 4; ++t) {
    EXPECT_EQ(taskWords(t)[0], 0xffffffffu) << t; // waits on nothing, triggers event 0
    EXPECT_EQ(taskWords(4 + t)[0], 0xffffffff00000000u) << t;
    EXPECT_EQ(taskWords(4 + t)[1], 4u | (uint64_t(4) << 32));
  }
  for (uint64_t run = 1; run < 3; ++run) {
    g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
    EXPECT_EQ(fake.param(0), table);
    EXPECT_EQ(fake.param(7), run);
    EXPECT_EQ(taskWords(4)[1], 4u | (uint64_t(4) << 32)); // unchanged
  }
  EXPECT_EQ(fake.param(4), 2 * (8u + g.last_run().workers)); // the claims go on
  // n = 100: 2 tasks per launch, a new table from zero.
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(100), int32_t(1));
  EXPECT_EQ(fake.param(7), 0u);
  EXPECT_EQ(fake.param(4), 0u);
  EXPECT_EQ(taskWords(2)[0], 0xffffffff00000000u);
  EXPECT_EQ(taskWords(2)[1], 2u | (uint64_t(2) << 32));
  rt.synchronize();
}

// With the footprints of vadd (program i reads x, y and writes out at 64·i .. 64·i + 63),
// the second launch's program i reads what the first's program i wrote, and its
// writes to out + n meet the first launch's last program: each task waits on the few
// tasks it touches.
TEST_F(GraphApi, PersistentTasksWaitOnlyForTheTasksTheyTouch) {
  kiln::Runtime rt;
  GraphBundle bundle = twoLaunches();
  for (uint32_t param = 0; param < 3; ++param) {
    GraphFootprint f;
    f.param = param;
    f.reads = param < 2;
    f.writes = param == 2;
    f.known = true;
    f.lo = {GraphPolyTerm{64, {GraphPolyTerm::kPid}}};
    f.hi = {GraphPolyTerm{64, {GraphPolyTerm::kPid}}, GraphPolyTerm{63, {}}};
    bundle.footprints.push_back(f);
  }
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(bundle));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  // The first run of new arguments plans on whole launches (microseconds): the second
  // launch's tasks wait for all four of the first.
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(uint32_t(reinterpret_cast<const uint64_t *>(fake.param(8))[4 * kiln::tasks::kTaskWords + 1]), 4u);
  // The same arguments again: narrowed to tasks, a new table from zero.
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.param(7), 0u);
  EXPECT_EQ(fake.param(4), 0u);
  const uint64_t *task = reinterpret_cast<const uint64_t *>(fake.param(8));
  auto waits = [&](unsigned t) { return uint32_t(task[t * kiln::tasks::kTaskWords]); };
  auto triggers = [&](unsigned t) { return uint32_t(task[t * kiln::tasks::kTaskWords] >> 32); };
  auto size = [&](unsigned t) { return uint32_t(task[t * kiln::tasks::kTaskWords + 1]); };
  // Program 0 of the second launch reads out[0..63] (task 0) and writes out[200..263],
  // which task 3 wrote in part (192..255): tasks 0 and 3 are one event of two.
  EXPECT_EQ(waits(4), triggers(0));
  EXPECT_EQ(triggers(3), triggers(0));
  EXPECT_EQ(size(4), 2u);
  EXPECT_EQ(waits(5), triggers(1));
  EXPECT_EQ(size(5), 1u);
  EXPECT_EQ(waits(6), triggers(2));
  EXPECT_EQ(size(6), 1u);
  EXPECT_EQ(waits(7), triggers(3));
  EXPECT_EQ(size(7), 2u);
  for (unsigned t = 0; t < 4; ++t)
    EXPECT_EQ(waits(t), 0xffffffffu);
  // The bundle's footprints survive the file.
  std::string error;
  std::optional<GraphBundle> back = parseGraphBundle(bytesOfGraph(bundle), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->footprints, bundle.footprints);
  rt.synchronize();
}

// A checked persistent kernel (support/TaskTable.h): its launch records carry each
// pointer's extent after the arguments, it gets a check record as a tenth argument, and
// kiln_graph_check turns a record a task wrote into an error naming the launch.
TEST_F(GraphApi, ACheckedPersistentKernelGetsExtentsAndReportsTheTask) {
  kiln::Runtime rt;
  GraphBundle bundle = twoLaunches();
  const unsigned recordWords = kiln::tasks::kRecordHeaderWords + 2 * 4;
  bundle.persistent->consts = {{"RECORD_WORDS", int64_t(recordWords)}, {"CHECKED", int64_t(1)}};
  bundle.persistent->params.push_back({"check_record", kiln::DType::U32, true});
  std::string ptx = kPersistentPtx;
  ptx.replace(ptx.find("param_8\n"), 8, "param_8,\n\t.param .u64 g_persistent_param_9\n");
  bundle.persistent->sections[0].bytes = bytesOf(ptx.c_str());
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(bundle));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  g.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1));
  const uint64_t *record = reinterpret_cast<const uint64_t *>(fake.param(0));
  // Launch 0: x, y, out whole; launch 1: out, y, and out + 200 (800 bytes left).
  const unsigned extents = kiln::tasks::kRecordHeaderWords + 4;
  EXPECT_EQ(record[extents + 0], 800u);
  EXPECT_EQ(record[extents + 2], 1600u);
  EXPECT_EQ(record[recordWords + extents + 0], 1600u);
  EXPECT_EQ(record[recordWords + extents + 2], 800u);
  EXPECT_EQ(record[recordWords + extents + 3], 0u); // n is no pointer
  g.check(); // nothing recorded
  // What a task of the second launch would write for a store past `out + n`.
  auto *words = reinterpret_cast<uint32_t *>(fake.param(9));
  ASSERT_NE(words, nullptr);
  words[kiln::check::kFlagWord] = 1;
  words[kiln::check::kKindWord] = uint32_t(kiln::check::CheckKind::Store);
  words[kiln::check::kLineWord] = 7;
  words[kiln::check::kColumnWord] = 5;
  words[kiln::check::kPidWord] = 3;
  words[kiln::check::kParamWord] = 2;
  words[kiln::check::kOffsetWord] = 200;
  words[kiln::check::kTaskWord] = 7;
  words[kiln::check::kDoneWord] = 1;
  kiln::RuntimeError e = thrown([&] { g.check(); });
  EXPECT_EQ(e.status(), KILN_ERROR_OUT_OF_BOUNDS);
  EXPECT_TRUE(contains(e.what(), "kernel 'vadd': store out of bounds at vadd.kiln:7:5 in program (3, 0, 0) of the "
                                 "launch of kernel 'vadd' at g.kiln:3:20 (task 7): element 200 of parameter 'out'"))
      << e.what();
  g.check(); // the record was cleared
}

TEST_F(GraphApi, ACudaGraphIsRecordedOnceWhileTheArgumentsStay) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(twoLaunches()));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  const int first = fake.launchCount();
  g.launch(kiln::GraphMode::CudaGraph, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.launchCount() - first, 2); // recorded
  g.launch(kiln::GraphMode::CudaGraph, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(fake.launchCount() - first, 2); // replayed, nothing recorded again
  g.launch(kiln::GraphMode::CudaGraph, x, y, out, int32_t(100), int32_t(1));
  EXPECT_EQ(fake.launchCount() - first, 4); // new arguments: recorded again
  EXPECT_EQ(g.last_run().mode, kiln::GraphMode::CudaGraph);
}

TEST_F(GraphApi, BadArgumentsAreRefusedBeforeAnythingRuns) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(twoLaunches()));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  auto ints = rt.alloc<int32_t>(200);
  const int before = fake.launchCount();
  kiln::RuntimeError e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, y, out, int32_t(200)); });
  EXPECT_EQ(e.status(), KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_TRUE(contains(e.what(), "graph 'g' takes 5 arguments, 4 given")) << e.what();
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, int32_t(3), out, int32_t(200), int32_t(1)); });
  EXPECT_TRUE(contains(e.what(), "argument 1 of graph 'g' (y: *f32) needs a buffer")) << e.what();
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, ints, out, int32_t(200), int32_t(1)); });
  EXPECT_TRUE(contains(e.what(), "buffer of another dtype")) << e.what();
  // n = 0 gives the first launch an empty grid.
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, y, out, int32_t(0), int32_t(1)); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(e.what(), "launches kernel 'vadd' at g.kiln:2:5 on grid (0, 1, 1)")) << e.what();
  // out + n past the end of `out` is refused by the second launch's own checks, before the
  // first runs.
  auto small = rt.alloc<float>(100);
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, y, small, int32_t(200), int32_t(1)); });
  EXPECT_NE(e.status(), KILN_SUCCESS);
  EXPECT_EQ(fake.launchCount(), before);
  e = thrown([&] { g.launch(static_cast<kiln::GraphMode>(9), x, y, out, int32_t(200), int32_t(1)); });
  EXPECT_TRUE(contains(e.what(), "unknown mode 9")) << e.what();
}

// A graph's block mask is one argument, given to the kernel as its five parts; its block
// sizes and its declared extents are checked before anything runs.
TEST_F(GraphApi, ABlockMaskIsOneArgumentPassedOnAsItsParts) {
  kiln::Runtime rt;
  kiln::Graph g = rt.load_graph_bytes(bytesOfGraph(maskLaunch()));
  const std::vector<kiln::KernelBlockMask> masks = g.block_masks();
  ASSERT_EQ(masks.size(), 1u);
  EXPECT_EQ(masks[0].name, "mask");
  EXPECT_EQ(masks[0].block_rows, 4);
  EXPECT_EQ(masks[0].block_cols, 8);
  EXPECT_EQ(masks[0].first_param, 2u);
  std::vector<uint8_t> kept(8 * 16, 1);
  kiln::BlockMask mask = rt.block_mask_from_dense(kept, 8, 16, 4, 8);
  auto x = rt.alloc<float>(128), out = rt.alloc<float>(8);
  kiln::RuntimeError e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, out, mask, int32_t(8)); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(e.what(), "graph 'gm': block mask 'mask' has 16 columns, but the graph declares n = 8 columns"))
      << e.what();
  std::vector<uint8_t> square(16 * 16, 1);
  kiln::BlockMask wrongBlocks = rt.block_mask_from_dense(square, 16, 16, 8, 8);
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, out, wrongBlocks, int32_t(16)); });
  EXPECT_TRUE(contains(e.what(), "graph 'gm' takes mask: block_mask<4, 8>, but the mask has 8 x 8 blocks")) << e.what();
  e = thrown([&] { g.launch(kiln::GraphMode::Launches, x, out, int32_t(16)); });
  EXPECT_TRUE(contains(e.what(), "graph 'gm' takes 4 arguments, got 3")) << e.what();
  const int before = fake.launchCount();
  kiln::BlockMask good = rt.block_mask_from_dense(square, 16, 16, 4, 8);
  for (kiln::GraphMode mode : {kiln::GraphMode::Launches, kiln::GraphMode::Persistent}) {
    g.launch(mode, x, out, good, int32_t(16));
    if (mode == kiln::GraphMode::Launches) {
      // The kernel got the mask's extents and its three arrays.
      EXPECT_EQ(fake.param(2), 16u);
      EXPECT_EQ(fake.param(3), 16u);
      const kiln_buffer *arrays[3] = {};
      ASSERT_EQ(kiln_block_mask_query(rt.handle(), good.handle(), nullptr, nullptr, nullptr, nullptr, &arrays[0],
                                      &arrays[1], &arrays[2]),
                KILN_SUCCESS);
      for (unsigned i = 0; i < 3; ++i)
        EXPECT_EQ(fake.param(4 + i), kiln_buffer_device_address(arrays[i]));
    }
  }
  EXPECT_EQ(fake.launchCount() - before, 2);
}

TEST_F(GraphApi, ALoadNamesWhatIsWrong) {
  kiln::Runtime rt;
  std::vector<uint8_t> bytes = bytesOfGraph(twoLaunches());
  bytes[bytes.size() / 2] ^= 1;
  kiln::RuntimeError e = thrown([&] { rt.load_graph_bytes(bytes); });
  EXPECT_EQ(e.status(), KILN_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(e.what(), "not a usable graph bundle")) << e.what();
  std::string error;
  const std::vector<uint8_t> kernel = serializeBundle(vaddBundle(), error);
  e = thrown([&] { rt.load_graph_bytes(kernel); });
  EXPECT_TRUE(contains(e.what(), "it is a kernel bundle")) << e.what();
  e = thrown([&] { rt.load_graph("/nonexistent/g.kgraph"); });
  EXPECT_EQ(e.status(), KILN_ERROR_IO);
  // Records too small for a kernel's arguments would have the table overrun them.
  GraphBundle small = maskLaunch();
  small.persistent->consts = {{"RECORD_WORDS", int64_t(kiln::tasks::kRecordHeaderWords + 4)}};
  EXPECT_EQ(validateGraphBundle(small),
            "the persistent kernel's records of 7 words (3 of them its header) cannot hold the 7 arguments of kernel "
            "row_sum");
  // A graph for SPIR-V has no persistent kernel; the CUDA modes other than launch by
  // launch are refused for it.
  GraphBundle g = twoLaunches();
  g.persistent.reset();
  kiln::Graph noPersistent = rt.load_graph_bytes(bytesOfGraph(g));
  auto x = rt.alloc<float>(200), y = rt.alloc<float>(200), out = rt.alloc<float>(400);
  e = thrown([&] { noPersistent.launch(kiln::GraphMode::Persistent, x, y, out, int32_t(200), int32_t(1)); });
  EXPECT_EQ(e.status(), KILN_ERROR_UNSUPPORTED);
  noPersistent.launch(kiln::GraphMode::Auto, x, y, out, int32_t(200), int32_t(1));
  EXPECT_EQ(noPersistent.last_run().mode, kiln::GraphMode::Launches);
  EXPECT_EQ(kiln_graph_launch(nullptr, nullptr, 0, KILN_GRAPH_MODE_AUTO), KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(kiln_graph_check(nullptr), KILN_ERROR_INVALID_VALUE);
}
