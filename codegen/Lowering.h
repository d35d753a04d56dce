//===- Lowering.h - Tile IR to LLVM IR: the lowering state -----------*- C++ -*-===//
//
// Private to codegen/. One Lowering object turns one kernel into one LLVM function. Its
// methods are grouped by concept in one source file each (like the op handlers of the
// interpreter):
//
//   LowerKernel.cpp       the function, its parameters, dispatch over op kinds,
//                         registers, shared-memory and control-flow helpers
//   LowerControlFlow.cpp  for / if / while
//   LowerElementwise.cpp  arithmetic, math, comparisons, select
//   FloatBits.cpp         f16 / bf16 / f8 encodings and roundings
//   LowerCast.cpp         cast and bitcast
//   LowerMemory.cpp       ptr_add, load, store, memory ordering between threads
//   LowerAtomic.cpp       atomic_rmw, atomic_cas
//   LowerShape.cpp        constants, arange, splat and the shape ops
//   LowerReduce.cpp       reduce, argmax, argmin (and the cross-thread combine)
//   LowerScan.cpp         scan
//   LowerSort.cpp         sort, topk, argtopk
//   LowerDot.cpp          dot
//   LowerWgmma.cpp        dot on wgmma (sm_90a)
//   LowerFragments.cpp    ops on values kept in tensor-core fragment order
//   LowerDebug.cpp        assert, print
//   TargetInfo.cpp        what differs between NVPTX and SPIR-V
//
// Values: every Tile IR value maps to the registers the current thread holds of it
// (Layout.h); a scalar has one register that every thread holds. Values the fragment
// plan keeps in tensor-core fragment order (FragmentPlan.h) have those registers in
// `frags` instead, and in `vals` too where some op needs them blocked. Narrow floats (f16,
// bf16, f8) live in f32 registers holding exactly representable values; bool is i1.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/AxisInfo.h"
#include "codegen/Codegen.h"
#include "codegen/FragmentPlan.h"
#include "codegen/Layout.h"
#include "codegen/MemoryAccess.h"
#include "codegen/SharedMemory.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_set>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::check {
enum class CheckKind : uint32_t;
}

namespace kiln::codegen::detail {

using ir::OpKind;
using Values = std::vector<llvm::Value *>;

/// The registers of one tile in the current thread, in register order.
struct Regs {
  Values v;
};

/// The bytes of the shared-memory arena that threads may still be reading (or writing)
/// since the last barrier: one span covering them all, empty right after a barrier. An
/// op may write bytes outside it without waiting for one.
struct ArenaUse {
  int64_t begin = 0, end = 0;

  static ArenaUse whole() { return {0, std::numeric_limits<int64_t>::max()}; }
  bool empty() const { return begin >= end; }
  bool overlaps(int64_t b, int64_t e) const { return !empty() && b < end && begin < e; }
  /// Adds [b, e) (the span grows to cover both).
  void add(int64_t b, int64_t e) {
    if (empty()) {
      begin = b;
      end = e;
    } else {
      begin = std::min(begin, b);
      end = std::max(end, e);
    }
  }
  void add(const ArenaUse &o) {
    if (!o.empty())
      add(o.begin, o.end);
  }
};

/// Thrown after a diagnostic was reported, to abandon the kernel.
struct LoweringFailed {};

/// Reports what the lowering does not handle (Codegen.cpp); true when the kernel is fine.
bool checkSupported(const ir::Kernel &kernel, Target target, DiagnosticEngine &diags);
/// Largest dynamic shared memory per program (bytes), 0 when the runtime decides.
int64_t sharedLimit(Target target);


enum class ReduceKind { Sum, Prod, Max, Min, Custom };

class Lowering {
public:
  Lowering(Target target, const ir::Kernel &kernel, llvm::Module &module, DiagnosticEngine &diags,
           const CodegenOptions &options);

  /// Builds the kernel function. False when an error was reported.
  bool run();

  /// Task mode, for the persistent kernel of a graph (Megakernel.cpp): run() builds an
  /// internal, always-inlined function `kiln_task_NAME(params..., [checked mode's
  /// extents and record,] pid x, y, z, programs x, y, z, task)` instead of a kernel
  /// entry. program_id and num_programs read those arguments, so that one program of the
  /// grid becomes one task of the megakernel.
  bool asTask = false;
  std::array<llvm::Value *, 3> taskProgramId{}, taskNumPrograms{};
  /// The task's number in the persistent kernel's run (asTask), which checked mode
  /// records with a bad access.
  llvm::Value *taskNumber = nullptr;

