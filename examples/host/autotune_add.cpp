//===- autotune_add.cpp - Launch an @autotune kernel with a grid function ---===//
//
// The host side of examples/autotune_add.kiln, compiled at run time:
//
//   autotune_add [autotune_add.kiln]
//
// 1. pick a GPU (CUDA, else Level Zero) and compile the kernel's configs for it;
// 2. for two sizes, launch it with a grid function: each config covers BLOCK elements
//    per program, so the grid is cdiv(n, BLOCK) for whichever config runs. The first
//    launch per size times every config and keeps the fastest (n is the tuning key);
// 3. print the config chosen for each size and whether it was timed now or read from
//    the tuning record in the kernel cache (run the program twice to see both);
// 4. compare the sums with the CPU's.
//
// Exit status: 0 when the results match, 1 when they do not or something failed, 77
// when there is no GPU here (the message says why).
//
//===----------------------------------------------------------------------===//
#include "jit/Jit.h"

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : KILN_EXAMPLES_DIR "/autotune_add.kiln";

  std::optional<kiln::Runtime> rt;
  try {
    rt.emplace();
  } catch (const kiln::RuntimeError &e) {
    std::printf("autotune_add: no GPU here, so nothing was run.\n%s\n", e.what());
    return 77;
  }
  std::printf("device: %s (%s)\n", rt->device_name().c_str(), rt->target().c_str());

  try {
    // The JIT notes each tuning it does ("kernel 'add' autotuned for n=...: ..."). A
    // launch that logs none took its choice from the cache.
    int tunings = 0;
    kiln::Jit::Options options;
    options.log = [&](kiln_jit_severity severity, const std::string &message) {
      if (message.find("autotuned for") != std::string::npos)
        ++tunings;
      std::printf("  kiln: %s: %s\n", severity == KILN_JIT_NOTE ? "note" : "warning", message.c_str());
    };
    kiln::Jit jit(*rt, options);
    std::printf("kernel cache: %s\n", jit.cache_dir().empty() ? "(off)" : jit.cache_dir().c_str());
    kiln::JitKernel add = jit.compile_file(path, "add");
    std::printf("configs:");
    for (const std::string &config : add.configs())
      std::printf(" %s", config.c_str());
    std::printf("\n");

    bool ok = true;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int n : {1000, 1 << 22}) {
      std::vector<float> x(n), y(n);
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = normal(rng);
        y[i] = normal(rng);
      }
      kiln::Buffer xDev = rt->upload(x), yDev = rt->upload(y), outDev = rt->alloc<float>(n);
      outDev.fill(0);

      // One program per BLOCK elements of the config that runs: Triton's
      // `grid = lambda META: (triton.cdiv(n, META['BLOCK']),)`.
      auto grid = [n](const kiln::KernelInfo &config) {
        int64_t block = config.const_int("BLOCK");
        return kiln::Grid((n + block - 1) / block);
      };
      int tuningsBefore = tunings;
      add.launch(grid, xDev, yDev, outDev, n);
      rt->synchronize();
      bool tunedNow = tunings > tuningsBefore;

      // What that launch ran; the choice is kept, so this times nothing.
      kiln::JitKernel::Selection chosen = add.select(grid, xDev, yDev, outDev, n);
      std::printf("n=%d: config %s, %u programs of %u threads; choice: %s\n", n,
                  add.configs()[chosen.config].c_str(), chosen.grid.x, chosen.block_size(),
                  tunedNow ? "tuned now" : "from the cache");

      // A float sum rounds the same on both sides: the results must match exactly.
      std::vector<float> out = outDev.download<float>();
      size_t wrong = 0;
      for (size_t i = 0; i < out.size(); ++i)
        wrong += out[i] != x[i] + y[i];
      std::printf("n=%d: %zu of %d sums differ from the CPU's: %s\n", n, wrong, n, wrong ? "FAIL" : "PASS");
      ok = ok && wrong == 0;
    }
    return ok ? 0 : 1;
  } catch (const kiln::CompileError &e) {
    std::fprintf(stderr, "%s\n", e.what()); // the compiler's diagnostics, with file:line:col
    return 1;
  } catch (const kiln::RuntimeError &e) {
    std::fprintf(stderr, "autotune_add: %s (%s)\n", e.what(), kiln_status_name(e.status()));
    return 1;
  }
}
