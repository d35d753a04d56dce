//===- CheckedModeTest.cpp - Checked kernels' extents and records (fake CUDA) ===//
//
// A bundle compiled in checked mode (docs/checked.md) takes, after its arguments, each
// pointer argument's extent and a check record. On the stand-in driver: what a launch
// passes (the bytes from each pointer, a view's fewer, the record), that a record the
// kernel filled in is reported by the next synchronization as KILN_ERROR_OUT_OF_BOUNDS
// naming the access, and that the record is cleared for the next launch.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/Runtime.h"
#include "support/CheckRecord.h"

#include <cstring>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// vadd's PTX with the checked-mode parameters: three extents and the record.
const char *kCheckedVaddPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry kiln_vadd(
	.param .u64 kiln_vadd_param_0,
	.param .u64 kiln_vadd_param_1,
	.param .u64 kiln_vadd_param_2,
	.param .u32 kiln_vadd_param_3,
	.param .u64 kiln_vadd_param_4,
	.param .u64 kiln_vadd_param_5,
	.param .u64 kiln_vadd_param_6,
	.param .u64 kiln_vadd_param_7
)
{
	ret;
}
)";

class CheckedMode : public ::testing::Test {
protected:
  void SetUp() override { fake.reset(); }
  /// vadd's bundle in checked mode, serialized.
  static std::vector<uint8_t> checkedVadd() {
    Bundle b = vaddBundle(kCheckedVaddPtx);
    b.checked = true;
    std::string error;
    std::vector<uint8_t> bytes = serializeBundle(b, error);
    EXPECT_FALSE(bytes.empty()) << error;
    return bytes;
  }
  ScopedEnv env{"KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH};
  FakeCuda fake;
};

} // namespace

TEST_F(CheckedMode, ALaunchPassesEachPointersExtentAndTheRecord) {
  const std::vector<uint8_t> bytes = checkedVadd();
  std::string error;
  std::optional<Bundle> again = parseBundle(bytes, error);
  ASSERT_TRUE(again && again->checked) << error;

  kiln::Runtime rt;
  kiln::Kernel k = rt.load_bundle_bytes(bytes);
  auto x = rt.alloc<float>(100), y = rt.alloc<float>(100), out = rt.alloc<float>(50);
  k.launch({1, 1, 1}, x, kiln::BufferView{&y, 40}, out, int32_t(100));
  EXPECT_EQ(fake.param(4), 400u);      // x: the whole buffer
  EXPECT_EQ(fake.param(5), 400u - 40); // y, 40 bytes in
  EXPECT_EQ(fake.param(6), 200u);      // out
  const uint64_t record = fake.param(7);
  ASSERT_NE(record, 0u);
  rt.synchronize(); // nothing recorded: no error

  // What the kernel writes when a store leaves `out` (the fake's memory is this
  // process's): the next synchronization reports it, naming the access.
  auto *words = reinterpret_cast<uint32_t *>(record);
  auto recordBadAccess = [&](kiln::check::CheckKind kind, uint32_t param, int64_t offset) {
    words[kiln::check::kFlagWord] = 1;
    words[kiln::check::kKindWord] = static_cast<uint32_t>(kind);
    words[kiln::check::kLineWord] = 4;
    words[kiln::check::kColumnWord] = 5;
    words[kiln::check::kPidWord] = 3;
    words[kiln::check::kParamWord] = param;
    std::memcpy(&words[kiln::check::kOffsetWord], &offset, 8);
    words[kiln::check::kDoneWord] = 1;
  };
  recordBadAccess(kiln::check::CheckKind::Store, 2, 50);
  k.launch({1, 1, 1}, x, y, out, int32_t(100));
  kiln::RuntimeError e = thrown([&] { rt.synchronize(); });
  EXPECT_EQ(e.status(), KILN_ERROR_OUT_OF_BOUNDS);
  EXPECT_NE(std::string(e.what()).find("kernel 'vadd': store out of bounds at vadd.kiln:4:5 in program (3, 0, 0): "
                                       "element 50 of parameter 'out'"),
            std::string::npos)
      << e.what();
  // Reported once: the record is clear for the next launch.
  EXPECT_EQ(words[kiln::check::kFlagWord], 0u);
  k.launch({1, 1, 1}, x, y, out, int32_t(100));
  rt.synchronize();
  // An underrun has a negative offset.
  recordBadAccess(kiln::check::CheckKind::Load, 0, -1);
  k.launch({1, 1, 1}, x, y, out, int32_t(100));
  e = thrown([&] { rt.synchronize(); });
  EXPECT_NE(std::string(e.what()).find("load out of bounds at vadd.kiln:4:5 in program (3, 0, 0): element -1 of "
                                       "parameter 'x'"),
            std::string::npos)
      << e.what();
}

// The driver places large allocations back to back, so one buffer's start is often the
// previous one's end. A pointer to the start of a buffer gets that buffer's extent, never
// the zero left past the end of its neighbour; a pointer just past the end of the last
// buffer still gets zero.
TEST_F(CheckedMode, ABufferStartingWhereAnotherEndsGetsItsOwnExtent) {
  fake.packAllocations(1);
  kiln::Runtime rt;
  kiln::Kernel k = rt.load_bundle_bytes(checkedVadd());
  auto x = rt.alloc<float>(64), y = rt.alloc<float>(64), out = rt.alloc<float>(32);
  ASSERT_EQ(y.device_address(), x.device_address() + 256); // packed: y starts where x ends
  ASSERT_EQ(out.device_address(), y.device_address() + 256);
  k.launch({1, 1, 1}, x, y, out, int32_t(64));
  EXPECT_EQ(fake.param(4), 256u);
  EXPECT_EQ(fake.param(5), 256u);
  EXPECT_EQ(fake.param(6), 128u);
  k.launch({1, 1, 1}, x, y, kiln::BufferView{&out, 128}, int32_t(64)); // one past the end of out
  EXPECT_EQ(fake.param(6), 0u);
  rt.synchronize();
}

// A recording (a CUDA graph) of a checked kernel runs it at each replay: the record is
// read at the synchronization after every replay, not only after the recording.
TEST_F(CheckedMode, AReplayedRecordingOfACheckedKernelIsCheckedEveryTime) {
  kiln::Runtime rt;
  kiln::Kernel k = rt.load_bundle_bytes(checkedVadd());
  auto x = rt.alloc<float>(100), y = rt.alloc<float>(100), out = rt.alloc<float>(50);
  rt.begin_recording();
  k.launch({1, 1, 1}, x, y, out, int32_t(100));
  kiln::Recording recording = rt.end_recording();
  auto *words = reinterpret_cast<uint32_t *>(fake.param(7));
  for (int replay = 0; replay < 2; ++replay) {
    recording.replay();
    rt.synchronize(); // clean
    words[kiln::check::kFlagWord] = 1; // what the kernel writes on a bad store
    words[kiln::check::kKindWord] = static_cast<uint32_t>(kiln::check::CheckKind::Store);
    words[kiln::check::kParamWord] = 2;
    words[kiln::check::kDoneWord] = 1;
    recording.replay();
    kiln::RuntimeError e = thrown([&] { rt.synchronize(); });
    EXPECT_EQ(e.status(), KILN_ERROR_OUT_OF_BOUNDS) << "replay " << replay;
    EXPECT_EQ(words[kiln::check::kFlagWord], 0u); // cleared for the next
  }
}
