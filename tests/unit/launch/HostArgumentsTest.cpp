//===- HostArgumentsTest.cpp - The --grid/--arg contract of every launcher ===//
//
// What dslc run and kiln-run share, tested without either tool: grids, integer
// literals, binding arguments to a neutral signature (errors, aliasing, scalars, block
// masks built from a bool array), the write-back of exactly the buffers marked written
// (never a mask's derived arrays), and how runtime failures become diagnostics.
//
//===----------------------------------------------------------------------===//
#include "support/BlockMask.h"
#include "support/Npy.h"
#include "tools/launch/DeviceLaunch.h"
#include "tools/launch/HostArguments.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::launch {
namespace {

struct Diags {
  SourceManager sources;
  std::ostringstream out;
  DiagnosticEngine engine{sources, out};
  std::vector<Diagnostic> seen;
  Diags() {
    engine.setHandler([this](const Diagnostic &d) { seen.push_back(d); });
  }
  bool has(DiagCode code, const std::string &text) const {
    for (const Diagnostic &d : seen)
      if (d.code == code && d.message.find(text) != std::string::npos)
        return true;
    return false;
  }
};

class TempDir : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("kiln-launch-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string &name) const { return (dir / name).string(); }
  std::string npy(const std::string &name, const std::string &descr, std::vector<std::byte> data, Shape shape) {
    std::string error;
    EXPECT_TRUE(writeNpyAtomic(path(name), NpyArray{descr, std::move(shape), std::move(data)}, error)) << error;
    return path(name);
  }
  std::filesystem::path dir;
};

std::vector<std::byte> floats(std::initializer_list<float> values) {
  std::vector<std::byte> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

Signature addSignature() {
  return Signature{"add", {{"x", DType::F32, true}, {"y", DType::F32, true}, {"n", DType::I32, false}}, {}, {}};
}

/// sparse_rowsum(x: *f32, out: *f32, mask: block_mask<4, 8>) as the compiler lowers it:
/// the mask is parameters 2..6.
Signature maskSignature() {
  return Signature{"sparse_rowsum",
                   {{"x", DType::F32, true},
                    {"out", DType::F32, true},
                    {"mask.rows", DType::I32, false},
                    {"mask.cols", DType::I32, false},
                    {"mask.row_start", DType::I32, true},
                    {"mask.blocks", DType::I32, true},
                    {"mask.bitmaps", DType::U32, true}},
                   {"BM", "BN"},
                   {{"mask", 4, 8, 2}}};
}

/// `rows * cols` element flags, about half of them kept, from a fixed seed.
std::vector<uint8_t> randomKept(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> kept(static_cast<size_t>(rows * cols));
  for (uint8_t &k : kept)
    k = gen() % 2;
  return kept;
}

std::vector<std::byte> bytesOf(const void *data, size_t size) {
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), data, size);
  return out;
}

std::string fileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Grid, Forms) {
  Diags d;
  EXPECT_EQ(parseGrid("7", d.engine), (std::array<int64_t, 3>{7, 1, 1}));
  EXPECT_EQ(parseGrid("2,3", d.engine), (std::array<int64_t, 3>{2, 3, 1}));
  EXPECT_EQ(parseGrid("2,3,4", d.engine), (std::array<int64_t, 3>{2, 3, 4}));
  EXPECT_EQ(parseGrid("0016,010", d.engine), (std::array<int64_t, 3>{16, 10, 1})); // decimal, zeros and all
  EXPECT_EQ(parseGrid("2147483647", d.engine), (std::array<int64_t, 3>{2147483647, 1, 1}));
  EXPECT_TRUE(d.seen.empty());
  // A grid is a count of programs: plain decimal digits, no sign, base or separators.
  for (const char *bad : {"", "0", "-1", "1,2,3,4", "1,,2", ",", "a", "2147483648", "1.5", "99999999999999999999",
                          "+4", "0x10", "1_0", "4,+2", " 4", "4 "}) {
    Diags e;
    EXPECT_FALSE(parseGrid(bad, e.engine)) << bad;
    EXPECT_TRUE(e.has(DiagCode::BadGrid, "malformed grid")) << bad;
  }
}

