//===- TaskFootprints.h - The elements each program of a kernel touches -*- C++ -*-===//
//
// A graph's launches need only wait for the tasks whose memory they touch
// (docs/graphs.md). This analysis is the first half of that: for every load, store and
// atomic of a kernel, the range of elements of its pointer parameter that one program
// touches, as polynomials in the program id and the kernel's integer parameters:
//
//   store(y + program_id(0) * 128 + arange(0, 128), ...)
//     writes y[128·pid.x .. 128·pid.x + 127]
//
// Ranges are intervals [lo, hi] whose bounds are polynomials of degree two at most
// (pid.x · row_stride), computed op by op: constants, program ids, parameters, arange,
// shape ops, +, -, ·, a remainder or quotient by a positive constant (a quotient's
// bounds are those of the coefficients divided down and up), minimum and maximum (where
// one operand's bound is provably the smaller), casts, and the
// induction variable of a loop with a positive constant step (its range [lb, ub - 1]).
// Masks are ignored, so a range may be wider than the elements really touched, never
// narrower. Products and remainders take program ids and integer parameters to be
// non-negative, as grids and sizes are; where that or anything else fails (a value
// carried around a loop, a select, a loaded index) the access's range is unknown: the
// whole buffer. Checked against what the interpreter really touches on random inputs
// (tests/unit/ir/TaskFootprintsTest.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

/// A variable of a footprint: program_id(axis) (kind Pid) or integer parameter `index`.
struct FootprintSymbol {
  enum class Kind { Pid, Param } kind = Kind::Pid;
  unsigned index = 0;
  auto operator<=>(const FootprintSymbol &) const = default;
};

/// Σ coefficient · monomial; the empty monomial is the constant term.
struct FootprintPoly {
  std::map<std::vector<FootprintSymbol>, int64_t> terms;

  static FootprintPoly constant(int64_t c);
  static FootprintPoly symbol(FootprintSymbol s);
  bool isConstant() const;
  std::optional<int64_t> constantValue() const;
  /// Every coefficient non-negative: the value is >= 0 wherever the symbols are.
  bool nonNegative() const;
  unsigned degree() const;
  /// The value for program `pid` and the kernel's integer parameters `params` (indexed by
  /// parameter; pointer parameters' entries are unused).
  int64_t evaluate(const std::array<int64_t, 3> &pid, const std::vector<int64_t> &params) const;
  /// "128·pid.x + 127", with parameters by name.
  std::string str(const Kernel &kernel) const;
  bool operator==(const FootprintPoly &) const = default;
};

/// Elements [lo, hi] of the parameter, both inclusive.
struct FootprintRange {
  FootprintPoly lo, hi;
};

/// One access of a kernel: which pointer parameter, how, and the elements one program
/// touches (nullopt: unknown, the whole buffer).
struct TaskFootprint {
  const Op *op = nullptr;
  unsigned param = 0;
  bool reads = false, writes = false;
  std::optional<FootprintRange> range;
};

/// Every global access of `kernel`, in program order (one per parameter a pointer may
/// point into).
std::vector<TaskFootprint> analyzeTaskFootprints(const Kernel &kernel);

} // namespace kiln::ir
