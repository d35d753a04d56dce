//===- Verifier.cpp - Whole-module Tile IR invariants ---------------------===//
//
// verifyModule() runs the local rules of every op (VerifyOp.cpp) and adds what only
// the surrounding structure can tell:
//  * regions: block arguments and terminators agree with the op that owns them;
//  * terminators: only last in a block, and the right one for the block (`return`
//    ends the kernel body, `yield` and `condition` end regions);
//  * SSA dominance: with structured control flow a value is visible after its
//    definition in its own block and in every region nested below that point;
//  * kernels: parameters are scalars or pointers, launch settings are sane.
// Each violation is reported as E0701 at the offending op; checking continues so that
// one run reports every problem.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include <functional>
#include <string>
#include <unordered_set>

namespace kiln::ir {

namespace {

class ModuleVerifier {
public:
  explicit ModuleVerifier(DiagnosticEngine &diags) : diags_(diags) {}

  bool run(const Module &module) {
    for (const auto &k : module.kernels) {
      verifyKernel(*k);
      walkOps(*k->body, [&](const Op &op) {
        if (op.kind() == OpKind::Launch)
          opError(op, "may appear only in a graph, not in kernel @" + k->name);
      });
    }
    for (const auto &g : module.graphs)
      verifyGraph(module, *g);
    return ok_;
  }

private:
  void error(Location loc, const std::string &message) {
    ok_ = false;
    diags_.error(loc, DiagCode::TirVerify) << message;
  }
  void opError(const Op &op, const std::string &message) {
    error(op.loc(), std::string("'") + op.mnemonic() + "' op " + message);
  }

  void verifyKernel(const Kernel &k) {
    std::string where = "kernel @" + k.name;
    for (const auto &p : k.params())
      if (!p->type.isScalar())
        error(k.loc, where + ": parameter of type " + p->type.str() +
                         " must be a scalar or a pointer");
    if (k.numWarps < 1 || k.numWarps > 32 || (k.numWarps & (k.numWarps - 1)) != 0)
      error(k.loc, where + ": num_warps " + std::to_string(k.numWarps) +
                       " is not a power of two in 1..32");
    if (k.numStages < 1)
      error(k.loc, where + ": num_stages " + std::to_string(k.numStages) + " must be >= 1");
    verifyGridSplit(k, where);
    for (const auto &[index, multiple] : k.paramMultiples) {
      const Type *t = index < k.params().size() ? &k.params()[index]->type : nullptr;
      if (!t || t->pointer || !isInteger(t->dtype))
        error(k.loc, where + ": multiple_of names a parameter that is not an integer");
      if (multiple < 1 || multiple > (int64_t{1} << 30) || (multiple & (multiple - 1)) != 0)
        error(k.loc, where + ": multiple_of " + std::to_string(multiple) + " is not a power of two in 1..2^30");
    }
    verifyBlockMasks(k, where);
    const Op *term = k.body->terminator();
    if (!term || term->kind() != OpKind::Return)
      error(k.body->empty() ? k.loc : k.body->ops().back()->loc(),
            where + ": body must end in 'return'");
    verifyBlock(*k.body);
  }

  static void walkOps(const Block &block, const std::function<void(const Op &)> &fn) {
    for (const auto &op : block.ops()) {
      fn(*op);
      for (const auto &r : op->regions())
        walkOps(*r, fn);
    }
  }

