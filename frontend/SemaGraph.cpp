//===- SemaGraph.cpp - `graph` entry points: launches of kernels -----------===//
//
// A graph (LANGUAGE.md, "Persistent graphs") is lowered like a kernel body — its
// parameters, `let`s, `if`s and static_range loops go through the same statement
// lowering — into a Tile IR graph (ir::Module::graphs) whose ops are scalar arithmetic,
// `if`s and `launch`es. Each `launch K[grid](args, C = v)` is checked against K's
// signature here and names one instance of K: K specialized with the const values the
// launch gives (its defaults otherwise), compiled into the module's kernels once per
// distinct set of values. A graph's `block_mask` parameter is five runtime parameters,
// as a kernel's, passed whole to a kernel's block_mask parameter. Everything else a
// kernel body may do (tiles, memory, program_id, dynamic loops) is refused in a graph,
// located at the construct.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

#include <functional>

namespace kiln::sema {

using ast::ItemKind;
using ir::OpKind;

namespace {

/// What a graph's body may compute: scalars and pointers, by arithmetic and `if`.
bool allowedInGraph(const ir::Op &op, std::string &why) {
  for (const auto &r : op.results())
    if (!r->type.isScalar()) {
      why = "a graph computes scalars and pointers only; tiles belong in a kernel";
      return false;
    }
  const OpKind k = op.kind();
  if (ir::isElementwise(k) || k == OpKind::Constant || k == OpKind::Cmp || k == OpKind::Select ||
      k == OpKind::Cast || k == OpKind::PtrAdd || k == OpKind::If || k == OpKind::Yield || k == OpKind::Return ||
      k == OpKind::Launch)
    return true;
  if (k == OpKind::For || k == OpKind::While)
    why = "a graph's loops are static_range loops, unrolled when it is compiled";
  else
    why = std::string("'") + op.mnemonic() +
          "' is not allowed in a graph: its body holds launches, scalar arithmetic, `if` and static_range loops";
  return false;
}

/// "matvec" for a launch at the kernel's defaults, "matvec[ROWS=16]" otherwise.
std::string instanceName(const std::string &kernel, const std::vector<std::pair<std::string, std::string>> &consts) {
  if (consts.empty())
    return kernel;
  std::string name = kernel + "[";
  for (size_t i = 0; i < consts.size(); ++i)
    name += (i ? ", " : "") + consts[i].first + "=" + consts[i].second;
  return name + "]";
}

} // namespace

void Sema::checkLaunch(const ast::LaunchStmt &st) {
  // The kernel, among the program's items.
  auto it = globals.find(st.kernel);
  if (it == globals.end() || it->second.kind != ItemKind::Kernel) {
    std::vector<std::string> kernels;
    for (const auto &[name, g] : globals)
      if (g.kind == ItemKind::Kernel)
        kernels.push_back(name);
    std::string close = closestName(st.kernel, kernels);
    error(st.kernelLoc, DiagCode::UnknownFunction,
          it == globals.end() ? "no kernel named '" + st.kernel + "' to launch"
                              : "'" + st.kernel + "' is not a kernel; a graph launches kernels",
          close.empty() ? std::string() : "did you mean '" + close + "'?");
    return;
  }
  const auto &k = *ast::cast<ast::FunctionItem>(it->second.item);

  // The grid: one to three i32 sizes; the missing ones are 1.
  std::vector<ir::Value *> operands;
  if (st.grid.empty() || st.grid.size() > 3) {
    error(st.loc, DiagCode::ArgumentCount,
          "a launch grid has 1 to 3 sizes, got " + std::to_string(st.grid.size()),
          "write launch " + st.kernel + "[(programs,)](...) or [(x, y)] or [(x, y, z)]");
    return;
  }
  for (const auto &g : st.grid) {
    Val v = evalValue(*g);
    if (v.isPoison())
      return;
    std::optional<Val> size = coerce(v, Type::scalar(DType::I32), g->loc, DiagCode::TypeMismatch, "a grid size");
    if (!size)
      return;
    operands.push_back(materialize(*size));
  }
  while (operands.size() < 3) {
    Val one = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(1), false, st.loc);
    operands.push_back(materialize(one));
  }