  std::string entryName;
  int64_t arenaBytes = 0;
  int64_t exchangeBase = 0; ///< where the cluster exchanges' area starts in the arena

  //===------------------------------------------------------------------===//
  // State
  //===------------------------------------------------------------------===//
  const Target target;
  const bool nvptx;
  const ir::Kernel &kernel;
  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  llvm::IRBuilder<> b;
  DiagnosticEngine &diags;
  const CodegenOptions &opts;
  const int64_t T; ///< threads per program
  const int64_t maxVec; ///< widest chunk of a tile (chunkLimit)
  AxisAnalysis axis;
  PointerProvenance prov;
  /// The parameters some store or atomic of the kernel may write (kAnyBase if unknown).
  BaseSet writtenBases = 0;

  llvm::Function *fn = nullptr;
  llvm::Value *tid = nullptr;    ///< i32 thread index in the program
  llvm::Value *arena = nullptr;  ///< shared-memory arena base (addrspace 3)
  std::unordered_map<const ir::Value *, Regs> vals;
  std::unordered_map<int64_t, llvm::Value *> tidTimes; ///< tid * vec, per vec
  /// Values roundToDType decoded from narrow-float bits: value -> (dtype, bits).
  std::unordered_map<const llvm::Value *, std::pair<DType, llvm::Value *>> narrowBits;

  //===------------------------------------------------------------------===//
  // Diagnostics
  //===------------------------------------------------------------------===//
  [[noreturn]] void unsupported(const ir::Op &op, const std::string &what);

  //===------------------------------------------------------------------===//
  // Types and constants
  //===------------------------------------------------------------------===//
  llvm::Type *regType(const Type &t);      ///< register type of one element
  llvm::Type *regTypeOf(DType t);
  llvm::Type *memType(const Type &t);      ///< type of one element in global memory
  llvm::Type *sharedType(const Type &t);   ///< type of one element in shared memory
  llvm::PointerType *globalPtrType();
  llvm::Value *i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value *i64(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }
  llvm::Value *f32(double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }
  /// A constant of dtype `t` (registers' form) from an integer or float value.
  llvm::Value *constantOf(DType t, int64_t iv, double fv, bool isFloatValue);

  //===------------------------------------------------------------------===//
  // Values and layouts (LowerKernel.cpp)
  //===------------------------------------------------------------------===//
  Layout layoutOf(const Type &t) const { return Layout::forType(t, T, maxVec); }
  Regs &get(const ir::Value *v);
  void set(const ir::Value *v, Regs r);
  /// Flat element index (i32) of register `reg`: clamped into the tile, so a register of
  /// an invalid round reads like the last chunk (it is never stored).
  llvm::Value *elementIndex(const Layout &l, int64_t reg);
  /// i1 "this thread's round holds an element", or null when it always does.
  llvm::Value *roundValid(const Layout &l, int64_t round);
  /// Multi-index of flat element `e` (i32 values) in `shape`.
  Values unravel(llvm::Value *e, const Shape &shape);
  llvm::Value *isThread0();

  //===------------------------------------------------------------------===//
  // Control-flow helpers (LowerKernel.cpp)
  //===------------------------------------------------------------------===//
  /// Runs `body` where `cond` holds; its results merge with `otherwise` elsewhere.
  /// `rarely`: `cond` holds only on a path no correct run takes (a bounds violation), so
  /// the body is laid out away from the code around it.
  Values guarded(llvm::Value *cond, const std::function<Values()> &body, const Values &otherwise,
                 bool rarely = false);
  void guardedVoid(llvm::Value *cond, const std::function<void()> &body, bool rarely = false);
  /// `cond ? thenFn() : elseFn()` with real branches (both produce the same types).
  Values ifElse(llvm::Value *cond, const std::function<Values()> &thenFn,
                const std::function<Values()> &elseFn);
  /// A loop `for (i = begin; i < end; i += step)` over i32, carrying `init`.
  /// `keepRolled`: never unrolled (a cold path that must not grow the registers).
  Values loop(llvm::Value *begin, llvm::Value *end, int64_t step, const Values &init,
              const std::function<Values(llvm::Value *, const Values &)> &body, bool keepRolled = false);

