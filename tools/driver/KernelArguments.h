//===- KernelArguments.h - `--grid` and `--arg NAME=VALUE` -------*- C++ -*-===//
//
// Binds command-line arguments to a kernel's runtime parameters: pointer parameters
// take .npy files (the dtype must equal the pointee type exactly), scalars take
// literals. Nothing is written until a run has succeeded, and then only the buffers
// the kernel stored into, each atomically — a failed run leaves every file as it was.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/interp/Interpreter.h"
#include "support/Diagnostics.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace kiln::driver {

/// Parses "X", "X,Y" or "X,Y,Z" (each >= 1); reports E0606 otherwise.
std::optional<std::array<int64_t, 3>> parseGrid(const std::string &text, DiagnosticEngine &diags);

/// Kernel arguments loaded from the command line, ready for a backend.
struct BoundArguments {
  std::vector<interp::KernelArg> args;  ///< one per kernel parameter, in order
  std::vector<interp::Buffer> buffers;  ///< one per distinct .npy file
  std::vector<std::string> bufferPaths; ///< the file each buffer came from
  std::vector<std::string> bufferDescrs; ///< the .npy descr to write back
  std::vector<Shape> bufferShapes;      ///< the .npy shape to write back
};

/// Reads every `--arg NAME=VALUE` against the kernel's parameters. Unknown, missing,
/// repeated or malformed arguments and dtype mismatches are reported (E0600/E0601);
/// returns nullopt then.
std::optional<BoundArguments> bindArguments(const ir::Kernel &kernel,
                                            const std::vector<std::string> &rawArgs,
                                            DiagnosticEngine &diags);

/// Writes the buffers the run stored into back to their files (atomically).
bool writeBackBuffers(const BoundArguments &bound, DiagnosticEngine &diags);

} // namespace kiln::driver
