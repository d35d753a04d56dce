//===- Autotuner.cpp - Timing @autotune configs on the device -------------===//

#include "jit/Autotuner.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

namespace kiln::jit {

ArgumentSnapshot::~ArgumentSnapshot() {
  for (auto &[original, copy] : copies_)
    kiln_buffer_free(copy);
}

std::string ArgumentSnapshot::take(kiln_runtime *runtime, std::span<const kiln_arg> args) {
  for (const kiln_arg &a : args) {
    if (a.kind != KILN_ARG_BUFFER)
      continue;
    // The caller handed the buffer to a kernel, which may write it: restoring it is no
    // more than the kernel itself may do.
    auto *original = const_cast<kiln_buffer *>(a.value.buffer.buffer);
    size_t bytes = kiln_buffer_size(original);
    bool seen = std::any_of(copies_.begin(), copies_.end(), [&](const auto &c) { return c.first == original; });
    if (seen || bytes == 0)
      continue;
    kiln_buffer *copy = nullptr;
    if (kiln_buffer_alloc(runtime, bytes, KILN_DTYPE_NONE, &copy) != KILN_SUCCESS)
      return kiln_last_error();
    copies_.emplace_back(original, copy);
    if (kiln_buffer_copy(copy, 0, original, 0, bytes) != KILN_SUCCESS)
      return kiln_last_error();
  }
  return "";
}

std::string ArgumentSnapshot::restore() {
  for (auto &[original, copy] : copies_)
    if (kiln_buffer_copy(original, 0, copy, 0, kiln_buffer_size(copy)) != KILN_SUCCESS)
      return kiln_last_error();
  return "";
}

std::string timeRuns(kiln_runtime *runtime, const std::function<std::string()> &run, unsigned warmup,
                     unsigned runs, float &medianMs) {
  // The first run also lets the driver finish loading the code; none of these count.
  for (unsigned i = 0; i < warmup; ++i)
    if (std::string why = run(); !why.empty())
      return why;
  kiln_event *start = nullptr, *end = nullptr;
  auto destroy = [](kiln_event *e) { kiln_event_destroy(e); };
  if (kiln_event_create(runtime, &start) != KILN_SUCCESS)
    return kiln_last_error();
  std::unique_ptr<kiln_event, decltype(destroy)> startOwner(start, destroy);
  if (kiln_event_create(runtime, &end) != KILN_SUCCESS)
    return kiln_last_error();
  std::unique_ptr<kiln_event, decltype(destroy)> endOwner(end, destroy);
  std::vector<float> times;
  for (unsigned i = 0; i < std::max(runs, 1u); ++i) {
    float ms = 0;
    if (kiln_event_record(start) != KILN_SUCCESS)
      return kiln_last_error();
    if (std::string why = run(); !why.empty())
      return why;
    if (kiln_event_record(end) != KILN_SUCCESS || kiln_event_synchronize(end) != KILN_SUCCESS ||
        kiln_event_elapsed_ms(start, end, &ms) != KILN_SUCCESS)
      return kiln_last_error();
    times.push_back(ms);
  }
  // The median: one run disturbed by something else on the device does not decide.
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  medianMs = times[times.size() / 2];
  return "";
}

std::string timeLaunch(kiln_runtime *runtime, kiln_kernel *kernel, kiln_grid grid, std::span<const kiln_arg> args,
                       unsigned warmup, unsigned runs, float &medianMs) {
  return timeRuns(
      runtime,
      [&]() -> std::string {
        return kiln_launch(kernel, grid, args.data(), args.size()) == KILN_SUCCESS ? "" : kiln_last_error();
      },
      warmup, runs, medianMs);
}

static constexpr const char *kRecordHeader = "kiln-autotune 1";

std::string TuningRecord::serialize() const {
  std::ostringstream os;
  os << kRecordHeader << "\n";
  os << "key " << keyValues << "\n";
  os << "best " << best << " " << configs[best] << "\n";
  for (size_t i = 0; i < configs.size(); ++i) {
    if (medianMs[i]) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.6f", *medianMs[i]);
      os << "time " << i << " " << ms << " ms " << configs[i] << "\n";
    } else {
      os << "skipped " << i << " " << configs[i] << ": " << skipped[i] << "\n";
    }
  }
  return os.str();
}

std::optional<size_t> TuningRecord::parseBest(const std::string &text, const std::vector<std::string> &configs) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kRecordHeader)
    return std::nullopt;
  while (std::getline(in, line)) {
    if (line.rfind("best ", 0) != 0)
      continue;
    size_t index = 0, used = 0;
    try {
      index = std::stoul(line.substr(5), &used);
    } catch (const std::exception &) {
      return std::nullopt;
    }
    std::string rest = line.substr(5 + used);
    if (index < configs.size() && rest == " " + configs[index])
      return index;
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace kiln::jit
