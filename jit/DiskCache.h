//===- DiskCache.h - Compiled kernels and tuning choices on disk --*- C++ -*-===//
//
// The cache is a directory of files named by their key:
//
//   <dir>/<first two hex digits of the key>/<key>.kbin   a compiled kernel (a bundle)
//   <dir>/<first two hex digits of the key>/<key>.tune   an @autotune choice (text)
//
// Every file is written whole to a temporary name beside its final one and renamed over
// it, so a reader (in any process) sees either no file or a complete one, and several
// processes that compile the same kernel at once all succeed: the last rename wins and
// every writer wrote the same content. A damaged entry (a crash of the disk, a copy cut
// short) is detected by the bundle's checksums, reported once as a note and rebuilt. A
// directory that cannot be written is reported once as a warning; kernels are then
// compiled in memory only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "jit/Log.h"
#include "runtime/Bundle.h"

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

  /// What a bundle under a key must be: the kernel, target, program text and const
  /// values the key was computed from.
  struct Expected {
    std::string kernelName;
    rt::Target target = rt::Target::SM90;
    std::string sourceHash;
    std::vector<rt::ConstValue> consts;
    uint32_t numWarps = 0;
  };
  /// The bundle stored under `key`, if there is one that is whole and is `expected`. A
  /// damaged one, or a whole bundle of anything else (a file copied over), is reported
  /// (once) and missed.
  std::optional<rt::Bundle> loadBundle(const std::string &key, const Expected &expected);
  void storeBundle(const std::string &key, const rt::Bundle &bundle);

  /// A text entry (the tuning records). `check` says whether the content is sound; an
  /// entry that fails it is reported like a damaged bundle.
  std::optional<std::string> loadText(const std::string &key, const char *ext,
                                      const std::function<bool(const std::string &)> &check);
  void storeText(const std::string &key, const char *ext, const std::string &text);

private:
  void store(const std::string &key, const char *ext, const std::vector<uint8_t> &bytes);
  void reportDamaged(const std::string &path, const std::string &why);

  std::string dir_;
  const Log &log_;
  std::mutex mutex_;                ///< guards the two report-once sets
  std::set<std::string> reported_;  ///< damaged entries already reported
  bool warnedUnwritable_ = false;
};

} // namespace kiln::jit
