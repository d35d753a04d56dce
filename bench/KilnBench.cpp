//===- KilnBench.cpp - Runs, checks and times the benchmark bundles -------===//
//
// kiln-bench [--iters N] [--only TEXT] [--json FILE] BUNDLE_DIR
//
// For every workload of Workloads.cpp whose bundle BUNDLE_DIR holds (and whose name
// contains TEXT): makes random inputs, launches once on poisoned outputs and checks
// the result against the CPU reference, then times the kernel the way Triton's
// do_bench does, so that the figures compare with the peers' in the same run:
//
//   warm-up launches; then N times: launch a kernel that overwrites a 256 MiB buffer
//   (the L2 cache then holds none of the inputs; L2Flush.h), record an event, launch,
//   record an event; the median of the N event intervals is the kernel's time.
//
// Prints one JSON object per workload on stdout (and all of them as an array to FILE).
// Needs only the runtime and a CUDA driver: build it where the compiler is and carry it
// with the bundles (libstdc++ and libgcc are linked statically).
//
//===----------------------------------------------------------------------===//
#include "bench/L2Flush.h"
#include "bench/Problem.h"
#include "bench/Workloads.h"

#include "runtime/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

struct Options {
  int iters = 100;
  int warmup = 10;
  std::string only;
  std::string jsonPath;
  fs::path bundles;
};

std::string jsonEscape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      o += ' ';
    else
      o += c;
  }
  return o;
}

/// Launches of the L2 flush kernel over one buffer.
class L2Flush {
public:
  L2Flush(Runtime &rt, const fs::path &bundles)
      : kernel_(rt.load_bundle((bundles / (bench::l2FlushKernel().name + ".kbin")).string())) {
    kiln_buffer *h = nullptr;
    detail::check(kiln_buffer_alloc(rt.handle(), size_t(bench::kL2FlushBytes), KILN_DTYPE_NONE, &h));
    buffer_ = Buffer(h);
  }
  /// Enqueues the overwrite (with a different value each time) and returns at once.
  void enqueue(int value) {
    const int64_t n = bench::kL2FlushBytes / 4;
    kernel_.launch(Grid(static_cast<uint32_t>(n / bench::kL2FlushBlock)), buffer_,
                   static_cast<int32_t>(n), static_cast<int32_t>(value));
  }

private:
  Kernel kernel_;
  Buffer buffer_;
};

/// Median of the event-timed launches, in milliseconds.
double timeKernel(Runtime &rt, Kernel &k, const bench::Problem &p, const bench::Workload &w,
                  L2Flush &flush, const Options &o) {
  const std::vector<kiln_arg> args = p.args();
  const Grid grid = p.grid(w);
  for (int i = 0; i < o.warmup; ++i)
    k.launch_args(grid, args);
  rt.synchronize();
  Event start = rt.create_event(), end = rt.create_event();
  std::vector<double> ms;
  for (int i = 0; i < o.iters; ++i) {
    flush.enqueue(i);
    start.record();
    k.launch_args(grid, args);
    end.record();
    end.synchronize();
    ms.push_back(Event::elapsed_ms(start, end));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int run(const Options &o) {
  Runtime rt;
  std::cerr << "kiln-bench: " << rt.device_name() << " (" << rt.target() << ")\n";
  L2Flush flush(rt, o.bundles);
  std::ostringstream all;
  all << "[\n";
  bool first = true;
  int failures = 0;
  std::map<std::string, std::unique_ptr<bench::Problem>> problems; // by label
  for (const bench::Workload &w : bench::workloads()) {
    const fs::path file = o.bundles / (w.name + ".kbin");
    if (!o.only.empty() && w.name.find(o.only) == std::string::npos)
      continue;
    if (!fs::exists(file)) {
      std::cerr << w.name << ": no bundle " << file << ", skipped\n";
      continue;
    }
    std::ostringstream line;
    line << "{\"workload\": \"" << w.label << "\", \"system\": \"kiln\", \"name\": \"" << w.name
         << "\", \"config\": \"" << w.config() << "\"";
    try {
      // One problem (inputs on the device) at a time: the sizes are gigabytes.
      // Kernels that take the row length as a const pass fewer arguments: a problem of
      // their own, on the same inputs (the same seed).
      const std::string key = w.label + (w.constCols ? " (const columns)" : "");
      if (!problems.count(key)) {
        problems.clear();
        problems[key] = bench::makeProblem(rt, w, 0x5EED);
      }
      bench::Problem &p = *problems[key];
      Kernel k = rt.load_bundle(file.string());
      p.poisonOutputs();
      k.launch_args(p.grid(w), p.args());
      rt.synchronize();
      const bench::CheckResult c = p.check();
      line << ", \"check\": \"" << (c.ok ? "ok" : "FAIL: " + jsonEscape(c.message))
           << "\", \"rel_error\": " << c.relError << ", \"checked\": " << c.checked;
      if (!c.ok)
        ++failures;
      const double ms = timeKernel(rt, k, p, w, flush, o);
      const bool compute = p.flops() > 0;
      const double val = compute ? p.flops() / ms / 1e9 : p.bytes() / ms / 1e6;
      char buf[160];
      std::snprintf(buf, sizeof buf, ", \"us\": %.2f, \"val\": %.1f, \"unit\": \"%s\"", ms * 1e3, val,
                    compute ? "TFLOP/s" : "GB/s");
      line << buf;
    } catch (const std::exception &e) {
      ++failures;
      line << ", \"check\": \"FAIL: " << jsonEscape(e.what()) << "\"";
    }
    line << "}";
    std::cout << line.str() << std::endl;
    all << (first ? "" : ",\n") << line.str();
    first = false;
  }
  all << "\n]\n";
  if (!o.jsonPath.empty())
    std::ofstream(o.jsonPath) << all.str();
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc)
      o.iters = std::max(1, std::atoi(argv[++i]));
    else if (a == "--only" && i + 1 < argc)
      o.only = argv[++i];
    else if (a == "--json" && i + 1 < argc)
      o.jsonPath = argv[++i];
    else if (o.bundles.empty() && !a.starts_with("-"))
      o.bundles = a;
    else {
      o.bundles.clear();
      break;
    }
  }
  if (o.bundles.empty()) {
    std::cerr << "usage: kiln-bench [--iters N] [--only TEXT] [--json FILE] BUNDLE_DIR\n";
    return 2;
  }
  try {
    return run(o);
  } catch (const RuntimeError &e) {
    std::cerr << "kiln-bench: " << e.what() << "\n";
    return e.status() == KILN_ERROR_NO_DRIVER ? 2 : 1;
  }
}
