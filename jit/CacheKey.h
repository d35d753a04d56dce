//===- CacheKey.h - What a cached kernel depends on, hashed -------*- C++ -*-===//
//
// A cache key is the SHA-256 of a text that lists, one `field value` line each, every
// input the cached result depends on: the source text of every file (imports too) and
// their names, the kernel, its `const` values and launch settings, the code-generation
// options (specializations included), the target and the compiler build (libdevice
// included). Keeping the text rather than hashing fields one by one makes the key easy
// to review and to print when two keys differ unexpectedly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace kiln::jit {

class KeyText {
public:
  /// Appends `field value`; a newline or backslash in the value is escaped, so no value
  /// can forge the next line.
  KeyText &add(std::string_view field, std::string_view value);
  KeyText &add(std::string_view field, int64_t value) { return add(field, std::to_string(value)); }
  /// Appends every line of `other`.
  KeyText &append(const KeyText &other);

  const std::string &text() const { return text_; }
  /// Lowercase hex SHA-256 of the text: the key.
  std::string digest() const;

private:
  std::string text_;
};

/// Lowercase hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

/// The compiler build the JIT is part of, so that a rebuilt compiler never reuses code
/// an older one cached: codegen::compilerVersion() and a hash of the compiler's and the
/// JIT's sources taken at build time, the version of LLVM, and the C++ compiler, build
/// type and a hash of the flags that built them. For example
///   "kiln 0.1.0+3f9a0c1d5e7b2a64, LLVM 22.1.0, GNU 13.3.0 Release (flags 8c2d4e6f0a1b3c5d)"
std::string compilerFingerprint();

/// The rest of the compiler that is not built with it: the libdevice bitcode the NVPTX
/// code generator links from `path` (CodegenOptions::libdevicePath), as "sha256 <hex>"
/// of its bytes, or "missing (<why>)" / "unreadable (<why>)" when it is not there or
/// cannot be read (kernels that call no math function compile without it). A new CUDA toolkit at the same path thus gives new
/// keys. The file is hashed when first asked for, and again only when it has changed
/// (another inode, size or modification time).
std::string libdeviceFingerprint(const std::string &path);

} // namespace kiln::jit
