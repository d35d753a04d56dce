//===- NestingScan.cpp - Depth limits checked while lexing ----------------===//
#include "frontend/NestingScan.h"

#include "KilnLexer.h"

namespace kiln::syntax {

using grammar::KilnLexer;

/// Whether a token of this type ends an operand, so that a following `-`, `+` or `*` is
/// a binary operator and a following `[` indexes rather than opens a list.
static bool endsOperand(size_t type) {
  switch (type) {
  case KilnLexer::IDENT:
  case KilnLexer::INT:
  case KilnLexer::FLOAT:
  case KilnLexer::STRING:
  case KilnLexer::KW_TRUE:
  case KilnLexer::KW_FALSE:
  case KilnLexer::KW_INF:
  case KilnLexer::KW_NAN:
  case KilnLexer::KW_NONE:
  case KilnLexer::RPAREN:
  case KilnLexer::RBRACK:
    return true;
  default:
    return false;
  }
}

/// Precedence level of a binary operator token, loosest (||) first; -1 otherwise.
/// (Level 0 is the conditional `a if c else b`, whose `if` follows an operand.)
static int binaryLevel(size_t type) {
  switch (type) {
  case KilnLexer::OROR: return 1;
  case KilnLexer::ANDAND: return 2;
  case KilnLexer::EQ:
  case KilnLexer::NE:
  case KilnLexer::LT:
  case KilnLexer::LE:
  case KilnLexer::GT:
  case KilnLexer::GE: return 3;
  case KilnLexer::PIPE: return 4;
  case KilnLexer::CARET: return 5;
  case KilnLexer::AMP: return 6;
  case KilnLexer::SHL:
  case KilnLexer::SHR: return 7;
  case KilnLexer::PLUS:
  case KilnLexer::MINUS: return 8;
  case KilnLexer::STAR:
  case KilnLexer::SLASH:
  case KilnLexer::PERCENT: return 9;
  // `a ** b ** c` groups to the right, a chain as deep as it is long: counted the same way.
  case KilnLexer::POW: return 10;
  default: return -1;
  }
}

static bool isOperandToken(size_t type) {
  return endsOperand(type) && type != KilnLexer::RPAREN && type != KilnLexer::RBRACK;
}

NestingScan::Verdict NestingScan::extendSpine(size_t level) {
  Counters &c = levels_.back();
  // A looser operator ends every tighter spine: its right operand starts afresh.
  for (size_t q = level + 1; q <= kPostfix; ++q)
    c[q] = 0;
  // n links make a spine n + 1 nodes high.
  return ++c[level] + 1 > maxTreeDepth_ ? Verdict::SpineTooLong : Verdict::Ok;
}

NestingScan::Verdict NestingScan::next(size_t type) {
  const size_t prev = prevType_;
  prevType_ = type;
  const bool afterOperand = endsOperand(prev);

  // Prefix operators: `-`, `+`, `*` and `**` only where no operand precedes (`*` and `**`
  // then start a pointer type; `**` is two levels).
  bool prefix = type == KilnLexer::BANG || type == KilnLexer::TILDE ||
                (!afterOperand && (type == KilnLexer::MINUS || type == KilnLexer::PLUS ||
                                   type == KilnLexer::STAR || type == KilnLexer::POW));
  if (prefix) {
    prefixRun_ += type == KilnLexer::POW ? 2 : 1;
    return depth_ + prefixRun_ > maxNesting_ ? Verdict::TooDeep : Verdict::Ok;
  }
  prefixRun_ = 0;

  switch (type) {
  case KilnLexer::LPAREN:
  case KilnLexer::LBRACK:
  case KilnLexer::LBRACE: {
    // `x[...]` extends a postfix chain; `(` after a name is a call, part of its operand.
    if (type == KilnLexer::LBRACK && afterOperand && extendSpine(kPostfix) != Verdict::Ok)
      return Verdict::SpineTooLong;
    if (++depth_ > maxNesting_)
      return Verdict::TooDeep;
    levels_.push_back(Counters{});
    return Verdict::Ok;
  }
  case KilnLexer::RPAREN:
  case KilnLexer::RBRACK:
    if (depth_ > 0) {
      --depth_;
      levels_.pop_back();
    }
    return Verdict::Ok;
  case KilnLexer::RBRACE:
    if (depth_ > 0) {
      --depth_;
      levels_.pop_back();
    }
    // A block ends a statement, and what follows starts a new operator run (an
    // `else if` chain is counted separately and survives).
    for (size_t q = 0; q <= kPostfix; ++q)
      levels_.back()[q] = 0;
    return Verdict::Ok;
  case KilnLexer::DOT:
    return extendSpine(kPostfix);
  case KilnLexer::KW_IF: {
    // After an operand, `if` is the conditional expression's: `a if c else b if d else e`
    // nests to the right, one level per `if`.
    if (afterOperand)
      return extendSpine(0);
    uint32_t &run = levels_.back()[kElseIf];
    run = prev == KilnLexer::KW_ELSE ? run + 1 : 0;
    // Each `else if` nests one IfStmt deeper, above at least a block.
    return run + 2 > maxTreeDepth_ ? Verdict::SpineTooLong : Verdict::Ok;
  }
  case KilnLexer::KW_ELSE:
    return Verdict::Ok;
  default:
    break;
  }
  if (int level = binaryLevel(type); level >= 0)
    return extendSpine(static_cast<size_t>(level));
  if (isOperandToken(type))
    return Verdict::Ok;
  // Any other token (`,` `;` `=` `:` keywords ...) ends the operator runs at this level.
  Counters &c = levels_.back();
  for (size_t q = 0; q <= kPostfix; ++q)
    c[q] = 0;
  if (type == KilnLexer::SEMI)
    c[kElseIf] = 0;
  return Verdict::Ok;
}

} // namespace kiln::syntax
