//===- FuzzTarget.h - One fuzz input through the frontend --------*- C++ -*-===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

/// Compiles `data` as a Kiln file through every frontend stage (parse, sema, lowering,
/// verification, the pass pipeline, printing and re-parsing the Tile IR). Any internal
/// compiler error or round-trip mismatch aborts the process with the input printed;
/// user errors are the expected outcome for most inputs.
void compileOneInput(const uint8_t *data, size_t size);

} // namespace kiln::fuzz
