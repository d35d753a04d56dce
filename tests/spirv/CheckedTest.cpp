//===- CheckedTest.cpp - Checked mode's bad accesses, run on PoCL -----------===//
//
// The kernels of tests/spirv/checked/out_of_bounds.kiln, compiled in checked mode and
// run through SPIR-V on the OpenCL CPU device as the runtime launches a checked kernel
// (each pointer argument's extent, then a zeroed check record): an overrun by one, an
// underrun by one, a pointer chosen at run time between two buffers, and an atomic past
// the end. Each must leave its record (the access, the line, the program, the element)
// and nothing outside the extents it was given: every buffer here is longer than its
// extent, and the bytes past the extent must be untouched. (In-bounds programs in
// checked mode: DiffTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/OpenCLRunner.h"

#include "codegen/Codegen.h"
#include "ir/transforms/Pipeline.h"
#include "support/CheckRecord.h"
#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

namespace kiln::spirvtest {
namespace {

#ifdef KILN_HAVE_SEMA

OpenCLDevice *device() {
  static std::string error;
  static OpenCLDevice *d = OpenCLDevice::open(error).release();
  return d;
}

/// A device buffer of `n` f32 (or i32) values, `fill` each.
template <typename T> std::vector<std::byte> filled(size_t n, T fill) {
  std::vector<std::byte> out(n * sizeof(T));
  for (size_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * sizeof(T), &fill, sizeof(T));
  return out;
}
template <typename T> T at(const std::vector<std::byte> &b, size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

DeviceArg bufferArg(std::vector<std::byte> &b) {
  DeviceArg d;
  d.isBuffer = true;
  d.buffer = &b;
  return d;
}
template <typename T> DeviceArg scalarArg(T v) {
  DeviceArg d;
  d.scalar.resize(sizeof(T));
  std::memcpy(d.scalar.data(), &v, sizeof(T));
  return d;
}

struct Record {
  uint32_t words[check::kCheckRecordWords] = {};
  int64_t offset() const {
    int64_t v;
    std::memcpy(&v, &words[check::kOffsetWord], 8);
    return v;
  }
};

/// Compiles `kernel` of the file in checked mode and runs it over `grid` with `args`
/// followed by `extents` (bytes) and a record, which it returns.
Record runChecked(const std::string &kernel, std::vector<DeviceArg> args, const std::vector<uint64_t> &extents,
                  std::array<int64_t, 3> grid) {
  auto sources = std::make_shared<SourceManager>();
  std::ostringstream text;
  DiagnosticEngine diags(*sources, text);
  SemaOptions options;
  options.kernel = kernel;
  std::unique_ptr<ir::Module> module = compileFileToTileIR(
      std::string(KILN_SOURCE_DIR) + "/tests/spirv/checked/out_of_bounds.kiln", diags, options, sources);
  EXPECT_TRUE(module) << text.str();
  Record r;
  if (!module)
    return r;
  ir::PipelineOptions pipeline;
  ir::setPipelineTarget(pipeline, "spirv64");
  ir::runPipeline(*module, pipeline, diags);
  codegen::CodegenOptions cg;
  cg.checked = true;
  std::optional<codegen::CodegenResult> gen =
      codegen::generate(*module, *module->kernels.front(), codegen::Target::SPIRV64, diags, cg);
  EXPECT_TRUE(gen) << text.str();
  if (!gen)
    return r;
  std::string error;
  std::optional<std::vector<uint8_t>> bitcode = spirvToSpirBitcode(gen->spirv, error);
  EXPECT_TRUE(bitcode) << error;
  if (!bitcode)
    return r;
  for (uint64_t e : extents)
    args.push_back(scalarArg(e));
  std::vector<std::byte> record(sizeof r.words, std::byte{0});
  args.push_back(bufferArg(record));
  EXPECT_TRUE(device()->run(*bitcode, gen->entry, args, grid, gen->numThreads, gen->sharedBytes, error)) << error;
  std::memcpy(r.words, record.data(), sizeof r.words);
  return r;
}

class Checked : public ::testing::Test {
protected:
  void SetUp() override {
    if (!device())
      GTEST_SKIP() << "no OpenCL device";
  }
};

TEST_F(Checked, AnOverrunByOneIsStoppedAndRecorded) {
  // 100 elements for the kernel, 8 more that it must not reach; programs of 64.
  std::vector<std::byte> dst = filled<float>(108, -1.0f);
  Record r = runChecked("overrun", {bufferArg(dst), scalarArg<int32_t>(100)}, {100 * 4}, {2, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 1u);
  EXPECT_EQ(r.words[check::kKindWord], uint32_t(check::CheckKind::Store));
  EXPECT_EQ(r.words[check::kLineWord], 6u);
  EXPECT_EQ(r.words[check::kPidWord], 1u);
  EXPECT_EQ(r.words[check::kParamWord], 0u);
  EXPECT_EQ(r.offset(), 100);
  for (size_t i = 0; i < 100; ++i)
    ASSERT_EQ(at<float>(dst, i), float(i)) << i;
  for (size_t i = 100; i < 108; ++i)
    EXPECT_EQ(at<float>(dst, i), -1.0f) << "element " << i << " past the extent was written";
}

TEST_F(Checked, AnUnderrunReadsOtherAndIsRecorded) {
  // Lane 0 reads src[-1], before the buffer.
  std::vector<std::byte> src = filled<float>(40, 3.0f), dst = filled<float>(40, 0.0f);
  Record r = runChecked("underrun", {bufferArg(src), bufferArg(dst), scalarArg<int32_t>(40)}, {40 * 4, 40 * 4},
                        {1, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 1u);
  EXPECT_EQ(r.words[check::kKindWord], uint32_t(check::CheckKind::Load));
  EXPECT_EQ(r.words[check::kLineWord], 12u);
  EXPECT_EQ(r.offset(), -1);
  EXPECT_EQ(at<float>(dst, 0), 7.0f); // the masked-off lane reads `other`
  EXPECT_EQ(at<float>(dst, 1), 3.0f);
}

TEST_F(Checked, APointerChosenAtRunTimeIsCheckedAgainstEitherBuffer) {
  std::vector<std::byte> a = filled<float>(64, 1.0f), b = filled<float>(64, 2.0f), out = filled<float>(32, 0.0f);
  // b[16 .. 48) is inside b.
  Record r = runChecked("chosen", {bufferArg(a), bufferArg(b), bufferArg(out), scalarArg<int32_t>(1),
                                   scalarArg<int32_t>(16)},
                        {64 * 4, 64 * 4, 32 * 4}, {1, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 0u);
  EXPECT_EQ(at<float>(out, 31), 2.0f);
  // a[40 .. 72) runs past a's 64 elements.
  out = filled<float>(32, 0.0f);
  r = runChecked("chosen",
                 {bufferArg(a), bufferArg(b), bufferArg(out), scalarArg<int32_t>(0), scalarArg<int32_t>(40)},
                 {64 * 4, 64 * 4, 32 * 4}, {1, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 1u);
  EXPECT_EQ(r.words[check::kKindWord], uint32_t(check::CheckKind::Load));
  EXPECT_EQ(r.offset(), 64);
  EXPECT_EQ(at<float>(out, 23), 1.0f); // a[63]
  EXPECT_EQ(at<float>(out, 24), 0.0f); // past a: the load gives 0
}

TEST_F(Checked, AnAtomicPastTheEndDoesNotHappen) {
  std::vector<std::byte> counts = filled<int32_t>(12, 0);
  Record r = runChecked("atomic_overrun", {bufferArg(counts), scalarArg<int32_t>(10)}, {10 * 4}, {3, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 1u);
  EXPECT_EQ(r.words[check::kKindWord], uint32_t(check::CheckKind::Atomic));
  EXPECT_EQ(r.offset(), 10);
  EXPECT_EQ(at<int32_t>(counts, 10), 0) << "the atomic landed past the extent";
}

// Vector accesses (4 floats) are tested a vector at a time where the mask allows
// (codegen/LowerChecks.cpp). A vector load partly past the end is not made (all its
// lanes read 0 or `other`); a vector store partly past the end writes its lanes inside;
// either way no lane outside is accessed and the first lane outside is recorded.
std::vector<std::byte> iota(size_t n) {
  std::vector<std::byte> out(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    const float v = float(i);
    std::memcpy(out.data() + i * sizeof(float), &v, sizeof v);
  }
  return out;
}

/// The record of one violation of `kind` at element `offset`.
void expectRecorded(const Record &r, check::CheckKind kind, int64_t offset) {
  EXPECT_EQ(r.words[check::kFlagWord], 1u);
  EXPECT_EQ(r.words[check::kKindWord], uint32_t(kind));
  EXPECT_EQ(r.offset(), offset);
}

/// vector_copy's dst[i] = src[i] + 1 for the first `count` elements (src = iota).
void expectCopied(const std::vector<std::byte> &dst, size_t count) {
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(at<float>(dst, i), float(i) + 1.0f) << i;
}

/// Elements [from, to) of dst still hold the -1 they were filled with.
void expectUntouched(const std::vector<std::byte> &dst, size_t from, size_t to, const char *why) {
  for (size_t i = from; i < to; ++i)
    EXPECT_EQ(at<float>(dst, i), -1.0f) << "element " << i << why;
}

TEST_F(Checked, AVectorLoadPartlyPastTheEndReadsZeroInAllItsLanes) {
  // The vector 1000..1003 (4 floats) reaches past src's end at 1002: none of its lanes
  // is loaded, and every other vector is.
  std::vector<std::byte> src = iota(1002), dst = filled<float>(1032, -1.0f);
  Record r = runChecked("vector_copy", {bufferArg(src), bufferArg(dst)}, {1002 * 4, 1024 * 4}, {1, 1, 1});
  expectRecorded(r, check::CheckKind::Load, 1002);
  EXPECT_EQ(r.words[check::kLineWord], 32u);
  EXPECT_EQ(r.words[check::kParamWord], 0u);
  expectCopied(dst, 1000);
  for (size_t i = 1000; i < 1024; ++i)
    ASSERT_EQ(at<float>(dst, i), 1.0f) << "element " << i << ": a lane of a vector past src's end loads 0";
  expectUntouched(dst, 1024, 1032, " past the extent was written");
}

TEST_F(Checked, AVectorStorePartlyPastTheEndWritesItsLanesInside) {
  std::vector<std::byte> src = iota(1024), dst = filled<float>(1008, -1.0f);
  Record r = runChecked("vector_copy", {bufferArg(src), bufferArg(dst)}, {1024 * 4, 1002 * 4}, {1, 1, 1});
  expectRecorded(r, check::CheckKind::Store, 1002);
  EXPECT_EQ(r.words[check::kParamWord], 1u);
  expectCopied(dst, 1002);
  expectUntouched(dst, 1002, 1008, " past the extent was written");
}

TEST_F(Checked, AVectorUnderAMaskPartlyPastTheEnd) {
  // n = 1000 masks off lanes from 1000 on; src ends at 998, inside the vector 996..999.
  std::vector<std::byte> src = iota(998), dst = filled<float>(1008, -1.0f);
  Record r = runChecked("vector_copy_masked", {bufferArg(src), bufferArg(dst), scalarArg<int32_t>(1000)},
                        {998 * 4, 1008 * 4}, {1, 1, 1});
  expectRecorded(r, check::CheckKind::Load, 998);
  EXPECT_EQ(r.words[check::kLineWord], 39u);
  expectCopied(dst, 996);
  for (size_t i = 996; i < 1000; ++i)
    EXPECT_EQ(at<float>(dst, i), 6.0f) << "element " << i << ": a lane of the vector past src's end reads `other`";
  expectUntouched(dst, 1000, 1008, " is masked off");
}

TEST_F(Checked, VectorAccessesInsideRecordNothing) {
  std::vector<std::byte> src = iota(2048), dst = filled<float>(2048, -1.0f);
  Record r = runChecked("vector_copy", {bufferArg(src), bufferArg(dst)}, {2048 * 4, 2048 * 4}, {2, 1, 1});
  EXPECT_EQ(r.words[check::kFlagWord], 0u);
  expectCopied(dst, 2048);
}

#endif // KILN_HAVE_SEMA

} // namespace
} // namespace kiln::spirvtest
