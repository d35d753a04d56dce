//===- CaseCheck.h - A GPU run's buffers against the interpreter's -*- C++ -*-===//
//
// The half of kiln-gpu-run that needs no GPU: reading a case's .npy files back and
// deciding whether what the GPU left in a buffer matches what the reference interpreter
// left there. Kept apart from the launching so that the unit tests check it directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/unit/codegen/gpu/GpuCase.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::gputest {

/// The element bytes of `file`, an .npy written for buffer argument `arg`. nullopt (and
/// `error`) when it cannot be read or does not hold `arg.count` elements of its dtype.
std::optional<std::vector<std::byte>> readCaseArray(const std::filesystem::path &file,
                                                    const CaseArg &arg, std::string &error);

/// Compares `got`, the contents of buffer argument `arg` after the GPU run, with the
/// case's NAME.expected.npy in `caseDir`: floats within the argument's tolerance, NaN
/// and infinities exactly where the interpreter has them, everything else bit for bit.
/// Returns "" when they agree, else the first differing elements and how many differ.
std::string checkBuffer(const std::filesystem::path &caseDir, const CaseArg &arg,
                        const std::vector<std::byte> &got);

} // namespace kiln::gputest
