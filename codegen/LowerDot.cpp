//===- LowerDot.cpp - Matrix products of tiles ----------------------------===//
//
// Two paths, and two instruction sets on tensor cores (chosen in Lowering::dotPath).
//
// Tensor cores (NVPTX, f16 or bf16 operands, or f8 ones widened exactly to f16 or bf16
// as they are staged; M % 16 == N % 8 == K % 16 == 0; i8 and u8 ones too, as bytes two
// to a 16-bit place with s32 sums: int8Dot): the operands go to shared memory
// as 16-bit values (mmaOperandType), row-major with every row padded
// by 16 bytes (so the eight rows an ldmatrix reads fall in distinct banks). The warps
// form a WM x WN grid over the result (MmaTiling); each computes its block as 16x8
// tiles with mma.sync.m16n8k16 (f32 accumulation), loading A fragments with
// ldmatrix.x4 and B fragments with ldmatrix.x4.trans, each reused across a row or
// column of tiles. Products of 16-bit floats are exact in f32; the sums run in the
// tensor core's order, so results differ from the interpreter's k = 0 .. K-1 order by
// reassociation only. On sm_90a, a dot with one 64-row strip of the result per
// warpgroup runs on wgmma instead (LowerWgmma.cpp): the operands are staged swizzled
// rather than padded, and the tensor cores read them from shared memory directly; the
// accumulator fragments are in the same order, so everything below is shared. i8 and
// u8 operands take wgmma's integer forms there, staged as the bytes they are, both
// K-major (int8Dot, Wgmma.h; not streamed by cp.async, which cannot transpose
// B); f8 operands stay widened (Wgmma.h says why).
//
// The result stays in the mma fragment order when the fragment plan says so
// (FragmentPlan.h): always for an f32 result that every warp holds a block of; it is
// converted to the blocked layout only where some reader needs that. In the common
// loop `for k { acc = dot(a, b, acc) }` the carried accumulator is thus held in
// fragments for the whole loop, and each iteration's dot reads and writes registers
// only; in flash attention the probabilities, a Tile of the first dot, become the A
// fragments of the second without leaving registers. When, moreover, every operand of
// the loop's dots that is not in registers comes straight from an unmasked load in the
// body, and nothing else in the body writes memory or uses shared memory (loads of
// read-only memory and `if`s of such ops may stay: a sparse loop's block index and its
// partial blocks' bitmaps), the loads become
// cp.async copies into a ring of `num_stages` buffers (one iteration's operands each, as
// many as the arena holds: planArena reserves them), issued num_stages - 1 iterations ahead, so
// that global-memory latency overlaps the tensor-core work (mmaPipelineFor; the copies'
// addresses are recomputed from the iv of their iteration, through loads of the body
// where they depend on some: a sparse loop's block column). The copied values never
// reach registers, so where the addresses can be recomputed at any element each thread
// copies 16-byte pieces whatever the kernel's layout chunks are.
//
// The FMA path, correct for any M, N, K and every dtype: both operands go to shared
// memory in their compute type (f32 for float inputs, f64 when one is f64, i32 for
// integers), then every thread computes its registers of the [M, N] result with a loop
// over k = 0 .. K-1 that multiplies and adds separately (no fused multiply-add), which
// reproduces the interpreter's products and sums bit for bit.
//
//===----------------------------------------------------------------------===//
#include "codegen/MmaFragments.h"
#include "codegen/Wgmma.h"
#include "support/CheckRecord.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <functional>
#include <optional>

