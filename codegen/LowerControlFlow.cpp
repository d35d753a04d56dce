//===- LowerControlFlow.cpp - for, if and while ---------------------------===//
//
// Structured control flow becomes basic blocks with one phi per register of every
// carried value. Conditions and loop bounds are scalars, which every thread holds with
// the same value, so all threads of a program take the same path and barriers inside
// loops and branches are safe.
//
// A `for` loop ends like the interpreter's: while iv < ub (step > 0) or iv > ub
// (step < 0), and also when the next iv would overflow its type (the interpreter counts
// in 128 bits, so such a loop ends there too). A step of 0, an error in the
// interpreter, runs no iteration on the GPU.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "codegen/Wgmma.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <tuple>

namespace kiln::codegen::detail {

/// Phis in the current block for every register of `types`' values, fed from `from`.
static std::vector<std::vector<llvm::PHINode *>>
makePhis(Lowering &L, const std::vector<const Regs *> &init, llvm::BasicBlock *from) {
  std::vector<std::vector<llvm::PHINode *>> phis;
  for (const Regs *r : init) {
    std::vector<llvm::PHINode *> row;
    for (llvm::Value *v : r->v) {
      llvm::PHINode *p = L.b.CreatePHI(v->getType(), 2);
      p->addIncoming(v, from);
      row.push_back(p);
    }
    phis.push_back(std::move(row));
  }
  return phis;
}

static Regs regsOf(const std::vector<llvm::PHINode *> &row) {
  Regs r;
  r.v.assign(row.begin(), row.end());
  return r;
}

/// Lowers the ops of `block` up to its terminator, which it returns. Loads that a
/// pipelined dot streams with cp.async instead are left out.
static const ir::Op *lowerUntilTerminator(Lowering &L, const ir::Block &block) {
  for (const auto &op : block.ops()) {
    if (op->kind() == OpKind::Yield || op->kind() == OpKind::Condition)
      return op.get();
    if (L.pipeline.loop && L.pipeline.copies(op.get()))
      continue;
    L.lowerOp(*op);
  }
  KILN_ICE("codegen: region without terminator");
}

void Lowering::lowerFor(const ir::Op &op) {
  const ir::Block &body = *op.region(0);
  const Type &bt = op.operand(0)->type;
  const bool sgn = isSigned(bt.dtype);
  llvm::Value *lb = get(op.operand(0)).v[0];
  llvm::Value *ub = get(op.operand(1)).v[0];
  llvm::Value *step = get(op.operand(2)).v[0];
  // Values the fragment plan carries in a fragment form (a tensor-core accumulator, a
  // flash-attention row max) enter the loop in that form and stay in it.
  const size_t numCarried = op.numOperands() - 3;
  // Operand `i` of `user` (the loop, for an initial value; its yield) in form `f`.
  auto carriedFragments = [&](const ir::Op &user, unsigned i, const FragForm &f) {
    return fragPlan.consumes(user, i) ? getFrag(user.operand(i)) : blockedToFragments(user.operand(i), f);
  };
  std::vector<FragForm> forms(numCarried);
  std::vector<Regs> fragInits(numCarried);
  std::vector<const Regs *> inits;
  for (unsigned j = 0; j < numCarried; ++j) {
    const ir::Value *init = op.operand(3 + j);
    forms[j] = fragPlan.formOf(body.argument(1 + j));
    if (forms[j].none()) {
      inits.push_back(&get(init));
      continue;
    }
    fragInits[j] = carriedFragments(op, 3 + j, forms[j]);
    inits.push_back(&fragInits[j]);
  }
  // The dots of the body may stream their operands (cp.async).
  const MmaPipeline pipe = mmaPipelineFor(op);

  // Accesses of one iteration follow those of the previous one; shared memory read in
  // the previous iteration must be released before the body writes it again.
  addOutstanding(body);
  arenaInUse = ArenaUse::whole();

  llvm::Type *ity = lb->getType();
  llvm::Value *zero = llvm::ConstantInt::get(ity, 0);
  llvm::Value *up = sgn ? b.CreateICmpSGT(step, zero) : b.CreateICmpNE(step, zero);
  llvm::Value *down = sgn ? b.CreateICmpSLT(step, zero) : b.getFalse();

  // Whether the iteration `ahead` steps after `at` runs (the loop's own test, in 64
  // bits so that it cannot wrap), and its iv.
  auto widen = [&](llvm::Value *v) {
    return sgn ? b.CreateSExt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
  };
  auto ahead = [&](llvm::Value *at, int64_t n) {
    llvm::Value *t = b.CreateAdd(widen(at), b.CreateMul(widen(step), i64(n)));
    llvm::Value *runs = b.CreateOr(b.CreateAnd(up, b.CreateICmpSLT(t, widen(ub))),
                                   b.CreateAnd(down, b.CreateICmpSGT(t, widen(ub))));
    return std::make_pair(b.CreateTrunc(t, ity), runs);
  };
  if (pipe.loop) {
    // Prologue: the operands staged once, then the copies of the first `distance`
    // iterations. The first product's wait and barrier make both visible; a published
    // ring makes the staged operands visible here and publishes the first buffer.
    beginSharedUse();
    stageResidentOperands(pipe);
    if (pipe.published) {
      fenceForWgmma(*this);
      initRingBarriers(pipe);
    }
    for (int64_t s = 0; s < pipe.distance; ++s) {
      auto [ivS, runs] = ahead(lb, s);
      issueMmaStage(pipe, ivS, i32(s), runs);
    }
    if (pipe.published)
      publishBuffer(pipe, i32(0), pipe.distance - 1);
  }

  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx, "for.head", fn);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx, "for.body", fn);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx, "for.exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *iv = b.CreatePHI(ity, 2, "iv");
  iv->addIncoming(lb, pre);
  auto phis = makePhis(*this, inits, pre);
  llvm::PHINode *stage = nullptr; // the pipeline buffer this iteration reads
  llvm::PHINode *phase = nullptr; // the parity of its mbarrier's phase (published ring)
  if (pipe.loop) {
    stage = b.CreatePHI(b.getInt32Ty(), 2, "stage");
    stage->addIncoming(i32(0), pre);
    phase = b.CreatePHI(b.getInt32Ty(), 2, "phase");
    phase->addIncoming(i32(0), pre);
  }
  llvm::Value *below = sgn ? b.CreateICmpSLT(iv, ub) : b.CreateICmpULT(iv, ub);
  llvm::Value *above = sgn ? b.CreateICmpSGT(iv, ub) : b.CreateICmpUGT(iv, ub);
  llvm::Value *go = b.CreateOr(b.CreateAnd(up, below), b.CreateAnd(down, above));
  b.CreateCondBr(go, bodyBB, exit);

  b.SetInsertPoint(bodyBB);
  vals[body.argument(0)] = Regs{{iv}};
  for (size_t j = 0; j < phis.size(); ++j)
    (forms[j].none() ? vals : frags)[body.argument(static_cast<unsigned>(1 + j))] = regsOf(phis[j]);
  const MmaPipeline outer = pipeline;
  if (pipe.loop) {
    pipeline = pipe;
    pipeline.stage = stage;
    pipeline.phase = phase;
    std::tie(pipeline.ivAhead, pipeline.condAhead) = ahead(iv, pipe.distance);
  }
  for (size_t j = 0; j < numCarried; ++j) {
    const ir::Value *arg = body.argument(static_cast<unsigned>(1 + j));
    if (fragPlan.needsBlocked(arg))
      set(arg, fragmentsToBlocked(arg));
  }
  const ir::Op *yield = lowerUntilTerminator(*this, body);
  pipeline = outer;
  std::vector<Regs> next;
  for (unsigned j = 0; j < numCarried; ++j) {
    if (forms[j].none())
      next.push_back(get(yield->operand(j)));
    else
      next.push_back(carriedFragments(*yield, j, forms[j]));
  }
  // The next iv, unless it would wrap around its type.
  llvm::Value *ivNext = b.CreateAdd(iv, step);
  llvm::Value *wrapped;
  if (sgn)
    wrapped = b.CreateSelect(up, b.CreateICmpSLT(ivNext, iv), b.CreateICmpSGT(ivNext, iv));
  else
    wrapped = b.CreateICmpULT(ivNext, iv);
  llvm::Value *stageNext = nullptr, *phaseNext = nullptr;
  if (stage) {
    llvm::Value *inc = b.CreateAdd(stage, i32(1));
    llvm::Value *wraps = b.CreateICmpEQ(inc, i32(pipe.stages));
    stageNext = b.CreateSelect(wraps, i32(0), inc);
    phaseNext = b.CreateSelect(wraps, b.CreateXor(phase, i32(1)), phase);
  }
  llvm::BasicBlock *latch = b.GetInsertBlock();
  b.CreateCondBr(wrapped, exit, header);
  iv->addIncoming(ivNext, latch);
  if (stage) {
    stage->addIncoming(stageNext, latch);
    phase->addIncoming(phaseNext, latch);
  }
  for (size_t j = 0; j < phis.size(); ++j)
    for (size_t r = 0; r < phis[j].size(); ++r)
      phis[j][r]->addIncoming(next[j].v[r], latch);

  b.SetInsertPoint(exit);
  for (size_t j = 0; j < phis.size(); ++j) {
    Regs out;
    for (size_t r = 0; r < phis[j].size(); ++r) {
      llvm::PHINode *p = b.CreatePHI(phis[j][r]->getType(), 2);
      p->addIncoming(phis[j][r], header);
      p->addIncoming(next[j].v[r], latch);
      out.v.push_back(p);
    }
    const ir::Value *result = op.result(static_cast<unsigned>(j));
    if (forms[j].none())
      set(result, std::move(out));
    else
      frags[result] = std::move(out); // lowerOp converts it if some reader needs that
  }
  if (pipe.loop) // copies for iterations that never ran were not issued; none is left
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, llvm::ArrayRef<llvm::Type *>{},
                      llvm::ArrayRef<llvm::Value *>{});
  if (pipe.published)
    releaseRingBarriers(pipe);
  addOutstanding(body);
  arenaInUse = ArenaUse::whole();
}

