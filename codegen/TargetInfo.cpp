//===- TargetInfo.cpp - What differs between NVPTX and SPIR-V -------------===//
//
// Thread and program indices, barriers, warp shuffles, the shared-memory arena, math
// library names and printf. NVPTX uses NVVM intrinsics, libdevice (`__nv_*`) and the
// CUDA device runtime's vprintf/__assertfail; SPIR-V calls the Itanium-mangled OpenCL C
// built-ins (`_Z12get_local_idj`, `_Z3expf`, ...), which LLVM's SPIR-V backend maps to
// SPIR-V built-in variables, OpControlBarrier and OpenCL.std instructions.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::detail {

llvm::FunctionCallee Lowering::declareBuiltin(const std::string &name, llvm::FunctionType *ty,
                                              bool convergent, bool readNone) {
  llvm::FunctionCallee callee = mod.getOrInsertFunction(name, ty);
  if (auto *f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    if (!nvptx)
      f->setCallingConv(llvm::CallingConv::SPIR_FUNC);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (convergent)
      f->addFnAttr(llvm::Attribute::Convergent);
    if (readNone) {
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
  }
  return callee;
}

llvm::Value *Lowering::callBuiltin(const std::string &name, llvm::Type *ret, Values args,
                                   bool readNone) {
  std::vector<llvm::Type *> tys;
  for (llvm::Value *a : args)
    tys.push_back(a->getType());
  llvm::FunctionCallee f =
      declareBuiltin(name, llvm::FunctionType::get(ret, tys, false), false, readNone);
  llvm::CallInst *call = b.CreateCall(f, args);
  if (!nvptx)
    call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
  return call;
}

llvm::Value *Lowering::readThreadId() {
  if (nvptx)
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, llvm::ArrayRef<llvm::Value *>{},
                             {}, "tid");
  llvm::Value *id = callBuiltin("_Z12get_local_idj", b.getInt64Ty(), {i32(0)});
  return b.CreateTrunc(id, b.getInt32Ty(), "tid");
}

llvm::Value *Lowering::readProgramId(int64_t a) {
  if (taskProgramId[a])
    return taskProgramId[a];
  if (nvptx) {
    static const llvm::Intrinsic::ID ids[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                               llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                               llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    return b.CreateIntrinsic(ids[a], llvm::ArrayRef<llvm::Value *>{});
  }
  return b.CreateTrunc(callBuiltin("_Z12get_group_idj", b.getInt64Ty(), {i32(a)}),
                       b.getInt32Ty());
}

llvm::Value *Lowering::readNumPrograms(int64_t a) {
  if (taskNumPrograms[a])
    return taskNumPrograms[a];
  if (nvptx) {
    static const llvm::Intrinsic::ID ids[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                               llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                               llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
    return b.CreateIntrinsic(ids[a], llvm::ArrayRef<llvm::Value *>{});
  }
  return b.CreateTrunc(callBuiltin("_Z14get_num_groupsj", b.getInt64Ty(), {i32(a)}),
                       b.getInt32Ty());
}

void Lowering::emitBarrier() {
  if (nvptx) {
    // bar.sync 0: also orders the threads' global-memory accesses (CUDA's
    // __syncthreads guarantee), which the memory-ordering barriers rely on.
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {i32(0)});
    return;
  }
  // barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
  auto *ty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
  llvm::CallInst *call =
      b.CreateCall(declareBuiltin("_Z7barrierj", ty, /*convergent=*/true), {i32(3)});
  call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
}

llvm::Value *Lowering::shuffleXor(llvm::Value *v, int64_t laneMask) {
  kiln_assert(nvptx, "warp shuffles exist only on NVPTX here");
  llvm::Type *ty = v->getType();
  auto shfl32 = [&](llvm::Value *x) {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                             {b.getInt32(0xFFFFFFFFu), x, i32(laneMask), i32(0x1F)});
  };
  if (ty->isFloatTy()) {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {},
                             {b.getInt32(0xFFFFFFFFu), v, i32(laneMask), i32(0x1F)});
  }
  if (ty->isIntegerTy(32))
    return shfl32(v);
  if (ty->isIntegerTy() && ty->getIntegerBitWidth() < 32)
    return b.CreateTrunc(shfl32(b.CreateZExt(v, b.getInt32Ty())), ty);
  // 64-bit values (i64, f64, pointers) travel as two halves.
  llvm::Value *bits = v;
  if (ty->isPointerTy())
    bits = b.CreatePtrToInt(v, b.getInt64Ty());
  else if (!ty->isIntegerTy(64))
    bits = b.CreateBitCast(v, b.getInt64Ty());
  llvm::Value *lo = shfl32(b.CreateTrunc(bits, b.getInt32Ty()));
  llvm::Value *hi = shfl32(b.CreateTrunc(b.CreateLShr(bits, 32), b.getInt32Ty()));
  llvm::Value *w = b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()),
                              b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
  if (ty->isPointerTy())
    return b.CreateIntToPtr(w, ty);
  return ty->isIntegerTy(64) ? w : b.CreateBitCast(w, ty);
}

