//===- ReductionChains.cpp - Find chains of reduction loops that can fuse ---===//
//
// The analysis half of reduction-chain fusion (ReductionChains.h has the vocabulary).
// In every block it looks for runs of `for` loops over one iteration space with nothing
// between them that writes memory, recognizes each loop's accumulators, and decides
// loop by loop, in program order, whether the loop joins the fused pass:
//   * every carried value must be an accumulator `d = d ⊕ F`;
//   * its initial values and everything it reads must not come from a loop of the
//     chain that stays as written (the fused pass runs before those);
//   * each F must separate against the results of the fused loops before it
//     (Separability.cpp).
// A loop that writes memory ends the run; when it reads the run's results it is kept in
// the chain as a refused loop, so that --explain-fusion can say why it stays a pass of
// its own.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/ReductionChains.h"

#include "ir/transforms/ChainAlgebra.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

const char *combinerSymbol(Combiner c) {
  switch (c) {
  case Combiner::Sum: return "+";
  case Combiner::Max: return "max";
  case Combiner::Min: return "min";
  case Combiner::Dot: return "dot";
  case Combiner::TopK: return "top-k";
  }
  return "?";
}

std::string Accumulator::name() const {
  const Block &body = *combineOp->parentBlock();
  const std::string &hint = body.argument(slot + 1)->nameHint;
  return hint.empty() ? "acc" + std::to_string(slot) : hint;
}

bool writesOrFails(OpKind kind) {
  switch (kind) {
  case OpKind::Store:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCas:
  case OpKind::Fence:
  case OpKind::ClusterExchange:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::While:
  case OpKind::Return:
    return true;
  default:
    return false;
  }
}

bool hasEffects(Op &op) {
  bool effects = writesOrFails(op.kind());
  for (const auto &region : op.regions())
    walk(*region, [&](Op &inner) { effects |= writesOrFails(inner.kind()); });
  return effects;
}

size_t ReductionChain::fusedCount() const {
  size_t n = 0;
  for (const ChainLoop &l : loops)
    n += l.fused;
  return n;
}

namespace {

bool sameSpace(const Op &a, const Op &b) {
  for (unsigned i = 0; i < 3; ++i)
    if (a.operand(i) != b.operand(i))
      return false;
  return true;
}

/// Which loops of a chain a value depends on, through any chain of ops.
class ChainDependences {
public:
  explicit ChainDependences(const std::vector<Op *> &loops) : loops_(loops.begin(), loops.end()) {}

  /// The chain loops `v` reads the results of.
  const std::unordered_set<Op *> &of(Value *v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    std::unordered_set<Op *> deps;
    if (Op *def = v->definingOp()) {
      if (loops_.count(def))
        deps.insert(def);
      else
        addOpDeps(*def, deps);
    }
    return memo_[v] = std::move(deps);
  }

