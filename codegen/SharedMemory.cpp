//===- SharedMemory.cpp - Scratch areas of the ops that use shared memory -===//
//
// The area lists below are the contract between each op's lowering and the arena
// planner; the comments say what each area holds.
//
//===----------------------------------------------------------------------===//
#include "codegen/SharedMemory.h"

#include "codegen/Layout.h"

#include <algorithm>

namespace kiln::codegen {

using ir::OpKind;

int64_t sharedElementBytes(const Type &type) {
  if (type.pointer)
    return 8;
  switch (type.dtype) {
  case DType::Bool:
  case DType::I8:
  case DType::U8:
    return 1;
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I32:
  case DType::U32:
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::U64:
  case DType::F64:
    return 8;
  }
  return 8;
}

static int64_t alignedTo16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

int64_t exchangeWords(const Type &type, int64_t numThreads, int64_t maxVec) {
  return type.isScalar() ? 1 : Layout::forType(type, numThreads, maxVec).numRegs() * numThreads;
}

int64_t exchangeWordBytes(const Type &type) { return sharedElementBytes(type) == 8 ? 8 : 4; }

ScratchPlan layoutAreas(const std::vector<int64_t> &sizes) {
  ScratchPlan p;
  int64_t at = 0;
  for (int64_t s : sizes) {
    p.offsets.push_back(at);
    at += alignedTo16(s);
  }
  p.totalBytes = at;
  return p;
}

/// Lines and line length of a reduction/scan/sort along `axis` of `shape`.
static void linesOf(const Shape &shape, int64_t axis, int64_t &lines, int64_t &length) {
  lines = 1;
  length = shape[axis];
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != axis)
      lines *= shape[d];
}

bool reducesInRegisters(const ir::Op &op, int64_t numThreads, int64_t maxVec) {
  const OpKind k = op.kind();
  if (k != OpKind::Reduce && k != OpKind::Argmax && k != OpKind::Argmin)
    return false;
  if (k == OpKind::Reduce && op.stringAttr("kind") == "custom")
    return false;
  const Type &t = op.operand(0)->type;
  if (t.isScalar() || op.intAttr("axis") != static_cast<int64_t>(t.rank()) - 1)
    return false;
  const Layout l = Layout::forType(t, numThreads, maxVec);
  const int64_t len = t.shape.back();
  if (len % l.vec != 0)
    return false;
  const int64_t chunksPerLine = len / l.vec;
  return chunksPerLine % numThreads == 0 || numThreads % chunksPerLine == 0;
}

int64_t partialAreaBytes(int64_t elementBytes, int64_t numThreads, bool warpShuffle) {
  if (!warpShuffle)
    return alignedTo16(numThreads * elementBytes);
  return 2 * alignedTo16(std::max<int64_t>(numThreads / 32, 1) * elementBytes);
}

std::vector<int64_t> scratchAreas(const ir::Op &op, int64_t numThreads, bool warpShuffle,
                                  int64_t maxVec) {
  auto elems = [&](unsigned i) { return op.operand(i)->type.numElements(); };
  auto eb = [&](unsigned i) { return sharedElementBytes(op.operand(i)->type); };
  switch (op.kind()) {
  case OpKind::Broadcast:
    // The source tile in row-major order (a broadcast that changes nothing is free).
    if (op.operand(0)->type.shape == op.result()->type.shape)
      return {};
    return {elems(0) * eb(0)};
  case OpKind::Permute:
  case OpKind::Split:
  case OpKind::Gather:
    return {elems(0) * eb(0)};
  case OpKind::Join:
  case OpKind::Cat:
    // Both sources, one after the other.
    return {elems(0) * eb(0), elems(1) * eb(1)};
  case OpKind::Reduce:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Scan: {
    const Type &t = op.operand(0)->type;
    int64_t lines, length;
    linesOf(t.shape, op.intAttr("axis"), lines, length);
    const int64_t e = sharedElementBytes(t);
    if (op.kind() == OpKind::Scan) // the tile (scanned in place), segment totals
      return {t.numElements() * e, numThreads * e};
    // Combined in registers: no copy of the tile (area 0 stays empty).
    const int64_t tile = reducesInRegisters(op, numThreads, maxVec) ? 0 : t.numElements() * e;
    const int64_t partials = partialAreaBytes(e, numThreads, warpShuffle);
    if (op.kind() == OpKind::Reduce) // the tile, the group partials, line results
      return {tile, partials, lines * e};
    // argmax/argmin: the tile, partial values, partial indices, line results (i32)
    return {tile, partials, partialAreaBytes(4, numThreads, warpShuffle), lines * 4};
  }
  case OpKind::Sort:
  case OpKind::TopK:
  case OpKind::ArgTopK: {
    // The tile, then the lines padded to a power of two as (value, index) pairs.
    const Type &t = op.operand(0)->type;
    int64_t lines, length;
    linesOf(t.shape, op.intAttr("axis"), lines, length);
    const int64_t e = sharedElementBytes(t);
    const int64_t padded = lines * nextPowerOf2(length);
    return {t.numElements() * e, padded * e, padded * 4};
  }
  case OpKind::Dot:
    return dotScratchAreas(op, DotPath::Fma);
  case OpKind::ClusterExchange: {
    // An mbarrier, then for each rank the values it sends, each operand in 32- or 64-bit
    // words: register j of thread t at j·T + t (a scalar: one word, which every thread
    // holds). LowerCluster.cpp says who writes them.
    std::vector<int64_t> areas{16};
    for (int64_t r = 0; r < op.intAttr("ranks"); ++r)
      for (const ir::Value *v : op.operands())
        areas.push_back(exchangeWords(v->type, numThreads, maxVec) * exchangeWordBytes(v->type));
    return areas;
  }
  case OpKind::AtomicRMW:
  case OpKind::AtomicCas:
    // A scalar atomic runs on one thread; the old value reaches the others here.
    if (op.result()->type.isScalar())
      return {8};
    return {};
  case OpKind::Constant:
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
  case OpKind::Arange:
  case OpKind::Splat:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
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
  case OpKind::PtrAdd:
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
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::Load:
  case OpKind::BlockElements: // expanded into loads before code generation
  case OpKind::Store:
  case OpKind::Fence:
  case OpKind::For:
  case OpKind::If:
  case OpKind::While:
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
  case OpKind::Assert:
  case OpKind::Print:
  case OpKind::Launch:
    return {};
  }
  return {};
}

