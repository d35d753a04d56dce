//===- Specialization.h - Facts of launch arguments that code may assume -*- C++ -*-===//
//
// Like Triton, the JIT specializes a kernel on two facts of its arguments, checked at
// each launch:
//   - every pointer argument is 16-byte aligned (true of every buffer's start; a view
//     into the middle of a buffer may break it), and
//   - which 32- and 64-bit integer arguments are multiples of 16.
// Code compiled knowing them turns `x + row * stride + cols` into 16-byte vector loads
// and stores (codegen::CodegenOptions::paramDivisibility). Each combination seen gets its
// own variant, compiled (and cached) on first use; the bundle records the assumptions
// and the runtime refuses a launch that breaks them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "runtime/Args.h"
#include "runtime/Bundle.h"
#include "runtime/kiln_runtime.h"

#include <compare>
#include <span>
#include <string>
#include <vector>

namespace kiln::jit {

struct ArgFacts {
  bool pointersAligned = true;
  std::vector<unsigned> multiplesOf16; ///< indices of integer parameters, ascending

  /// "aligned, multiples of 16: 2 3" (for key text and messages).
  std::string text() const;
  /// The code-generation options that assume these facts.
  codegen::CodegenOptions applyTo(codegen::CodegenOptions options) const;
  auto operator<=>(const ArgFacts &) const = default;
};

/// What code compiled without launch-time specialization assumes: aligned pointers (as
/// dslc does) and nothing of integers.
inline ArgFacts genericFacts() { return ArgFacts{}; }

/// The facts of a launch's arguments, checked against `params` and packed one slot per
/// parameter (rt::packLaunchArgs): a pointer's slot holds its device address (buffer
/// address plus offset), an integer's its bits. A block mask passed whole has its five
/// parts there like any others.
ArgFacts factsOf(const std::vector<rt::BundleParam> &params, const rt::PackedArgs &packed);

} // namespace kiln::jit
