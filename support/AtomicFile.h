//===- AtomicFile.h - Replacing a file all at once -----------------*- C++ -*-===//
//
// Every file Kiln writes for later use (bundles, cache entries, the .npy buffers that
// `dslc run` and `kiln-run` write back) is replaced atomically: readers, including other
// processes writing the same name at the same moment, see the old file or the whole
// new one, never a part, and a failed write leaves the old file as it was. Several
// files replaced together (commitAll) are replaced all or none.
//
// Replacing by rename has consequences a user can see, which the tools document: the
// file is a new inode, so another hard link to the old file keeps the old contents, and
// the new file belongs to the user who wrote it. A file the user may not write (0444,
// say) is refused when updating in place, as an editor would, rather than replaced.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace kiln {

struct AtomicWriteOptions {
  /// Update an existing file as the user knows it: write through a symbolic link (a
  /// chain of them, a dangling one too) to its target, and keep the target's
  /// permission bits. Off, the name is replaced by
  /// a new file with mode 0644 (less the umask).
  bool updateInPlace = false;
};

/// New contents for a file, written whole beside it (a uniquely named temporary file
/// in the same directory, so the rename stays on one file system) and flushed to disk,
/// but not yet in its place. commit() renames it over the file; a staged write that is
/// never committed removes its temporary file. Several files replaced together are
/// all staged first, then all committed: a failure to write any leaves every one as it
/// was.
class StagedFile {
public:
  /// Stages the concatenation of `parts` for `path`; nullopt with `error` set when it
  /// cannot be written whole (no temporary file is left behind).
  static std::optional<StagedFile> stage(const std::string &path, std::initializer_list<std::span<const uint8_t>> parts,
                                         const AtomicWriteOptions &options, std::string &error);
  /// Puts the contents in place. Returns "" on success, else why it failed.
  std::string commit();
  /// Why committing would fail, as far as can be known without trying: the file may
  /// not be written (updating in place), it is immutable or append-only, or a sticky
  /// folder forbids replacing another user's file. "" when nothing stands in the way.
  std::string checkReplaceable() const;

  StagedFile(StagedFile &&other) noexcept;
  StagedFile &operator=(StagedFile &&) = delete;
  StagedFile(const StagedFile &) = delete;
  ~StagedFile();

private:
  friend std::string commitAll(std::span<StagedFile> files);
  StagedFile(std::string path, std::string target, std::string tmp, bool updateInPlace);
  std::string path_;   ///< as the caller named it, for messages
  std::string target_; ///< the file replaced (through a symbolic link when updating in place)
  std::string tmp_;    ///< "" once committed or moved from
  bool updateInPlace_ = false;
};

/// Puts every staged file in place, or none of them: each is checked first
/// (checkReplaceable), and each replacement swaps the new file with the old one in one
/// step (renameat2 RENAME_EXCHANGE), so that when a later one still fails the earlier
/// ones are swapped back. Returns "" on success, else why the first failure happened.
std::string commitAll(std::span<StagedFile> files);

/// Stages and commits at once: the concatenation of `parts` replaces `path`. Returns
/// "" on success, else why it failed; no temporary file is left behind either way.
std::string writeFileAtomically(const std::string &path, std::initializer_list<std::span<const uint8_t>> parts,
                                const AtomicWriteOptions &options = {});

inline std::string writeFileAtomically(const std::string &path, std::span<const uint8_t> bytes,
                                       const AtomicWriteOptions &options = {}) {
  return writeFileAtomically(path, {bytes}, options);
}

} // namespace kiln
