//===- EarlyReturn.h - `return;` in a kernel ends its program ----*- C++ -*-===//
#pragma once

#include "frontend/AST.h"

namespace kiln::sema {

/// Rewrites the bare `return;` statements of `kernel` outside loops into a flag and
/// guards, so that the statements after one do nothing (EarlyReturn.cpp says how).
/// Returns inside loops, and returns with a value, are left for the structural check.
void lowerEarlyReturns(ast::FunctionItem &kernel);

} // namespace kiln::sema
