//===- AtomicFile.cpp - Replacing a file all at once ----------------------===//

#include "support/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace kiln {

// Returns "" or the reason (errno's text) the bytes could not all be written.
static std::string writeAll(int fd, std::span<const uint8_t> bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return std::strerror(n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return "";
}

std::optional<StagedFile> StagedFile::stage(const std::string &path,
                                            std::initializer_list<std::span<const uint8_t>> parts,
                                            const AtomicWriteOptions &options, std::string &error) {
  std::string target = path;
  mode_t mode = 0644;
  bool keepMode = false;
  if (options.updateInPlace) {
    // Follow a chain of symbolic links, dangling ones too, to the file they name: that
    // file is updated (or created), the links stay.
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path resolved = path;
    for (int hops = 0; hops < 40 && fs::is_symlink(resolved, ec); ++hops) {
      fs::path next = fs::read_symlink(resolved, ec);
      if (ec)
        break;
      resolved = next.is_absolute() ? next : resolved.parent_path() / next;
    }
    target = resolved.string();
    struct stat st;
    if (::stat(target.c_str(), &st) == 0) {
      mode = st.st_mode & 07777;
      keepMode = true;
    }
  }
  // Unique per process and call: concurrent writers never share a temporary file. A
  // name can still exist, left by a writer that was killed (in a container the process
  // id repeats): O_EXCL refuses it and the next name is tried. Created with the final
  // mode from the start (the umask can only narrow it), so that the contents are never
  // readable by more users than the file they replace.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 64; ++attempt) {
    tmp = target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, keepMode ? mode & 0777 : 0644);
    if (fd >= 0 || errno != EEXIST)
      break;
  }
  // Messages name the file the caller asked for; the temporary name means nothing to a user.
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  std::string why;
  for (std::span<const uint8_t> part : parts)
    if (why.empty())
      why = writeAll(fd, part);
  // The mode is set again explicitly, so the umask cannot narrow a kept one.
  if (why.empty() && keepMode && ::fchmod(fd, mode) != 0)
    why = std::strerror(errno);
  // Flushed before the rename: after a crash the name points at the whole file or the old one.
  if (why.empty() && ::fsync(fd) != 0)
    why = std::strerror(errno);
  if (::close(fd) != 0 && why.empty())
    why = std::strerror(errno);
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    error = "cannot write '" + path + "': " + why;
    return std::nullopt;
  }
  return StagedFile(path, std::move(target), std::move(tmp), options.updateInPlace);
}

StagedFile::StagedFile(std::string path, std::string target, std::string tmp, bool updateInPlace)
    : path_(std::move(path)), target_(std::move(target)), tmp_(std::move(tmp)), updateInPlace_(updateInPlace) {}

StagedFile::StagedFile(StagedFile &&other) noexcept
    : path_(std::move(other.path_)), target_(std::move(other.target_)), tmp_(std::exchange(other.tmp_, "")),
      updateInPlace_(other.updateInPlace_) {}

StagedFile::~StagedFile() {
  if (!tmp_.empty())
    ::unlink(tmp_.c_str());
}

std::string StagedFile::commit() {
  std::string why = commitAll(std::span<StagedFile>(this, 1));
  if (!tmp_.empty()) // committed once, failed or not
    ::unlink(std::exchange(tmp_, "").c_str());
  return why;
}

std::string StagedFile::checkReplaceable() const {
  if (tmp_.empty())
    return "cannot replace '" + path_ + "': nothing staged";
  struct stat st;
  if (::lstat(target_.c_str(), &st) != 0)
    return ""; // nothing there yet: the staged file was created in the same folder
  auto refuse = [&](const std::string &why) { return "cannot replace '" + path_ + "': " + why; };
  if (S_ISDIR(st.st_mode))
    return refuse(std::strerror(EISDIR));
  // A file the user has made read-only says "do not change me", as it does to an editor.
  if (updateInPlace_ && S_ISREG(st.st_mode) && ::access(target_.c_str(), W_OK) != 0)
    return refuse(std::string(std::strerror(errno)) + " (the file is not writable)");
  // rename(2) cannot replace an immutable or append-only file.
  if (S_ISREG(st.st_mode)) {
    int fd = ::open(target_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int flags = 0;
    bool known = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (fd >= 0)
      ::close(fd);
    if (known && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)))
      return refuse(std::string(std::strerror(EPERM)) + " (the file is immutable or append-only)");
  }
  // In a sticky folder (/tmp) only the owner of the file or of the folder may replace it.
  std::string dir = std::filesystem::path(target_).parent_path().string();
  struct stat ds;
  const uid_t me = ::geteuid();
  if (me != 0 && ::stat(dir.empty() ? "." : dir.c_str(), &ds) == 0 && (ds.st_mode & S_ISVTX) && st.st_uid != me &&
      ds.st_uid != me)
    return refuse(std::string(std::strerror(EPERM)) + " (another user's file in a sticky folder)");
  return "";
}

std::string commitAll(std::span<StagedFile> files) {
  for (const StagedFile &f : files)
    if (std::string why = f.checkReplaceable(); !why.empty())
      return why; // the destructors remove every temporary file
  // Each replaced file is swapped with its staged self, so the old contents stay under
  // the temporary name until every file is in place, and can be swapped back.
  enum class How { Swapped, Created, Replaced };
  struct Done {
    StagedFile *file;
    How how;
  };
  std::vector<Done> done;
  std::string failure;
  for (StagedFile &f : files) {
    if (::renameat2(AT_FDCWD, f.tmp_.c_str(), AT_FDCWD, f.target_.c_str(), RENAME_EXCHANGE) == 0) {
      done.push_back({&f, How::Swapped});
      continue;
    }
    // No old file to swap with (ENOENT), or a file system that cannot swap (EINVAL): a
    // plain rename. A rollback removes a file that was new; one that replaced an old
    // file on such a file system cannot be undone (the checks above make that rare).
    const bool created = errno == ENOENT;
    if ((created || errno == EINVAL || errno == ENOSYS) && ::rename(f.tmp_.c_str(), f.target_.c_str()) == 0) {
      f.tmp_.clear();
      done.push_back({&f, created ? How::Created : How::Replaced});
      continue;
    }
    failure = "cannot replace '" + f.path_ + "': " + std::strerror(errno);
    break;
  }
  if (failure.empty()) {
    for (Done &d : done)
      if (d.how == How::Swapped)
        ::unlink(std::exchange(d.file->tmp_, "").c_str()); // the old contents
    return "";
  }
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if (it->how == How::Swapped)
      ::renameat2(AT_FDCWD, it->file->tmp_.c_str(), AT_FDCWD, it->file->target_.c_str(), RENAME_EXCHANGE);
    else if (it->how == How::Created)
      ::unlink(it->file->target_.c_str());
  }
  return failure; // the destructors remove the temporary files, now holding the new contents
}

std::string writeFileAtomically(const std::string &path, std::initializer_list<std::span<const uint8_t>> parts,
                                const AtomicWriteOptions &options) {
  std::string error;
  std::optional<StagedFile> staged = StagedFile::stage(path, parts, options, error);
  return staged ? staged->commit() : error;
}

} // namespace kiln
