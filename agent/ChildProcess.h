//===- ChildProcess.h - Running a command with limits -------------*- C++ -*-===//
//
// The agent runs the programs a model writes (through `dslc run`) in a child process:
// no shell, its own process group, an address-space limit and a wall-clock limit after
// which the whole group is killed. Standard output and error are kept (up to a bound),
// so the verdict can quote them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::agent {

struct ChildLimits {
  double seconds = 60;                     ///< wall clock; the group is killed after it
  uint64_t memoryBytes = uint64_t(8) << 30; ///< RLIMIT_AS of the child; 0: none
};

struct ChildResult {
  bool started = false;  ///< false: the command could not be run (see `error`)
  bool timedOut = false;
  int exitCode = -1;     ///< when it exited
  int signal = 0;        ///< when a signal ended it
  std::string out, err;  ///< what it printed (the first MiB of each)
  std::string error;     ///< why it did not start
  double seconds = 0;
};

/// Runs `argv` (argv[0] a path) to its end or the limits.
ChildResult runChild(const std::vector<std::string> &argv, const ChildLimits &limits);

} // namespace kiln::agent