TEST(IntLiteral, Edges) {
  bool overflow = false;
  EXPECT_EQ(parseIntLiteral("-9223372036854775808", overflow), INT64_MIN);
  EXPECT_EQ(parseIntLiteral("18446744073709551615", overflow), -1); // the u64 bit pattern
  EXPECT_FALSE(parseIntLiteral("18446744073709551616", overflow));
  EXPECT_TRUE(overflow);
  EXPECT_FALSE(parseIntLiteral("-9223372036854775809", overflow));
  EXPECT_TRUE(overflow);
  EXPECT_EQ(parseIntLiteral("+0XfF", overflow), 255);
  EXPECT_EQ(parseIntLiteral("1_000", overflow), 1000);
  EXPECT_EQ(parseIntLiteral("-0x7f_ff", overflow), -0x7fff);
  // Underscores only between two digits, as in Kiln source.
  for (const char *bad : {"", "-", "0x", "1e3", "12a", " 1", "--1", "_100", "100_", "1__00", "0x_10", "0x10_", "-_1",
                          "_", "+"})
    EXPECT_FALSE(parseIntLiteral(bad, overflow)) << bad;
}

TEST(Signature, Spelling) {
  EXPECT_EQ(paramList(addSignature()), "x: *f32, y: *f32, n: i32");
  EXPECT_EQ(paramList(Signature{"k", {}, {}, {}}), "(none)");
  // A block mask reads as the one argument it is, not as its five parameters.
  EXPECT_EQ(paramList(maskSignature()), "x: *f32, out: *f32, mask: block_mask<4, 8>");
  EXPECT_EQ(maskSpelling(MaskSpec{"m", 16, 1, 0}), "m: block_mask<16, 1>");
  EXPECT_EQ(dtypeSizeBytes(DType::Bool), 1u);
  EXPECT_EQ(dtypeSizeBytes(DType::BF16), 2u);
  EXPECT_TRUE(dtypeIsInteger(DType::U64));
  EXPECT_FALSE(dtypeIsInteger(DType::Bool));
  EXPECT_FALSE(dtypeIsSigned(DType::U8));
}

TEST_F(TempDir, BindsBuffersAndScalars) {
  std::string x = npy("x.npy", "<f4", floats({1, 2, 3}), {3});
  std::string y = npy("y.npy", "<f4", floats({0, 0, 0}), {3});
  Diags d;
  auto host = bindArguments(addSignature(), {"n=0x3", "y=" + y, "x=" + x}, d.engine);
  ASSERT_TRUE(host) << d.out.str();
  ASSERT_EQ(host->args.size(), 3u);
  EXPECT_EQ(host->args[0].kind, HostArg::Kind::Buffer);
  EXPECT_EQ(host->args[1].buffer, 1u);
  EXPECT_EQ(host->args[2].kind, HostArg::Kind::Int);
  EXPECT_EQ(host->args[2].i, 3);
  ASSERT_EQ(host->buffers.size(), 2u);
  EXPECT_EQ(host->buffers[0].descr, "<f4");
  EXPECT_EQ(host->buffers[0].shape, Shape{3});
  EXPECT_EQ(host->buffers[0].data, floats({1, 2, 3}));
}

TEST_F(TempDir, OneFileForTwoParametersIsOneBuffer) {
  std::string x = npy("x.npy", "<f4", floats({1}), {1});
  Diags d;
  auto host = bindArguments(addSignature(), {"x=" + x, "y=" + dir.string() + "/./x.npy", "n=1"}, d.engine);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->buffers.size(), 1u);
  EXPECT_EQ(host->args[0].buffer, host->args[1].buffer);
}

