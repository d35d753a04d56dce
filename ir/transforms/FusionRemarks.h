//===- FusionRemarks.h - --explain-fusion remarks ----------------*- C++ -*-===//
#pragma once

#include "ir/transforms/ReductionChains.h"
#include "support/Diagnostics.h"

namespace kiln::ir {

/// Reports what fusion will do with `chains` (before the rewrite): a remark E1000 per
/// fused chain with a note per loop, a remark E1001 per loop left as written.
void reportFusion(std::vector<ReductionChain> &chains, DiagnosticEngine &diags);

/// Reports how each blocks() loop of `kernel` is mapped onto programs (before the
/// rewrite): a remark E1002 per loop, saying row-wise or block-wise and why.
void reportSparsity(Kernel &kernel, std::vector<ReductionChain> &chains, DiagnosticEngine &diags);

} // namespace kiln::ir
