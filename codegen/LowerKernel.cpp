//===- LowerKernel.cpp - The kernel function, dispatch and helpers --------===//
//
// Builds the LLVM function of a kernel: parameters in signature order (pointers as
// global pointers, scalars at their natural size with bool, f16, bf16 and f8 passed as
// their raw bits), the thread index, the shared-memory arena, and then the body op by
// op. Also the helpers every lowering file uses: registers and element indices,
// guarded blocks and counted loops, and the shared-memory primitives.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/MDBuilder.h>

namespace kiln::codegen::detail {

/// What the caller guarantees about the arguments, for the axis analysis.
static AxisOptions axisOptions(const ir::Kernel &kernel, const CodegenOptions &options) {
  AxisOptions a;
  a.pointerAlignment = options.assumeAlignedPointers ? 16 : 1;
  a.paramDivisibility.assign(kernel.params().size(), 0);
  for (const auto &[index, divisor] : effectiveDivisibility(kernel, options))
    if (index < a.paramDivisibility.size())
      a.paramDivisibility[index] = divisor;
  return a;
}

Lowering::Lowering(Target target, const ir::Kernel &kernel, llvm::Module &module,
                   DiagnosticEngine &diags, const CodegenOptions &options)
    : target(target), nvptx(isNvptxTarget(target)), kernel(kernel), mod(module),
      ctx(module.getContext()), b(module.getContext()), diags(diags), opts(options),
      T(kernel.numWarps * 32), maxVec(chunkLimit(kernel)),
      axis(kernel, axisOptions(kernel, options)), prov(kernel) {}

void Lowering::unsupported(const ir::Op &op, const std::string &what) {
  diags.error(op.loc(), DiagCode::Unsupported)
      << "code generation for " << targetName(target) << " does not support " << what;
  throw LoweringFailed{};
}

//===--------------------------------------------------------------------===//
// Types
//===--------------------------------------------------------------------===//

llvm::PointerType *Lowering::globalPtrType() { return llvm::PointerType::get(ctx, 1); }

llvm::Type *Lowering::regTypeOf(DType t) {
  switch (t) {
  case DType::Bool:
    return b.getInt1Ty();
  case DType::I8:
  case DType::U8:
    return b.getInt8Ty();
  case DType::I16:
  case DType::U16:
    return b.getInt16Ty();
  case DType::I32:
  case DType::U32:
    return b.getInt32Ty();
  case DType::I64:
  case DType::U64:
    return b.getInt64Ty();
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
    return b.getFloatTy();
  case DType::F64:
    return b.getDoubleTy();
  }
  return b.getInt32Ty();
}

llvm::Type *Lowering::regType(const Type &t) {
  return t.pointer ? static_cast<llvm::Type *>(globalPtrType()) : regTypeOf(t.dtype);
}

llvm::Type *Lowering::memType(const Type &t) {
  if (t.pointer)
    return globalPtrType();
  switch (t.dtype) {
  case DType::Bool:
  case DType::F8E4M3:
  case DType::F8E5M2:
    return b.getInt8Ty();
  case DType::F16:
  case DType::BF16:
    return b.getInt16Ty();
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::U32:
  case DType::I64:
  case DType::U64:
  case DType::F32:
  case DType::F64:
    return regTypeOf(t.dtype);
  }
  return regTypeOf(t.dtype);
}

llvm::Type *Lowering::sharedType(const Type &t) {
  if (!t.pointer && t.dtype == DType::Bool)
    return b.getInt8Ty();
  return regType(t);
}

llvm::Value *Lowering::constantOf(DType t, int64_t iv, double fv, bool isFloatValue) {
  llvm::Type *ty = regTypeOf(t);
  if (isFloat(t)) {
    double v = isFloatValue ? fv : static_cast<double>(iv);
    return llvm::ConstantFP::get(ty, t == DType::F64 ? v : static_cast<double>(static_cast<float>(v)));
  }
  if (t == DType::Bool)
    return b.getInt1(isFloatValue ? fv != 0 : iv != 0);
  return llvm::ConstantInt::get(ty, static_cast<uint64_t>(iv), isSigned(t));
}

//===--------------------------------------------------------------------===//
// Registers
//===--------------------------------------------------------------------===//

Regs &Lowering::get(const ir::Value *v) {
  auto it = vals.find(v);
  kiln_assert(it != vals.end(), "codegen: value used before it was lowered");
  return it->second;
}

void Lowering::set(const ir::Value *v, Regs r) {
  kiln_assert(static_cast<int64_t>(r.v.size()) == layoutOf(v->type).numRegs(),
              "codegen: register count does not match the layout");
  vals[v] = std::move(r);
}

llvm::Value *Lowering::elementIndex(const Layout &l, int64_t reg) {
  if (l.uniform)
    return i32(0);
  const int64_t round = reg / l.vec, j = reg % l.vec;
  llvm::Value *&base = tidTimes[l.vec];
  if (!base) {
    // Computed once, right after the thread index, so it dominates every use.
    llvm::IRBuilderBase::InsertPointGuard guard(b);
    auto *tidInst = llvm::cast<llvm::Instruction>(tid);
    b.SetInsertPoint(tidInst->getParent(), std::next(tidInst->getIterator()));
    base = b.CreateMul(tid, i32(l.vec), "tidv", true, true);
  }
  llvm::Value *start = b.CreateAdd(base, i32(round * l.numThreads * l.vec), "", true, true);
  if (!l.roundAlwaysValid(round))
    start = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, start, i32(l.numElements - l.vec));
  return j ? b.CreateAdd(start, i32(j), "", true, true) : start;
}

