//===- Diagnostics.h - Located, coded errors for users and tools -*- C++ -*-===//
//
// Two tiers, as in Halide and MLIR:
//  * user diagnostics — a Location, a stable code (E0123), a message and an optional
//    fix hint — reported through a DiagnosticEngine, which prints them as
//    `file:line:col: error[E0123]: message` with the source line and a caret, or as one
//    JSON object per line;
//  * internal compiler errors — compiler bugs — raised with KILN_ICE / kiln_assert and
//    never shown as if they were the user's fault.
//
// Emission reads like MLIR's: `diags.error(loc, DiagCode::UndefinedName) << "...";`
// The message is sent when the returned object goes out of scope.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Location.h"

#include <functional>
#include <iosfwd>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

enum class DiagCode : uint16_t {
#define KILN_DIAG(Name, Number, Summary) Name,
#include "support/DiagnosticCodes.def"
};

/// "E0200" for DiagCode::UndefinedName.
std::string diagCodeString(DiagCode code);
/// The one-line summary from DiagnosticCodes.def.
std::string_view diagCodeSummary(DiagCode code);
/// Every code, in list order (for docs and tests).
const std::vector<DiagCode> &allDiagCodes();

/// Remark: what an optimization did or declined to do, when asked (--explain-fusion).
enum class Severity { Error, Warning, Note, Remark };
std::string_view severityName(Severity s);

struct Diagnostic {
  Severity severity = Severity::Error;
  DiagCode code = DiagCode::SyntaxError;
  Location loc;
  std::string message;
  std::string hint;                ///< "help: ..." line; may be empty
  std::vector<Diagnostic> notes;   ///< attached notes (e.g. "declared here")
};

enum class DiagFormat { Text, Json };

class DiagnosticEngine;

/// Builder returned by DiagnosticEngine::error(); streams the message, sends on death.
class InFlightDiagnostic {
public:
  InFlightDiagnostic(DiagnosticEngine *engine, Diagnostic diag)
      : engine_(engine), diag_(std::move(diag)) {}
  InFlightDiagnostic(InFlightDiagnostic &&other) noexcept;
  InFlightDiagnostic(const InFlightDiagnostic &) = delete;
  ~InFlightDiagnostic();

  template <typename T> InFlightDiagnostic &operator<<(const T &value) {
    std::ostringstream os;
    os << value;
    diag_.message += os.str();
    return *this;
  }
  /// Adds a "help:" line telling the user how to fix it.
  InFlightDiagnostic &hint(std::string text) {
    diag_.hint = std::move(text);
    return *this;
  }
  /// Attaches a note at another location ("previous declaration is here").
  InFlightDiagnostic &note(Location loc, std::string text);

private:
  DiagnosticEngine *engine_;
  Diagnostic diag_;
};

/// Collects and prints diagnostics. Not thread-safe.
class DiagnosticEngine {
public:
  DiagnosticEngine(SourceManager &sm, std::ostream &out, DiagFormat format = DiagFormat::Text);

  InFlightDiagnostic error(Location loc, DiagCode code);
  InFlightDiagnostic warning(Location loc, DiagCode code);
  InFlightDiagnostic remark(Location loc, DiagCode code);
  void report(Diagnostic diag);

  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  /// After this many errors further ones are dropped and one line says so.
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }
  bool reachedErrorLimit() const { return errorLimit_ && errors_ >= errorLimit_; }

  /// Instead of printing, hand each diagnostic to `handler` (used by
  /// --verify-diagnostics and by tests). Pass nullptr to print again.
  void setHandler(std::function<void(const Diagnostic &)> handler) { handler_ = std::move(handler); }

  void setFormat(DiagFormat f) { format_ = f; }
  DiagFormat format() const { return format_; }
  void setColor(bool on) { color_ = on; }
  /// The name that prefixes errors about command-line arguments ("dslc").
  void setToolName(std::string name) { toolName_ = std::move(name); }
  SourceManager &sourceManager() { return sm_; }

  /// Renders one diagnostic as text (with source line and caret) or as a JSON line.
  std::string render(const Diagnostic &d);

private:
  InFlightDiagnostic start(Severity severity, Location loc, DiagCode code);

  SourceManager &sm_;
  std::ostream &out_;
  DiagFormat format_;
  bool color_ = false;
  std::string toolName_ = "dslc";
  unsigned errors_ = 0;
  unsigned errorLimit_ = 50;
  bool limitAnnounced_ = false;
  std::function<void(const Diagnostic &)> handler_;
};

/// A compiler bug: an invariant the compiler itself broke. Never the user's fault.
class InternalCompilerError : public std::logic_error {
public:
  InternalCompilerError(const std::string &what, const char *file, int line);
  const char *file;
  int line;
};

[[noreturn]] void reportInternalError(const std::string &message, const char *file, int line);

} // namespace kiln

#define KILN_ICE(msg) ::kiln::reportInternalError((msg), __FILE__, __LINE__)
#define kiln_assert(cond, msg)                                                         \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::kiln::reportInternalError(std::string("assertion `" #cond "` failed: ") + (msg), \
                                  __FILE__, __LINE__);                                 \
  } while (0)