TEST_F(TempDir, ReportsEveryProblem) {
  std::string x = npy("x.npy", "<f8", std::vector<std::byte>(8), {1});
  Diags d;
  auto host = bindArguments(addSignature(), {"x=" + x, "n=1.5", "q=1", "n=2", "bad"}, d.engine);
  EXPECT_FALSE(host);
  EXPECT_TRUE(d.has(DiagCode::NpyError, "float64"));
  EXPECT_TRUE(d.has(DiagCode::RunArgument, "has no parameter 'q'; its parameters are x: *f32, y: *f32, n: i32"));
  EXPECT_TRUE(d.has(DiagCode::RunArgument, "'n' is given more than once"));
  EXPECT_TRUE(d.has(DiagCode::RunArgument, "malformed --arg 'bad'"));
  EXPECT_TRUE(d.has(DiagCode::RunArgument, "missing argument for parameter 'y: *f32'"));
}

TEST_F(TempDir, AnArgumentForAConstPointsAtDefines) {
  Signature s = addSignature();
  s.consts = {"BLOCK"};
  Diags d;
  EXPECT_FALSE(bindArguments(s, {"BLOCK=16"}, d.engine));
  EXPECT_TRUE(d.has(DiagCode::RunArgument, "has no parameter 'BLOCK'"));
  ASSERT_FALSE(d.seen.empty()); // the unknown name first, then the missing arguments
  EXPECT_EQ(d.seen[0].hint, "'BLOCK' is a const parameter, fixed when the kernel is compiled: dslc -D BLOCK=16");
}

TEST(Scalars, RangesAndKinds) {
  Signature s{"k", {{"b", DType::Bool, false}, {"u", DType::U8, false}, {"f", DType::F16, false}}, {}, {}};
  Diags d;
  auto host = bindArguments(s, {"b=false", "u=255", "f=-inf"}, d.engine);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->args[0].i, 0);
  EXPECT_EQ(host->args[1].i, 255);
  EXPECT_EQ(host->args[2].kind, HostArg::Kind::Float);
  EXPECT_TRUE(std::isinf(host->args[2].f));
  for (std::vector<std::string> bad : {std::vector<std::string>{"b=2", "u=1", "f=1"}, {"b=1", "u=256", "f=1"},
                                       {"b=1", "u=-1", "f=1"}, {"b=1", "u=1", "f=1e999"}, {"b=1", "u=1", "f=x"}}) {
    Diags e;
    EXPECT_FALSE(bindArguments(s, bad, e.engine));
    EXPECT_TRUE(e.has(DiagCode::RunArgument, "bad value"));
  }
}

TEST_F(TempDir, WritesBackOnlyWrittenBuffers) {
  std::string x = npy("x.npy", "<f4", floats({1, 2}), {2});
  std::string y = npy("y.npy", "<f4", floats({0, 0}), {2});
  Diags d;
  auto host = bindArguments(addSignature(), {"x=" + x, "y=" + y, "n=2"}, d.engine);
  ASSERT_TRUE(host);
  auto before = std::filesystem::last_write_time(x);
  host->buffers[0].data = floats({9, 9}); // changed but not marked: not written
  host->buffers[1].data = floats({5, 6});
  host->buffers[1].written = true;
  ASSERT_TRUE(writeBack(*host, d.engine));
  EXPECT_EQ(std::filesystem::last_write_time(x), before);
  std::string error;
  auto back = readNpy(y, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->data, floats({5, 6}));
  EXPECT_EQ(back->shape, Shape{2});
}

TEST_F(TempDir, WritesBackAllOrNone) {
  std::filesystem::create_directory(dir / "sub");
  std::string x = npy("x.npy", "<f4", floats({1, 2}), {2});
  std::string y = npy("sub/y.npy", "<f4", floats({0, 0}), {2});
  Diags d;
  auto host = bindArguments(addSignature(), {"x=" + x, "y=" + y, "n=2"}, d.engine);
  ASSERT_TRUE(host) << d.out.str();
  host->buffers[0].data = floats({7, 8});
  host->buffers[1].data = floats({5, 6});
  host->buffers[0].written = host->buffers[1].written = true;
  // y's folder is gone by the time the run ends: y cannot be written, so x is not either.
  std::filesystem::remove_all(dir / "sub");
  EXPECT_FALSE(writeBack(*host, d.engine));
  EXPECT_TRUE(d.has(DiagCode::FileNotWritable, "sub/y.npy"));
  std::string error;
  auto back = readNpy(x, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->data, floats({1, 2}));
  EXPECT_EQ(static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {})), 1u)
      << "no temporary file is left behind";
}