  //===------------------------------------------------------------------===//
  // Shared memory and barriers (LowerKernel.cpp)
  //===------------------------------------------------------------------===//
  void barrier();
  /// Inline PTX `text` with operands `args` and no results (`constraints` names the
  /// operands' and any clobbers, e.g. "r,~{memory}"): mbarriers and cluster barriers.
  void voidAsm(const char *text, const char *constraints, llvm::ArrayRef<llvm::Value *> args);
  /// Starts an op's use of the arena: a barrier when earlier reads may still be running.
  void beginSharedUse();
  /// Starts a use of bytes [begin, end) only: a barrier only when earlier uses since the
  /// last one overlap them.
  void beginSharedUse(int64_t begin, int64_t end);
  /// Ends writing: a barrier so every thread sees the writes.
  void sharedWritten();
  /// Marks the arena as read since the last barrier.
  void sharedRead() { arenaInUse = ArenaUse::whole(); }
  /// Marks bytes [begin, end) as read since the last barrier.
  void sharedRead(int64_t begin, int64_t end) { arenaInUse.add(begin, end); }
  llvm::Value *sharedAddr(int64_t byteOffset, llvm::Value *index, llvm::Type *elemTy);
  llvm::Value *loadShared(llvm::Type *ty, int64_t byteOffset, llvm::Value *index);
  void storeShared(llvm::Value *v, int64_t byteOffset, llvm::Value *index);
  /// Register form <-> shared form (bool: i1 <-> i8).
  llvm::Value *toShared(llvm::Value *v, const Type &t);
  llvm::Value *fromShared(llvm::Value *v, const Type &t);
  /// Writes a whole tile to the arena at `byteOffset` in row-major order (no barriers).
  void storeTileToShared(const Regs &r, const Type &t, int64_t byteOffset);
  /// Reads register `reg` of a tile of type `t` back by computing each register's source
  /// element with `srcIndex` (flat index in the result -> flat index in the arena).
  Regs gatherFromShared(const Type &srcType, const Type &dstType, int64_t byteOffset,
                        const std::function<llvm::Value *(llvm::Value *)> &srcIndex);
  ArenaUse arenaInUse;

  //===------------------------------------------------------------------===//
  // Memory ordering between threads (LowerMemory.cpp)
  //===------------------------------------------------------------------===//
  std::vector<MemAccess> outstanding;
  /// Called before a global-memory op: a barrier when it conflicts with an earlier access
  /// not yet separated by one.
  void orderAccess(const ir::Op &op);
  /// Accesses of a region that may run again (loop bodies) count as outstanding.
  void addOutstanding(const ir::Block &block);

  //===------------------------------------------------------------------===//
  // Lowering of blocks and ops
  //===------------------------------------------------------------------===//
  void lowerBlock(const ir::Block &block);
  /// Lowers `op` in fragments or in the blocked layout, as the fragment plan says.
  void lowerOp(const ir::Op &op);
  /// The blocked-layout lowering of every op kind.
  void lowerOpBlocked(const ir::Op &op);
  /// Lowers a reduce/scan combiner region on per-thread scalars.
  llvm::Value *inlineCombiner(const ir::Block &region, llvm::Value *acc, llvm::Value *x);

  // LowerControlFlow.cpp
  void lowerFor(const ir::Op &op);
  void lowerIf(const ir::Op &op);
  void lowerWhile(const ir::Op &op);

  // LowerElementwise.cpp
  void lowerElementwise(const ir::Op &op);
  /// One element of an elementwise op (cmp, select, fma, binary, unary) from operands.
  llvm::Value *emitElementwise(const ir::Op &op, const Values &args);
  llvm::Value *emitBinary(const ir::Op *op, OpKind kind, DType t, llvm::Value *a, llvm::Value *c);
  llvm::Value *emitUnary(const ir::Op *op, OpKind kind, DType t, llvm::Value *a);
  llvm::Value *emitCmp(const std::string &pred, const Type &t, llvm::Value *a, llvm::Value *c);
  llvm::Value *emitMinMax(DType t, bool wantMax, llvm::Value *a, llvm::Value *c);
  /// Whether float values of LLVM type `ty` have Kiln's maximum/minimum (NaN ignored,
  /// -0 below +0) as one instruction of the target.
  bool hardwareMinMax(llvm::Type *ty) const;
  /// acc (op) x for built-in combining kinds, in the arithmetic of dtype `t`.
  llvm::Value *combine(ReduceKind kind, DType t, llvm::Value *acc, llvm::Value *x,
                       const ir::Block *region);

