//===- Problem.cpp - Inputs, launch and CPU check of each workload kind ---===//
//
// Inputs are uniform random numbers from a fixed-seed generator. Outputs are poisoned
// with 0xFF bytes (NaN in every float format) before the checked launch, so an element
// the kernel never wrote fails the check. Where a full reference would take minutes on
// the CPU (matrix products), sampled elements are compared; every output element is
// still checked to have been written.
//
//===----------------------------------------------------------------------===//
#include "bench/Problem.h"

#include "support/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::bench {

//===--------------------------------------------------------------------===//
// Host data
//===--------------------------------------------------------------------===//

/// splitmix64: fast, and good enough for benchmark inputs.
class Random {
public:
  explicit Random(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }

private:
  uint64_t s_;
};

static uint16_t toBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1); // round to nearest even (inputs are finite)
  return static_cast<uint16_t>(u >> 16);
}

static double fromBF16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static std::vector<float> randomF32(size_t n, Random &r, float lo, float hi) {
  std::vector<float> v(n);
  for (float &x : v)
    x = r.uniform(lo, hi);
  return v;
}

static std::vector<uint16_t> randomBF16(size_t n, Random &r, float lo, float hi) {
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = toBF16(r.uniform(lo, hi));
  return v;
}

template <typename T> static Buffer upload(Runtime &rt, const std::vector<T> &host, kiln_dtype dtype) {
  kiln_buffer *h = nullptr;
  detail::check(kiln_buffer_alloc(rt.handle(), host.size() * sizeof(T), dtype, &h));
  Buffer b(h);
  b.write(host.data(), host.size() * sizeof(T));
  return b;
}

static Buffer allocate(Runtime &rt, size_t bytes, kiln_dtype dtype) {
  kiln_buffer *h = nullptr;
  detail::check(kiln_buffer_alloc(rt.handle(), bytes, dtype, &h));
  return Buffer(h);
}

static kiln_arg bufferArg(const Buffer &b) { return detail::toArg(b); }
static kiln_arg intArg(int64_t v) { return detail::toArg(v); }

//===--------------------------------------------------------------------===//
// Comparison
//===--------------------------------------------------------------------===//

/// Accumulates |out - ref| against `atol + rtol * |ref|` and the relative L2 error.
class Comparison {
public:
  Comparison(double rtol, double atol) : rtol_(rtol), atol_(atol) {}
  void add(double out, double ref, const std::string &where) {
    ++n_;
    diff2_ += (out - ref) * (out - ref);
    ref2_ += ref * ref;
    if (!(std::fabs(out - ref) <= atol_ + rtol_ * std::fabs(ref)) && message_.empty())
      message_ = where + ": got " + std::to_string(out) + ", expected " + std::to_string(ref);
  }
  void fail(const std::string &why) {
    if (message_.empty())
      message_ = why;
  }
  CheckResult result() const {
    CheckResult r;
    r.checked = n_;
    r.relError = ref2_ > 0 ? std::sqrt(diff2_ / ref2_) : std::sqrt(diff2_);
    r.message = message_;
    r.ok = message_.empty();
    return r;
  }

private:
  double rtol_, atol_;
  double diff2_ = 0, ref2_ = 0;
  int64_t n_ = 0;
  std::string message_;
};

/// Every element of a bf16 output was written (the poison is NaN) and is finite.
static void checkAllFinite(const std::vector<uint16_t> &out, Comparison &cmp) {
  for (size_t i = 0; i < out.size(); ++i)
    if ((out[i] & 0x7F80) == 0x7F80) {
      cmp.fail("element " + std::to_string(i) + " is not finite (unwritten?)");
      return;
    }
}

/// `count` row indices spread over [0, rows), first and last included.
static std::vector<int64_t> sampleRows(int64_t rows, int64_t count) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < count; ++i)
    r.push_back(count == 1 ? 0 : i * (rows - 1) / (count - 1));
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

//===--------------------------------------------------------------------===//
// Vector add
//===--------------------------------------------------------------------===//