llvm::Value *Lowering::roundValid(const Layout &l, int64_t round) {
  if (l.roundAlwaysValid(round))
    return nullptr;
  llvm::Value *chunk = b.CreateAdd(tid, i32(round * l.numThreads));
  return b.CreateICmpULT(chunk, i32(l.numChunks()));
}

Values Lowering::unravel(llvm::Value *e, const Shape &shape) {
  Values idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = e;
      break;
    }
    idx[d] = shape[d] == 1 ? i32(0) : b.CreateURem(e, i32(shape[d]));
    e = shape[d] == 1 ? e : b.CreateUDiv(e, i32(shape[d]));
  }
  return idx;
}

llvm::Value *Lowering::isThread0() { return b.CreateICmpEQ(tid, i32(0)); }

//===--------------------------------------------------------------------===//
// Control-flow helpers
//===--------------------------------------------------------------------===//

Values Lowering::guarded(llvm::Value *cond, const std::function<Values()> &body,
                         const Values &otherwise, bool rarely) {
  if (!cond)
    return body();
  llvm::BasicBlock *from = b.GetInsertBlock();
  llvm::BasicBlock *thenBB = llvm::BasicBlock::Create(ctx, "g.then", fn);
  llvm::BasicBlock *joinBB = llvm::BasicBlock::Create(ctx, "g.join", fn);
  llvm::BranchInst *br = b.CreateCondBr(cond, thenBB, joinBB);
  if (rarely) // laid out away from the path every run takes
    br->setMetadata(llvm::LLVMContext::MD_prof, llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
  b.SetInsertPoint(thenBB);
  // Past the join, the arena may be in use as on either path.
  const ArenaUse inUseBefore = arenaInUse;
  Values got = body();
  arenaInUse.add(inUseBefore);
  llvm::BasicBlock *thenEnd = b.GetInsertBlock();
  b.CreateBr(joinBB);
  b.SetInsertPoint(joinBB);
  Values out;
  for (size_t i = 0; i < got.size(); ++i) {
    llvm::PHINode *phi = b.CreatePHI(got[i]->getType(), 2);
    phi->addIncoming(got[i], thenEnd);
    phi->addIncoming(otherwise.at(i), from);
    out.push_back(phi);
  }
  return out;
}

Values Lowering::ifElse(llvm::Value *cond, const std::function<Values()> &thenFn,
                        const std::function<Values()> &elseFn) {
  llvm::BasicBlock *thenBB = llvm::BasicBlock::Create(ctx, "c.then", fn);
  llvm::BasicBlock *elseBB = llvm::BasicBlock::Create(ctx, "c.else", fn);
  llvm::BasicBlock *joinBB = llvm::BasicBlock::Create(ctx, "c.join", fn);
  b.CreateCondBr(cond, thenBB, elseBB);
  b.SetInsertPoint(thenBB);
  const ArenaUse inUseBefore = arenaInUse;
  Values tv = thenFn();
  const ArenaUse inUseAfterThen = arenaInUse;
  llvm::BasicBlock *thenEnd = b.GetInsertBlock();
  b.CreateBr(joinBB);
  b.SetInsertPoint(elseBB);
  arenaInUse = inUseBefore;
  Values ev = elseFn();
  arenaInUse.add(inUseAfterThen);
  llvm::BasicBlock *elseEnd = b.GetInsertBlock();
  b.CreateBr(joinBB);
  b.SetInsertPoint(joinBB);
  Values out;
  for (size_t i = 0; i < tv.size(); ++i) {
    llvm::PHINode *phi = b.CreatePHI(tv[i]->getType(), 2);
    phi->addIncoming(tv[i], thenEnd);
    phi->addIncoming(ev.at(i), elseEnd);
    out.push_back(phi);
  }
  return out;
}

void Lowering::guardedVoid(llvm::Value *cond, const std::function<void()> &body, bool rarely) {
  guarded(cond, [&] { body(); return Values{}; }, {}, rarely);
}

Values Lowering::loop(llvm::Value *begin, llvm::Value *end, int64_t step, const Values &init,
                      const std::function<Values(llvm::Value *, const Values &)> &body, bool keepRolled) {
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx, "l.head", fn);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx, "l.body", fn);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx, "l.exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *iv = b.CreatePHI(b.getInt32Ty(), 2, "i");
  iv->addIncoming(begin, pre);
  std::vector<llvm::PHINode *> phis;
  Values carried;
  for (llvm::Value *v : init) {
    llvm::PHINode *phi = b.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    phis.push_back(phi);
    carried.push_back(phi);
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBB, exit);
  b.SetInsertPoint(bodyBB);
  const ArenaUse inUseBefore = arenaInUse;
  Values next = body(iv, carried);
  arenaInUse.add(inUseBefore); // the body may not run
  llvm::Value *ivNext = b.CreateAdd(iv, i32(step), "", true, true);
  llvm::BasicBlock *latch = b.GetInsertBlock();
  llvm::BranchInst *back = b.CreateBr(header);
  if (keepRolled) {
    // A loop ID (self-referencing, as LLVM requires) carrying llvm.loop.unroll.disable.
    llvm::MDNode *disable = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
    llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, {nullptr, disable});
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  iv->addIncoming(ivNext, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    phis[i]->addIncoming(next.at(i), latch);
  b.SetInsertPoint(exit);
  return carried;
}