  /// The chain loops an op (with its regions) reads the results of.
  void addOpDeps(Op &op, std::unordered_set<Op *> &deps) {
    for (Value *o : op.operands())
      for (Op *d : of(o))
        deps.insert(d);
    for (const auto &region : op.regions())
      walk(*region, [&](Op &inner) {
        for (Value *o : inner.operands())
          for (Op *d : of(o))
            deps.insert(d);
      });
  }

private:
  std::unordered_set<const Op *> loops_;
  std::unordered_map<const Value *, std::unordered_set<Op *>> memo_;
};

std::string lineOf(const Op *op) { return std::to_string(op->loc().line); }

/// best = gather(cat(best, F, a), argtopk(cat(best, F, a), K, a), a) with K best's size
/// along a: a top-k merge. Also its companion, indices (or anything) carried in the
/// same order: idx = gather(cat(idx, I, a), order, a) with `order` a top-k merge's.
bool recognizeTopK(Block &body, Accumulator &acc, Op &gather, Value *carried) {
  Op *both = gather.operand(0)->definingOp();
  Op *order = gather.operand(1)->definingOp();
  const int64_t axis = gather.intAttr("axis");
  if (!both || both->kind() != OpKind::Cat || both->operand(0) != carried || both->intAttr("axis") != axis ||
      !order || order->kind() != OpKind::ArgTopK || order->intAttr("axis") != axis ||
      order->intAttr("k") != carried->type.shape[axis])
    return false;
  acc.combiner = Combiner::TopK;
  acc.combineOp = &gather;
  acc.orderOp = order;
  acc.term = both->operand(1);
  acc.reducedDims = {static_cast<unsigned>(axis)};
  if (order->operand(0) == gather.operand(0))
    return true; // the values
  Op *keys = order->operand(0)->definingOp();
  if (!keys || keys->kind() != OpKind::Cat || keys->intAttr("axis") != axis)
    return false;
  Value *ranked = keys->operand(0);
  if (!ranked->isBlockArgument() || ranked->ownerBlock() != &body || ranked->index() == 0)
    return false;
  Value *next = body.terminator()->operand(ranked->index() - 1);
  Op *rankedMerge = next->definingOp();
  if (!rankedMerge || rankedMerge->kind() != OpKind::Gather || rankedMerge->operand(0) != order->operand(0) ||
      rankedMerge->operand(1) != order->result())
    return false;
  acc.ranksWith = static_cast<int>(ranked->index()) - 1;
  return true;
}

/// Recognizes the accumulator of carried slot `slot`; nullopt with `why` otherwise.
std::optional<Accumulator> recognize(Op &loop, unsigned slot, std::string &why, Location &where) {
  Block &body = *loop.region(0);
  Value *carried = body.argument(slot + 1);
  Value *next = body.terminator()->operand(slot);
  std::string name = carried->nameHint.empty() ? "carried value " + std::to_string(slot) : "`" + carried->nameHint + "`";
  Accumulator acc;
  acc.slot = slot;
  Op *def = next->definingOp();
  auto refuse = [&](const std::string &text) {
    why = text;
    where = def && def->parentBlock() == &body ? def->loc() : loop.loc();
    return std::nullopt;
  };
  if (!def || def->parentBlock() != &body)
    return refuse(name + " is not updated by the loop");
  if (def->kind() == OpKind::Gather)
    return recognizeTopK(body, acc, *def, carried) ? std::optional(acc)
                                                     : refuse(name + " is gathered, but not as a top-k merge "
                                                                     "gather(cat(" + carried->nameHint + ", F), argtopk(cat(" +
                                                                     carried->nameHint + ", F), K))");
  if (def->kind() == OpKind::Dot && def->numOperands() == 3 && def->operand(2) == carried) {
    acc.combiner = Combiner::Dot;
    acc.combineOp = acc.dotOp = def;
    acc.term = def->operand(0);
    acc.reducedDims = {1};
    return acc;
  }
  std::optional<Combiner> combiner;
  const char *reduceKind = nullptr;
  switch (def->kind()) {
  case OpKind::Add: combiner = Combiner::Sum, reduceKind = "sum"; break;
  case OpKind::Maximum: combiner = Combiner::Max, reduceKind = "max"; break;
  case OpKind::Minimum: combiner = Combiner::Min, reduceKind = "min"; break;
  default: break;
  }
  if (!combiner || (def->operand(0) != carried && def->operand(1) != carried))
    return refuse(name + " is not updated as " + carried->nameHint + " = " + carried->nameHint +
                  " ⊕ F with ⊕ one of +, max, min or a dot accumulation");
  acc.combiner = *combiner;
  acc.combineOp = def;
  Value *term = def->operand(0) == carried ? def->operand(1) : def->operand(0);
  acc.term = term;
  Op *termDef = term->definingOp();
  if (termDef && termDef->kind() == OpKind::Reduce && termDef->stringAttr("kind") == reduceKind) {
    acc.term = termDef->operand(0);
    acc.reducedDims = {static_cast<unsigned>(termDef->intAttr("axis"))};
  } else if (termDef && termDef->kind() == OpKind::Dot && termDef->numOperands() == 2 &&
             *combiner == Combiner::Sum) {
    acc.combiner = Combiner::Dot;
    acc.dotOp = termDef;
    acc.term = termDef->operand(0);
    acc.reducedDims = {1};
  }
  return acc;
}

class ChainFinder {
public:
  explicit ChainFinder(const FusionPolicy &policy) : policy_(policy) {}

