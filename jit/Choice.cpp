//===- Choice.cpp - The fastest of several ways to compute one result -----===//
//
// Measures with the same pieces as @autotune (Autotuner.h): timeRuns for the device
// time, ArgumentSnapshot to leave the caller's buffers as they were, TuningRecord for
// what the disk cache keeps. The JIT's mutex is held only around the memo and the
// cache, never while a candidate runs (candidates launch through the same JIT) nor while
// the note is logged.
//
//===----------------------------------------------------------------------===//
#include "jit/Choice.h"

#include "jit/Autotuner.h"
#include "jit/CacheKey.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>

namespace kiln::jit {

static std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", ms);
  return text;
}

static void checkRequest(const ChoiceRequest &request) {
  if (request.search.empty())
    throw Failure{KILN_ERROR_INVALID_VALUE, "a choice needs the name of what it decides (search is empty)"};
  if (request.candidates.empty())
    throw Failure{KILN_ERROR_INVALID_VALUE, "search '" + request.search + "' has no candidates"};
  std::set<std::string> seen;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    const std::string &name = request.candidates[i];
    if (name.empty())
      throw Failure{KILN_ERROR_INVALID_VALUE,
                    "search '" + request.search + "': candidate " + std::to_string(i) + " has no name"};
    if (!seen.insert(name).second)
      throw Failure{KILN_ERROR_INVALID_VALUE,
                    "search '" + request.search + "': two candidates are named '" + name + "'"};
  }
}

size_t chooseFastest(JitState &jit, const ChoiceRequest &request, const RunCandidate &run,
                     std::span<const kiln_arg> preserve) {
  checkRequest(request);
  if (request.candidates.size() == 1)
    return 0; // nothing to measure
  KeyText keyText;
  keyText.add("kiln-choice", 1).add("search", request.search);
  for (const std::string &name : request.candidates)
    keyText.add("candidate", name);
  keyText.add("key", request.key).add("device", jit.deviceName).add("compiler", compilerFingerprint());
  const std::string recordKey = keyText.digest();
  {
    std::lock_guard<std::mutex> lock(jit.mutex);
    if (auto it = jit.choices.find(recordKey); it != jit.choices.end())
      return it->second;
    auto sound = [&](const std::string &text) {
      return TuningRecord::parseBest(text, request.candidates).has_value();
    };
    if (std::optional<std::string> record = jit.cache.loadText(recordKey, "choice", sound))
      return jit.choices[recordKey] = *TuningRecord::parseBest(*record, request.candidates);
  }

  const auto searchStart = std::chrono::steady_clock::now();
  ArgumentSnapshot snapshot;
  if (std::string why = snapshot.take(jit.runtime, preserve); !why.empty())
    throw Failure{KILN_ERROR_DRIVER, "search '" + request.search + "': cannot copy the buffers to preserve (" + why +
                                         "), so nothing was run"};
  TuningRecord record;
  record.keyValues = request.key;
  std::optional<size_t> best;
  std::string reasons;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    record.configs.push_back(request.candidates[i]);
    record.medianMs.emplace_back();
    record.skipped.emplace_back();
    float ms = 0;
    std::string why = snapshot.restore();
    if (why.empty()) {
      // At least one untimed run: the first compiles and autotunes the candidate's
      // kernels, which must not count.
      const unsigned warmup = std::max(jit.autotuneWarmup, 1u);
      try {
        why = timeRuns(jit.runtime, [&] { return run(i); }, warmup, jit.autotuneRuns, ms);
      } catch (const Failure &f) {
        why = f.message;
      } catch (const std::exception &e) {
        why = e.what();
      }
    }
    if (why.empty()) {
      record.medianMs.back() = ms;
      if (!best || ms < *record.medianMs[*best])
        best = i;
    } else {
      record.skipped.back() = why;
      reasons += "\n  " + request.candidates[i] + ": " + why;
    }
  }
  if (std::string why = snapshot.restore(); !why.empty())
    throw Failure{KILN_ERROR_DRIVER,
                  "search '" + request.search + "': cannot restore the preserved buffers after the runs: " + why};
  if (!best)
    throw Failure{KILN_ERROR_LAUNCH, "search '" + request.search + "': no candidate could run:" + reasons};
  record.best = *best;

  const double searchMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - searchStart).count();
  std::string times;
  for (size_t i = 0; i < request.candidates.size(); ++i)
    if (i != *best)
      times += "; '" + request.candidates[i] + "' " +
               (record.medianMs[i] ? milliseconds(*record.medianMs[i]) + " ms" : "skipped");
  // A choice made without every candidate is kept for this JIT only: a later process
  // measures again, in case what failed (memory, the driver) was passing.
  const bool whole = std::all_of(record.skipped.begin(), record.skipped.end(),
                                 [](const std::string &why) { return why.empty(); });
  {
    std::lock_guard<std::mutex> lock(jit.mutex);
    if (whole)
      jit.cache.storeText(recordKey, "choice", record.serialize());
    jit.choices[recordKey] = *best;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.0f", searchMs);
  jit.log.note("search '" + request.search + "'" + (request.key.empty() ? "" : " for " + request.key) + ": '" +
               request.candidates[*best] + "' (" + milliseconds(*record.medianMs[*best]) + " ms" + times +
               "; the search took " + took + " ms" + (whole ? "" : "; not kept on disk, as a candidate failed") +
               ")");
  return *best;
}

} // namespace kiln::jit