//===--------------------------------------------------------------------===//
// Shared memory
//===--------------------------------------------------------------------===//

void Lowering::barrier() {
  emitBarrier();
  arenaInUse = {};
  outstanding.clear();
}

void Lowering::voidAsm(const char *text, const char *constraints, llvm::ArrayRef<llvm::Value *> args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args)
    types.push_back(a->getType());
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), types, false);
  b.CreateCall(fty, llvm::InlineAsm::get(fty, text, constraints, /*hasSideEffects=*/true), args);
}

void Lowering::beginSharedUse() {
  if (!arenaInUse.empty())
    barrier();
  arenaInUse = ArenaUse::whole();
}

void Lowering::beginSharedUse(int64_t begin, int64_t end) {
  if (arenaInUse.overlaps(begin, end))
    barrier();
  arenaInUse.add(begin, end);
}

void Lowering::sharedWritten() { barrier(); }

llvm::Value *Lowering::sharedAddr(int64_t byteOffset, llvm::Value *index, llvm::Type *elemTy) {
  llvm::Value *base = byteOffset ? b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), arena, byteOffset)
                                 : arena;
  return b.CreateInBoundsGEP(elemTy, base, index);
}

llvm::Value *Lowering::loadShared(llvm::Type *ty, int64_t byteOffset, llvm::Value *index) {
  return b.CreateLoad(ty, sharedAddr(byteOffset, index, ty));
}