  /// A graph: scalar parameters, a body that returns, and launches of the module's
  /// kernels whose arguments match their parameters one for one.
  void verifyGraph(const Module &module, const Kernel &g) {
    std::string where = "graph @" + g.name;
    if (module.findKernel(g.name))
      error(g.loc, where + ": a kernel of the module has the same name");
    for (const auto &p : g.params())
      if (!p->type.isScalar())
        error(g.loc, where + ": parameter of type " + p->type.str() + " must be a scalar or a pointer");
    verifyBlockMasks(g, where);
    const Op *term = g.body->terminator();
    if (!term || term->kind() != OpKind::Return)
      error(g.body->empty() ? g.loc : g.body->ops().back()->loc(), where + ": body must end in 'return'");
    verifyBlock(*g.body);
    walkOps(*g.body, [&](const Op &op) {
      if (op.kind() != OpKind::Launch || !op.hasAttr("kernel"))
        return;
      const std::string &name = op.stringAttr("kernel");
      const Kernel *k = module.findKernel(name);
      if (!k)
        return opError(op, "launches @" + name + ", which is not a kernel of the module");
      const size_t given = op.numOperands() - 3;
      if (given != k->numLaunchParams())
        return opError(op, "passes " + std::to_string(given) + " arguments to @" + name + ", which takes " +
                               std::to_string(k->numLaunchParams()));
      for (size_t i = 0; i < given; ++i)
        if (op.operand(unsigned(i + 3))->type != k->params()[i]->type)
          opError(op, "argument " + std::to_string(i + 1) + " of @" + name + " is " +
                          op.operand(unsigned(i + 3))->type.str() + ", its parameter " +
                          k->params()[i]->type.str());
      // A kernel's mask gets the five parameters of one mask of the graph, in order,
      // with the same block sizes: nothing at run time checks the parts passed alone.
      for (const BlockMaskParam &km : k->blockMasks) {
        const BlockMaskParam *passed = nullptr;
        for (const BlockMaskParam &gm : g.blockMasks) {
          bool all = gm.firstParam + 5 <= g.params().size() && km.firstParam + 5 <= given;
          for (unsigned i = 0; all && i < 5; ++i)
            all = op.operand(3 + km.firstParam + i) == g.params()[gm.firstParam + i].get();
          if (all)
            passed = &gm;
        }
        if (!passed)
          opError(op, "passes @" + name + "'s block mask '" + km.name +
                          "' something other than a block mask of the graph");
        else if (passed->blockRows != km.blockRows || passed->blockCols != km.blockCols)
          opError(op, "passes the graph's block mask '" + passed->name + "' to @" + name + "'s '" + km.name +
                          "', whose block sizes differ");
      }
    });
  }

  /// Each block mask names five parameters (i32, i32, *i32, *i32, *u32) of `k`, a kernel
  /// or a graph, with valid block sizes and declared extents.
  void verifyBlockMasks(const Kernel &k, const std::string &where) {
    for (const BlockMaskParam &m : k.blockMasks) {
      auto pow2 = [](int64_t v) { return v >= 1 && v <= 256 && (v & (v - 1)) == 0; };
      if (!pow2(m.blockRows) || !pow2(m.blockCols))
        error(k.loc, where + ": block mask '" + m.name + "' has block sizes that are not powers of two in 1..256");
      const auto &ps = k.params();
      const Type expected[] = {Type::scalar(DType::I32), Type::scalar(DType::I32), Type::ptr(DType::I32),
                               Type::ptr(DType::I32), Type::ptr(DType::U32)};
      bool fits = m.firstParam + 5 <= k.numLaunchParams();
      for (unsigned i = 0; fits && i < 5; ++i)
        fits = ps[m.firstParam + i]->type == expected[i];
      if (!fits)
        error(k.loc, where + ": block mask '" + m.name +
                         "' does not name five parameters (i32, i32, *i32, *i32, *u32) from parameter " +
                         std::to_string(m.firstParam));
      if (m.extents)
        for (const MaskExtent &e : *m.extents) {
          if (e.param < 0 && (e.value < 1 || e.value > (int64_t{1} << 30)))
            error(k.loc, where + ": block mask '" + m.name + "' declares an extent of " + std::to_string(e.value) +
                             ", outside 1..2^30");
          const Type *t = e.param >= 0 && unsigned(e.param) < k.numLaunchParams() ? &ps[unsigned(e.param)]->type
                                                                                   : nullptr;
          if (e.param >= 0 && (!t || t->pointer || !t->isScalar() || !isInteger(t->dtype)))
            error(k.loc, where + ": block mask '" + m.name + "' declares an extent by parameter " +
                             std::to_string(e.param) + ", which is not an integer parameter");
          if (e.param >= int(m.firstParam) && e.param < int(m.firstParam + 5))
            error(k.loc, where + ": block mask '" + m.name + "' declares an extent by one of its own parameters");
        }
    }
  }