class VectorAddProblem final : public Problem {
public:
  VectorAddProblem(Runtime &rt, const Workload &w, Random &r) : n_(w.rows) {
    hx_ = randomF32(n_, r, -1, 1);
    hy_ = randomF32(n_, r, -1, 1);
    x_ = upload(rt, hx_, KILN_DTYPE_F32);
    y_ = upload(rt, hy_, KILN_DTYPE_F32);
    out_ = allocate(rt, n_ * 4, KILN_DTYPE_F32);
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(x_), bufferArg(y_), bufferArg(out_), intArg(n_)};
  }
  Grid grid(const Workload &w) const override {
    const int64_t block = std::stoll(w.defines.at(0).second);
    return Grid((n_ + block - 1) / block);
  }
  void poisonOutputs() override { out_.fill(0xFF); }
  CheckResult check() const override {
    std::vector<float> out = out_.download<float>();
    Comparison cmp(0, 0); // f32 addition is exact to compare
    for (int64_t i = 0; i < n_; ++i)
      if (out[i] != hx_[i] + hy_[i]) {
        cmp.add(out[i], double(hx_[i] + hy_[i]), "out[" + std::to_string(i) + "]");
        break;
      }
    CheckResult res = cmp.result();
    res.checked = n_;
    return res;
  }
  double bytes() const override { return 12.0 * double(n_); }
  double flops() const override { return 0; }

private:
  int64_t n_;
  std::vector<float> hx_, hy_;
  Buffer x_, y_, out_;
};

//===--------------------------------------------------------------------===//
// Row-wise: softmax, layernorm, RMS norm
//===--------------------------------------------------------------------===//

class RowwiseProblem final : public Problem {
public:
  RowwiseProblem(Runtime &rt, const Workload &w, Random &r)
      : kind_(w.kind), rows_(w.rows), cols_(w.cols), constCols_(w.constCols) {
    // Softmax sees logits of a realistic spread; layernorm a shifted, scaled input.
    const bool softmax = kind_ == WorkloadKind::Softmax;
    hx_ = softmax ? randomBF16(rows_ * cols_, r, -8, 8) : randomBF16(rows_ * cols_, r, -2, 4);
    x_ = upload(rt, hx_, KILN_DTYPE_BF16);
    y_ = allocate(rt, rows_ * cols_ * 2, KILN_DTYPE_BF16);
    if (!softmax) {
      hw_ = randomBF16(cols_, r, 0.5f, 1.5f);
      w_ = upload(rt, hw_, KILN_DTYPE_BF16);
    }
    if (kind_ == WorkloadKind::LayerNorm) {
      hb_ = randomBF16(cols_, r, -1, 1);
      b_ = upload(rt, hb_, KILN_DTYPE_BF16);
    }
  }
  std::vector<kiln_arg> args() const override {
    if (kind_ == WorkloadKind::Softmax && constCols_)
      return {bufferArg(x_), bufferArg(y_), intArg(cols_)};
    if (kind_ == WorkloadKind::Softmax)
      return {bufferArg(x_), bufferArg(y_), intArg(cols_), intArg(cols_)};
    kiln_arg eps{};
    eps.kind = KILN_ARG_FLOAT;
    eps.value.f = double(float(kEps)); // an f32 parameter takes only f32 values
    if (kind_ == WorkloadKind::RMSNorm)
      return {bufferArg(x_), bufferArg(w_), bufferArg(y_), intArg(cols_), eps};
    return {bufferArg(x_), bufferArg(w_), bufferArg(b_), bufferArg(y_), intArg(cols_), eps};
  }
  Grid grid(const Workload &) const override { return Grid(rows_); }
  void poisonOutputs() override { y_.fill(0xFF); }
  CheckResult check() const override {
    std::vector<uint16_t> out(rows_ * cols_);
    y_.read(out.data(), out.size() * 2);
    // bf16 keeps 8 significant bits: half an ulp is 2^-9 of the value.
    Comparison cmp(8e-3, kind_ == WorkloadKind::Softmax ? 1e-6 : 2e-2);
    checkAllFinite(out, cmp);
    for (int64_t row : sampleRows(rows_, 257)) {
      std::vector<double> ref = reference(row);
      for (int64_t c = 0; c < cols_; ++c)
        cmp.add(fromBF16(out[row * cols_ + c]), ref[c],
                "row " + std::to_string(row) + " col " + std::to_string(c));
    }
    return cmp.result();
  }
  double bytes() const override {
    const double weights = kind_ == WorkloadKind::LayerNorm ? 4.0 * double(cols_)
                           : kind_ == WorkloadKind::RMSNorm ? 2.0 * double(cols_)
                                                            : 0.0;
    return 4.0 * double(rows_) * double(cols_) + weights;
  }
  double flops() const override { return 0; }

private:
  static constexpr double kEps = 1e-5;