void Lowering::lowerIf(const ir::Op &op) {
  llvm::Value *cond = get(op.operand(0)).v[0];
  llvm::BasicBlock *thenBB = llvm::BasicBlock::Create(ctx, "if.then", fn);
  llvm::BasicBlock *elseBB = llvm::BasicBlock::Create(ctx, "if.else", fn);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx, "if.join", fn);
  b.CreateCondBr(cond, thenBB, elseBB);

  // Each branch starts from the state before the if; the join merges conservatively.
  const std::vector<MemAccess> before = outstanding;
  const ArenaUse inUseBefore = arenaInUse;
  std::vector<Regs> results[2];
  llvm::BasicBlock *ends[2];
  std::vector<MemAccess> after;
  ArenaUse inUseAfter;
  llvm::BasicBlock *blocks[2] = {thenBB, elseBB};
  for (unsigned r = 0; r < 2; ++r) {
    outstanding = before;
    arenaInUse = inUseBefore;
    b.SetInsertPoint(blocks[r]);
    const ir::Op *yield = lowerUntilTerminator(*this, *op.region(r));
    for (unsigned j = 0; j < yield->numOperands(); ++j) {
      // A result in fragment form (FragmentPlan::analyzeIf) leaves both branches in it.
      const FragForm &f = fragPlan.formOf(op.result(j));
      if (f.none())
        results[r].push_back(get(yield->operand(j)));
      else
        results[r].push_back(fragPlan.consumes(*yield, j) ? getFrag(yield->operand(j))
                                                          : blockedToFragments(yield->operand(j), f));
    }
    ends[r] = b.GetInsertBlock();
    b.CreateBr(join);
    after.insert(after.end(), outstanding.begin(), outstanding.end());
    inUseAfter.add(arenaInUse);
  }
  outstanding = std::move(after);
  arenaInUse = inUseAfter;

  b.SetInsertPoint(join);
  for (unsigned j = 0; j < op.numResults(); ++j) {
    Regs out;
    for (size_t k = 0; k < results[0][j].v.size(); ++k) {
      llvm::PHINode *p = b.CreatePHI(results[0][j].v[k]->getType(), 2);
      p->addIncoming(results[0][j].v[k], ends[0]);
      p->addIncoming(results[1][j].v[k], ends[1]);
      out.v.push_back(p);
    }
    if (fragPlan.formOf(op.result(j)).none())
      set(op.result(j), std::move(out));
    else
      frags[op.result(j)] = std::move(out); // lowerOp converts it if some reader needs that
  }
}