TEST_F(TempDir, BindsABlockMaskAsItsFiveParameters) {
  std::string x = npy("x.npy", "<f4", std::vector<std::byte>(10 * 20 * 4), {10, 20});
  std::string out = npy("out.npy", "<f4", std::vector<std::byte>(10 * 4), {10});
  std::vector<uint8_t> kept = randomKept(10, 20, 7);
  std::string m = npy("m.npy", "|b1", bytesOf(kept.data(), kept.size()), {10, 20});
  Diags d;
  auto host = bindArguments(maskSignature(), {"x=" + x, "mask=" + m, "out=" + out}, d.engine);
  ASSERT_TRUE(host) << d.out.str();
  EXPECT_TRUE(d.seen.empty());

  std::string error;
  std::optional<BlockMaskLayout> expected = blockMaskFromDense(kept, 10, 20, 4, 8, error);
  ASSERT_TRUE(expected) << error;
  ASSERT_EQ(host->args.size(), 7u);
  EXPECT_EQ(host->args[2].kind, HostArg::Kind::Int);
  EXPECT_EQ(host->args[2].i, 10);
  EXPECT_EQ(host->args[3].kind, HostArg::Kind::Int);
  EXPECT_EQ(host->args[3].i, 20);
  ASSERT_EQ(host->buffers.size(), 5u);
  struct Part {
    const char *name;
    DType dtype;
    std::vector<std::byte> data;
  } parts[] = {
      {"row_start", DType::I32, bytesOf(expected->rowStart.data(), expected->rowStart.size() * 4)},
      {"blocks", DType::I32, bytesOf(expected->blocks.data(), expected->blocks.size() * 4)},
      {"bitmaps", DType::U32, bytesOf(expected->bitmaps.data(), expected->bitmaps.size() * 4)},
  };
  for (size_t i = 0; i < 3; ++i) {
    const HostArg &a = host->args[4 + i];
    ASSERT_EQ(a.kind, HostArg::Kind::Buffer);
    const HostBuffer &b = host->buffers[a.buffer];
    EXPECT_EQ(b.path, m + "[" + parts[i].name + "]");
    EXPECT_EQ(b.dtype, parts[i].dtype);
    EXPECT_EQ(b.data, parts[i].data) << parts[i].name;
    EXPECT_EQ(b.shape, Shape{static_cast<int64_t>(parts[i].data.size() / 4)});
    EXPECT_TRUE(b.derived);
    EXPECT_FALSE(b.written);
  }
  for (size_t i : {size_t(0), size_t(1)})
    EXPECT_FALSE(host->buffers[host->args[i].buffer].derived);
}

