//===- LargeStack.h - Run work on a thread with a large stack ----*- C++ -*-===//
//
// The parser and semantic analysis recurse over the program's nesting. Input limits
// bound that depth, and running the compiler on a thread with a generous stack makes
// sure the bound is far from the stack's end on every platform.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <functional>

namespace kiln {

/// Runs `fn` on a new thread with `stackBytes` of stack and returns its result. Falls
/// back to running on the calling thread if such a thread cannot be created.
/// Exceptions thrown by `fn` are rethrown on the calling thread.
int runOnLargeStack(const std::function<int()> &fn, size_t stackBytes = 512u << 20);

} // namespace kiln
