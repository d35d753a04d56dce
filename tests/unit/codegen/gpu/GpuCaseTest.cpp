//===- GpuCaseTest.cpp - The GPU check's case files and comparison ---------===//
//
// What kiln-gpu-run decides without a GPU: case.txt round trips, a GPU result is judged
// against the interpreter's .npy with the buffer's tolerance (NaN and infinities in the
// same places), and the spec lines that describe the inputs.
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/KernelCase.h"
#include "tests/unit/codegen/gpu/CaseCheck.h"
#include "tests/unit/codegen/gpu/GpuCase.h"

#include "support/FloatFormats.h"
#include "support/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

namespace kiln::gputest {
namespace {

namespace fs = std::filesystem;

TEST(GpuCaseFile, RoundTrips) {
  GpuCase c;
  c.source = "tests/gpu/programs/math.unary.spec";
  c.seed = 1234567890123ull;
  c.grid = {8, 2, 3};
  c.bundles = {"sm_80.kbin", "sm_90a.kbin"};
  c.args.push_back({"x", DType::F16, true, 983, 2e-3, 1e-3, ""});
  c.args.push_back({"n", DType::I32, false, 0, 0, 0, "-983"});
  c.args.push_back({"eps", DType::F32, false, 0, 0, 0, scalarText(DType::F32, roundToFloatDType(DType::F32, 1e-5))});
  c.args.push_back({"out", DType::U32, true, 7, 0, 0, "", /*zeroInput=*/true});
  std::string error;
  std::optional<GpuCase> back = readCase(writeCase(c), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->source, c.source);
  EXPECT_EQ(back->seed, c.seed);
  EXPECT_EQ(back->grid, c.grid);
  EXPECT_EQ(back->bundles, c.bundles);
  ASSERT_EQ(back->args.size(), 4u);
  EXPECT_EQ(back->args[0].name, "x");
  EXPECT_EQ(back->args[0].dtype, DType::F16);
  EXPECT_TRUE(back->args[0].isBuffer);
  EXPECT_EQ(back->args[0].count, 983);
  EXPECT_EQ(back->args[0].rtol, 2e-3);
  EXPECT_EQ(back->args[0].atol, 1e-3);
  EXPECT_EQ(back->args[1].value, "-983");
  EXPECT_FALSE(back->args[1].isBuffer);
  // The f32 value survives exactly: the runtime refuses scalars it would have to round.
  EXPECT_EQ(static_cast<float>(std::stod(back->args[2].value)), 1e-5f);
  EXPECT_EQ(std::stod(back->args[2].value), static_cast<double>(1e-5f));
  // An all-zero input travels as a flag, not a file.
  EXPECT_FALSE(back->args[0].zeroInput);
  EXPECT_TRUE(back->args[3].zeroInput);
  EXPECT_EQ(back->args[3].count, 7);
}

TEST(GpuCaseFile, RejectsMalformedLinesNamingThem) {
  std::string error;
  EXPECT_FALSE(readCase("grid 1 1 1\nbundle a.kbin\nbuffer x f33 4 0 0\n", error));
  EXPECT_NE(error.find("case.txt:3: unknown dtype 'f33'"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\ngrid 1 x 1\n", error));
  EXPECT_NE(error.find("case.txt:2: malformed line"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\nscalar n i32 4 5\n", error));
  EXPECT_NE(error.find("malformed line"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\nthreads 128\n", error));
  EXPECT_NE(error.find("unknown line: threads 128"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\nbuffer x f32 4 0 0 zeros\n", error));
  EXPECT_NE(error.find("unknown buffer flag 'zeros'"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\nbuffer x f32 4 0 x zero\n", error));
  EXPECT_NE(error.find("malformed line"), std::string::npos) << error;
  EXPECT_FALSE(readCase("bundle a.kbin\nbuffer x f32 4 0 0 zero zero\n", error));
  EXPECT_NE(error.find("malformed line"), std::string::npos) << error;
  EXPECT_FALSE(readCase("grid 1 1 1\n", error));
  EXPECT_EQ(error, "case.txt names no bundle");
}

TEST(GpuCaseFile, ScalarTextIsExact) {
  EXPECT_EQ(scalarText(DType::I64, -5000000600.0), "-5000000600");
  EXPECT_EQ(scalarText(DType::U64, 18446744073709549568.0), "18446744073709549568");
  EXPECT_EQ(scalarText(DType::F32, std::nan("")), "nan");
  EXPECT_EQ(scalarText(DType::F16, -INFINITY), "-inf");
  EXPECT_EQ(std::stod(scalarText(DType::F64, 0.1)), 0.1);
}

/// A temporary case folder with expected .npy files.
class CheckBuffer : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("kiln-gpu-case-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  template <typename T> static std::vector<std::byte> bytes(const std::vector<T> &v) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  /// Writes NAME.expected.npy and returns the argument describing it.
  template <typename T>
  CaseArg expect(const std::string &name, DType dtype, const std::vector<T> &values, double rtol, double atol) {
    NpyArray a;
    a.descr = npyDescrFor(dtype);
    a.shape = {static_cast<int64_t>(values.size())};
    a.data = bytes(values);
    std::string error;
    EXPECT_TRUE(writeNpyAtomic((dir / expectedFile(name)).string(), a, error)) << error;
    return CaseArg{name, dtype, true, static_cast<int64_t>(values.size()), rtol, atol, ""};
  }

  fs::path dir;
};

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST_F(CheckBuffer, FloatsWithinTheirToleranceAgree) {
  CaseArg y = expect<float>("y", DType::F32, {1.0f, -2.0f, 1000.0f, 0.0f}, 1e-5, 1e-6);
  EXPECT_EQ(checkBuffer(dir, y, bytes<float>({1.000005f, -2.00001f, 1000.009f, 5e-7f})), "");
  std::string r = checkBuffer(dir, y, bytes<float>({1.0f, -2.0f, 1000.02f, 0.0f}));
  EXPECT_NE(r.find("y[2]: expected 1000, got 1000.02"), std::string::npos) << r;
  EXPECT_NE(r.find("(1 of 4 elements of 'y' differ)"), std::string::npos) << r;
}

TEST_F(CheckBuffer, NaNAndInfinitiesMustBeWhereTheInterpreterHasThem) {
  // A huge tolerance does not excuse a NaN or an infinity in the wrong place.
  CaseArg y = expect<float>("y", DType::F32, {kNaN, kInf, -kInf, 3.0f}, 1.0, 1e30);
  EXPECT_EQ(checkBuffer(dir, y, bytes<float>({kNaN, kInf, -kInf, 3.5f})), "");
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({0.0f, kInf, -kInf, 3.0f})).find("y[0]"), std::string::npos);
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({kNaN, -kInf, -kInf, 3.0f})).find("y[1]"), std::string::npos);
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({kNaN, kInf, -3e38f, 3.0f})).find("y[2]"), std::string::npos);
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({kNaN, kInf, -kInf, kNaN})).find("y[3]"), std::string::npos);
}

TEST_F(CheckBuffer, BitExactWithoutToleranceIncludingTheSignOfZero) {
  CaseArg y = expect<float>("y", DType::F32, {0.0f, 1.0f}, 0, 0);
  EXPECT_EQ(checkBuffer(dir, y, bytes<float>({0.0f, 1.0f})), "");
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({-0.0f, 1.0f})), "");
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({0.0f, std::nextafter(1.0f, 2.0f)})), "");
}

