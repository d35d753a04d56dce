//===- Machine.h - Interpreter internals shared by its source files -*- C++ -*-===//
//
// The interpreter first "prepares" a kernel: every SSA value gets a dense slot number
// and every op is copied into a PreparedOp with its operand/result slots and decoded
// attributes. Execution then dispatches once per op on its kind and loops over the
// elements inside the op's handler, so no per-element virtual calls or map lookups
// happen.
//
// A tile's elements live in a TileData (a vector of 64-bit Slots). Integers and bool
// are kept wrapped to their dtype (wrapToIntDType), floats rounded to their dtype
// (roundToFloatDType), and pointers packed as (buffer index, element offset). The
// element type and shape come from the IR value the slot belongs to.
//
// This header is private to ir/interp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/interp/Interpreter.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::interp::detail {

/// One tile element. Which member is live follows from the value's type: `f` for
/// float dtypes, `i` for everything else (integers, bool, pointers).
union Slot {
  int64_t i;
  double f;
};
static_assert(sizeof(Slot) == 8);

using TileData = std::vector<Slot>;

inline Slot intSlot(int64_t v) {
  Slot s;
  s.i = v;
  return s;
}
inline Slot floatSlot(double v) {
  Slot s;
  s.f = v;
  return s;
}

//===--------------------------------------------------------------------===//
// Pointers: the buffer index in the top 16 bits, a signed element offset in the
// low 48. Offsets are kept in elements of the pointee, so an access can never be
// misaligned; arithmetic that would leave the 48-bit range is clamped to its edge,
// which is out of bounds of every buffer and is reported as such on access.
//===--------------------------------------------------------------------===//

constexpr size_t kMaxBuffers = size_t(1) << 16;
constexpr int64_t kMaxPointerOffset = (int64_t(1) << 47) - 1;

inline int64_t makePointer(size_t buffer, int64_t offset) {
  return static_cast<int64_t>((uint64_t(buffer) << 48) |
                              (uint64_t(offset) & ((uint64_t(1) << 48) - 1)));
}
inline size_t pointerBuffer(int64_t p) { return static_cast<size_t>(uint64_t(p) >> 48); }
inline int64_t pointerOffset(int64_t p) { return static_cast<int64_t>(uint64_t(p) << 16) >> 16; }

//===--------------------------------------------------------------------===//
// Prepared kernels
//===--------------------------------------------------------------------===//

enum class CmpPred : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
// clang-format off
enum class BinaryKind : uint8_t {
  Add, Sub, Mul, Div, Rem, And, Or, Xor, Shl, Shr, Minimum, Maximum, Pow
};
enum class UnaryKind : uint8_t {
  Neg, Not, Abs, Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Tanh, Erf, Sigmoid, Floor, Ceil
};
// clang-format on
enum class ReduceKind : uint8_t { Sum, Prod, Max, Min, Custom };
enum class RmwKind : uint8_t { Add, Max, Min, Xchg, And, Or, Xor };

struct PreparedBlock;

struct PreparedOp {
  const ir::Op *op = nullptr;
  ir::OpKind kind = ir::OpKind::Constant;
  std::vector<uint32_t> operands;
  std::vector<uint32_t> results;
  std::vector<PreparedBlock> regions;
  // Decoded attributes (which ones are meaningful depends on the kind).
  int64_t axis = 0;  ///< axis of shape ops/reductions/program_id, `start` of arange
  int64_t k = 0;     ///< topk's k
  uint8_t sub = 0;   ///< a CmpPred, BinaryKind, UnaryKind, ReduceKind or RmwKind
  bool flag = false; ///< sort's `descending`
  Slot value{};      ///< constant's value, already in the result's representation
  /// Steps the op counts against the limit: the elements it makes (or, for a store,
  /// takes), at least one, so that a loop over large tiles meets the limit as soon as
  /// one over scalars doing the same work would.
  uint64_t work = 1;
};

struct PreparedBlock {
  std::vector<uint32_t> args;
  std::vector<PreparedOp> ops;
};

/// A tile viewed as [outer, len, inner] around one axis (reductions, scans, sorting).
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;

  AxisView(const Shape &shape, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (d < axis)
        outer *= shape[d];
      else if (d == axis)
        len = shape[d];
      else
        inner *= shape[d];
    }
  }
  /// Index of element `l` of line (o, i).
  int64_t at(int64_t o, int64_t l, int64_t i) const { return (o * len + l) * inner + i; }
};