  // FloatBits.cpp
  /// Rounds an f32 register value to the narrow dtype `t` (identity for f32/f64).
  llvm::Value *roundToDType(DType t, llvm::Value *v);
  /// Narrow-float bits (i8/i16) -> f32, exactly.
  llvm::Value *decodeNarrow(DType t, llvm::Value *bits);
  /// f32 -> narrow-float bits, rounding to nearest even. `keepInf` keeps infinities of
  /// f8e5m2 (storing a loaded value) instead of saturating them (rounding a result).
  llvm::Value *encodeNarrow(DType t, llvm::Value *v, bool keepInf);
  /// Two values of 16-bit float type `t` (f32 holding values already rounded to `t`,
  /// or to be rounded to nearest even) as one i32: `lo` in bits 0..15, `hi` above.
  /// On NVPTX one cvt.rn.{bf16,f16}x2.f32 where encodeNarrow twice and a shift-or would
  /// take four instructions: tensor-core A fragments are built this way.
  llvm::Value *packNarrowPair(DType t, llvm::Value *lo, llvm::Value *hi);
  /// f64 -> f32 rounded to odd (so that a second rounding to a narrow format is exact).
  llvm::Value *f64ToF32Odd(llvm::Value *d);
  /// The bits roundToDType encoded `v` from, when `v` is such a rounded value of the
  /// narrow dtype `t` (storing it then needs no second encoding); else null.
  llvm::Value *narrowBitsOf(DType t, llvm::Value *v) const;

  // LowerCast.cpp
  void lowerCast(const ir::Op &op);
  void lowerBitcast(const ir::Op &op);
  llvm::Value *convert(DType from, DType to, llvm::Value *v);

  // LowerMemory.cpp
  void lowerPtrAdd(const ir::Op &op);
  void lowerLoad(const ir::Op &op);
  /// The registers of load `op` read from the addresses `ptrs` (and `mask`, `other`,
  /// null where the load has none) of any tile whose rounds hold `chunk` consecutive
  /// elements of the pointer operand's last axis: the load's own tile, or the tile of
  /// a broadcast of it (broadcastByReading).
  Regs readTile(const ir::Op &op, const Regs &ptrs, const Regs *mask, const Regs *other, int64_t chunk);
  void lowerStore(const ir::Op &op);
  llvm::Value *fromMemory(llvm::Value *v, const Type &elem);
  llvm::Value *toMemory(llvm::Value *v, const Type &elem);

  // LowerAtomic.cpp
  void lowerAtomicRMW(const ir::Op &op);
  void lowerAtomicCas(const ir::Op &op);
  void lowerFence(const ir::Op &op);
  // LowerCluster.cpp
  void lowerClusterExchange(const ir::Op &op);
  /// Whether the exchanges push their values (st.async onto the receivers' mbarriers):
  /// every path runs at most one, the kernel returns only at its end, and the bytes fit
  /// an mbarrier's count. Otherwise they go through cluster barriers and mapa reads.
  bool clusterExchangesPush() const;
  int64_t exchangeBytesPerRank(const ir::Op &op) const;
  /// At the kernel's entry and end, when the exchanges push: the mbarrier's set-up, and
  /// the wait that keeps every program until no store into another is in flight.
  void beginClusterExchanges();
  void finishClusterExchanges();
  void clusterArrive(bool relaxed);
  /// barrier.cluster.wait: every thread of every program of the cluster has arrived.
  void clusterWait();
  /// The word of an exchange slot for a value of `t` (SharedMemory.h), and a value as
  /// that word and back.
  llvm::Type *wordType(const Type &t);
  llvm::Value *toWord(llvm::Value *v, const Type &t);
  llvm::Value *fromWord(llvm::Value *w, const Type &t);
  bool pushClusterExchanges = false;