std::string Lowering::mathName(OpKind kind, bool isDouble) const {
  const char *base = nullptr;
  int arity = 1;
  switch (kind) {
  case OpKind::Exp:
    base = "exp";
    break;
  case OpKind::Exp2:
    base = "exp2";
    break;
  case OpKind::Log:
    base = "log";
    break;
  case OpKind::Log2:
    base = "log2";
    break;
  case OpKind::Sin:
    base = "sin";
    break;
  case OpKind::Cos:
    base = "cos";
    break;
  case OpKind::Tanh:
    base = "tanh";
    break;
  case OpKind::Erf:
    base = "erf";
    break;
  case OpKind::Pow:
    base = "pow";
    arity = 2;
    break;
  case OpKind::Rem:
    base = "fmod";
    arity = 2;
    break;
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
  case OpKind::BlockElements:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Minimum:
  case OpKind::Maximum:
  case OpKind::PtrAdd:
  case OpKind::Cmp:
  case OpKind::Select:
  case OpKind::Fma:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
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
  case OpKind::Reduce:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Scan:
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK:
  case OpKind::Dot:
  case OpKind::For:
  case OpKind::If:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
    KILN_ICE("codegen: no library function for this op");
  }
  std::string name(base);
  if (nvptx) // libdevice: __nv_expf / __nv_exp
    return "__nv_" + name + (isDouble ? "" : "f");
  // OpenCL C: the Itanium mangling of `float exp(float)` is _Z3expf.
  std::string mangled = "_Z" + std::to_string(name.size()) + name;
  for (int i = 0; i < arity; ++i)
    mangled += isDouble ? "d" : "f";
  return mangled;
}

llvm::Value *Lowering::fastExp2(llvm::Value *x) {
  if (!nvptx || !x->getType()->isFloatTy())
    return nullptr;
  // ex2.approx.ftz.f32 is the one MUFU.EX2 instruction. Without .ftz (libdevice's
  // __nv_exp2f at nvvm-reflect-ftz 0) ptxas wraps it in a scale-and-square sequence
  // that only serves results below 2^-126: the flush changes nothing else. A subnormal
  // argument reads as 0, whose 2^x = 1 is also the correctly rounded value there.
  return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {x});
}

llvm::Value *Lowering::makeArena(llvm::Argument *spirvLocalArg) {
  if (spirvLocalArg) {
    spirvLocalArg->setName("kiln_local");
    spirvLocalArg->addAttr(llvm::Attribute::NoAlias);
    return spirvLocalArg;
  }
  auto *as3 = llvm::PointerType::get(ctx, 3);
  if (!nvptx || arenaBytes == 0)
    return llvm::ConstantPointerNull::get(as3);
  // Dynamic shared memory (`extern __shared__`): sized by the launch, so programs may
  // use more than the 48 KiB a static allocation is limited to. The tasks of a
  // megakernel share it: one declaration per module.
  if (llvm::GlobalVariable *existing = mod.getNamedGlobal("kiln_shared"))
    return existing;
  auto *ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
  auto *gv = new llvm::GlobalVariable(mod, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                      "kiln_shared", nullptr,
                                      llvm::GlobalValue::NotThreadLocal, 3);
  gv->setAlignment(llvm::Align(16));
  return gv;
}

//===--------------------------------------------------------------------===//
// printf and assert
//===--------------------------------------------------------------------===//

