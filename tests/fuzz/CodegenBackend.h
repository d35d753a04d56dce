//===- CodegenBackend.h - The code generator as the fuzzer's last stage -*- C++ -*-===//
#pragma once

#include "tests/fuzz/FuzzTarget.h"

namespace kiln::fuzz {

/// Generates PTX (and SPIR-V for the default pipeline's module) for every kernel of a
/// module the pipeline optimized (CodegenBackend.cpp).
Backend codegenBackend();

} // namespace kiln::fuzz
