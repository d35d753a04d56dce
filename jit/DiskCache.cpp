//===- DiskCache.cpp - Compiled kernels and tuning choices on disk --------===//

#include "jit/DiskCache.h"
#include "runtime/Args.h"
#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>
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

// The reason in an error that names the file at `path` ("cannot read '<path>': reason").
static std::string reasonOf(const std::string &error, const std::string &path) {
  const std::string named = "'" + path + "': ";
  size_t at = error.find(named);
  return at == std::string::npos ? error : error.substr(at + named.size());
}

// Whether anything, even a dangling link, is at `path`.
static bool occupied(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void DiskCache::reportUnreadable(const std::string &path, const std::string &error, bool ioError) {
  // A missing file is an ordinary miss. Anything else in its place that cannot be read
  // (a FIFO, a directory, a file without permission) is noted and missed too: the store
  // that follows replaces it, or says why it cannot.
  if (!ioError)
    reportUnusable(path, "is damaged (" + reasonOf(error, path) + ")");
  else if (occupied(path))
    reportUnusable(path, "cannot be read (" + reasonOf(error, path) + ")");
}

void DiskCache::reportUnusable(const std::string &path, const std::string &problem) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reported_.insert(path).second)
    log_.note("the cache entry '" + path + "' " + problem + "; compiling it again");
}

// The parameters as a signature tells them apart: names, pointer-ness and dtypes.
static bool sameSignature(const std::vector<rt::BundleParam> &a, const std::vector<rt::BundleParam> &b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const rt::BundleParam &x, const rt::BundleParam &y) {
    return x.name == y.name && x.pointer == y.pointer && x.dtype == y.dtype;
  });
}

// "16 16 1 1": what the code assumes each parameter is a multiple of, in order.
static std::string divisibilityText(const std::vector<rt::BundleParam> &params) {
  std::string out;
  for (const rt::BundleParam &p : params)
    out += (out.empty() ? "" : " ") + std::to_string(p.divisibility);
  return out;
}

