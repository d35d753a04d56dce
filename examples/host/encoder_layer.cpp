//===- encoder_layer.cpp - A sparse encoder layer whose fusion scope is measured ---===//
//
// The host side of stdlib/encoder_layer.kiln, compiled at run time:
//
//   encoder_layer [TOKENS] [--time-only]     (TOKENS: default 256; a multiple of 128)
//
// 1. pick a GPU; random weights of BERT-base's widths (12 heads of 64, E = 768, FFN
//    3072), bf16, and a BigBird-like mask over the tokens (a band, global tokens and
//    random 64 x 64 blocks), with an additive key bias;
// 2. ask the JIT which fusion scope is faster here (Jit::choose, docs/jit.md): "fused"
//    puts the residual add and layernorm inside each output projection
//    (linear_residual_layernorm), "split" runs a plain projection and residual_layernorm.
//    The first run compiles both scopes' kernels and times them; on its first launch
//    each kernel also tunes its @autotune configs (tiles, warps, stages: the search's
//    second stage) for the shapes and the mask. The choices are kept in the kernel
//    cache under the shapes and the mask's digest, so a second run of this program
//    takes them from there (the notes say what was measured and how long it took);
// 3. run the layer in both scopes and compare each with the CPU's layer, computed in
//    float from the same bf16 values and rounded to bf16 where the kernels store.
//    --time-only stops after step 2: the CPU's layer takes a minute at 4096 tokens.
//
// Exit status: 0 when both scopes match, 1 when one does not or something failed, 77
// when there is no GPU here (the message says why).
//
//===----------------------------------------------------------------------===//
#include "jit/Jit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kWidth = kHeads * kHeadDim, kFfn = 3072, kBlock = 64;
constexpr float kEps = 1e-5f;

uint16_t toBf16(float f) { // round to nearest even, as the kernels' stores do
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f))
    return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float roundBf16(float f) { return fromBf16(toBf16(f)); }

/// A bf16 matrix: its values on the host (already bf16-exact) and on the device.
struct Matrix {
  std::vector<float> host;
  kiln::Buffer dev;
};

Matrix upload(kiln::Runtime &rt, std::vector<float> values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = toBf16(values[i]);
    values[i] = fromBf16(bits[i]);
  }
  kiln::Buffer dev = rt.alloc(bits.size() * 2, KILN_DTYPE_BF16);
  dev.upload(bits);
  return {std::move(values), std::move(dev)};
}

Matrix zeros(kiln::Runtime &rt, size_t count) { return upload(rt, std::vector<float>(count, 0.0f)); }

std::vector<float> download(const kiln::Buffer &b) {
  std::vector<uint16_t> bits = b.download<uint16_t>();
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = fromBf16(bits[i]);
  return out;
}

// ---- the CPU's layer ------------------------------------------------------------

std::vector<float> linear(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> &b,
                          int64_t M, int64_t N, int64_t K, bool gelu) {
  std::vector<float> y(M * N);
  std::vector<float> row(N);
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float xv = x[i * K + k];
      const float *wr = &w[k * N];
      for (int64_t j = 0; j < N; ++j)
        row[j] += xv * wr[j];
    }
    for (int64_t j = 0; j < N; ++j) {
      float v = row[j] + b[j];
      if (gelu)
        v = 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
      y[i * N + j] = roundBf16(v);
    }
  }
  return y;
}

std::vector<float> residualLayernorm(const std::vector<float> &a, const std::vector<float> &res,
                                     const std::vector<float> &gamma, const std::vector<float> &beta, int64_t M,
                                     int64_t N) {
  std::vector<float> y(M * N);
  for (int64_t i = 0; i < M; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j)
      mean += a[i * N + j] + res[i * N + j];
    mean /= N;
    for (int64_t j = 0; j < N; ++j) {
      double d = a[i * N + j] + res[i * N + j] - mean;
      var += d * d;
    }
    const double rstd = 1.0 / std::sqrt(var / N + kEps);
    for (int64_t j = 0; j < N; ++j)
      y[i * N + j] = roundBf16(float((a[i * N + j] + res[i * N + j] - mean) * rstd * gamma[j] + beta[j]));
  }
  return y;
}