  // The arguments: the runtime parameters in order, then `NAME = value` for consts.
  std::vector<const ast::Param *> runtime;
  for (const auto &p : k.params)
    if (!p.isConst)
      runtime.push_back(&p);
  std::vector<PendingMaskArgument> maskArgs;
  std::vector<std::pair<std::string, std::string>> consts;
  size_t positional = 0;
  bool ok = true;
  for (const ast::Arg &a : st.args) {
    if (a.name.empty()) {
      if (positional >= runtime.size()) {
        ++positional;
        continue; // counted, reported below
      }
      const ast::Param &p = *runtime[positional++];
      if (p.type && p.type->kind == ast::TypeExprKind::BlockMask) {
        // A block mask of the graph, passed whole: its five parts. Whether its block
        // sizes are the parameter's is known once the instance is specialized (they
        // may name the kernel's consts).
        Val v = evalExpr(*a.value);
        if (v.isPoison()) {
          ok = false;
          continue;
        }
        if (v.kind != Val::Kind::Mask) {
          error(a.value->loc, DiagCode::BlockMaskUse,
                "argument '" + p.name + "' of kernel " + k.name + " takes a block mask, got " + describe(v),
                "declare one on the graph, mask: block_mask<64, 64>, and pass it by name");
          ok = false;
          continue;
        }
        const MaskParam &m = masks[v.mask];
        for (ir::Value *part : {m.rows, m.cols, m.rowStart, m.blocks, m.bitmaps})
          operands.push_back(part);
        maskArgs.push_back(PendingMaskArgument{p.name, m.name, m.blockRows, m.blockCols, a.value->loc});
        continue;
      }
      Val v = evalValue(*a.value);
      std::optional<Type> want = p.type ? resolveType(*p.type) : std::nullopt;
      if (v.isPoison() || !want) {
        ok = false;
        continue;
      }
      std::optional<Val> arg =
          coerce(v, *want, a.value->loc, DiagCode::TypeMismatch,
                 "argument '" + p.name + "' of kernel " + k.name);
      if (!arg) {
        ok = false;
        continue;
      }
      operands.push_back(materialize(*arg));
      continue;
    }
    const ast::Param *param = nullptr;
    for (const auto &p : k.params)
      if (p.name == a.name)
        param = &p;
    if (!param || !param->isConst) {
      std::vector<std::string> names;
      for (const auto &p : k.params)
        if (p.isConst)
          names.push_back(p.name);
      std::string close = closestName(a.name, names);
      error(a.loc, DiagCode::UnknownKeyword,
            param ? "'" + a.name + "' is a runtime parameter of kernel " + k.name + "; pass it in order"
                  : "kernel " + k.name + " has no const parameter '" + a.name + "'",
            close.empty() ? std::string() : "did you mean '" + close + "'?");
      ok = false;
      continue;
    }
    Val v = evalValue(*a.value);
    if (v.isPoison()) {
      ok = false;
      continue;
    }
    if (!v.isConst()) {
      error(a.value->loc, DiagCode::NotConstant,
            "const " + a.name + " of kernel " + k.name + " needs a compile-time value",
            "use a literal, a const, a const parameter of the graph or a static_range variable");
      ok = false;
      continue;
    }
    for (const auto &[name, value] : consts)
      if (name == a.name) {
        error(a.loc, DiagCode::DuplicateArgument, "const " + a.name + " is given twice");
        ok = false;
      }
    consts.emplace_back(a.name, defineText(*v.cst, v.type.dtype));
  }
  if (positional != runtime.size()) {
    std::string signature;
    for (const ast::Param *p : runtime)
      signature += (signature.empty() ? "" : ", ") + p->name;
    error(st.loc, DiagCode::ArgumentCount,
          "kernel " + k.name + " takes " + std::to_string(runtime.size()) + " argument" +
              (runtime.size() == 1 ? "" : "s") + " (" + signature + "), got " + std::to_string(positional));
    return;
  }
  if (!ok)
    return;

  // The instance: the const values in the kernel's parameter order.
  std::vector<std::pair<std::string, std::string>> ordered;
  for (const auto &p : k.params)
    for (const auto &c : consts)
      if (c.first == p.name)
        ordered.push_back(c);
  std::string name = instanceName(k.name, ordered);
  bool known = false;
  for (const LaunchInstance &inst : launchInstances)
    known |= inst.name == name;
  if (!known)
    launchInstances.push_back(LaunchInstance{&k, std::move(ordered), name, st.loc});
  for (PendingMaskArgument &m : maskArgs) {
    m.instance = name;
    pendingMaskArguments.push_back(std::move(m));
  }
  emit(OpKind::Launch, st.loc, operands, {}, {{"kernel", name}});
}

void Sema::compileGraph(const ast::FunctionItem &g) {
  launchInstances.clear();
  pendingMaskArguments.clear();
  loweringGraph = true;
  std::unique_ptr<ir::Kernel> graph = specialize(g);
  loweringGraph = false;
  if (!graph)
    return;
  bool ok = true;
  std::function<void(const ir::Block &)> check = [&](const ir::Block &b) {
    for (const auto &op : b.ops()) {
      std::string why;
      if (!allowedInGraph(*op, why)) {
        error(op->loc(), DiagCode::GraphBody, why);
        ok = false;
        continue;
      }
      for (const auto &r : op->regions())
        check(*r);
    }
  };
  check(*graph->body);
  if (!ok)
    return;

  // Each launched kernel once per set of const values, at those values; every one is
  // compiled, so that all their errors are reported.
  for (const LaunchInstance &inst : launchInstances) {
    constOverrides = &inst.consts;
    instanceNote = note(inst.launch, "in kernel " + inst.name + ", as graph " + g.name + " launches it here");
    std::unique_ptr<ir::Kernel> kernel = specialize(*inst.kernel);
    constOverrides = nullptr;
    instanceNote.reset();
    if (!kernel) {
      ok = false;
      continue;
    }
    kernel->name = inst.name;
    // The masks the graph passes it must have the block sizes its parameters declare.
    for (const PendingMaskArgument &m : pendingMaskArguments) {
      if (m.instance != inst.name)
        continue;
      for (const ir::BlockMaskParam &p : kernel->blockMasks)
        if (p.name == m.param && (p.blockRows != m.blockRows || p.blockCols != m.blockCols)) {
          error(m.loc, DiagCode::BlockMaskUse,
                "parameter '" + m.param + "' of kernel " + inst.name + " takes a block_mask<" +
                    std::to_string(p.blockRows) + ", " + std::to_string(p.blockCols) + ">, but '" + m.mask +
                    "' is a block_mask<" + std::to_string(m.blockRows) + ", " + std::to_string(m.blockCols) + ">",
                "declare the graph's mask with the kernel's block sizes");
          ok = false;
        }
    }
    module.kernels.push_back(std::move(kernel));
  }
  if (!ok)
    return;
  module.graphs.push_back(std::move(graph));
  verifyLowered(module, "graph '" + g.name + "'");
}

} // namespace kiln::sema
