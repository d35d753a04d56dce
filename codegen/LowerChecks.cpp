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
// (unsigned, so an address below the base is a huge d). Through one buffer -- nearly
// every access -- that is one compare per lane, and one per vector where the lanes are
// contiguous and the mask is constant over each vector (checkOneBuffer), so a
// memory-bound kernel keeps its vectors: a load is made under its vectors' tests as
// unchecked code makes it under its mask, a store as unchecked after one branch on
// `clear` (codegen/LowerMemory.cpp). A lane out of bounds is masked off, so no access
// leaves its buffer: a load gives 0 (or its `other`) there. The first
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

void Lowering::recordViolation(const ir::Op &op, check::CheckKind kind, size_t param, llvm::Value *offset) {
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
    b.CreateStore(i32(static_cast<int64_t>(param)), word(check::kParamWord));
    b.CreateStore(b.CreateTrunc(offset, b.getInt32Ty()), word(check::kOffsetWord));
    b.CreateStore(b.CreateTrunc(b.CreateLShr(offset, i64(32)), b.getInt32Ty()), word(check::kOffsetWord + 1));
    if (taskNumber)
      b.CreateStore(taskNumber, word(check::kTaskWord));
    b.CreateStore(i32(1), word(check::kDoneWord));
  });
}

// One buffer: a lane at d = address - base is in bounds iff d < limit, where limit =
// extent - bytes + 1 (0 when the buffer is shorter than one element): one unsigned
// compare, an address below the buffer being a huge d. Lane j of a chunk lies j * bytes
// after the chunk's first, so it is in bounds iff d0 < limit_j = limit - j * bytes (0
// below that). limit_j falls with j, so the last lane's bound decides the whole chunk:
// base <= address < base + limit_(width-1), two compares of the chunk's address
// against two values of the access. Where the mask is constant over a chunk, those are
// all the common path computes; each lane's own test, and which lane was first out of
// bounds, are emitted only on the paths that need them. (Bounds per lane, or a d0 per
// chunk, held across a loop cost registers: a checked matrix-vector product needed 206
// on sm_90a against 100 unchecked, halving its occupancy.)
static Lowering::CheckedLanes checkOneBuffer(Lowering &L, const ir::Op &op, const Regs &ptrs, const Regs *mask,
                                             const std::function<llvm::Value *(int64_t)> &validAt,
                                             unsigned bytes, check::CheckKind kind, int64_t width,
                                             bool maskPerChunk, bool deferRecord, size_t param) {
  auto &b = L.b;
  llvm::Type *i64t = b.getInt64Ty();
  llvm::Value *low = b.CreatePtrToInt(L.get(L.kernel.params()[param].get()).v[0], i64t);
  llvm::Value *extent = L.checkExtents[param];
  const int64_t n = static_cast<int64_t>(ptrs.v.size());
  if (width < 1 || n % width != 0)
    width = 1;
  // limit_j = extent - (bytes * (j + 1) - 1), or 0 below that.
  auto limitFor = [&b, &L, extent, bytes](int64_t j) -> llvm::Value * {
    const int64_t skip = static_cast<int64_t>(bytes) * (j + 1) - 1;
    return b.CreateSelect(b.CreateICmpUGT(extent, L.i64(skip)), b.CreateSub(extent, L.i64(skip)), L.i64(0));
  };
  const bool chunkUniform = !mask || maskPerChunk || width == 1;
  // d0 of the chunk that lane i belongs to, computed where it is used.
  auto firstD = [&b, &ptrs, low, i64t, width](int64_t i) {
    return b.CreateSub(b.CreatePtrToInt(ptrs.v[i - i % width], i64t), low);
  };
  // The whole chunk: low <= address < low + limit_(width-1).
  llvm::Value *endLast = b.CreateAdd(low, limitFor(width - 1));
  auto wholeInside = [&b, &ptrs, low, endLast, i64t](int64_t base) {
    llvm::Value *address = b.CreatePtrToInt(ptrs.v[base], i64t);
    return b.CreateAnd(b.CreateICmpUGE(address, low), b.CreateICmpULT(address, endLast));
  };
  // Lane j's own test, for the paths that take a chunk lane by lane: j * bytes past the
  // chunk's d0 without wrapping, and below limit_0, all computed where it is used.
  auto inside = [&b, &L, firstD, limitFor, width, bytes](int64_t i) -> llvm::Value * {
    llvm::Value *d0 = firstD(i);
    const int64_t j = i % width;
    if (j == 0)
      return b.CreateICmpULT(d0, limitFor(0));
    llvm::Value *d = b.CreateAdd(d0, L.i64(static_cast<int64_t>(bytes) * j));
    return b.CreateAnd(b.CreateICmpUGE(d, d0), b.CreateICmpULT(d, limitFor(0)));
  };
  // A lane the mask turns off may hold a poison pointer (its index arithmetic wrapped),
  // so its test is selected, never and'ed, in: select(false, poison, x) is x.
  auto active = [&b, mask, validAt](int64_t i) {
    llvm::Value *on = mask ? mask->v[i] : b.getTrue();
    if (llvm::Value *valid = validAt(i))
      on = b.CreateSelect(on, valid, b.getFalse());
    return on;
  };
  auto masked = [&b, mask](int64_t i, llvm::Value *test) {
    return mask ? b.CreateSelect(mask->v[i], test, b.getFalse()) : test;
  };
  Lowering::CheckedLanes out;
  llvm::Value *anyBad = nullptr;
  auto addBad = [&](llvm::Value *on, llvm::Value *in) {
    llvm::Value *bad = b.CreateSelect(on, b.CreateNot(in), b.getFalse());
    anyBad = anyBad ? b.CreateOr(anyBad, bad) : bad;
  };
  if (chunkUniform) {
    for (int64_t base = 0; base < n; base += width) {
      llvm::Value *last = wholeInside(base);
      out.wholeChunk.push_back(masked(base, last));
      addBad(active(base), last);
    }
    if (width == 1)
      out.ok.v = out.wholeChunk;
    else {
      out.laneOk = [inside, masked](int64_t i) { return masked(i, inside(i)); };
      out.laneOkAt = [&b, firstD, limitFor, masked, bytes](int64_t base, llvm::Value *j) {
        llvm::Value *d0 = firstD(base);
        llvm::Value *d = b.CreateAdd(d0, b.CreateMul(j, b.getInt64(bytes)));
        return masked(base, b.CreateAnd(b.CreateICmpUGE(d, d0), b.CreateICmpULT(d, limitFor(0))));
      };
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      llvm::Value *in = inside(i);
      out.ok.v.push_back(masked(i, in));
      addBad(active(i), in);
    }
  }
  auto record = [&L, &op, kind, param, n, width, bytes, chunkUniform, firstD, limitFor, wholeInside, inside,
                 active] {
    auto &b = L.b;
    // The first bad lane's element offset: walking the lanes (or chunks) backwards, the
    // last select leaves it. Kept to a few values per chunk: this path sits inside kernels
    // whose registers are full, and what it holds live counts against them all.
    llvm::Value *offset = L.i64(0);
    if (chunkUniform) {
      // A chunk's lanes share its activity, and its first bad lane is its first when d0
      // is out of bounds (below the buffer it is huge), else the first j with
      // d0 + j * bytes >= limit_0.
      llvm::Value *bytesV = L.i64(bytes);
      for (int64_t base = n - width; base >= 0; base -= width) {
        llvm::Value *d0 = firstD(base);
        llvm::Value *limit0 = limitFor(0);
        llvm::Value *bad = b.CreateSelect(active(base), b.CreateNot(wholeInside(base)), b.getFalse());
        llvm::Value *below = b.CreateICmpULT(d0, limit0);
        llvm::Value *skip = b.CreateUDiv(b.CreateAdd(b.CreateSub(limit0, d0), L.i64(bytes - 1)), bytesV);
        llvm::Value *at = b.CreateSelect(below, b.CreateAdd(b.CreateUDiv(d0, bytesV), skip), b.CreateSDiv(d0, bytesV));
        offset = b.CreateSelect(bad, at, offset);
      }
    } else {
      for (int64_t i = n - 1; i >= 0; --i) {
        llvm::Value *bad = b.CreateSelect(active(i), b.CreateNot(inside(i)), b.getFalse());
        llvm::Value *d = b.CreateAdd(firstD(i), L.i64(static_cast<int64_t>(bytes) * (i % width)));
        offset = b.CreateSelect(bad, b.CreateSDiv(d, L.i64(bytes)), offset);
      }
    }
    L.recordViolation(op, kind, param, offset);
  };
  out.clear = b.CreateNot(anyBad);
  if (deferRecord)
    out.record = record;
  else
    L.guardedVoid(anyBad, record, /*rarely=*/true);
  return out;
}

