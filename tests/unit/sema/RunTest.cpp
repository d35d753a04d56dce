//===- RunTest.cpp - Compiled Kiln kernels executed on the interpreter ----===//
//
// End-to-end: source -> semantic analysis -> Tile IR -> reference interpreter, with the
// expected results computed here in C++ from the same inputs.
//
//===----------------------------------------------------------------------===//
#include "SemaTestUtil.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace kiln;
using namespace kiln::test;
using interp::KernelArg;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v)
    x = dist(rng);
  return v;
}

TEST(RunTest, VectorAddExampleOverSeveralPrograms) {
  std::ostringstream sink;
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, sink);
  SemaOptions opts;
  opts.defines = {{"BLOCK", "64"}};
  auto m = compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/examples/vector_add.kiln", diags,
                               opts, sources);
  ASSERT_TRUE(m) << sink.str();
  const int n = 150;
  auto x = randomFloats(n, 1), y = randomFloats(n, 2);
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F32, x), makeBuffer(DType::F32, y),
                                      makeBuffer(DType::F32, std::vector<float>(n, -7))};
  ASSERT_TRUE(run(
      *m->kernels[0],
      {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2), KernelArg::ofInt(n)},
      bufs, {3, 1, 1}));
  auto out = readBuffer<float>(bufs[2]);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(out[i], x[i] + y[i]) << i;
}

TEST(RunTest, SoftmaxExample) {
  std::ostringstream sink;
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, sink);
  SemaOptions opts;
  opts.defines = {{"BLOCK", "32"}};
  auto m = compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/examples/softmax.kiln", diags, opts,
                               sources);
  ASSERT_TRUE(m) << sink.str();
  const int rows = 3, cols = 20;
  auto x = randomFloats(rows * cols, 3, -5, 5);
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F32, x),
                                      makeBuffer(DType::F32, std::vector<float>(rows * cols))};
  ASSERT_TRUE(run(*m->kernels[0],
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofInt(cols),
                   KernelArg::ofInt(cols)},
                  bufs, {rows, 1, 1}));
  auto y = readBuffer<float>(bufs[1]);
  for (int r = 0; r < rows; ++r) {
    float mx = *std::max_element(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    double denom = 0;
    for (int c = 0; c < cols; ++c)
      denom += std::exp(x[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c)
      EXPECT_NEAR(y[r * cols + c], std::exp(x[r * cols + c] - mx) / denom, 1e-6);
  }
}

TEST(RunTest, MatmulExampleWithRaggedSizes) {
  std::ostringstream sink;
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, sink);
  SemaOptions opts;
  opts.defines = {{"BM", "16"}, {"BN", "16"}, {"BK", "8"}};
  auto m = compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/examples/matmul.kiln", diags, opts,
                               sources);
  ASSERT_TRUE(m) << sink.str();
  const int M = 20, N = 18, K = 13;
  auto a = randomFloats(M * K, 4), b = randomFloats(K * N, 5);
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F32, a), makeBuffer(DType::F32, b),
                                      makeBuffer(DType::F32, std::vector<float>(M * N))};
  ASSERT_TRUE(run(*m->kernels[0],
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2),
                   KernelArg::ofInt(M), KernelArg::ofInt(N), KernelArg::ofInt(K)},
                  bufs, {2, 2, 1}));
  auto c = readBuffer<float>(bufs[2]);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k)
        ref += double(a[i * K + k]) * b[k * N + j];
      EXPECT_NEAR(c[i * N + j], ref, 1e-4) << i << "," << j;
    }
}

TEST(RunTest, LoopsCarryVarsCorrectly) {
  auto c = compile(R"(
kernel k(out: *i32, n: i32) {
    var s = 0;
    var p = 1;
    for i in range(1, n + 1) {
        s += i;
        if i % 2 == 0 { p *= 2; }
    }
    var w = 0;
    var steps = 0;
    while w < 100 { w += n; steps += 1; }
    var down = 0;
    for j in range(10, 0, -3) { down = down * 100 + j; }
    store(out, s);
    store(out + 1, p);
    store(out + 2, steps);
    store(out + 3, down);
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::I32, std::vector<int32_t>(4))};
  ASSERT_TRUE(run(c.kernel("k"), {KernelArg::ofBuffer(0), KernelArg::ofInt(7)}, bufs));
  auto out = readBuffer<int32_t>(bufs[0]);
  EXPECT_EQ(out[0], 28);       // 1 + ... + 7
  EXPECT_EQ(out[1], 8);        // three even i
  EXPECT_EQ(out[2], 15);       // ceil(100 / 7)
  EXPECT_EQ(out[3], 10070401); // 10, 7, 4, 1
}

