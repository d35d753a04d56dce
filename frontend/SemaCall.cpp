//===- SemaCall.cpp - Calls: argument matching, fn inlining, argument kinds ===//
//
// A call names a user `fn` (checked and inlined with the argument values, so fns are
// generic over dtypes and shapes), a builtin (SemaBuiltins*.cpp), or something that
// cannot be called. Arguments are first matched to parameters by position and keyword
// without being evaluated — builtins take dtypes, shape lists, fn names and strings
// that are not values — and each handler then reads them with the arg* helpers.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include "frontend/BuiltinSynonyms.h"

#include <algorithm>

namespace kiln::sema {

const ast::FunctionItem *Sema::calleeFn(const std::string &name) const {
  if (Binding *b = lookupLocal(name))
    return b->value.kind == Val::Kind::Fn ? b->value.fn : nullptr;
  return findFn(name);
}

const ast::FunctionItem *Sema::findFn(const std::string &name) const {
  auto it = globals.find(name);
  if (it == globals.end() || it->second.kind != ast::ItemKind::Fn)
    return nullptr;
  return ast::cast<ast::FunctionItem>(it->second.item);
}

bool Sema::bindArgs(CallArgs &out, const std::vector<std::string> &params,
                    const std::vector<bool> &required, const ast::Expr *receiver,
                    const std::vector<ast::Arg> &args) {
  size_t n = params.size();
  out.exprs.assign(n, nullptr);
  out.locs.assign(n, out.loc);
  out.positional.assign(n, false);
  out.vals.assign(n, std::nullopt);
  bool ok = true;
  auto place = [&](size_t idx, const ast::Expr *e, Location loc, bool positional) {
    if (out.exprs[idx]) {
      error(loc, DiagCode::DuplicateArgument,
            "argument '" + params[idx] + "' of " + out.callee + " is given twice");
      ok = false;
      return;
    }
    out.exprs[idx] = e;
    out.locs[idx] = loc;
    out.positional[idx] = positional;
  };
  size_t next = 0;
  if (receiver) {
    if (n == 0) {
      error(out.calleeLoc, DiagCode::ArgumentCount,
            out.callee + " takes no arguments, so it cannot be called as a method");
      return false;
    }
    place(next++, receiver, receiver->loc, true);
  }
  bool sawKeyword = false;
  for (const ast::Arg &arg : args) {
    Location loc = arg.loc.valid() ? arg.loc : arg.value->loc;
    if (arg.name.empty()) {
      if (sawKeyword) {
        error(loc, DiagCode::ArgumentCount,
              "a positional argument cannot follow a keyword argument");
        ok = false;
        continue;
      }
      if (next >= n) {
        error(loc, DiagCode::ArgumentCount,
              out.callee + " takes at most " + std::to_string(n) + " argument" +
                  (n == 1 ? "" : "s") + ", got " +
                  std::to_string(args.size() + (receiver ? 1 : 0)));
        return false;
      }
      place(next++, arg.value.get(), loc, true);
      continue;
    }
    sawKeyword = true;
    auto it = std::find(params.begin(), params.end(), arg.name);
    if (it == params.end()) {
      std::string list;
      for (const auto &p : params)
        list += (list.empty() ? "" : ", ") + p;
      std::string close = closestName(arg.name, params);
      error(loc, DiagCode::UnknownKeyword,
            out.callee + " has no parameter named '" + arg.name + "'",
            close.empty() ? (params.empty() ? std::string("it takes no arguments")
                                            : "its parameters are: " + list)
                          : "did you mean '" + close + "'?");
      ok = false;
      continue;
    }
    place(static_cast<size_t>(it - params.begin()), arg.value.get(), loc, false);
  }
  if (!ok)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (required[i] && !out.exprs[i]) {
      error(out.loc, DiagCode::ArgumentCount,
            out.callee + " is missing argument '" + params[i] + "'");
      return false;
    }
  return true;
}

/// print("label", x, ...): variadic, so it does not go through the builtin table.
static Val evalPrint(Sema &s, Location loc, const ast::Expr *receiver,
                     const std::vector<ast::Arg> &args) {
  std::vector<const ast::Expr *> exprs;
  if (receiver)
    exprs.push_back(receiver);
  for (const ast::Arg &a : args) {
    if (!a.name.empty()) {
      s.error(a.loc, DiagCode::UnknownKeyword, "print takes no keyword arguments");
      return Val::poison();
    }
    exprs.push_back(a.value.get());
  }
  if (exprs.empty() || !ast::isa<ast::StringLit>(exprs[0])) {
    s.error(exprs.empty() ? loc : exprs[0]->loc, DiagCode::InvalidArgument,
            "print needs a label string first, as in print(\"x\", x)");
    return Val::poison();
  }
  if (s.combinerDepth) {
    s.error(loc, DiagCode::InvalidArgument,
            "a reduce/scan combine fn cannot print (it must only compute)");
    return Val::poison();
  }
  std::vector<ir::Value *> operands;
  bool ok = true;
  for (size_t i = 1; i < exprs.size(); ++i) {
    Val v = s.evalValue(*exprs[i]);
    if (!v.isValue()) {
      ok = false;
      continue;
    }
    operands.push_back(s.materialize(v));
  }
  if (!ok)
    return Val::poison();
  s.emit(ir::OpKind::Print, loc, std::move(operands), {},
         {{"label", ir::Attr(ast::cast<ast::StringLit>(exprs[0])->value)}});
  return Val::makeVoid();
}

Val Sema::evalCall(const std::string &callee, Location calleeLoc, Location loc,
                   const ast::Expr *receiver, const std::vector<ast::Arg> &args) {
  CallArgs ca;
  ca.callee = callee;
  ca.loc = loc;
  ca.calleeLoc = calleeLoc;

  // `tl.exp(x)`, `np.maximum(a, b)`: a module prefix from elsewhere, not a receiver.
  if (const auto *module = receiver ? ast::dyn_cast<ast::NameExpr>(receiver) : nullptr;
      module && isForeignModuleName(module->name) && !lookupLocal(module->name) &&
      !globals.count(module->name)) {
    std::string written = module->name + "." + callee;
    std::string hint;
    if (findBuiltin(callee) || findFn(callee) || callee == "print")
      hint = "Kiln's builtins have no module prefix: write " + callee + "(...)";
    else
      hint = unknownFunctionHint(callee, std::string());
    error(receiver->loc, DiagCode::UnknownFunction, "unknown function '" + written + "'", hint);
    return Val::poison();
  }

  if (const ast::FunctionItem *fn = calleeFn(callee)) {
    std::vector<std::string> names;
    std::vector<bool> required;
    for (const auto &p : fn->params) {
      names.push_back(p.name);
      required.push_back(p.defaultValue == nullptr);
    }
    if (!bindArgs(ca, names, required, receiver, args))
      return Val::poison();
    std::vector<Val> vals;
    bool ok = true;
    for (size_t i = 0; i < names.size(); ++i) {
      Val v = ca.has(i) ? evalArgument(*ca.exprs[i])
                        : evalConstExpr(*fn->params[i].defaultValue,
                                        "the default of parameter '" + names[i] + "'");
      ok &= !v.isPoison();
      vals.push_back(std::move(v));
    }
    if (!ok)
      return Val::poison();
    return callFn(*fn, std::move(vals), loc);
  }

  auto git = globals.find(callee);
  if (git != globals.end()) {
    ast::ItemKind k = git->second.kind;
    if (k == ast::ItemKind::Kernel || k == ast::ItemKind::Graph) {
      error(calleeLoc, DiagCode::CallKernel,
            std::string("'") + callee + "' is a " +
                (k == ast::ItemKind::Kernel ? "kernel" : "graph") + " and cannot be called",
            "kernels are launched from the host (or with `launch` in a graph); move shared "
            "code into a fn");
      return Val::poison();
    }
  }
  if (callee == "print")
    return evalPrint(*this, loc, receiver, args);
  if (const BuiltinInfo *b = findBuiltin(callee)) {
    std::vector<std::string> names(b->params.begin(), b->params.end());
    std::vector<bool> required(names.size(), false);
    for (unsigned i = 0; i < b->numRequired && i < names.size(); ++i)
      required[i] = true;
    if (!bindArgs(ca, names, required, receiver, args))
      return Val::poison();
    return b->handler(*this, ca);
  }

  if (lookupLocal(callee) || git != globals.end()) {
    error(calleeLoc, DiagCode::UnknownFunction, "'" + callee + "' is not a function");
    return Val::poison();
  }
  std::vector<std::string> candidates;
  for (const auto &[name, g] : globals)
    if (g.kind == ast::ItemKind::Fn)
      candidates.push_back(name);
  for (const auto &b : allBuiltins())
    candidates.push_back(b.name);
  candidates.push_back("print");
  std::string hint = unknownFunctionHint(callee, closestName(callee, candidates));
  if (receiver && (callee == "shape" || callee == "size" || callee == "numel" || callee == "dim"))
    hint = shapeMethodHint();
  error(calleeLoc, DiagCode::UnknownFunction,
        std::string(receiver ? "unknown method '" : "unknown function '") + callee + "'", hint);
  return Val::poison();
}

Val Sema::callFn(const ast::FunctionItem &fn, std::vector<Val> args, Location loc) {
  if (brokenFns.count(&fn))
    return Val::poison(); // its misplaced return was reported once, at the fn
  if (std::find(callStack.begin(), callStack.end(), &fn) != callStack.end()) {
    std::string chain;
    auto first = std::find(callStack.begin(), callStack.end(), &fn);
    for (auto it = first; it != callStack.end(); ++it)
      chain += (*it)->name + " -> ";
    chain += fn.name;
    error(loc, DiagCode::RecursiveCall, "recursive call of fn '" + fn.name + "' (" + chain + ")",
          "fns are inlined at each call, so they cannot recurse; write a loop instead");
    return Val::poison();
  }
  if (callStack.size() >= kMaxCallDepth) {
    error(loc, DiagCode::InputTooLarge,
          "fn calls nest more than " + std::to_string(kMaxCallDepth) + " deep");
    return Val::poison();
  }
  // Undone on every exit, including the unwinding of BudgetExceeded.
  struct CallGuard {
    Sema &s;
    CallGuard(Sema &sema, const ast::FunctionItem &fn) : s(sema) {
      s.callStack.push_back(&fn);
      auto f = std::make_unique<Frame>();
      f->fn = &fn;
      f->scopes.push_back(std::make_unique<Scope>());
      s.frames.push_back(std::move(f));
    }
    ~CallGuard() {
      s.frames.pop_back();
      s.callStack.pop_back();
    }
  } guard(*this, fn);
  bool ok = true;
  // const parameters are bound first, so that a type may use a const declared after it,
  // as in fn f(r: tile<i32, [B]>, const B: i32).
  std::vector<size_t> order;
  for (bool constPass : {true, false})
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].isConst == constPass)
        order.push_back(i);
  for (size_t i : order) {
    const ast::Param &p = fn.params[i];
    Val v = args[i];
    const bool maskParam = p.type && p.type->kind == ast::TypeExprKind::BlockMask;
    if (maskParam || v.kind == Val::Kind::Mask) {
      if (!v.isPoison() && !checkMaskArgument(v, p, fn, loc))
        v = Val::poison();
    } else if (v.kind == Val::Kind::Fn && (p.type || p.isConst)) {
      error(loc, DiagCode::TypeMismatch,
            "parameter '" + p.name + "' of fn " + fn.name + " is " + (p.isConst ? "const" : "typed") +
                ", so it cannot take the fn '" + v.fn->name + "'",
            "leave the parameter untyped to pass a fn: fn " + fn.name + "(" + p.name + ", ...)");
      v = Val::poison();
    } else if (p.type) {
      std::optional<Type> t = resolveType(*p.type);
      std::optional<Val> c;
      if (t)
        c = coerce(v, *t, loc, DiagCode::TypeMismatch,
                   "parameter '" + p.name + "' of fn " + fn.name);
      v = c ? *c : Val::poison();
    }
    if (p.isConst && v.isValue() && !v.isConst()) {
      error(loc, DiagCode::NotConstant,
            "the argument for const parameter '" + p.name + "' of fn " + fn.name +
                " must be a compile-time constant");
      v = Val::poison();
    }
    ok &= !v.isPoison();
    declareParam(BindingKind::Param, p.name, p.loc, std::move(v));
  }
  Val result = Val::makeVoid();
  if (ok) {
    checkBlock(*fn.body, /*fnBody=*/true);
    if (frame().returned)
      result = *frame().returned;
  } else {
    result = Val::poison();
  }
  if (result.isConst())
    result.loc = loc;
  return result;
}