Lowering::CheckedLanes Lowering::boundsCheck(const ir::Op &op, const Regs &ptrs, const Regs *mask,
                                             const std::function<llvm::Value *(int64_t)> &validAt,
                                             unsigned bytes, check::CheckKind kind, int64_t width,
                                             bool maskPerChunk, bool deferRecord) {
  // The parameters the access may go through, with an extent.
  const BaseSet set = prov.bases(op.operand(0));
  std::vector<size_t> bases;
  for (size_t i = 0; i < checkExtents.size(); ++i)
    if (checkExtents[i] && (set == kAnyBase || i >= 63 || (set >> i) & 1))
      bases.push_back(i);
  const int64_t n = static_cast<int64_t>(ptrs.v.size());
  CheckedLanes out;
  if (bases.empty()) { // the workspace alone: trusted
    for (int64_t i = 0; i < n; ++i)
      out.ok.v.push_back(mask ? mask->v[i] : b.getTrue());
    out.clear = b.getTrue();
    out.record = [] {};
    return out;
  }
  if (bases.size() == 1)
    return checkOneBuffer(*this, op, ptrs, mask, validAt, bytes, kind, width, maskPerChunk, deferRecord,
                          bases.front());
  // Several buffers (a select between parameters, or an origin not known): each lane is
  // tested against each, d < extent and d + bytes <= extent.
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
    // As above: a masked-off lane's test is selected in, never and'ed.
    llvm::Value *active = mask ? mask->v[i] : b.getTrue();
    if (llvm::Value *valid = validAt(i))
      active = b.CreateSelect(active, valid, b.getFalse());
    llvm::Value *bad = b.CreateSelect(active, b.CreateNot(inside), b.getFalse());
    // Walking the lanes backwards, the last select leaves the first bad lane's offset.
    llvm::Value *offset = b.CreateSDiv(firstD, i64(bytes));
    badOffset = badOffset ? b.CreateSelect(bad, offset, badOffset) : b.CreateSelect(bad, offset, i64(0));
    anyBad = anyBad ? b.CreateOr(anyBad, bad) : bad;
    out.ok.v.push_back(mask ? b.CreateSelect(mask->v[i], inside, b.getFalse()) : inside);
  }
  std::reverse(out.ok.v.begin(), out.ok.v.end());
  auto record = [this, &op, kind, param = bases.front(), badOffset] { recordViolation(op, kind, param, badOffset); };
  out.clear = b.CreateNot(anyBad);
  if (deferRecord)
    out.record = record;
  else
    guardedVoid(anyBad, record, /*rarely=*/true);
  return out;
}

} // namespace kiln::codegen::detail
