//===- Fold.h - Constant folding with the interpreter's semantics -*- C++ -*-===//
//
// The canonicalizer folds ops on constants by asking the interpreter what the op
// computes, so that compile-time folding and run-time execution can never disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <optional>
#include <vector>

namespace kiln::interp {

/// Evaluates an elementwise op (arithmetic, comparison, select, math, cast, bitcast) or
/// a shape op of a splat (splat, broadcast, expand_dims, reshape, permute) whose
/// operands are the given constant values (the `value` attribute of `constant` ops:
/// int64 for integers and bool, double for floats), with exactly the semantics the
/// interpreter uses at run time. Returns nullopt for any other op.
std::optional<ir::Attr> foldElementwise(const ir::Op &op, const std::vector<ir::Attr> &operands);

} // namespace kiln::interp