//===--------------------------------------------------------------------===//
// Reading arguments
//===--------------------------------------------------------------------===//

Val Sema::argValue(CallArgs &a, size_t i) {
  if (!a.has(i))
    return Val::poison();
  if (!a.vals[i])
    a.vals[i] = evalValue(*a.exprs[i]);
  return *a.vals[i];
}

/// Evaluates argument `i` and insists on a constant of kind `kind` ("an integer").
static std::optional<ConstVal> constArg(Sema &s, CallArgs &a, size_t i, const char *what,
                                        ConstVal::Kind kind, const char *kindName) {
  Val v = s.argValue(a, i);
  if (!v.isValue())
    return std::nullopt;
  if (!v.isConst()) {
    s.error(a.locs[i], DiagCode::NotConstant,
            std::string(what) + " of " + a.callee + " must be a compile-time constant",
            "use a literal, a const, or a static_range variable");
    return std::nullopt;
  }
  if (v.cst->kind != kind) {
    s.error(a.locs[i], DiagCode::TypeMismatch,
            std::string(what) + " of " + a.callee + " must be " + kindName + ", got " +
                s.describe(v));
    return std::nullopt;
  }
  return v.cst;
}

std::optional<int64_t> Sema::argConstInt(CallArgs &a, size_t i, const char *what) {
  auto c = constArg(*this, a, i, what, ConstVal::Kind::Int, "an integer");
  if (!c)
    return std::nullopt;
  return c->i;
}

