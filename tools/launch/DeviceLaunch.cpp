//===- DeviceLaunch.cpp - Running a bundle on a GPU from host arguments ---===//
#include "tools/launch/DeviceLaunch.h"

#include "runtime/Bundle.h"
#include "runtime/DTypes.h"
#include "support/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <vector>

namespace kiln::launch {

std::optional<GpuKind> parseGpuKind(std::string_view name) {
  if (name == "auto")
    return GpuKind::Auto;
  if (name == "cuda")
    return GpuKind::Cuda;
  if (name == "ze")
    return GpuKind::LevelZero;
  return std::nullopt;
}

OpenedRuntime openRuntime(GpuKind kind) {
  OpenedRuntime out;
  kiln::Runtime::Options options;
  options.backend = kind == GpuKind::Cuda        ? kiln::Backend::Cuda
                    : kind == GpuKind::LevelZero ? kiln::Backend::LevelZero
                                                 : kiln::Backend::Auto;
  try {
    out.runtime = std::make_unique<kiln::Runtime>(options);
  } catch (const kiln::RuntimeError &e) {
    out.status = e.status();
    out.error = e.what();
  } catch (const std::exception &e) {
    out.status = KILN_ERROR_DRIVER;
    out.error = e.what();
  }
  return out;
}

std::string describeDevice(const kiln::Runtime &runtime) {
  const char *api = runtime.backend() == kiln::Backend::Cuda ? "CUDA" : "Level Zero";
  return runtime.device_name() + " (" + api + ", " + runtime.target() + ")";
}

DiagCode diagCodeFor(kiln_status status) {
  switch (status) {
  case KILN_ERROR_ARGUMENT_MISMATCH: return DiagCode::RunArgument;
  case KILN_ERROR_INVALID_BUNDLE: return DiagCode::BadBundle;
  case KILN_ERROR_IO: return DiagCode::FileNotReadable;
  case KILN_ERROR_OUT_OF_BOUNDS: return DiagCode::OutOfBounds;
  default: return DiagCode::DeviceError;
  }
}

std::string joinLines(const std::string &text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos)
      continue;
    line = line.substr(b, e - b + 1);
    if (!out.empty())
      out += out.back() == ':' ? " " : "; ";
    out += line;
  }
  return out;
}

void reportRuntimeError(DiagnosticEngine &diags, kiln_status status, const std::string &message,
                        const std::string &hint) {
  // The message proper reads as one line; a driver's log after it ("JIT log:", "build
  // log:") keeps its lines, as notes, since it names PTX or SPIR-V lines.
  std::string head = message, log;
  for (const char *marker : {"\nJIT log:\n", "\nbuild log:\n"})
    if (size_t at = message.find(marker); at != std::string::npos && at < head.size()) {
      head = message.substr(0, at);
      log = message.substr(at + 1);
    }
  head = joinLines(head);
  if (head.empty())
    head = std::string("the runtime failed with ") + kiln_status_name(status);
  auto d = diags.error(Location::commandLine(), diagCodeFor(status));
  d << head;
  std::istringstream in(log);
  constexpr size_t kMaxNotes = 60;
  size_t notes = 0, dropped = 0;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (line.empty())
      continue;
    if (notes < kMaxNotes)
      d.note(Location::commandLine(), line), ++notes;
    else
      ++dropped;
  }
  if (dropped)
    d.note(Location::commandLine(), "(" + std::to_string(dropped) + " more lines of the log)");
  if (!hint.empty())
    d.hint(hint);
}

kiln_arg launchArgument(const rt::BundleParam &p, const HostArg &a, const std::vector<kiln::Buffer> &buffers,
                        uint64_t byteOffset) {
  kiln_arg out{};
  if (p.pointer) {
    out.kind = KILN_ARG_BUFFER;
    out.value.buffer.buffer = a.kind == HostArg::Kind::Buffer ? buffers[a.buffer].handle() : nullptr;
    out.value.buffer.offset = byteOffset;
    return out;
  }
  if (a.kind == HostArg::Kind::Float) {
    out.kind = KILN_ARG_FLOAT;
    // A literal means the nearest value of the parameter's type, as in Kiln source; the
    // runtime would refuse the unrounded double. Out-of-range values are left for the
    // runtime to refuse, naming the parameter.
    double v = a.f;
    bool inRange = !std::isfinite(v) || p.dtype != DType::F32 || std::fabs(v) <= std::numeric_limits<float>::max();
    out.value.f = dtypeIsFloat(p.dtype) && inRange ? roundToFloatDType(p.dtype, v) : v;
    return out;
  }
  if (p.dtype == DType::Bool) {
    out.kind = KILN_ARG_BOOL;
    out.value.b = a.i != 0;
  } else if (dtypeIsInteger(p.dtype) && !dtypeIsSigned(p.dtype)) {
    out.kind = KILN_ARG_UINT; // u64 values above INT64_MAX arrive as their bit pattern
    out.value.u = static_cast<uint64_t>(a.i);
  } else {
    out.kind = KILN_ARG_INT;
    out.value.i = a.i;
  }
  return out;
}

