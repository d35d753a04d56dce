//===- CacheKey.cpp - What a cached kernel depends on, hashed -------------===//

#include "jit/CacheKey.h"

#include "codegen/BundleBuilder.h"
#include "support/ReadFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/SHA256.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <sys/stat.h>

// Generated at build time from the compiler's sources and build (Fingerprint.cmake).
extern const char *const kKilnCompilerSourceHash;
extern const char *const kKilnCompilerBuild;

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
  // LLVM's version as the headers the code generator was compiled against give it: the
  // libLLVM it is linked with is the same release.
  return codegen::compilerVersion() + "+" + std::string(kKilnCompilerSourceHash).substr(0, 16) +
         ", LLVM " LLVM_VERSION_STRING ", " + kKilnCompilerBuild;
}

std::string libdeviceFingerprint(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "missing (" + std::string(std::strerror(errno)) + ")";
  // What identifies one version of the file without reading it; hashing it (half a
  // megabyte) for every kernel variant would be wasted on a file that never changes.
  const std::string version = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                              std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                              std::to_string(st.st_mtim.tv_nsec);
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::string, std::string>> seen; // path -> (version, fingerprint)
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = seen.find(path); it != seen.end() && it->second.first == version)
    return it->second.second;
  std::string error;
  std::optional<std::string> bytes = readWholeFile(path, error);
  std::string fingerprint = bytes ? "sha256 " + sha256Hex(*bytes) : "unreadable (" + error + ")";
  seen[path] = {version, fingerprint};
  return fingerprint;
}

} // namespace kiln::jit
