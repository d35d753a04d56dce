//===- Diagnostics.cpp - Rendering and collecting diagnostics -------------===//
#include "support/Diagnostics.h"

#include <algorithm>
#include <iomanip>
#include <ostream>

namespace kiln {

namespace {
struct CodeInfo {
  int number;
  std::string_view summary;
};
const CodeInfo kCodes[] = {
#define KILN_DIAG(Name, Number, Summary) {Number, Summary},
#include "support/DiagnosticCodes.def"
};

/// Whether code point `cp` occupies two terminal columns (East Asian Wide and
/// Fullwidth ranges, emoji).
bool isWide(uint32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) ||
         (cp >= 0x3041 && cp <= 0x33FF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xA000 && cp <= 0xA4CF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
         (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
         (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
         (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD);
}

/// Display width of the first `bytes` bytes of a (sanitized, valid UTF-8) line: tabs
/// advance to the next multiple of 8, wide characters take two columns, others one,
/// so the caret lands under the character the column points at.
size_t displayWidth(std::string_view line, size_t bytes) {
  size_t width = 0;
  for (size_t i = 0; i < bytes && i < line.size();) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\t') {
      width = (width / 8 + 1) * 8;
      ++i;
      continue;
    }
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len && i + k < line.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(line[i + k]) & 0x3F);
    width += isWide(cp) ? 2 : 1;
    i += len;
  }
  return width;
}

/// Escapes a string for a JSON string literal.
std::string jsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        static const char *hex = "0123456789abcdef";
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out;
}

/// Replaces bytes that are not valid UTF-8, and control characters, with '?' (one byte
/// for one byte, so columns keep their meaning): a quoted source line or a message
/// quoting user text never carries invalid UTF-8 or escape sequences to a terminal.
std::string sanitizeUtf8(std::string_view s, bool keepControls = false) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    // Control characters other than tab (and DEL) could drive the terminal: never echo them.
    bool control = !keepControls && len == 1 && ((c < 0x20 && c != '\t') || c == 0x7F);
    if (ok && !control) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}
} // namespace

std::string diagCodeString(DiagCode code) {
  std::ostringstream os;
  os << 'E' << std::setw(4) << std::setfill('0') << kCodes[static_cast<size_t>(code)].number;
  return os.str();
}

std::string_view diagCodeSummary(DiagCode code) { return kCodes[static_cast<size_t>(code)].summary; }

const std::vector<DiagCode> &allDiagCodes() {
  static const std::vector<DiagCode> codes = [] {
    std::vector<DiagCode> v;
    for (size_t i = 0; i < std::size(kCodes); ++i)
      v.push_back(static_cast<DiagCode>(i));
    return v;
  }();
  return codes;
}

std::string_view severityName(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  case Severity::Remark: return "remark";
  }
  return "error";
}

InFlightDiagnostic::InFlightDiagnostic(InFlightDiagnostic &&other) noexcept
    : engine_(other.engine_), diag_(std::move(other.diag_)) {
  other.engine_ = nullptr;
}

InFlightDiagnostic::~InFlightDiagnostic() {
  if (engine_)
    engine_->report(std::move(diag_));
}

InFlightDiagnostic &InFlightDiagnostic::note(Location loc, std::string text) {
  Diagnostic n;
  n.severity = Severity::Note;
  n.code = diag_.code;
  n.loc = loc;
  n.message = std::move(text);
  diag_.notes.push_back(std::move(n));
  return *this;
}

DiagnosticEngine::DiagnosticEngine(SourceManager &sm, std::ostream &out, DiagFormat format)
    : sm_(sm), out_(out), format_(format) {}

InFlightDiagnostic DiagnosticEngine::start(Severity severity, Location loc, DiagCode code) {
  Diagnostic d;
  d.severity = severity;
  d.code = code;
  d.loc = loc;
  return InFlightDiagnostic(this, std::move(d));
}

InFlightDiagnostic DiagnosticEngine::error(Location loc, DiagCode code) { return start(Severity::Error, loc, code); }

InFlightDiagnostic DiagnosticEngine::warning(Location loc, DiagCode code) {
  return start(Severity::Warning, loc, code);
}

InFlightDiagnostic DiagnosticEngine::remark(Location loc, DiagCode code) {
  return start(Severity::Remark, loc, code);
}

