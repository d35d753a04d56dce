//===- AST.cpp - Source spellings of AST operators ------------------------===//
//
// The operator enums of AST.h mapped back to how they are written, for the AST printer
// and for diagnostics that quote an operator.
//
//===----------------------------------------------------------------------===//
#include "frontend/AST.h"

namespace kiln::ast {

const char *binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Rem: return "%";
  case BinaryOp::BitAnd: return "&";
  case BinaryOp::BitOr: return "|";
  case BinaryOp::BitXor: return "^";
  case BinaryOp::Shl: return "<<";
  case BinaryOp::Shr: return ">>";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::LogicalAnd: return "&&";
  case BinaryOp::LogicalOr: return "||";
  case BinaryOp::Pow: return "**";
  }
  return "?"; // unreachable for valid enum values; keeps -Wreturn-type quiet
}

const char *unaryOpSpelling(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg: return "-";
  case UnaryOp::Not: return "!";
  case UnaryOp::BitNot: return "~";
  case UnaryOp::Plus: return "+";
  }
  return "?";
}

const char *assignOpSpelling(AssignOp op) {
  switch (op) {
  case AssignOp::Set: return "=";
  case AssignOp::Add: return "+=";
  case AssignOp::Sub: return "-=";
  case AssignOp::Mul: return "*=";
  case AssignOp::Div: return "/=";
  case AssignOp::Rem: return "%=";
  case AssignOp::BitAnd: return "&=";
  case AssignOp::BitOr: return "|=";
  case AssignOp::BitXor: return "^=";
  case AssignOp::Shl: return "<<=";
  case AssignOp::Shr: return ">>=";
  }
  return "?";
}

} // namespace kiln::ast