TEST(RunTest, StaticRangeAndConstantConditions) {
  SemaOptions o;
  o.defines = {{"MODE", "2"}};
  auto c = compile(R"(
kernel k(out: *i32, const MODE: i32 = 0) {
    var acc = 0;
    for s in static_range(0, 5) {
        if s % 2 == 0 { acc += sum(arange(0, s + 1)); }
    }
    if MODE == 1 { store(out, -1); } else if MODE == 2 { store(out, acc); } else { store(out, -2); }
}
)",
                   o);
  ASSERT_TRUE(c.ok) << c.diagText();
  EXPECT_EQ(c.ir.find(" if "), std::string::npos) << c.ir;
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::I32, std::vector<int32_t>(1))};
  ASSERT_TRUE(run(c.kernel("k"), {KernelArg::ofBuffer(0)}, bufs));
  EXPECT_EQ(readBuffer<int32_t>(bufs[0])[0], 0 + 3 + 10); // s = 0, 2, 4
}

TEST(RunTest, IntegerDivisionTruncatesAndLiteralsAdopt) {
  auto c = compile(R"(
kernel k(out: *i32, f: *f32, b: *bf16, a: i32, d: i32) {
    store(out, a / d);
    store(out + 1, a % d);
    store(out + 2, a / 0);
    store(f, a.to(f32) / d);
    store(f + 1, a * 0.5);
    store(b, load(b) * 0.5);
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<interp::Buffer> bufs = {
      makeBuffer(DType::I32, std::vector<int32_t>(3)),
      makeBuffer(DType::F32, std::vector<float>(2)),
      makeBuffer(DType::BF16, std::vector<uint16_t>{0x4040})}; // bf16 3.0
  ASSERT_TRUE(run(c.kernel("k"),
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2),
                   KernelArg::ofInt(-7), KernelArg::ofInt(2)},
                  bufs));
  auto out = readBuffer<int32_t>(bufs[0]);
  EXPECT_EQ(out[0], -3);
  EXPECT_EQ(out[1], -1);
  EXPECT_EQ(out[2], 0);
  auto f = readBuffer<float>(bufs[1]);
  EXPECT_EQ(f[0], -3.5f);
  EXPECT_EQ(f[1], -3.5f);
  EXPECT_EQ(readBuffer<uint16_t>(bufs[2])[0], 0x3FC0); // bf16 1.5
}

TEST(RunTest, FnsReductionsScansAndSorting) {
  auto c = compile(R"(
fn mul(a, b) { return a * b; }
fn sq(x) { return x * x; }
kernel k(x: *f32, out: *f32, idx: *i32) {
    let r = arange(0, 8);
    let v = load(x + r);
    store(out, reduce(v, 0, mul));
    store(out + 1, sum(sq(v)));
    store(out + 2, max(v));
    store(out + 3, min(v));
    store(out + 8 + r, cumsum(v));
    store(out + 16 + r, sort(v, descending = true));
    store(out + 24 + arange(0, 3), topk(v, 3));
    store(idx, argmax(v));
    store(idx + 1, argmin(v));
    store(idx + 2 + arange(0, 3), argtopk(v, 3));
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<float> x = {3, -1, 4, 1.5, -5, 9, 2, 6};
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F32, x),
                                      makeBuffer(DType::F32, std::vector<float>(32)),
                                      makeBuffer(DType::I32, std::vector<int32_t>(5))};
  ASSERT_TRUE(run(c.kernel("k"),
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2)}, bufs));
  auto out = readBuffer<float>(bufs[1]);
  float prod = 1, sumsq = 0, run = 0;
  for (float v : x)
    prod *= v, sumsq += v * v;
  EXPECT_EQ(out[0], prod);
  EXPECT_EQ(out[1], sumsq);
  EXPECT_EQ(out[2], 9);
  EXPECT_EQ(out[3], -5);
  for (int i = 0; i < 8; ++i) {
    run += x[i];
    EXPECT_EQ(out[8 + i], run);
  }
  std::vector<float> sorted = x;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(out[16 + i], sorted[i]);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out[24 + i], sorted[i]);
  auto idx = readBuffer<int32_t>(bufs[2]);
  EXPECT_EQ(idx[0], 5);
  EXPECT_EQ(idx[1], 4);
  EXPECT_EQ(idx[2], 5);
  EXPECT_EQ(idx[3], 7);
  EXPECT_EQ(idx[4], 2);
}