namespace kiln::codegen::detail {

/// f8 operands on tensor cores: every f8e4m3 and f8e5m2 value is exact in f16 and in
/// bf16 (3 and 2 bits of mantissa, exponents within both ranges), so an f8 operand is
/// staged widened to the other operand's 16-bit type, or to f16 when both are f8, and
/// the products are those of the values as written, summed in f32.
static bool isF8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

/// i8 and u8 operands: mma.sync.m16n8k32 with s32 sums (exact, wrapping as the
/// interpreter's i32 sums do). Their bytes take the places of 16-bit values in pairs:
/// an [R, K] byte tile is laid out, padded and read by ldmatrix exactly as an [R, K / 2]
/// 16-bit one, and the k32 fragments are the k16 ones of that view (A row-major, B
/// K-major), so the mma.sync machinery below serves them with K halved (and wgmma's
/// integer forms the same view).
bool int8Dot(const ir::Op &dot) {
  auto int8 = [](DType t) { return t == DType::I8 || t == DType::U8; };
  return int8(dot.operand(0)->type.dtype) && int8(dot.operand(1)->type.dtype);
}

DType Lowering::mmaOperandType(const ir::Op &dot) {
  const DType a = dot.operand(0)->type.dtype, b = dot.operand(1)->type.dtype;
  return a == DType::BF16 || b == DType::BF16 ? DType::BF16 : DType::F16;
}

bool Lowering::useTensorCores(const ir::Op &op) const {
  if (!nvptx || !opts.useTensorCores)
    return false;
  const Type &a = op.operand(0)->type, &b = op.operand(1)->type, &r = op.result()->type;
  if (int8Dot(op) && !a.pointer && !b.pointer) {
    if (!isInteger(r.dtype) || (op.numOperands() > 2 && !isInteger(op.operand(2)->type.dtype)))
      return false;
    return a.shape[0] % 16 == 0 && b.shape[1] % 8 == 0 && a.shape[1] % 32 == 0;
  }
  // Both operands 16-bit floats of one type, or f8 beside f8 or a 16-bit float (f16
  // beside bf16 is exact in neither).
  auto fits = [](DType t) { return t == DType::F16 || t == DType::BF16 || isF8(t); };
  const bool mixed16 = (a.dtype == DType::F16 && b.dtype == DType::BF16) ||
                       (a.dtype == DType::BF16 && b.dtype == DType::F16);
  if (a.pointer || b.pointer || !fits(a.dtype) || !fits(b.dtype) || mixed16 || !isFloat(r.dtype) ||
      r.dtype == DType::F64)
    return false;
  if (op.numOperands() > 2 && (!isFloat(op.operand(2)->type.dtype) ||
                               op.operand(2)->type.dtype == DType::F64))
    return false;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  return M % 16 == 0 && N % 8 == 0 && K % 16 == 0;
}

DotPath Lowering::dotPath(const ir::Op &op) const {
  if (!useTensorCores(op))
    return DotPath::Fma;
  // wgmma reads the operands from shared memory itself and keeps the tensor cores of
  // Hopper busy where mma.sync, fed through ldmatrix, saturates the shared-memory pipe
  // first. It needs the arch-specific sm_90a target and whole 64-row strips per
  // warpgroup (wgmmaFits); every other tensor-core dot keeps mma.sync, which sm_80 and
  // sm_90 run too.
  // i8 and u8 operands take wgmma's integer forms there (int8Dot, Wgmma.h).
  return wgmmaFits(*this, op) ? DotPath::Wgmma : DotPath::MmaSync;
}

/// Counts the operands equal to `v` in `block` and its nested regions.
static int64_t usesIn(const ir::Block &block, const ir::Value *v) {
  int64_t n = 0;
  for (const auto &op : block.ops()) {
    for (const ir::Value *o : op->operands())
      n += o == v;
    for (const auto &r : op->regions())
      n += usesIn(*r, v);
  }
  return n;
}

//===--------------------------------------------------------------------===//
// Streaming the operands of a loop's dot (cp.async)
//===--------------------------------------------------------------------===//

/// Whether `op` may sit in a pipelined loop body: no memory access, no control flow,
/// and no use of shared memory (the pipeline's buffers hold the arena for the loop).
static bool pipelineCompatible(Lowering &L, const ir::Op &op) {
  // A load nothing reads (one branch of a const `if` overwrote it) is dropped by LLVM.
  if (op.kind() == OpKind::Load && op.numOperands() == 1 && !L.users.count(op.result()))
    return true;
  // A load of memory nothing writes is a register-only access: the index of a sparse
  // block, its bitmap words.
  if (op.kind() == OpKind::Load)
    return L.readOnly(op) && !L.fragPlan.needsBlocked(op.result());
  // An `if` (a sparse loop's full and partial blocks) when both branches are.
  if (op.kind() == OpKind::If) {
    for (const auto &r : op.results())
      if (L.fragPlan.needsBlocked(r.get()))
        return false;
    for (unsigned i = 0; i < op.numRegions(); ++i)
      for (const auto &inner : op.region(i)->ops()) {
        if (inner->kind() != OpKind::Yield) {
          if (!pipelineCompatible(L, *inner))
            return false;
          continue;
        }
        // A branch that yields another form converts through shared memory.
        for (unsigned j = 0; j < inner->numOperands(); ++j)
          if (!L.fragPlan.formOf(op.result(j)).none() && !L.fragPlan.consumes(*inner, j))
            return false;
      }
    return true;
  }
  if (!ir::isPure(op.kind()))
    return false;
  for (const auto &r : op.results())
    if (L.fragPlan.needsBlocked(r.get())) // converted through shared memory
      return false;
  if (L.fragPlan.elided(op))
    return true;
  // On fragments: registers and shuffles only, unless a blocked operand is read in.
  if (L.fragPlan.lowersInFragments(op))
    return !L.fragPlan.pullsBlocked(op);
  // Broadcasts and permutes that lowerBroadcast / lowerPermute recompute in place need
  // no scratch although scratchAreas reserves some for them.
  int budget = 32;
  if (op.kind() == OpKind::Broadcast && (op.operand(0)->type.shape == op.result()->type.shape ||
                                         op.operand(0)->type.numElements() == 1))
    return true;
  if (op.kind() == OpKind::Broadcast || op.kind() == OpKind::Permute)
    return L.canRematerialize(op.result(), budget);
  return scratchAreas(op, L.T, L.hasWarpShuffle(), L.maxVec).empty();
}

/// Elements per cp.async of a load's chunks (0: none fits, a copy is 4 to 16 bytes).
static int64_t copyWidth(Lowering &L, const ir::Op &load) {
  const Type &pt = load.operand(0)->type;
  const int64_t w = accessVectorWidth(L.axis.info(load.operand(0)), pt.shape,
                                      L.layoutOf(pt).vec, dtypeBytes(pt.dtype));
  return w * dtypeBytes(pt.dtype) >= 4 ? w : 0;
}

/// Where a tensor-core dot keeps element (row, col) of an operand in shared memory:
/// rows padded to `ld` elements (mma.sync) or a SwizzledTile (wgmma).
struct OperandPlacement {
  int64_t ld = 0;
  std::optional<SwizzledTile> swizzled;

