//===- SourceEmitter.h - A kernel as OpenCL C or CUDA C++ source ----*- C++ -*-===//
//
// `dslc --emit=opencl|cuda`: the kernel's Tile IR, after the pass pipeline, printed as
// one OpenCL C or CUDA C++ kernel (docs/source.md). It is a printer over the form code generation
// lowers, not a second compiler: every tile lives in each work-item's registers in the
// layout of codegen/Layout.h (the same one the PTX and SPIR-V paths use), elementwise
// ops work register by register, and what moves elements between work-items
// (broadcasts, reductions) goes through local memory between barriers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <optional>
#include <string>

namespace kiln::codegen {

/// OpenCL C (1.2 and 3.0) for `kernel`: one `__kernel` function named after it, taking
/// its parameters in order as the SPIR-V kernel does (pointers as `__global` pointers,
/// bf16 as its raw 16 bits), launched with work-groups of `kernel.numWarps * 32`
/// work-items, one per program. An op it does not print yet is a located E0109 error
/// naming the op; nothing is returned then.
std::optional<std::string> emitOpenCL(const ir::Kernel &kernel, DiagnosticEngine &diags);

/// The same kernel as CUDA C++: one `extern "C" __global__` function, launched with
/// blocks of `kernel.numWarps * 32` threads, one per program; compiled with
/// `nvcc -fmad=false` it computes what the OpenCL C does.
std::optional<std::string> emitCuda(const ir::Kernel &kernel, DiagnosticEngine &diags);

/// The name of the printed kernel function of Kiln kernel `kernelName`: the name with
/// `_` for what C does not allow in a name, and `_kernel` after a C keyword or a C
/// library function's name (an `extern "C"` kernel would clash with it).
std::string sourceEntryName(const std::string &kernelName);

} // namespace kiln::codegen
