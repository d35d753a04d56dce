//===- VerifyDiagnostics.cpp - expected-error matching --------------------===//
#include "tools/driver/VerifyDiagnostics.h"

#include <cstdint>
#include <ostream>
#include <sstream>

namespace kiln::driver {

namespace {
struct Marker {
  const char *word;
  Severity severity;
};
constexpr Marker kMarkers[] = {{"expected-error", Severity::Error},
                               {"expected-warning", Severity::Warning},
                               {"expected-note", Severity::Note},
                               {"expected-remark", Severity::Remark}};
} // namespace

std::vector<ExpectedDiagnostic> parseExpectations(const std::string &text,
                                                  std::vector<std::string> &errors) {
  std::vector<ExpectedDiagnostic> result;
  std::istringstream in(text);
  std::string line;
  uint32_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    for (const Marker &m : kMarkers) {
      size_t pos = 0;
      while ((pos = line.find(m.word, pos)) != std::string::npos) {
        size_t p = pos + std::string_view(m.word).size();
        pos = p;
        // Only count it when it sits in a comment.
        size_t slashes = line.rfind("//", pos);
        if (slashes == std::string::npos)
          continue;
        ExpectedDiagnostic e{m.severity, lineNo, "", "", lineNo};
        if (p < line.size() && line[p] == '@') {
          size_t q = p + 1;
          int sign = 1;
          if (q < line.size() && (line[q] == '+' || line[q] == '-'))
            sign = line[q++] == '-' ? -1 : 1;
          size_t digits = q;
          while (q < line.size() && std::isdigit(static_cast<unsigned char>(line[q])))
            ++q;
          if (digits == q) {
            errors.push_back("line " + std::to_string(lineNo) + ": expected a line offset after '@'");
            continue;
          }
          // No file has a billion lines: a longer offset is refused before it can overflow.
          if (q - digits > 9) {
            errors.push_back("line " + std::to_string(lineNo) + ": line offset '" + line.substr(digits, q - digits) +
                             "' is out of range");
            continue;
          }
          const int64_t target = static_cast<int64_t>(lineNo) + sign * std::stoll(line.substr(digits, q - digits));
          if (target < 1) {
            errors.push_back("line " + std::to_string(lineNo) + ": line offset points before the file");
            continue;
          }
          if (target > UINT32_MAX) {
            errors.push_back("line " + std::to_string(lineNo) + ": line offset points past the file");
            continue;
          }
          e.line = static_cast<uint32_t>(target);
          p = q;
        }
        while (p < line.size() && line[p] == ' ')
          ++p;
        if (p + 5 <= line.size() && line[p] == 'E' && std::isdigit(static_cast<unsigned char>(line[p + 1]))) {
          e.code = line.substr(p, 5);
          p += 5;
          while (p < line.size() && line[p] == ' ')
            ++p;
        }
        size_t open = line.find("{{", p);
        size_t close = open == std::string::npos ? open : line.find("}}", open + 2);
        if (open != p || close == std::string::npos) {
          errors.push_back("line " + std::to_string(lineNo) + ": expected '{{message}}' after " + m.word);
          continue;
        }
        e.text = line.substr(open + 2, close - open - 2);
        result.push_back(std::move(e));
        pos = close + 2;
      }
    }
  }
  return result;
}

bool checkExpectations(std::vector<ExpectedDiagnostic> &expected,
                       const std::vector<Diagnostic> &actual, uint32_t file,
                       SourceManager &sources, std::ostream &out) {
  bool ok = true;
  auto matches = [&](const ExpectedDiagnostic &e, const Diagnostic &d) {
    return !e.matched && e.severity == d.severity && d.loc.file == file && d.loc.line == e.line &&
           (e.code.empty() || e.code == diagCodeString(d.code)) &&
           d.message.find(e.text) != std::string::npos;
  };
  auto consider = [&](const Diagnostic &d) {
    for (ExpectedDiagnostic &e : expected) {
      if (matches(e, d)) {
        e.matched = true;
        return;
      }
    }
    ok = false;
    out << "unexpected " << severityName(d.severity) << " at " << formatLocation(sources, d.loc)
        << ": [" << diagCodeString(d.code) << "] " << d.message << "\n";
  };
  // Notes are checked only in files that state some: most tests care about the error.
  bool checkNotes = false;
  for (const ExpectedDiagnostic &e : expected)
    checkNotes |= e.severity == Severity::Note;
  for (const Diagnostic &d : actual) {
    consider(d);
    if (checkNotes)
      for (const Diagnostic &n : d.notes)
        consider(n);
  }
  for (const ExpectedDiagnostic &e : expected) {
    if (e.matched)
      continue;
    ok = false;
    out << "expected " << severityName(e.severity) << " not produced at line " << e.line
        << " (written at line " << e.commentLine << "): " << (e.code.empty() ? "" : e.code + " ")
        << "{{" << e.text << "}}\n";
  }
  return ok;
}

} // namespace kiln::driver