TEST_F(TempDir, BlockMaskArgumentErrors) {
  std::string x = npy("x.npy", "<f4", floats({0}), {1});
  auto bindMask = [&](const std::string &maskArg, Signature s = maskSignature()) {
    auto d = std::make_unique<Diags>();
    EXPECT_FALSE(bindArguments(s, {"x=" + x, "out=" + x, maskArg}, d->engine)) << maskArg;
    return d;
  };
  // Not a bool array, or not 2-D.
  std::string f = npy("f.npy", "<f4", std::vector<std::byte>(4 * 8 * 4), {4, 8});
  auto d = bindMask("mask=" + f);
  ASSERT_EQ(d->seen.size(), 1u) << d->out.str();
  EXPECT_EQ(d->seen[0].code, DiagCode::BlockMaskArgument);
  EXPECT_TRUE(d->seen[0].loc.isCommandLine());
  EXPECT_EQ(d->seen[0].message, "--arg mask=" + f +
                                    ": a block mask needs a 2-D bool array (NumPy dtype bool, descr '|b1'), got "
                                    "float32 ('<f4') of shape [4, 8]");
  EXPECT_NE(d->seen[0].hint.find("astype(bool)"), std::string::npos);
  std::string flat = npy("flat.npy", "|b1", std::vector<std::byte>(8), {8});
  d = bindMask("mask=" + flat);
  EXPECT_TRUE(d->has(DiagCode::BlockMaskArgument, "2-D bool array (NumPy dtype bool, descr '|b1'), got bool ('|b1') "
                                                   "of shape [8]"));
  EXPECT_NE(d->seen[0].hint.find("reshape"), std::string::npos);
  std::string cube = npy("cube.npy", "|b1", std::vector<std::byte>(8), {2, 2, 2});
  EXPECT_TRUE(bindMask("mask=" + cube)->has(DiagCode::BlockMaskArgument, "of shape [2, 2, 2]"));
  std::string scalar = npy("scalar.npy", "|b1", std::vector<std::byte>(1), {});
  EXPECT_TRUE(bindMask("mask=" + scalar)->has(DiagCode::BlockMaskArgument, "of shape []"));
  std::string bytes = npy("u8.npy", "|u1", std::vector<std::byte>(32), {4, 8});
  EXPECT_TRUE(bindMask("mask=" + bytes)->has(DiagCode::BlockMaskArgument, "got uint8 ('|u1') of shape [4, 8]"));

  // Extents and block sizes the layout cannot hold: the builder's reason.
  std::string empty = npy("empty.npy", "|b1", {}, {0, 8});
  d = bindMask("mask=" + empty);
  ASSERT_EQ(d->seen.size(), 1u) << d->out.str();
  EXPECT_EQ(d->seen[0].code, DiagCode::BlockMaskArgument);
  EXPECT_EQ(d->seen[0].message.rfind("--arg mask=" + empty + ": the mask has 0 rows", 0), 0u) << d->seen[0].message;
  EXPECT_NE(d->seen[0].message.find("(mask: block_mask<4, 8>, array of shape [0, 8])"), std::string::npos);
  std::string good = npy("good.npy", "|b1", std::vector<std::byte>(32, std::byte{1}), {4, 8});
  Signature badBlocks = maskSignature();
  badBlocks.masks[0].blockRows = 3;
  EXPECT_TRUE(bindMask("mask=" + good, badBlocks)->has(DiagCode::BlockMaskArgument, "block size 3"));

  // A file that is no .npy at all is the reading error every buffer gets.
  std::ofstream(path("junk.npy")) << "not numpy";
  EXPECT_TRUE(bindMask("mask=" + path("junk.npy"))->has(DiagCode::NpyError, "parameter 'mask': "));
  EXPECT_TRUE(bindMask("mask=" + path("absent.npy"))->has(DiagCode::NpyError, "parameter 'mask': "));

  // The mask's own parameters are not arguments: the whole mask is.
  for (const char *suffix : kBlockMaskParamSuffixes) {
    std::string name = std::string("mask") + suffix;
    Diags e;
    EXPECT_FALSE(bindArguments(maskSignature(), {"x=" + x, "out=" + x, "mask=" + good, name + "=4"}, e.engine));
    ASSERT_EQ(e.seen.size(), 1u) << e.out.str();
    EXPECT_EQ(e.seen[0].code, DiagCode::RunArgument);
    EXPECT_EQ(e.seen[0].message, "kernel 'sparse_rowsum' takes no argument '" + name +
                                     "'; its parameters are x: *f32, out: *f32, mask: block_mask<4, 8>");
    EXPECT_EQ(e.seen[0].hint, name + " is part of block mask 'mask'; pass the whole mask: --arg mask=mask.npy");
  }

  // Missing, repeated and unknown arguments name the mask as the caller passes it.
  Diags e;
  EXPECT_FALSE(bindArguments(maskSignature(), {"x=" + x, "out=" + x, "q=1"}, e.engine));
  EXPECT_TRUE(e.has(DiagCode::RunArgument, "has no parameter 'q'; its parameters are x: *f32, out: *f32, "
                                           "mask: block_mask<4, 8>"));
  EXPECT_TRUE(e.has(DiagCode::RunArgument, "missing argument for parameter 'mask: block_mask<4, 8>'"));
  bool hinted = false;
  for (const Diagnostic &diag : e.seen)
    hinted |= diag.hint.find("--arg mask=FILE.npy") != std::string::npos;
  EXPECT_TRUE(hinted);
  Diags twice;
  EXPECT_FALSE(bindArguments(maskSignature(), {"x=" + x, "out=" + x, "mask=" + good, "mask=" + good}, twice.engine));
  EXPECT_TRUE(twice.has(DiagCode::RunArgument, "parameter 'mask' is given more than once"));
}

