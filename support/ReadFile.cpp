//===- ReadFile.cpp - A whole input file into memory ----------------------===//
#include "support/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

std::optional<std::string> readWholeFile(const std::string &path, std::string &error, size_t maxBytes,
                                         const std::function<bool(std::string_view)> &enough) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  // open() succeeds on a directory; read() would then fail or, on some systems, return
  // nothing, which reads as an empty program.
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    error = std::strerror(EISDIR);
    return std::nullopt;
  }
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
