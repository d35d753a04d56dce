//===- LaunchBench.cpp - Host time per launch from C and C++ ---------------===//
//
// How long the host spends to launch one small kernel, back to back: the C API
// (kiln_launch, kiln_launch_on_stream), the C++ API (kiln::Kernel::launch), and the
// floor under both, cuLaunchKernel called directly on the same code. The difference
// between a Kiln row and the floor is Kiln's own cost per launch.
//
//   kiln-launch-bench BUNDLE [LAUNCHES]
//
// BUNDLE is examples/vector_add.kiln compiled for the GPU (bench/launch_bench.sh makes
// it); every row launches one program over 1024 elements. Each row runs LAUNCHES
// launches (default 20000) after 2000 to warm up and prints the mean host time of a
// launch call, timed in batches of 100 with the device idle before each, so that the
// queue never fills and the call's own cost is what is timed; and the mean per launch of
// the same number back to back until the device finished them all, which the device's
// own rate of small kernels bounds from below. The results are checked once at the end.
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"
#include "runtime/Runtime.h"
#include "runtime/cuda/CudaApi.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kElements = 1024;
constexpr int kWarmup = 2000;
constexpr int kBatch = 100; // launches between two waits: far from filling the device's queue

struct Row {
  std::string what;
  double callUs = 0;   ///< mean time of one launch call
  double drainUs = 0;  ///< mean time per launch until the device finished
};

// Runs `launch` `count` times after the warm-up, twice: in batches of kBatch with the
// device idle before each (the host time of a call, while the device's queue has room),
// then back to back (the time per launch until the device finished them all, which the
// device's own rate of small kernels bounds from below). `sync` waits for the device.
Row timeRow(const std::string &what, int count, const std::function<void()> &launch,
            const std::function<void()> &sync) {
  for (int i = 0; i < kWarmup; ++i)
    launch();
  sync();
  double calls = 0;
  for (int done = 0; done < count; done += kBatch) {
    sync();
    const auto start = Clock::now();
    for (int i = 0; i < kBatch && done + i < count; ++i)
      launch();
    calls += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  sync();
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i)
    launch();
  sync();
  const double drained = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return Row{what, calls / count, drained / count};
}

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "kiln-launch-bench: %s\n", message.c_str());
  std::exit(1);
}

void checkC(kiln_status s, const char *what) {
  if (s != KILN_SUCCESS)
    die(std::string(what) + ": " + kiln_status_name(s) + ": " + kiln_last_error());
}