  /// i16 index of the element from i16 index `base`.
  llvm::Value *index(Lowering &L, llvm::Value *base, llvm::Value *row, llvm::Value *col) const {
    auto &b = L.b;
    if (swizzled)
      return b.CreateAdd(base, b.CreateLShr(swizzled->byteOffset(L, row, col), L.i32(1)));
    return b.CreateAdd(base, b.CreateAdd(b.CreateMul(row, L.i32(ld)), col));
  }
};

/// The value staged as operand `i` (0: A, 1: B) of `dot`: the operand, or for a B read
/// transposed, its transpose's source ([N, K], staged K-major).
static const ir::Value *stagedOperand(const Lowering &L, const ir::Op &dot, unsigned i) {
  const ir::Value *t = i == 1 ? L.fragPlan.transposedB(dot) : nullptr;
  return t ? t : dot.operand(i);
}

/// The placement of operand `i` (0: A, 1: B) of `dot`, row by row as it is staged.
static OperandPlacement placementOf(const Lowering &L, const ir::Op &dot, unsigned i) {
  const Shape &s = stagedOperand(L, dot, i)->type.shape;
  if (L.dotPath(dot) == DotPath::Wgmma)
    return {0, SwizzledTile::of(s[0], s[1])};
  return {s[1] + kMmaRowPad, std::nullopt};
}

Lowering::MmaPipeline Lowering::mmaPipelineFor(const ir::Op &forOp) {
  MmaPipeline p;
  const ir::Block &body = *forOp.region(0);
  if (body.argument(0)->type.dtype != DType::I32)
    return p;
  for (unsigned j = 1; j < body.numArguments(); ++j)
    if (fragPlan.needsBlocked(body.argument(j)))
      return p;
  // Every tensor-core dot of the body takes each operand from registers or from a load
  // of the body (through a transpose it reads through); nothing else in the body uses
  // shared memory or memory.
  std::vector<const ir::Op *> dots;
  int64_t capacity = 0; // the largest dot scratch: the buffers fit in it
  for (const auto &op : body.ops()) {
    if (op->kind() != OpKind::Dot)
      continue;
    if (!useTensorCores(*op) || (op->numOperands() > 2 && !fragPlan.consumes(*op, 2)) ||
        fragPlan.needsBlocked(op->result()))
      return p;
    const std::vector<int64_t> areas = dotScratchAreas(*op, dotPath(*op));
    capacity = std::max(capacity, layoutAreas(areas).totalBytes);
    for (unsigned i = 0; i < 2; ++i) {
      if (i == 0 && fragPlan.consumes(*op, 0))
        continue;
      if (int64_t bytes = i == 0 ? residentOperandBytes(*op) : 0) {
        p.residents.push_back({op.get(), p.residentBytes});
        p.residentBytes += wgmmaAligned(bytes);
        continue;
      }
      // A load that must read memory afresh (.cv) is not streamed: cp.async has no such
      // form. Other hints are dropped by a streamed load (cp.async takes its own). In
      // checked mode each copy is tested against its buffer first (copyOperand).
      // cp.async copies bytes as they are: an f8 operand, widened as it is staged, is not
      // streamed.
      const ir::Op *ld = stagedOperand(*this, *op, i)->definingOp();
      if (!ld || ld->kind() != OpKind::Load || ld->result()->type.dtype != mmaOperandType(*op) ||
          ld->parentBlock() != &body ||
          ld->numOperands() != 1 || usesIn(body, ld->result()) != 1 || copyWidth(*this, *ld) == 0 ||
          ir::readsAfresh(*ld))
        return p;
      p.streams.push_back({op.get(), i, ld, p.stageBytes});
      // Every buffer starts where wgmma's swizzle pattern does.
      p.stageBytes += wgmmaAligned(areas[i]);
    }
    dots.push_back(op.get());
  }
  if (dots.empty())
    return p;
  // The ring starts at the arena's start, which planArena sized for it
  // (pipelineRingBytes) as well as for the dots' own scratch; it must end before the
  // cluster exchanges' area, which other programs of the cluster write.
  capacity = std::max(capacity, exchangeBase);
  const int64_t stages = std::min<int64_t>(kernel.numStages, (capacity - p.residentBytes) / p.stageBytes);
  if (stages < 2)
    return {};
  p.residentBase = stages * p.stageBytes;
  for (const auto &op : body.ops())
    if (op->kind() != OpKind::Dot && op->kind() != OpKind::Yield && !p.copies(op.get()) &&
        !pipelineCompatible(*this, *op))
      return {};
  // The addresses may depend on the iv and on values from outside the loop only: the
  // copies for a later iteration recompute them from its iv.
  std::vector<const ir::Op *> slice;
  std::vector<const ir::Value *> work;
  for (const MmaPipeline::Stream &st : p.streams)
    work.push_back(st.load->operand(0));
  while (!work.empty()) {
    const ir::Value *v = work.back();
    work.pop_back();
    if (v->isBlockArgument()) {
      if (v->ownerBlock() == &body && v != body.argument(0))
        return {};
      continue;
    }
    const ir::Op *def = v->definingOp();
    if (def->parentBlock() != &body ||
        std::find(slice.begin(), slice.end(), def) != slice.end())
      continue;
    // issueMmaStage lowers the slice again for a later iteration and puts back only the
    // blocked registers: nothing there may hold fragments or regions.
    if (def->numRegions() != 0 || !fragPlan.formOf(def->result()).none())
      return {};
    slice.push_back(def);
    for (const ir::Value *o : def->operands())
      work.push_back(o);
  }
  for (const auto &op : body.ops()) // body order
    if (std::find(slice.begin(), slice.end(), op.get()) != slice.end())
      p.slice.push_back(op.get());
  p.loop = &forOp;
  p.first = dots.front();
  p.stages = stages;
  p.distance = stages - 1;
  // A wgmma ring that publishesRing allows, in a program of two warpgroups or more,
  // publishes each buffer by an mbarrier instead of a barrier of all warps
  // (MmaPipeline::published), where the arena has room for them (pipelineRingBytes
  // reserved it).
  const int64_t barrierBase = (p.residentBase + p.residentBytes + 7) / 8 * 8;
  const bool allWgmma = std::all_of(dots.begin(), dots.end(),
                                    [&](const ir::Op *d) { return dotPath(*d) == DotPath::Wgmma; });
  if (opts.publishedRing && allWgmma && T >= 256 &&
      publishesRing(static_cast<int64_t>(dots.size()), stages, p.stageBytes) &&
      barrierBase + ringBarrierBytes(stages) <= capacity) {
    p.published = true;
    p.barrierBase = barrierBase;
    p.distance = stages - 2;
  }
  return p;
}

int64_t Lowering::residentOperandBytes(const ir::Op &dot) const {
  // A loop-invariant A operand that the product would otherwise stage into shared
  // memory on every iteration (where it cannot stay in registers: checked mode on
  // sm_90a, FragmentPlan::tryAOperand) is staged once, so that the loop can still
  // stream its other operands.
  const ir::Block *body = dot.parentBlock();
  const ir::Op *loop = body ? body->parentOp() : nullptr;
  if (!loop || loop->kind() != OpKind::For || !useTensorCores(dot) || int8Dot(dot) || fragPlan.consumes(dot, 0))
    return 0;
  const ir::Value *a = dot.operand(0);
  const ir::Block *home = a->isBlockArgument() ? a->ownerBlock() : a->definingOp()->parentBlock();
  for (const ir::Block *b = home; b; b = b->parentOp() ? b->parentOp()->parentBlock() : nullptr)
    if (b == body)
      return 0; // computed in the loop
  if (!fragPlan.formOf(a).none())
    return 0; // held in fragment order: nothing to stage from
  return dotScratchAreas(dot, dotPath(dot))[0];
}

/// cp.async copies of `load`'s tile into shared memory at i16 index `base`, placed as
/// stageOperand places it. In checked mode every copy is first tested against the
/// buffer its load goes through, as the load itself would be (LowerChecks.cpp: the first
/// piece out of bounds is recorded); one that fails copies no byte and fills its piece
/// with zeros (cp.async's source size 0), so the dot goes on without reading outside.
static void copyOperand(Lowering &L, const ir::Op &load, llvm::Value *base,
                        const OperandPlacement &place) {
  auto &b = L.b;
  const Type &t = load.result()->type;
  Layout l = L.layoutOf(t);
  int64_t w = copyWidth(L, load);
  const int64_t cols = t.shape[1];
  // The copied values never reach registers, so the copies need not follow the
  // kernel's layout: where its chunks are narrower than 16 bytes (a kernel that also
  // accesses f32 tiles) and the addresses can be recomputed at any element, each
  // thread copies 16-byte pieces of its own.
  const Layout wide = Layout::forType(t, L.T, 16 / dtypeBytes(t.dtype));
  const int64_t wideWidth = accessVectorWidth(L.axis.info(load.operand(0)), load.operand(0)->type.shape,
                                              wide.vec, dtypeBytes(t.dtype));
  int budget = Lowering::kRecomputeBudget;
  // Checked mode tests the copies through the pointers of the kernel's own layout.
  const bool recompute = !L.opts.checked && wideWidth > w && L.canRematerialize(load.operand(0), budget);
  if (recompute) {
    l = wide;
    w = wideWidth;
  }
  const int64_t bytes = w * 2;
  const Regs *ptrs = recompute ? nullptr : &L.get(load.operand(0));
  Lowering::CheckedLanes checked;
  if (L.opts.checked)
    checked = L.boundsCheck(load, *ptrs, nullptr, [](int64_t) -> llvm::Value * { return nullptr; },
                            static_cast<unsigned>(dtypeBytes(t.dtype)), check::CheckKind::Load, w);
  // A copy's test: its chunk's where one test covers it, else its lanes' together.
  auto copyOk = [&](int64_t lane) -> llvm::Value * {
    if (!checked.wholeChunk.empty())
      return checked.wholeChunk[lane / w];
    llvm::Value *all = nullptr;
    for (int64_t k = 0; k < w; ++k) {
      llvm::Value *ok = checked.laneMask(lane + k, checked.ok);
      all = all ? b.CreateAnd(all, ok) : ok;
    }
    return all;
  };
  const llvm::Intrinsic::ID id = bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16
                                 : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8
                                              : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
  const llvm::Intrinsic::ID sizedId = bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                                      : bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                                                   : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s;
  for (int64_t round = 0; round < l.numRounds(); ++round) {
    // Registers of an invalid round copy the last chunk again, to the same place.
    llvm::Value *e = L.elementIndex(l, round * l.vec);
    llvm::Value *row = b.CreateUDiv(e, L.i32(cols)), *col = b.CreateURem(e, L.i32(cols));
    for (int64_t j = 0; j < l.vec; j += w) {
      // A copy never crosses a 16-byte piece, which the swizzle keeps together.
      llvm::Value *at = place.index(L, base, row, b.CreateAdd(col, L.i32(j)));
      llvm::Value *from = recompute ? L.rematerialize(load.operand(0), b.CreateAdd(e, L.i32(j)))
                                    : ptrs->v[round * l.vec + j];
      llvm::Value *to = L.sharedAddr(0, at, b.getInt16Ty());
      if (L.opts.checked)
        b.CreateIntrinsic(sizedId, {},
                          {to, from, b.CreateSelect(copyOk(round * l.vec + j), L.i32(bytes), L.i32(0))});
      else
        b.CreateIntrinsic(id, {}, {to, from});
    }
  }
}

void Lowering::issueMmaStage(const MmaPipeline &p, llvm::Value *iv, llvm::Value *stage,
                             llvm::Value *cond) {
  const ir::Block &body = *p.loop->region(0);
  // The slice is lowered again for `iv`; the current iteration's values come back after.
  std::vector<std::pair<const ir::Value *, std::optional<Regs>>> saved;
  auto save = [&](const ir::Value *v) {
    auto it = vals.find(v);
    saved.push_back({v, it == vals.end() ? std::nullopt : std::optional<Regs>(it->second)});
  };
  save(body.argument(0));
  for (const ir::Op *op : p.slice)
    for (const auto &r : op->results())
      save(r.get());
  vals[body.argument(0)] = Regs{{iv}};
  guardedVoid(cond, [&] {
    for (const ir::Op *op : p.slice)
      lowerOp(*op);
    llvm::Value *base = b.CreateMul(stage, i32(p.stageBytes / 2));
    for (const MmaPipeline::Stream &st : p.streams)
      copyOperand(*this, *st.load, b.CreateAdd(base, i32(st.offset / 2)),
                  placementOf(*this, *st.dot, st.operand));
  });
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, llvm::ArrayRef<llvm::Type *>{},
                    llvm::ArrayRef<llvm::Value *>{});
  for (auto &[v, r] : saved) {
    if (r)
      vals[v] = *r;
    else
      vals.erase(v);
  }
}