std::optional<bool> Sema::argConstBool(CallArgs &a, size_t i, const char *what) {
  auto c = constArg(*this, a, i, what, ConstVal::Kind::Bool, "true or false");
  if (!c)
    return std::nullopt;
  return c->i != 0;
}

std::optional<DType> Sema::argDType(CallArgs &a, size_t i, DType fallback) {
  if (!a.has(i))
    return fallback;
  return evalDType(*a.exprs[i]);
}

/// The constant integers of a list argument `[a, b, ...]` (or one integer).
static std::optional<std::vector<int64_t>> constIntList(Sema &s, CallArgs &a, size_t i,
                                                        const char *what) {
  const ast::Expr *e = a.exprs[i];
  std::vector<const ast::Expr *> elems;
  if (const auto *list = ast::dyn_cast<ast::ListExpr>(e)) {
    for (const auto &x : list->elements)
      elems.push_back(x.get());
  } else if (ast::isa<ast::TupleExpr>(e)) {
    // zeros((BM, BN)) is how NumPy and Triton write it.
    s.error(e->loc, DiagCode::TypeMismatch,
            std::string(what) + " of " + a.callee + " is a list in brackets, not a tuple",
            "write the dimensions in brackets, e.g. zeros([BM, BN], f32)");
    return std::nullopt;
  } else {
    elems.push_back(e);
  }
  std::vector<int64_t> out;
  for (const ast::Expr *x : elems) {
    Val v = s.evalValue(*x);
    if (!v.isValue())
      return std::nullopt;
    if (!v.isConst()) {
      s.error(x->loc, DiagCode::NotConstant,
              std::string("every element of ") + what + " of " + a.callee +
                  " must be a compile-time constant",
              "tile shapes may only use literals, consts and static_range variables");
      return std::nullopt;
    }
    if (!v.cst->isInt()) {
      s.error(x->loc, DiagCode::TypeMismatch,
              std::string("the elements of ") + what + " of " + a.callee +
                  " must be integers, got " + s.describe(v));
      return std::nullopt;
    }
    out.push_back(v.cst->i);
  }
  return out;
}

