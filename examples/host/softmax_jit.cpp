//===- softmax_jit.cpp - JIT-compile a Kiln kernel and run it -------------===//
//
// The host side of examples/softmax.kiln, compiled at run time:
//
//   softmax_jit [softmax.kiln] [rows] [cols]
//
// 1. pick a GPU (CUDA, else Level Zero);
// 2. compile the kernel for it, with BLOCK the smallest power of two that holds a row
//    (the compiled code is cached: run it twice and the second compile is a disk read);
// 3. launch one program per row and compare with a softmax computed on the CPU.
//
// Exit status: 0 when the results match, 1 when they do not or something failed, 77
// when there is no GPU here (the message says why).
//
//===----------------------------------------------------------------------===//
#include "jit/Jit.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

/// y[r, :] = softmax(x[r, :]), in double for a reference the f32 kernel must match.
static std::vector<float> softmaxOnCpu(const std::vector<float> &x, int rows, int cols) {
  std::vector<float> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const float *row = &x[size_t(r) * cols];
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < cols; ++c)
      m = std::max(m, double(row[c]));
    for (int c = 0; c < cols; ++c)
      sum += std::exp(double(row[c]) - m);
    for (int c = 0; c < cols; ++c)
      y[size_t(r) * cols + c] = float(std::exp(double(row[c]) - m) / sum);
  }
  return y;
}

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : KILN_EXAMPLES_DIR "/softmax.kiln";
  int rows = argc > 2 ? std::atoi(argv[2]) : 512;
  int cols = argc > 3 ? std::atoi(argv[3]) : 1000;
  if (rows <= 0 || cols <= 0) {
    std::fprintf(stderr, "usage: softmax_jit [softmax.kiln] [rows > 0] [cols > 0]\n");
    return 1;
  }

  std::optional<kiln::Runtime> rt;
  try {
    rt.emplace();
  } catch (const kiln::RuntimeError &e) {
    std::printf("softmax_jit: no GPU here, so nothing was run.\n%s\n", e.what());
    return 77;
  }
  std::printf("device: %s (%s)\n", rt->device_name().c_str(), rt->target().c_str());

  try {
    kiln::Jit jit(*rt);
    std::printf("kernel cache: %s\n", jit.cache_dir().empty() ? "(off)" : jit.cache_dir().c_str());
    int block = 1;
    while (block < cols)
      block *= 2;
    auto start = std::chrono::steady_clock::now();
    kiln::JitKernel softmax = jit.compile_file(path, "softmax", {{"BLOCK", block}});

    std::vector<float> x(size_t(rows) * cols);
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (float &v : x)
      v = normal(rng);
    kiln::Buffer xDev = rt->upload(x);
    kiln::Buffer yDev = rt->alloc<float>(x.size());

    // The first launch generates code for these arguments (or loads it from the cache).
    softmax.launch({rows, 1, 1}, xDev, yDev, cols, cols);
    rt->synchronize();
    double firstMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("compile + first launch: %.1f ms (BLOCK=%d)\n", firstMs, block);

    kiln::Event begin = rt->create_event(), end = rt->create_event();
    begin.record();
    softmax.launch({rows, 1, 1}, xDev, yDev, cols, cols);
    end.record();
    end.synchronize();
    std::printf("second launch: %.3f ms on the device\n", kiln::Event::elapsed_ms(begin, end));

    std::vector<float> y = yDev.download<float>(), expected = softmaxOnCpu(x, rows, cols);
    double maxError = 0;
    for (size_t i = 0; i < y.size(); ++i)
      maxError = std::max(maxError, double(std::fabs(y[i] - expected[i])));
    bool ok = maxError <= 1e-5;
    std::printf("%d x %d softmax: max |error| = %.3g against the CPU: %s\n", rows, cols, maxError,
                ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const kiln::CompileError &e) {
    std::fprintf(stderr, "%s\n", e.what()); // the compiler's diagnostics, with file:line:col
    return 1;
  } catch (const kiln::RuntimeError &e) {
    std::fprintf(stderr, "softmax_jit: %s (%s)\n", e.what(), kiln_status_name(e.status()));
    return 1;
  }
}