/// A private constant string global in `addrSpace`.
static llvm::GlobalVariable *stringGlobal(llvm::Module &mod, const std::string &s,
                                          unsigned addrSpace) {
  llvm::Constant *init = llvm::ConstantDataArray::getString(mod.getContext(), s, true);
  auto *gv = new llvm::GlobalVariable(mod, init->getType(), true,
                                      llvm::GlobalValue::PrivateLinkage, init, "kiln_str",
                                      nullptr, llvm::GlobalValue::NotThreadLocal, addrSpace);
  gv->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  gv->setAlignment(llvm::Align(1));
  return gv;
}

void Lowering::emitPrintf(const std::string &format, Values args) {
  if (!nvptx) {
    // OpenCL printf: the format lives in the constant address space (2). The mangled
    // name tells the SPIR-V backend that the format points to chars (it would otherwise
    // type it as a pointer to the whole string array, which spirv-val rejects).
    llvm::GlobalVariable *fmt = stringGlobal(mod, format, 2);
    auto *ty = llvm::FunctionType::get(b.getInt32Ty(), {llvm::PointerType::get(ctx, 2)}, true);
    Values all{fmt};
    for (llvm::Value *a : args) // C default argument promotions
      all.push_back(a->getType()->isFloatTy() ? b.CreateFPExt(a, b.getDoubleTy()) : a);
    llvm::CallInst *call = b.CreateCall(declareBuiltin("_Z6printfPU3AS2cz", ty), all);
    call->setCallingConv(llvm::CallingConv::SPIR_FUNC);
    return;
  }
  // vprintf(format, buffer): the arguments packed in a local buffer, each aligned to
  // its size, floats promoted to double as for any variadic call.
  llvm::GlobalVariable *fmt = stringGlobal(mod, format, 1);
  auto *generic = llvm::PointerType::get(ctx, 0);
  std::vector<llvm::Type *> fields;
  Values promoted;
  for (llvm::Value *a : args) {
    llvm::Value *p = a->getType()->isFloatTy() ? b.CreateFPExt(a, b.getDoubleTy()) : a;
    promoted.push_back(p);
    fields.push_back(p->getType());
  }
  llvm::Value *buffer = llvm::ConstantPointerNull::get(generic);
  if (!fields.empty()) {
    auto *st = llvm::StructType::get(ctx, fields);
    llvm::IRBuilderBase::InsertPointGuard guard(b);
    llvm::BasicBlock &entry = fn->getEntryBlock();
    b.SetInsertPoint(&entry, entry.getFirstInsertionPt());
    buffer = b.CreateAlloca(st);
  }
  if (!fields.empty()) {
    auto *st = llvm::StructType::get(ctx, fields);
    for (size_t i = 0; i < promoted.size(); ++i)
      b.CreateStore(promoted[i], b.CreateStructGEP(st, buffer, static_cast<unsigned>(i)));
  }
  auto *ty = llvm::FunctionType::get(b.getInt32Ty(), {generic, generic}, false);
  b.CreateCall(declareBuiltin("vprintf", ty),
               {b.CreateAddrSpaceCast(fmt, generic), buffer});
}

void Lowering::emitAssertFail(const std::string &message, Location loc) {
  if (!nvptx) {
    // OpenCL has no way to abort a kernel: the message is printed and the program
    // continues (docs/codegen.md).
    std::string escaped;
    for (char c : message)
      escaped += c == '%' ? std::string("%%") : std::string(1, c);
    emitPrintf(escaped + "\n", {});
    return;
  }
  auto *generic = llvm::PointerType::get(ctx, 0);
  std::string file = "<unknown>";
  if (loc.valid() && !loc.isCommandLine() && loc.file < diags.sourceManager().size())
    file = std::string(diags.sourceManager().name(loc.file));
  llvm::Value *msg = b.CreateAddrSpaceCast(stringGlobal(mod, message, 1), generic);
  llvm::Value *fileStr = b.CreateAddrSpaceCast(stringGlobal(mod, file, 1), generic);
  llvm::Value *func = b.CreateAddrSpaceCast(stringGlobal(mod, kernel.name, 1), generic);
  auto *ty = llvm::FunctionType::get(b.getVoidTy(),
                                     {generic, generic, b.getInt32Ty(), generic, b.getInt64Ty()},
                                     false);
  llvm::FunctionCallee f = declareBuiltin("__assertfail", ty);
  b.CreateCall(f, {msg, fileStr, i32(loc.line), func, i64(1)});
  b.CreateIntrinsic(llvm::Intrinsic::trap, llvm::ArrayRef<llvm::Value *>{});
}

} // namespace kiln::codegen::detail