std::optional<std::vector<int64_t>> Sema::argIntList(CallArgs &a, size_t i, const char *what) {
  return constIntList(*this, a, i, what);
}

std::optional<Shape> Sema::argShape(CallArgs &a, size_t i, bool allowRank0) {
  auto dims = constIntList(*this, a, i, "the shape");
  if (!dims)
    return std::nullopt;
  if (dims->empty() && !allowRank0) {
    error(a.locs[i], DiagCode::InvalidShape, a.callee + " needs a shape of at least one dimension");
    return std::nullopt;
  }
  for (int64_t d : *dims)
    if (d <= 0) {
      error(a.locs[i], DiagCode::InvalidShape,
            "tile dimensions must be positive, got " + shapeString(*dims));
      return std::nullopt;
    }
  if (!checkTileSize(*dims, a.locs[i]))
    return std::nullopt;
  return *dims;
}

std::optional<int64_t> Sema::argAxis(CallArgs &a, size_t i, unsigned rank) {
  if (!a.has(i)) {
    if (rank == 1)
      return 0;
    error(a.loc, DiagCode::ArgumentCount,
          a.callee + " needs an axis for a tile of rank " + std::to_string(rank),
          "axis may only be omitted on a 1-D tile; pass axis = 0 .. " +
              std::to_string(int(rank) - 1));
    return std::nullopt;
  }
  auto axis = argConstInt(a, i, "the axis");
  if (!axis)
    return std::nullopt;
  int64_t r = rank;
  if (*axis < -r || *axis >= r) {
    error(a.locs[i], DiagCode::InvalidArgument,
          "axis " + std::to_string(*axis) + " is out of range for a tile of rank " +
              std::to_string(rank),
          rank ? "valid axes are " + std::to_string(-r) + " .. " + std::to_string(r - 1)
               : std::string());
    return std::nullopt;
  }
  return *axis < 0 ? *axis + r : *axis;
}

const ast::FunctionItem *Sema::argFn(CallArgs &a, size_t i) {
  const auto *n = ast::dyn_cast<ast::NameExpr>(a.exprs[i]);
  const ast::FunctionItem *fn = n ? calleeFn(n->name) : nullptr;
  if (!fn) {
    error(a.locs[i], DiagCode::InvalidArgument,
          "the combine argument of " + a.callee + " must name a fn of two parameters",
          "define one, e.g. fn add(a, b) { return a + b; }, and pass its name");
    return nullptr;
  }
  return fn;
}

std::optional<std::string> Sema::argString(CallArgs &a, size_t i) {
  const auto *s = ast::dyn_cast<ast::StringLit>(a.exprs[i]);
  if (!s) {
    error(a.locs[i], DiagCode::TypeMismatch,
          "argument '" + std::to_string(i + 1) + "' of " + a.callee + " must be a string literal");
    return std::nullopt;
  }
  return s->value;
}

} // namespace kiln::sema