TEST(RunTest, MasksOtherAndBroadcastStores) {
  auto c = compile(R"(
kernel k(x: *i16, out: *i32, n: i32) {
    let r = arange(0, 4);
    let c = arange(0, 8);
    let m = c[None, :] < n;
    let v = load(x + r[:, None] * 8 + c[None, :], mask = m, other = -1);
    store(out + r[:, None] * 8 + c[None, :], v.to(i32) * 10);
    store(out + 32 + c, sum(v, axis = 0));
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<int16_t> x(32);
  std::iota(x.begin(), x.end(), 0);
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::I16, x),
                                      makeBuffer(DType::I32, std::vector<int32_t>(40))};
  ASSERT_TRUE(run(c.kernel("k"),
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofInt(5)}, bufs));
  auto out = readBuffer<int32_t>(bufs[1]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out[i * 8 + j], j < 5 ? x[i * 8 + j] * 10 : -10);
  for (int j = 0; j < 8; ++j) {
    int expected = 0;
    for (int i = 0; i < 4; ++i)
      expected += j < 5 ? x[i * 8 + j] : -1;
    EXPECT_EQ(out[32 + j], expected) << j;
  }
}

TEST(RunTest, AtomicsAcrossPrograms) {
  auto c = compile(R"(
kernel k(counter: *i32, hist: *i32) {
    let old = atomic_add(counter, 1);
    atomic_max(hist, old);
    atomic_add(hist + 1 + arange(0, 4), arange(0, 4));
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::I32, std::vector<int32_t>(1)),
                                      makeBuffer(DType::I32, std::vector<int32_t>(5))};
  ASSERT_TRUE(
      run(c.kernel("k"), {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1)}, bufs, {6, 1, 1}));
  EXPECT_EQ(readBuffer<int32_t>(bufs[0])[0], 6);
  auto h = readBuffer<int32_t>(bufs[1]);
  EXPECT_EQ(h[0], 5);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(h[1 + i], 6 * i);
}

TEST(RunTest, PrintAndAssert) {
  auto c = compile(R"(
kernel k(x: *f32, n: i32) {
    print("n", n);
    assert(load(x) > 0.0, "x must be positive");
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F32, std::vector<float>{1.0f})};
  std::string printed, errors;
  ASSERT_TRUE(run(c.kernel("k"), {KernelArg::ofBuffer(0), KernelArg::ofInt(42)}, bufs, {1, 1, 1},
                  &printed, &errors));
  EXPECT_NE(printed.find("42"), std::string::npos) << printed;
  std::vector<interp::Buffer> bad = {makeBuffer(DType::F32, std::vector<float>{-1.0f})};
  EXPECT_FALSE(run(c.kernel("k"), {KernelArg::ofBuffer(0), KernelArg::ofInt(1)}, bad, {1, 1, 1},
                   &printed, &errors));
  EXPECT_NE(errors.find("x must be positive"), std::string::npos) << errors;
}