  std::vector<ReductionChain> chains;

  void scan(Block &block) {
    std::vector<Op *> run;
    // The run a write that is not a loop ended (a result stored between two loops), and
    // that write: the next loop over the same range that needs the run's results would
    // have joined them but for it, and --explain-fusion says so.
    std::vector<Op *> cut;
    Op *cutter = nullptr;
    auto flush = [&](Op *trailing) {
      if (!run.empty())
        decide(run, trailing);
      run.clear();
    };
    for (auto &owned : block.ops()) {
      Op &op = *owned;
      if (op.kind() == OpKind::For) {
        bool effects = hasEffects(op);
        if (run.empty() && cutter)
          explainCut(cut, *cutter, op);
        cutter = nullptr;
        if (!run.empty() && !sameSpace(*run.front(), op)) {
          flush(nullptr);
        }
        if (effects) {
          flush(&op);
          for (const auto &region : op.regions())
            scan(*region);
          continue;
        }
        run.push_back(&op);
        continue;
      }
      if (hasEffects(op) && !run.empty())
        cut = run, cutter = &op;
      if (hasEffects(op) || !op.regions().empty())
        flush(nullptr);
      for (const auto &region : op.regions())
        scan(*region);
    }
    flush(nullptr);
  }

private:
  const FusionPolicy &policy_;
  /// The loops of the chain being decided, by op (copies: the chain's vector grows).
  std::unordered_map<const Op *, std::shared_ptr<ChainLoop>> decided_;

  /// Records why `loop` stays apart from the loops of `cut` when it needs their results
  /// over the same range: the write `cutter` between them would have to move past the
  /// loads of a fused loop, and it may write what they read.
  void explainCut(const std::vector<Op *> &cut, Op &cutter, Op &loop) {
    if (!sameSpace(*cut.front(), loop))
      return;
    ChainDependences deps(cut);
    std::unordered_set<Op *> reads;
    deps.addOpDeps(loop, reads);
    if (reads.empty())
      return;
    ChainLoop cl;
    cl.loop = &loop;
    cl.refusal = "it needs the final " + namesOf(reads) + ", and the " + std::string(cutter.mnemonic()) +
                 " at line " + lineOf(&cutter) + " writes memory between the loops";
    cl.refusalLoc = cutter.loc();
    ReductionChain chain;
    chain.loops.push_back(std::move(cl));
    chains.push_back(std::move(chain));
  }

  /// Decides loop by loop which loops of `run` fuse; `trailing` is the loop that ended
  /// the run by writing memory, if any.
  void decide(const std::vector<Op *> &run, Op *trailing) {
    std::vector<Op *> all = run;
    if (trailing)
      all.push_back(trailing);
    ChainDependences deps(all);
    ReductionChain chain;
    std::vector<Op *> fused;
    bool explainable = false;
    for (Op *loop : all) {
      ChainLoop cl;
      cl.loop = loop;
      cl.refusalLoc = loop->loc();
      std::unordered_set<Op *> reads;
      deps.addOpDeps(*loop, reads);
      explainable |= !reads.empty();
      if (loop == trailing) {
        if (reads.empty())
          break;
        cl.trailing = true;
        cl.refusal = "it writes memory, and needs the final " + namesOf(reads) +
                     ": it stays a pass of its own after the fused loop";
        chain.loops.push_back(std::move(cl));
        break;
      }
      if (!why(*loop, reads, fused, cl))
        cl.fused = true, fused.push_back(loop);
      decided_[loop] = std::make_shared<ChainLoop>(cl);
      chain.loops.push_back(std::move(cl));
    }
    decided_.clear();
    if (chain.fusedCount() >= 2 || (explainable && !chain.loops.empty()))
      chains.push_back(std::move(chain));
  }

