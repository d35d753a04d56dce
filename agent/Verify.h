//===- Verify.h - Is a candidate program right? --------------------*- C++ -*-===//
//
// The verifier of the agent (docs/agent.md): a candidate Kiln program is compiled, then
// run case by case beside the task's reference on the same fresh random inputs, each
// run a `dslc run` in a child process with time and memory limits (ChildProcess.h), the
// candidate in checked mode (docs/checked.md; the interpreter always is). Hardened
// against what models are known to do to pass a test they cannot: the outputs are
// poisoned with NaN before every run (a result left from before does not count), every
// input must come back unchanged, inputs are drawn afresh for every case, and after the
// visible cases come the hidden ones, which the model never sees.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "agent/ChildProcess.h"
#include "agent/Task.h"

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::agent {

struct VerifyOptions {
  std::string dslc;               ///< the dslc that runs programs
  std::string device = "interp";  ///< dslc run --device
  std::string workDir;            ///< scratch for this candidate's runs
  ChildLimits limits;             ///< per run of the candidate
  uint64_t seed = 0;
};

/// What became of a candidate: "verified", "compile-error", "wrong-result",
/// "checked-violation", "timeout" or "rejected" (right on the visible cases, wrong on a
/// hidden one); "task-error" when the reference itself fails (the task is broken).
struct Verdict {
  std::string outcome;
  std::string summary;    ///< one line, for people and for the model's next prompt
  nlohmann::json evidence; ///< diagnostics, the case, the output, errors, ...
};

/// Which of a task's cases a verification runs: the visible cases then the hidden ones,
/// or the large ones (a program that claims more than 10x is verified again on them).
enum class Cases { Shown, Large };

Verdict verifyCandidate(const Task &task, const std::string &candidatePath, const VerifyOptions &options,
                        Cases which = Cases::Shown);

/// How fast a program runs beside the task's reference on the device: each run as
/// `dslc run --time --repeat N` (unchecked), the median launch or graph run, on the
/// task's last hidden case (else its last case), which tasks make their largest.
struct Speed {
  double programMs = 0, referenceMs = 0;
  std::string caseLabel;
  /// The bytes of the case's buffers: what a program must at least read or write once.
  uint64_t bytes = 0;
  double speedup() const { return programMs > 0 ? referenceMs / programMs : 0; }
  /// The program's bytes per second, in GB/s (the figure to hold against the copy
  /// bandwidth, agent/prompts/ceilings.md).
  double gbPerSecond() const { return programMs > 0 ? static_cast<double>(bytes) / (programMs * 1e6) : 0; }
};

/// nullopt with `why` on the interpreter (its time says nothing of a GPU's) or when a
/// run fails. `repeat` launches each. Cases::Large times the last large case instead.
std::optional<Speed> measureSpeed(const Task &task, const std::string &programPath, const VerifyOptions &options,
                                  int repeat, std::string &why, Cases which = Cases::Shown);

/// A speedup above this over the reference is verified again on the large cases.
inline constexpr double kReverifyAbove = 10.0;

} // namespace kiln::agent
