//===- Sema.cpp - Semantic analysis: entry points and item-level checks ---===//
//
// The order of work for one compilation:
//   1. load the main file and its imports, declare every item (Imports.cpp);
//   2. check what needs no instantiation: parameter lists, where `return` and `launch`
//      appear, attributes, kernel signatures, module consts;
//   3. specialize and lower each requested kernel (SemaKernel.cpp), verifying the IR.
// Generic fn bodies are checked when a kernel instantiates them, at each call.
//
//===----------------------------------------------------------------------===//
#include "frontend/EarlyReturn.h"
#include "frontend/SemaInternal.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace kiln {

namespace sema {

Sema::Sema(ir::Module &m, DiagnosticEngine &d, const SemaOptions &o)
    : module(m), diags(d), options(o), sources(*m.sources) {}

void Sema::error(Location loc, DiagCode code, std::string message, std::string hint,
                 std::vector<Diagnostic> notes) {
  std::string dedupe = std::to_string(loc.file) + ":" + std::to_string(loc.line) + ":" +
                       std::to_string(loc.col) + ":" + std::to_string(int(code)) + ":" + message;
  if (!reportedMessages.insert(dedupe).second)
    return;
  Diagnostic d;
  d.severity = Severity::Error;
  d.code = code;
  d.loc = loc;
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.notes = std::move(notes);
  if (instanceNote)
    d.notes.push_back(*instanceNote);
  diags.report(std::move(d));
}

Diagnostic Sema::note(Location loc, std::string message) {
  Diagnostic n;
  n.severity = Severity::Note;
  n.loc = loc;
  n.message = std::move(message);
  return n;
}

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string Sema::closestName(const std::string &name, const std::vector<std::string> &candidates) {
  std::vector<std::string> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  std::string best;
  size_t bestDist = SIZE_MAX;
  for (const auto &c : sorted) {
    if (c == name)
      continue;
    size_t d = editDistance(name, c);
    // Close enough to be a typo: at most two edits, and few relative to the length
    // (so that `y` does not suggest `x`).
    if (d <= 2 && 3 * d <= name.size() + 1 && d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

std::vector<std::string> Sema::visibleNames() const {
  std::vector<std::string> names;
  if (!frames.empty())
    for (const auto &scope : frames.back()->scopes)
      for (const auto &b : scope->bindings)
        names.push_back(b->name);
  for (const auto &[name, g] : globals)
    if (g.kind == ast::ItemKind::Const)
      names.push_back(name);
  return names;
}

//===--------------------------------------------------------------------===//
// Item-level checks
//===--------------------------------------------------------------------===//

namespace {
/// Finds misplaced `return` and `launch` statements in a fn or kernel body.
struct StructureCheck {
  Sema &s;
  const ast::FunctionItem &fn;

  void block(const ast::BlockStmt &b, bool top) {
    for (size_t i = 0; i < b.body.size(); ++i)
      stmt(*b.body[i], top && i + 1 == b.body.size());
  }
  void stmt(const ast::Stmt &st, bool lastOfBody) {
    switch (st.kind) {
    case ast::StmtKind::Return:
      // A kernel's bare returns were rewritten away (EarlyReturn.cpp).
      if (fn.kind == ast::ItemKind::Kernel)
        s.error(st.loc, DiagCode::ReturnOutsideFn, "kernels return no value",
                "write results to memory with store(...); a bare 'return;' ends the program early");
      else if (!lastOfBody)
        s.error(st.loc, DiagCode::ReturnNotLast, "'return' must be the last statement of a fn body",
                "compute the result into a var and return it at the end");
      return;
    case ast::StmtKind::Launch:
      s.error(st.loc, DiagCode::LaunchOutsideGraph,
              "'launch' is only allowed in a graph, not in a " +
                  std::string(fn.kind == ast::ItemKind::Kernel ? "kernel" : "fn"));
      return;
    case ast::StmtKind::Block: block(*ast::cast<ast::BlockStmt>(&st), false); return;
    case ast::StmtKind::For: block(*ast::cast<ast::ForStmt>(&st)->body, false); return;
    case ast::StmtKind::While: block(*ast::cast<ast::WhileStmt>(&st)->body, false); return;
    case ast::StmtKind::If: {
      const auto &i = *ast::cast<ast::IfStmt>(&st);
      block(*i.thenBody, false);
      if (i.elseBody)
        stmt(*i.elseBody, false);
      return;
    }
    case ast::StmtKind::Let:
    case ast::StmtKind::Var:
    case ast::StmtKind::Assign:
    case ast::StmtKind::Expr: return;
    }
  }
};
} // namespace

void Sema::checkStructure(const ast::FunctionItem &fn) {
  // Each name's first parameter: linear in the parameters, however many a file declares.
  std::unordered_map<std::string_view, size_t> first;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    auto [it, inserted] = first.emplace(fn.params[i].name, i);
    if (!inserted)
      error(fn.params[i].loc, DiagCode::DuplicateParam, "parameter '" + fn.params[i].name + "' is declared twice", "",
            {note(fn.params[it->second].loc, "the first '" + fn.params[i].name + "' is here")});
  }
  if (fn.kind == ast::ItemKind::Graph)
    return; // launch statements belong here; graphs are otherwise not compiled yet
  unsigned before = diags.errorCount();
  StructureCheck{*this, fn}.block(*fn.body, true);
  if (diags.errorCount() != before)
    brokenFns.insert(&fn);
}

Val Sema::globalConst(GlobalItem &g) {
  if (g.state == GlobalItem::State::Done)
    return g.value;
  const auto &c = *ast::cast<ast::ConstItem>(g.item);
  if (g.state == GlobalItem::State::Evaluating) {
    error(c.nameLoc, DiagCode::NotConstant, "const '" + c.name + "' depends on itself");
    return Val::poison();
  }
  g.state = GlobalItem::State::Evaluating;
  Val v = evalConstExpr(*c.value, "const '" + c.name + "'");
  if (v.isConst() && c.type) {
    std::optional<Type> t = resolveType(*c.type);
    if (t && (!t->isScalar() || t->pointer)) {
      error(c.type->loc, DiagCode::TypeMismatch,
            "a module const must have a scalar type, not " + t->str());
      t.reset();
      v = Val::poison();
    }
    if (t) {
      std::optional<Val> cv =
          coerce(v, *t, c.value->loc, DiagCode::TypeMismatch, "const '" + c.name + "'");
      v = cv ? *cv : Val::poison();
      if (v.isConst()) {
        v.weak = true; // consts stay weakly typed, with the declared nominal dtype
        v.ir = nullptr;
      }
    }
  }
  g.value = v;
  g.state = GlobalItem::State::Done;
  return v;
}

bool Sema::run(uint32_t main, bool specialize) {
  unsigned errorsBefore = diags.errorCount();
  opsEmitted = 0;
  try {
    if (!loadProgram(main))
      return false;
    // --kernel naming a graph compiles the kernels it launches: each one's attributes
    // (@num_warps, ...) and early returns are needed, so none is skipped below.
    const auto named = options.kernel ? globals.find(*options.kernel) : globals.end();
    const bool namesGraph = named != globals.end() && named->second.kind == ast::ItemKind::Graph;
    for (const auto &m : files)
      for (const auto &item : m->items) {
        if (diags.reachedErrorLimit())
          return false;
        if ((item->kind == ast::ItemKind::Fn || item->kind == ast::ItemKind::Const) &&
            !item->attributes.empty())
          error(item->attributes[0].loc, DiagCode::UnknownAttribute,
                "attributes apply only to kernels, not to a " +
                    std::string(item->kind == ast::ItemKind::Fn ? "fn" : "const"));
        if (auto *f = ast::dyn_cast<ast::FunctionItem>(item.get())) {
          // With --kernel, another kernel is not compiled, so its errors (a misplaced
          // return as much as a type error in its body) do not stop this one.
          if (f->kind == ast::ItemKind::Kernel && options.kernel && !namesGraph && *options.kernel != f->name)
            continue;
          if (f->kind == ast::ItemKind::Kernel)
            lowerEarlyReturns(*f);
          checkStructure(*f);
          if (f->kind == ast::ItemKind::Kernel)
            checkKernelDecl(*f);
        } else if (const auto *c = ast::dyn_cast<ast::ConstItem>(item.get())) {
          auto it = globals.find(c->name);
          if (it != globals.end() && it->second.item == c)
            globalConst(it->second);
        }
      }
    if (specialize)
      compileKernels();
  } catch (const BudgetExceeded &) {
    error(Location{main, 0, 0}, DiagCode::InputTooLarge,
          "the program grows beyond " + std::to_string(kMaxOps) +
              " operations after unrolling loops and inlining fns");
  }
  return diags.errorCount() == errorsBefore;
}

} // namespace sema

bool compileToTileIR(uint32_t file, ir::Module &module, DiagnosticEngine &diags,
                     const SemaOptions &options) {
  sema::Sema s(module, diags, options);
  return s.run(file);
}

std::unique_ptr<ir::Module> compileFileToTileIR(const std::string &path, DiagnosticEngine &diags,
                                                const SemaOptions &options,
                                                std::shared_ptr<SourceManager> sources) {
  auto module = std::make_unique<ir::Module>();
  if (sources)
    module->sources = std::move(sources);
  uint32_t file = module->sources->addName(path);
  if (!module->sources->text(file)) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable)
        << "cannot read '" << path << "': " << module->sources->readError(file);
    return nullptr;
  }
  if (!compileToTileIR(file, *module, diags, options))
    return nullptr;
  return module;
}

} // namespace kiln