std::vector<int64_t> dotScratchAreas(const ir::Op &dot, DotPath path) {
  const Type &a = dot.operand(0)->type, &b = dot.operand(1)->type;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  switch (path) {
  case DotPath::Wgmma: // A and B as 16-bit values in aligned buffers, the result as f32
    return {wgmmaAligned(M * K * 2), wgmmaAligned(K * N * 2), M * N * 4};
  case DotPath::MmaSync: // A and B as padded rows of 16-bit values, the result as f32
    return {M * (K + kMmaRowPad) * 2, K * (N + kMmaRowPad) * 2, M * N * 4};
  case DotPath::Fma: // operands in their compute type (f32, f64 or i32)
    break;
  }
  const int64_t e = (a.dtype == DType::F64 || b.dtype == DType::F64) ? 8 : 4;
  return {a.numElements() * e, b.numElements() * e};
}

/// The load of `body` operand `i` of `dot` comes from (through the transpose a B operand
/// may be read through), or null.
static const ir::Op *loadInBody(const ir::Op &dot, unsigned i, const ir::Block &body) {
  const ir::Op *def = dot.operand(i)->definingOp();
  if (def && i == 1 && def->kind() == OpKind::Permute)
    def = def->operand(0)->definingOp();
  return def && def->kind() == OpKind::Load && def->parentBlock() == &body ? def : nullptr;
}

/// True for a load cp.async can stream: unmasked, without the .cv that asks to read
/// memory afresh (LowerDot.cpp, mmaPipelineFor, which checks the rest).
static bool streamable(const ir::Op &load) {
  return load.numOperands() == 1 && !ir::readsAfresh(load);
}

/// True when nothing in `block` writes memory: a loop that stores never streams.
static bool writesNothing(const ir::Block &block) {
  bool writes = false;
  ir::walk(const_cast<ir::Block &>(block), [&](ir::Op &op) {
    writes = writes || op.kind() == OpKind::Store || op.kind() == OpKind::AtomicRMW ||
             op.kind() == OpKind::AtomicCas;
  });
  return !writes;
}

int64_t pipelineRingBytes(const ir::Op &forOp, int64_t stages, DotPath (*dotPath)(const ir::Op &, const void *),
                          const void *ctx, int64_t (*residentBytes)(const ir::Op &, const void *)) {
  if (stages < 2 || !dotPath)
    return 0;
  const ir::Block &body = *forOp.region(0);
  if (!writesNothing(body))
    return 0;
  int64_t stage = 0, resident = 0, products = 0;
  bool wgmma = true;
  for (const auto &op : body.ops()) {
    if (op->kind() != OpKind::Dot)
      continue;
    const DotPath path = dotPath(*op, ctx);
    if (path == DotPath::Fma)
      return 0;
    ++products;
    wgmma = wgmma && path == DotPath::Wgmma;
    if (residentBytes)
      resident += wgmmaAligned(residentBytes(*op, ctx));
    const std::vector<int64_t> areas = dotScratchAreas(*op, path);
    for (unsigned i = 0; i < 2; ++i) {
      const ir::Op *load = loadInBody(*op, i, body);
      if (load && !streamable(*load))
        return 0; // the loop will not stream
      if (load)
        stage += wgmmaAligned(areas[i]);
    }
  }
  if (stage == 0 || resident >= kMaxPipelineRingBytes)
    return 0;
  stages = std::min(stages, (kMaxPipelineRingBytes - resident) / stage);
  if (stages < 2)
    return 0;
  // A published ring's mbarriers follow the residents.
  const bool published = wgmma && publishesRing(products, stages, stage);
  return stages * stage + resident + (published ? ringBarrierBytes(stages) : 0);
}

int64_t planArena(const ir::Kernel &kernel, int64_t numThreads, bool warpShuffle,
                  DotPath (*dotPath)(const ir::Op &, const void *), const void *ctx, int64_t *exchangeBase,
                  int64_t (*residentBytes)(const ir::Op &, const void *)) {
  int64_t arena = 0, exchange = 0;
  const int64_t maxVec = chunkLimit(kernel);
  ir::walk(*kernel.body, [&](ir::Op &op) {
    const std::vector<int64_t> areas = op.kind() == OpKind::Dot && dotPath
                                           ? dotScratchAreas(op, dotPath(op, ctx))
                                           : scratchAreas(op, numThreads, warpShuffle, maxVec);
    int64_t &into = op.kind() == OpKind::ClusterExchange ? exchange : arena;
    into = std::max(into, layoutAreas(areas).totalBytes);
    if (op.kind() == OpKind::For)
      arena = std::max(arena, pipelineRingBytes(op, kernel.numStages, dotPath, ctx, residentBytes));
  });
  arena = alignedTo16(arena);
  if (exchangeBase)
    *exchangeBase = arena;
  return arena + exchange;
}

} // namespace kiln::codegen