void Lowering::storeShared(llvm::Value *v, int64_t byteOffset, llvm::Value *index) {
  b.CreateStore(v, sharedAddr(byteOffset, index, v->getType()));
}

llvm::Value *Lowering::toShared(llvm::Value *v, const Type &t) {
  if (!t.pointer && t.dtype == DType::Bool)
    return b.CreateZExt(v, b.getInt8Ty());
  return v;
}

llvm::Value *Lowering::fromShared(llvm::Value *v, const Type &t) {
  if (!t.pointer && t.dtype == DType::Bool)
    return b.CreateICmpNE(v, b.getInt8(0));
  return v;
}

void Lowering::storeTileToShared(const Regs &r, const Type &t, int64_t byteOffset) {
  const Layout l = layoutOf(t);
  llvm::Type *sty = sharedType(t);
  const int64_t eb = sharedElementBytes(t);
  for (int64_t round = 0; round < l.numRounds(); ++round) {
    // Registers of an invalid round hold copies of the last chunk: writing them again
    // stores the same values at the same places, so no guard is needed.
    llvm::Value *start = elementIndex(l, round * l.vec);
    // A chunk goes out in stores of at most 16 bytes (a chunk of 8 f32 in two).
    const int64_t w = std::min<int64_t>(l.vec, std::max<int64_t>(1, 16 / eb));
    if (w > 1 && !t.pointer) {
      auto *vty = llvm::FixedVectorType::get(sty, static_cast<unsigned>(w));
      for (int64_t j0 = 0; j0 < l.vec; j0 += w) {
        llvm::Value *vec = llvm::PoisonValue::get(vty);
        for (int64_t j = 0; j < w; ++j)
          vec = b.CreateInsertElement(vec, toShared(r.v[round * l.vec + j0 + j], t), j);
        llvm::Value *e = j0 ? b.CreateAdd(start, i32(j0)) : start;
        b.CreateAlignedStore(vec, sharedAddr(byteOffset, e, sty), llvm::Align(w * eb));
      }
    } else {
      for (int64_t j = 0; j < l.vec; ++j) {
        llvm::Value *e = j ? b.CreateAdd(start, i32(j)) : start;
        storeShared(toShared(r.v[round * l.vec + j], t), byteOffset, e);
      }
    }
  }
}

Regs Lowering::gatherFromShared(const Type &srcType, const Type &dstType, int64_t byteOffset,
                                const std::function<llvm::Value *(llvm::Value *)> &srcIndex) {
  const Layout l = layoutOf(dstType);
  llvm::Type *sty = sharedType(srcType);
  Regs out;
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *src = srcIndex(elementIndex(l, reg));
    out.v.push_back(fromShared(loadShared(sty, byteOffset, src), srcType));
  }
  sharedRead();
  return out;
}

//===--------------------------------------------------------------------===//
// The function
//===--------------------------------------------------------------------===//

static DotPath dotPathQuery(const ir::Op &op, const void *ctx) {
  return static_cast<const Lowering *>(ctx)->dotPath(op);
}

static int64_t residentBytesQuery(const ir::Op &op, const void *ctx) {
  return static_cast<const Lowering *>(ctx)->residentOperandBytes(op);
}

