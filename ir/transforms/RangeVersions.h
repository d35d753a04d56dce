//===- RangeVersions.h - A run of ops in two versions, chosen at run time -*- C++ -*-===//
//
// Internal to reduction-chain fusion. A chain held on chip (OnChipPath.cpp) and a share
// of a cluster split (HeldShare.cpp) both put a run of ops of one block into
//
//   if (cond) { a version without loops, built by the caller } else { the ops as they were }
//
// and guard the copies of loop bodies whose block may not exist: loads and stores
// masked off, carried values kept.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <vector>

namespace kiln::ir {

/// The ops of `parent` from `first` to `last`, in order.
std::vector<Op *> opsBetween(Block &parent, Op *first, Op *last);

/// The values `range` (ops at the top level of `parent`, in order) defines that later
/// ops of `parent`, or ops nested in them, read.
std::vector<Value *> escapingValues(Block &parent, const std::vector<Op *> &range);

/// Puts `if (cond) { } else { range; yield escaping }` where `range` was, gives the
/// `if` a result for each escaping value and makes the ops after it read those. Returns
/// the `if`: its then-branch is the caller's to fill and to end with a yield of the
/// escaping values as it computes them.
Op *versionRange(Block &parent, const std::vector<Op *> &range, Value *cond, const std::vector<Value *> &escaping,
                 AttrMap attrs = {});

/// `0 <= ub - lb <= limit`, built at `b`: the range is not reversed and spans at most
/// `limit` (a value of the bounds' type).
Value *spansAtMost(Builder &b, Location loc, Value *lb, Value *ub, Value *limit);

/// Whether a loop body can run as a copy guarded by a mask: straight-line code whose
/// only effects are loads and stores, which the mask turns off (a nested loop or `if`
/// could do more with the values a missing block reads in place of memory).
bool guardableBody(const Block &body);

/// Turns `access` (a load or store of a block that may not exist) off where `valid` is
/// false, by and-ing it into the access's mask.
void guardAccess(Op &access, Value *valid);

/// `valid ? now : before`, for a value of any shape.
Value *selectIfValid(Builder &b, Location loc, Value *valid, Value *now, Value *before);

} // namespace kiln::ir
