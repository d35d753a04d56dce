//===- TaskFootprints.cpp - The elements each program of a kernel touches --===//
#include "ir/TaskFootprints.h"

#include "ir/Provenance.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>

namespace kiln::ir {

//===----------------------------------------------------------------------===//
// Polynomials
//===----------------------------------------------------------------------===//

FootprintPoly FootprintPoly::constant(int64_t c) {
  FootprintPoly p;
  if (c != 0)
    p.terms[{}] = c;
  return p;
}

FootprintPoly FootprintPoly::symbol(FootprintSymbol s) {
  FootprintPoly p;
  p.terms[{s}] = 1;
  return p;
}

bool FootprintPoly::isConstant() const { return terms.empty() || (terms.size() == 1 && terms.begin()->first.empty()); }

std::optional<int64_t> FootprintPoly::constantValue() const {
  if (terms.empty())
    return 0;
  if (isConstant())
    return terms.begin()->second;
  return std::nullopt;
}

bool FootprintPoly::nonNegative() const {
  for (const auto &[m, c] : terms)
    if (c < 0)
      return false;
  return true;
}

unsigned FootprintPoly::degree() const {
  unsigned d = 0;
  for (const auto &[m, c] : terms)
    d = std::max<unsigned>(d, static_cast<unsigned>(m.size()));
  return d;
}

int64_t FootprintPoly::evaluate(const std::array<int64_t, 3> &pid, const std::vector<int64_t> &params) const {
  int64_t sum = 0;
  for (const auto &[m, c] : terms) {
    int64_t v = c;
    for (const FootprintSymbol &s : m)
      v *= s.kind == FootprintSymbol::Kind::Pid ? pid[s.index] : params.at(s.index);
    sum += v;
  }
  return sum;
}

std::string FootprintPoly::str(const Kernel &kernel) const {
  if (terms.empty())
    return "0";
  std::ostringstream os;
  bool first = true;
  // Highest degree first, the constant last.
  for (unsigned d = degree() + 1; d-- > 0;)
    for (const auto &[m, c] : terms) {
      if (m.size() != d)
        continue;
      const int64_t magnitude = c < 0 ? -c : c;
      os << (first ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + "));
      first = false;
      if (m.empty() || magnitude != 1)
        os << magnitude << (m.empty() ? "" : "·");
      for (size_t i = 0; i < m.size(); ++i) {
        const FootprintSymbol &s = m[i];
        os << (i ? "·" : "")
           << (s.kind == FootprintSymbol::Kind::Pid ? std::string("pid.") + "xyz"[s.index]
                                                     : kernel.params()[s.index]->nameHint);
      }
    }
  return os.str();
}

namespace {

using Poly = FootprintPoly;
using Range = FootprintRange;
constexpr unsigned kMaxDegree = 2;

Poly add(const Poly &a, const Poly &b, int64_t sign = 1) {
  Poly out = a;
  for (const auto &[m, c] : b.terms) {
    int64_t &t = out.terms[m];
    t += sign * c;
    if (t == 0)
      out.terms.erase(m);
  }
  return out;
}

Poly scale(const Poly &a, int64_t k) {
  Poly out;
  if (k == 0)
    return out;
  for (const auto &[m, c] : a.terms)
    out.terms[m] = c * k;
  return out;
}

std::optional<Poly> multiply(const Poly &a, const Poly &b) {
  if (a.degree() + b.degree() > kMaxDegree)
    return std::nullopt;
  Poly out;
  for (const auto &[ma, ca] : a.terms)
    for (const auto &[mb, cb] : b.terms) {
      std::vector<FootprintSymbol> m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t &t = out.terms[m];
      t += ca * cb;
      if (t == 0)
        out.terms.erase(m);
    }
  return out;
}

Range point(const Poly &p) { return Range{p, p}; }

class Analysis {
public:
  explicit Analysis(const Kernel &kernel) : kernel_(kernel), provenance_(kernel) {}

  std::vector<TaskFootprint> run() {
    std::vector<TaskFootprint> out;
    std::function<void(const Block &)> visit = [&](const Block &b) {
      for (const auto &op : b.ops()) {
        bool reads = false, writes = false;
        switch (op->kind()) {
        case OpKind::Load:
        case OpKind::BlockElements: reads = true; break;
        case OpKind::Store: writes = true; break;
        case OpKind::AtomicRMW:
        case OpKind::AtomicCas: reads = writes = true; break;
        default: break;
        }
        if (reads || writes)
          record(*op, reads, writes, out);
        for (const auto &r : op->regions())
          visit(*r);
      }
    };
    visit(*kernel_.body);
    return out;
  }

private:
  void record(const Op &op, bool reads, bool writes, std::vector<TaskFootprint> &out) {
    const Value *ptr = op.operand(0);
    // A block's bitmap is read at an offset its slot operand gives, not at the pointer.
    std::optional<std::pair<unsigned, Range>> known =
        op.kind() == OpKind::BlockElements ? std::nullopt : pointer(ptr);
    if (known) {
      out.push_back(TaskFootprint{&op, known->first, reads, writes, known->second});
      return;
    }
    const BaseSet bases = provenance_.bases(ptr);
    const auto &params = kernel_.params();
    for (unsigned i = 0; i < params.size(); ++i)
      if (params[i]->type.pointer && (bases == kAnyBase || (i < 63 && (bases >> i) & 1)))
        out.push_back(TaskFootprint{&op, i, reads, writes, std::nullopt});
  }

  /// The parameter a pointer is an offset of, and the offsets.
  std::optional<std::pair<unsigned, Range>> pointer(const Value *v) {
    if (auto it = pointers_.find(v); it != pointers_.end())
      return it->second;
    std::optional<std::pair<unsigned, Range>> r;
    if (const Op *def = v->definingOp()) {
      switch (def->kind()) {
      case OpKind::PtrAdd: {
        std::optional<std::pair<unsigned, Range>> base = pointer(def->operand(0));
        std::optional<Range> offset = integer(def->operand(1));
        if (base && offset)
          r = std::pair{base->first, Range{add(base->second.lo, offset->lo), add(base->second.hi, offset->hi)}};
        break;
      }
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Permute: r = pointer(def->operand(0)); break;
      default: break;
      }
    } else if (v->ownerBlock() == kernel_.body.get()) {
      r = std::pair{v->index(), point(Poly{})};
    }
    pointers_[v] = r;
    return r;
  }

  /// The range of an integer value (every element of a tile).
  std::optional<Range> integer(const Value *v) {
    if (auto it = integers_.find(v); it != integers_.end())
      return it->second;
    std::optional<Range> r = compute(v);
    integers_[v] = r;
    return r;
  }

  std::optional<Range> compute(const Value *v) {
    if (v->type.pointer || isFloat(v->type.dtype))
      return std::nullopt;
    const Op *def = v->definingOp();
    if (!def) {
      const Block *block = v->ownerBlock();
      if (block == kernel_.body.get())
        return point(Poly::symbol({FootprintSymbol::Kind::Param, v->index()}));
      // The induction variable of a loop with a positive constant step: [lb, ub - 1].
      const Op *loop = block ? block->parentOp() : nullptr;
      if (loop && loop->kind() == OpKind::For && v->index() == 0) {
        std::optional<int64_t> step = integerConstant(loop->operand(2));
        std::optional<Range> lb = integer(loop->operand(0)), ub = integer(loop->operand(1));
        if (step && *step > 0 && lb && ub)
          return Range{lb->lo, add(ub->hi, Poly::constant(-1))};
      }
      return std::nullopt;
    }
    auto operand = [&](unsigned i) { return integer(def->operand(i)); };
    switch (def->kind()) {
    case OpKind::Constant: {
      if (const auto *i = std::get_if<int64_t>(&def->attrs().at("value")))
        return point(Poly::constant(*i));
      return std::nullopt;
    }
    case OpKind::ProgramId:
      return point(Poly::symbol({FootprintSymbol::Kind::Pid, static_cast<unsigned>(def->intAttr("axis"))}));
    case OpKind::Arange:
      return Range{Poly::constant(def->intAttr("start")), Poly::constant(def->intAttr("end") - 1)};
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Permute:
    case OpKind::Cast:
      return operand(0);
    case OpKind::Add: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b)
        return std::nullopt;
      return Range{add(a->lo, b->lo), add(a->hi, b->hi)};
    }
    case OpKind::Sub: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b)
        return std::nullopt;
      return Range{add(a->lo, b->hi, -1), add(a->hi, b->lo, -1)};
    }
    case OpKind::Neg: {
      std::optional<Range> a = operand(0);
      if (!a)
        return std::nullopt;
      return Range{scale(a->hi, -1), scale(a->lo, -1)};
    }
    case OpKind::Mul: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b)
        return std::nullopt;
      // A constant factor scales (and, negative, swaps) the bounds.
      for (int side = 0; side < 2; ++side) {
        const Range &c = side ? *b : *a, &x = side ? *a : *b;
        if (c.lo == c.hi && c.lo.isConstant()) {
          const int64_t k = *c.lo.constantValue();
          return k >= 0 ? Range{scale(x.lo, k), scale(x.hi, k)} : Range{scale(x.hi, k), scale(x.lo, k)};
        }
      }
      // Where every bound is non-negative, the product is monotone in each factor.
      if (!a->lo.nonNegative() || !b->lo.nonNegative() || !a->hi.nonNegative() || !b->hi.nonNegative())
        return std::nullopt;
      std::optional<Poly> lo = multiply(a->lo, b->lo), hi = multiply(a->hi, b->hi);
      if (!lo || !hi)
        return std::nullopt;
      return Range{*lo, *hi};
    }
    case OpKind::Rem: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b || !(b->lo == b->hi) || !b->lo.constantValue() || *b->lo.constantValue() <= 0 ||
          !a->lo.nonNegative())
        return std::nullopt;
      return Range{Poly{}, Poly::constant(*b->lo.constantValue() - 1)};
    }
    case OpKind::Div: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b || !(b->lo == b->hi) || !b->lo.constantValue() || *b->lo.constantValue() <= 0 ||
          !a->lo.nonNegative())
        return std::nullopt;
      const int64_t d = *b->lo.constantValue();
      // With every coefficient and symbol non-negative, the quotient floor((Σ c·m + c0)
      // / d) lies between Σ floor(c / d)·m and Σ ceil(c / d)·m, plus floor(c0 / d) (the
      // sum of the ceilings is an integer): exact where d divides each c.
      auto divide = [&](const Poly &p, bool up) {
        Poly out;
        for (const auto &[m, c] : p.terms) {
          const int64_t q = c / d + (up && !m.empty() && c % d != 0 ? 1 : 0);
          if (q != 0)
            out.terms[m] = q;
        }
        return out;
      };
      if (!a->hi.nonNegative())
        return std::nullopt;
      return Range{divide(a->lo, false), divide(a->hi, true)};
    }
    case OpKind::Minimum:
    case OpKind::Maximum: {
      std::optional<Range> a = operand(0), b = operand(1);
      if (!a || !b)
        return std::nullopt;
      // x <= y where y - x has no negative coefficient (symbols are non-negative).
      auto atMost = [](const Poly &x, const Poly &y) { return add(y, x, -1).nonNegative(); };
      // The smaller and the larger of x and y, where one is provably so.
      auto ordered = [&](const Poly &x, const Poly &y) -> std::optional<std::pair<Poly, Poly>> {
        if (atMost(x, y))
          return std::pair{x, y};
        if (atMost(y, x))
          return std::pair{y, x};
        return std::nullopt;
      };
      const auto lows = ordered(a->lo, b->lo), highs = ordered(a->hi, b->hi);
      // min(a, b) is at most either operand's upper bound and at least the smaller
      // lower bound; max the other way round.
      if (def->kind() == OpKind::Minimum)
        return lows ? std::optional(Range{lows->first, highs ? highs->first : a->hi}) : std::nullopt;
      return highs ? std::optional(Range{lows ? lows->second : a->lo, highs->second}) : std::nullopt;
    }
    default:
      return std::nullopt;
    }
  }

  const Kernel &kernel_;
  PointerProvenance provenance_;
  std::unordered_map<const Value *, std::optional<Range>> integers_;
  std::unordered_map<const Value *, std::optional<std::pair<unsigned, Range>>> pointers_;
};

} // namespace

std::vector<TaskFootprint> analyzeTaskFootprints(const Kernel &kernel) { return Analysis(kernel).run(); }

} // namespace kiln::ir