std::vector<float> attention(const std::vector<float> &qkv, const std::vector<float> &keyBias,
                             const std::vector<uint8_t> &kept, int64_t T, float scale) {
  std::vector<float> a(T * kWidth);
  std::vector<double> s(T);
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t i = 0; i < T; ++i) {
      const float *q = &qkv[i * 3 * kWidth + h * kHeadDim];
      double m = -INFINITY, l = 0;
      for (int64_t j = 0; j < T; ++j) {
        if (!kept[i * T + j]) {
          s[j] = -INFINITY;
          continue;
        }
        const float *k = &qkv[j * 3 * kWidth + kWidth + h * kHeadDim];
        double dot = 0;
        for (int64_t d = 0; d < kHeadDim; ++d)
          dot += double(q[d]) * k[d];
        s[j] = dot * scale + keyBias[j];
        m = std::max(m, s[j]);
      }
      for (int64_t j = 0; j < T; ++j)
        l += kept[i * T + j] ? std::exp(s[j] - m) : 0.0;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < T; ++j)
          if (kept[i * T + j])
            acc += std::exp(s[j] - m) / l * qkv[j * 3 * kWidth + 2 * kWidth + h * kHeadDim + d];
        a[i * kWidth + h * kHeadDim + d] = roundBf16(float(acc));
      }
    }
  return a;
}

/// Largest |got - want| beyond atol + rtol·|want|, and how many elements exceed it.
size_t mismatches(const std::vector<float> &got, const std::vector<float> &want, double &worst) {
  size_t bad = 0;
  worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(double(got[i]) - want[i]);
    worst = std::max(worst, err);
    bad += !(err <= 0.08 + 0.02 * std::abs(want[i]));
  }
  return bad;
}

} // namespace

