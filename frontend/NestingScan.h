//===- NestingScan.h - Depth limits checked while lexing --------*- C++ -*-===//
//
// The parser recurses once per bracket, block and prefix operator, and the AST gets one
// level deeper per link of an operator chain (`a + b + ... + z` is a left spine). Both
// are watched token by token while the file is lexed, so that a hostile file stops at the
// token where it becomes too deep instead of after a full (and costly) parse:
//  * nesting: open brackets plus the current run of prefix operators, against
//    ParseLimits::maxNesting;
//  * spines: a run of left-associative operators of one precedence level, not separated
//    by a looser operator, bracket or other token, builds a left spine one node per
//    operator; the same holds for postfix `.m()` / `[..]` chains and `else if` chains.
//    Such runs are a lower bound on the AST height, so rejecting them at the builder's
//    depth limit never rejects a tree the builder would accept.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::syntax {

class NestingScan {
public:
  enum class Verdict {
    Ok,
    TooDeep,      ///< brackets + prefix operators exceed maxNesting at this token
    SpineTooLong, ///< this token makes a spine reach maxTreeDepth levels
  };

  NestingScan(size_t maxNesting, size_t maxTreeDepth)
      : maxNesting_(maxNesting), maxTreeDepth_(maxTreeDepth), levels_(1) {}

  /// Feeds the next token on the parser's channel (grammar::KilnLexer token types).
  Verdict next(size_t tokenType);

private:
  // Spine lengths at the current bracket level: one counter per binary precedence level
  // (loosest first), one for postfix chains, one for `else if` chains.
  static constexpr size_t kPostfix = 11, kElseIf = 12, kCounters = 13;
  using Counters = std::array<uint32_t, kCounters>;

  Verdict extendSpine(size_t level);

  size_t maxNesting_, maxTreeDepth_;
  size_t depth_ = 0, prefixRun_ = 0;
  size_t prevType_ = 0;
  std::vector<Counters> levels_; ///< one per open bracket, plus the outermost level
};

} // namespace kiln::syntax