TEST_F(CheckBuffer, IntegersAreExactWhateverTheTolerance) {
  CaseArg k = expect<int32_t>("k", DType::I32, {7, -3, 1 << 30}, 0.5, 10);
  EXPECT_EQ(checkBuffer(dir, k, bytes<int32_t>({7, -3, 1 << 30})), "");
  std::string r = checkBuffer(dir, k, bytes<int32_t>({7, -3, (1 << 30) + 1}));
  EXPECT_NE(r.find("k[2]"), std::string::npos) << r;
}

TEST_F(CheckBuffer, NarrowFloatsCompareAsTheirValues) {
  // bf16 travels as raw '|V2' elements; 1.0 is 0x3f80, its neighbours 0x3f7f / 0x3f81.
  CaseArg b = expect<uint16_t>("b", DType::BF16, {0x3f80, 0x4000}, 1e-2, 0);
  EXPECT_EQ(checkBuffer(dir, b, bytes<uint16_t>({0x3f81, 0x4000})), "");
  EXPECT_NE(checkBuffer(dir, b, bytes<uint16_t>({0x3fa0, 0x4000})).find("b[0]"), std::string::npos);
}

TEST_F(CheckBuffer, ReportsAnExpectedFileThatDoesNotFit) {
  CaseArg y = expect<float>("y", DType::F32, {1.0f, 2.0f}, 0, 0);
  CaseArg asInt = y;
  asInt.dtype = DType::I32;
  EXPECT_NE(checkBuffer(dir, asInt, bytes<int32_t>({1, 2})).find("y.expected.npy holds float32"), std::string::npos);
  CaseArg longer = y;
  longer.count = 3;
  EXPECT_NE(checkBuffer(dir, longer, bytes<float>({1, 2, 3})).find("holds 2 elements, case.txt says 3"),
            std::string::npos);
  CaseArg missing = y;
  missing.name = "z";
  EXPECT_NE(checkBuffer(dir, missing, bytes<float>({1, 2})).find("z.expected.npy"), std::string::npos);
  // An input left unchanged has no expected file: the input is what is expected.
  {
    NpyArray in;
    in.descr = npyDescrFor(DType::F32);
    in.shape = {2};
    in.data = bytes<float>({5, 6});
    std::string error;
    ASSERT_TRUE(writeNpyAtomic((dir / inputFile("w")).string(), in, error)) << error;
    const CaseArg unchanged{"w", DType::F32, true, 2, 1e-6, 0, ""};
    EXPECT_EQ(checkBuffer(dir, unchanged, bytes<float>({5, 6})), "");
    EXPECT_NE(checkBuffer(dir, unchanged, bytes<float>({5, 7})), "");
  }
  // A GPU buffer of the wrong size is a mismatch, not a crash.
  EXPECT_NE(checkBuffer(dir, y, bytes<float>({1.0f})), "");
}