void Lowering::lowerWhile(const ir::Op &op) {
  const ir::Block &before = *op.region(0), &after = *op.region(1);
  std::vector<const Regs *> inits;
  for (const ir::Value *v : op.operands())
    inits.push_back(&get(v));
  addOutstanding(before);
  addOutstanding(after);
  arenaInUse = ArenaUse::whole();

  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx, "while.before", fn);
  llvm::BasicBlock *afterBB = llvm::BasicBlock::Create(ctx, "while.after", fn);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx, "while.exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  auto phis = makePhis(*this, inits, pre);
  for (size_t j = 0; j < phis.size(); ++j)
    vals[before.argument(static_cast<unsigned>(j))] = regsOf(phis[j]);
  const ir::Op *cond = lowerUntilTerminator(*this, before);
  b.CreateCondBr(get(cond->operand(0)).v[0], afterBB, exit);

  b.SetInsertPoint(afterBB);
  for (size_t j = 0; j < phis.size(); ++j)
    vals[after.argument(static_cast<unsigned>(j))] = regsOf(phis[j]);
  const ir::Op *yield = lowerUntilTerminator(*this, after);
  llvm::BasicBlock *latch = b.GetInsertBlock();
  for (size_t j = 0; j < phis.size(); ++j) {
    const Regs &y = get(yield->operand(static_cast<unsigned>(j)));
    for (size_t r = 0; r < phis[j].size(); ++r)
      phis[j][r]->addIncoming(y.v[r], latch);
  }
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t j = 0; j < phis.size(); ++j)
    set(op.result(static_cast<unsigned>(j)), regsOf(phis[j]));
  addOutstanding(before);
  addOutstanding(after);
  arenaInUse = ArenaUse::whole();
}

} // namespace kiln::codegen::detail