/// Writes a 16-bit operand tile to shared memory at byte `offset`, placed as `place`
/// says, each chunk of the blocked layout as one vector store.
static void stageOperand(Lowering &L, const ir::Op &dot, const Type &t, const Regs &r, int64_t offset,
                         const OperandPlacement &place) {
  const DType as = Lowering::mmaOperandType(dot);
  auto &b = L.b;
  const Layout l = L.layoutOf(t);
  const int64_t cols = t.shape[1];
  auto *vty = llvm::FixedVectorType::get(b.getInt16Ty(), static_cast<unsigned>(l.vec));
  for (int64_t round = 0; round < l.numRounds(); ++round) {
    // A chunk never crosses a row: vec divides the row length (a multiple of 8).
    llvm::Value *e = L.elementIndex(l, round * l.vec);
    llvm::Value *row = b.CreateUDiv(e, L.i32(cols)), *col = b.CreateURem(e, L.i32(cols));
    llvm::Value *vec = llvm::PoisonValue::get(vty);
    for (int64_t j = 0; j < l.vec; ++j)
      vec = b.CreateInsertElement(vec, L.encodeNarrow(as, r.v[round * l.vec + j], false), j);
    llvm::Value *addr = L.sharedAddr(offset, place.index(L, L.i32(0), row, col), b.getInt16Ty());
    b.CreateAlignedStore(vec, addr, llvm::Align(l.vec * 2));
  }
}