// A mask's arrays come from its file but are not it: whatever a launcher marks, the
// write-back leaves the mask file alone and makes no file of its own for them.
TEST_F(TempDir, WriteBackNeverWritesAMasksDerivedBuffers) {
  std::string x = npy("x.npy", "<f4", floats({1, 2}), {1, 2});
  std::string out = npy("out.npy", "<f4", floats({0}), {1});
  const uint8_t kept[] = {1, 0};
  std::string m = npy("m.npy", "|b1", bytesOf(kept, 2), {1, 2});
  const std::string maskBefore = fileBytes(m);
  Diags d;
  auto host = bindArguments(maskSignature(), {"x=" + x, "out=" + out, "mask=" + m}, d.engine);
  ASSERT_TRUE(host) << d.out.str();
  for (HostBuffer &b : host->buffers) {
    std::fill(b.data.begin(), b.data.end(), std::byte{0x5a});
    b.written = true;
  }
  ASSERT_TRUE(writeBack(*host, d.engine)) << d.out.str();
  EXPECT_EQ(fileBytes(m), maskBefore);
  std::string error;
  auto back = readNpy(out, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->data, std::vector<std::byte>(4, std::byte{0x5a}));
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"m.npy", "out.npy", "x.npy"}));
}

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

/// Binds x and y of addSignature() to `x` and `y`, marks both written with new values
/// and writes them back in a child process, as the user nobody when the test runs as
/// root. The child's exit status: 0 when the write-back failed with E0008 naming
/// `failing`; 3: it could not become nobody, 4: binding failed, 5: the write-back
/// succeeded, 6: another error.
int writeBackBothInChild(const std::string &x, const std::string &y, const std::string &failing) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0))
      _exit(3);
    Diags d;
    auto host = bindArguments(addSignature(), {"x=" + x, "y=" + y, "n=2"}, d.engine);
    if (!host)
      _exit(4);
    host->buffers[0].data = floats({7, 8});
    host->buffers[1].data = floats({5, 6});
    host->buffers[0].written = host->buffers[1].written = true;
    if (writeBack(*host, d.engine))
      _exit(5);
    _exit(d.has(DiagCode::FileNotWritable, failing) ? 0 : 6);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

void expectUnchanged(const std::string &x, const std::string &y) {
  std::string error;
  auto xBack = readNpy(x, error);
  auto yBack = readNpy(y, error);
  ASSERT_TRUE(xBack && yBack) << error;
  EXPECT_EQ(xBack->data, floats({1, 2})) << "the first output was replaced";
  EXPECT_EQ(yBack->data, floats({3, 4}));
}

// Two outputs in a sticky folder (as /tmp is), run by an unprivileged user: the first
// is the user's own, the second another user's, which the folder forbids replacing. The
// run fails, and neither file changes: the second is checked before the first is
// replaced.
TEST_F(TempDir, WritesBackNothingWhenASecondFileCannotBeReplaced) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root, to create files for two users and run as one of them";
  std::filesystem::path sticky = dir / "sticky";
  std::filesystem::create_directory(sticky);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  std::string x = npy("sticky/x.npy", "<f4", floats({1, 2}), {2});
  std::string y = npy("sticky/y.npy", "<f4", floats({3, 4}), {2});
  ASSERT_EQ(::chown(x.c_str(), kNobody, kNogroup), 0);
  ASSERT_EQ(::chmod(x.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(y.c_str(), 0666), 0); // writable, but root's: not replaceable by another user here
  EXPECT_EQ(writeBackBothInChild(x, y, "y.npy"), 0);
  expectUnchanged(x, y);
  EXPECT_EQ(static_cast<size_t>(std::distance(std::filesystem::directory_iterator(sticky), {})), 2u)
      << "no temporary file is left behind";
}

