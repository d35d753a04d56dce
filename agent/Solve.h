//===- Solve.h - The agent loop: a model writes, the verifier decides --*- C++ -*-===//
//
// `kiln-agent solve` (docs/agent.md): the generator (a model behind ChatClient.h) is
// given the task's prompt, the language reference and its instructions
// (agent/prompts/), and writes a program; the verifier (Verify.h) decides what became of
// it, and the verdict — the compiler's diagnostics, the output that differed and where,
// the access that left its buffer — goes back to the generator for its next reply, as
// many replies as --iterations allows. Once a candidate is verified it is kept as the
// best, and the generator is asked for a faster one, verified the same way (a hidden
// case catches a "faster" program fitted to the shapes it was shown). On a GPU each
// verified program is timed beside the reference (Verify.h, measureSpeed) and the
// fastest is kept; on the interpreter the first verified one. Before the generator's
// next try the performance analyst (Analyst.h) reads the verified program's profile,
// and its advice goes to the generator with the verdict. Everything is written
// down: each attempt's program, report.json
// (the verdicts and their evidence, the tokens) and transcript.jsonl (every request and
// reply; the key is never in them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "agent/Analyst.h"
#include "agent/ChatClient.h"
#include "agent/Verify.h"

#include <iosfwd>
#include <string>

namespace kiln::agent {

struct SolveOptions {
  ChatOptions chat;
  VerifyOptions verify; ///< workDir is set per attempt
  int iterations = 5;   ///< generator replies at most
  /// The performance analyst (Analyst.h) reads each verified program's profile and
  /// advises the generator's next try; its replies do not count as iterations.
  bool analyst = true;
  std::string analystModel; ///< empty: chat.model
  int timingRepeat = 20; ///< launches per timing of a verified program (on a GPU)
  std::string outDir;
  std::string promptsDir; ///< agent/prompts
  /// What the model reads after its instructions, each under a heading: the language
  /// reference, the builtins, worked examples (a title and a file each).
  std::vector<std::pair<std::string, std::string>> documents;
};

/// Exit status of `kiln-agent solve`.
enum SolveStatus { SolveVerified = 0, SolveFailed = 1, SolveBadInput = 2, SolveEndpointFailed = 3 };

/// Runs the loop on `task`; progress lines go to `progress`.
SolveStatus solve(const Task &task, const SolveOptions &options, std::ostream &progress);

/// The first ```kiln fenced block of a reply, or nullopt.
std::optional<std::string> firstKilnBlock(const std::string &reply);

} // namespace kiln::agent