/// Writes an 8-bit operand tile to shared memory at byte `offset` as rows of `ldBytes`
/// bytes: row-major, or with `kMajor` its transpose (element (k, n) at n * ldBytes + k, B
/// as mma.sync's col operand reads it).
static void stageBytes(Lowering &L, const Type &t, const Regs &r, int64_t offset, int64_t ldBytes, bool kMajor) {
  auto &b = L.b;
  const Layout l = L.layoutOf(t);
  const int64_t cols = t.shape[1];
  const Type elem = Type::scalar(t.dtype);
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *e = L.elementIndex(l, reg);
    llvm::Value *row = b.CreateUDiv(e, L.i32(cols)), *col = b.CreateURem(e, L.i32(cols));
    llvm::Value *at = kMajor ? b.CreateAdd(b.CreateMul(col, L.i32(ldBytes)), row)
                             : b.CreateAdd(b.CreateMul(row, L.i32(ldBytes)), col);
    L.storeShared(L.toMemory(r.v[reg], elem), offset, at);
  }
}

/// Writes an 8-bit operand tile to shared memory at byte `offset` for wgmma: K-major
/// (A [M, K] as it is, B [K, N] transposed when `transpose`), its [R, K] bytes placed
/// as the SwizzledTile of the [R, K / 2] 16-bit view, each byte beside the other byte
/// of its place.
static void stageBytesSwizzled(Lowering &L, const Type &t, const Regs &r, int64_t offset, bool transpose) {
  auto &b = L.b;
  const Layout l = L.layoutOf(t);
  const int64_t cols = t.shape[1];
  const int64_t rows = transpose ? t.shape[1] : t.shape[0], k = transpose ? t.shape[0] : t.shape[1];
  const SwizzledTile tile = SwizzledTile::of(rows, k / 2);
  const Type elem = Type::scalar(t.dtype);
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *e = L.elementIndex(l, reg);
    llvm::Value *row = b.CreateUDiv(e, L.i32(cols)), *col = b.CreateURem(e, L.i32(cols));
    if (transpose)
      std::swap(row, col);
    llvm::Value *at = b.CreateAdd(tile.byteOffset(L, row, b.CreateLShr(col, L.i32(1))),
                                  b.CreateAnd(col, L.i32(1)));
    L.storeShared(L.toMemory(r.v[reg], elem), offset, at);
  }
}

/// The shared address (i32) of buffer `slot`'s mbarrier in a published ring.
static llvm::Value *ringBarrier(Lowering &L, const Lowering::MmaPipeline &p, llvm::Value *slot) {
  llvm::Value *base = L.b.CreateTrunc(L.b.CreatePtrToInt(L.arena, L.b.getInt64Ty()), L.b.getInt32Ty());
  return L.b.CreateAdd(base, L.b.CreateAdd(L.i32(p.barrierBase), L.b.CreateShl(slot, L.i32(3))));
}

void Lowering::initRingBarriers(const MmaPipeline &p) {
  guardedVoid(b.CreateICmpEQ(tid, i32(0)), [&] {
    for (int64_t s = 0; s < p.stages; ++s)
      voidAsm("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", {ringBarrier(*this, p, i32(s)), i32(T)});
  });
  barrier();
}

void Lowering::releaseRingBarriers(const MmaPipeline &p) {
  // Every thread is past its last wait; then the memory may be used for other data.
  barrier();
  guardedVoid(b.CreateICmpEQ(tid, i32(0)), [&] {
    for (int64_t s = 0; s < p.stages; ++s)
      voidAsm("mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", {ringBarrier(*this, p, i32(s))});
  });
  barrier();
}

void Lowering::publishBuffer(const MmaPipeline &p, llvm::Value *slot, int64_t newer) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {i32(newer)});
  fenceForWgmma(*this);
  voidAsm("mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", {ringBarrier(*this, p, slot)});
}

void Lowering::waitForBuffer(const MmaPipeline &p) {
  voidAsm("{\n.reg .pred done;\nwait${:uid}:\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
          "@!done bra wait${:uid};\n}",
          "r,r,~{memory}", {ringBarrier(*this, p, p.stage), p.phase});
}

void Lowering::stageResidentOperands(const MmaPipeline &p) {
  for (const MmaPipeline::Resident &r : p.residents)
    stageOperand(*this, *r.dot, r.dot->operand(0)->type, get(r.dot->operand(0)), p.residentBase + r.offset,
                 placementOf(*this, *r.dot, 0));
}

/// ldmatrix.sync.aligned.m8n8.{x2,x4}[.trans].shared.b16 at a shared address.
static Values ldmatrix(Lowering &L, llvm::Value *addr, int count, bool trans) {
  auto &b = L.b;
  std::string text = "ldmatrix.sync.aligned.m8n8.x" + std::to_string(count) +
                     (trans ? ".trans" : "") + ".shared.b16 {";
  std::string cons;
  for (int i = 0; i < count; ++i) {
    text += (i ? ", $" : "$") + std::to_string(i);
    cons += "=r,";
  }
  text += "}, [$" + std::to_string(count) + "];";
  cons += "l,~{memory}";
  std::vector<llvm::Type *> rets(static_cast<size_t>(count), b.getInt32Ty());
  auto *sty = llvm::StructType::get(L.ctx, rets);
  auto *fty = llvm::FunctionType::get(sty, {b.getInt64Ty()}, false);
  auto *asmv = llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true);
  llvm::Value *r = b.CreateCall(fty, asmv, {b.CreatePtrToInt(addr, b.getInt64Ty())});
  Values out;
  for (int i = 0; i < count; ++i)
    out.push_back(b.CreateExtractValue(r, static_cast<unsigned>(i)));
  return out;
}

/// Writes fragment registers to `offset` as a row-major f32 [M, N] tile.
static void storeFragments(Lowering &L, const MmaTiling &tl, const MmaLane &m, const Values &frag,
                           int64_t N, int64_t offset) {
  L.guardedVoid(m.writer, [&] {
    for (int64_t reg = 0; reg < tl.regsPerThread(); ++reg) {
      auto [row, col] = fragmentCoord(L, tl, m, reg);
      L.storeShared(frag[reg], offset, L.b.CreateAdd(L.b.CreateMul(row, L.i32(N)), col));
    }
  });
}