  /// The reason `loop` cannot join the fused loops `fused` (reading `reads`), into cl;
  /// false when it can.
  bool why(Op &loop, const std::unordered_set<Op *> &reads, const std::vector<Op *> &fused, ChainLoop &cl) {
    Block &body = *loop.region(0);
    for (Op *r : reads) {
      if (std::find(fused.begin(), fused.end(), r) == fused.end()) {
        cl.refusal = "it needs the final " + namesOf({r}) + ", which stays as written";
        return true;
      }
      // A factor applied after the loop leaves the running value incomplete.
      for (const Accumulator &acc : decided_.at(r)->accumulators)
        if (acc.separation.completedAfterLoop()) {
          cl.refusal = "it needs `" + acc.name() + "` of the loop at line " + lineOf(r) +
                       " while it runs, but part of that value is applied only after the loop";
          return true;
        }
    }
    if (loop.numResults() == 0) {
      cl.refusal = "it carries no accumulator";
      return true;
    }
    for (unsigned i = 3; i < loop.numOperands(); ++i) {
      ChainDependences initDeps(fused);
      if (!initDeps.of(loop.operand(i)).empty()) {
        cl.refusal = "the initial value of `" + body.argument(i - 2)->nameHint + "` depends on earlier results";
        return true;
      }
    }
    for (const auto &owned : body.ops())
      if (owned->kind() == OpKind::For || owned->kind() == OpKind::If) {
        cl.refusal = "its body holds nested control flow";
        cl.refusalLoc = owned->loc();
        return true;
      }
    for (unsigned slot = 0; slot < loop.numResults(); ++slot) {
      std::string reason;
      Location where = loop.loc();
      std::optional<Accumulator> acc = recognize(loop, slot, reason, where);
      if (!acc) {
        cl.refusal = reason, cl.refusalLoc = where;
        return true;
      }
      if (!isFloat(acc->combineOp->result()->type.dtype) && !reads.empty() && acc->ranksWith < 0) {
        cl.refusal = "`" + acc->name() + "` is not a float, so it cannot be rescaled";
        return true;
      }
      if (acc->combiner == Combiner::Dot) {
        ChainDependences rhs(fused);
        if (!rhs.of(acc->dotOp->operand(1)).empty()) {
          cl.refusal = "the right operand of `dot` depends on earlier results";
          cl.refusalLoc = acc->dotOp->loc();
          return true;
        }
      }
      if (auto no = separate(*acc, loop, fused, policy_, where)) {
        cl.refusal = "`" + acc->name() + "`: " + *no;
        cl.refusalLoc = where;
        return true;
      }
      // The rescaled top-k starts empty: its initial value is not a term to rescale or
      // merge in afterwards.
      if (acc->combiner == Combiner::TopK && acc->ranksWith < 0 && acc->separation.dependsOnEarlier() &&
          !isIdentity(loop.operand(3 + slot), Combiner::TopK)) {
        cl.refusal = "`" + acc->name() + "` must start as the empty top-k, every value -inf";
        return true;
      }
      cl.accumulators.push_back(std::move(*acc));
    }
    return false;
  }

  static std::string namesOf(const std::unordered_set<Op *> &loops) {
    std::vector<Op *> sorted(loops.begin(), loops.end());
    std::sort(sorted.begin(), sorted.end(), [](Op *a, Op *b) { return a->loc().line < b->loc().line; });
    std::string out;
    for (size_t i = 0; i < sorted.size(); ++i) {
      Op *l = sorted[i];
      std::string names;
      Block &body = *l->region(0);
      for (unsigned s = 1; s < body.numArguments(); ++s)
        names += (s > 1 ? ", " : "") + ("`" + body.argument(s)->nameHint + "`");
      out += (i == 0 ? "" : i + 1 == sorted.size() ? " and " : ", ") + names + " of the loop at line " + lineOf(l);
    }
    return out;
  }
};

} // namespace

std::vector<ReductionChain> analyzeReductionChains(Kernel &kernel, const FusionPolicy &policy) {
  ChainFinder finder(policy);
  finder.scan(*kernel.body);
  return std::move(finder.chains);
}

} // namespace kiln::ir
