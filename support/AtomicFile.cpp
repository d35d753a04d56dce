//===- AtomicFile.cpp - Replacing a file all at once ----------------------===//

#include "support/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

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
  // Unique per process and call: concurrent writers never share a temporary file.
  static std::atomic<unsigned> counter{0};
  std::string tmp = target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  // Messages name the file the caller asked for; the temporary name means nothing to a user.
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  std::string why;
  for (std::span<const uint8_t> part : parts)
    if (why.empty())
      why = writeAll(fd, part);
  // The mode is set explicitly, not through open(), so the umask cannot narrow a kept one.
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
  return StagedFile(path, std::move(target), std::move(tmp));
}

StagedFile::StagedFile(std::string path, std::string target, std::string tmp)
    : path_(std::move(path)), target_(std::move(target)), tmp_(std::move(tmp)) {}

StagedFile::StagedFile(StagedFile &&other) noexcept
    : path_(std::move(other.path_)), target_(std::move(other.target_)), tmp_(std::exchange(other.tmp_, "")) {}

StagedFile::~StagedFile() {
  if (!tmp_.empty())
    ::unlink(tmp_.c_str());
}

std::string StagedFile::commit() {
  if (tmp_.empty())
    return "cannot replace '" + path_ + "': nothing staged";
  std::string why;
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    why = "cannot replace '" + path_ + "': " + std::strerror(errno);
    ::unlink(tmp_.c_str());
  }
  tmp_.clear();
  return why;
}

std::string writeFileAtomically(const std::string &path, std::initializer_list<std::span<const uint8_t>> parts,
                                const AtomicWriteOptions &options) {
  std::string error;
  std::optional<StagedFile> staged = StagedFile::stage(path, parts, options, error);
  return staged ? staged->commit() : error;
}

} // namespace kiln