int main(int argc, char **argv) {
  const int64_t T = argc > 1 ? std::atoll(argv[1]) : 256;
  if (T <= 0 || T % 128 != 0 || T > 16384) {
    std::fprintf(stderr, "encoder_layer: TOKENS must be a positive multiple of 128 up to 16384, got '%s'\n", argv[1]);
    return 1;
  }
  const bool timeOnly = argc > 2 && std::string(argv[2]) == "--time-only";
  if (argc > 3 || (argc > 2 && !timeOnly)) {
    std::fprintf(stderr, "usage: encoder_layer [TOKENS] [--time-only]\n");
    return 1;
  }
  std::optional<kiln::Runtime> rt;
  try {
    rt.emplace();
  } catch (const kiln::RuntimeError &e) {
    std::printf("encoder_layer: no GPU here, so nothing was run.\n%s\n", e.what());
    return 77;
  }
  std::printf("device: %s (%s); %lld tokens, %lld heads of %lld, FFN %lld\n", rt->device_name().c_str(),
              rt->target().c_str(), (long long)T, (long long)kHeads, (long long)kHeadDim, (long long)kFfn);

  try {
    bool measured = false;
    kiln::Jit::Options options;
    options.log = [&](kiln_jit_severity severity, const std::string &message) {
      measured = measured || message.rfind("search 'encoder-scope'", 0) == 0;
      std::printf("  kiln: %s: %s\n", severity == KILN_JIT_NOTE ? "note" : "warning", message.c_str());
    };
    kiln::Jit jit(*rt, options);
    std::printf("kernel cache: %s\n", jit.cache_dir().empty() ? "(off)" : jit.cache_dir().c_str());
    // Where dslc finds the standard library too: $KILN_STDLIB_DIR, else the source tree's.
    const char *stdlib = std::getenv("KILN_STDLIB_DIR");
    const std::string source = std::string(stdlib && *stdlib ? stdlib : KILN_STDLIB_DIR) + "/encoder_layer.kiln";
    // Every matrix dimension is a multiple of 128, the largest tile any @autotune config
    // of `linear` takes, so the projections run unmasked (EVEN), streaming their operands
    // on the GPU. The tiles, warps and stages are left to the kernels' @autotune configs.
    kiln::CompileOptions even{{{"EVEN", true}}, {}, 0};
    kiln::CompileOptions evenGelu = even;
    evenGelu.defines.push_back({"ACT", 1});
    kiln::JitKernel proj = jit.compile_file(source, "linear", even);
    kiln::JitKernel projGelu = jit.compile_file(source, "linear", evenGelu);
    kiln::JitKernel projNorm = jit.compile_file(source, "linear_residual_layernorm");
    kiln::JitKernel norm = jit.compile_file(source, "residual_layernorm");
    kiln::JitKernel attend = jit.compile_file(source, "encoder_attention");

    // The weights and the input, N(0, 1) activations and N(0, 1/sqrt(fan-in)) weights.
    std::mt19937 rng(7);
    auto random = [&](size_t n, float scale) {
      std::normal_distribution<float> normal(0.0f, scale);
      std::vector<float> v(n);
      for (float &x : v)
        x = normal(rng);
      return v;
    };
    const float inScale = 1.0f / std::sqrt(float(kWidth)), ffnScale = 1.0f / std::sqrt(float(kFfn));
    Matrix x = upload(*rt, random(T * kWidth, 1.0f));
    Matrix wQkv = upload(*rt, random(kWidth * 3 * kWidth, inScale)), bQkv = upload(*rt, random(3 * kWidth, 0.1f));
    Matrix wO = upload(*rt, random(kWidth * kWidth, inScale)), bO = upload(*rt, random(kWidth, 0.1f));
    Matrix w1 = upload(*rt, random(kWidth * kFfn, inScale)), b1 = upload(*rt, random(kFfn, 0.1f));
    Matrix w2 = upload(*rt, random(kFfn * kWidth, ffnScale)), b2 = upload(*rt, random(kWidth, 0.1f));
    Matrix g1 = upload(*rt, random(kWidth, 0.1f)), be1 = upload(*rt, random(kWidth, 0.1f));
    Matrix g2 = upload(*rt, random(kWidth, 0.1f)), be2 = upload(*rt, random(kWidth, 0.1f));
    for (Matrix *g : {&g1, &g2}) { // gammas around 1
      for (float &v : g->host)
        v = roundBf16(1.0f + v);
      *g = upload(*rt, g->host);
    }
    std::vector<float> keyBias = random(T, 0.5f);
    kiln::Buffer keyBiasDev = rt->upload(keyBias);

    // BigBird-like: a band of ±64 tokens, the first 32 tokens global, 5% of the 64 x 64
    // blocks at random; every query keeps its own token.
    std::vector<uint8_t> kept(T * T);
    std::bernoulli_distribution randomBlock(0.05);
    const int64_t blocks = T / kBlock;
    std::vector<uint8_t> chosenBlocks(blocks * blocks);
    for (uint8_t &b : chosenBlocks)
      b = randomBlock(rng);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j)
        kept[i * T + j] = std::abs(i - j) <= 64 || i < 32 || j < 32 || chosenBlocks[(i / kBlock) * blocks + j / kBlock];
    kiln::BlockMask mask = rt->block_mask_from_dense(std::span<const uint8_t>(kept), T, T, kBlock, kBlock);
    kiln::BlockMaskCounts counts = mask.counts();
    std::printf("mask: %lld full, %lld partial, %lld empty blocks of %lldx%lld; digest %s\n", (long long)counts.full,
                (long long)counts.partial, (long long)counts.empty, (long long)kBlock, (long long)kBlock,
                mask.digest().c_str());
    const float scale = 1.0f / std::sqrt(float(kHeadDim));

    Matrix qkv = zeros(*rt, T * 3 * kWidth), a = zeros(*rt, T * kWidth), p = zeros(*rt, T * kWidth);
    Matrix h = zeros(*rt, T * kWidth), f = zeros(*rt, T * kFfn), y = zeros(*rt, T * kWidth);
    const int eT = static_cast<int>(T), eE = static_cast<int>(kWidth), eF = static_cast<int>(kFfn);
    // The grids follow the config that runs (@autotune: each config covers its own BM x BN).
    auto tiles = [](int64_t m, int64_t n) {
      return [=](const kiln::KernelInfo &config) {
        return kiln::Grid(m / config.const_int("BM"), n / config.const_int("BN"));
      };
    };
    auto rowBlocks = [&](const kiln::KernelInfo &config) {
      const int64_t bm = config.const_int("BM");
      return kiln::Grid((T + bm - 1) / bm);
    };
    auto attentionAndUp = [&] {
      proj.launch(tiles(T, 3 * kWidth), x.dev, wQkv.dev, bQkv.dev, qkv.dev, eT, 3 * eE, eE);
      attend.launch({T / kBlock, kHeads}, qkv.dev, keyBiasDev, a.dev, mask, scale);
    };
    auto fused = [&] {
      attentionAndUp();
      projNorm.launch(rowBlocks, a.dev, wO.dev, bO.dev, x.dev, g1.dev, be1.dev, h.dev, eT, eE, eE, kEps);
      projGelu.launch(tiles(T, kFfn), h.dev, w1.dev, b1.dev, f.dev, eT, eF, eE);
      projNorm.launch(rowBlocks, f.dev, w2.dev, b2.dev, h.dev, g2.dev, be2.dev, y.dev, eT, eE, eF, kEps);
    };
    auto split = [&] {
      attentionAndUp();
      proj.launch(tiles(T, kWidth), a.dev, wO.dev, bO.dev, p.dev, eT, eE, eE);
      norm.launch(rowBlocks, p.dev, x.dev, g1.dev, be1.dev, h.dev, eT, eE, kEps);
      projGelu.launch(tiles(T, kFfn), h.dev, w1.dev, b1.dev, f.dev, eT, eF, eE);
      proj.launch(tiles(T, kWidth), f.dev, w2.dev, b2.dev, p.dev, eT, eE, eF);
      norm.launch(rowBlocks, p.dev, h.dev, g2.dev, be2.dev, y.dev, eT, eE, kEps);
    };

    // The scope: measured once per size and mask, then read from the cache.
    const std::string key = "T=" + std::to_string(T) + ", mask=" + mask.digest();
    const size_t scope = jit.choose("encoder-scope", key, {{"fused", fused}, {"split", split}});
    std::printf("scope for %s: %s (%s)\n", key.c_str(), scope == 0 ? "fused" : "split",
                measured ? "measured now" : "from the cache");

    if (timeOnly)
      return 0;
    std::printf("the CPU's layer...\n");
    std::vector<float> qkvRef = linear(x.host, wQkv.host, bQkv.host, T, 3 * kWidth, kWidth, false);
    std::vector<float> aRef = attention(qkvRef, keyBias, kept, T, scale);
    std::vector<float> hRef = residualLayernorm(linear(aRef, wO.host, bO.host, T, kWidth, kWidth, false), x.host,
                                                g1.host, be1.host, T, kWidth);
    std::vector<float> fRef = linear(hRef, w1.host, b1.host, T, kFfn, kWidth, true);
    std::vector<float> yRef = residualLayernorm(linear(fRef, w2.host, b2.host, T, kWidth, kFfn, false), hRef,
                                                g2.host, be2.host, T, kWidth);

    bool ok = true;
    for (size_t s : {scope, 1 - scope}) {
      // Every intermediate starts as NaN (0xffff): a row a kernel fails to write cannot
      // pass on what the other scope left there.
      for (Matrix *m : {&qkv, &a, &p, &h, &f, &y})
        m->dev.fill(0xff);
      if (s == 0)
        fused();
      else
        split();
      rt->synchronize();
      double worst = 0;
      size_t bad = mismatches(download(y.dev), yRef, worst);
      std::printf("%s scope%s: %zu of %lld outputs off the CPU's (largest difference %.4f): %s\n",
                  s == 0 ? "fused" : "split", s == scope ? " (chosen)" : "", bad, (long long)(T * kWidth), worst,
                  bad ? "FAIL" : "PASS");
      ok = ok && bad == 0;
    }
    return ok ? 0 : 1;
  } catch (const kiln::CompileError &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const kiln::RuntimeError &e) {
    std::fprintf(stderr, "encoder_layer: %s (%s)\n", e.what(), kiln_status_name(e.status()));
    return 1;
  }
}
