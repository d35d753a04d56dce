//===- Problem.h - Inputs, launch and CPU check of one workload ---*- C++ -*-===//
//
// A Problem holds one workload's data on the device and on the host: random inputs
// (never zeros, which hide unwritten outputs and can run faster than real data), the
// launch arguments and grid, the work it does (bytes that must move, or flops), and a
// check of the device's output against a CPU reference computed in double precision.
// Problems with the same label share their data, so the configurations of one problem
// see the same inputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/Workloads.h"
#include "runtime/Runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::bench {

/// What the check found.
struct CheckResult {
  bool ok = false;
  double relError = 0; ///< ||out - ref|| / ||ref|| over the checked elements
  int64_t checked = 0; ///< elements compared with the reference
  std::string message; ///< why it failed ("" when ok)
};

class Problem {
public:
  virtual ~Problem() = default;

  /// Launch arguments of `w`'s kernel, in parameter order.
  virtual std::vector<kiln_arg> args() const = 0;
  virtual Grid grid(const Workload &w) const = 0;
  /// Poisons the outputs (so unwritten elements are caught) before a checked launch.
  virtual void poisonOutputs() = 0;
  /// Compares the outputs with the reference; valid after a launch has finished.
  virtual CheckResult check() const = 0;
  /// Bytes the problem must move through device memory (each input read once, each
  /// output written once); 0 for compute-bound problems.
  virtual double bytes() const = 0;
  /// Floating-point operations; 0 for memory-bound problems.
  virtual double flops() const = 0;
};

/// Makes `w`'s problem with fresh random inputs on `rt` (seeded by `seed`).
std::unique_ptr<Problem> makeProblem(Runtime &rt, const Workload &w, uint64_t seed);

} // namespace kiln::bench
