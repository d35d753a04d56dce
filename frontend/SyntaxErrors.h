//===- SyntaxErrors.h - Readable syntax error messages ----------*- C++ -*-===//
//
// ANTLR's default messages ("mismatched input 'x' expecting {';', '+', ...}") name every
// token the parser could take next, including every operator that could continue an
// expression. This error strategy keeps ANTLR's recovery (so that one run reports
// several errors) but words each error for a person:
//   expected ';' after expression
//   unexpected ')'; expected expression
//   unexpected 'x'; expected one of ',', ')', '='
// by grouping token sets (expression, statement, item), dropping operators that would
// merely continue what came before, and naming what the missing token should follow.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "antlr4-runtime.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::syntax {

/// One syntax error, located at a token of the parser's stream.
struct SyntaxErrorReport {
  antlr4::Token *at = nullptr;
  /// When set, the error is reported at this byte offset of the source instead of at
  /// `at`: a missing ';' belongs right after `after`, the token before it, on its line.
  std::optional<size_t> atOffset;
  antlr4::Token *after = nullptr;
  /// Later syntax errors up to this token index are consequences of this one.
  size_t quietThrough = 0;
  std::string message;
  std::string hint; ///< may be empty
  /// An optional second location, e.g. the bracket that a missing one should close.
  antlr4::Token *noteAt = nullptr;
  std::string note;
};

using SyntaxErrorSink = std::function<void(const SyntaxErrorReport &)>;

class KilnErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  /// `source` is the file's bytes (tokens are quoted from it); `sink` receives each error
  /// and may throw to stop parsing (e.g. at the error limit).
  KilnErrorStrategy(std::string_view source, SyntaxErrorSink sink)
      : source_(source), sink_(std::move(sink)) {}

protected:
  void reportNoViableAlternative(antlr4::Parser *recognizer,
                                 const antlr4::NoViableAltException &e) override;
  void reportInputMismatch(antlr4::Parser *recognizer,
                           const antlr4::InputMismatchException &e) override;
  void reportFailedPredicate(antlr4::Parser *recognizer,
                             const antlr4::FailedPredicateException &e) override;
  void reportUnwantedToken(antlr4::Parser *recognizer) override;
  void reportMissingToken(antlr4::Parser *recognizer) override;

private:
  /// "unexpected X; expected ..." or, when one thing is expected,
  /// "expected Y after Z, found X".
  void reportUnexpected(antlr4::Parser *recognizer, antlr4::Token *offending,
                        const antlr4::misc::IntervalSet &expected);
  std::string quoteToken(const antlr4::Token *tok) const;
  void placeMissingSemicolon(SyntaxErrorReport &r, antlr4::Token *prev) const;
  /// Reports a ';' missing before an `if` statement the parser read as a conditional
  /// expression; whether that was the case.
  bool reportSemicolonBeforeIf(antlr4::Parser *recognizer, const std::vector<std::string> &names);

  std::string_view source_;
  SyntaxErrorSink sink_;
};

} // namespace kiln::syntax
