//===- PtxSourceMap.cpp - From a PTX line back to the Kiln source ---------===//
//
// A deliberately small reader of two PTX directives:
//   .file <index> "<path>"[, <mtime>, <size>]
//   .loc <file-index> <line> <column>[, ...]
// and of function starts (`.entry`, `.func`), where the current position resets so a
// line early in one function never borrows the last position of the one before.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/PtxSourceMap.h"

#include <charconv>
#include <map>

namespace kiln::rt {

std::string SourcePosition::str() const {
  std::string s = file + ":" + std::to_string(line);
  if (column)
    s += ":" + std::to_string(column);
  return s;
}

static std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// Reads an unsigned number at the start of `s` (after blanks), advancing past it.
static std::optional<uint32_t> readNumber(std::string_view &s) {
  s = trimLeft(s);
  uint32_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr == s.data())
    return std::nullopt;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return v;
}

static bool startsWithWord(std::string_view s, std::string_view word) {
  return s.substr(0, word.size()) == word &&
         (s.size() == word.size() || s[word.size()] == ' ' || s[word.size()] == '\t');
}

// A line that starts a kernel or device function (".visible .entry k(", ".func f(").
static bool startsFunction(std::string_view line) {
  for (std::string_view word : {".entry", ".func"}) {
    size_t at = line.find(word);
    if (at != std::string_view::npos && line.substr(0, at).find("//") == std::string_view::npos)
      return true;
  }
  return false;
}

std::optional<SourcePosition> ptxLineToSource(std::string_view ptx, uint32_t ptxLine) {
  std::map<uint32_t, std::string> files;
  std::optional<SourcePosition> current;
  std::optional<uint32_t> currentFile;
  uint32_t lineNo = 0;
  while (!ptx.empty()) {
    ++lineNo;
    size_t nl = ptx.find('\n');
    std::string_view line = trimLeft(ptx.substr(0, nl));
    ptx.remove_prefix(nl == std::string_view::npos ? ptx.size() : nl + 1);

    if (startsWithWord(line, ".file")) {
      std::string_view rest = line.substr(5);
      auto index = readNumber(rest);
      rest = trimLeft(rest);
      size_t close = rest.size() > 1 && rest[0] == '"' ? rest.find('"', 1) : std::string_view::npos;
      if (index && close != std::string_view::npos)
        files[*index] = std::string(rest.substr(1, close - 1));
    } else if (lineNo <= ptxLine && startsWithWord(line, ".loc")) {
      std::string_view rest = line.substr(4);
      auto file = readNumber(rest);
      auto srcLine = readNumber(rest);
      auto col = readNumber(rest);
      if (file && srcLine) {
        current = SourcePosition{"", *srcLine, col.value_or(0)};
        currentFile = *file;
      }
    } else if (lineNo <= ptxLine && startsFunction(line)) {
      current.reset();
    }
  }
  // `.file` directives may follow the code (LLVM puts them at the end), hence the
  // lookup after the whole text was read.
  if (!current || !currentFile || current->line == 0)
    return std::nullopt;
  auto it = files.find(*currentFile);
  if (it == files.end())
    return std::nullopt;
  current->file = it->second;
  return current;
}

std::optional<uint32_t> ptxLineInLog(std::string_view logLine) {
  size_t at = logLine.find(", line ");
  if (at == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = logLine.substr(at + 7);
  auto n = readNumber(rest);
  if (!n || rest.empty() || rest[0] != ';')
    return std::nullopt;
  return n;
}

std::string annotateJitLog(std::string_view log, std::string_view ptx) {
  std::string out;
  while (!log.empty()) {
    size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    out.append(line);
    if (auto ptxLine = ptxLineInLog(line))
      if (auto pos = ptxLineToSource(ptx, *ptxLine))
        out += "  (at " + pos->str() + ")";
    out += '\n';
  }
  return out;
}

} // namespace kiln::rt
