//===- ReadFile.cpp - A whole input file into memory ----------------------===//
#include "support/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

static const char *fileKind(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a plain file";
}

int openRegularFile(const std::string &path, std::string &error) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever if none
  // comes. The descriptor is checked before any read, so no read ever sees the flag
  // mean anything (it has no effect on a regular file).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    // A directory keeps errno's own words, which every tool has always used for it.
    error = S_ISDIR(st.st_mode) ? std::string(std::strerror(EISDIR))
                                : std::string("not a regular file (") + fileKind(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::optional<std::string> readWholeFile(const std::string &path, std::string &error, size_t maxBytes,
                                         const std::function<bool(std::string_view)> &enough) {
  int fd = openRegularFile(path, error);
  if (fd < 0)
    return std::nullopt;
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    if (text.size() + static_cast<size_t>(n) > maxBytes) {
      error = "more than " + std::to_string(maxBytes) + " bytes";
      ::close(fd);
      return std::nullopt;
    }
    text.append(chunk, static_cast<size_t>(n));
    if (enough && enough(text))
      break;
  }
  ::close(fd);
  return text;
}

} // namespace kiln
