//===- ElementType.h - The element dtypes and shapes of Kiln -----*- C++ -*-===//
//
// The scalar dtypes and array shapes, below every layer that names them: the Tile IR
// (ir/Type.h builds its value types on them), the runtime (bundle signatures, kernel
// arguments) and support (.npy files, float formats). The runtime and the tools that
// link it carry no IR, so these live here, with nothing but the enum and the alias.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

/// Master list of scalar dtypes: X(Enum, spelling, bits, isFloat, isSigned).
#define KILN_DTYPES(X)                                                         \
  X(Bool, "bool", 1, false, false)                                             \
  X(I8, "i8", 8, false, true)                                                  \
  X(I16, "i16", 16, false, true)                                               \
  X(I32, "i32", 32, false, true)                                               \
  X(I64, "i64", 64, false, true)                                               \
  X(U8, "u8", 8, false, false)                                                 \
  X(U16, "u16", 16, false, false)                                              \
  X(U32, "u32", 32, false, false)                                              \
  X(U64, "u64", 64, false, false)                                              \
  X(F8E4M3, "f8e4m3", 8, true, true)                                           \
  X(F8E5M2, "f8e5m2", 8, true, true)                                           \
  X(F16, "f16", 16, true, true)                                                \
  X(BF16, "bf16", 16, true, true)                                              \
  X(F32, "f32", 32, true, true)                                                \
  X(F64, "f64", 64, true, true)

enum class DType : uint8_t {
#define KILN_DTYPE_ENUM(E, S, B, F, SG) E,
  KILN_DTYPES(KILN_DTYPE_ENUM)
#undef KILN_DTYPE_ENUM
};

/// The dimensions of an array or tile, outermost first; empty for a scalar.
using Shape = std::vector<int64_t>;

} // namespace kiln
