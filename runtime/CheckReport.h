//===- CheckReport.h - A checked kernel's record as the error people read -*- C++ -*-===//
//
// A checked kernel (docs/checked.md) writes its first bad access into a record
// (support/CheckRecord.h); the runtime turns it into KILN_ERROR_OUT_OF_BOUNDS after a
// plain launch (CApi.cpp) and after a graph's persistent kernel (GraphLaunch.cpp). This
// is the one wording of both.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"

#include <cstdint>
#include <string>

namespace kiln::rt {

/// "kernel 'k': store out of bounds at k.kiln:6:5 in program (1, 0, 0)<inProgram>:
/// element 100 of parameter 'dst', outside the buffer passed for it (checked mode
/// stopped the access)", for `record` (kCheckRecordWords words) of `kernel`.
/// `inProgram` follows the program id: " of the launch ... (task 2)" in a graph.
std::string describeCheckRecord(const uint32_t *record, const Bundle &kernel, const std::string &inProgram = "");

} // namespace kiln::rt