bool Lowering::run() {
  entryName = asTask ? "kiln_task_" + entrySymbol(kernel.name) : entrySymbol(kernel.name);
  // The fragment plan first: the arena holds the operands a streaming loop stages once
  // only where a product cannot read them from registers.
  walk(*kernel.body, [&](ir::Op &op) {
    for (const ir::Value *o : op.operands())
      users[o].push_back(&op);
  });
  std::vector<MemAccess> accesses;
  collectAccesses(*kernel.body, prov, accesses);
  for (const MemAccess &a : accesses)
    if (a.writes || a.atomic)
      writtenBases |= a.bases;
  fragPlan.compute(
      *kernel.body, [this](const ir::Op &dot) { return dotFacts(dot); },
      [this](const ir::Value *v) {
        int budget = kRecomputeBudget;
        return canRematerialize(v, budget, /*scalarsLowered=*/false, Recompute::ReadOnlyLoads);
      });
  arenaBytes =
      planArena(kernel, T, hasWarpShuffle(), &dotPathQuery, this, &exchangeBase, &residentBytesQuery);
  pushClusterExchanges = clusterExchangesPush();

  // Parameters: the kernel ABI of docs/codegen.md.
  std::vector<llvm::Type *> paramTypes;
  for (const auto &p : kernel.params()) {
    const Type &t = p->type;
    if (!t.isScalar()) {
      diags.error(kernel.loc, DiagCode::Unsupported)
          << "kernel parameter '" << p->nameHint << "' has tile type " << t.str();
      return false;
    }
    paramTypes.push_back(t.pointer ? static_cast<llvm::Type *>(globalPtrType()) : memType(t));
  }
  if (!addCheckParams(paramTypes))
    return false;
  const bool localArg = !nvptx && arenaBytes > 0;
  if (localArg)
    paramTypes.push_back(llvm::PointerType::get(ctx, 3));
  const size_t kernelParams = paramTypes.size();
  if (asTask) // program id, grid, task number
    paramTypes.insert(paramTypes.end(), 7, b.getInt32Ty());
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), paramTypes, false);
  fn = llvm::Function::Create(fty, asTask ? llvm::GlobalValue::InternalLinkage : llvm::GlobalValue::ExternalLinkage,
                              entryName, mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  if (asTask) {
    // Inlined into the megakernel's dispatch: no call frame, and the optimizer sees the
    // arguments the dispatch loads from the launch table.
    fn->addFnAttr(llvm::Attribute::AlwaysInline);
    for (unsigned a = 0; a < 3; ++a) {
      taskProgramId[a] = fn->getArg(static_cast<unsigned>(kernelParams + a));
      taskNumPrograms[a] = fn->getArg(static_cast<unsigned>(kernelParams + 3 + a));
    }
    taskNumber = fn->getArg(static_cast<unsigned>(kernelParams + 6));
  } else if (nvptx) {
    fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    fn->addFnAttr("nvvm.maxntid", std::to_string(T));
    if (opts.programsPerSM > 0)
      fn->addFnAttr("nvvm.minctasm", std::to_string(opts.programsPerSM));
    // The segments of a requested program run as one cluster (ir::GridSplit):
    // .reqnctapercluster, which a plain launch honours.
    if (kernel.gridSplit.cluster)
      fn->addFnAttr("nvvm.cluster_dim", std::to_string(kernel.gridSplit.segments) + ",1,1");
  } else {
    fn->setCallingConv(llvm::CallingConv::SPIR_KERNEL);
    llvm::Metadata *wg[] = {llvm::ConstantAsMetadata::get(b.getInt32(static_cast<uint32_t>(T))),
                            llvm::ConstantAsMetadata::get(b.getInt32(1)),
                            llvm::ConstantAsMetadata::get(b.getInt32(1))};
    fn->setMetadata("reqd_work_group_size", llvm::MDNode::get(ctx, wg));
  }

  llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  tid = readThreadId();
  arena = makeArena(localArg ? fn->getArg(static_cast<unsigned>(paramTypes.size() - 1)) : nullptr);

  // Parameters to registers.
  for (size_t i = 0; i < kernel.params().size(); ++i) {
    const ir::Value *p = kernel.params()[i].get();
    llvm::Argument *arg = fn->getArg(static_cast<unsigned>(i));
    arg->setName(p->nameHint);
    if (p->type.pointer)
      arg->addAttr(llvm::Attribute::NoUndef);
    set(p, Regs{{fromMemory(arg, p->type)}});
  }
  bindCheckParams();

  try {
    beginClusterExchanges();
    lowerBlock(*kernel.body);
  } catch (const LoweringFailed &) {
    return false;
  }
  // The block opened after `return` is unreachable.
  if (!b.GetInsertBlock()->getTerminator())
    b.CreateUnreachable();
  return !diags.hasErrors();
}

void Lowering::lowerBlock(const ir::Block &block) {
  for (const auto &op : block.ops())
    lowerOp(*op);
}

