//===- LowerChecks.cpp - Checked mode: every global access bounds-checked ---===//
//
// In checked mode (CodegenOptions::checked, `dslc --checked`, docs/checked.md) a kernel
// takes, after its parameters, the extent of each pointer argument the caller passes
// (u64: the bytes from the pointer to the end of its buffer) and a pointer to a check
// record (support/CheckRecord.h). Every load, store and atomic then tests each lane's
// address against the buffers its pointer may point into (ir/Provenance.h: one for a
// pointer derived from one parameter, each of them for a select between parameters,
// every caller's buffer where the origin is unknown):
//
//   d = address - base;  in bounds  <=>  d < extent  and  d + bytes <= extent
//
// (unsigned, so an address below the base is a huge d). A lane out of bounds is masked
// off, so no access leaves its buffer: a load gives 0 (or its `other`) there. The first
// active lane out of bounds of the launch claims the record with a CAS and writes what
// the access was, its source line and column, the program id and the element offset.
// Accesses through the workspace of a split kernel are the compiler's own and are not
// checked. A task of a graph's persistent kernel (asTask) gets the same arguments from
// the launch table, and records its task number too (codegen/Megakernel.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "support/CheckRecord.h"

#include <algorithm>

namespace kiln::codegen::detail {

bool Lowering::addCheckParams(std::vector<llvm::Type *> &paramTypes) {
  if (!opts.checked)
    return true;
  checkParamBase = paramTypes.size();
  for (size_t i = 0; i < kernel.numLaunchParams(); ++i)
    if (kernel.params()[i]->type.pointer)
      paramTypes.push_back(b.getInt64Ty());
  paramTypes.push_back(globalPtrType());
  return true;
}

void Lowering::bindCheckParams() {
  if (!opts.checked)
    return;
  checkExtents.assign(kernel.params().size(), nullptr);
  unsigned next = static_cast<unsigned>(checkParamBase);
  for (size_t i = 0; i < kernel.numLaunchParams(); ++i)
    if (kernel.params()[i]->type.pointer) {
      llvm::Argument *a = fn->getArg(next++);
      a->setName(kernel.params()[i]->nameHint + ".extent");
      checkExtents[i] = a;
    }
  checkRecord = fn->getArg(next);
  checkRecord->setName("check.record");
}

Regs Lowering::boundsCheck(const ir::Op &op, const Regs &ptrs, const Regs *mask,
                           const std::function<llvm::Value *(int64_t)> &validAt, unsigned bytes,
                           check::CheckKind kind) {
  // The parameters the access may go through, with an extent.
  const BaseSet set = prov.bases(op.operand(0));
  std::vector<size_t> bases;
  for (size_t i = 0; i < checkExtents.size(); ++i)
    if (checkExtents[i] && (set == kAnyBase || i >= 63 || (set >> i) & 1))
      bases.push_back(i);
  const int64_t n = static_cast<int64_t>(ptrs.v.size());
  Regs ok;
  if (bases.empty()) { // the workspace alone: trusted
    for (int64_t i = 0; i < n; ++i)
      ok.v.push_back(mask ? mask->v[i] : b.getTrue());
    return ok;
  }
  llvm::Type *i64t = b.getInt64Ty();
  std::vector<llvm::Value *> lows;
  for (size_t p : bases)
    lows.push_back(b.CreatePtrToInt(get(kernel.params()[p].get()).v[0], i64t));
  llvm::Value *anyBad = nullptr, *badOffset = nullptr;
  for (int64_t i = n - 1; i >= 0; --i) {
    llvm::Value *address = b.CreatePtrToInt(ptrs.v[i], i64t);
    llvm::Value *inside = nullptr, *firstD = nullptr;
    for (size_t k = 0; k < bases.size(); ++k) {
      llvm::Value *d = b.CreateSub(address, lows[k]);
      llvm::Value *extent = checkExtents[bases[k]];
      llvm::Value *fits = b.CreateAnd(b.CreateICmpULT(d, extent),
                                      b.CreateICmpULE(b.CreateAdd(d, i64(bytes)), extent));
      inside = inside ? b.CreateOr(inside, fits) : fits;
      if (!firstD)
        firstD = d;
    }
    // A lane the mask turns off may hold a poison pointer (its index arithmetic wrapped),
    // so the lane's test is selected, never and'ed, in: select(false, poison, x) is x.
    llvm::Value *active = mask ? mask->v[i] : b.getTrue();
    if (llvm::Value *valid = validAt(i))
      active = b.CreateSelect(active, valid, b.getFalse());
    llvm::Value *bad = b.CreateSelect(active, b.CreateNot(inside), b.getFalse());
    // Walking the lanes backwards, the last select leaves the first bad lane's offset.
    llvm::Value *offset = b.CreateSDiv(firstD, i64(bytes));
    badOffset = badOffset ? b.CreateSelect(bad, offset, badOffset) : b.CreateSelect(bad, offset, i64(0));
    anyBad = anyBad ? b.CreateOr(anyBad, bad) : bad;
    ok.v.push_back(mask ? b.CreateSelect(mask->v[i], inside, b.getFalse()) : inside);
  }
  std::reverse(ok.v.begin(), ok.v.end());

  guardedVoid(anyBad, [&] {
    auto word = [&](unsigned w) { return b.CreateConstGEP1_32(b.getInt32Ty(), checkRecord, w); };
    auto *claim = b.CreateAtomicCmpXchg(word(check::kFlagWord), i32(0), i32(1), llvm::Align(4),
                                        llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic,
                                        llvm::SyncScope::System);
    guardedVoid(b.CreateExtractValue(claim, 1), [&] {
      const Location &loc = op.loc();
      b.CreateStore(i32(static_cast<int64_t>(kind)), word(check::kKindWord));
      b.CreateStore(i32(loc.valid() ? loc.line : 0), word(check::kLineWord));
      b.CreateStore(i32(loc.valid() ? loc.col : 0), word(check::kColumnWord));
      for (unsigned a = 0; a < 3; ++a)
        b.CreateStore(b.CreateZExtOrTrunc(readProgramId(a), b.getInt32Ty()), word(check::kPidWord + a));
      b.CreateStore(i32(static_cast<int64_t>(bases.front())), word(check::kParamWord));
      b.CreateStore(b.CreateTrunc(badOffset, b.getInt32Ty()), word(check::kOffsetWord));
      b.CreateStore(b.CreateTrunc(b.CreateLShr(badOffset, i64(32)), b.getInt32Ty()), word(check::kOffsetWord + 1));
      if (taskNumber)
        b.CreateStore(taskNumber, word(check::kTaskWord));
      b.CreateStore(i32(1), word(check::kDoneWord));
    });
  });
  return ok;
}

} // namespace kiln::codegen::detail
