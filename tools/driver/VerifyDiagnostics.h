//===- VerifyDiagnostics.h - `dslc --verify-diagnostics` ---------*- C++ -*-===//
//
// Diagnostic tests are Kiln (or .tir) files that state the diagnostics they must
// produce, next to the line they concern:
//
//     // expected-error@+1 {{undefined name 'y'}}
//     let x = y;
//     let z = 1 +;   // expected-error E0006 {{expected an expression}}
//
// `@+N` / `@-N` shift the expected line relative to the comment's line (none: the same
// line); an optional code (E0006) must match exactly; the text in {{ }} must be a
// substring of the message. expected-warning and expected-note work alike. The check
// passes when every expectation is met by a diagnostic and every diagnostic was
// expected (notes count only in files that expect some) — an error test that only checks "compilation failed" is not possible.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Diagnostics.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace kiln::driver {

struct ExpectedDiagnostic {
  Severity severity;
  uint32_t line;        ///< the line it must be reported on
  std::string code;     ///< "E0200" or empty
  std::string text;     ///< substring of the message
  uint32_t commentLine; ///< where the expectation was written
  bool matched = false;
};

/// Extracts the expectations of one file's text. Malformed expectation comments are
/// returned in `errors` as "line N: reason".
std::vector<ExpectedDiagnostic> parseExpectations(const std::string &text,
                                                  std::vector<std::string> &errors);

/// Matches the collected diagnostics (of file `file` only; others are unexpected)
/// against the expectations and prints every mismatch to `out`. Returns true when
/// everything matched.
bool checkExpectations(std::vector<ExpectedDiagnostic> &expected,
                       const std::vector<Diagnostic> &actual, uint32_t file,
                       SourceManager &sources, std::ostream &out);

} // namespace kiln::driver