  std::vector<double> reference(int64_t row) const {
    std::vector<double> x(cols_), y(cols_);
    for (int64_t c = 0; c < cols_; ++c)
      x[c] = fromBF16(hx_[row * cols_ + c]);
    if (kind_ == WorkloadKind::Softmax) {
      const double m = *std::max_element(x.begin(), x.end());
      double s = 0;
      for (int64_t c = 0; c < cols_; ++c)
        s += (y[c] = std::exp(x[c] - m));
      for (double &v : y)
        v /= s;
      return y;
    }
    if (kind_ == WorkloadKind::RMSNorm) {
      double squares = 0;
      for (double v : x)
        squares += v * v;
      const double rstd = 1.0 / std::sqrt(squares / double(cols_) + double(float(kEps)));
      for (int64_t c = 0; c < cols_; ++c)
        y[c] = x[c] * rstd * fromBF16(hw_[c]);
      return y;
    }
    double mean = 0, var = 0;
    for (double v : x)
      mean += v;
    mean /= double(cols_);
    for (double v : x)
      var += (v - mean) * (v - mean);
    const double rstd = 1.0 / std::sqrt(var / double(cols_) + double(float(kEps)));
    for (int64_t c = 0; c < cols_; ++c)
      y[c] = (x[c] - mean) * rstd * fromBF16(hw_[c]) + fromBF16(hb_[c]);
    return y;
  }

  WorkloadKind kind_;
  int64_t rows_, cols_;
  bool constCols_; ///< the kernel has the row length as a const, not an argument
  std::vector<uint16_t> hx_, hw_, hb_;
  Buffer x_, y_, w_, b_;
};

//===--------------------------------------------------------------------===//
// Matrix product
//===--------------------------------------------------------------------===//

class MatmulProblem final : public Problem {
public:
  MatmulProblem(Runtime &rt, const Workload &w, Random &r) : m_(w.rows), n_(w.cols), k_(w.depth) {
    ha_ = randomBF16(m_ * k_, r, -1, 1);
    hb_ = randomBF16(k_ * n_, r, -1, 1);
    a_ = upload(rt, ha_, KILN_DTYPE_BF16);
    b_ = upload(rt, hb_, KILN_DTYPE_BF16);
    c_ = allocate(rt, m_ * n_ * 2, KILN_DTYPE_BF16);
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(a_), bufferArg(b_), bufferArg(c_), intArg(m_), intArg(n_), intArg(k_)};
  }
  Grid grid(const Workload &w) const override {
    const int64_t bm = std::stoll(w.defines.at(0).second), bn = std::stoll(w.defines.at(1).second);
    return Grid((m_ / bm) * (n_ / bn)); // grouped program order (matmul_bf16.kiln)
  }
  void poisonOutputs() override { c_.fill(0xFF); }
  CheckResult check() const override {
    std::vector<uint16_t> out(m_ * n_);
    c_.read(out.data(), out.size() * 2);
    // Sums of 4096 products in f32 in any order, then one bf16 rounding.
    Comparison cmp(8e-3, 1e-2);
    checkAllFinite(out, cmp);
    Random pick(12345);
    std::vector<double> col(k_);
    for (int s = 0; s < 1024; ++s) {
      const int64_t i = int64_t(pick.next() % uint64_t(m_)), j = int64_t(pick.next() % uint64_t(n_));
      double ref = 0;
      for (int64_t kk = 0; kk < k_; ++kk)
        ref += fromBF16(ha_[i * k_ + kk]) * fromBF16(hb_[kk * n_ + j]);
      cmp.add(fromBF16(out[i * n_ + j]), ref, "c[" + std::to_string(i) + ", " + std::to_string(j) + "]");
    }
    return cmp.result();
  }
  double bytes() const override { return 0; }
  double flops() const override { return 2.0 * double(m_) * double(n_) * double(k_); }

