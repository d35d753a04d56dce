//===- FusionRemarks.cpp - What reduction-chain fusion did, and why -------===//
//
// --explain-fusion: one remark per chain that fused (at its first loop, with a note per
// loop saying which ⊕, G and H were found and how the accumulator is rescaled) and one
// per loop of a chain that stays as written, with the reason at the op that decided it.
// They are ordinary diagnostics, so --diagnostics=json prints them as JSON and
// --verify-diagnostics checks them against `expected-remark` comments.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/FusionRemarks.h"

#include <sstream>

namespace kiln::ir {

namespace {

/// A short name for a y-only value: its source name, seen through broadcasts.
std::string describe(const Value *v, int depth = 0) {
  if (!v->nameHint.empty())
    return v->nameHint;
  const Op *def = v->definingOp();
  if (!def || depth > 4)
    return "y";
  if (def->kind() == OpKind::For) {
    const std::string &carried = def->region(0)->argument(v->index() + 1)->nameHint;
    return carried.empty() ? "y" : carried;
  }
  switch (def->kind()) {
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Cast:
    return describe(def->operand(0), depth + 1);
  case OpKind::Constant: {
    std::ostringstream os;
    const Attr &a = def->attrs().at("value");
    if (auto *d = std::get_if<double>(&a))
      os << *d;
    else if (auto *i = std::get_if<int64_t>(&a))
      os << *i;
    return os.str();
  }
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div: {
    const char *sym = def->kind() == OpKind::Add ? " + " : def->kind() == OpKind::Sub ? " - "
                      : def->kind() == OpKind::Mul ? "·" : "/";
    return "(" + describe(def->operand(0), depth + 1) + sym + describe(def->operand(1), depth + 1) + ")";
  }
  default:
    return std::string(def->mnemonic()) + "(" + (def->numOperands() ? describe(def->operand(0), depth + 1) : "") +
           ")";
  }
}

/// Σ terms as text: "-m", "-m·scale", "a - b".
std::string linearText(const std::vector<LinearTerm> &terms, const char *suffix = "") {
  std::string out;
  for (const LinearTerm &t : terms) {
    std::string one = describe(t.leaf) + suffix;
    for (const LinearTerm::Scale &s : t.scales)
      one += (s.inverse ? "/" : "·") + describe(s.value);
    out += out.empty() ? (t.negative ? "-" : "") + one : (t.negative ? " - " : " + ") + one;
  }
  return out;
}

/// The rescale as text: "exp(m_prev - m)" for the softmax form, else H(y)/H(y_prev).
std::string rescaleText(const Accumulator &acc) {
  const Separation &s = acc.separation;
  if (!s.shifts.empty())
    return "shifted by (" + linearText(s.shifts) + ") - (" + linearText(s.shifts, "_prev") + ")";
  if (s.exps.size() == 1 && s.exps[0].terms.size() == 1 && s.exps[0].terms[0].negative &&
      s.exps[0].terms[0].scales.empty()) {
    std::string y = describe(s.exps[0].terms[0].leaf);
    return std::string("multiplied by ") + (s.exps[0].base2 ? "exp2(" : "exp(") + y + "_prev - " + y + ")";
  }
  return "multiplied by H(y)/H(y_prev)";
}

std::string hText(const Accumulator &acc) {
  const Separation &s = acc.separation;
  std::string h;
  for (const ExpFactor &e : s.exps)
    h += (h.empty() ? "" : "·") + std::string(e.base2 ? "exp2(" : "exp(") + linearText(e.terms) + ")";
  for (const DeferredFactor &d : s.running)
    h += (h.empty() ? "" : "·") + std::string(d.inverse ? "1/" : "") + describe(d.leaf);
  for (const DeferredFactor &d : s.deferred)
    h += (h.empty() ? "" : "·") + std::string(d.inverse ? "1/" : "") + describe(d.leaf);
  return h;
}

std::string loopNote(const ChainLoop &l) {
  std::ostringstream os;
  os << "loop at line " << l.loop->loc().line << ":";
  for (size_t i = 0; i < l.accumulators.size(); ++i) {
    const Accumulator &acc = l.accumulators[i];
    const Separation &s = acc.separation;
    std::string name = "`" + acc.name() + "`";
    if (acc.ranksWith >= 0) {
      const Block &body = *acc.combineOp->parentBlock();
      os << (i ? ";" : "") << " " << name << " follows the top-k order of `"
         << body.argument(acc.ranksWith + 1)->nameHint << "`";
      continue;
    }
    os << (i ? ";" : "") << " " << name << " ⊕= F with ⊕ = " << combinerSymbol(acc.combiner);
    if (!s.dependsOnEarlier()) {
      os << ", F(x) of the loaded data alone";
      continue;
    }
    if (s.centered) {
      std::string c = linearText({s.centered->centre});
      os << ", F = (A(x) - c)² with c = " << c << (s.centered->mask ? " on the lanes of a mask" : "")
         << ": each step merges the block's count, mean and centred sum of squares into running ones "
            "(Welford), and Σ F = M2 + N·(μ - "
         << c << ")² after the loop";
      continue;
    }
    if (!s.shifts.empty()) {
      os << ", F = G(x) + H(y) with H = " << linearText(s.shifts) << "; each step " << name << " is "
         << rescaleText(acc);
      continue;
    }
    os << ", F = G(x)·H(y) with H = " << hText(acc);
    if (!s.exps.empty())
      os << "; each step " << name << " is " << rescaleText(acc);
    for (const DeferredFactor &r : s.running) {
      std::string p = describe(r.leaf);
      os << (s.exps.empty() ? "; " : ", and ") << "F rounds the factor " << (r.inverse ? "1/" : "") << p
         << " to a narrow format (--fuse-quantized), so it keeps its running value and each step " << name
         << " is multiplied by " << (r.inverse ? p + "_prev/" + p : p + "/" + p + "_prev");
    }
    if (!s.deferred.empty())
      os << (s.exps.empty() ? "; " : ", and ") << "the factor"
         << (s.deferred.size() > 1 ? "s " : " ");
    for (size_t k = 0; k < s.deferred.size(); ++k)
      os << (k ? ", " : "") << (s.deferred[k].inverse ? "1/" : "") << describe(s.deferred[k].leaf);
    if (!s.deferred.empty())
      os << (s.deferred.size() > 1 ? " are" : " is") << " applied once after the loop";
  }
  return os.str();
}

/// The strategy and why it was chosen.
std::string strategyText(const SegmentPlan &plan) {
  if (plan.segments == 1)
    return "single segment: each program walks the whole range once; " + plan.why;
  std::string s = std::to_string(plan.segments);
  if (plan.cluster)
    return s + " segments: each program's range is split over a thread-block cluster of " + s +
           " programs, which exchange their partial states and each merge them all; " + plan.why;
  return s + " segments: each program's range is split over " + s +
         " programs, whose partial states the last to finish merges; " + plan.why;
}

/// The places of `loops` for a remark anchored in `anchor`'s file: "lines 5 and 9" when
/// all are in that file, else each with its file ("main.kiln:5 and lib.kiln:3"), since a
/// chain may run through a fn imported from another file.
std::string loopPlaces(const std::vector<const ChainLoop *> &loops, const Location &anchor,
                       DiagnosticEngine &diags) {
  bool oneFile = true;
  for (const ChainLoop *l : loops)
    oneFile &= l->loop->loc().file == anchor.file;
  std::ostringstream os;
  os << (oneFile ? "lines " : "");
  for (size_t i = 0; i < loops.size(); ++i) {
    const Location &at = loops[i]->loop->loc();
    os << (i == 0 ? "" : i + 1 == loops.size() ? " and " : ", ");
    if (!oneFile)
      os << diags.sourceManager().name(at.file) << ":";
    os << at.line;
  }
  return os.str();
}

} // namespace

void reportFusion(std::vector<ReductionChain> &chains, DiagnosticEngine &diags) {
  for (ReductionChain &chain : chains) {
    std::vector<const ChainLoop *> fused;
    for (const ChainLoop &l : chain.loops)
      if (l.fused)
        fused.push_back(&l);
    if (fused.size() >= 2) {
      const Location &anchor = fused.front()->loop->loc();
      auto r = diags.remark(anchor, DiagCode::FusionApplied);
      r << "fused the reduction loops at " << loopPlaces(fused, anchor, diags) << " into one pass ("
        << strategyText(chain.split) << ")";
      for (const ChainLoop *l : fused)
        r.note(l->loop->loc(), loopNote(*l));
    }
    for (const ChainLoop &l : chain.loops)
      if (!l.fused) {
        auto r = diags.remark(l.refusalLoc, DiagCode::FusionRefused);
        r << "the loop at line " << l.loop->loc().line << " is not fused: " << l.refusal;
        if (l.trailing && chain.split.cluster)
          r << ", which every program of the cluster runs on its own share with the merged results; when "
               "each share is one block, without a loop, each element read once";
        else if (l.trailing && chain.split.segments > 1)
          r << ", which the last segment of each program runs on the merged results";
        if (l.trailing && chain.onChipBlocks >= 1)
          r << "; when the range fits in one block, the whole chain runs as one iteration that reads each "
               "element once";
        if (l.trailing && chain.onChipBlocks >= 2)
          r << ", and up to " << chain.onChipBlocks << " blocks are held on chip the same way";
      }
  }
}

void reportSparsity(Kernel &kernel, std::vector<ReductionChain> &chains, DiagnosticEngine &diags) {
  walk(*kernel.body, [&](Op &op) {
    if (op.kind() != OpKind::For || !op.hasAttr("block_mask"))
      return;
    const std::string loop = "blocks(" + op.stringAttr("block_mask") + ", ...) loop: ";
    for (ReductionChain &chain : chains) {
      bool first = true;
      for (const ChainLoop &l : chain.loops) {
        if (!l.fused)
          continue;
        if (l.loop == &op && first && chain.fusedCount() >= 2) {
          diags.remark(op.loc(), DiagCode::SparsityMapping) << loop << chain.split.why;
          return;
        }
        if (l.loop == &op && !first) {
          diags.remark(op.loc(), DiagCode::SparsityMapping)
              << loop << "fused into the loop before it, and mapped with it";
          return;
        }
        first = false;
      }
    }
    diags.remark(op.loc(), DiagCode::SparsityMapping)
        << loop << "row-wise: it is not a fused reduction chain, so one program walks its block row";
  });
}

} // namespace kiln::ir