std::optional<rt::Bundle> DiskCache::loadBundle(const std::string &key, const Expected &expected) {
  if (!enabled())
    return std::nullopt;
  std::string path = pathOf(key, "kbin"), error;
  bool ioError = false;
  std::optional<rt::Bundle> bundle = rt::readBundle(path, error, &ioError);
  if (!bundle) {
    reportUnreadable(path, error, ioError);
    return std::nullopt;
  }
  // A whole bundle of anything else under this key is damage too (a file copied over).
  // The signature and the assumptions matter as much as the code: a launch is checked
  // against them, so a variant compiled for other arguments would refuse every launch.
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
  else if (!sameSignature(bundle->params, expected.params))
    other = "the signature " + rt::signatureString(bundle->kernelName, bundle->params) + ", not " +
            rt::signatureString(expected.kernelName, expected.params);
  else if (bundle->params != expected.params)
    other = "code compiled with other parameter assumptions (multiples of " + divisibilityText(bundle->params) +
            ", not " + divisibilityText(expected.params) + ")";
  if (!other.empty()) {
    reportUnusable(path, "is damaged (it holds " + other + ")");
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

std::optional<rt::GraphBundle> DiskCache::loadGraph(const std::string &key, const ExpectedGraph &expected) {
  if (!enabled())
    return std::nullopt;
  std::string path = pathOf(key, "kgraph"), error;
  bool ioError = false;
  std::optional<rt::GraphBundle> graph = rt::readGraphBundle(path, error, &ioError);
  if (!graph) {
    reportUnreadable(path, error, ioError);
    return std::nullopt;
  }
  std::string other;
  if (graph->name != expected.graphName)
    other = "graph '" + graph->name + "', not '" + expected.graphName + "'";
  else if (graph->target != expected.target)
    other = "code for " + std::string(rt::targetName(graph->target)) + ", not " +
            std::string(rt::targetName(expected.target));
  else if (graph->sourceHash != expected.sourceHash)
    other = "a graph compiled from another program text";
  else if (!sameSignature(graph->params, expected.params))
    other = "the signature " + rt::signatureString(graph->name, graph->params) + ", not " +
            rt::signatureString(expected.graphName, expected.params);
  else if (std::any_of(graph->kernels.begin(), graph->kernels.end(),
                       [&](const rt::Bundle &k) { return k.checked != expected.checked; }))
    other = std::string("kernels compiled ") + (expected.checked ? "unchecked" : "in checked mode");
  if (!other.empty()) {
    reportUnusable(path, "is damaged (it holds " + other + ")");
    return std::nullopt;
  }
  return graph;
}

void DiskCache::storeGraph(const std::string &key, const rt::GraphBundle &graph) {
  if (!enabled())
    return;
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeGraphBundle(graph, error);
  if (!bytes.empty()) // else the runtime's loading reports the problem
    store(key, "kgraph", bytes);
}

std::optional<std::string> DiskCache::loadText(const std::string &key, const char *ext,
                                               const std::function<bool(const std::string &)> &check) {
  if (!enabled())
    return std::nullopt;
  // Read as bundles are: never blocking on a FIFO, never reading without end.
  std::string path = pathOf(key, ext), error;
  std::optional<std::string> text = readWholeFile(path, error);
  if (!text) {
    if (occupied(path))
      reportUnusable(path, "cannot be read (" + error + ")");
    return std::nullopt;
  }
  if (!check(*text)) {
    reportUnusable(path, "is damaged (its content is not a record this build writes)");
    return std::nullopt;
  }
  return text;
}

void DiskCache::storeText(const std::string &key, const char *ext, const std::string &text) {
  if (enabled())
    store(key, ext, std::vector<uint8_t>(text.begin(), text.end()));
}

void DiskCache::removeStaleTemporaries(const std::string &subdir) {
  // Only the subdirectory being written: a store stays one short directory listing more.
  const auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(subdir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string path = it->path().string();
    struct stat st;
    if (it->path().filename().string().find(".tmp-") == std::string::npos || ::lstat(path.c_str(), &st) != 0 ||
        S_ISDIR(st.st_mode))
      continue;
    if (now - std::chrono::system_clock::from_time_t(st.st_mtime) >= kStaleTemporaryAge)
      ::unlink(path.c_str()); // another process may have removed it first: nothing to report
  }
}

void DiskCache::store(const std::string &key, const char *ext, const std::vector<uint8_t> &bytes) {
  std::string path = pathOf(key, ext);
  std::string subdir = std::filesystem::path(path).parent_path().string();
  std::error_code ec;
  std::filesystem::create_directories(subdir, ec);
  std::string why;
  if (ec) {
    why = "cannot create '" + subdir + "': " + ec.message();
  } else {
    removeStaleTemporaries(subdir);
    why = writeFileAtomically(path, bytes);
  }
  if (!why.empty())
    reportUnwritable(path, why);
}

void DiskCache::reportUnwritable(const std::string &path, const std::string &why) {
  // Blame the whole cache only when its directory cannot be written; otherwise the cause
  // is this entry's or its subdirectory's (something else in its place, another user's
  // file), and every other entry is still cached.
  const bool everyEntry = ::access(dir_.c_str(), W_OK | X_OK) != 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (everyEntry) {
    if (!std::exchange(warnedUnwritable_, true))
      log_.warning("the kernel cache in '" + dir_ + "' cannot be written (" + why +
                   "); kernels are compiled in memory only. Set KILN_CACHE_DIR to a writable directory, or to "
                   "the empty string to turn the disk cache off");
    return;
  }
  if (unwritable_.insert(path).second)
    log_.warning("the cache entry '" + path + "' cannot be written (" + reasonOf(why, path) +
                 "); what it would hold is compiled in memory only");
}

} // namespace kiln::jit