llvm::Value *Lowering::inlineCombiner(const ir::Block &region, llvm::Value *acc, llvm::Value *x) {
  vals[region.argument(0)] = Regs{{acc}};
  vals[region.argument(1)] = Regs{{x}};
  for (const auto &op : region.ops()) {
    if (op->kind() == OpKind::Yield)
      return get(op->operand(0)).v[0];
    lowerOp(*op);
  }
  KILN_ICE("codegen: combiner region without yield");
}

void Lowering::lowerOp(const ir::Op &op) {
  if (fragPlan.elided(op))
    return; // a transpose its dot reads through
  if (fragPlan.lowersInFragments(op))
    lowerInFragments(op);
  else
    lowerOpBlocked(op);
  finishFragments(op);
}

void Lowering::lowerOpBlocked(const ir::Op &op) {
  switch (op.kind()) {
  case OpKind::Constant:
    return lowerConstant(op);
  case OpKind::ProgramId:
    return set(op.result(), Regs{{readProgramId(op.intAttr("axis"))}});
  case OpKind::NumPrograms:
    return set(op.result(), Regs{{readNumPrograms(op.intAttr("axis"))}});
  case OpKind::Arange:
    return lowerArange(op);
  case OpKind::Splat:
    return lowerSplat(op);
  case OpKind::Broadcast:
    return lowerBroadcast(op);
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    return lowerSameOrder(op);
  case OpKind::Permute:
    return lowerPermute(op);
  case OpKind::Join:
    return lowerJoin(op);
  case OpKind::Split:
    return lowerSplit(op);
  case OpKind::Cat:
    return lowerCat(op);
  case OpKind::Gather:
    return lowerGather(op);
  case OpKind::BlockElements:
    // The pipeline's expand-block-masks pass turns it into loads; a custom --passes
    // list that leaves it out reaches here.
    return unsupported(op, "block_elements (run the expand-block-masks pass before code generation)");
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
    return lowerElementwise(op);
  case OpKind::PtrAdd:
    return lowerPtrAdd(op);
  case OpKind::Cast:
    return lowerCast(op);
  case OpKind::Bitcast:
    return lowerBitcast(op);
  case OpKind::Load:
    return lowerLoad(op);
  case OpKind::Store:
    return lowerStore(op);
  case OpKind::AtomicRMW:
    return lowerAtomicRMW(op);
  case OpKind::AtomicCas:
    return lowerAtomicCas(op);
  case OpKind::Fence:
    return lowerFence(op);
  case OpKind::ClusterExchange:
    return lowerClusterExchange(op);
  case OpKind::Reduce:
    return lowerReduce(op);
  case OpKind::Argmax:
    return lowerArgReduce(op, /*wantMax=*/true);
  case OpKind::Argmin:
    return lowerArgReduce(op, /*wantMax=*/false);
  case OpKind::Scan:
    return lowerScan(op);
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK:
    return lowerSort(op);
  case OpKind::Dot:
    return lowerDot(op);
  case OpKind::For:
    return lowerFor(op);
  case OpKind::If:
    return lowerIf(op);
  case OpKind::While:
    return lowerWhile(op);
  case OpKind::Assert:
    return lowerAssert(op);
  case OpKind::Print:
    return lowerPrint(op);
  case OpKind::Launch:
    KILN_ICE("codegen: a launch belongs to a graph, and graphs are not compiled to kernels");
  case OpKind::Return:
    finishClusterExchanges();
    b.CreateRetVoid();
    // Anything after the return would be unreachable; start a fresh block for it.
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "dead", fn));
    return;
  case OpKind::Yield:
  case OpKind::Condition:
    break; // handled by the structured op that owns the region
  }
  KILN_ICE(std::string("codegen: unexpected '") + op.mnemonic() + "' here");
}

ReduceKind reduceKindOf(const ir::Op &op) {
  const std::string &k = op.stringAttr("kind");
  if (k == "sum")
    return ReduceKind::Sum;
  if (k == "prod")
    return ReduceKind::Prod;
  if (k == "max")
    return ReduceKind::Max;
  if (k == "min")
    return ReduceKind::Min;
  return ReduceKind::Custom;
}

} // namespace kiln::codegen::detail
