//===- AtomicFile.h - Replacing a file all at once -----------------*- C++ -*-===//
//
// Every file Kiln writes for later use (bundles, cache entries, the .npy buffers that
// `dslc run` and `kiln-run` write back) is replaced atomically: readers, including other
// processes writing the same name at the same moment, see the old file or the whole
// new one, never a part, and a failed write leaves the old file as it was.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace kiln {

struct AtomicWriteOptions {
  /// Update an existing file as the user knows it: write through a symbolic link to
  /// its target, and keep the target's permission bits. Off, the name is replaced by
  /// a new file with mode 0644 (less the umask).
  bool updateInPlace = false;
};

/// Writes the concatenation of `parts` to `path`: a uniquely named temporary file in
/// the same directory (so the rename stays on one file system), flushed to disk, then
/// renamed over `path`. Returns "" on success, else why it failed; no temporary file is
/// left behind either way.
std::string writeFileAtomically(const std::string &path, std::initializer_list<std::span<const uint8_t>> parts,
                                const AtomicWriteOptions &options = {});

inline std::string writeFileAtomically(const std::string &path, std::span<const uint8_t> bytes,
                                       const AtomicWriteOptions &options = {}) {
  return writeFileAtomically(path, {bytes}, options);
}

} // namespace kiln