  // LowerShape.cpp
  void lowerConstant(const ir::Op &op);
  void lowerArange(const ir::Op &op);
  void lowerSplat(const ir::Op &op);
  void lowerBroadcast(const ir::Op &op);
  /// A broadcast along leading axes of values read from read-only memory (and computed
  /// from them elementwise), each thread reading the source elements its registers
  /// need instead of exchanging the tile through shared memory. False when the source
  /// is not of that form or reading it so would cost more.
  bool broadcastByReading(const ir::Op &op);
  void lowerSameOrder(const ir::Op &op);
  void lowerPermute(const ir::Op &op);
  void lowerJoin(const ir::Op &op);
  void lowerSplit(const ir::Op &op);
  void lowerCat(const ir::Op &op);
  void lowerGather(const ir::Op &op);
  /// What a recomputed value may read besides what every thread holds.
  enum class Recompute : uint8_t {
    Pure,          ///< nothing: constants, arange, scalars, pure elementwise and index ops
    ReadOnlyLoads, ///< also loads of memory the kernel never writes (readOnly)
  };
  /// True when `v` can be recomputed at any element index from values every thread
  /// holds (constants, arange, scalars, and pure elementwise and index ops on them),
  /// within `budget` ops; broadcasts of such values need no data movement.
  /// `scalarsLowered` false: assume every scalar will be lowered by the time it is read
  /// (planning before lowering). With Recompute::ReadOnlyLoads a load counts too, each
  /// element read where it is needed: a sparse block's bitmap words, tested in the
  /// tensor cores' fragment order instead of moving the flags through shared memory.
  bool canRematerialize(const ir::Value *v, int &budget, bool scalarsLowered = true,
                        Recompute what = Recompute::Pure) const;
  /// One element of type `elem` read from global memory at `ptr` where `cond` (i1)
  /// holds, `other` elsewhere; always read when `cond` is null.
  llvm::Value *readElement(const Type &elem, llvm::Value *ptr, llvm::Value *cond, llvm::Value *other);
  /// True when nothing in the kernel may write the memory `load` reads: reading it
  /// again later, or in another thread, gives the same values.
  bool readOnly(const ir::Op &load) const;
  /// `v`'s element at flat index `e` (i32), recomputed.
  llvm::Value *rematerialize(const ir::Value *v, llvm::Value *e);

  // LowerReduce.cpp
  void lowerReduce(const ir::Op &op);
  void lowerArgReduce(const ir::Op &op, bool wantMax);
  /// Combines the partial value of every thread of an aligned group of `group` threads
  /// (a power of two) in index order; all threads of the group end with the total.
  /// `scratch` is a T-element area of `t`'s shared type for the shared-memory path.
  Values combineGroup(const Values &partial, int64_t group, int64_t scratchOffset,
                      const std::vector<llvm::Type *> &sharedTypes,
                      const std::function<Values(const Values &, const Values &)> &fn);

  // LowerScan.cpp
  void lowerScan(const ir::Op &op);

  // LowerSort.cpp
  void lowerSort(const ir::Op &op);
  /// topk / argtopk by K rounds of a maximum over each line, within groups of at most a
  /// warp's lanes (NVPTX shuffles), instead of a sort: true when it applied. Sets the
  /// sibling topk / argtopk of the same operand too (loweredWithSibling).
  bool lowerTopKByRounds(const ir::Op &op);
  /// The winner of round r of topKRounds: `emit(r, writes, value, position)` with
  /// `writes` true on the one lane that is to write it; `value` is null unless the
  /// candidates' values were carried.
  using RoundWinner = std::function<void(int64_t, llvm::Value *, llvm::Value *, llvm::Value *)>;
  /// K rounds over one line held by `group` aligned lanes, each with its candidates
  /// (value, position along the line; a position of `len` or more is none), every
  /// candidate of a lane before, along the line, every candidate of the next lane of the
  /// group. `carryValues`: move the values along with the ranks (else the caller finds
  /// a winner's value from its position, which saves the moves).
  void topKRounds(const Type &elem, int64_t k, int64_t len, int64_t group,
                  const std::vector<std::pair<llvm::Value *, llvm::Value *>> &mine, bool carryValues,
                  const RoundWinner &emit);
  /// Sorting's total order on (value, index) pairs of one line of `len` elements: true
  /// when a goes before c. NaNs go after numbers, equal values by index, and an index of
  /// `len` or more (padding, or a taken element) after everything.
  llvm::Value *sortsBefore(const Type &elem, bool descending, int64_t len, llvm::Value *a, llvm::Value *ia,
                           llvm::Value *c, llvm::Value *ic);
  /// Ops whose results an earlier op's lowering already set.
  std::unordered_set<const ir::Op *> loweredWithSibling;
  /// The line totals of a reduction along the last axis as the threads that reduced each
  /// line all hold them: `perRound[r]` is the total of the line the reduction's operand
  /// has in register round r. Broadcasting the result back over the operand's shape
  /// (softmax's `x - max(x, axis)[:, None]`) then reads registers, not shared memory.
  struct LineTotals {
    Shape operandShape;
    std::vector<llvm::Value *> perRound;
  };
  std::unordered_map<const ir::Value *, LineTotals> lineTotals;
  /// Records the line totals of the last-axis reduction `op` over a tile of layout `l`,
  /// `total(round)` being the one of register round `round`; false (nothing recorded)
  /// when some round of `l` is not whole.
  bool holdLineTotals(const ir::Op &op, const Layout &l, const std::function<llvm::Value *(int64_t)> &total);
  /// The ops that read each value (filled before lowering).
  std::unordered_map<const ir::Value *, std::vector<const ir::Op *>> users;
  /// True when every use of the last-axis reduction `op` is an expand_dims back to its
  /// rank whose every use broadcasts it over the reduced operand's shape: its result
  /// then never needs to exist in its own layout.
  bool onlyBroadcastBack(const ir::Op &op) const;

