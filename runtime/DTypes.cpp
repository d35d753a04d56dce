//===- DTypes.cpp - Dtype spellings and the C ABI's kiln_dtype ------------===//
//
// One table built from KILN_DTYPES; see DTypes.h for why the runtime keeps its own.
//
//===----------------------------------------------------------------------===//
#include "runtime/DTypes.h"

#include <array>
#include <string>

namespace kiln::rt {

namespace {
struct DTypeRow {
  std::string_view name;
  unsigned bits;
  bool isFloat;
  bool isSigned;
};

constexpr std::array kRows = {
#define KILN_RT_DTYPE_ROW(E, S, B, F, SG) DTypeRow{S, B, F, SG},
    KILN_DTYPES(KILN_RT_DTYPE_ROW)
#undef KILN_RT_DTYPE_ROW
};

const DTypeRow &row(DType t) { return kRows[static_cast<size_t>(t)]; }
} // namespace

// The C enum cannot include the C++ X-macro, so its order is written out by hand; these
// checks make a reordering of either list a build error instead of a silent mismatch.
static_assert(KILN_DTYPE_BOOL == 1 + static_cast<int>(DType::Bool));
static_assert(KILN_DTYPE_I8 == 1 + static_cast<int>(DType::I8));
static_assert(KILN_DTYPE_I16 == 1 + static_cast<int>(DType::I16));
static_assert(KILN_DTYPE_I32 == 1 + static_cast<int>(DType::I32));
static_assert(KILN_DTYPE_I64 == 1 + static_cast<int>(DType::I64));
static_assert(KILN_DTYPE_U8 == 1 + static_cast<int>(DType::U8));
static_assert(KILN_DTYPE_U16 == 1 + static_cast<int>(DType::U16));
static_assert(KILN_DTYPE_U32 == 1 + static_cast<int>(DType::U32));
static_assert(KILN_DTYPE_U64 == 1 + static_cast<int>(DType::U64));
static_assert(KILN_DTYPE_F8E4M3 == 1 + static_cast<int>(DType::F8E4M3));
static_assert(KILN_DTYPE_F8E5M2 == 1 + static_cast<int>(DType::F8E5M2));
static_assert(KILN_DTYPE_F16 == 1 + static_cast<int>(DType::F16));
static_assert(KILN_DTYPE_BF16 == 1 + static_cast<int>(DType::BF16));
static_assert(KILN_DTYPE_F32 == 1 + static_cast<int>(DType::F32));
static_assert(KILN_DTYPE_F64 == 1 + static_cast<int>(DType::F64));
static_assert(kRows.size() == KILN_DTYPE_F64, "a dtype was added to KILN_DTYPES but not to kiln_dtype");

std::string_view dtypeSpelling(DType t) { return row(t).name; }

std::optional<DType> parseDTypeSpelling(std::string_view name) {
  for (size_t i = 0; i < kRows.size(); ++i)
    if (kRows[i].name == name)
      return static_cast<DType>(i);
  return std::nullopt;
}

unsigned dtypeSizeBytes(DType t) { return (row(t).bits + 7) / 8; }
bool dtypeIsFloat(DType t) { return row(t).isFloat; }
bool dtypeIsSigned(DType t) { return row(t).isSigned; }

kiln_dtype toCDType(DType t) { return static_cast<kiln_dtype>(1 + static_cast<int>(t)); }

std::optional<DType> fromCDType(kiln_dtype t) {
  int v = static_cast<int>(t);
  if (v < 1 || v > static_cast<int>(kRows.size()))
    return std::nullopt;
  return static_cast<DType>(v - 1);
}

std::string paramTypeSpelling(DType t, bool pointer) { return (pointer ? "*" : "") + std::string(dtypeSpelling(t)); }

} // namespace kiln::rt
