//===- KernelArguments.h - A Tile IR kernel as a launch signature -*- C++ -*-===//
//
// The command-line contract of `--grid` and `--arg NAME=VALUE` lives in the neutral
// launch library (tools/launch/HostArguments.h), shared with kiln-run, which knows no
// Tile IR. This is the IR side of it: a kernel's runtime parameters as a neutral
// signature, and running bound host arguments on the reference interpreter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/interp/Interpreter.h"
#include "support/Diagnostics.h"
#include "tools/launch/HostArguments.h"

namespace kiln::driver {

/// `kernel`'s runtime parameters (name, dtype, pointer), in order, and its block masks.
launch::Signature signatureOf(const ir::Kernel &kernel);

/// Runs `kernel` on the interpreter with `host`'s arguments. On success the buffers the
/// kernel stored into hold the results and are marked written; on failure (reported
/// through `diags`) `host` is unchanged.
bool runOnInterpreter(const ir::Kernel &kernel, launch::HostArguments &host, const interp::RunOptions &options,
                      DiagnosticEngine &diags);
/// The same for graph `graph` of `module`: its launches one after another.
bool runGraphOnInterpreter(const ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host,
                           const interp::RunOptions &options, DiagnosticEngine &diags);
/// The launches graph `graph` makes with `host`'s arguments (interp::planGraph), for a
/// GPU to run; a pointer argument names a buffer of `host`. `host` is unchanged.
bool planGraphLaunches(const ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host,
                       DiagnosticEngine &diags, std::vector<interp::GraphLaunchCall> &out);

} // namespace kiln::driver