private:
  int64_t m_, n_, k_;
  std::vector<uint16_t> ha_, hb_;
  Buffer a_, b_, c_;
};

//===--------------------------------------------------------------------===//
// Attention
//===--------------------------------------------------------------------===//

/// The value of const parameter `name` in `w`'s defines ("" when not given).
static std::string defineOf(const Workload &w, const std::string &name) {
  for (const auto &[n, value] : w.defines)
    if (n == name)
      return value;
  return "";
}

/// softmax(q·kᵀ·scale)·v for one query row `q` of `d` elements against the first `keys`
/// rows of k and v, in double precision from the bf16 inputs.
static std::vector<double> attentionRow(const uint16_t *q, const uint16_t *k, const uint16_t *v, int64_t keys,
                                        int64_t d, float scale) {
  std::vector<double> s(keys), y(d, 0.0);
  for (int64_t j = 0; j < keys; ++j) {
    double dotProduct = 0;
    for (int64_t c = 0; c < d; ++c)
      dotProduct += fromBF16(q[c]) * fromBF16(k[j * d + c]);
    s[j] = dotProduct * double(scale);
  }
  const double m = *std::max_element(s.begin(), s.end());
  double l = 0;
  for (int64_t j = 0; j < keys; ++j) {
    const double p = std::exp(s[j] - m);
    l += p;
    for (int64_t c = 0; c < d; ++c)
      y[c] += p * fromBF16(v[j * d + c]);
  }
  for (double &x : y)
    x /= l;
  return y;
}

class AttentionProblem final : public Problem {
public:
  AttentionProblem(Runtime &rt, const Workload &w, Random &r)
      : seq_(w.rows), d_(w.cols), heads_(w.depth), causal_(defineOf(w, "CAUSAL") == "true"),
        scale_(1.0f / std::sqrt(static_cast<float>(w.cols))) {
    // Scores q·k/√D of standard deviation about 1.3: rows neither flat nor one-hot.
    const size_t n = size_t(heads_ * seq_ * d_);
    hq_ = randomBF16(n, r, -2, 2);
    hk_ = randomBF16(n, r, -2, 2);
    hv_ = randomBF16(n, r, -1, 1);
    q_ = upload(rt, hq_, KILN_DTYPE_BF16);
    k_ = upload(rt, hk_, KILN_DTYPE_BF16);
    v_ = upload(rt, hv_, KILN_DTYPE_BF16);
    o_ = allocate(rt, n * 2, KILN_DTYPE_BF16);
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(q_), bufferArg(k_), bufferArg(v_), bufferArg(o_), intArg(seq_), detail::toArg(scale_)};
  }
  Grid grid(const Workload &w) const override {
    return Grid(seq_ / std::stoll(defineOf(w, "BM")), heads_);
  }
  void poisonOutputs() override { o_.fill(0xFF); }
  CheckResult check() const override {
    std::vector<uint16_t> out(size_t(heads_ * seq_ * d_));
    o_.read(out.data(), out.size() * 2);
    // The probabilities enter the second product rounded to bf16 (2^-9 relative), the
    // output is rounded once more; outputs are averages of values in [-1, 1].
    Comparison cmp(1e-2, 2e-3);
    checkAllFinite(out, cmp);
    // First and last heads and rows included: row 0 of a causal head sees one key.
    for (int64_t h : sampleRows(heads_, 9))
      for (int64_t i : sampleRows(seq_, 33)) {
        const std::vector<double> ref = reference(h, i);
        for (int64_t c = 0; c < d_; ++c)
          cmp.add(fromBF16(out[size_t((h * seq_ + i) * d_ + c)]), ref[c],
                  "head " + std::to_string(h) + " row " + std::to_string(i) + " dim " + std::to_string(c));
      }
    return cmp.result();
  }
  double bytes() const override { return 0; }
  /// Two products of 2·S·S·D each per head; causal attention does half of them.
  double flops() const override {
    const double full = 4.0 * double(heads_) * double(seq_) * double(seq_) * double(d_);
    return causal_ ? full / 2 : full;
  }