/// Thrown after a diagnostic has been reported; runKernel catches it and fails.
struct RunFailed {};

/// How the interpreter runs the programs of a thread-block cluster (Cluster.cpp): one
/// after another, again and again. Pass k runs each program up to its k-th
/// `cluster_exchange`, keeps what it offers there and stops it (ClusterSuspended); from
/// pass k + 1 on, that exchange hands every program all the offers. A program may not
/// write memory before an exchange it stops at, so running it again repeats nothing
/// that can be seen.
struct ClusterReplay {
  int64_t ranks = 1;
  size_t round = 0; ///< the exchange this pass collects
  /// Per exchange before `round`, per rank, the operands that rank offered.
  std::vector<std::vector<std::vector<TileData>>> exchanged;
  std::vector<const ir::Op *> exchangeOps; ///< per exchange before `round`, rank 0's op
  size_t reached = 0;  ///< exchanges the running program has passed in this pass
  bool wrote = false;  ///< the running program stored, printed or ran an atomic
  std::vector<TileData> offered; ///< the running program's operands at exchange `round`
  const ir::Op *offeredAt = nullptr;
};

/// Thrown by a program of a cluster at the exchange its pass collects.
struct ClusterSuspended {};

//===--------------------------------------------------------------------===//
// The machine state of one run
//===--------------------------------------------------------------------===//

class Machine {
public:
  Machine(const RunOptions &options, DiagnosticEngine &diags, std::vector<Buffer> &memory)
      : options(options), diags(diags), memory(memory), written(memory.size(), 0) {}

  const RunOptions &options;
  DiagnosticEngine &diags;
  /// Private copies of the caller's buffers, same indices; unreferenced ones are empty.
  std::vector<Buffer> &memory;
  std::vector<char> written; ///< per buffer: some element was stored
  std::vector<char> bound;   ///< per buffer: passed as an argument (reachable)

  std::vector<TileData> env;       ///< per slot: the current value
  std::vector<const Type *> types; ///< per slot: its type (owned by the IR)
  std::vector<size_t> sizes;       ///< per slot: its element count

  std::array<int64_t, 3> pid{};  ///< the running program
  std::array<int64_t, 3> grid{}; ///< the grid
  uint64_t steps = 0;
  uint64_t stepLimit = 0; ///< UINT64_MAX when unlimited
  ClusterReplay *cluster = nullptr; ///< set while a cluster's programs run
  /// Set while a graph runs (Graph.cpp): runs one of its launch ops.
  std::function<void(const PreparedOp &)> launch;

  const TileData &in(const PreparedOp &op, unsigned i) const { return env[op.operands[i]]; }
  const Type &inType(const PreparedOp &op, unsigned i) const { return *types[op.operands[i]]; }
  const Type &outType(const PreparedOp &op, unsigned i = 0) const { return *types[op.results[i]]; }
  /// The storage of result `i`, sized for its type (capacity is reused across runs of
  /// the op, so loops do not allocate).
  TileData &out(const PreparedOp &op, unsigned i = 0) {
    TileData &t = env[op.results[i]];
    t.resize(sizes[op.results[i]]);
    return t;
  }

  /// Runs the ops of `block` (its arguments already bound) up to its terminator, which
  /// it returns without executing (null when the block has none).
  const PreparedOp *run(const PreparedBlock &block);

  /// Runs a two-argument combiner region (reduce/scan `custom`) on one pair.
  Slot combine(const PreparedBlock &region, Slot acc, Slot x);

  /// Reports an error located at `loc` and aborts the run (throws RunFailed).
  [[noreturn]] void fail(Location loc, DiagCode code, const std::string &message);

  /// "(3, 0, 0)": the running program, for messages.
  std::string programString() const;

  /// Counts `work` steps; fails with E0605 beyond the limit.
  void step(Location loc, uint64_t work = 1) {
    steps += work;
    if (steps > stepLimit)
      stepLimitExceeded(loc);
  }

  /// Executes one non-terminator op (the dispatch over every op kind).
  void exec(const PreparedOp &op);