// A read-only output is refused, not replaced behind the user's back, and the other
// output stays as it was.
TEST_F(TempDir, WritesBackNothingWhenAFileIsReadOnly) {
  std::string x = npy("x.npy", "<f4", floats({1, 2}), {2});
  std::string y = npy("y.npy", "<f4", floats({3, 4}), {2});
  if (::geteuid() == 0) { // root may write any file: the child runs as nobody, owning all three
    for (const std::string &p : {dir.string(), x, y})
      ASSERT_EQ(::chown(p.c_str(), kNobody, kNogroup), 0);
  }
  ASSERT_EQ(::chmod(y.c_str(), 0444), 0);
  EXPECT_EQ(writeBackBothInChild(x, y, "not writable"), 0);
  expectUnchanged(x, y);
}

TEST(RuntimeMessages, CodesAndLines) {
  EXPECT_EQ(diagCodeFor(KILN_ERROR_ARGUMENT_MISMATCH), DiagCode::RunArgument);
  EXPECT_EQ(diagCodeFor(KILN_ERROR_INVALID_BUNDLE), DiagCode::BadBundle);
  EXPECT_EQ(diagCodeFor(KILN_ERROR_IO), DiagCode::FileNotReadable);
  EXPECT_EQ(diagCodeFor(KILN_ERROR_NO_DRIVER), DiagCode::DeviceError);
  EXPECT_EQ(diagCodeFor(KILN_ERROR_LAUNCH), DiagCode::DeviceError);
  EXPECT_EQ(joinLines("no GPU backend is available:\n  CUDA: a\n  Level Zero: b\n"),
            "no GPU backend is available: CUDA: a; Level Zero: b");

  Diags d;
  reportRuntimeError(d.engine, KILN_ERROR_MODULE_LOAD, "cuModuleLoadDataEx failed\nJIT log:\nline 1\n\nline 2",
                     "a hint");
  ASSERT_EQ(d.seen.size(), 1u);
  EXPECT_EQ(d.seen[0].code, DiagCode::DeviceError);
  EXPECT_EQ(d.seen[0].message, "cuModuleLoadDataEx failed");
  EXPECT_EQ(d.seen[0].hint, "a hint");
  ASSERT_EQ(d.seen[0].notes.size(), 3u);
  EXPECT_EQ(d.seen[0].notes[0].message, "JIT log:");
  EXPECT_EQ(d.seen[0].notes[2].message, "line 2");
}

TEST(Runtime, NoDriverIsAnOrdinaryError) {
  ::setenv("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ::setenv("KILN_ZE_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
  for (GpuKind kind : {GpuKind::Cuda, GpuKind::LevelZero, GpuKind::Auto}) {
    OpenedRuntime r = openRuntime(kind);
    EXPECT_FALSE(r.runtime);
    EXPECT_EQ(r.status, KILN_ERROR_NO_DRIVER);
    EXPECT_NE(r.error.find(kind == GpuKind::LevelZero ? "no Level Zero driver" : "no CUDA driver"), std::string::npos)
        << r.error;
  }
  EXPECT_EQ(parseGpuKind("cuda"), GpuKind::Cuda);
  EXPECT_EQ(parseGpuKind("ze"), GpuKind::LevelZero);
  EXPECT_EQ(parseGpuKind("auto"), GpuKind::Auto);
  EXPECT_FALSE(parseGpuKind("interp"));
}

} // namespace
} // namespace kiln::launch
