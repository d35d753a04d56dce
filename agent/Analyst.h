//===- Analyst.h - The performance analyst: a profile read, advice written -*- C++ -*-===//
//
// KForge's second agent (docs/agent.md). Once a candidate is verified, the generator is
// asked for a faster one; before that, the analyst — the model again, under its own
// instructions (agent/prompts/analyst.md) — reads the candidate's profile and writes
// concrete advice that goes to the generator with the verdict. The profile is what a
// CUDA programmer would look at: on a GPU the time beside the reference's and the bytes
// per second against the copy ceiling (Verify.h, measureSpeed); everywhere, each
// kernel's threads, shared memory, registers, spills and occupancy on the target
// (`dslc --resource-usage`, which asks ptxas) and the compiler's fusion remarks
// (`dslc --explain-fusion`: which reduction loops became one pass, and why the others
// did not).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "agent/ChatClient.h"
#include "agent/Verify.h"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::agent {

struct Profile {
  nlohmann::json kernels = nlohmann::json::array(); ///< dslc --resource-usage, one object per kernel
  std::vector<std::string> remarks;                   ///< fusion remarks, one line each
  std::optional<Speed> speed;                         ///< on a GPU
  std::string problem;                                ///< what could not be measured, and why
};

/// The profile of verified program `program` (its timing `speed`, when it was timed),
/// compiled for `target` (sm_90: the H200 of agent/prompts/ceilings.md).
Profile profileProgram(const Task &task, const std::string &program, const VerifyOptions &options,
                       const std::optional<Speed> &speed, const std::string &target = "sm_90");

nlohmann::json toJson(const Profile &profile);

/// What the analyst is sent after its instructions: the task, the program, its profile.
std::string analystRequest(const Task &task, const std::string &programText, const Profile &profile);

} // namespace kiln::agent
