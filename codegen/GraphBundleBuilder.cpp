//===- GraphBundleBuilder.cpp - A graph into a launchable graph bundle -----===//
//
// The body is walked in program order. Each scalar op becomes one value of the
// program; an `if` becomes nothing of its own: the launches in its branches carry its
// condition (and'ed with the conditions around it, negated in the else branch) as their
// guard, and a value it yields becomes a select. The arithmetic of the program never
// traps (support/ScalarArithmetic.h), so computing a branch's values whether or not the
// branch runs is harmless.
//
//===----------------------------------------------------------------------===//
#include "codegen/GraphBundleBuilder.h"

#include "codegen/BundleBuilder.h"
#include "ir/GraphDependencies.h"
#include "ir/TaskFootprints.h"
#include "ir/interp/Fold.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln::codegen {

void unifyNumWarps(ir::Module &module) {
  int64_t widest = 1;
  for (const auto &k : module.kernels)
    widest = std::max(widest, k->numWarps);
  for (const auto &k : module.kernels)
    k->numWarps = widest;
}

namespace {

using ir::OpKind;

/// "g.kiln:8:5", or "" where the op has no location in a file.
std::string whereIs(const ir::Module &module, const Location &loc) {
  if (!loc.valid() || loc.isCommandLine() || loc.file >= module.sources->size())
    return "";
  return std::string(module.sources->name(loc.file)) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

std::optional<rt::GraphOp> graphOpOf(OpKind k) {
  switch (k) {
  case OpKind::Add: return rt::GraphOp::Add;
  case OpKind::Sub: return rt::GraphOp::Sub;
  case OpKind::Mul: return rt::GraphOp::Mul;
  case OpKind::Div: return rt::GraphOp::Div;
  case OpKind::Rem: return rt::GraphOp::Rem;
  case OpKind::Minimum: return rt::GraphOp::Min;
  case OpKind::Maximum: return rt::GraphOp::Max;
  case OpKind::And: return rt::GraphOp::And;
  case OpKind::Or: return rt::GraphOp::Or;
  case OpKind::Xor: return rt::GraphOp::Xor;
  case OpKind::Shl: return rt::GraphOp::Shl;
  case OpKind::Shr: return rt::GraphOp::Shr;
  case OpKind::Neg: return rt::GraphOp::Neg;
  case OpKind::Not: return rt::GraphOp::Not;
  case OpKind::Cmp: return rt::GraphOp::Cmp;
  case OpKind::Select: return rt::GraphOp::Select;
  case OpKind::Cast: return rt::GraphOp::Cast;
  case OpKind::PtrAdd: return rt::GraphOp::PtrAdd;
  default: return std::nullopt;
  }
}

std::optional<rt::GraphPredicate> predicateOf(const std::string &p) {
  static const std::pair<const char *, rt::GraphPredicate> kNames[] = {
      {"eq", rt::GraphPredicate::EQ}, {"ne", rt::GraphPredicate::NE}, {"lt", rt::GraphPredicate::LT},
      {"le", rt::GraphPredicate::LE}, {"gt", rt::GraphPredicate::GT}, {"ge", rt::GraphPredicate::GE}};
  for (const auto &[name, pred] : kNames)
    if (p == name)
      return pred;
  return std::nullopt;
}

/// Largest power of two known to divide a value (in elements for a pointer's offset),
/// capped; an unknown value gets 1.
constexpr int64_t kDivisibleByAll = int64_t(1) << 40;

class ProgramBuilder {
public:
  ProgramBuilder(const ir::Module &module, const ir::Kernel &graph, rt::GraphBundle &out, DiagnosticEngine &diags)
      : module_(module), graph_(graph), out_(out), diags_(diags) {}

  /// The kernels, in the module's order: the kinds the launches name by index.
  std::map<std::string, uint32_t> kernelIndex;
  /// Per kernel, whether some launch passes it a view not known to be 16-byte aligned.
  std::vector<bool> unaligned;
  /// The launch ops, in the order of `out.launches`.
  std::vector<const ir::Op *> launchOps;

  bool build() {
    const auto &params = graph_.params();
    const std::map<const ir::Value *, int64_t> multiples = promisedMultiples();
    for (size_t i = 0; i < params.size(); ++i) {
      rt::GraphValue v;
      v.op = rt::GraphOp::Param;
      v.dtype = params[i]->type.dtype;
      v.pointer = params[i]->type.pointer;
      v.imm = static_cast<int64_t>(i);
      auto m = multiples.find(params[i].get());
      index_[params[i].get()] = add(v, v.pointer ? kDivisibleByAll : m == multiples.end() ? 1 : m->second);
    }
    unaligned.assign(module_.kernels.size(), false);
    return walk(*graph_.body, std::nullopt);
  }

private:
  /// The integer parameters of the graph that a launch outside every `if` passes, as
  /// they are, to a kernel parameter the kernel assumes a multiple of M
  /// (`multiple_of(n, 16)`): every run launches it and the runtime refuses the launch
  /// unless the value is such a multiple, so views computed from it may assume it too.
  std::map<const ir::Value *, int64_t> promisedMultiples() const {
    std::map<const ir::Value *, int64_t> out;
    for (const auto &op : graph_.body->ops()) {
      if (op->kind() != OpKind::Launch)
        continue;
      const ir::Kernel *k = module_.findKernel(op->stringAttr("kernel"));
      if (!k)
        continue;
      for (const auto &[param, multiple] : k->paramMultiples) {
        const ir::Value *arg = param + 3 < op->numOperands() ? op->operand(param + 3) : nullptr;
        if (arg && arg->isBlockArgument() && arg->ownerBlock() == graph_.body.get())
          out[arg] = std::max(out[arg], std::min(multiple, kDivisibleByAll));
      }
    }
    return out;
  }

  uint32_t add(rt::GraphValue v, int64_t divisibility, std::optional<ir::Attr> constant = std::nullopt) {
    out_.values.push_back(std::move(v));
    divisibility_.push_back(divisibility);
    constants_.push_back(std::move(constant));
    return static_cast<uint32_t>(out_.values.size() - 1);
  }

  /// A constant for `attr` of `type`.
  uint32_t addConstant(const Type &type, const ir::Attr &attr) {
    rt::GraphValue v;
    v.op = rt::GraphOp::Const;
    v.dtype = type.dtype;
    if (const auto *f = std::get_if<double>(&attr))
      v.fimm = *f;
    else if (const auto *b = std::get_if<bool>(&attr))
      v.imm = *b;
    else if (const auto *i = std::get_if<int64_t>(&attr))
      v.imm = *i;
    else
      KILN_ICE("graph bundle: a constant that is no number");
    return add(v, isFloat(v.dtype) ? 1 : lowBit(v.imm), attr);
  }

  uint32_t valueOf(const ir::Value *v) const {
    auto it = index_.find(v);
    if (it == index_.end())
      KILN_ICE("graph bundle: a value of graph '" + graph_.name + "' is used before it is computed");
    return it->second;
  }

  uint32_t boolOp(rt::GraphOp op, std::vector<uint32_t> operands) {
    rt::GraphValue v;
    v.op = op;
    v.dtype = DType::Bool;
    v.operands = std::move(operands);
    return add(v, 1);
  }

  static int64_t lowBit(int64_t c) {
    if (c == 0)
      return kDivisibleByAll;
    const uint64_t m = c < 0 ? 0 - uint64_t(c) : uint64_t(c);
    return std::min<int64_t>(int64_t(m & (0 - m)), kDivisibleByAll);
  }

  /// The divisibility of an op's result from its operands'.
  int64_t divisibilityOf(const rt::GraphValue &v) const {
    auto d = [&](size_t k) { return divisibility_[v.operands[k]]; };
    switch (v.op) {
    case rt::GraphOp::Const: return isFloat(v.dtype) ? 1 : lowBit(v.imm);
    case rt::GraphOp::Add:
    case rt::GraphOp::Sub:
    case rt::GraphOp::PtrAdd: return std::min(d(0), d(1));
    case rt::GraphOp::Mul: return d(0) >= kDivisibleByAll / d(1) ? kDivisibleByAll : d(0) * d(1);
    case rt::GraphOp::Neg: return d(0);
    case rt::GraphOp::Select: return std::min(d(1), d(2));
    case rt::GraphOp::Shl: {
      const rt::GraphValue &amount = out_.values[v.operands[1]];
      if (amount.op == rt::GraphOp::Const && amount.imm >= 0 && amount.imm < 40)
        return std::min(d(0) << amount.imm, kDivisibleByAll);
      return d(0);
    }
    default: return 1;
    }
  }

  bool walk(const ir::Block &block, std::optional<uint32_t> guard) {
    bool ok = true;
    for (const auto &owned : block.ops()) {
      const ir::Op &op = *owned;
      switch (op.kind()) {
      case OpKind::Yield:
      case OpKind::Return:
        continue;
      case OpKind::Constant:
        index_[op.result()] = addConstant(op.result()->type, op.attrs().at("value"));
        continue;
      case OpKind::Launch:
        launch(op, guard);
        continue;
      case OpKind::If:
        if (!branch(op, guard))
          return false;
        continue;
      default:
        break;
      }
      // An op of constants (the graph's consts, sqrt(D)) is its value, folded by the
      // interpreter's own rules: the program needs no math library.
      if (std::optional<ir::Attr> folded = foldConstants(op)) {
        index_[op.result()] = addConstant(op.result()->type, *folded);
        continue;
      }
      std::optional<rt::GraphOp> kind = graphOpOf(op.kind());
      if (!kind || op.numResults() != 1) {
        diags_.error(op.loc(), DiagCode::Unsupported)
            << "'" << op.mnemonic() << "' in the body of graph '" << graph_.name
            << "' cannot go into a graph bundle yet; `dslc run` runs it, or compute the value in a kernel";
        return false; // the values after it would use one that is missing
      }
      rt::GraphValue v;
      v.op = *kind;
      v.dtype = op.result()->type.dtype;
      v.pointer = op.result()->type.pointer;
      for (const ir::Value *o : op.operands())
        v.operands.push_back(valueOf(o));
      if (*kind == rt::GraphOp::Cmp) {
        std::optional<rt::GraphPredicate> p = predicateOf(op.stringAttr("pred"));
        if (!p)
          KILN_ICE("graph bundle: unknown predicate '" + op.stringAttr("pred") + "'");
        v.imm = static_cast<int64_t>(*p);
      }
      const int64_t divisibility = divisibilityOf(v);
      index_[op.result()] = add(v, divisibility);
    }
    return ok;
  }

  std::optional<ir::Attr> foldConstants(const ir::Op &op) const {
    const bool computes = ir::isElementwise(op.kind()) || op.kind() == OpKind::Cmp || op.kind() == OpKind::Select ||
                          op.kind() == OpKind::Cast;
    if (op.numResults() != 1 || op.numOperands() == 0 || !computes)
      return std::nullopt;
    std::vector<ir::Attr> operands;
    for (const ir::Value *o : op.operands()) {
      const std::optional<ir::Attr> &c = constants_[valueOf(o)];
      if (!c)
        return std::nullopt;
      operands.push_back(*c);
    }
    return interp::foldElementwise(op, operands);
  }

  bool branch(const ir::Op &op, std::optional<uint32_t> guard) {
    const uint32_t cond = valueOf(op.operand(0));
    const uint32_t notCond = boolOp(rt::GraphOp::Not, {cond});
    auto within = [&](uint32_t c) { return guard ? boolOp(rt::GraphOp::And, {*guard, c}) : c; };
    bool ok = walk(*op.region(0), within(cond));
    if (ok && op.numRegions() > 1)
      ok = walk(*op.region(1), within(notCond));
    for (unsigned i = 0; ok && i < op.numResults(); ++i) {
      rt::GraphValue v;
      v.op = rt::GraphOp::Select;
      v.dtype = op.result(i)->type.dtype;
      v.pointer = op.result(i)->type.pointer;
      v.operands = {cond, valueOf(op.region(0)->terminator()->operand(i)),
                    valueOf(op.region(1)->terminator()->operand(i))};
      index_[op.result(i)] = add(v, divisibilityOf(v));
    }
    return ok;
  }

  void launch(const ir::Op &op, std::optional<uint32_t> guard) {
    const std::string &name = op.stringAttr("kernel");
    auto kind = kernelIndex.find(name);
    if (kind == kernelIndex.end())
      KILN_ICE("graph '" + graph_.name + "' launches '" + name + "', which the module lacks");
    rt::GraphLaunchStep step;
    step.kernel = kind->second;
    for (unsigned d = 0; d < 3; ++d)
      step.grid[d] = valueOf(op.operand(d));
    for (unsigned i = 3; i < op.numOperands(); ++i) {
      const uint32_t a = valueOf(op.operand(i));
      step.args.push_back(a);
      const rt::GraphValue &v = out_.values[a];
      if (v.pointer && divisibility_[a] * int64_t(dtypeBytes(v.dtype)) % 16 != 0)
        unaligned[step.kernel] = true;
    }
    step.guard = guard;
    step.where = whereIs(module_, op.loc());
    out_.launches.push_back(std::move(step));
    launchOps.push_back(&op);
  }

  const ir::Module &module_;
  const ir::Kernel &graph_;
  rt::GraphBundle &out_;
  DiagnosticEngine &diags_;
  std::unordered_map<const ir::Value *, uint32_t> index_;
  std::vector<int64_t> divisibility_;
  std::vector<std::optional<ir::Attr>> constants_; ///< per value, its constant when it is one
};

/// The persistent kernel's bundle: its ABI (support/TaskTable.h) as parameters, and the
/// size of a launch record as the const RECORD_WORDS (and CHECKED = 1 in checked mode).
rt::Bundle persistentBundle(const ir::Module &module, const ir::Kernel &graph, Target target,
                            const CodegenResult &result, unsigned recordWords, int64_t numWarps, bool checked) {
  rt::Bundle b;
  b.kernelName = graph.name;
  b.entry = result.entry;
  b.params = {{"table", DType::U64, true, 1},       {"launches", DType::I32, false, 1},
              {"tasks", DType::I32, false, 1},      {"sync", DType::U32, true, 1},
              {"claim_base", DType::U32, false, 1}, {"timeout_ns", DType::I64, false, 1},
              {"trace", DType::U64, true, 1},       {"table_runs", DType::U32, false, 1},
              {"task_events", DType::U64, true, 1}};
  b.consts = {rt::ConstValue{"RECORD_WORDS", static_cast<int64_t>(recordWords)}};
  if (checked) {
    b.params.push_back({"check_record", DType::U32, true, 1});
    b.consts.push_back(rt::ConstValue{"CHECKED", int64_t(1)});
  }
  b.numWarps = static_cast<uint32_t>(numWarps);
  b.sharedBytes = static_cast<uint32_t>(result.sharedBytes);
  b.target = bundleTarget(target);
  b.compilerVersion = compilerVersion();
  b.sourceHash = sourceHash(module);
  rt::CodeSection section;
  section.kind = rt::SectionKind::PTX;
  section.target = b.target;
  section.bytes.assign(result.ptx.begin(), result.ptx.end());
  b.sections.push_back(std::move(section));
  return b;
}

/// A footprint polynomial in the bundle's terms.
rt::GraphPoly bundlePoly(const ir::FootprintPoly &p) {
  rt::GraphPoly out;
  for (const auto &[monomial, coefficient] : p.terms) {
    if (coefficient == 0)
      continue;
    rt::GraphPolyTerm &t = out.emplace_back();
    t.coefficient = coefficient;
    for (const ir::FootprintSymbol &s : monomial)
      t.symbols.push_back(s.kind == ir::FootprintSymbol::Kind::Pid ? rt::GraphPolyTerm::kPid + s.index
                                                                   : rt::GraphPolyTerm::kParam + s.index);
  }
  return out;
}

} // namespace

/// The programs per SM a graph's kernel is compiled for when it runs as launches (in a
/// CUDA graph or one by one): the persistent kernel's workers per SM where the kernel
/// has no tensor-core product, so that both forms of a memory-bound launch get the same
/// registers. Left to itself ptxas aims such a kernel at a higher occupancy and, to
/// reach it, sinks each load to its first use in one reused set of registers: the
/// decode chain's matrix-vector product then issued its eight 16-byte weight loads an
/// iteration one after another (64 registers) and took 1.6x as long on the H200 as
/// with them in flight together (96, under .minnctapersm 2). Not for every kernel: the
/// same bound on the standalone softmax benchmarks cost up to 1.5x, their occupancy
/// being what hides their latency (docs/graphs.md). A `dot`'s fragments need registers
/// beyond what two programs leave, so those kernels keep ptxas's choice.
static int64_t launchedProgramsPerSM(const ir::Kernel &kernel, const CodegenOptions &options) {
  bool products = false;
  ir::walk(*kernel.body, [&](ir::Op &op) { products = products || op.kind() == OpKind::Dot; });
  return products ? 0 : options.workersPerSM;
}

std::optional<rt::GraphBundle> buildGraphBundle(const ir::Module &module, const ir::Kernel &graph, Target target,
                                                const CodegenOptions &options, bool persistent,
                                                DiagnosticEngine &diags, TimingReport *timing,
                                                std::vector<Location> *launchLocations) {
  rt::GraphBundle out;
  out.name = graph.name;
  for (const auto &p : graph.params())
    out.params.push_back(rt::BundleParam{p->nameHint, p->type.dtype, p->type.pointer, 1});
  out.blockMasks = bundleBlockMasks(graph, out.params);
  out.target = bundleTarget(target);
  out.compilerVersion = compilerVersion();
  out.sourceHash = sourceHash(module);
  if (graph.loc.valid() && !graph.loc.isCommandLine() && graph.loc.file < module.sources->size()) {
    out.sourceFile = std::string(module.sources->name(graph.loc.file));
    out.sourceLine = graph.loc.line;
    out.sourceColumn = graph.loc.col;
  }

  ProgramBuilder program(module, graph, out, diags);
  std::vector<const ir::Kernel *> kinds;
  for (const auto &k : module.kernels) {
    program.kernelIndex[k->name] = static_cast<uint32_t>(kinds.size());
    kinds.push_back(k.get());
  }
  if (!program.build())
    return std::nullopt;
  if (kinds.empty()) {
    diags.error(graph.loc, DiagCode::Unsupported) << "graph '" << graph.name << "' launches no kernel: a graph bundle of it would run nothing";
    return std::nullopt;
  }

  if (launchLocations)
    for (const ir::Op *op : program.launchOps)
      launchLocations->push_back(op->loc());

  // The dependencies, between launches in the program's order.
  const ir::GraphDependencies deps = ir::analyzeGraphDependencies(module, graph);
  std::map<const ir::Op *, uint32_t> stepOf;
  for (size_t i = 0; i < program.launchOps.size(); ++i)
    stepOf[program.launchOps[i]] = static_cast<uint32_t>(i);
  auto rootOf = [&](unsigned launch, unsigned arg) -> std::optional<unsigned> {
    for (const ir::LaunchAccess &a : deps.launches[launch].accesses)
      if (a.arg == arg)
        return a.root;
    return std::nullopt;
  };
  for (const ir::GraphDependency &d : deps.dependencies) {
    rt::GraphEdge e;
    e.from = stepOf.at(deps.launches[d.from].op);
    e.to = stepOf.at(deps.launches[d.to].op);
    if (d.mayAlias) {
      std::optional<unsigned> a = rootOf(d.from, d.fromArg), b = rootOf(d.to, d.toArg);
      if (a && b)
        e.aliasParams = std::array<uint32_t, 2>{*a, *b};
    }
    auto same = [&](const rt::GraphEdge &o) { return o.from == e.from && o.to == e.to; };
    // Several reasons for one pair: an unconditional one wins over any that need aliasing.
    auto it = std::find_if(out.edges.begin(), out.edges.end(), same);
    if (it == out.edges.end())
      out.edges.push_back(e);
    else if (!e.aliasParams)
      it->aliasParams.reset();
    else if (it->aliasParams && *it->aliasParams != *e.aliasParams)
      it->aliasParams.reset(); // two different pairs: kept unconditionally, to be safe
  }

  // What each program of each kernel touches, for the host's task-level events.
  for (size_t k = 0; k < kinds.size(); ++k)
    for (const ir::TaskFootprint &f : ir::analyzeTaskFootprints(*kinds[k])) {
      rt::GraphFootprint fp;
      fp.kernel = static_cast<uint32_t>(k);
      fp.param = f.param;
      fp.reads = f.reads;
      fp.writes = f.writes;
      if (f.range) {
        fp.known = true;
        fp.lo = bundlePoly(f.range->lo);
        fp.hi = bundlePoly(f.range->hi);
      }
      if (std::find(out.footprints.begin(), out.footprints.end(), fp) == out.footprints.end())
        out.footprints.push_back(std::move(fp));
    }

  CodegenOptions unalignedOptions = options;
  unalignedOptions.assumeAlignedPointers = false;
  {
    TimingReport::Scope timer(timing, "codegen: the graph's " + std::to_string(kinds.size()) + " kernel" +
                                          (kinds.size() == 1 ? "" : "s") + " for " +
                                          std::string(targetName(target)));
    for (size_t i = 0; i < kinds.size(); ++i) {
      CodegenOptions cg = program.unaligned[i] ? unalignedOptions : options;
      cg.programsPerSM = launchedProgramsPerSM(*kinds[i], options);
      std::optional<CodegenResult> result = generate(module, *kinds[i], target, diags, cg);
      if (!result)
        return std::nullopt;
      rt::Bundle bundle = makeBundle(module, *kinds[i], target, cg, *result);
      // An instance's name (`scale[BLOCK=128]`) is no identifier.
      bundle.kernelName = entrySymbol(kinds[i]->name);
      out.kernels.push_back(std::move(bundle));
    }
  }
  if (persistent && !kinds.empty()) {
    TimingReport::Scope timer(timing, "codegen: the persistent kernel");
    std::optional<CodegenResult> mega =
        generateMegakernel(module, graph, kinds, target, diags, options, program.unaligned);
    if (!mega)
      return std::nullopt;
    out.persistent = persistentBundle(module, graph, target, *mega, taskRecordWords(kinds, options.checked),
                                      kinds.front()->numWarps, options.checked);
  }
  const std::string why = rt::validateGraphBundle(out);
  if (!why.empty())
    KILN_ICE("the graph bundle of '" + graph.name + "' is invalid: " + why);
  return out;
}

} // namespace kiln::codegen
