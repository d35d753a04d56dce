//===- EarlyReturn.cpp - `return;` in a kernel ends its program -----------===//
//
// A kernel may end early, as Triton's `if pid >= n: return` does: the rest of the
// program does nothing. Tile IR has no jumps (its control flow is structured: if, for
// and while with yields), so the returns are rewritten away on the syntax tree before
// the checker sees the kernel. One flag, `live`, starts true; a return sets it false;
// the statements after anything that may have returned run under `if live { ... }`.
// That is one flag for the whole kernel and one guard per block that goes on after a
// return, so the program does not grow, and the pass pipeline folds a flag it can
// decide (the statements after an unconditional return disappear).
//
// A return inside a loop ends the loop too: the body of a `for` (or `static_range`)
// loop that may return runs under `if live { ... }`, so the remaining iterations do
// nothing, and a `while` loop's condition becomes `live && cond`, so that it stops.
//
//===----------------------------------------------------------------------===//
#include "frontend/EarlyReturn.h"

#include <iterator>

namespace kiln::sema {

namespace {

using namespace ast;

/// The flag's name: no identifier can be spelled so, so no user name meets it.
constexpr const char *kLiveFlag = "return.live";

class ReturnLowering {
public:
  /// Lowers the statements of one block; `closeLoc` is its closing brace. Whether any of
  /// them may have returned, so that what follows the block must be guarded too.
  bool lowerBlock(std::vector<StmtPtr> &stmts, Location closeLoc) {
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (!lowerStmt(stmts[i]))
        continue;
      if (i + 1 == stmts.size())
        return true;
      // The rest of the block runs only when nothing before it returned.
      std::vector<StmtPtr> rest(std::make_move_iterator(stmts.begin() + i + 1), std::make_move_iterator(stmts.end()));
      stmts.resize(i + 1);
      lowerBlock(rest, closeLoc);
      Location at = rest.front()->loc;
      auto guard = std::make_unique<IfStmt>(at);
      guard->cond = std::make_unique<NameExpr>(at, kLiveFlag);
      guard->thenBody = std::make_unique<BlockStmt>(at, std::move(rest));
      guard->thenBody->closeLoc = closeLoc;
      stmts.push_back(std::move(guard));
      return true;
    }
    return false;
  }

  bool used() const { return used_; }

private:
  /// Lowers one statement; whether it may return.
  bool lowerStmt(StmtPtr &st) {
    switch (st->kind) {
    case StmtKind::Return: {
      if (cast<ReturnStmt>(st.get())->value)
        return false; // a kernel returns no value: the structural check says so (E0500)
      Location at = st->loc;
      st = std::make_unique<AssignStmt>(at, kLiveFlag, at, AssignOp::Set, std::make_unique<BoolLit>(at, false));
      used_ = true;
      return true;
    }
    case StmtKind::Block: {
      auto *b = cast<BlockStmt>(st.get());
      return lowerBlock(b->body, b->closeLoc);
    }
    case StmtKind::If: {
      auto *i = cast<IfStmt>(st.get());
      bool returns = lowerBlock(i->thenBody->body, i->thenBody->closeLoc);
      if (i->elseBody)
        returns |= lowerStmt(i->elseBody);
      return returns;
    }
    case StmtKind::For: {
      auto *f = cast<ForStmt>(st.get());
      if (!lowerBlock(f->body->body, f->body->closeLoc))
        return false;
      // Later iterations do nothing once one returned.
      guardWhole(*f->body);
      return true;
    }
    case StmtKind::While: {
      auto *w = cast<WhileStmt>(st.get());
      if (!lowerBlock(w->body->body, w->body->closeLoc))
        return false;
      Location at = w->cond->loc;
      w->cond = std::make_unique<BinaryExpr>(at, BinaryOp::LogicalAnd, at, std::make_unique<NameExpr>(at, kLiveFlag),
                                             std::move(w->cond));
      return true;
    }
    default:
      return false; // bindings, assignments and calls have no return in them
    }
  }

  /// Puts the whole of `body` under `if live { ... }`.
  static void guardWhole(BlockStmt &body) {
    if (body.body.empty())
      return;
    Location at = body.body.front()->loc;
    auto guard = std::make_unique<IfStmt>(at);
    guard->cond = std::make_unique<NameExpr>(at, kLiveFlag);
    guard->thenBody = std::make_unique<BlockStmt>(at, std::move(body.body));
    guard->thenBody->closeLoc = body.closeLoc;
    body.body.clear();
    body.body.push_back(std::move(guard));
  }

  bool used_ = false;
};

} // namespace

void lowerEarlyReturns(ast::FunctionItem &kernel) {
  if (!kernel.body)
    return;
  ReturnLowering lowering;
  lowering.lowerBlock(kernel.body->body, kernel.body->closeLoc);
  if (!lowering.used())
    return;
  Location at = kernel.body->loc;
  auto flag = std::make_unique<BindingStmt>(StmtKind::Var, at);
  flag->names = {kLiveFlag};
  flag->nameLocs = {at};
  flag->init = std::make_unique<BoolLit>(at, true);
  kernel.body->body.insert(kernel.body->body.begin(), std::move(flag));
}

} // namespace kiln::sema
