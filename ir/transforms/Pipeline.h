//===- Pipeline.h - The pass pipeline and the pass registry ------*- C++ -*-===//
#pragma once

#include "ir/IR.h"
#include "ir/transforms/FusionPolicy.h"
#include "ir/transforms/SplitCostModel.h"
#include "support/Diagnostics.h"
#include "support/Timing.h"

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir {

struct PipelineOptions;

/// One registered pass: `dslc-opt --pass=NAME` runs it alone and `--help` lists it.
struct PassInfo {
  const char *name;
  const char *summary;
  bool (*run)(Module &, const PipelineOptions &); ///< returns true when the IR changed
};

/// Every pass, once each.
const std::vector<PassInfo> &passRegistry();
/// The names of the passes the default pipeline runs, in order (some run twice).
const std::vector<std::string> &defaultPipeline();
const PassInfo *findPass(const std::string &name);

/// The most blocks a chain's range may span for the held-blocks version of a chain
/// (OnChipPath.cpp). Each block copies every loop body of the chain once: a bound on
/// the code.
constexpr int64_t kMaxHeldBlocks = 8;

struct PipelineOptions {
  /// Reduction-chain fusion (fuse-reductions); off keeps every loop as written.
  bool fuseReductions = true;
  /// The multi-segment strategy of fusion: forced, or chosen from the launch's size.
  ReductionSplitOptions reductionSplit;
  /// What fusion may assume beyond exact algebra (--fuse-quantized).
  FusionPolicy fusionPolicy;
  /// The most blocks a chain's range may span for the versions without loops that hold
  /// it on chip (OnChipPath.cpp): 1 for the one-block version alone; more lets the
  /// held-blocks version take as many as fit (onChipBlocksOf says which a target takes).
  int64_t maxOnChipBlocks = kMaxHeldBlocks;
  /// When set, fusion reports what it did and declined to do here, as remarks.
  DiagnosticEngine *fusionRemarks = nullptr;
  /// Give blocks() loops a full-block version (specialize-block-loops); off for sm_90a
  /// (setPipelineTarget says why).
  bool specializeBlockLoops = true;
  /// When set, fusion reports how each blocks() loop is mapped (--explain-sparsity).
  DiagnosticEngine *sparsityRemarks = nullptr;
  bool printAfterAll = false; ///< dump the IR after each pass ("(unchanged)" if it was a no-op)
  TimingReport *timing = nullptr; ///< when set, each pass records its wall time here
  bool verifyEach = true;     ///< verify after each pass; a failure is an internal error
  std::ostream *dump = nullptr; ///< where the two reports above go (stderr when null)
  /// When not empty, run exactly these passes (by registry name) instead of the default.
  std::vector<std::string> passes;
};

/// PipelineOptions::maxOnChipBlocks for `target` ("sm_90", "spirv64", ...): 1 for
/// SPIR-V (OnChipPath.cpp says why), the held-blocks version's bound for the others.
int64_t onChipBlocksOf(std::string_view target);

/// Sets what the passes take from the code-generation target ("sm_90", "spirv64", ...):
/// the SMs and the largest cluster of the multi-segment cost model, and the blocks a
/// row may hold on chip.
void setPipelineTarget(PipelineOptions &options, std::string_view target);

/// Runs the Tile IR pipeline on `module`. Returns false when a pass produced invalid IR
/// (reported as an internal compiler error).
bool runPipeline(Module &module, const PipelineOptions &options, DiagnosticEngine &diags);

} // namespace kiln::ir