namespace {

std::string formatMs(double ms) {
  std::ostringstream os;
  os << std::setprecision(4) << std::fixed << ms;
  return os.str();
}

} // namespace

std::string timeSummary(const std::vector<double> &times, const std::string &one, const std::string &many) {
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double t : times)
    sum += t;
  const size_t n = sorted.size();
  if (n == 0)
    return "no " + many;
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return std::to_string(n) + " " + (n == 1 ? one : many) + ": min " + formatMs(sorted.front()) +
         " ms, median " + formatMs(median) + " ms, mean " + formatMs(sum / static_cast<double>(n)) + " ms, max " +
         formatMs(sorted.back()) + " ms";
}

std::vector<kiln::Buffer> uploadBuffers(kiln::Runtime &runtime, const HostArguments &host) {
  std::vector<kiln::Buffer> buffers;
  buffers.reserve(host.buffers.size());
  for (const HostBuffer &b : host.buffers) {
    buffers.push_back(runtime.alloc(b.data.size(), rt::toCDType(b.dtype)));
    buffers.back().write(b.data.data(), b.data.size());
  }
  return buffers;
}

std::vector<std::vector<std::byte>> downloadBuffers(const std::vector<kiln::Buffer> &buffers,
                                                    const HostArguments &host) {
  std::vector<std::vector<std::byte>> results(host.buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    results[i].resize(host.buffers[i].data.size());
    buffers[i].read(results[i].data(), results[i].size());
  }
  return results;
}

void adoptChangedBuffers(HostArguments &host, std::vector<std::vector<std::byte>> &results) {
  for (size_t i = 0; i < host.buffers.size(); ++i)
    if (results[i] != host.buffers[i].data) {
      host.buffers[i].data = std::move(results[i]);
      host.buffers[i].written = true;
    }
}

bool reportingRuntimeErrors(DiagnosticEngine &diags, const std::function<bool()> &body) {
  try {
    return body();
  } catch (const kiln::RuntimeError &e) {
    reportRuntimeError(diags, e.status(), e.what());
    return false;
  } catch (const std::bad_alloc &) {
    reportRuntimeError(diags, KILN_ERROR_OUT_OF_MEMORY, "out of host memory");
    return false;
  }
}

bool runBundle(kiln::Runtime &runtime, std::span<const uint8_t> bundleBytes, HostArguments &host,
               const GpuLaunchOptions &options, DiagnosticEngine &diags, TimingReport *timing) {
  return reportingRuntimeErrors(diags, [&] {
    std::string error;
    std::optional<rt::Bundle> bundle = rt::parseBundle(bundleBytes, error);
    if (!bundle) {
      reportRuntimeError(diags, KILN_ERROR_INVALID_BUNDLE, "invalid bundle: " + error);
      return false;
    }
    if (host.args.size() != bundle->params.size()) {
      reportRuntimeError(diags, KILN_ERROR_ARGUMENT_MISMATCH,
                         "kernel '" + bundle->kernelName + "' takes " + std::to_string(bundle->params.size()) +
                             " arguments, got " + std::to_string(host.args.size()));
      return false;
    }
    kiln::Kernel kernel;
    {
      TimingReport::Scope timer(timing, "run: load the kernel (" + runtime.target() + ")");
      kernel = runtime.load_bundle_bytes(bundleBytes);
    }
    std::vector<kiln::Buffer> buffers;
    {
      TimingReport::Scope timer(timing, "run: upload");
      buffers = uploadBuffers(runtime, host);
    }
    std::vector<kiln_arg> args;
    for (size_t i = 0; i < host.args.size(); ++i)
      args.push_back(launchArgument(bundle->params[i], host.args[i], buffers));
    kiln::Grid grid(options.grid[0], options.grid[1], options.grid[2]);

    std::vector<double> times;
    kiln::Event start, end;
    if (options.time) {
      start = runtime.create_event();
      end = runtime.create_event();
    }
    auto launchOnce = [&] {
      if (options.time)
        start.record();
      kernel.launch_args(grid, args);
      if (options.time) {
        end.record();
        end.synchronize();
        times.push_back(kiln::Event::elapsed_ms(start, end));
      }
    };
    {
      TimingReport::Scope timer(timing, "run: launch and wait");
      launchOnce();
      runtime.synchronize();
    }
    std::vector<std::vector<std::byte>> results;
    {
      TimingReport::Scope timer(timing, "run: download");
      results = downloadBuffers(buffers, host);
    }
    if (options.repeat > 1) {
      TimingReport::Scope timer(timing, "run: " + std::to_string(options.repeat - 1) + " more launches");
      for (uint64_t r = 1; r < options.repeat; ++r)
        launchOnce();
      runtime.synchronize();
    }
    if (options.time && options.timeOut && !times.empty()) {
      std::ostream &os = *options.timeOut;
      os << options.tool << ": " << bundle->kernelName << " on " << describeDevice(runtime) << ", grid "
         << options.grid[0] << "," << options.grid[1] << "," << options.grid[2] << ", " << timeSummary(times, "launch", "launches")
         << "\n";
      os.flush();
    }
    // Only now, with every step done, does the host side change.
    adoptChangedBuffers(host, results);
    return true;
  });
}

} // namespace kiln::launch