// The floor: the bundle's PTX loaded and launched with the driver alone, on a stream of
// its own, with the same arguments.
Row driverFloor(const std::string &bundlePath, CUdeviceptr x, CUdeviceptr y, CUdeviceptr out, int count) {
  const kiln::rt::CudaApi *api = nullptr;
  if (kiln::rt::Status s = kiln::rt::loadCudaApi(api); !s.ok())
    die(s.message());
  std::string error;
  std::optional<kiln::rt::Bundle> bundle = kiln::rt::readBundle(bundlePath, error);
  if (!bundle)
    die(error);
  const kiln::rt::CodeSection *ptx = nullptr;
  for (const kiln::rt::CodeSection &section : bundle->sections)
    if (section.kind == kiln::rt::SectionKind::PTX && section.target == bundle->target)
      ptx = &section;
  if (!ptx)
    die("the bundle has no PTX for its own target");
  std::string text(ptx->bytes.begin(), ptx->bytes.end());
  CUmodule module;
  CUfunction function;
  CUstream stream;
  auto check = [&](CUresult r, const char *op) {
    if (r != CUDA_SUCCESS)
      die(kiln::rt::cudaFailure(*api, op, r));
  };
  check(api->cuModuleLoadDataEx(&module, text.c_str(), 0, nullptr, nullptr), "cuModuleLoadDataEx");
  check(api->cuModuleGetFunction(&function, module, bundle->entry.c_str()), "cuModuleGetFunction");
  check(api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  int n = kElements;
  void *params[] = {&x, &y, &out, &n};
  const unsigned threads = bundle->numWarps * 32;
  Row row = timeRow(
      "cuLaunchKernel (the floor)", count,
      [&] {
        check(api->cuLaunchKernel(function, 1, 1, 1, threads, 1, 1, bundle->sharedBytes, stream, params, nullptr),
              "cuLaunchKernel");
      },
      [&] { check(api->cuStreamSynchronize(stream), "cuStreamSynchronize"); });
  api->cuStreamDestroy(stream);
  api->cuModuleUnload(module);
  return row;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: kiln-launch-bench BUNDLE [LAUNCHES]\n");
    return 2;
  }
  const std::string bundlePath = argv[1];
  const int count = argc == 3 ? std::atoi(argv[2]) : 20000;
  if (count <= 0)
    die("LAUNCHES must be a positive number");

  kiln::Runtime runtime(kiln::Runtime::Options{kiln::Backend::Cuda, 0});
  kiln::Kernel kernel = runtime.load_bundle(bundlePath);
  std::vector<float> a(kElements), b(kElements);
  for (int i = 0; i < kElements; ++i) {
    a[i] = 0.5f * static_cast<float>(i);
    b[i] = 3.0f - static_cast<float>(i % 7);
  }
  kiln::Buffer x = runtime.upload(std::span<const float>(a));
  kiln::Buffer y = runtime.upload(std::span<const float>(b));
  kiln::Buffer out = runtime.alloc<float>(kElements);
  auto sync = [&] { runtime.synchronize(); };
  std::vector<Row> rows;

  // The C API with the kiln_args built once, as a C caller that launches in a loop would.
  kiln_arg args[4] = {};
  args[0].kind = args[1].kind = args[2].kind = KILN_ARG_BUFFER;
  args[0].value.buffer.buffer = x.handle();
  args[1].value.buffer.buffer = y.handle();
  args[2].value.buffer.buffer = out.handle();
  args[3].kind = KILN_ARG_INT;
  args[3].value.i = kElements;
  kiln_kernel *k = kernel.handle();
  rows.push_back(timeRow(
      "C: kiln_launch", count, [&] { checkC(kiln_launch(k, kiln_grid{1, 1, 1}, args, 4), "kiln_launch"); }, sync));

  // The same on a stream the caller created, passed with every launch.
  const kiln::rt::CudaApi *api = nullptr;
  if (kiln::rt::Status s = kiln::rt::loadCudaApi(api); !s.ok())
    die(s.message());
  CUstream stream;
  if (api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    die("cuStreamCreate failed");
  rows.push_back(timeRow(
      "C: kiln_launch_on_stream", count,
      [&] { checkC(kiln_launch_on_stream(k, kiln_grid{1, 1, 1}, args, 4, stream), "kiln_launch_on_stream"); },
      [&] { api->cuStreamSynchronize(stream); }));

  // The C++ API: arguments converted from C++ values on every call.
  rows.push_back(timeRow(
      "C++: Kernel::launch", count, [&] { kernel.launch({1, 1, 1}, x, y, out, kElements); }, sync));

  rows.push_back(driverFloor(bundlePath, x.device_address(), y.device_address(), out.device_address(), count));

  std::vector<float> got = out.download<float>();
  for (int i = 0; i < kElements; ++i)
    if (got[i] != a[i] + b[i])
      die("element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", not " + std::to_string(a[i] + b[i]));

  std::printf("| launch of vector_add (1 program, 1024 elements), %d launches | host µs per call | µs per "
              "launch back to back until done | call over the floor |\n",
              count);
  std::printf("| --- | --- | --- | --- |\n");
  const double floor = rows.back().callUs;
  for (const Row &row : rows)
    std::printf("| %s | %.2f | %.2f | %+.2f |\n", row.what.c_str(), row.callUs, row.drainUs, row.callUs - floor);
  std::printf("device: %s\n", runtime.device_name().c_str());
  return 0;
}
