//===- DTypes.h - Dtype spellings and the C ABI's kiln_dtype -----*- C++ -*-===//
//
// The runtime links only the support library, not the IR library, so it cannot call
// kiln::dtypeName(). It reads the same master list (KILN_DTYPES in ir/Type.h) instead,
// which keeps the spellings in a bundle identical to those of Kiln source and .tir text.
// kiln_dtype in the C header lists the dtypes in the same order; DTypes.cpp checks that.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"
#include "runtime/kiln_runtime.h"

#include <optional>
#include <string_view>

namespace kiln::rt {

/// "f32", "bf16", ... as in Kiln source.
std::string_view dtypeSpelling(DType t);
/// Inverse of dtypeSpelling.
std::optional<DType> parseDTypeSpelling(std::string_view name);
/// Bytes of one element in memory and as a kernel argument (bool: 1).
unsigned dtypeSizeBytes(DType t);
bool dtypeIsFloat(DType t);
bool dtypeIsSigned(DType t);

/// DType <-> kiln_dtype (KILN_DTYPE_NONE has no DType).
kiln_dtype toCDType(DType t);
std::optional<DType> fromCDType(kiln_dtype t);

/// "*f32" for a pointer parameter, "f32" for a scalar one.
std::string paramTypeSpelling(DType t, bool pointer);

} // namespace kiln::rt
