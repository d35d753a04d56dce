//===- Location.h - Source positions and the files they point into -*- C++ -*-===//
//
// A Location is three integers, cheap enough to live on every AST node and IR op. The
// file index refers to a SourceManager, which owns file names and (when loaded) their
// text so that diagnostics can quote the offending line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct Location {
  uint32_t file = 0; ///< index into the SourceManager
  uint32_t line = 0; ///< 1-based; 0 means "unknown"
  uint32_t col = 0;  ///< 1-based column in bytes

  bool valid() const { return line != 0; }
  /// A location for errors in command-line arguments, not in any file.
  static Location commandLine() { return Location{UINT32_MAX, 0, 0}; }
  bool isCommandLine() const { return file == UINT32_MAX; }
  bool operator==(const Location &) const = default;
};

/// Owns the names and texts of every file a compilation touched.
class SourceManager {
public:
  /// Registers a file with its full text (a leading UTF-8 byte-order mark is dropped);
  /// returns its index.
  uint32_t addBuffer(std::string name, std::string text);
  /// Registers a name whose text is not (yet) known, e.g. from a `loc(...)` in .tir.
  /// Returns the existing index when the name is already registered.
  uint32_t addName(std::string name);
  /// Looks up a registered name.
  std::optional<uint32_t> find(std::string_view name) const;

  std::string_view name(uint32_t file) const;
  /// The text of the file, loading it from disk on first use if only the name is known.
  /// nullptr when the file cannot be read; readError() then says why.
  const std::string *text(uint32_t file);
  /// Why text() of `file` is nullptr ("Is a directory"), or "" when it is not.
  std::string_view readError(uint32_t file) const;
  /// The line (without its newline) or nullopt when out of range / unreadable.
  std::optional<std::string_view> lineText(uint32_t file, uint32_t line);
  size_t size() const { return files_.size(); }

private:
  struct File {
    std::string name;
    std::optional<std::string> text;
    bool triedLoad = false;
    std::string readError;
    std::vector<size_t> lineStarts; // computed lazily
  };
  std::vector<File> files_;
};

/// "file:line:col" (or "file" / "<unknown>" when parts are missing).
std::string formatLocation(SourceManager &sm, Location loc);

} // namespace kiln
