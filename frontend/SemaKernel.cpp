//===- SemaKernel.cpp - Kernel signatures, attributes and specialization --===//
//
// A kernel's `const` parameters are fixed first — by `-D NAME=VALUE`, else by their
// default — and become weakly typed constants of the body (usable in shapes). Its other
// parameters become the arguments of the kernel's body block. The body is then
// checked and lowered, ended with `return`, and verified: a verifier failure on IR
// built from a program that passed every check is a compiler bug.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include "ir/Verifier.h"

#include <sstream>

namespace kiln::sema {

//===--------------------------------------------------------------------===//
// Types as written
//===--------------------------------------------------------------------===//

static std::vector<std::string> dtypeNames() {
  std::vector<std::string> names;
  for (const char *n : {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f8e4m3",
                        "f8e5m2", "f16", "bf16", "f32", "f64"})
    names.emplace_back(n);
  return names;
}

std::optional<Type> Sema::resolveType(const ast::TypeExpr &t) {
  switch (t.kind) {
  case ast::TypeExprKind::Scalar: {
    if (auto d = parseDType(t.name))
      return Type::scalar(*d);
    std::string close = closestName(t.name, dtypeNames());
    error(t.loc, DiagCode::UnknownType, "unknown type '" + t.name + "'",
          close.empty() ? "the dtypes are bool, i8..i64, u8..u64, f8e4m3, f8e5m2, f16, bf16, "
                          "f32, f64"
                        : "did you mean '" + close + "'?");
    return std::nullopt;
  }
  case ast::TypeExprKind::Pointer: {
    if (!t.element || t.element->kind != ast::TypeExprKind::Scalar) {
      error(t.loc, DiagCode::UnknownType, "a pointer must point to a scalar dtype, as in *f32");
      return std::nullopt;
    }
    auto e = resolveType(*t.element);
    if (!e)
      return std::nullopt;
    return Type::ptr(e->dtype);
  }
  case ast::TypeExprKind::Tile: {
    if (!t.element)
      return std::nullopt;
    auto e = resolveType(*t.element);
    if (!e)
      return std::nullopt;
    if (!e->isScalar()) {
      error(t.loc, DiagCode::UnknownType, "the element type of a tile must be a scalar dtype");
      return std::nullopt;
    }
    Shape shape;
    for (const auto &d : t.dims) {
      Val v = evalConstExpr(*d, "a tile dimension", /*moduleScope=*/false);
      if (!v.isValue())
        return std::nullopt;
      if (!v.cst->isInt()) {
        error(d->loc, DiagCode::TypeMismatch,
              "a tile dimension must be an integer, got " + describe(v));
        return std::nullopt;
      }
      shape.push_back(v.cst->i);
    }
    // `tile<f32, []>` has rank 0: it is the scalar type f32.
    if (!checkTileSize(shape, t.loc))
      return std::nullopt;
    return e->withShape(shape);
  }
  case ast::TypeExprKind::BlockMask:
    // Kernel parameters of this type are declared by declareMaskParam; anywhere else a
    // mask is not a type a value can have.
    error(t.loc, DiagCode::BlockMaskUse, "block_mask is the type of a kernel parameter only",
          "a fn takes a block mask through an untyped parameter: fn f(mask, rb: i32)");
    return std::nullopt;
  }
  return std::nullopt;
}

//===--------------------------------------------------------------------===//
// Declarations and attributes
//===--------------------------------------------------------------------===//

void Sema::checkKernelDecl(const ast::FunctionItem &k) {
  for (const auto &p : k.params) {
    if (p.isConst) {
      if (p.type) {
        auto t = p.type->kind == ast::TypeExprKind::BlockMask ? std::nullopt : resolveType(*p.type);
        if (t && (t->pointer || !t->isScalar()))
          error(p.type->loc, DiagCode::KernelParamType,
                "const parameter '" + p.name + "' must have a scalar type, not " + t->str());
      }
      continue;
    }
    if (!p.type) {
      error(p.loc, DiagCode::KernelParamType, "kernel parameter '" + p.name + "' needs a type",
            "write it as " + p.name + ": *f32 (a pointer) or " + p.name + ": i32 (a scalar)");
      continue;
    }
    if (p.defaultValue)
      error(p.defaultValue->loc, DiagCode::KernelParamType,
            "only const parameters take a default value",
            "make it const: const " + p.name + ": ... = ...");
    if (p.type->kind == ast::TypeExprKind::BlockMask)
      continue; // its block sizes may name const parameters: checked when specialized
    if (p.type->kind == ast::TypeExprKind::Tile) {
      error(p.type->loc, DiagCode::KernelParamType,
            "kernel parameter '" + p.name +
                "' cannot be a tile; kernels take scalars and "
                "pointers",
            "pass a pointer and load the tile: " + p.name + ": *f32");
      continue;
    }
    resolveType(*p.type);
  }
  kernelAttrs[&k] = checkAttributes(k);
}

static bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Checks @autotune and returns its configs and key; nullopt when it is malformed.
static std::optional<KernelAutotune> checkAutotune(Sema &s, const ast::FunctionItem &k,
                                                   const ast::Attribute &attr) {
  unsigned errorsBefore = s.diags.errorCount();
  KernelAutotune spec;
  spec.loc = attr.loc;
  const ast::Expr *configs = nullptr, *key = nullptr;
  for (const auto &arg : attr.args) {
    if (arg.name == "configs" && !configs)
      configs = arg.value.get();
    else if (arg.name == "key" && !key)
      key = arg.value.get();
    else
      s.error(arg.loc, DiagCode::UnknownAttribute,
              arg.name.empty()
                  ? "@autotune takes keyword arguments: configs = [...], key = [...]"
                  : "@autotune has no argument '" + arg.name + "' (or it is given twice)");
  }
  auto isConstParam = [&](const std::string &n) {
    for (const auto &p : k.params)
      if (p.isConst && p.name == n)
        return true;
    return false;
  };
  const auto *list = ast::dyn_cast<ast::ListExpr>(configs);
  if (!list || list->elements.empty()) {
    s.error(configs ? configs->loc : attr.loc, DiagCode::UnknownAttribute,
            "@autotune needs configs = [{...}, ...] with at least one config",
            "each config is a dict such as {BLOCK: 128, num_warps: 4}");
  } else {
    for (const auto &e : list->elements) {
      const auto *dict = ast::dyn_cast<ast::DictExpr>(e.get());
      if (!dict) {
        s.error(e->loc, DiagCode::UnknownAttribute,
                "each @autotune config must be a dict such as {BLOCK: 128, num_warps: 4}");
        continue;
      }
      std::set<std::string> seen;
      AutotuneConfig &config = spec.configs.emplace_back();
      for (const auto &entry : dict->entries) {
        if (!seen.insert(entry.key).second) {
          s.error(entry.loc, DiagCode::UnknownAttribute,
                  "'" + entry.key + "' appears twice in this config");
          continue;
        }
        bool launch = entry.key == "num_warps" || entry.key == "num_stages";
        if (!launch && !isConstParam(entry.key)) {
          s.error(entry.loc, DiagCode::UnknownAttribute,
                  "'" + entry.key + "' is not a const parameter of kernel " + k.name +
                      " (nor num_warps or num_stages)");
          continue;
        }
        Val v = s.evalConstExpr(*entry.value, "the value of '" + entry.key + "'");
        if (v.isConst() && launch &&
            (!v.cst->isInt() ||
             (entry.key == "num_warps" ? !isPowerOfTwo(v.cst->i) || v.cst->i > 32 : v.cst->i < 1)))
          s.error(entry.value->loc, DiagCode::UnknownAttribute,
                  entry.key == "num_warps" ? "num_warps must be a power of two in 1..32"
                                           : "num_stages must be a positive integer");
        else if (v.isConst() && launch)
          (entry.key == "num_warps" ? config.numWarps : config.numStages) = v.cst->i;
        else if (v.isConst())
          config.defines.emplace_back(entry.key, defineText(*v.cst, v.type.dtype));
      }
    }
  }
  const auto *keys = ast::dyn_cast<ast::ListExpr>(key);
  if (key && !keys)
    s.error(key->loc, DiagCode::UnknownAttribute,
            "@autotune key must be a list of parameter names, as in key = [n]");
  if (!keys)
    return s.diags.errorCount() == errorsBefore ? std::optional(std::move(spec)) : std::nullopt;
  for (const auto &e : keys->elements) {
    std::string name;
    if (const auto *n = ast::dyn_cast<ast::NameExpr>(e.get()))
      name = n->name;
    else if (const auto *str = ast::dyn_cast<ast::StringLit>(e.get()))
      name = str->value;
    bool found = false;
    for (const auto &p : k.params)
      found |= p.name == name;
    if (!found)
      s.error(e->loc, DiagCode::UnknownAttribute,
              name.empty()
                  ? "@autotune key entries must be parameter names"
                  : "'" + name + "' in the @autotune key is not a parameter of kernel " + k.name);
    else
      spec.key.push_back(name);
  }
  return s.diags.errorCount() == errorsBefore ? std::optional(std::move(spec)) : std::nullopt;
}

KernelAttrs Sema::checkAttributes(const ast::FunctionItem &k) {
  KernelAttrs out;
  std::set<std::string> seen;
  for (const auto &attr : k.attributes) {
    if (!seen.insert(attr.name).second) {
      error(attr.loc, DiagCode::UnknownAttribute, "@" + attr.name + " is given twice");
      continue;
    }
    if (attr.name == "num_warps" || attr.name == "num_stages") {
      bool warps = attr.name == "num_warps";
      std::string usage = "@" + attr.name + "(" + (warps ? "4" : "2") + ")";
      if (attr.args.size() != 1 || !attr.args[0].name.empty()) {
        error(attr.loc, DiagCode::UnknownAttribute,
              "@" + attr.name + " takes one integer, as in " + usage);
        continue;
      }
      Val v = evalConstExpr(*attr.args[0].value, "the argument of @" + attr.name);
      if (!v.isConst())
        continue;
      bool ok =
          v.cst->isInt() && (warps ? isPowerOfTwo(v.cst->i) && v.cst->i <= 32 : v.cst->i >= 1);
      if (!ok) {
        error(attr.args[0].value->loc, DiagCode::UnknownAttribute,
              warps ? "@num_warps must be a power of two in 1..32, got " + describe(v)
                    : "@num_stages must be a positive integer, got " + describe(v));
        continue;
      }
      (warps ? out.numWarps : out.numStages) = v.cst->i;
      continue;
    }
    if (attr.name == "autotune") {
      out.autotune = checkAutotune(*this, k, attr);
      continue;
    }
    std::string close = closestName(attr.name, {"num_warps", "num_stages", "autotune"});
    error(attr.loc, DiagCode::UnknownAttribute, "unknown attribute @" + attr.name,
          close.empty() ? "kernels take @num_warps(N), @num_stages(N) and "
                          "@autotune(configs = [...], key = [...])"
                        : "did you mean @" + close + "?");
  }
  return out;
}

//===--------------------------------------------------------------------===//
// Specialization
//===--------------------------------------------------------------------===//

/// Converts const value `c` (of kind-derived dtype `from`) to declared dtype `to`, or
/// explains why it does not fit.
static std::optional<ConstVal> fitConst(const ConstVal &c, DType from, DType to, std::string &why) {
  if (c.isBool() != isBool(to) || (c.isFloat() && !isFloat(to))) {
    why = "a " +
          std::string(c.isBool()    ? "bool"
                      : c.isFloat() ? "float"
                                    : "integer") +
          " value does not fit type " + dtStr(to);
    return std::nullopt;
  }
  if (c.isInt() && !isFloat(to) && !intFitsDType(c.i, from == DType::U64, to)) {
    why = "value " + constString(c, from) + " is out of range for " + dtStr(to);
    return std::nullopt;
  }
  return castConst(c, from, to);
}

static DType kindDType(const ConstVal &c) {
  return c.isBool() ? DType::Bool : c.isFloat() ? DType::F32 : DType::I32;
}

/// The value of const parameter `p` (from -D or its default), bound in the kernel frame.
static Val constParamValue(Sema &s, const ast::Param &p) {
  std::optional<DType> declared;
  if (p.type) {
    auto t = s.resolveType(*p.type);
    if (!t || t->pointer || !t->isScalar())
      return Val::poison(); // reported by checkKernelDecl
    declared = t->dtype;
  }
  const std::string *define = nullptr;
  for (const auto &[name, value] : s.constOverrides ? *s.constOverrides : s.options.defines)
    if (name == p.name)
      define = &value; // the last -D of a name wins
  std::optional<ConstVal> c;
  DType from = DType::I32;
  if (define) {
    std::string why;
    std::optional<DefineValue> parsed = parseDefineValue(*define, why);
    if (!parsed)
      return Val::poison(); // reported by compileKernels
    c = parsed->value;
    from = parsed->dtype == DType::U64 ? DType::U64 : c->isInt() ? DType::I64 : kindDType(*c);
    if (declared) {
      std::string why;
      auto fitted = fitConst(*c, from, *declared, why);
      if (!fitted) {
        s.error(p.loc, DiagCode::BadConstOverride,
                (s.constOverrides ? p.name + " = " + *define : "-D " + p.name + "=" + *define) +
                    " does not fit const " + p.name + ": " +
                    dtStr(*declared) + " (" + why + ")");
        return Val::poison();
      }
      return Val::ofConst(Type::scalar(*declared), *fitted, true, p.loc);
    }
    if (c->isInt() && (from == DType::U64 || !intFitsDType(c->i, false, DType::I32)))
      return Val::ofConst(Type::scalar(from), *c, true, p.loc);
    return Val::ofConst(Type::scalar(kindDType(*c)), *c, true, p.loc);
  }
  if (!p.defaultValue) {
    s.error(p.loc, DiagCode::NotConstant,
            "const " + p.name + " has no value; pass -D " + p.name + "=...",
            "or give it a default: const " + p.name + ": i32 = 128");
    return Val::poison();
  }
  Val v = s.evalConstExpr(*p.defaultValue, "the default of const " + p.name, /*moduleScope=*/false);
  if (!v.isConst() || !declared)
    return v;
  std::string why;
  auto fitted = fitConst(*v.cst, v.type.dtype, *declared, why);
  if (!fitted) {
    s.error(p.defaultValue->loc,
            v.cst->isInt() && !isFloat(*declared) && !isBool(*declared) ? DiagCode::BadLiteral
                                                                        : DiagCode::TypeMismatch,
            "the default of const " + p.name + ": " + dtStr(*declared) + " does not fit (" + why +
                ")");
    return Val::poison();
  }
  return Val::ofConst(Type::scalar(*declared), *fitted, true, p.loc);
}

std::unique_ptr<ir::Kernel> Sema::specialize(const ast::FunctionItem &k) {
  unsigned errorsBefore = diags.errorCount();
  opsEmitted = 0;
  auto kernel = std::make_unique<ir::Kernel>();
  kernel->name = k.name;
  kernel->loc = k.nameLoc.valid() ? k.nameLoc : k.loc;
  KernelAttrs attrs = kernelAttrs.count(&k) ? kernelAttrs[&k] : KernelAttrs{};
  kernel->numWarps = options.numWarps.value_or(attrs.numWarps);
  kernel->numStages = options.numStages.value_or(attrs.numStages);

  frames.clear();
  callStack.clear();
  masks.clear();
  blocksLoops.clear();
  combinerDepth = 0;
  depth = 0;
  depthReported = false;
  frames.push_back(std::make_unique<Frame>());
  pushScope();
  builder.setInsertionPointToEnd(kernel->body.get());
  current = kernel.get();
  try {
    // Const parameters first: a block_mask<BM, BN> may name one declared after it.
    for (const auto &p : k.params) {
      if (p.isConst) {
        Val v = constParamValue(*this, p);
        if (v.isConst())
          kernel->constValues.emplace_back(p.name, constAttr(*v.cst));
        declareParam(BindingKind::Const, p.name, p.loc, v);
      }
    }
    for (const auto &p : k.params) {
      if (p.isConst)
        continue;
      if (p.type && p.type->kind == ast::TypeExprKind::BlockMask) {
        declareMaskParam(p);
        continue;
      }
      std::optional<Type> t;
      if (p.type && p.type->kind != ast::TypeExprKind::Tile)
        t = resolveType(*p.type);
      if (!t || !t->isScalar()) {
        declareParam(BindingKind::Param, p.name, p.loc, Val::poison());
        continue;
      }
      ir::Value *arg = kernel->body->addArgument(*t, p.name);
      declareParam(BindingKind::Param, p.name, p.loc, Val::ofIR(arg, p.loc));
    }
    resolveMaskExtents(k);
    checkBlock(*k.body);
    emit(ir::OpKind::Return, k.body->closeLoc.valid() ? k.body->closeLoc : k.loc, {}, {});
  } catch (const BudgetExceeded &) {
    error(kernel->loc, DiagCode::InputTooLarge,
          "kernel " + k.name + " grows beyond " + std::to_string(kMaxOps) +
              " operations after unrolling loops and inlining fns",
          "use range(...) instead of static_range for long loops");
  }
  frames.clear();
  callStack.clear();
  combinerDepth = 0;
  builder = ir::Builder();
  current = nullptr;
  if (diags.errorCount() != errorsBefore)
    return nullptr;
  if (k.kind == ast::ItemKind::Graph)
    return kernel; // verified with the kernels it launches (compileGraph)

  // Verify on the side: the verifier's messages are for compiler developers.
  ir::Module tmp;
  tmp.sources = module.sources;
  tmp.kernels.push_back(std::move(kernel));
  verifyLowered(tmp, "kernel '" + k.name + "'");
  return std::move(tmp.kernels.front());
}

void Sema::verifyLowered(const ir::Module &m, const std::string &what) {
  std::ostringstream sink;
  DiagnosticEngine verifyDiags(*m.sources, sink);
  std::string messages;
  verifyDiags.setHandler([&](const Diagnostic &d) {
    messages += formatLocation(*m.sources, d.loc) + ": " + d.message + "\n";
  });
  if (!ir::verifyModule(m, verifyDiags))
    KILN_ICE("the Tile IR built for " + what + " does not verify:\n" + messages);
}

void Sema::compileKernels() {
  std::vector<const ast::FunctionItem *> targets;
  const ast::FunctionItem *graph = nullptr; // --kernel names a graph
  // -D and --kernel come from the command line, not from any file.
  Location cmdLoc = Location::commandLine();
  if (options.kernel) {
    auto it = globals.find(*options.kernel);
    if (it != globals.end() && it->second.kind == ast::ItemKind::Kernel) {
      targets.push_back(ast::cast<ast::FunctionItem>(it->second.item));
    } else if (it != globals.end() && it->second.kind == ast::ItemKind::Graph) {
      graph = ast::cast<ast::FunctionItem>(it->second.item);
      targets.push_back(graph);
    } else {
      std::vector<std::string> kernels;
      for (const auto &[name, g] : globals)
        if (g.kind == ast::ItemKind::Kernel)
          kernels.push_back(name);
      std::string close = closestName(*options.kernel, kernels);
      std::string list;
      for (const auto &n : kernels)
        list += (list.empty() ? "" : ", ") + n;
      error(
          cmdLoc, DiagCode::UnknownKernel, "no kernel named '" + *options.kernel + "'",
          (close.empty() ? std::string() : "did you mean '" + close + "'? ") +
              (kernels.empty() ? std::string("this file defines no kernel") : "kernels: " + list));
      return;
    }
  } else {
    for (const auto &item : files.back()->items)
      if (item->kind == ast::ItemKind::Kernel)
        targets.push_back(ast::cast<ast::FunctionItem>(item.get()));
  }

  // Every -D must be a value and name a const parameter of a kernel being compiled.
  bool definesOk = true;
  for (const auto &[name, value] : options.defines) {
    if (std::string why; !parseDefineValue(value, why)) {
      error(cmdLoc, DiagCode::BadConstOverride, "-D " + name + "=" + value + ": " + why);
      definesOk = false;
    }
    bool found = false;
    std::vector<std::string> consts;
    for (const auto *k : targets)
      for (const auto &p : k->params)
        if (p.isConst) {
          found |= p.name == name;
          consts.push_back(p.name);
        }
    if (!found) {
      std::string close = closestName(name, consts);
      std::string where = options.kernel ? "kernel " + *options.kernel : std::string("any kernel");
      error(cmdLoc, DiagCode::UnknownConstOverride,
            "-D " + name + " names no const parameter of " + where,
            close.empty() ? std::string() : "did you mean -D " + close + "=...?");
      definesOk = false;
    }
  }
  // Launch-setting overrides obey the rules of @num_warps and @num_stages.
  if (options.numWarps && (!isPowerOfTwo(*options.numWarps) || *options.numWarps > 32)) {
    error(cmdLoc, DiagCode::UnknownAttribute,
          "num_warps must be a power of two in 1..32, got " + std::to_string(*options.numWarps));
    definesOk = false;
  }
  if (options.numStages && *options.numStages < 1) {
    error(cmdLoc, DiagCode::UnknownAttribute,
          "num_stages must be a positive integer, got " + std::to_string(*options.numStages));
    definesOk = false;
  }
  if (!definesOk)
    return;
  if (graph)
    return compileGraph(*graph);
  for (const auto *k : targets) {
    if (diags.reachedErrorLimit())
      return;
    if (auto kernel = specialize(*k))
      module.kernels.push_back(std::move(kernel));
  }
}

} // namespace kiln::sema