  // LowerDot.cpp
  void lowerDot(const ir::Op &op);
  bool useTensorCores(const ir::Op &op) const;
  /// The 16-bit type a tensor-core dot's operands are staged and multiplied in: bf16
  /// when an operand is bf16, else f16 (f8 operands are widened to it exactly).
  static DType mmaOperandType(const ir::Op &dot);
  /// How `op` is lowered: the one place that picks wgmma, mma.sync or the FMA path.
  DotPath dotPath(const ir::Op &op) const;
  /// How the warps share `dot`'s result (tensor-core paths).
  MmaTiling tilingOf(const ir::Op &dot) const;
  /// A loop whose tensor-core dots read every operand not in registers straight from
  /// loads in the loop body: the loads become cp.async copies into a ring of `stages`
  /// shared-memory buffers, each holding one iteration's operands, issued `stages - 1`
  /// iterations ahead (LowerDot.cpp).
  struct MmaPipeline {
    /// One operand copied by the pipeline: operand `operand` of `dot`, from `load`,
    /// at byte `offset` of each buffer.
    struct Stream {
      const ir::Op *dot = nullptr;
      unsigned operand = 0;
      const ir::Op *load = nullptr;
      int64_t offset = 0;
    };
    /// An A operand computed before the loop and not read from registers: staged once,
    /// before the first iteration, at byte `residentBase + offset`, where every
    /// iteration's product reads it.
    struct Resident {
      const ir::Op *dot = nullptr;
      int64_t offset = 0;
    };
    const ir::Op *loop = nullptr;  ///< null: no pipeline
    const ir::Op *first = nullptr; ///< the dot that waits for a buffer and refills one
    std::vector<Stream> streams;
    std::vector<Resident> residents;
    int64_t residentBase = 0, residentBytes = 0; ///< after the ring
    /// The body ops the copies' addresses depend on, in order (re-lowered per copy).
    std::vector<const ir::Op *> slice;
    int64_t stages = 0, stageBytes = 0;
    /// How many iterations ahead the copies are issued: stages - 1, or stages - 2 for
    /// a ring whose buffers are published by mbarriers (`published`).
    int64_t distance = 0;
    /// Each buffer has an mbarrier at byte `barrierBase + 8 * buffer` that completes
    /// when every thread's copies into it have landed: a warp waits for the buffer it
    /// reads, not for the other warps to reach the same point (so the warpgroups of a
    /// program need not step together). The copies go one buffer less far ahead, which
    /// frees the buffer refilled while a slower warp still reads the previous one.
    bool published = false;
    int64_t barrierBase = 0;
    llvm::Value *stage = nullptr;     ///< i32 buffer the current iteration reads
    llvm::Value *phase = nullptr;     ///< i32 parity of this iteration's use of it
    llvm::Value *ivAhead = nullptr;   ///< the iv `distance` iterations ahead
    llvm::Value *condAhead = nullptr; ///< i1 that iteration runs

