//===- SyntaxTestSupport.h - Helpers for the syntax unit tests --*- C++ -*-===//
#pragma once

#include "frontend/AST.h"
#include "frontend/Parser.h"
#include "support/Diagnostics.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

/// The outcome of parsing one in-memory file.
struct Parsed {
  std::unique_ptr<ast::Module> module;
  std::vector<Diagnostic> diags; ///< everything reported, in order
  std::string ast;               ///< printAST output when parsing succeeded

  bool ok() const { return module != nullptr; }
  /// "E0006 3:5 expected ';' after expression" for the i-th diagnostic.
  std::string diag(size_t i = 0) const;
  /// All diagnostics, one per line, in the format of diag().
  std::string allDiags() const;
};

Parsed parseText(const std::string &text, const ParseLimits &limits = {},
                 unsigned errorLimit = 50);

/// Compact prefix form of an expression for precedence tests: `(+ a (* b c))`,
/// `(call f a (kw mask m))`, `(. x to bf16)`, `(index x : None)`, `(neg a)`.
std::string sexpr(const ast::Expr &e);

/// The function item named `name` (null if absent).
const ast::FunctionItem *findFunction(const ast::Module &m, const std::string &name);

/// The initializer of the first statement of the first function, which must be a `let`;
/// used to parse one expression: parseExpr("a + b") parses `fn t() { let v = a + b; }`.
std::string parseExprSexpr(const std::string &expr);

/// The text printAST gives for the body statements of `fn t() { <body> }`, with the
/// indentation of the function body removed.
std::string printBody(const std::string &body);

} // namespace kiln::test