TEST(RunTest, DotWithAccumulatorAndTranspose) {
  auto c = compile(R"(
kernel k(a: *f16, b: *f16, out: *f32) {
    let r = arange(0, 4);
    let x = load(a + r[:, None] * 4 + r[None, :]);
    let y = load(b + r[:, None] * 4 + r[None, :]);
    let acc = full([4, 4], 1.0, f32);
    store(out + r[:, None] * 4 + r[None, :], dot(x, trans(y), acc));
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  // Small integers are exact in f16: 0x3C00 = 1.0, 0x4000 = 2.0, 0x4200 = 3.0.
  std::vector<uint16_t> a(16), b(16);
  std::vector<float> av(16), bv(16);
  const uint16_t bits[] = {0x0000, 0x3C00, 0x4000, 0x4200};
  for (int i = 0; i < 16; ++i) {
    a[i] = bits[i % 4], av[i] = float(i % 4);
    b[i] = bits[(i / 4) % 4], bv[i] = float((i / 4) % 4);
  }
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::F16, a), makeBuffer(DType::F16, b),
                                      makeBuffer(DType::F32, std::vector<float>(16))};
  ASSERT_TRUE(run(c.kernel("k"),
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofBuffer(2)}, bufs));
  auto out = readBuffer<float>(bufs[2]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      float ref = 1;
      for (int k = 0; k < 4; ++k)
        ref += av[i * 4 + k] * bv[j * 4 + k]; // y transposed: y[j][k]
      EXPECT_EQ(out[i * 4 + j], ref) << i << "," << j;
    }
}

TEST(RunTest, NestedLoopsIfsAndTileVars) {
  auto c = compile(R"(
fn add(a, b) { return a + b; }
kernel k(x: *i32, out: *i32, n: i32) {
    let r = arange(0, 4);
    var acc = zeros([4], i32);
    var total = 0;
    for i in range(n) {
        for j in range(i) {
            acc += load(x + j * 4 + r);
            total += 1;
        }
        if i % 2 == 1 { acc = acc * 2; } else { total += 100; }
    }
    var w = zeros([4], i32);
    while sum(w) < 20 { w += r; }
    let m = load(x + r) > 2;
    store(out + r, acc);
    store(out + 4, total);
    store(out + 5 + r, w);
    store(out + 9, sum(m));
    store(out + 10 + r, scan(r + 1, 0, add));
    let grid = reshape(arange(0, 6), [2, 3]);
    store(out + 14 + arange(0, 3), sum(grid, axis = -2));
    store(out + 17 + arange(0, 2), max(grid, axis = -1));
}
)");
  ASSERT_TRUE(c.ok) << c.diagText();
  std::vector<int32_t> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = i;
  const int n = 4;
  std::vector<interp::Buffer> bufs = {makeBuffer(DType::I32, x),
                                      makeBuffer(DType::I32, std::vector<int32_t>(19))};
  ASSERT_TRUE(run(c.kernel("k"),
                  {KernelArg::ofBuffer(0), KernelArg::ofBuffer(1), KernelArg::ofInt(n)}, bufs));
  auto out = readBuffer<int32_t>(bufs[1]);
  int acc[4] = {0, 0, 0, 0}, total = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      for (int l = 0; l < 4; ++l)
        acc[l] += x[j * 4 + l];
      total += 1;
    }
    if (i % 2 == 1)
      for (int &a : acc)
        a *= 2;
    else
      total += 100;
  }
  for (int l = 0; l < 4; ++l)
    EXPECT_EQ(out[l], acc[l]) << l;
  EXPECT_EQ(out[4], total);
  int w[4] = {0, 0, 0, 0};
  while (w[0] + w[1] + w[2] + w[3] < 20)
    for (int l = 0; l < 4; ++l)
      w[l] += l;
  for (int l = 0; l < 4; ++l)
    EXPECT_EQ(out[5 + l], w[l]);
  EXPECT_EQ(out[9], 1); // only x[3] = 3 is > 2
  EXPECT_EQ(out[10], 1);
  EXPECT_EQ(out[11], 3);
  EXPECT_EQ(out[12], 6);
  EXPECT_EQ(out[13], 10);
  EXPECT_EQ(out[14], 0 + 3);
  EXPECT_EQ(out[15], 1 + 4);
  EXPECT_EQ(out[16], 2 + 5);
  EXPECT_EQ(out[17], 2);
  EXPECT_EQ(out[18], 5);
}

} // namespace
