//===- DiskCache.h - Compiled kernels and tuning choices on disk --*- C++ -*-===//
//
// The cache is a directory of files named by their key:
//
//   <dir>/<first two hex digits of the key>/<key>.kbin   a compiled kernel (a bundle)
//   <dir>/<first two hex digits of the key>/<key>.tune   an @autotune choice (text)
//   <dir>/<first two hex digits of the key>/<key>.kgraph a compiled graph (a graph bundle)
//
// Every file is written whole to a temporary name beside its final one and renamed over
// it, so a reader (in any process) sees either no file or a complete one, and several
// processes that compile the same kernel at once all succeed: the last rename wins and
// every writer wrote the same content. A temporary file left by a writer that was killed
// is removed by a later write into the same subdirectory once it is kStaleTemporaryAge
// old.
//
// Any entry that cannot be used is a miss: the kernel is compiled again and the new
// entry replaces it. An entry that is not a regular file (a FIFO would block a reader
// forever) or cannot be read, a damaged one (a crash of the disk, a copy cut short:
// the bundle's checksums), and a whole bundle of something other than what its key was
// made from (a file copied over) are each reported once as a note. The checksums detect
// damage, not tampering: whoever can write the directory decides what code runs, so it
// must belong to the user. A directory that cannot be written is reported once as a
// warning, an entry that cannot be replaced once per entry; kernels are then compiled in
// memory only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "jit/Log.h"
#include "runtime/Bundle.h"
#include "runtime/GraphBundle.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::jit {

class DiskCache {
public:
  /// A cache in `dir`; "" disables it (every lookup misses, nothing is written).
  DiskCache(std::string dir, const Log &log) : dir_(std::move(dir)), log_(log) {}

  /// The directory from the environment: $KILN_CACHE_DIR (set but empty: none), else
  /// $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln, else none.
  static std::string directoryFromEnvironment();

  bool enabled() const { return !dir_.empty(); }
  const std::string &directory() const { return dir_; }
  /// Where the entry `key` with extension `ext` ("kbin", "tune") lives.
  std::string pathOf(const std::string &key, const char *ext) const;

  /// How old a temporary file (`<entry>.tmp-*`) must be before a write into its
  /// subdirectory removes it. Writing an entry takes well under a second; an hour leaves
  /// a slow disk any margin while still bounding what killed writers leave behind.
  static constexpr std::chrono::hours kStaleTemporaryAge{1};

  /// What a bundle under a key must be: the kernel, target, program text and const
  /// values the key was computed from, and the signature and parameter assumptions
  /// (BundleParam::divisibility) its code was compiled with.
  struct Expected {
    std::string kernelName;
    rt::Target target = rt::Target::SM90;
    std::string sourceHash;
    std::vector<rt::ConstValue> consts;
    uint32_t numWarps = 0;
    std::vector<rt::BundleParam> params;
  };
  /// The bundle stored under `key`, if there is one that is whole and is `expected`. A
  /// damaged one, or a whole bundle of anything else (a file copied over), is reported
  /// (once) and missed.
  std::optional<rt::Bundle> loadBundle(const std::string &key, const Expected &expected);
  void storeBundle(const std::string &key, const rt::Bundle &bundle);

  /// What a graph bundle under a key must be: the graph, target, program text, signature
  /// and checked mode the key was computed from (its kernels are checked whole by the
  /// graph bundle's parser).
  struct ExpectedGraph {
    std::string graphName;
    rt::Target target = rt::Target::SM90;
    std::string sourceHash;
    std::vector<rt::BundleParam> params; ///< the graph's signature (names, dtypes, pointers)
    bool checked = false;                ///< its kernels compiled in checked mode
  };
  /// The graph bundle stored under `key`, if there is one that is whole and is
  /// `expected`; anything else is reported (once) and missed, as bundles are.
  std::optional<rt::GraphBundle> loadGraph(const std::string &key, const ExpectedGraph &expected);
  void storeGraph(const std::string &key, const rt::GraphBundle &graph);

  /// A text entry (the tuning records). `check` says whether the content is sound; an
  /// entry that fails it is reported like a damaged bundle.
  std::optional<std::string> loadText(const std::string &key, const char *ext,
                                      const std::function<bool(const std::string &)> &check);
  void storeText(const std::string &key, const char *ext, const std::string &text);

private:
  void store(const std::string &key, const char *ext, const std::vector<uint8_t> &bytes);
  /// Removes the temporary files in `subdir` older than kStaleTemporaryAge.
  static void removeStaleTemporaries(const std::string &subdir);
  /// Reports a read of the entry at `path` that gave nothing: `ioError` as readBundle's.
  /// A missing file is an ordinary miss and reported not at all.
  void reportUnreadable(const std::string &path, const std::string &error, bool ioError);
  /// Notes (once per entry) that the entry at `path` `problem` and is compiled again.
  void reportUnusable(const std::string &path, const std::string &problem);
  /// Warns that an entry could not be written, once for the directory or once per entry.
  void reportUnwritable(const std::string &path, const std::string &why);

  std::string dir_;
  const Log &log_;
  std::mutex mutex_;                   ///< guards the report-once state below
  std::set<std::string> reported_;     ///< unusable entries already noted
  std::set<std::string> unwritable_;   ///< entries already warned about
  bool warnedUnwritable_ = false;      ///< the whole directory warned about
};

} // namespace kiln::jit