// ---- the spec lines the inputs come from --------------------------------------------

double elementAt(const interp::Buffer &b, int64_t i) {
  if (b.dtype == DType::F32) {
    float f;
    std::memcpy(&f, b.data.data() + i * 4, 4);
    return f;
  }
  int32_t v;
  std::memcpy(&v, b.data.data() + i * 4, 4);
  return v;
}

TEST(CaseSpecFills, LeadingValuesThenTheRandomFill) {
  std::string error;
  auto spec = spirvtest::parseCaseSpec("// @arg x f32[300] normal 10 0.5 then nan -inf 1e-40 -0.0\n"
                                       "// @arg k i32[300] ints -3 3 then 2147483647\n"
                                       "// @arg s f32[300] signed 1 2\n",
                                       error);
  ASSERT_TRUE(spec) << error;
  std::vector<interp::Buffer> buffers;
  std::vector<interp::KernelArg> args;
  spirvtest::makeInputs(*spec, 42, buffers, args);
  ASSERT_EQ(buffers.size(), 3u);
  const interp::Buffer &x = buffers[0], &k = buffers[1], &s = buffers[2];
  EXPECT_TRUE(std::isnan(elementAt(x, 0)));
  EXPECT_EQ(elementAt(x, 1), -INFINITY);
  EXPECT_EQ(elementAt(x, 2), static_cast<double>(1e-40f)); // an f32 subnormal
  EXPECT_TRUE(elementAt(x, 3) == 0 && std::signbit(elementAt(x, 3)));
  double sum = 0;
  for (int i = 4; i < 300; ++i)
    sum += elementAt(x, i);
  EXPECT_NEAR(sum / 296, 10.0, 0.2);
  EXPECT_EQ(elementAt(k, 0), 2147483647);
  bool sawLow = false, sawHigh = false;
  for (int i = 1; i < 300; ++i) {
    EXPECT_GE(elementAt(k, i), -3);
    EXPECT_LE(elementAt(k, i), 3);
    sawLow |= elementAt(k, i) == -3;
    sawHigh |= elementAt(k, i) == 3;
  }
  EXPECT_TRUE(sawLow && sawHigh) << "ints includes both ends";
  bool sawNegative = false, sawPositive = false;
  for (int i = 0; i < 300; ++i) {
    EXPECT_GE(std::fabs(elementAt(s, i)), 1.0);
    EXPECT_LT(std::fabs(elementAt(s, i)), 2.0);
    (elementAt(s, i) < 0 ? sawNegative : sawPositive) = true;
  }
  EXPECT_TRUE(sawNegative && sawPositive);
}

