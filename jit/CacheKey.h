//===- CacheKey.h - What a cached kernel depends on, hashed -------*- C++ -*-===//
//
// A cache key is the SHA-256 of a text that lists, one `field value` line each, every
// input the cached result depends on: the source text of every file (imports too) and
// their names, the kernel, its `const` values and launch settings, the code-generation
// options (specializations included), the target and the compiler build. Keeping the
// text rather than hashing fields one by one makes the key easy to review and to print
// when two keys differ unexpectedly.
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

/// The compiler build the JIT is part of: codegen::compilerVersion() plus a hash of the
/// compiler's own sources taken at build time, so that a rebuilt compiler never reuses
/// code an older one cached.
std::string compilerFingerprint();

} // namespace kiln::jit
