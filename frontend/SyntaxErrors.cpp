//===- SyntaxErrors.cpp - Readable syntax error messages ------------------===//
#include "frontend/SyntaxErrors.h"

#include "KilnLexer.h"
#include "KilnParser.h"

#include <algorithm>
#include <iterator>
#include <span>
#include <vector>

namespace kiln::syntax {

using grammar::KilnLexer;
using grammar::KilnParser;

// Token groups that are named as a whole in messages instead of being listed.
static constexpr size_t kExpressionStart[] = {
    KilnLexer::IDENT,  KilnLexer::INT,    KilnLexer::FLOAT,  KilnLexer::STRING,
    KilnLexer::KW_TRUE, KilnLexer::KW_FALSE, KilnLexer::KW_INF, KilnLexer::KW_NAN,
    KilnLexer::LPAREN, KilnLexer::LBRACK, KilnLexer::LBRACE, KilnLexer::MINUS,
    KilnLexer::BANG,   KilnLexer::TILDE,  KilnLexer::PLUS};
static constexpr size_t kStatementKeywords[] = {
    KilnLexer::KW_LET, KilnLexer::KW_VAR,    KilnLexer::KW_FOR,   KilnLexer::KW_WHILE,
    KilnLexer::KW_IF,  KilnLexer::KW_RETURN, KilnLexer::KW_LAUNCH};
static constexpr size_t kItemStart[] = {
    KilnLexer::KW_IMPORT, KilnLexer::KW_CONST, KilnLexer::KW_FN,
    KilnLexer::KW_KERNEL, KilnLexer::KW_GRAPH, KilnLexer::AT};
// Operators that would continue the expression just parsed. When all binary operators
// are possible, the parser has just finished an expression, and listing how it could
// go on hides what is actually missing (usually ';', ')' or '{').
static constexpr size_t kBinaryOperators[] = {
    KilnLexer::STAR, KilnLexer::SLASH, KilnLexer::PERCENT, KilnLexer::PLUS, KilnLexer::MINUS,
    KilnLexer::SHL,  KilnLexer::SHR,   KilnLexer::AMP,     KilnLexer::CARET, KilnLexer::PIPE,
    KilnLexer::EQ,   KilnLexer::NE,    KilnLexer::LT,      KilnLexer::LE,    KilnLexer::GT,
    KilnLexer::GE,   KilnLexer::ANDAND, KilnLexer::OROR, KilnLexer::POW};
static constexpr size_t kPostfixOperators[] = {KilnLexer::DOT,
                                                               KilnLexer::LBRACK};
static constexpr size_t kAssignmentOperators[] = {
    KilnLexer::ASSIGN,       KilnLexer::PLUS_ASSIGN,    KilnLexer::MINUS_ASSIGN,
    KilnLexer::STAR_ASSIGN,  KilnLexer::SLASH_ASSIGN,   KilnLexer::PERCENT_ASSIGN,
    KilnLexer::AMP_ASSIGN,   KilnLexer::PIPE_ASSIGN,    KilnLexer::CARET_ASSIGN,
    KilnLexer::SHL_ASSIGN,   KilnLexer::SHR_ASSIGN};

static bool containsAll(const antlr4::misc::IntervalSet &set, std::span<const size_t> group) {
  for (size_t t : group)
    if (!set.contains(t))
      return false;
  return true;
}

static void removeAll(antlr4::misc::IntervalSet &set, std::span<const size_t> group) {
  for (size_t t : group)
    set.remove(t);
}

static std::string tokenTypeName(antlr4::Parser *recognizer, size_t type) {
  switch (type) {
  case antlr4::Token::EOF: return "end of file";
  case KilnLexer::IDENT: return "identifier";
  case KilnLexer::INT: return "integer";
  case KilnLexer::FLOAT: return "float";
  case KilnLexer::STRING: return "string";
  default: break;
  }
  std::string literal = recognizer->getVocabulary().getLiteralName(type);
  if (!literal.empty())
    return literal; // already quoted: 'let', ';'
  return recognizer->getVocabulary().getDisplayName(type);
}

/// What the parser expected, as a person would say it: groups first, then tokens in
/// grammar order.
static std::vector<std::string> describeExpected(antlr4::Parser *recognizer,
                                                 antlr4::misc::IntervalSet set) {
  std::vector<std::string> names;
  if (containsAll(set, kBinaryOperators)) {
    removeAll(set, kBinaryOperators);
    removeAll(set, kPostfixOperators);
    set.remove(size_t(KilnLexer::KW_IF)); // `a if c else b` would continue it too
  }
  // After an expression statement's expression: `=`/`+=`... could follow, but a missing
  // ';' is what is meant, unless an assignment is all that could come.
  if (containsAll(set, kAssignmentOperators) && set.size() > std::size(kAssignmentOperators))
    removeAll(set, kAssignmentOperators);
  if (containsAll(set, kStatementKeywords) && containsAll(set, kExpressionStart)) {
    names.push_back("statement");
    removeAll(set, kStatementKeywords);
    removeAll(set, kExpressionStart);
  } else if (containsAll(set, kExpressionStart)) {
    names.push_back("expression");
    removeAll(set, kExpressionStart);
  }
  if (containsAll(set, kItemStart)) {
    names.push_back("item");
    removeAll(set, kItemStart);
  }
  if (set.contains(size_t(KilnLexer::STAR)) && set.contains(size_t(KilnLexer::IDENT))) {
    names.push_back("type"); // `*T` or a name; `*` as an operator was removed above
    set.remove(size_t(KilnLexer::STAR));
    set.remove(size_t(KilnLexer::POW)); // `**T`
    set.remove(size_t(KilnLexer::IDENT));
  }
  for (ssize_t t : set.toList())
    if (t >= 0 || static_cast<size_t>(t) == antlr4::Token::EOF)
      names.push_back(tokenTypeName(recognizer, static_cast<size_t>(t)));
  return names;
}

/// "A", "A or B", "one of A, B, C".
static std::string joinAlternatives(const std::vector<std::string> &names) {
  if (names.size() == 1)
    return names[0];
  if (names.size() == 2)
    return names[0] + " or " + names[1];
  std::string out = "one of ";
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

static bool mentions(const std::vector<std::string> &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// A hint for the places where users most often bring syntax from elsewhere.
static std::string hintFor(antlr4::Parser *recognizer, const antlr4::Token *offending,
                           const std::vector<std::string> &names) {
  // `launch k(grid)(args)`: CUDA's `k<<<grid>>>(args)` carried over with parentheses.
  if (offending && offending->getType() == KilnParser::LPAREN &&
      dynamic_cast<KilnParser::LaunchStmtContext *>(recognizer->getContext()))
    return "a launch gives its grid in brackets before the arguments: launch k[(grid,)](args);";
  if (mentions(names, "item"))
    return "a Kiln file is a list of items: import, const, fn, kernel and graph declarations";
  if (mentions(names, "':'") && mentions(names, "'None'"))
    return "a subscript only keeps an axis (:) or inserts one (None); elements are read "
           "with load()";
  return {};
}

/// The token before `tok` in the parser's stream (hidden tokens never reach it).
static antlr4::Token *previousToken(antlr4::Parser *recognizer, const antlr4::Token *tok) {
  size_t index = tok->getTokenIndex();
  if (index == 0 || index == static_cast<size_t>(-1))
    return nullptr;
  return recognizer->getTokenStream()->get(index - 1);
}

std::string KilnErrorStrategy::quoteToken(const antlr4::Token *tok) const {
  if (tok->getType() == antlr4::Token::EOF)
    return "end of file";
  if (tok->getTokenIndex() == INVALID_INDEX)
    return "'" + tok->getText() + "'"; // conjured by error recovery; not in the source
  std::string_view text;
  size_t start = tok->getStartIndex(), stop = tok->getStopIndex();
  if (start <= stop && stop < source_.size())
    text = source_.substr(start, stop - start + 1);
  constexpr size_t kMaxShown = 40;
  if (text.size() <= kMaxShown)
    return "'" + std::string(text) + "'";
  size_t cut = kMaxShown - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut; // never split a UTF-8 sequence
  return "'" + std::string(text.substr(0, cut)) + "...'";
}

/// What the parser has just read, for "expected ';' after ...": "expression" or "type"
/// when the subtree just completed (the last child of the current rule, or of an
/// enclosing one if the current rule has only just started) ends at `prev`; otherwise
/// the token itself.
using QuoteFn = std::function<std::string(const antlr4::Token *)>;

static std::string describePrevious(antlr4::Parser *recognizer, antlr4::Token *prev,
                                    const QuoteFn &quote) {
  antlr4::tree::ParseTree *from = nullptr;
  for (antlr4::ParserRuleContext *ctx = recognizer->getContext(); ctx;
       from = ctx, ctx = dynamic_cast<antlr4::ParserRuleContext *>(ctx->parent)) {
    size_t n = ctx->children.size();
    if (n && ctx->children[n - 1] == from)
      --n; // the rule we came up from has consumed nothing yet
    if (n == 0)
      continue;
    // Descend through wrappers that end where the completed subtree ends (an argument
    // list ends with its last argument's expression).
    auto *last = dynamic_cast<antlr4::ParserRuleContext *>(ctx->children[n - 1]);
    while (last && last->getStop() == prev) {
      if (dynamic_cast<KilnParser::ExprContext *>(last))
        return "expression";
      if (dynamic_cast<KilnParser::TypeContext *>(last))
        return "type";
      last = last->children.empty()
                 ? nullptr
                 : dynamic_cast<antlr4::ParserRuleContext *>(last->children.back());
    }
    break;
  }
  return quote(prev);
}

/// When the only thing expected is a closing bracket: the opening bracket among the
/// current rule's tokens that it would close, so the error can point at both ends.
static antlr4::Token *unclosedOpener(antlr4::Parser *recognizer,
                                     const std::vector<std::string> &expected) {
  if (expected.size() != 1)
    return nullptr;
  size_t opener, closer;
  if (expected[0] == "')'") {
    opener = KilnLexer::LPAREN;
    closer = KilnLexer::RPAREN;
  } else if (expected[0] == "']'") {
    opener = KilnLexer::LBRACK;
    closer = KilnLexer::RBRACK;
  } else if (expected[0] == "'}'") {
    opener = KilnLexer::LBRACE;
    closer = KilnLexer::RBRACE;
  } else {
    return nullptr;
  }
  antlr4::ParserRuleContext *ctx = recognizer->getContext();
  if (!ctx)
    return nullptr;
  int balance = 0;
  for (size_t i = ctx->children.size(); i-- > 0;) {
    auto *term = dynamic_cast<antlr4::tree::TerminalNode *>(ctx->children[i]);
    if (!term)
      continue;
    size_t type = term->getSymbol()->getType();
    if (type == closer)
      ++balance;
    else if (type == opener && balance-- == 0)
      return term->getSymbol()->getTokenIndex() == INVALID_INDEX ? nullptr
                                                                          : term->getSymbol();
  }
  return nullptr;
}

/// The tokens that can follow a token of type `first` taken from `decisionState`: walk
/// the epsilon transitions of the decision's rule (not into other rules) to the
/// transitions that match `first`, and collect what can come after each.
static antlr4::misc::IntervalSet expectedAfter(antlr4::Parser *recognizer, size_t decisionState,
                                               antlr4::RuleContext *ctx, size_t first) {
  const antlr4::atn::ATN &atn = recognizer->getATN();
  antlr4::misc::IntervalSet result;
  if (decisionState >= atn.states.size())
    return result;
  std::vector<antlr4::atn::ATNState *> work{atn.states[decisionState]};
  std::vector<antlr4::atn::ATNState *> seen;
  while (!work.empty()) {
    antlr4::atn::ATNState *s = work.back();
    work.pop_back();
    if (std::find(seen.begin(), seen.end(), s) != seen.end() ||
        s->getStateType() == antlr4::atn::ATNState::RULE_STOP)
      continue;
    seen.push_back(s);
    for (antlr4::atn::Transition *t : s->transitions) {
      if (t->isEpsilon()) {
        if (t->getSerializationType() != antlr4::atn::Transition::RULE)
          work.push_back(t->target);
      } else if (t->matches(first, antlr4::Token::MIN_USER_TOKEN_TYPE, atn.maxTokenType)) {
        result.addAll(atn.nextTokens(t->target, ctx));
      }
    }
  }
  result.remove(antlr4::Token::EPSILON);
  return result;
}

/// A missing ';' is reported right after the token it should follow, where the caret
/// shows the fix (clang's habit), not at the start of the next line. When a `//` on that
/// line ends in ';' (`n // 2;`), the user meant Python's floor division, and the error
/// points at the `//`.
void KilnErrorStrategy::placeMissingSemicolon(SyntaxErrorReport &r, antlr4::Token *prev) const {
  if (!prev || prev->getTokenIndex() == INVALID_INDEX || prev->getStopIndex() + 1 > source_.size())
    return;
  r.after = prev;
  r.atOffset = prev->getStopIndex() + 1;
  size_t lineEnd = source_.find('\n', *r.atOffset);
  std::string_view rest =
      source_.substr(*r.atOffset, (lineEnd == std::string_view::npos ? source_.size() : lineEnd) - *r.atOffset);
  size_t slashes = rest.find("//");
  if (slashes == std::string_view::npos || rest.find_first_not_of(" \t") != slashes)
    return;
  std::string_view comment = rest.substr(slashes + 2);
  size_t last = comment.find_last_not_of(" \t\r");
  if (last == std::string_view::npos || comment[last] != ';')
    return;
  r.atOffset = *r.atOffset + slashes;
  r.message = "'//' starts a comment in Kiln, so the expression before it has no ';'";
  r.hint = "did you mean '/'? Integer '/' truncates toward zero; for floor division of "
           "possibly negative values use floor(a.to(f32) / b)";
}

/// `x = a + b` followed on the next line by an `if` statement reads as the start of a
/// conditional `a + b if ...`, and the parser then misses its `else`. The real mistake
/// is the missing ';' before the `if`: returns the `if` when that is the case.
static antlr4::Token *statementIfAfterMissingSemicolon(antlr4::Parser *recognizer,
                                                       const std::vector<std::string> &names) {
  if (names.size() != 1 || names[0] != "'else'")
    return nullptr;
  for (antlr4::RuleContext *ctx = recognizer->getContext(); ctx; ctx = dynamic_cast<antlr4::RuleContext *>(ctx->parent)) {
    auto *cond = dynamic_cast<KilnParser::CondExprContext *>(ctx);
    if (!cond || !cond->KW_IF())
      continue;
    antlr4::Token *ifToken = cond->KW_IF()->getSymbol();
    antlr4::Token *before = previousToken(recognizer, ifToken);
    return before && before->getLine() < ifToken->getLine() ? ifToken : nullptr;
  }
  return nullptr;
}

/// The index of the `}` that closes the first block after token `from` (the body of an
/// `if` statement the parser took for a conditional expression), or 0 if none. Errors
/// up to it are the parser's recovery stumbling through that statement.
static size_t endOfFirstBlock(antlr4::Parser *recognizer, const antlr4::Token *from) {
  auto *stream = dynamic_cast<antlr4::BufferedTokenStream *>(recognizer->getTokenStream());
  if (!stream)
    return 0;
  stream->fill();
  int depth = 0;
  for (size_t i = from->getTokenIndex(); i < stream->size(); ++i) {
    size_t type = stream->get(i)->getType();
    if (type == KilnLexer::LBRACE)
      ++depth;
    else if (type == KilnLexer::RBRACE && depth > 0 && --depth == 0)
      return i;
  }
  return 0;
}

bool KilnErrorStrategy::reportSemicolonBeforeIf(antlr4::Parser *recognizer,
                                                const std::vector<std::string> &names) {
  antlr4::Token *ifToken = statementIfAfterMissingSemicolon(recognizer, names);
  if (!ifToken)
    return false;
  SyntaxErrorReport r;
  r.at = ifToken;
  r.message = "expected ';' after expression";
  r.quietThrough = endOfFirstBlock(recognizer, ifToken);
  placeMissingSemicolon(r, previousToken(recognizer, ifToken));
  sink_(r);
  return true;
}

void KilnErrorStrategy::reportUnexpected(antlr4::Parser *recognizer, antlr4::Token *offending,
                                         const antlr4::misc::IntervalSet &expected) {
  SyntaxErrorReport r;
  r.at = offending;
  std::vector<std::string> names = describeExpected(recognizer, expected);
  if (reportSemicolonBeforeIf(recognizer, names))
    return;
  if (names.size() == 1) {
    r.message = "expected " + names[0];
    if (antlr4::Token *prev = previousToken(recognizer, offending))
      r.message += " after " + describePrevious(recognizer, prev, [this](const antlr4::Token *t) {
                     return quoteToken(t);
                   });
    r.message += ", found " + quoteToken(offending);
    if (antlr4::Token *open = unclosedOpener(recognizer, names)) {
      r.noteAt = open;
      r.note = "to close this " + quoteToken(open);
    }
    if (names[0] == "';'") {
      r.hint = hintFor(recognizer, offending, names);
      placeMissingSemicolon(r, previousToken(recognizer, offending));
      sink_(r);
      return;
    }
  } else if (names.empty()) {
    r.message = "unexpected " + quoteToken(offending);
  } else {
    r.message = "unexpected " + quoteToken(offending) + "; expected " + joinAlternatives(names);
  }
  r.hint = hintFor(recognizer, offending, names);
  sink_(r);
}

void KilnErrorStrategy::reportNoViableAlternative(antlr4::Parser *recognizer,
                                                  const antlr4::NoViableAltException &e) {
  antlr4::Token *offending = e.getOffendingToken();
  antlr4::Token *start = e.getStartToken();
  if (!offending)
    offending = recognizer->getCurrentToken();
  // The decision's expected set describes its first token. When the look-ahead failed
  // on the second one (`f(a, ;` where a trailing comma is allowed), ask the ATN what
  // could follow the first; further out, only the previous token is a reliable anchor.
  if (start && start != offending && offending->getTokenIndex() == start->getTokenIndex() + 1) {
    antlr4::misc::IntervalSet next =
        expectedAfter(recognizer, e.getOffendingState(), e.getCtx(), start->getType());
    if (!next.isEmpty()) {
      reportUnexpected(recognizer, offending, next);
      return;
    }
  }
  if (start && start != offending) {
    SyntaxErrorReport r;
    r.at = offending;
    r.message = "unexpected " + quoteToken(offending);
    if (antlr4::Token *prev = previousToken(recognizer, offending))
      r.message += " after " + quoteToken(prev);
    sink_(r);
    return;
  }
  reportUnexpected(recognizer, offending, e.getExpectedTokens());
}

void KilnErrorStrategy::reportInputMismatch(antlr4::Parser *recognizer,
                                            const antlr4::InputMismatchException &e) {
  antlr4::Token *offending = e.getOffendingToken();
  if (!offending)
    offending = recognizer->getCurrentToken();
  reportUnexpected(recognizer, offending, e.getExpectedTokens());
}

void KilnErrorStrategy::reportFailedPredicate(antlr4::Parser *recognizer,
                                              const antlr4::FailedPredicateException &e) {
  // Only the precedence predicates of the left-recursive expression rule exist, and they
  // are decided during prediction; kept for completeness.
  antlr4::Token *offending = e.getOffendingToken();
  if (!offending)
    offending = recognizer->getCurrentToken();
  SyntaxErrorReport r;
  r.at = offending;
  r.message = "unexpected " + quoteToken(offending);
  sink_(r);
}

void KilnErrorStrategy::reportUnwantedToken(antlr4::Parser *recognizer) {
  // Same bookkeeping as ANTLR's: one report per error, none while recovering.
  if (inErrorRecoveryMode(recognizer))
    return;
  beginErrorCondition(recognizer);
  reportUnexpected(recognizer, recognizer->getCurrentToken(), getExpectedTokens(recognizer));
}

void KilnErrorStrategy::reportMissingToken(antlr4::Parser *recognizer) {
  if (inErrorRecoveryMode(recognizer))
    return;
  beginErrorCondition(recognizer);
  antlr4::Token *t = recognizer->getCurrentToken();
  antlr4::misc::IntervalSet expected = getExpectedTokens(recognizer);
  std::vector<std::string> names = describeExpected(recognizer, expected);
  SyntaxErrorReport r;
  r.at = t;
  if (reportSemicolonBeforeIf(recognizer, names))
    return;
  r.message = "expected " + (names.empty() ? std::string("more input") : joinAlternatives(names));
  if (antlr4::Token *prev = previousToken(recognizer, t))
    r.message += " after " + describePrevious(recognizer, prev, [this](const antlr4::Token *tok) {
                   return quoteToken(tok);
                 });
  if (antlr4::Token *open = unclosedOpener(recognizer, names)) {
    r.noteAt = open;
    r.note = "to close this " + quoteToken(open);
  }
  r.hint = hintFor(recognizer, t, names);
  if (names.size() == 1 && names[0] == "';'")
    placeMissingSemicolon(r, previousToken(recognizer, t));
  sink_(r);
}

} // namespace kiln::syntax