    const Stream *find(const ir::Op *dot, unsigned operand) const {
      for (const Stream &s : streams)
        if (s.dot == dot && s.operand == operand)
          return &s;
      return nullptr;
    }
    const Resident *resident(const ir::Op *dot) const {
      for (const Resident &r : residents)
        if (r.dot == dot)
          return &r;
      return nullptr;
    }
    bool copies(const ir::Op *load) const {
      for (const Stream &s : streams)
        if (s.load == load)
          return true;
      return false;
    }
  };
  /// The pipeline for `forOp`; `loop` is null when there is none.
  MmaPipeline mmaPipelineFor(const ir::Op &forOp);
  /// The bytes `dot`'s A operand takes staged once before its loop (MmaPipeline::Resident),
  /// or 0: it is read from registers, streamed, or computed in the loop.
  int64_t residentOperandBytes(const ir::Op &dot) const;
  /// Stages the pipeline's resident operands (the loop's prologue).
  void stageResidentOperands(const MmaPipeline &p);
  /// A published ring's mbarriers (MmaPipeline::published): set up before the loop
  /// (one arrival per thread completes a buffer), and invalidated after it so that the
  /// arena may hold other data again.
  void initRingBarriers(const MmaPipeline &p);
  void releaseRingBarriers(const MmaPipeline &p);
  /// Arrives on buffer `slot`'s mbarrier once this thread's copies into it have landed:
  /// all but `newer` of its cp.async groups complete, then made visible to wgmma.
  void publishBuffer(const MmaPipeline &p, llvm::Value *slot, int64_t newer);
  /// Waits until every thread has published the buffer this iteration reads.
  void waitForBuffer(const MmaPipeline &p);
  /// Copies the operands of iteration `iv` into buffer `stage` when `cond` holds, as
  /// one cp.async group (committed by every thread either way).
  void issueMmaStage(const MmaPipeline &p, llvm::Value *iv, llvm::Value *stage, llvm::Value *cond);
  /// The pipeline of the loop being lowered (loop null outside one).
  MmaPipeline pipeline;

  // LowerFragments.cpp
  /// Which values stay in fragment order (computed before lowering).
  FragmentPlan fragPlan;
  /// The registers of values in a fragment form (FragmentPlan.h).
  std::unordered_map<const ir::Value *, Regs> frags;
  /// Ops a recomputed operand of a fragment op may take (canRematerialize): enough for
  /// a sparse block's flags, whose bitmap word and bit both come from the element's row
  /// and column.
  static constexpr int kRecomputeBudget = 64;
  /// What the fragment plan needs of `dot` when its result can stay in fragments
  /// (tensor cores, f32, every warp owning a block); nullopt otherwise.
  std::optional<FragmentPlan::DotFacts> dotFacts(const ir::Op &dot) const;
  Regs &getFrag(const ir::Value *v);
  /// Operand `v` in form `f` (Tile or Rows): its own fragments, a row broadcast's rows,
  /// recomputed, or converted from the blocked layout.
  Regs fragmentsOf(const ir::Value *v, const FragForm &f);
  /// `v` from the blocked layout into form `f` (Tile, Rows or AOperand).
  Regs blockedToFragments(const ir::Value *v, const FragForm &f);
  Regs fragmentsToBlocked(const ir::Value *v);
  /// Lowers an op the plan keeps in fragments (FragmentPlan::lowersInFragments).
  void lowerInFragments(const ir::Op &op);
  /// Gives `op`'s results that some reader needs blocked their blocked registers.
  void finishFragments(const ir::Op &op);

  // LowerDebug.cpp
  void lowerAssert(const ir::Op &op);
  void lowerPrint(const ir::Op &op);

  // LowerChecks.cpp: checked mode
  /// Appends the extents and the check record to the kernel's parameters (checked mode);
  /// false, with a diagnostic, where checked mode does not apply.
  bool addCheckParams(std::vector<llvm::Type *> &paramTypes);
  void bindCheckParams();
  /// A checked access's lanes (LowerChecks.cpp).
  struct CheckedLanes {
    /// Per lane, i1: active (`mask`, when given) and in bounds. Empty where wholeChunk
    /// covers chunks of several lanes: laneOk then gives a lane's test.
    Regs ok;
    /// Per chunk of `width` lanes: every lane of it active and in bounds, tested once
    /// for the chunk; empty where that takes the lanes one by one (a mask that varies
    /// within a chunk, several buffers).
    std::vector<llvm::Value *> wholeChunk;
    /// Lane i's test, emitted where the builder stands: only the path that handles a
    /// chunk lane by lane pays for it.
    std::function<llvm::Value *(int64_t)> laneOk;
    /// Lane `j` (i64, known at run time) of the chunk that starts at lane `base`: active
    /// and in bounds. Set where wholeChunk is: a chunk that fails its test is then taken
    /// lane by lane in a loop kept rolled, which holds no more registers than the chunk.
    std::function<llvm::Value *(int64_t base, llvm::Value *j)> laneOkAt;
    /// Lane i's mask for an access: its test in checked mode, else `mask`'s lane.
    llvm::Value *laneMask(int64_t i, const Regs &mask) const { return laneOk ? laneOk(i) : mask.v[i]; }
    /// i1: no active lane is out of bounds (every correct run): the access may then be
    /// made exactly as unchecked code makes it, under the program's own mask.
    llvm::Value *clear = nullptr;
    /// With `deferRecord`: writes the first bad lane to the check record, emitted where
    /// the builder stands, on a path taken only when `clear` is false.
    std::function<void()> record;
  };
  /// Tests every lane of `ptrs` for an access of `bytes` inside a buffer it may point
  /// into. The first active lane (`validAt(i)`, null when always valid) out of bounds of
  /// the launch is written to the check record. `width`: the lanes come in chunks of
  /// that many contiguous elements (a vector access's), over which `validAt` and, with
  /// `maskPerChunk`, `mask` are constant.
  CheckedLanes boundsCheck(const ir::Op &op, const Regs &ptrs, const Regs *mask,
                           const std::function<llvm::Value *(int64_t)> &validAt, unsigned bytes,
                           check::CheckKind kind, int64_t width = 1, bool maskPerChunk = false,
                           bool deferRecord = false);
  void recordViolation(const ir::Op &op, check::CheckKind kind, size_t param, llvm::Value *offset);
  size_t checkParamBase = 0;
  std::vector<llvm::Value *> checkExtents; ///< per kernel parameter: its extent (null: none)
  llvm::Value *checkRecord = nullptr;