/// The A fragments of a dot whose A operand is in registers (FragmentPlan.h), a Tile or
/// an AOperand:
/// for k step ks and row of tiles mi, entry [ks * mTiles + mi] holds the four 32-bit
/// registers of mma.sync's m16n8k16 A fragment (and of wgmma's register A). They are
/// the operand's tiles (mi, 2 ks) and (mi, 2 ks + 1), two 16-bit values a register:
/// rows g and g + 8 of the first, then of the second.
static std::vector<Values> aFragmentsFromRegisters(Lowering &L, const ir::Op &dot) {
  const ir::Value *a = dot.operand(0);
  const FragForm &f = L.fragPlan.formOf(a);
  const Regs &r = L.getFrag(a);
  const DType t = a->type.dtype;
  if (f.kind == FragForm::Kind::AOperand) { // already packed, in this order
    std::vector<Values> out;
    for (size_t i = 0; i < r.v.size(); i += 4)
      out.push_back(Values(r.v.begin() + static_cast<long>(i), r.v.begin() + static_cast<long>(i + 4)));
    return out;
  }
  auto pack = [&](int64_t reg) { return L.packNarrowPair(t, r.v[reg], r.v[reg + 1]); };
  const int64_t K = a->type.shape[1], nt = f.tiling.nTiles;
  std::vector<Values> out;
  for (int64_t ks = 0; ks < K / 16; ++ks)
    for (int64_t mi = 0; mi < f.tiling.mTiles; ++mi) {
      const int64_t t0 = (mi * nt + 2 * ks) * 4, t1 = t0 + 4;
      out.push_back({pack(t0), pack(t0 + 2), pack(t1), pack(t1 + 2)});
    }
  return out;
}

/// The mma.sync product: fragments of `init` plus A @ B, with B in padded rows at i16
/// index `bBase` of the arena, and A likewise at `aBase` or, when `aRegs` is given, in
/// registers (aFragmentsFromRegisters; the k steps are then unrolled).
static Values mmaSyncProduct(Lowering &L, const ir::Op &op, const MmaTiling &tl, const MmaLane &m,
                             llvm::Value *aBase, llvm::Value *bBase, const Values &init,
                             const std::vector<Values> *aRegs) {
  auto &b = L.b;
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
  const bool int8 = int8Dot(op);
  // K in 16-bit places: an 8-bit operand's bytes go two to a place (int8Dot).
  const int64_t K = int8 ? at.shape[1] / 2 : at.shape[1], N = bt.shape[1];
  const int64_t lda = K + kMmaRowPad, ldb = N + kMmaRowPad;
  const bool bf16 = Lowering::mmaOperandType(op) == DType::BF16;
  // ldmatrix row addresses. A (x4): lanes 0-15 give rows 0-15 at k, lanes 16-31 the
  // same rows at k + 8 -> a0..a3. B (x4.trans): lanes give rows k .. k + 15 of columns
  // n (lanes 0-15) and n + 8 (lanes 16-31) -> b0, b1 of two adjacent tiles.
  llvm::Value *lane16 = b.CreateAnd(m.lane, L.i32(15));
  llvm::Value *half = b.CreateShl(b.CreateLShr(m.lane, L.i32(4)), L.i32(3));
  llvm::Value *aLane = b.CreateAdd(
      aBase, b.CreateAdd(b.CreateMul(b.CreateAdd(m.rowBase, lane16), L.i32(lda)), half));
  llvm::Value *bLane = b.CreateAdd(
      bBase, b.CreateAdd(b.CreateMul(lane16, L.i32(ldb)), b.CreateAdd(m.colBase, half)));
  llvm::Value *bLaneX2 = b.CreateAdd(bBase, b.CreateAdd(b.CreateMul(lane16, L.i32(ldb)), m.colBase));
  // B staged K-major ([N, K] rows of K + pad): plain ldmatrix.x4, whose lanes give rows
  // n .. n + 7 at k (lanes 0-7) and k + 8 (8-15), then n + 8 .. n + 15 likewise ->
  // b0, b1 of two adjacent tiles; x2 (lanes 0-15) for a last odd tile.
  const bool bKMajor = int8 || L.fragPlan.transposedB(op) != nullptr;
  const int64_t ldbt = K + kMmaRowPad;
  llvm::Value *lane8 = b.CreateAnd(m.lane, L.i32(7));
  llvm::Value *nLane = b.CreateAdd(m.colBase, b.CreateAdd(lane8, b.CreateShl(b.CreateLShr(m.lane, L.i32(4)), L.i32(3))));
  llvm::Value *kHalf = b.CreateShl(b.CreateAnd(b.CreateLShr(m.lane, L.i32(3)), L.i32(1)), L.i32(3));
  llvm::Value *bLaneT = b.CreateAdd(bBase, b.CreateAdd(b.CreateMul(nLane, L.i32(ldbt)), kHalf));
  auto toOperand = [&](llvm::Value *v) -> llvm::Value * {
    return bf16 || int8 ? v : b.CreateBitCast(v, llvm::FixedVectorType::get(b.getHalfTy(), 2));
  };
  const bool aUnsigned = at.dtype == DType::U8, bUnsigned = bt.dtype == DType::U8;
  const llvm::Intrinsic::ID id =
      int8 ? (aUnsigned ? (bUnsigned ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_u8
                                     : llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_u8_s8)
                        : (bUnsigned ? llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8_u8
                                     : llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8))
      : bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
             : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  // One k step; `ks` is its index when A is in registers.
  auto step = [&](llvm::Value *k0, int64_t ks, const Values &cur) {
    std::vector<Values> af, bfr;
    for (int64_t mi = 0; mi < tl.mTiles; ++mi)
      af.push_back(aRegs ? (*aRegs)[ks * tl.mTiles + mi]
                         : ldmatrix(L,
                                    L.sharedAddr(0, b.CreateAdd(aLane, b.CreateAdd(k0, L.i32(mi * 16 * lda))),
                                                 b.getInt16Ty()),
                                    4, false));
    llvm::Value *kRow = b.CreateMul(k0, L.i32(ldb));
    for (int64_t ni = 0; ni < tl.nTiles; ni += 2) {
      const bool pair = ni + 1 < tl.nTiles;
      llvm::Value *e = bKMajor ? b.CreateAdd(bLaneT, b.CreateAdd(k0, L.i32(ni * 8 * ldbt)))
                               : b.CreateAdd(pair ? bLane : bLaneX2, b.CreateAdd(kRow, L.i32(ni * 8)));
      Values r = ldmatrix(L, L.sharedAddr(0, e, b.getInt16Ty()), pair ? 4 : 2, !bKMajor);
      bfr.push_back({r[0], r[1]});
      if (pair)
        bfr.push_back({r[2], r[3]});
    }
    Values next(cur.size());
    for (int64_t mi = 0; mi < tl.mTiles; ++mi)
      for (int64_t ni = 0; ni < tl.nTiles; ++ni) {
        const int64_t base = (mi * tl.nTiles + ni) * 4;
        llvm::Value *d = b.CreateIntrinsic(
            id, llvm::ArrayRef<llvm::Type *>{},
            {toOperand(af[mi][0]), toOperand(af[mi][1]), toOperand(af[mi][2]), toOperand(af[mi][3]),
             toOperand(bfr[ni][0]), toOperand(bfr[ni][1]), cur[base], cur[base + 1], cur[base + 2],
             cur[base + 3]});
        for (unsigned j = 0; j < 4; ++j)
          next[base + j] = b.CreateExtractValue(d, j);
      }
    return next;
  };
  if (aRegs) {
    Values cur = init;
    for (int64_t ks = 0; ks < K / 16; ++ks)
      cur = step(L.i32(ks * 16), ks, cur);
    return cur;
  }
  return L.loop(L.i32(0), L.i32(K / 16), 1, init, [&](llvm::Value *ks, const Values &cur) {
    return step(b.CreateMul(ks, L.i32(16)), -1, cur);
  });
}