private:
  /// Row i of head h's output, in double precision from the bf16 inputs.
  std::vector<double> reference(int64_t h, int64_t i) const {
    const size_t base = size_t(h * seq_ * d_);
    return attentionRow(&hq_[base + size_t(i * d_)], &hk_[base], &hv_[base], causal_ ? i + 1 : seq_, d_, scale_);
  }

  int64_t seq_, d_, heads_;
  bool causal_;
  float scale_;
  std::vector<uint16_t> hq_, hk_, hv_;
  Buffer q_, k_, v_, o_;
};

//===--------------------------------------------------------------------===//
// fp8 per-token quantization
//===--------------------------------------------------------------------===//

class Fp8QuantProblem final : public Problem {
public:
  Fp8QuantProblem(Runtime &rt, const Workload &w, Random &r) : rows_(w.rows), cols_(w.cols) {
    // Rows of magnitudes from 2^-8 to 2^8, so that every row has a scale of its own.
    hx_.resize(size_t(rows_ * cols_));
    for (int64_t row = 0; row < rows_; ++row) {
      const float magnitude = std::exp2(r.uniform(-8, 8));
      for (int64_t c = 0; c < cols_; ++c)
        hx_[size_t(row * cols_ + c)] = toBF16(magnitude * r.uniform(-1, 1));
    }
    x_ = upload(rt, hx_, KILN_DTYPE_BF16);
    q_ = allocate(rt, size_t(rows_ * cols_), KILN_DTYPE_F8E4M3);
    scale_ = allocate(rt, size_t(rows_) * 4, KILN_DTYPE_F32);
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(x_), bufferArg(q_), bufferArg(scale_), intArg(cols_)};
  }
  Grid grid(const Workload &) const override { return Grid(rows_); }
  void poisonOutputs() override {
    q_.fill(0xFF);
    scale_.fill(0xFF);
  }
  CheckResult check() const override {
    const std::vector<uint8_t> q = q_.download<uint8_t>();
    const std::vector<float> scale = scale_.download<float>();
    // The kernel's arithmetic is f32 (the maximum, one division, one reciprocal, one
    // product) and one rounding to e4m3: the same steps here give the same bits.
    Comparison cmp(0, 0);
    for (size_t i = 0; i < q.size(); ++i)
      if (std::isnan(f8E4M3BitsToDouble(q[i]))) {
        cmp.fail("q element " + std::to_string(i) + " is NaN (unwritten?)");
        break;
      }
    for (int64_t row = 0; row < rows_; ++row)
      cmp.add(scale[size_t(row)], rowScale(row), "scale[" + std::to_string(row) + "]");
    for (int64_t row : sampleRows(rows_, 257)) {
      const float inverse = 1.0f / rowScale(row);
      for (int64_t c = 0; c < cols_; ++c) {
        const size_t i = size_t(row * cols_ + c);
        const float scaled = static_cast<float>(fromBF16(hx_[i])) * inverse;
        cmp.add(f8E4M3BitsToDouble(q[i]), roundToFloatDType(DType::F8E4M3, scaled),
                "row " + std::to_string(row) + " col " + std::to_string(c));
      }
    }
    return cmp.result();
  }
  /// Each element read as bf16 and written as one byte, and one f32 scale per row.
  double bytes() const override { return 3.0 * double(rows_) * double(cols_) + 4.0 * double(rows_); }
  double flops() const override { return 0; }

