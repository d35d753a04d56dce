//===- Pipeline.h - The pass pipeline and the pass registry ------*- C++ -*-===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln::ir {

/// One registered pass: `dslc-opt --pass=NAME` runs it alone and `--help` lists it.
struct PassInfo {
  const char *name;
  const char *summary;
  bool (*run)(Module &); ///< returns true when the IR changed
};

/// Every pass, in pipeline order.
const std::vector<PassInfo> &passRegistry();
const PassInfo *findPass(const std::string &name);

struct PipelineOptions {
  bool printAfterAll = false; ///< dump the IR after each pass ("(unchanged)" if it was a no-op)
  TimingReport *timing = nullptr; ///< when set, each pass records its wall time here
  bool verifyEach = true;     ///< verify after each pass; a failure is an internal error
  std::ostream *dump = nullptr; ///< where the two reports above go (stderr when null)
  /// When not empty, run exactly these passes (by registry name) instead of the default.
  std::vector<std::string> passes;
};

/// Runs the Tile IR pipeline on `module`. Returns false when a pass produced invalid IR
/// (reported as an internal compiler error).
bool runPipeline(Module &module, const PipelineOptions &options, DiagnosticEngine &diags);

} // namespace kiln::ir