/// dot on tensor cores; see the file comment.
static void lowerDotMma(Lowering &L, const ir::Op &op) {
  auto &b = L.b;
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  const int64_t M = at.shape[0], N = bt.shape[1];
  const bool wgmma = L.dotPath(op) == DotPath::Wgmma;
  const ScratchPlan plan = layoutAreas(dotScratchAreas(op, L.dotPath(op)));
  const int64_t aOff = plan.offsets[0], bOff = plan.offsets[1], cOff = plan.offsets[2];
  const bool hasAcc = op.numOperands() > 2;
  // The fragment plan may keep the result, the accumulator and A in registers.
  const bool accIn = hasAcc && L.fragPlan.consumes(op, 2);
  const bool resultInFragments = L.fragPlan.formOf(op.result()).kind == FragForm::Kind::Tile;
  const bool aInRegisters = L.fragPlan.consumes(op, 0);
  const MmaTiling tl = L.tilingOf(op);

  // Where the operands are read: the dot's own areas, or the pipeline buffer of this
  // iteration (i16 indices, from the arena's start).
  llvm::Value *aBase = L.i32(aOff / 2), *bBase = L.i32(bOff / 2);
  const Lowering::MmaPipeline &p = L.pipeline;
  const bool streamed = p.loop && p.find(&op, 1);
  std::function<void()> refillAhead; // the copies of iteration `i + stages - 1`
  if (streamed) {
    if (&op == p.first && p.published) {
      // Every thread has published this iteration's buffer; the copies that refill the
      // buffer of `distance` iterations ahead (the one read two iterations ago, which
      // every warp has left since it published this one) go out before the product.
      L.waitForBuffer(p);
      llvm::Value *refill = b.CreateURem(b.CreateAdd(p.stage, L.i32(p.distance)), L.i32(p.stages));
      L.issueMmaStage(p, p.ivAhead, refill, p.condAhead);
    } else if (&op == p.first) {
      // This iteration's copies have landed once at most stages - 2 newer groups are
      // in flight; the barrier also ends every warp's reads of the buffer refilled
      // next (the previous iteration's, read by all its dots).
      b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {L.i32(p.stages - 2)});
      if (wgmma)
        fenceForWgmma(L);
      L.barrier();
      llvm::Value *refill = b.CreateSelect(b.CreateICmpEQ(p.stage, L.i32(0)), L.i32(p.stages - 1),
                                           b.CreateSub(p.stage, L.i32(1)));
      // The copies are in flight while the product runs either way. A lone wgmma
      // product (a matmul's K loop) issues them inside its asynchronous window, after
      // the commit, which measured faster. With several products (flash attention)
      // the loop's live fragments leave ptxas few registers, and copies issued inside
      // that window gave wrong results (BM 128, BN 128, 8 warps: 254 registers), so
      // they go out first, as for mma.sync, which runs in program order.
      const bool loneProduct =
          std::all_of(p.streams.begin(), p.streams.end(),
                      [&](const Lowering::MmaPipeline::Stream &st) { return st.dot == &op; });
      if (wgmma && loneProduct)
        refillAhead = [&L, &p, refill] { L.issueMmaStage(p, p.ivAhead, refill, p.condAhead); };
      else
        L.issueMmaStage(p, p.ivAhead, refill, p.condAhead);
    }
    llvm::Value *stageBase = b.CreateMul(p.stage, L.i32(p.stageBytes / 2));
    if (const Lowering::MmaPipeline::Stream *sa = p.find(&op, 0))
      aBase = b.CreateAdd(stageBase, L.i32(sa->offset / 2));
    else if (const Lowering::MmaPipeline::Resident *r = p.resident(&op))
      aBase = L.i32((p.residentBase + r->offset) / 2); // staged before the loop
    bBase = b.CreateAdd(stageBase, L.i32(p.find(&op, 1)->offset / 2));
  } else if (wgmma && int8Dot(op)) {
    // Both K-major, swizzled as the 16-bit view (Wgmma.h).
    L.beginSharedUse();
    stageBytesSwizzled(L, at, L.get(op.operand(0)), aOff, false);
    stageBytesSwizzled(L, bt, L.get(op.operand(1)), bOff, true);
    fenceForWgmma(L);
  } else if (int8Dot(op)) {
    // Rows of K + 16 bytes: the padded rows of the 16-bit view (int8Dot).
    L.beginSharedUse();
    const int64_t ld = at.shape[1] + 2 * kMmaRowPad;
    stageBytes(L, at, L.get(op.operand(0)), aOff, ld, false);
    stageBytes(L, bt, L.get(op.operand(1)), bOff, ld, true);
  } else {
    L.beginSharedUse();
    if (!aInRegisters)
      stageOperand(L, op, at, L.get(op.operand(0)), aOff, placementOf(L, op, 0));
    const ir::Value *staged = stagedOperand(L, op, 1);
    stageOperand(L, op, staged->type, L.get(staged), bOff, placementOf(L, op, 1));
    if (wgmma)
      fenceForWgmma(L);
  }
  // The sums: f32, or i32 for an integer product.
  const DType sumType = int8Dot(op) ? DType::I32 : DType::F32;
  llvm::Type *sumTy = int8Dot(op) ? static_cast<llvm::Type *>(b.getInt32Ty()) : b.getFloatTy();
  if (hasAcc && !accIn) {
    const Regs &acc = L.get(op.operand(2));
    const Layout lc = L.layoutOf(rt);
    for (int64_t reg = 0; reg < lc.numRegs(); ++reg)
      L.storeShared(L.convert(op.operand(2)->type.dtype, sumType, acc.v[reg]), cOff, L.elementIndex(lc, reg));
  }
  if (!streamed)
    L.sharedWritten();

  const MmaLane m = mmaLane(L, tl, M, N);
  Values init;
  if (accIn) {
    init = L.getFrag(op.operand(2)).v;
  } else {
    for (int64_t reg = 0; reg < tl.regsPerThread(); ++reg) {
      auto [row, col] = fragmentCoord(L, tl, m, reg);
      init.push_back(hasAcc ? L.loadShared(sumTy, cOff, b.CreateAdd(b.CreateMul(row, L.i32(N)), col))
                            : llvm::Constant::getNullValue(sumTy));
    }
  }
  std::vector<Values> aRegs;
  if (aInRegisters)
    aRegs = aFragmentsFromRegisters(L, op);
  Values sums = wgmma ? wgmmaProduct(L, op, aBase, bBase, init, refillAhead,
                                     aInRegisters ? &aRegs : nullptr)
                      : mmaSyncProduct(L, op, tl, m, aBase, bBase, init,
                                       aInRegisters ? &aRegs : nullptr);
  if (streamed && &op == p.first && p.published) {
    // Publish the next iteration's buffer once this thread's copies into it have landed
    // (the groups of the `distance - 1` iterations after it may still be in flight): a
    // warp that finished this iteration first may start the next one while the others
    // are still in this one's later products.
    L.publishBuffer(p, b.CreateURem(b.CreateAdd(p.stage, L.i32(1)), L.i32(p.stages)), p.distance - 1);
  }
  L.sharedRead();
  if (resultInFragments) {
    L.frags[op.result()] = Regs{std::move(sums)};
    return; // lowerOp converts it where a reader needs it blocked
  }
  // Back to the blocked layout through shared memory.
  L.beginSharedUse();
  storeFragments(L, tl, m, sums, N, cOff);
  L.sharedWritten();
  const Layout lr = L.layoutOf(rt);
  Regs out;
  for (int64_t reg = 0; reg < lr.numRegs(); ++reg)
    out.v.push_back(L.convert(sumType, rt.dtype, L.loadShared(sumTy, cOff, L.elementIndex(lr, reg))));
  L.sharedRead();
  L.set(op.result(), std::move(out));
}

