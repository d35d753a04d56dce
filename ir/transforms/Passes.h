//===- Passes.h - Tile IR transforms, one entry point each -------*- C++ -*-===//
//
// Each pass lives in its own file and exports exactly one function. A pass returns
// true when it changed the IR and false when it left it untouched; the pipeline uses
// that to print "(unchanged)" after a pass that did nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/transforms/FusionPolicy.h"
#include "ir/transforms/SplitCostModel.h"
#include "support/Diagnostics.h"

namespace kiln::ir {

/// Folds ops whose operands are constants (with the exact semantics of Ops.def) and
/// applies local algebraic simplifications that are exact for the dtype (x + 0, x * 1,
/// select with a constant condition, cast to the same type, broadcast of a splat, ...).
/// Iterates to a fixed point. Canonicalize.cpp.
bool canonicalize(Module &module);

/// Deletes pure ops whose results are unused, and loop-carried values of `for` loops
/// that nothing reads. DeadCodeElimination.cpp.
bool eliminateDeadCode(Module &module);

/// Replaces a pure op by an identical earlier one that dominates it (same kind,
/// operands, attributes and result types). CommonSubexpressions.cpp.
bool eliminateCommonSubexpressions(Module &module);

/// Replaces `select(m, a, b)` by `a` where the lanes m masks off reach nothing but the
/// skipped lanes of stores masked by m. DeadMaskedLanes.cpp.
bool eliminateDeadMaskedLanes(Module &module);

/// Reduction-chain fusion: cascaded reduction loops over one range become one pass
/// with an incremental (rescaling) form (ReductionChains.h), over one program or split
/// over several as `split` and the cost model decide. Reports remarks to `remarks`
/// when it is not null; `policy` says what it may assume beyond exact algebra, and
/// `maxOnChipBlocks` how many blocks a chain's range held on chip may span.
/// FuseReductions.cpp runs the analysis, the plan and the rewrite.
bool fuseReductions(Module &module, const ReductionSplitOptions &split, const FusionPolicy &policy,
                    int64_t maxOnChipBlocks, DiagnosticEngine *remarks, DiagnosticEngine *sparsityRemarks = nullptr);

/// Gives every iteration of a blocks() loop a version for full blocks, where the
/// block's element flags are constant true, and one for partial blocks, which reads
/// them (`block_elements` marked `partial`). SpecializeBlockLoops.cpp.
bool specializeBlockLoops(Module &module);

/// Turns every `block_elements` into loads of its bitmap words and bit tests, so that
/// code generation sees ordinary tile ops. ExpandBlockMasks.cpp.
bool expandBlockMasks(Module &module);

/// In kernels with num_stages >= 2, loops without `dot` that write no memory load the
/// next iteration's tiles at the top of each iteration and carry them, so that one
/// iteration computes while the next one's loads are in flight. PrefetchLoads.cpp.
bool prefetchLoads(Module &module);

} // namespace kiln::ir
