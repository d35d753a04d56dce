//===- CacheKey.cpp - What a cached kernel depends on, hashed -------------===//

#include "jit/CacheKey.h"

#include "codegen/BundleBuilder.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

// Generated at build time from the compiler's sources (Fingerprint.cmake).
extern const char *const kKilnCompilerSourceHash;

namespace kiln::jit {

KeyText &KeyText::add(std::string_view field, std::string_view value) {
  text_ += field;
  text_ += ' ';
  for (char c : value) {
    if (c == '\n')
      text_ += "\\n";
    else if (c == '\\')
      text_ += "\\\\";
    else
      text_ += c;
  }
  text_ += '\n';
  return *this;
}

KeyText &KeyText::append(const KeyText &other) {
  text_ += other.text_;
  return *this;
}

std::string KeyText::digest() const { return sha256Hex(text_); }

std::string sha256Hex(std::string_view bytes) {
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string compilerFingerprint() {
  return codegen::compilerVersion() + "+" + std::string(kKilnCompilerSourceHash).substr(0, 16);
}

} // namespace kiln::jit