  /// A split kernel takes its workspace, whole 32-bit words, as its last parameter; one
  /// split over a cluster takes none, and its segments fit one cluster.
  void verifyGridSplit(const Kernel &k, const std::string &where) {
    const GridSplit &s = k.gridSplit;
    if (s.segments < 1)
      error(k.loc, where + ": grid_split " + std::to_string(s.segments) + " must be >= 1");
    if (!s.active()) {
      if (s.workspaceBytes != 0)
        error(k.loc, where + ": workspace_bytes needs grid_split > 1");
      if (s.cluster)
        error(k.loc, where + ": cluster_size needs grid_split > 1");
      return;
    }
    if (s.cluster) {
      if (s.segments > kMaxClusterSize)
        error(k.loc, where + ": cluster_size " + std::to_string(s.segments) + " is more than " +
                         std::to_string(kMaxClusterSize) + " programs");
      if (s.workspaceBytes != 0)
        error(k.loc, where + ": a kernel split over a cluster has no workspace_bytes");
      return;
    }
    if (s.workspaceBytes <= 0 || s.workspaceBytes % 4 != 0)
      error(k.loc, where + ": workspace_bytes " + std::to_string(s.workspaceBytes) +
                       " must be a positive multiple of 4");
    const Type *last = k.params().empty() ? nullptr : &k.params().back()->type;
    if (!last || !last->pointer || last->dtype != DType::I32)
      error(k.loc, where + ": a kernel with grid_split > 1 takes its workspace (*i32) as the last parameter");
  }

  /// Checks the ops of `block` in order, keeping `visible_` equal to the set of values
  /// an op at the current point may use.
  void verifyBlock(const Block &block) {
    std::vector<const Value *> scope;
    for (const auto &arg : block.arguments()) {
      visible_.insert(arg.get());
      scope.push_back(arg.get());
    }
    for (const auto &opPtr : block.ops()) {
      const Op &op = *opPtr;
      for (unsigned i = 0; i < op.numOperands(); ++i)
        if (op.operand(i) && !visible_.count(op.operand(i)))
          opError(op, "operand " + std::to_string(i) +
                          " is not defined before this op in an enclosing block");
      if (isTerminator(op.kind()) && &op != block.ops().back().get())
        opError(op, "is a terminator but not the last op of its block");
      if (op.parentBlock() != &block)
        opError(op, "has a wrong parent block");
      if (auto err = verifyOpLocal(op))
        opError(op, *err);
      else
        verifyRegions(op);
      for (const auto &region : op.regions())
        verifyBlock(*region);
      for (const auto &r : op.results()) {
        visible_.insert(r.get());
        scope.push_back(r.get());
      }
    }
    for (const Value *v : scope)
      visible_.erase(v);
  }

  /// Region `index` of `op` takes arguments of `argTypes`.
  bool expectArgs(const Op &op, unsigned index, const std::vector<Type> &argTypes,
                  const char *regionName) {
    const Block &b = *op.region(index);
    if (b.numArguments() != argTypes.size()) {
      opError(op, std::string(regionName) + " region takes " +
                      std::to_string(b.numArguments()) + " arguments; expected " +
                      std::to_string(argTypes.size()));
      return false;
    }
    for (unsigned i = 0; i < argTypes.size(); ++i)
      if (b.argument(i)->type != argTypes[i]) {
        opError(op, std::string(regionName) + " region argument " + std::to_string(i) +
                        " has type " + b.argument(i)->type.str() + "; expected " +
                        argTypes[i].str());
        return false;
      }
    return true;
  }

  /// Region `index` of `op` ends in a `kind` terminator whose operands have `types`.
  void expectTerminator(const Op &op, unsigned index, OpKind kind,
                        const std::vector<Type> &types, const char *regionName) {
    const Block &b = *op.region(index);
    const Op *term = b.terminator();
    std::string what = std::string(regionName) + " region";
    if (!term || term->kind() != kind) {
      opError(op, what + " must end in '" + opInfo(kind).mnemonic + "'" +
                      (term ? std::string(", not '") + term->mnemonic() + "'" : ""));
      return;
    }
    if (kind == OpKind::Condition)
      return; // its operand is checked locally (a bool scalar)
    if (term->numOperands() != types.size()) {
      opError(*term, "yields " + std::to_string(term->numOperands()) + " values; the " + what +
                         " of '" + op.mnemonic() + "' must yield " +
                         std::to_string(types.size()));
      return;
    }
    for (unsigned i = 0; i < types.size(); ++i)
      if (term->operand(i) && term->operand(i)->type != types[i])
        opError(*term, "operand " + std::to_string(i) + " has type " +
                           term->operand(i)->type.str() + "; the " + what + " of '" +
                           op.mnemonic() + "' must yield " + types[i].str());
  }