/// Writes tile `r` of type `t` to the arena converted to compute dtype `ct`.
static void storeConverted(Lowering &L, const Regs &r, const Type &t, DType ct, int64_t offset) {
  const Layout l = L.layoutOf(t);
  for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
    llvm::Value *v = L.convert(t.dtype, ct, r.v[reg]);
    L.storeShared(v, offset, L.elementIndex(l, reg));
  }
}

void Lowering::lowerDot(const ir::Op &op) {
  if (useTensorCores(op))
    return lowerDotMma(*this, op);
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
  const Type &rt = op.result()->type;
  const int64_t K = at.shape[1], N = bt.shape[1];
  const bool flt = isFloat(at.dtype);
  if (flt != isFloat(bt.dtype))
    unsupported(op, "dot of a float and an integer tile");
  if (!flt && isFloat(rt.dtype))
    unsupported(op, "an integer dot with a float accumulator");
  const DType ct = !flt ? DType::I32
                        : (at.dtype == DType::F64 || bt.dtype == DType::F64 ? DType::F64
                                                                           : DType::F32);
  llvm::Type *cty = regTypeOf(ct);
  const ScratchPlan plan = scratchPlan(op);
  const int64_t aOff = plan.offsets[0], bOff = plan.offsets[1];

  beginSharedUse();
  storeConverted(*this, get(op.operand(0)), at, ct, aOff);
  storeConverted(*this, get(op.operand(1)), bt, ct, bOff);
  sharedWritten();

  const Layout l = layoutOf(rt);
  const int64_t n = l.numRegs();
  // Per register: its row's offset in A and its column; the starting sum.
  Values rowBase, col, init;
  const Regs *acc = op.numOperands() > 2 ? &get(op.operand(2)) : nullptr;
  for (int64_t reg = 0; reg < n; ++reg) {
    llvm::Value *e = elementIndex(l, reg);
    rowBase.push_back(b.CreateMul(b.CreateUDiv(e, i32(N)), i32(K)));
    col.push_back(b.CreateURem(e, i32(N)));
    init.push_back(acc ? convert(op.operand(2)->type.dtype, ct, acc->v[reg])
                       : llvm::Constant::getNullValue(cty));
  }
  Values sums = loop(i32(0), i32(K), 1, init, [&](llvm::Value *k, const Values &cur) {
    Values next;
    llvm::Value *bRow = b.CreateMul(k, i32(N));
    for (int64_t reg = 0; reg < n; ++reg) {
      llvm::Value *x = loadShared(cty, aOff, b.CreateAdd(rowBase[reg], k));
      llvm::Value *y = loadShared(cty, bOff, b.CreateAdd(bRow, col[reg]));
      next.push_back(flt ? b.CreateFAdd(cur[reg], b.CreateFMul(x, y))
                         : b.CreateAdd(cur[reg], b.CreateMul(x, y)));
    }
    return next;
  });
  sharedRead();
  Regs out;
  for (llvm::Value *s : sums)
    out.v.push_back(convert(ct, rt.dtype, s));
  set(op.result(), std::move(out));
}

} // namespace kiln::codegen::detail
