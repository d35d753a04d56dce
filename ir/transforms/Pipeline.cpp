//===- Pipeline.cpp - The Tile IR pipeline, in order, in one place --------===//
//
// This file is the only place that knows the order of the passes (defaultPipeline).
// Later transforms (sparsity-aware tiling, persistent-task lowering, layout
// assignment) are added to that list, each with a comment saying why it sits where it
// does.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/Pipeline.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/transforms/Passes.h"

#include <iostream>
#include <sstream>

namespace kiln::ir {

const std::vector<PassInfo> &passRegistry() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", "fold constants and simplify exact algebraic identities",
       [](Module &m, const PipelineOptions &) { return canonicalize(m); }},
      {"cse", "merge identical pure operations",
       [](Module &m, const PipelineOptions &) { return eliminateCommonSubexpressions(m); }},
      {"fuse-reductions", "fuse chains of reduction loops into one pass with rescaling (online softmax)",
       [](Module &m, const PipelineOptions &o) {
         return o.fuseReductions && fuseReductions(m, o.reductionSplit, o.fusionPolicy, o.maxOnChipBlocks, o.fusionRemarks,
                                                   o.sparsityRemarks);
       }},
      {"dead-lanes", "drop selects whose masked-off lanes only reach stores under the same mask",
       [](Module &m, const PipelineOptions &) { return eliminateDeadMaskedLanes(m); }},
      {"specialize-block-loops", "give each blocks() iteration a version for full blocks with no masking",
       [](Module &m, const PipelineOptions &o) { return o.specializeBlockLoops && specializeBlockLoops(m); }},
      {"expand-block-masks", "turn block_elements into loads of the block's bitmap words",
       [](Module &m, const PipelineOptions &) { return expandBlockMasks(m); }},
      {"prefetch-loads", "with num_stages >= 2, load a loop's next tiles while it computes on this iteration's",
       [](Module &m, const PipelineOptions &) { return prefetchLoads(m); }},
      {"dce", "delete unused pure operations and dead loop-carried values",
       [](Module &m, const PipelineOptions &) { return eliminateDeadCode(m); }},
  };
  return passes;
}

const std::vector<std::string> &defaultPipeline() {
  static const std::vector<std::string> order = {
      // Fold constants first: sema emits constants for every literal and shape
      // computation, and later passes match on constant operands.
      "canonicalize",
      // Merge identical pure ops (repeated index math, repeated broadcasts). Fusion
      // needs it: loops over one range are recognized by identical bound values.
      "cse",
      // Cascaded reductions become one pass. The rewrite leaves factors of one and
      // repeated index math behind, which the next two passes clean up.
      "fuse-reductions",
      "canonicalize",
      "cse",
      // After CSE has merged the masks: a block loaded twice with different fills (the
      // one-block path of a fused chain) becomes one load, and the arithmetic on it
      // merges in the CSE after.
      "dead-lanes",
      "cse",
      // Sparsity: after fusion, which matches blocks() loops as written, each iteration
      // gets a full-block version whose element flags are constant true; folding then
      // removes the masking from it. The flags left (partial blocks) become loads of
      // their bitmap words, which CSE merges with the loop's other index math.
      "specialize-block-loops",
      "canonicalize",
      "expand-block-masks",
      // Streaming loads ahead clones their address and mask computations for the next
      // iteration; it comes after every pass that matches loops as written (fusion, the
      // sparse loops' versions) and before the CSE that merges the clones' loop-invariant
      // parts with the originals.
      "prefetch-loads",
      "cse",
      // Last: remove what folding and merging left unused.
      "dce",
  };
  return order;
}

const PassInfo *findPass(const std::string &name) {
  for (const PassInfo &p : passRegistry())
    if (name == p.name)
      return &p;
  return nullptr;
}

void setPipelineTarget(PipelineOptions &options, std::string_view target) {
  options.reductionSplit.processors = processorsOf(target);
  options.reductionSplit.maxClusterSize = clusterSizeOf(target);
  options.maxOnChipBlocks = onChipBlocksOf(target);
  // On sm_90a the full-block version costs more than it saves: its branch in the loop
  // would make the queries' wgmma A fragments unsafe to hold in registers across the
  // iterations (a ptxas miscompile, codegen/FragmentPlan.cpp), and staging them in shared
  // memory on every iteration instead measured 27% slower on causal sparse attention.
  options.specializeBlockLoops = target != "sm_90a";
}

/// Verifies after a pass; invalid IR produced by a pass is a compiler bug.
static void verifyAfter(Module &module, const char *passName, DiagnosticEngine &diags) {
  std::ostringstream messages;
  DiagnosticEngine local(*module.sources, messages, DiagFormat::Text);
  if (!verifyModule(module, local))
    KILN_ICE(std::string("pass '") + passName + "' produced invalid Tile IR:\n" + messages.str());
}

bool runPipeline(Module &module, const PipelineOptions &options, DiagnosticEngine &diags) {
  std::vector<const PassInfo *> order;
  for (const std::string &name : options.passes.empty() ? defaultPipeline() : options.passes) {
    const PassInfo *p = findPass(name);
    kiln_assert(p != nullptr, "unknown pass '" + name + "' (the driver validates names)");
    order.push_back(p);
  }
  std::ostream &dump = options.dump ? *options.dump : std::cerr;
  for (const PassInfo *pass : order) {
    bool changed;
    {
      TimingReport::Scope timer(options.timing, std::string("pass: ") + pass->name);
      changed = pass->run(module, options);
    }
    if (options.verifyEach && changed)
      verifyAfter(module, pass->name, diags);
    if (options.printAfterAll) {
      dump << "// -----// IR Dump After " << pass->name << (changed ? "" : " (unchanged)")
           << " //----- //\n";
      if (changed)
        printModule(module, dump);
    }
  }
  return true;
}

} // namespace kiln::ir
