//===- ChildProcess.h - Running a command with limits -------------*- C++ -*-===//
//
// The agent runs the programs a model writes (through `dslc run`) in a child process:
// no shell, its own process group, a memory limit and a wall-clock limit after
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
  /// Bound the child's data (RLIMIT_DATA: its writable private memory) instead of its
  /// address space. A GPU driver reserves address space far beyond any useful bound on
  /// it (cuInit fails with CUDA_ERROR_OUT_OF_MEMORY under an RLIMIT_AS of 8 GiB), and
  /// the reservation holds no data.
  bool dataOnly = false;
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