void DiagnosticEngine::report(Diagnostic diag) {
  if (diag.severity == Severity::Error) {
    if (reachedErrorLimit()) {
      if (!limitAnnounced_ && !handler_ && format_ == DiagFormat::Text)
        out_ << "dslc: too many errors emitted (" << errorLimit_ << "), stopping now\n";
      limitAnnounced_ = true;
      return;
    }
    ++errors_;
  }
  if (handler_) {
    handler_(diag);
    return;
  }
  out_ << render(diag);
  out_.flush();
}

std::string DiagnosticEngine::render(const Diagnostic &d) {
  std::ostringstream os;
  if (format_ == DiagFormat::Json) {
    auto one = [&](const Diagnostic &x, bool withNotes) {
      os << "{\"file\":\"" << jsonEscape(sanitizeUtf8(x.loc.file < sm_.size() ? sm_.name(x.loc.file) : ""))
         << "\",\"line\":" << x.loc.line << ",\"col\":" << x.loc.col << ",\"code\":\""
         << diagCodeString(x.code) << "\",\"severity\":\"" << severityName(x.severity)
         << "\",\"message\":\"" << jsonEscape(sanitizeUtf8(x.message, true)) << "\"";
      if (!x.hint.empty())
        os << ",\"hint\":\"" << jsonEscape(sanitizeUtf8(x.hint, true)) << "\"";
      if (withNotes && !x.notes.empty()) {
        os << ",\"notes\":[";
        for (size_t i = 0; i < x.notes.size(); ++i) {
          const Diagnostic &n = x.notes[i];
          os << (i ? "," : "") << "{\"file\":\""
             << jsonEscape(sanitizeUtf8(n.loc.file < sm_.size() ? sm_.name(n.loc.file) : "")) << "\",\"line\":"
             << n.loc.line << ",\"col\":" << n.loc.col << ",\"message\":\""
             << jsonEscape(sanitizeUtf8(n.message, true)) << "\"}";
        }
        os << "]";
      }
      os << "}\n";
    };
    one(d, true);
    return os.str();
  }

  auto emitOne = [&](const Diagnostic &x) {
    const char *bold = color_ ? "\033[1m" : "";
    const char *reset = color_ ? "\033[0m" : "";
    const char *sevColor = !color_ ? ""
                           : x.severity == Severity::Error ? "\033[1;31m"
                           : x.severity == Severity::Warning ? "\033[1;35m"
                           : x.severity == Severity::Remark  ? "\033[1;32m"
                                                             : "\033[1;36m";
    os << bold << sanitizeUtf8(x.loc.isCommandLine() ? toolName_ : formatLocation(sm_, x.loc)) << ": "
       << reset << sevColor
       << severityName(x.severity);
    if (x.severity != Severity::Note)
      os << "[" << diagCodeString(x.code) << "]";
    os << ": " << reset << bold << sanitizeUtf8(x.message) << reset << "\n";
    if (x.loc.valid()) {
      if (auto fullLine = sm_.lineText(x.loc.file, x.loc.line)) {
        // Very long lines (minified or generated input) are cut to a window around
        // the caret so that one diagnostic stays one screen.
        std::string_view window = *fullLine;
        size_t col = x.loc.col ? x.loc.col - 1 : 0;
        std::string prefix, suffix;
        constexpr size_t kWidth = 160, kBefore = 70;
        if (window.size() > kWidth) {
          size_t begin = col > kBefore ? col - kBefore : 0;
          if (begin > 0) {
            prefix = "...";
            col = col - begin + prefix.size();
          }
          if (begin + kWidth < window.size())
            suffix = "...";
          window = window.substr(begin, kWidth);
        }
        std::string shown = prefix + sanitizeUtf8(window) + suffix;
        std::string_view line = shown;
        // Expand tabs so that the caret computed by display width lines up.
        std::string expanded;
        for (char c : shown) {
          if (c == '\t')
            expanded.append(8 - expanded.size() % 8, ' ');
          else
            expanded += c;
        }
        os << "  " << expanded << "\n";
        os << "  " << std::string(displayWidth(line, col), ' ') << (color_ ? "\033[1;32m" : "")
           << "^" << reset << "\n";
      }
    }
    if (!x.hint.empty())
      os << "  help: " << sanitizeUtf8(x.hint) << "\n";
  };
  emitOne(d);
  for (const Diagnostic &n : d.notes)
    emitOne(n);
  return os.str();
}

InternalCompilerError::InternalCompilerError(const std::string &what, const char *file, int line)
    : std::logic_error(what), file(file), line(line) {}

void reportInternalError(const std::string &message, const char *file, int line) {
  throw InternalCompilerError(message, file, line);
}

} // namespace kiln
