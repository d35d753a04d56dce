//===- Npy.h - Reading and writing NumPy .npy files --------------*- C++ -*-===//
//
// `dslc run` and `kiln-run` exchange buffers with users as .npy files (format versions
// 1.0-3.0, little-endian, C order). NumPy has no bf16 or fp8 dtypes, so those travel as
// raw void elements of the right width ('|V2' for bf16, '|V1' for the f8 formats); the
// kernel's pointee type says how to read the bits.
//
// A header is read exactly as NumPy reads it (support/NpyHeader.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"
#include "support/AtomicFile.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct NpyArray {
  std::string descr;           ///< as in the header, e.g. "<f4", "|V2"
  Shape shape;                 ///< empty for a 0-d array
  std::vector<std::byte> data; ///< C-order element bytes
};

/// Reads `path`. On failure returns nullopt and sets `error` to a user-facing reason
/// ("not a .npy file", "Fortran-order arrays are not supported", ...). Anything but a
/// regular file is refused without blocking (support/ReadFile.h).
std::optional<NpyArray> readNpy(const std::string &path, std::string &error);

/// Writes `array` to `path` atomically: a temporary file beside it, then rename, so a
/// crash never leaves a half-written file. Returns false and sets `error` on failure.
bool writeNpyAtomic(const std::string &path, const NpyArray &array, std::string &error);
/// The same file staged, not yet in place (support/AtomicFile.h): for several arrays
/// replaced together, or not at all.
std::optional<StagedFile> stageNpy(const std::string &path, const NpyArray &array, std::string &error);

/// Whether an .npy descr stores elements of exactly `dtype` (see the file comment).
bool npyDescrMatches(const std::string &descr, DType dtype);
/// The descr Kiln writes for `dtype`.
std::string npyDescrFor(DType dtype);
/// A readable name of a descr for messages ("float32 ('<f4')").
std::string npyDescrDescription(const std::string &descr);

} // namespace kiln