private:
  /// max|x| / 448 in f32, or 1 for a row of zeros.
  float rowScale(int64_t row) const {
    float amax = 0;
    for (int64_t c = 0; c < cols_; ++c)
      amax = std::max(amax, std::fabs(static_cast<float>(fromBF16(hx_[size_t(row * cols_ + c)]))));
    return amax > 0 ? amax / 448.0f : 1.0f;
  }

  int64_t rows_, cols_;
  std::vector<uint16_t> hx_;
  Buffer x_, q_, scale_;
};

//===--------------------------------------------------------------------===//
// MoE routing
//===--------------------------------------------------------------------===//

class MoeRoutingProblem final : public Problem {
public:
  MoeRoutingProblem(Runtime &rt, const Workload &w, Random &r) : tokens_(w.rows), experts_(w.cols), k_(w.depth) {
    hlogits_ = randomF32(size_t(tokens_ * experts_), r, -4, 4);
    logits_ = upload(rt, hlogits_, KILN_DTYPE_F32);
    ids_ = allocate(rt, size_t(tokens_ * k_) * 4, KILN_DTYPE_I32);
    weights_ = allocate(rt, size_t(tokens_ * k_) * 4, KILN_DTYPE_F32);
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(logits_), bufferArg(ids_), bufferArg(weights_), intArg(tokens_), intArg(experts_)};
  }
  Grid grid(const Workload &w) const override {
    const int64_t bt = std::stoll(defineOf(w, "BT"));
    return Grid((tokens_ + bt - 1) / bt);
  }
  void poisonOutputs() override {
    ids_.fill(0xFF);
    weights_.fill(0xFF);
  }
  CheckResult check() const override {
    const std::vector<int32_t> ids = ids_.download<int32_t>();
    const std::vector<float> weights = weights_.download<float>();
    Comparison cmp(1e-5, 1e-7);
    std::vector<double> p(experts_);
    std::vector<int64_t> order(experts_);
    for (int64_t t = 0; t < tokens_; ++t) {
      const float *z = &hlogits_[size_t(t * experts_)];
      const double m = *std::max_element(z, z + experts_);
      double total = 0;
      for (int64_t e = 0; e < experts_; ++e)
        total += (p[e] = std::exp(z[e] - m));
      for (double &v : p)
        v /= total;
      // The K most probable, most probable first, ties to the lower index.
      for (int64_t e = 0; e < experts_; ++e)
        order[e] = e;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      double topTotal = 0;
      for (int64_t j = 0; j < k_; ++j)
        topTotal += p[order[j]];
      const std::string token = "token " + std::to_string(t) + " slot ";
      for (int64_t j = 0; j < k_; ++j) {
        const int32_t id = ids[size_t(t * k_ + j)];
        const double want = p[order[j]];
        // Probabilities that differ by less than f32 rounding may come in either order.
        if (id < 0 || id >= experts_ || std::fabs(p[id] - want) > 1e-6 * want ||
            std::count(&ids[size_t(t * k_)], &ids[size_t(t * k_ + j)], id) != 0) {
          cmp.fail(token + std::to_string(j) + ": expert " + std::to_string(id) + ", expected " +
                   std::to_string(order[j]));
          return cmp.result();
        }
        cmp.add(weights[size_t(t * k_ + j)], want / topTotal, token + std::to_string(j));
      }
    }
    return cmp.result();
  }
  /// The logits read, an i32 expert index and an f32 weight written per pick.
  double bytes() const override { return 4.0 * double(tokens_) * double(experts_) + 8.0 * double(tokens_ * k_); }
  double flops() const override { return 0; }

private:
  int64_t tokens_, experts_, k_;
  std::vector<float> hlogits_;
  Buffer logits_, ids_, weights_;
};