  //===------------------------------------------------------------------===//
  // Target specifics (TargetInfo.cpp)
  //===------------------------------------------------------------------===//
  llvm::Value *readThreadId();
  llvm::Value *readProgramId(int64_t axis);
  llvm::Value *readNumPrograms(int64_t axis);
  void emitBarrier();
  bool hasWarpShuffle() const { return nvptx; }
  /// cvt.rn.satfinite.e4m3x2.f32 (sm_89 and later): f32 to f8e4m3 in one instruction.
  bool hasF8Conversion() const { return target == Target::SM90 || target == Target::SM90a; }
  /// Where `op`'s scratch areas lie in the arena (SharedMemory.h).
  ScratchPlan scratchPlan(const ir::Op &op) const {
    return layoutAreas(scratchAreas(op, T, hasWarpShuffle(), maxVec));
  }
  /// Butterfly shuffle of an i32/f32 (or narrower/wider, split as needed) value.
  llvm::Value *shuffleXor(llvm::Value *v, int64_t laneMask);
  /// 2^x on f32 by the hardware's approximation with results below 2^-126 flushed to
  /// zero (docs/codegen.md, Numbers); null where the target has no such instruction.
  llvm::Value *fastExp2(llvm::Value *x);
  /// Name of the library function for a math op on f32/f64.
  std::string mathName(OpKind kind, bool isDouble) const;
  llvm::FunctionCallee declareBuiltin(const std::string &name, llvm::FunctionType *ty,
                                      bool convergent = false, bool readNone = false);
  llvm::Value *callBuiltin(const std::string &name, llvm::Type *ret, Values args,
                           bool readNone = true);
  /// printf with a constant format string.
  void emitPrintf(const std::string &format, Values args);
  /// Stops the kernel after a failed assert (a trap where the target has one).
  void emitAssertFail(const std::string &message, Location loc);
  /// The shared-memory arena of the function.
  llvm::Value *makeArena(llvm::Argument *spirvLocalArg);
};

/// Where the current thread works in a line-wise op (reduce, scan): see LineSplit.
struct LineGeometry {
  LineSplit split;
  int64_t inner = 1;              ///< elements after the axis (stride of the axis)
  llvm::Value *line = nullptr;    ///< i32 line of this thread's group (clamped to a real one)
  llvm::Value *g = nullptr;       ///< i32 position in the group
  llvm::Value *begin = nullptr;   ///< i32 first element of the segment
  llvm::Value *end = nullptr;     ///< i32 one past its last
  llvm::Value *active = nullptr;  ///< i1 the group's line exists (null: always)
};
/// The geometry for a tile of `shape` worked on along `axis` (group 1: no line/segment
/// values; threads then walk whole lines).
LineGeometry lineGeometry(Lowering &L, const Shape &shape, int64_t axis);
/// Flat index (i32) of element `l` of line `line`.
llvm::Value *lineElement(Lowering &L, const LineGeometry &geo, llvm::Value *line, llvm::Value *l);

/// Combining kind of a reduce/scan op's `kind` attribute.
ReduceKind reduceKindOf(const ir::Op &op);

} // namespace kiln::codegen::detail