  /// Records that the running program wrote memory or output (a cluster's program may
  /// not before an exchange it is stopped at).
  void noteWrite() {
    if (cluster)
      cluster->wrote = true;
  }

private:
  [[noreturn]] void stepLimitExceeded(Location loc);
};

//===--------------------------------------------------------------------===//
// Op handlers, by concept (one source file each)
//===--------------------------------------------------------------------===//

// Arithmetic.cpp: the elementwise arithmetic ops (`sub` is a BinaryKind or UnaryKind).
void execBinary(Machine &m, const PreparedOp &op);
void execUnary(Machine &m, const PreparedOp &op);
void execFma(Machine &m, const PreparedOp &op);
// Convert.cpp: cmp, select, cast, bitcast.
void execCmp(Machine &m, const PreparedOp &op);
void execSelect(Machine &m, const PreparedOp &op);
void execCast(Machine &m, const PreparedOp &op);
void execBitcast(Machine &m, const PreparedOp &op);
// Memory.cpp: ptr_add, load, store, atomics.
void execPtrAdd(Machine &m, const PreparedOp &op);
void execLoad(Machine &m, const PreparedOp &op);
void execStore(Machine &m, const PreparedOp &op);
void execBlockElements(Machine &m, const PreparedOp &op);
void execAtomicRMW(Machine &m, const PreparedOp &op);
void execAtomicCas(Machine &m, const PreparedOp &op);
// Shape.cpp: arange and the shape ops.
void execArange(Machine &m, const PreparedOp &op);
void execSplat(Machine &m, const PreparedOp &op);
void execBroadcast(Machine &m, const PreparedOp &op);
/// expand_dims and reshape: the row-major element order does not change.
void execSameOrder(Machine &m, const PreparedOp &op);
void execPermute(Machine &m, const PreparedOp &op);
void execJoin(Machine &m, const PreparedOp &op);
void execCat(Machine &m, const PreparedOp &op);
void execGather(Machine &m, const PreparedOp &op);
void execSplit(Machine &m, const PreparedOp &op);
// Reductions.cpp: reduce, scan, argmax, argmin.
void execReduce(Machine &m, const PreparedOp &op);
void execScan(Machine &m, const PreparedOp &op);
/// argmax (`wantMax`) and argmin.
void execArgReduce(Machine &m, const PreparedOp &op, bool wantMax);
// Sorting.cpp: sort, topk, argtopk.
void execSort(Machine &m, const PreparedOp &op);
/// topk (`indices` false) and argtopk (`indices` true).
void execTopK(Machine &m, const PreparedOp &op, bool indices);
// Dot.cpp: dot.
void execDot(Machine &m, const PreparedOp &op);
// ControlFlow.cpp: for, if, while.
void execFor(Machine &m, const PreparedOp &op);
void execIf(Machine &m, const PreparedOp &op);
void execWhile(Machine &m, const PreparedOp &op);
// Print.cpp: print and assert.
void execPrint(Machine &m, const PreparedOp &op);
void execAssert(Machine &m, const PreparedOp &op);
// Cluster.cpp: cluster_exchange, and running the programs of one cluster.
void execClusterExchange(Machine &m, const PreparedOp &op);
/// Runs the `ranks` programs of the cluster whose first program is `first` (axis 0).
void runCluster(Machine &m, const PreparedBlock &body, std::array<int64_t, 3> first, int64_t ranks);
/// Renders a tile's elements readably (scalars bare, tiles as nested lists).
std::string formatTile(const Machine &m, const Type &type, const TileData &data);

// Prepare.cpp: kernel -> prepared form.
/// Decodes the attributes of `op` into `p` (kind-specific fields) and checks the
/// structure of its regions. Malformed IR is an internal error.
void decodeOp(const ir::Op &op, PreparedOp &p);
/// Numbers every value of `kernel` and builds its prepared body; fills `m.types` and
/// `m.sizes` and sizes `m.env`. Malformed IR is an internal error.
PreparedBlock prepareKernel(const ir::Kernel &kernel, Machine &m);

/// Checks argument `i` against parameter `i` of `kernel`; on success stores the
/// parameter's value in `value` and returns "", otherwise returns the problem.
std::string bindArgument(const ir::Kernel &kernel, size_t i, const KernelArg &arg,
                         const std::vector<Buffer> &buffers, Slot &value);

} // namespace kiln::interp::detail
