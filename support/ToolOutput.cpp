//===- ToolOutput.cpp - What the tools write, checked ---------------------===//
#include "support/ToolOutput.h"

#include "support/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>

namespace kiln {

bool writeOutput(const std::string &path, std::string_view bytes, DiagnosticEngine &diags) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string &why) {
    diags.error(Location::commandLine(), DiagCode::FileNotWritable) << why;
    return false;
  };
  if (path.empty() || path == "-" || path == "/dev/stdout") {
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return finishStdout(diags);
  }
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) {
    // A device, pipe or terminal: there is nothing to replace. Appending keeps what a
    // shell's `>>` already put in a file behind /dev/stderr or /proc/self/fd/N.
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out)
      return fail("cannot write '" + path + "'" + (errno ? std::string(": ") + std::strerror(errno) : ""));
    return true;
  }
  AtomicWriteOptions options;
  options.updateInPlace = true; // through symbolic links, keeping the file's mode
  auto data = std::span(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  if (std::string why = writeFileAtomically(path, data, options); !why.empty())
    return fail(why);
  return true;
}

bool finishStdout(DiagnosticEngine &diags) {
  errno = 0;
  std::cout.flush();
  if (std::cout)
    return true;
  const int saved = errno;
  std::cout.clear(); // later diagnostics go to stderr; a second report would repeat this one
  diags.error(Location::commandLine(), DiagCode::FileNotWritable)
      << "cannot write to standard output" << (saved ? std::string(": ") + std::strerror(saved) : "");
  return false;
}

} // namespace kiln