TEST(CaseSpecFills, BitsCoverTheWholeIntegerRange) {
  std::string error;
  auto spec = spirvtest::parseCaseSpec("// @arg b u64[64] bits then 5\n", error);
  ASSERT_TRUE(spec) << error;
  std::vector<interp::Buffer> buffers;
  std::vector<interp::KernelArg> args;
  spirvtest::makeInputs(*spec, 7, buffers, args);
  std::vector<uint64_t> v(64);
  std::memcpy(v.data(), buffers[0].data.data(), 64 * 8);
  EXPECT_EQ(v[0], 5u);
  int top = 0;
  for (int i = 1; i < 64; ++i)
    top += static_cast<int>(v[i] >> 63);
  EXPECT_GT(top, 10); // about half have the top bit set; a value fill would have none
  EXPECT_LT(top, 53);
}

TEST(CaseSpecFills, IntegerScalarsAreExactBeyondTwoToThe53) {
  // A double holds integers exactly only up to 2^53: a u64 seed of all ones or an odd
  // i64 above it must reach the kernel bit for bit, in case.txt as in the SPIR-V ABI.
  std::string error;
  auto spec = spirvtest::parseCaseSpec(
      "// @arg seed u64 18446744073709551615\n// @arg k i64 -9007199254740993\n// @arg c u32 4294967295\n", error);
  ASSERT_TRUE(spec) << error;
  EXPECT_EQ(spec->args[0].intValue, -1);
  EXPECT_EQ(spec->args[1].intValue, -9007199254740993);
  EXPECT_EQ(integerText(DType::U64, spec->args[0].intValue), "18446744073709551615");
  EXPECT_EQ(integerText(DType::I64, spec->args[1].intValue), "-9007199254740993");
  EXPECT_EQ(integerText(DType::U32, -1), "4294967295");
  EXPECT_EQ(spirvtest::scalarBytes(DType::U32, spec->args[2]), (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff}));
  EXPECT_FALSE(spirvtest::parseCaseSpec("// @arg k i32 1.5\n", error));
}

TEST(CaseSpecFills, ToleranceByDtypeOverridesTheGeneralOne) {
  std::string error;
  auto spec = spirvtest::parseCaseSpec("// @tol 1e-5 1e-7\n// @tol f16 2e-3 1e-3\n", error);
  ASSERT_TRUE(spec) << error;
  EXPECT_EQ(spirvtest::toleranceFor(*spec, DType::F16), std::make_pair(2e-3, 1e-3));
  EXPECT_EQ(spirvtest::toleranceFor(*spec, DType::F32), std::make_pair(1e-5, 1e-7));
}

TEST(CaseSpecFills, RejectsWhatItCannotMake) {
  std::string error;
  EXPECT_FALSE(spirvtest::parseCaseSpec("// @arg x f32[4] gauss 0 1\n", error));
  EXPECT_NE(error.find("unknown fill 'gauss'"), std::string::npos) << error;
  EXPECT_FALSE(spirvtest::parseCaseSpec("// @arg x f32[4] uniform 0 1 then one\n", error));
  EXPECT_NE(error.find("malformed test directive"), std::string::npos) << error;
  EXPECT_FALSE(spirvtest::parseCaseSpec("// @tol f16 x 1\n", error));
  EXPECT_FALSE(spirvtest::parseCaseSpec("// @arg n i32 ten\n", error));
}

} // namespace
} // namespace kiln::gputest