  /// Combiners of reduce/scan may only compute: no memory access, no side effects.
  void checkCombinerPure(const Op &owner, const Block &b) {
    for (const auto &op : b.ops()) {
      OpKind k = op->kind();
      if (k == OpKind::Load || k == OpKind::Store || k == OpKind::AtomicRMW ||
          k == OpKind::AtomicCas || k == OpKind::Fence || k == OpKind::ClusterExchange || k == OpKind::Assert || k == OpKind::Print)
        opError(owner, std::string("combiner region must not contain '") + op->mnemonic() +
                           "'");
      for (const auto &r : op->regions())
        checkCombinerPure(owner, *r);
    }
  }

  void verifyRegions(const Op &op) {
    std::vector<Type> resultTypes;
    for (const auto &r : op.results())
      resultTypes.push_back(r->type);
    switch (op.kind()) {
    case OpKind::For: {
      std::vector<Type> args = {op.operand(0)->type};
      args.insert(args.end(), resultTypes.begin(), resultTypes.end());
      expectArgs(op, 0, args, "body");
      expectTerminator(op, 0, OpKind::Yield, resultTypes, "body");
      return;
    }
    case OpKind::If:
      for (unsigned i = 0; i < 2; ++i) {
        const char *name = i == 0 ? "then" : "else";
        expectArgs(op, i, {}, name);
        expectTerminator(op, i, OpKind::Yield, resultTypes, name);
      }
      return;
    case OpKind::While:
      expectArgs(op, 0, resultTypes, "before");
      expectTerminator(op, 0, OpKind::Condition, {}, "before");
      expectArgs(op, 1, resultTypes, "after");
      expectTerminator(op, 1, OpKind::Yield, resultTypes, "after");
      return;
    case OpKind::Reduce:
    case OpKind::Scan: {
      if (op.numRegions() == 0)
        return;
      Type elem = Type::scalar(op.operand(0)->type.dtype);
      expectArgs(op, 0, {elem, elem}, "combiner");
      expectTerminator(op, 0, OpKind::Yield, {elem}, "combiner");
      checkCombinerPure(op, *op.region(0));
      return;
    }
    case OpKind::BlockElements:
    case OpKind::Constant:
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
    case OpKind::Arange:
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Permute:
    case OpKind::Join:
    case OpKind::Split:
    case OpKind::Cat:
    case OpKind::Gather:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Shl:
    case OpKind::Shr:
    case OpKind::Minimum:
    case OpKind::Maximum:
    case OpKind::Pow:
    case OpKind::PtrAdd:
    case OpKind::Cmp:
    case OpKind::Select:
    case OpKind::Fma:
    case OpKind::Neg:
    case OpKind::Not:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Exp2:
    case OpKind::Log:
    case OpKind::Log2:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Erf:
    case OpKind::Sigmoid:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Cast:
    case OpKind::Bitcast:
    case OpKind::Load:
    case OpKind::Store:
    case OpKind::AtomicRMW:
    case OpKind::AtomicCas:
    case OpKind::Fence:
    case OpKind::ClusterExchange:
    case OpKind::Argmax:
    case OpKind::Argmin:
    case OpKind::Sort:
    case OpKind::TopK:
    case OpKind::ArgTopK:
    case OpKind::Dot:
    case OpKind::Yield:
    case OpKind::Condition:
    case OpKind::Return:
    case OpKind::Assert:
    case OpKind::Print:
    case OpKind::Launch:
      return; // no regions (checked locally)
    }
  }

  DiagnosticEngine &diags_;
  bool ok_ = true;
  std::unordered_set<const Value *> visible_;
};

} // namespace

bool verifyModule(const Module &module, DiagnosticEngine &diags) {
  return ModuleVerifier(diags).run(module);
}

} // namespace kiln::ir
