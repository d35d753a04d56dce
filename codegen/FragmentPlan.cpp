//===- FragmentPlan.cpp - Values kept in tensor-core fragment order -------===//
//
// A forward walk over the kernel in program order: an op's form follows from its
// operands' forms (FragmentPlan.h lists the rules). A `for` loop's carried values start
// in the blocked layout; after each walk of the body, a carried value whose yielded
// value came out in a fragment form takes that form, and the body is walked again,
// until nothing changes (at most a few rounds: forms only ever go from none to one).
//
//===----------------------------------------------------------------------===//
#include "codegen/FragmentPlan.h"

namespace kiln::codegen {

using ir::OpKind;
using Kind = FragForm::Kind;

bool fragmentElementwise(OpKind k) {
  return ir::isElementwise(k) || k == OpKind::Cmp || k == OpKind::Select || k == OpKind::Cast;
}

/// Element types a fragment form may hold: at most 4 bytes, so that converting a tile
/// to the blocked layout fits the scratch of the dot whose tiling it has.
static bool fragmentType(const Type &t) { return !t.pointer && dtypeBytes(t.dtype) <= 4; }

/// [M] or [M, 1].
static bool rowVector(const Type &t, int64_t M) {
  return !t.pointer && ((t.shape.size() == 1 && t.shape[0] == M) ||
                        (t.shape.size() == 2 && t.shape[0] == M && t.shape[1] == 1));
}

static bool sixteenBitFloat(DType t) { return t == DType::BF16 || t == DType::F16; }

void FragmentPlan::compute(const ir::Block &body, const DotQuery &query,
                           const Recomputable &recomputable) {
  dotQuery = query;
  free = recomputable;
  collectUsers(body);
  analyzeBlock(body);
}

void FragmentPlan::collectUsers(const ir::Block &block) {
  for (const auto &op : block.ops()) {
    for (unsigned i = 0; i < op->numOperands(); ++i)
      users[op->operand(i)].push_back({op.get(), i});
    for (unsigned r = 0; r < op->numRegions(); ++r)
      collectUsers(*op->region(r));
  }
}

const FragForm &FragmentPlan::formOf(const ir::Value *v) const {
  static const FragForm none;
  auto it = forms.find(v);
  return it == forms.end() ? none : it->second;
}

void FragmentPlan::setForm(const ir::Value *v, const FragForm &f) {
  if (f.none())
    forms.erase(v);
  else
    forms[v] = f;
}

void FragmentPlan::markConsumed(const ir::Op &op, unsigned i) {
  std::vector<bool> &c = consumed[&op];
  c.resize(op.numOperands(), false);
  c[i] = true;
}

bool FragmentPlan::consumes(const ir::Op &user, unsigned i) const {
  // A row broadcast reads its operand's rows unless it is itself needed blocked.
  if (user.kind() == OpKind::Broadcast && formOf(user.result()).kind == Kind::RowBroadcast)
    return !needsBlocked(user.result());
  auto it = consumed.find(&user);
  return it != consumed.end() && i < it->second.size() && it->second[i];
}

bool FragmentPlan::needsBlocked(const ir::Value *v) const {
  if (formOf(v).none())
    return false;
  auto it = users.find(v);
  if (it != users.end())
    for (const auto &[user, i] : it->second)
      if (!consumes(*user, i))
        return true;
  return false;
}

bool FragmentPlan::lowersInFragments(const ir::Op &op) const {
  const OpKind k = op.kind();
  if (!fragmentElementwise(k) && k != OpKind::Reduce && k != OpKind::ExpandDims &&
      k != OpKind::Reshape && k != OpKind::Broadcast)
    return false;
  if (op.numResults() != 1)
    return false;
  const Kind form = formOf(op.result()).kind;
  return form == Kind::Tile || form == Kind::Rows || form == Kind::RowBroadcast;
}

const ir::Value *FragmentPlan::transposedB(const ir::Op &dot) const {
  auto it = transposed.find(&dot);
  return it == transposed.end() ? nullptr : it->second->operand(0);
}

bool FragmentPlan::elided(const ir::Op &op) const {
  if (op.kind() != OpKind::Permute)
    return false;
  auto it = users.find(op.result());
  if (it == users.end() || it->second.size() != 1)
    return false;
  auto t = transposed.find(it->second.front().first);
  return t != transposed.end() && t->second == &op;
}

void FragmentPlan::analyzeBlock(const ir::Block &block) {
  for (const auto &op : block.ops())
    analyzeOp(*op);
}

void FragmentPlan::analyzeOp(const ir::Op &op) {
  consumed.erase(&op);
  transposed.erase(&op);
  pulling.erase(&op);
  for (const auto &r : op.results())
    forms.erase(r.get());
  const OpKind k = op.kind();
  if (k == OpKind::For)
    return analyzeFor(op);
  if (k == OpKind::If)
    return analyzeIf(op);
  for (unsigned r = 0; r < op.numRegions(); ++r)
    analyzeBlock(*op.region(r));
  if (fragmentElementwise(k))
    analyzeElementwise(op);
  else if (k == OpKind::Dot)
    analyzeDot(op);
  else if (op.numResults() == 1 && op.numOperands() != 0)
    analyzeShapeOp(op);
  if (op.numResults() == 1 && formOf(op.result()).none())
    tryAOperand(op.result());
}

void FragmentPlan::analyzeDot(const ir::Op &op) {
  std::optional<DotFacts> facts = dotQuery(op);
  if (!facts)
    return;
  const ir::Value *a = op.operand(0), *b = op.operand(1), *out = op.result();
  FragForm tile{Kind::Tile, out->type.shape[0], out->type.shape[1], facts->tiling};
  setForm(out, tile);
  if (op.numOperands() > 2 && formOf(op.operand(2)) == tile)
    markConsumed(op, 2);
  // A's registers become its fragments when they hold whole rows, the same rows.
  const FragForm &fa = formOf(a);
  if (((fa.kind == Kind::Tile && fa.tiling.wn == 1) || fa.kind == Kind::AOperand) &&
      fa.sameRows(tile) && sixteenBitFloat(a->type.dtype))
    markConsumed(op, 0);
  // B = trans(x), read by this dot alone: stage x as K-major B.
  const ir::Op *perm = b->definingOp();
  auto it = users.find(b);
  if (facts->transposedBFits && perm && perm->kind() == OpKind::Permute &&
      perm->intsAttr("perm") == std::vector<int64_t>{1, 0} && formOf(perm->operand(0)).none() &&
      it != users.end() && it->second.size() == 1)
    transposed[&op] = perm;
}

/// True when a loop between `op` and `home` (the block where a value it reads is
/// defined) branches: has an `if` anywhere in its body, or any loop at all when the
/// lowering branches in every loop (`loopsBranch`: checked mode).
static bool branchInLoopsBetween(const ir::Op &op, const ir::Block *home, bool loopsBranch) {
  std::function<bool(const ir::Block &)> hasIf = [&](const ir::Block &b) {
    for (const auto &o : b.ops()) {
      if (o->kind() == OpKind::If)
        return true;
      for (unsigned r = 0; r < o->numRegions(); ++r)
        if (hasIf(*o->region(r)))
          return true;
    }
    return false;
  };
  for (const ir::Op *p = op.parentOp(); p; p = p->parentOp()) {
    if (p->kind() == OpKind::For && (loopsBranch || hasIf(*p->region(0))))
      return true;
    if (p->parentBlock() == home)
      break;
  }
  return false;
}

void FragmentPlan::tryAOperand(const ir::Value *v) {
  const Type &t = v->type;
  if (!sixteenBitFloat(t.dtype) || t.pointer || t.shape.size() != 2 || t.shape[1] % 16 != 0)
    return;
  auto it = users.find(v);
  if (it == users.end())
    return;
  const ir::Block *home = v->isBlockArgument() ? v->ownerBlock() : v->definingOp()->parentBlock();
  std::optional<FragForm> form;
  for (const auto &[user, i] : it->second) {
    if (user->kind() != OpKind::Dot || i != 0 || user->parentBlock() == home)
      return;
    std::optional<DotFacts> facts = dotQuery(*user);
    if (!facts)
      return;
    // ptxas (CUDA 13.0, sm_90a) miscompiles a wgmma's register A operand held across
    // the iterations of a loop whose body branches: it gives those registers to values
    // of the loop (the next iteration's A fragments, loads) and never restores them, so
    // the second iteration multiplies garbage (seen in the SASS of sparse attention's
    // loop with its full-block version). Such a value is staged in shared memory. In
    // checked mode every loop with an access branches: there a Q held across the key
    // loop of an attention gave wrong results on the H200 (64 x 128 blocks).
    if (facts->wgmma && branchInLoopsBetween(*user, home, facts->loopsBranch))
      return;
    FragForm f{Kind::AOperand, t.shape[0], t.shape[1], facts->tiling};
    if (form && !(*form == f))
      return;
    form = f;
  }
  setForm(v, *form);
}

void FragmentPlan::analyzeShapeOp(const ir::Op &op) {
  const OpKind k = op.kind();
  const ir::Value *in = op.operand(0), *out = op.result();
  const FragForm &f = formOf(in);
  switch (k) {
  case OpKind::Reduce: {
    const std::string &kind = op.stringAttr("kind");
    if (f.kind != Kind::Tile || f.tiling.wn != 1 || op.numRegions() != 0 ||
        in->type.dtype != DType::F32 ||
        in->type.shape.size() != 2 || op.intAttr("axis") != 1 || !fragmentType(out->type) ||
        (kind != "sum" && kind != "max" && kind != "min" && kind != "prod"))
      return;
    setForm(out, FragForm{Kind::Rows, f.M, f.N, f.tiling});
    return markConsumed(op, 0);
  }
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    if (f.kind != Kind::Rows || !rowVector(out->type, f.M))
      return;
    setForm(out, f);
    return markConsumed(op, 0);
  case OpKind::Broadcast:
    if (f.kind != Kind::Rows || in->type.shape.size() != 2 || out->type.shape.size() != 2 ||
        out->type.shape[0] != f.M)
      return;
    setForm(out, FragForm{Kind::RowBroadcast, f.M, out->type.shape[1], f.tiling});
    return;
  default:
    return;
  }
}

void FragmentPlan::analyzeElementwise(const ir::Op &op) {
  const ir::Value *out = op.result();
  if (!fragmentType(out->type))
    return;
  const FragForm *tile = nullptr, *rows = nullptr;
  for (const ir::Value *o : op.operands()) {
    const FragForm &f = formOf(o);
    const FragForm *&seen = f.kind == Kind::Rows ? rows : tile;
    if (!f.holdsRegisters())
      continue;
    if (seen && !(*seen == f))
      return; // two different tilings
    seen = &f;
  }
  if (tile && !rows) {
    const FragForm form = *tile;
    for (const ir::Value *o : op.operands()) {
      const FragForm &f = formOf(o);
      const bool ok = f.kind == Kind::Tile ||
                      (f.kind == Kind::RowBroadcast && f.sameRows(form) && f.N == form.N) ||
                      (f.none() && free(o));
      if (!ok)
        return;
    }
    setForm(out, form);
  } else if (rows && !tile) {
    const FragForm form = *rows;
    bool pulls = false;
    for (const ir::Value *o : op.operands()) {
      const FragForm &f = formOf(o);
      // A small blocked row vector is converted where it is read.
      if (!(f.kind == Kind::Rows || (f.none() && (free(o) || rowVector(o->type, form.M)))))
        return;
      pulls = pulls || (f.none() && !free(o));
    }
    setForm(out, form);
    if (pulls)
      pulling.insert(&op);
  } else {
    return;
  }
  for (unsigned i = 0; i < op.numOperands(); ++i)
    if (!formOf(op.operand(i)).none())
      markConsumed(op, i);
}

void FragmentPlan::analyzeIf(const ir::Op &op) {
  analyzeBlock(*op.region(0));
  analyzeBlock(*op.region(1));
  const ir::Op *yields[2] = {op.region(0)->terminator(), op.region(1)->terminator()};
  for (unsigned j = 0; j < op.numResults(); ++j) {
    if (!fragmentType(op.result(j)->type))
      continue;
    // The form one branch yields; the other converts into it if it yields another.
    FragForm form;
    for (const ir::Op *y : yields) {
      const FragForm &f = formOf(y->operand(j));
      if (form.none() && f.holdsRegisters() && f.numRegs() > 0 && f.kind != Kind::AOperand)
        form = f;
    }
    if (form.none())
      continue;
    setForm(op.result(j), form);
    for (const ir::Op *y : yields)
      if (formOf(y->operand(j)) == form)
        markConsumed(*y, j);
  }
}

void FragmentPlan::analyzeFor(const ir::Op &op) {
  const ir::Block &body = *op.region(0);
  const ir::Op *yield = body.terminator();
  const unsigned n = op.numResults();
  std::vector<FragForm> carried(n);
  auto walkBody = [&] {
    for (unsigned j = 0; j < n; ++j)
      setForm(body.argument(1 + j), carried[j]);
    analyzeBlock(body);
  };
  constexpr int kMaxRounds = 4;
  bool converged = false;
  for (int round = 0; round < kMaxRounds && !converged; ++round) {
    walkBody();
    std::vector<FragForm> next(n);
    for (unsigned j = 0; j < n; ++j) {
      const FragForm &f = formOf(yield->operand(j));
      if (f.holdsRegisters() && f.numRegs() > 0 && fragmentType(op.result(j)->type))
        next[j] = f;
    }
    converged = next == carried;
    carried = std::move(next);
  }
  if (!converged) {
    carried.assign(n, FragForm{});
    walkBody();
  }
  for (unsigned j = 0; j < n; ++j) {
    setForm(op.result(j), carried[j]);
    if (carried[j].none())
      continue;
    if (formOf(yield->operand(j)) == carried[j])
      markConsumed(*yield, j);
    if (formOf(op.operand(3 + j)) == carried[j])
      markConsumed(op, 3 + j);
  }
}

} // namespace kiln::codegen
