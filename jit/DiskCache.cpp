//===- DiskCache.cpp - Compiled kernels and tuning choices on disk --------===//

#include "jit/DiskCache.h"
#include "support/AtomicFile.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>


namespace kiln::jit {

void Log::emit(kiln_jit_severity severity, const std::string &message) const {
  if (fn) {
    fn(userData, severity, message.c_str());
    return;
  }
  std::cerr << (severity == KILN_JIT_WARNING ? "kiln: warning: " : "kiln: note: ") << message << "\n";
}

std::string DiskCache::directoryFromEnvironment() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"))
    return dir; // set but empty: the disk cache is off
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/kiln";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln";
  return "";
}

std::string DiskCache::pathOf(const std::string &key, const char *ext) const {
  return dir_ + "/" + key.substr(0, 2) + "/" + key + "." + ext;
}

void DiskCache::reportDamaged(const std::string &path, const std::string &why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reported_.insert(path).second)
    log_.note("the cache entry '" + path + "' is damaged (" + why + "); compiling it again");
}

std::optional<rt::Bundle> DiskCache::loadBundle(const std::string &key, const Expected &expected) {
  if (!enabled())
    return std::nullopt;
  std::string path = pathOf(key, "kbin"), error;
  bool ioError = false;
  std::optional<rt::Bundle> bundle = rt::readBundle(path, error, &ioError);
  if (!bundle) {
    // A missing file is an ordinary miss; one that cannot be read is treated as one too
    // (storing will say why the directory is unusable, if it is).
    if (!ioError)
      reportDamaged(path, error.substr(error.rfind("': ") == std::string::npos ? 0 : error.rfind("': ") + 3));
    return std::nullopt;
  }
  // A whole bundle of anything else under this key is damage too (a file copied over).
  std::string other;
  if (bundle->kernelName != expected.kernelName)
    other = "kernel '" + bundle->kernelName + "', not '" + expected.kernelName + "'";
  else if (bundle->target != expected.target)
    other = "code for " + std::string(rt::targetName(bundle->target)) + ", not " +
            std::string(rt::targetName(expected.target));
  else if (bundle->sourceHash != expected.sourceHash)
    other = "code compiled from another program text";
  else if (bundle->consts != expected.consts || bundle->numWarps != expected.numWarps)
    other = "code compiled with other const values or num_warps";
  if (!other.empty()) {
    reportDamaged(path, "it holds " + other);
    return std::nullopt;
  }
  return bundle;
}

void DiskCache::storeBundle(const std::string &key, const rt::Bundle &bundle) {
  if (!enabled())
    return;
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeBundle(bundle, error);
  if (bytes.empty())
    return; // the bundle came from the compiler; the runtime's loading reports the problem
  store(key, "kbin", bytes);
}

std::optional<std::string> DiskCache::loadText(const std::string &key, const char *ext,
                                               const std::function<bool(const std::string &)> &check) {
  if (!enabled())
    return std::nullopt;
  std::string path = pathOf(key, ext);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (!check(text.str())) {
    reportDamaged(path, "its content is not a record this build writes");
    return std::nullopt;
  }
  return text.str();
}

void DiskCache::storeText(const std::string &key, const char *ext, const std::string &text) {
  if (enabled())
    store(key, ext, std::vector<uint8_t>(text.begin(), text.end()));
}

void DiskCache::store(const std::string &key, const char *ext, const std::vector<uint8_t> &bytes) {
  std::string path = pathOf(key, ext);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string why = ec ? "cannot create '" + std::filesystem::path(path).parent_path().string() + "': " + ec.message()
                       : writeFileAtomically(path, bytes);
  if (why.empty())
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!std::exchange(warnedUnwritable_, true))
    log_.warning("the kernel cache in '" + dir_ + "' cannot be written (" + why +
                 "); kernels are compiled in memory only. Set KILN_CACHE_DIR to a writable directory, or to "
                 "the empty string to turn the disk cache off");
}

} // namespace kiln::jit