//===--------------------------------------------------------------------===//
// Decoding attention
//===--------------------------------------------------------------------===//

class DecodeAttentionProblem final : public Problem {
public:
  DecodeAttentionProblem(Runtime &rt, const Workload &w, Random &r)
      : seq_(w.rows), d_(w.cols), heads_(w.depth), scale_(1.0f / std::sqrt(static_cast<float>(w.cols))) {
    // As for attention: scores q·k/√D of standard deviation about 1.3.
    const size_t n = size_t(heads_ * seq_ * d_);
    hq_ = randomBF16(size_t(heads_ * d_), r, -2, 2);
    hk_ = randomBF16(n, r, -2, 2);
    hv_ = randomBF16(n, r, -1, 1);
    q_ = upload(rt, hq_, KILN_DTYPE_BF16);
    k_ = upload(rt, hk_, KILN_DTYPE_BF16);
    v_ = upload(rt, hv_, KILN_DTYPE_BF16);
    o_ = allocate(rt, size_t(heads_ * d_) * 2, KILN_DTYPE_BF16);
    // The reference of the checked heads is the same for every configuration.
    for (int64_t h : sampleRows(heads_, 33)) {
      const size_t base = size_t(h * seq_ * d_);
      reference_.push_back({h, attentionRow(&hq_[size_t(h * d_)], &hk_[base], &hv_[base], seq_, d_, scale_)});
    }
  }
  std::vector<kiln_arg> args() const override {
    return {bufferArg(q_), bufferArg(k_), bufferArg(v_), bufferArg(o_), intArg(seq_), detail::toArg(scale_)};
  }
  Grid grid(const Workload &) const override { return Grid(heads_); }
  void poisonOutputs() override { o_.fill(0xFF); }
  CheckResult check() const override {
    std::vector<uint16_t> out(size_t(heads_ * d_));
    o_.read(out.data(), out.size() * 2);
    // Weighted averages of thousands of values in [-1, 1], about 0.01 in magnitude,
    // rounded once to bf16 (2^-9 relative).
    Comparison cmp(8e-3, 2e-5);
    checkAllFinite(out, cmp);
    for (const auto &[h, ref] : reference_)
      for (int64_t c = 0; c < d_; ++c)
        cmp.add(fromBF16(out[size_t(h * d_ + c)]), ref[size_t(c)],
                "head " + std::to_string(h) + " dim " + std::to_string(c));
    return cmp.result();
  }
  /// The K and V caches, read once; the query and the output are 0.01% of it.
  double bytes() const override { return 4.0 * double(heads_) * double(seq_) * double(d_); }
  double flops() const override { return 0; }

private:
  int64_t seq_, d_, heads_;
  float scale_;
  std::vector<uint16_t> hq_, hk_, hv_;
  std::vector<std::pair<int64_t, std::vector<double>>> reference_;
  Buffer q_, k_, v_, o_;
};

std::unique_ptr<Problem> makeProblem(Runtime &rt, const Workload &w, uint64_t seed) {
  Random r(seed);
  switch (w.kind) {
  case WorkloadKind::VectorAdd:
    return std::make_unique<VectorAddProblem>(rt, w, r);
  case WorkloadKind::Softmax:
  case WorkloadKind::LayerNorm:
  case WorkloadKind::RMSNorm:
    return std::make_unique<RowwiseProblem>(rt, w, r);
  case WorkloadKind::Matmul:
    return std::make_unique<MatmulProblem>(rt, w, r);
  case WorkloadKind::Attention:
    return std::make_unique<AttentionProblem>(rt, w, r);
  case WorkloadKind::Fp8Quant:
    return std::make_unique<Fp8QuantProblem>(rt, w, r);
  case WorkloadKind::MoeRouting:
    return std::make_unique<MoeRoutingProblem>(rt, w, r);
  case WorkloadKind::DecodeAttention:
    return std::make_unique<DecodeAttentionProblem>(rt, w, r);
  }
  return nullptr;
}

} // namespace kiln::bench
