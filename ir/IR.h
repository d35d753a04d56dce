//===- IR.h - Tile IR: values, ops, blocks, kernels, modules ----*- C++ -*-===//
//
// Tile IR is SSA over tiles with structured control flow, in the spirit of MLIR's scf
// dialect but deliberately small:
//   Module  -> Kernels (one per specialization of a `kernel` item)
//   Kernel  -> one body Block whose arguments are the runtime parameters
//   Block   -> arguments + a list of Ops, the last one a terminator
//   Op      -> kind (Ops.def), operands, results, attributes, nested Blocks (regions)
// Every op carries the source Location it came from.
//
// Ownership: a Block owns its ops and arguments; an Op owns its results and regions.
// There are no use lists: passes that rewrite uses collect a replacement map and apply
// it in one walk (replaceUses), which keeps the data structure trivially consistent.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"
#include "support/BlockMask.h"
#include "support/Location.h"

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace kiln::ir {

enum class OpKind : uint8_t {
#define KILN_OP(Enum, Mnemonic, MinOps, MaxOps, NumResults, NumRegions) Enum,
#include "ir/Ops.def"
};

/// Static facts about an op kind, from Ops.def.
struct OpInfo {
  const char *mnemonic;
  int minOperands, maxOperands; ///< maxOperands -1: variadic
  int numResults;               ///< -1: variadic
  int numRegions;               ///< -1: zero or one (reduce/scan custom combiner)
};
const OpInfo &opInfo(OpKind kind);
/// Looks a mnemonic up ("add" -> OpKind::Add).
std::optional<OpKind> opKindFromMnemonic(std::string_view mnemonic);
bool isTerminator(OpKind kind);
/// Elementwise ops with one result of the operands' type (add, exp, ...).
bool isElementwise(OpKind kind);
/// True for ops without side effects (safe to delete when unused, to fold, to CSE).
bool isPure(OpKind kind);

/// An attribute value. Integers (also bools) are int64, floats double.
using Attr = std::variant<int64_t, double, bool, std::string, DType, std::vector<int64_t>>;
using AttrMap = std::map<std::string, Attr>; ///< ordered: deterministic printing

class Op;
class Block;

/// An SSA value: an op result or a block argument.
class Value {
public:
  Type type;
  std::string nameHint; ///< source name for readable printing ("offs"); may be empty

  Op *definingOp() const { return defOp_; }       ///< null for block arguments
  Block *ownerBlock() const { return ownerBlock_; } ///< set for block arguments
  unsigned index() const { return index_; }       ///< result / argument number
  bool isBlockArgument() const { return defOp_ == nullptr; }

private:
  friend class Op;
  friend class Block;
  Op *defOp_ = nullptr;
  Block *ownerBlock_ = nullptr;
  unsigned index_ = 0;
};

/// A straight-line list of ops with arguments. Regions of structured ops are Blocks.
class Block {
public:
  using OpList = std::list<std::unique_ptr<Op>>;
  using iterator = OpList::iterator;

  Value *addArgument(Type type, std::string nameHint = "");
  const std::vector<std::unique_ptr<Value>> &arguments() const { return args_; }
  Value *argument(unsigned i) const { return args_.at(i).get(); }
  unsigned numArguments() const { return static_cast<unsigned>(args_.size()); }

  OpList &ops() { return ops_; }
  const OpList &ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  Op *terminator() const; ///< the last op if it is a terminator, else null

  /// Inserts `op` before `pos` and takes ownership; returns it.
  Op *insert(iterator pos, std::unique_ptr<Op> op);
  Op *append(std::unique_ptr<Op> op) { return insert(ops_.end(), std::move(op)); }
  /// Removes and destroys the op at `pos`; returns the next position.
  iterator erase(iterator pos);
  /// Removes the op at `pos` without destroying it.
  std::unique_ptr<Op> take(iterator pos);
  iterator find(const Op *op);

  Op *parentOp() const { return parent_; }

private:
  friend class Op;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
  Op *parent_ = nullptr;
};

class Op {
public:
  Op(OpKind kind, Location loc) : kind_(kind), loc_(loc) {}
  Op(const Op &) = delete;
  Op &operator=(const Op &) = delete;

  OpKind kind() const { return kind_; }
  const char *mnemonic() const { return opInfo(kind_).mnemonic; }
  Location loc() const { return loc_; }
  void setLoc(Location loc) { loc_ = loc; }

  std::vector<Value *> &operands() { return operands_; }
  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(unsigned i) const { return operands_.at(i); }
  unsigned numOperands() const { return static_cast<unsigned>(operands_.size()); }

  Value *addResult(Type type, std::string nameHint = "");
  Value *result(unsigned i = 0) const { return results_.at(i).get(); }
  const std::vector<std::unique_ptr<Value>> &results() const { return results_; }
  unsigned numResults() const { return static_cast<unsigned>(results_.size()); }

  /// Appends an empty region (a Block) and returns it.
  Block *addRegion();
  Block *region(unsigned i) const { return regions_.at(i).get(); }
  unsigned numRegions() const { return static_cast<unsigned>(regions_.size()); }
  const std::vector<std::unique_ptr<Block>> &regions() const { return regions_; }

  AttrMap &attrs() { return attrs_; }
  const AttrMap &attrs() const { return attrs_; }
  bool hasAttr(const std::string &name) const { return attrs_.count(name) != 0; }
  void setAttr(const std::string &name, Attr value) { attrs_[name] = std::move(value); }
  /// Typed getters; an absent or mistyped attribute is an internal error.
  int64_t intAttr(const std::string &name) const;
  double floatAttr(const std::string &name) const;
  bool boolAttr(const std::string &name) const;
  const std::string &stringAttr(const std::string &name) const;
  DType dtypeAttr(const std::string &name) const;
  const std::vector<int64_t> &intsAttr(const std::string &name) const;

  Block *parentBlock() const { return parent_; }
  /// The op whose region holds this op (null at the kernel's top level).
  Op *parentOp() const;

private:
  friend class Block;
  OpKind kind_;
  Location loc_;
  std::vector<Value *> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<std::unique_ptr<Block>> regions_;
  AttrMap attrs_;
  Block *parent_ = nullptr;
};

/// The most programs one thread-block cluster may hold and still launch on every sm_90
/// device (CUDA's portable cluster size).
constexpr int64_t kMaxClusterSize = 8;

/// How a kernel whose reduction runs over several programs is launched (the
/// multi-segment strategy of reduction-chain fusion, SplitReduction.cpp). For every
/// program the caller asks for, the launcher runs `segments` programs along axis 0
/// (program x of the request is programs x·segments .. x·segments + segments - 1). The
/// segments then merge in one of two ways:
///  * through a workspace: the launcher passes as the kernel's last parameter a
///    workspace of `workspaceBytes` bytes per requested program, zero before the first
///    launch; the kernel leaves it zero again;
///  * in a cluster (`cluster`, sm_90): the segments of a requested program run as one
///    thread-block cluster of `segments` programs along x and share their states with
///    `cluster_exchange`; there is no workspace.
struct GridSplit {
  int64_t segments = 1;       ///< 1: launched as asked
  int64_t workspaceBytes = 0; ///< per requested program, when not `cluster`
  bool cluster = false;       ///< the segments of a requested program form a cluster
  bool active() const { return segments > 1; }
  bool usesWorkspace() const { return active() && !cluster; }
};

/// One specialization of a `kernel`: runtime parameters are the body's arguments.
/// A `block_mask<BM, BN>` parameter of the source: it became support/BlockMask.h's five
/// runtime parameters (rows, cols, row_start, blocks, bitmaps), from `firstParam` on.
/// What a `block_mask<BM, BN, ROWS, COLS>` parameter declares one of its extents to be
/// (support/BlockMask.h).
using MaskExtent = kiln::BlockMaskExtent;

struct BlockMaskParam {
  std::string name;
  int64_t blockRows = 0, blockCols = 0;
  unsigned firstParam = 0;
  /// The declared extents (rows, then cols), when the type names them.
  std::optional<BlockMaskExtents> extents;

  bool operator==(const BlockMaskParam &) const = default;
};

struct Kernel {
  std::string name;                    ///< e.g. "softmax"
  Location loc;
  std::vector<std::pair<std::string, Attr>> constValues; ///< const params, in order
  int64_t numWarps = 4;
  int64_t numStages = 1;
  GridSplit gridSplit;
  /// Integer parameters the source promises are multiples of a power of two
  /// (`multiple_of(n, 16)`, `assume(n % 16 == 0)`): (parameter index, multiple). Code
  /// generation relies on them as on --assume-multiple, and a bundle records them, so
  /// that a launch that breaks one is refused.
  std::vector<std::pair<unsigned, int64_t>> paramMultiples;
  /// The block masks among the parameters, in order.
  std::vector<BlockMaskParam> blockMasks;
  std::unique_ptr<Block> body = std::make_unique<Block>();

  /// Runtime parameters (names come from the arguments' nameHint).
  const std::vector<std::unique_ptr<Value>> &params() const { return body->arguments(); }
  /// How many of them the caller passes: all but the workspace of a split kernel.
  size_t numLaunchParams() const { return params().size() - (gridSplit.usesWorkspace() ? 1 : 0); }
};

struct Module {
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// `graph` entry points: a parameter list and a body of scalar ops, `if`s and
  /// `launch`es of `kernels` (the launch settings of a Kernel do not apply). Passes and
  /// code generation work on `kernels`; a graph runs launch by launch on the interpreter.
  std::vector<std::unique_ptr<Kernel>> graphs;

  Kernel *findKernel(std::string_view name) const;
  Kernel *findGraph(std::string_view name) const;
};

//===--------------------------------------------------------------------===//
// Building
//===--------------------------------------------------------------------===//

/// Creates ops at an insertion point. `create` is the one constructor of ops: it checks
/// arity against Ops.def and the op's local type rules (verifyOpLocal) and raises an
/// internal compiler error when they do not hold, so a lowering bug is caught where it
/// happens rather than in a later pass.
class Builder {
public:
  Builder() = default;
  explicit Builder(Block *block) { setInsertionPointToEnd(block); }
  void setInsertionPointToEnd(Block *block) { block_ = block, pos_ = block->ops().end(); }
  void setInsertionPoint(Block *block, Block::iterator pos) { block_ = block, pos_ = pos; }
  /// Inserts before `op`.
  void setInsertionPoint(Op *op);
  Block *block() const { return block_; }
  Block::iterator position() const { return pos_; }

  /// Creates an op with the given operands, result types, attributes and `numRegions`
  /// empty regions (fill them, then the op is complete).
  Op *create(OpKind kind, Location loc, std::vector<Value *> operands,
             std::vector<Type> resultTypes, AttrMap attrs = {}, unsigned numRegions = 0);

  /// Shorthands for the common single-result case.
  Value *createValue(OpKind kind, Location loc, std::vector<Value *> operands, Type resultType,
                     AttrMap attrs = {}) {
    return create(kind, loc, std::move(operands), {resultType}, std::move(attrs))->result();
  }
  Value *intConstant(Location loc, Type type, int64_t value);
  Value *floatConstant(Location loc, Type type, double value);
  Value *boolConstant(Location loc, Type type, bool value);

private:
  Block *block_ = nullptr;
  Block::iterator pos_;
};

//===--------------------------------------------------------------------===//
// Walking and rewriting
//===--------------------------------------------------------------------===//

/// Visits every op in `block` and in nested regions, parents before children.
/// True for a load that must read memory afresh each time (`cache_modifier = "cv"`: a
/// flag another program sets): it may not be merged, recomputed or streamed ahead.
bool readsAfresh(const Op &load);

void walk(Block &block, const std::function<void(Op &)> &fn);
/// Visits nested ops children first (safe for erasing the visited op's nested ops).
void walkPostOrder(Block &block, const std::function<void(Op &)> &fn);

/// Rewrites every operand in `block` (recursively) found in `map`, chasing chains
/// (a -> b -> c). Returns the number of operands changed.
using ValueMap = std::unordered_map<const Value *, Value *>;
size_t replaceUses(Block &block, const ValueMap &map);

/// What `v` maps to in `mapping`, or `v` itself when it is not mapped.
Value *lookup(const ValueMap &mapping, Value *v);

/// Deep-copies `op` (and its regions) at the builder's insertion point. Operands are
/// looked up in `mapping` (unmapped ones are kept); new results and block arguments
/// are added to it.
Op *cloneOp(Builder &builder, const Op &op, ValueMap &mapping);

/// Deep-copies a whole module (kernels, sources shared).
std::unique_ptr<Module> cloneModule(const Module &module);

/// Counts ops in a block, recursively (for tests and "(unchanged)" checks).
size_t countOps(const Block &block);

/// The value of `v` when it is the result of a scalar integer `constant` op.
std::optional<int64_t> integerConstant(const Value *v);

} // namespace kiln::ir
