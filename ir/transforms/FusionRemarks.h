//===- FusionRemarks.h - --explain-fusion remarks ----------------*- C++ -*-===//
#pragma once

#include "ir/transforms/ReductionChains.h"
#include "support/Diagnostics.h"

namespace kiln::ir {

/// Reports what fusion will do with `chains` (before the rewrite): a remark E1000 per
/// fused chain with a note per loop, a remark E1001 per loop left as written.
void reportFusion(std::vector<ReductionChain> &chains, DiagnosticEngine &diags);

} // namespace kiln::ir
