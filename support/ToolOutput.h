//===- ToolOutput.h - What the tools write, checked -------------*- C++ -*-===//
//
// dslc, dslc-opt and kiln-run write their results to a file named by -o or to stdout.
// Either way a write that fails is an error with its reason, never a zero exit status,
// and a file that could not be written whole keeps its old contents.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Diagnostics.h"

#include <string>
#include <string_view>

namespace kiln {

/// Writes `bytes` to `path`, or to stdout when `path` is empty, "-" or /dev/stdout.
/// A regular file is replaced all at once (support/AtomicFile.h): through a symbolic
/// link to its target, its permissions kept, and left as it was when the write fails.
/// Other files (/dev/null, a pipe, a terminal) are written through. Reports E0008 on
/// failure, with the reason.
bool writeOutput(const std::string &path, std::string_view bytes, DiagnosticEngine &diags);

/// Flushes stdout and reports E0008 when anything written to it was lost (a full disk,
/// a closed pipe): a tool whose results did not arrive must not exit 0.
bool finishStdout(DiagnosticEngine &diags);

} // namespace kiln
