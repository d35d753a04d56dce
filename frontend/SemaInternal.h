//===- SemaInternal.h - The semantic analyser's shared state -----*- C++ -*-===//
//
// Private to frontend/Sema*.cpp. One `Sema` object checks one compilation: it loads
// the files (Imports.cpp), collects module items, specializes and lowers each requested
// kernel (SemaKernel.cpp) by walking statements (SemaStmt.cpp) and expressions
// (SemaExpr.cpp, SemaCall.cpp, SemaBuiltins*.cpp) while building Tile IR directly.
// Value plumbing — materializing constants, conversions, broadcasts — lives in
// SemaValues.cpp and compile-time arithmetic in ConstEval.cpp.
//
// The members are public on purpose: the builtin handlers are free functions spread
// over several files, and this header is not an API.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/Autotune.h"
#include "frontend/Scope.h"
#include "frontend/Sema.h"
#include "frontend/TypeRules.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::sema {

class Sema;

/// A module-level item visible by name (from the main file or any import).
struct GlobalItem {
  const ast::Item *item = nullptr; ///< a ConstItem or FunctionItem
  ast::ItemKind kind = ast::ItemKind::Const;
  Location nameLoc;
  /// Module consts are evaluated on first use (or at the end of item checking).
  enum class State : uint8_t { Unevaluated, Evaluating, Done } state = State::Unevaluated;
  Val value;
};

/// The arguments of one call, matched to the callee's parameters.
struct CallArgs {
  std::string callee;
  Location loc;                         ///< the call expression
  Location calleeLoc;                   ///< the callee's name
  std::vector<const ast::Expr *> exprs; ///< per parameter; null when not given
  std::vector<Location> locs;           ///< per parameter (the call's when absent)
  std::vector<bool> positional;         ///< per parameter: given without its name
  std::vector<std::optional<Val>> vals; ///< evaluated values, filled on demand

  bool has(size_t i) const { return exprs[i] != nullptr; }
};

using BuiltinHandler = Val (*)(Sema &, CallArgs &);

struct BuiltinInfo {
  const char *name;
  std::vector<const char *> params;
  unsigned numRequired; ///< the first numRequired params must be given
  BuiltinHandler handler;
};

/// minimum, maximum and pow of two values, elementwise (SemaBuiltins.cpp).
Val minMaxPow(Sema &s, CallArgs &a);
/// The arguments of a call of `callee` on values already computed, placed where the
/// arguments `from` of `a` were written (for builtins made of others).
CallArgs callOn(const CallArgs &a, const char *callee, const std::vector<std::pair<size_t, Val>> &from);

/// reduce and scan of several tiles with a combiner of 2k parameters (SemaTupleCombine.cpp).
Val tupleCombine(Sema &s, CallArgs &a, std::vector<Val> xs, bool scan, bool reverse, bool keepDims);

/// The builtin named `name`, or null (SemaBuiltins.cpp).
const BuiltinInfo *findBuiltin(std::string_view name);
/// Every builtin, in a fixed order (for "did you mean").
const std::vector<BuiltinInfo> &allBuiltins();

/// The builtin groups, each defined in its own file and collected by allBuiltins().
void addCoreBuiltins(std::vector<BuiltinInfo> &table);   // SemaBuiltins.cpp
void addShapeBuiltins(std::vector<BuiltinInfo> &table);  // SemaBuiltinsShape.cpp
void addReduceBuiltins(std::vector<BuiltinInfo> &table); // SemaBuiltinsReduce.cpp
void addRandomBuiltins(std::vector<BuiltinInfo> &table); // SemaBuiltinsRandom.cpp
void addDerivedBuiltins(std::vector<BuiltinInfo> &table); // SemaBuiltinsDerived.cpp
void addHintBuiltins(std::vector<BuiltinInfo> &table);    // SemaBuiltinsHints.cpp

/// Launch settings of a kernel, from its attributes.
struct KernelAttrs {
  int64_t numWarps = 4;
  int64_t numStages = 1;
  std::optional<KernelAutotune> autotune;
};

/// Thrown (and caught per kernel) when unrolling and inlining make a kernel too large.
struct BudgetExceeded {};

//===--------------------------------------------------------------------===//
// Compile-time arithmetic (ConstEval.cpp)
//===--------------------------------------------------------------------===//

/// Converts with the semantics of the `cast` op (wrapping, truncation, saturation).
ConstVal castConst(const ConstVal &c, DType from, DType to);
/// Folds a binary operator on constants of dtype `dtype` (the promoted operand dtype).
/// `weak` constants compute in 64 bits (integers) or unrounded doubles (floats).
/// On failure (division by zero, overflow) returns nullopt and sets `error`.
std::optional<ConstVal> foldBinary(ast::BinaryOp op, const ConstVal &a, const ConstVal &b,
                                   DType dtype, bool weak, std::string &error);
std::optional<ConstVal> foldUnary(ast::UnaryOp op, const ConstVal &a, DType dtype, bool weak,
                                  std::string &error);
/// Folds a float math builtin (exp, sqrt, ...) on a double; nullopt if not foldable.
std::optional<double> foldMath(std::string_view name, double x);
/// The value as written in messages ("300", "1.5", "true").
std::string constString(const ConstVal &c, DType dtype);
/// The value as an IR attribute (int64 / double / bool), for Kernel::constValues.
ir::Attr constAttr(const ConstVal &c);
/// A -D value and the type its text has: i64 for an integer (u64 for one above i64's
/// range), f64 for a float, bool for true or false.
struct DefineValue {
  ConstVal value;
  DType dtype = DType::I64;
};
/// Parses a -D value: an integer (decimal or 0x hex, optional sign, `_` separators), a
/// float, true/false. nullopt with `why` set when it is none of them, or an integer
/// outside both i64 and u64.
std::optional<DefineValue> parseDefineValue(std::string_view text, std::string &why);
/// The value, of type `dtype`, as a -D value that parseDefineValue reads back to the
/// same value and kind.
std::string defineText(const ConstVal &c, DType dtype);

//===--------------------------------------------------------------------===//
// The analyser
//===--------------------------------------------------------------------===//

class Sema {
public:
  Sema(ir::Module &module, DiagnosticEngine &diags, const SemaOptions &options);
  /// Loads and checks the program; then, when `specialize`, lowers the kernels.
  bool run(uint32_t mainFile, bool specialize = true);

  // ---- state ---------------------------------------------------------------
  ir::Module &module;
  DiagnosticEngine &diags;
  const SemaOptions &options;
  SourceManager &sources;
  std::vector<std::unique_ptr<ast::Module>> files; ///< the main file first
  std::map<std::string, GlobalItem> globals;
  std::map<const ast::FunctionItem *, KernelAttrs> kernelAttrs;
  std::vector<std::unique_ptr<Frame>> frames;
  std::vector<const ast::FunctionItem *> callStack; ///< fns being inlined
  /// fns whose body has a misplaced return or launch: calls yield poison silently.
  std::set<const ast::FunctionItem *> brokenFns;
  ir::Builder builder;
  ir::Kernel *current = nullptr; ///< the kernel being specialized
  unsigned combinerDepth = 0; ///< > 0 while inlining a reduce/scan combiner
  uint64_t opsEmitted = 0;    ///< per kernel, against kMaxOps
  unsigned depth = 0;         ///< nesting of statements and expressions, against kMaxDepth
  bool depthReported = false; ///< E0004 is reported once per kernel
  std::set<std::string> reportedMessages; ///< location + code + message, for dedupe

  static constexpr uint64_t kMaxOps = 1'000'000;
  static constexpr size_t kMaxCallDepth = 128;
  static constexpr int64_t kMaxUnroll = 4096;
  /// Inlining stacks the nesting of every fn on the way; this bound keeps the recursion
  /// of the checker within a few MiB of stack whatever the input.
  static constexpr unsigned kMaxDepth = 4000;

  // ---- diagnostics (Sema.cpp) --------------------------------------------------
  /// Reports an error once per (location, code): inlined fns and unrolled loops would
  /// otherwise repeat the same message.
  void error(Location loc, DiagCode code, std::string message, std::string hint = {},
             std::vector<Diagnostic> notes = {});
  static Diagnostic note(Location loc, std::string message);
  /// The closest of `candidates` to `name` ("did you mean"), or "".
  static std::string closestName(const std::string &name,
                                 const std::vector<std::string> &candidates);
  /// Names visible here (locals, items), for suggestions.
  std::vector<std::string> visibleNames() const;

  // ---- loading (Imports.cpp) ---------------------------------------------------
  bool loadProgram(uint32_t mainFile);

  // ---- items (Sema.cpp, SemaKernel.cpp) ------------------------------------------
  void checkStructure(const ast::FunctionItem &fn);
  void checkKernelDecl(const ast::FunctionItem &k);
  KernelAttrs checkAttributes(const ast::FunctionItem &k);
  void compileKernels();
  std::unique_ptr<ir::Kernel> specialize(const ast::FunctionItem &k);
  /// Verifies what lowering built; a violation is a compiler bug (an ICE naming `what`).
  void verifyLowered(const ir::Module &m, const std::string &what);

  // ---- graphs (SemaGraph.cpp) ------------------------------------------------------
  /// A kernel as a graph launches it: its const values (as -D text, in parameter
  /// order; the defaults for the others) and the module name they give it.
  struct LaunchInstance {
    const ast::FunctionItem *kernel = nullptr;
    std::vector<std::pair<std::string, std::string>> consts;
    std::string name;
    Location launch; ///< the first launch of it
  };
  std::vector<LaunchInstance> launchInstances; ///< of the graph being lowered
  /// A graph's block mask passed to a kernel's block_mask parameter: checked against the
  /// parameter's block sizes once the instance is specialized.
  struct PendingMaskArgument {
    std::string param, mask;
    int64_t blockRows = 0, blockCols = 0;
    Location loc;
    std::string instance = {};
  };
  std::vector<PendingMaskArgument> pendingMaskArguments;
  bool loweringGraph = false;                  ///< `launch` statements are lowered
  /// While an instance is specialized: its const values, instead of the -D options,
  /// and a note at the launch that asked for them, added to every error.
  const std::vector<std::pair<std::string, std::string>> *constOverrides = nullptr;
  std::optional<Diagnostic> instanceNote;
  /// Lowers graph `g` into module.graphs and the kernels it launches into module.kernels.
  void compileGraph(const ast::FunctionItem &g);
  void checkLaunch(const ast::LaunchStmt &s);
  /// Resolves a written type; `what` names the construct for messages.
  std::optional<Type> resolveType(const ast::TypeExpr &t);
  Val globalConst(GlobalItem &g);

  // ---- IR emission (SemaValues.cpp) ------------------------------------------------
  ir::Op *emit(ir::OpKind kind, Location loc, std::vector<ir::Value *> operands,
               std::vector<Type> results, ir::AttrMap attrs = {}, unsigned regions = 0);
  Val emitValue(ir::OpKind kind, Location loc, std::vector<ir::Value *> operands, Type result,
                ir::AttrMap attrs = {});
  ir::Value *buildConstant(const Type &type, const ConstVal &c, Location loc);
  /// The IR value of `v`, building a constant of its type if needed.
  ir::Value *materialize(Val &v);
  /// A weak constant takes dtype `d` (E0007 when an integer does not fit).
  Val adopt(const Val &v, DType d);
  /// A weak value becomes strong at its nominal dtype.
  Val strengthen(const Val &v);
  /// Explicit conversion (the `cast` op; folded for constants).
  Val castTo(const Val &v, DType d, Location loc);
  /// Implicit conversion: weak values adopt `d`, strong ones are cast.
  Val convertTo(const Val &v, DType d, Location loc);
  /// Broadcasts to `shape` (which `v` must broadcast to) with splat/expand_dims/broadcast.
  Val broadcastTo(const Val &v, const Shape &shape, Location loc);
  /// The dtype two operands meet in, with the weak-literal rules.
  DType meetDType(const Val &a, const Val &b) const;
  /// Broadcast shape of a and b; E0301 (or E0304 when too large) and nullopt otherwise.
  std::optional<Shape> commonShape(const Shape &a, const Shape &b, Location loc,
                                   const std::string &what);
  bool checkTileSize(const Shape &shape, Location loc);
  /// Lossless conversion to `to` (dtype and broadcast shape), as for annotations and
  /// var assignments; reports `code` and returns nullopt when it would lose anything.
  std::optional<Val> coerce(const Val &v, const Type &to, Location loc, DiagCode code,
                            const std::string &what);
  std::string describe(const Val &v) const;

  // ---- expressions (SemaExpr.cpp) --------------------------------------------------
  Val evalExpr(const ast::Expr &e);
  /// evalExpr that insists on one value (E0505 for void, E0205 for a tuple).
  Val evalValue(const ast::Expr &e);
  /// evalValue's checks of `v`, the value of `e`.
  Val evalValueOf(const ast::Expr &e, Val v);
  Val evalName(const ast::NameExpr &e);
  Val unaryOp(ast::UnaryOp op, const Val &a, Location loc);
  Val binaryOp(ast::BinaryOp op, const Val &a, const Val &b, Location loc);
  Val evalIndex(const ast::IndexExpr &e);
  Val evalCond(const ast::CondExpr &e);
  /// evalExpr, and a tuple literal `(a, b)` as several values: what a `return` of a fn and
  /// the initializer of `let (a, b) = ...` may be.
  Val evalValues(const ast::Expr &e);
  /// An argument of a fn call: one value, or a fn (fn apply(f, x) takes one).
  Val evalArgument(const ast::Expr &e);
  /// The fn a call of `name` reaches: a local binding that holds a fn (a parameter
  /// given one), else a module fn; null when neither.
  const ast::FunctionItem *calleeFn(const std::string &name) const;
  /// A dtype written as an argument (`f32`); E0300 when `e` is not one.
  std::optional<DType> evalDType(const ast::Expr &e);
  /// Evaluates `e` as a compile-time constant (E0303 otherwise), seeing only module
  /// items when `moduleScope`, else also the current frame's names.
  Val evalConstExpr(const ast::Expr &e, const std::string &what, bool moduleScope = true);
  Binding *lookupLocal(const std::string &name) const;

  // ---- calls (SemaCall.cpp) --------------------------------------------------------
  Val evalCall(const std::string &callee, Location calleeLoc, Location loc,
               const ast::Expr *receiver, const std::vector<ast::Arg> &args);
  bool bindArgs(CallArgs &out, const std::vector<std::string> &params,
                const std::vector<bool> &required, const ast::Expr *receiver,
                const std::vector<ast::Arg> &args);
  Val callFn(const ast::FunctionItem &fn, std::vector<Val> args, Location loc);
  const ast::FunctionItem *findFn(const std::string &name) const;

  Val argValue(CallArgs &a, size_t i);
  std::optional<int64_t> argConstInt(CallArgs &a, size_t i, const char *what);
  std::optional<bool> argConstBool(CallArgs &a, size_t i, const char *what);
  std::optional<DType> argDType(CallArgs &a, size_t i, DType fallback);
  /// A constant shape; `[]` (rank 0, a scalar) only where `allowRank0`.
  std::optional<Shape> argShape(CallArgs &a, size_t i, bool allowRank0 = false);
  std::optional<std::vector<int64_t>> argIntList(CallArgs &a, size_t i, const char *what);
  /// The axis argument normalized to [0, rank); defaults to 0 when absent on a 1-D tile.
  std::optional<int64_t> argAxis(CallArgs &a, size_t i, unsigned rank);
  const ast::FunctionItem *argFn(CallArgs &a, size_t i);
  std::optional<std::string> argString(CallArgs &a, size_t i);

  // ---- sparsity (SemaSparsity.cpp) ---------------------------------------------------
  /// A block_mask parameter of the kernel being specialized: its five runtime
  /// parameters (support/BlockMask.h) and block sizes.
  struct MaskParam {
    std::string name;
    int64_t blockRows = 0, blockCols = 0;
    ir::Value *rows = nullptr, *cols = nullptr, *rowStart = nullptr, *blocks = nullptr, *bitmaps = nullptr;
  };
  std::vector<MaskParam> masks;
  /// An enclosing `for kb in blocks(mask, rb)`: what mask.elements(rb, kb) reads.
  struct BlocksLoop {
    int mask = -1;
    Val row;                    ///< rb as evaluated for the loop
    ir::Value *col = nullptr;   ///< the loop variable: the entry's column block
    ir::Value *slot = nullptr;  ///< the entry's bitmap slot, -1 on a full block
  };
  std::vector<BlocksLoop> blocksLoops;
  /// The bounds of `for kb in blocks(mask, rb)` over block row rb's entries.
  struct BlocksRange {
    int mask = -1;
    Val row;
    ir::Value *begin = nullptr, *end = nullptr; ///< i32 entry indices
  };

  /// Checks `block_mask<BM, BN>` (the block sizes); nullopt after an error.
  std::optional<std::pair<int64_t, int64_t>> blockMaskSizes(const ast::TypeExpr &t);
  /// Whether `v` may bind fn parameter `p`, when either is a block mask (reports E0408).
  bool checkMaskArgument(const Val &v, const ast::Param &p, const ast::FunctionItem &fn, Location loc);
  /// Declares kernel parameter `p` of type block_mask as its five runtime parameters.
  void declareMaskParam(const ast::Param &p);
  /// The extents `block_mask<BM, BN, ROWS, COLS>` declares, once every parameter is
  /// declared: a constant, or an integer runtime parameter of the kernel.
  void resolveMaskExtents(const ast::FunctionItem &k);
  /// Whether `e` names a block mask (without reporting anything).
  bool isMaskExpr(const ast::Expr &e);
  /// `mask.rows`, `mask.cols`, `mask.elements(rb, cb)`, and any other `x.f` field.
  Val evalMember(const ast::MethodExpr &m);
  /// The range of a blocks() loop; nullopt after an error.
  std::optional<BlocksRange> blocksRange(const ast::ForStmt &f);
  /// At the top of a blocks() loop body with induction variable `entry`: reads the
  /// entry and records the loop; returns the column block, the loop variable's value.
  Val enterBlocksIteration(const BlocksRange &r, ir::Value *entry, Location loc);
  void leaveBlocksIteration() { blocksLoops.pop_back(); }

  // ---- statements (SemaStmt.cpp) -----------------------------------------------------
  void checkBlock(const ast::BlockStmt &block, bool fnBody = false);
  void checkStmt(const ast::Stmt &s, bool lastOfFnBody);
  Frame &frame() { return *frames.back(); }
  void pushScope();
  void popScope();
  Binding *declare(BindingKind kind, const std::string &name, Location loc, Val value);
  /// Binds a parameter; a duplicate name was reported (E0103) by the item check.
  void declareParam(BindingKind kind, const std::string &name, Location loc, Val value);
};

/// RAII: one level of statement/expression nesting. `ok` is false (and E0004 reported
/// once) when the level is too deep to enter.
struct DepthGuard {
  Sema &s;
  bool ok;
  DepthGuard(Sema &sema, Location loc) : s(sema), ok(++sema.depth <= Sema::kMaxDepth) {
    if (!ok && !s.depthReported) {
      s.depthReported = true;
      s.error(loc, DiagCode::NestingTooDeep,
              "statements and expressions nest more than " + std::to_string(Sema::kMaxDepth) +
                  " levels deep once fns are inlined",
              "split long expressions with let bindings, or call fns less deeply");
    }
  }
  ~DepthGuard() { --s.depth; }
  DepthGuard(const DepthGuard &) = delete;
  DepthGuard &operator=(const DepthGuard &) = delete;
};

/// RAII: a new scope for the lifetime of the guard.
struct ScopeGuard {
  Sema &s;
  explicit ScopeGuard(Sema &sema) : s(sema) { s.pushScope(); }
  ~ScopeGuard() { s.popScope(); }
  ScopeGuard(const ScopeGuard &) = delete;
  ScopeGuard &operator=(const ScopeGuard &) = delete;
};

/// RAII: restores the builder's insertion point.
struct InsertionGuard {
  ir::Builder &b;
  ir::Block *block;
  ir::Block::iterator pos;
  explicit InsertionGuard(ir::Builder &builder)
      : b(builder), block(builder.block()), pos(builder.position()) {}
  ~InsertionGuard() {
    if (block)
      b.setInsertionPoint(block, pos);
    else
      b = ir::Builder(); // there was no insertion point: leave none behind
  }
  InsertionGuard(const InsertionGuard &) = delete;
  InsertionGuard &operator=(const InsertionGuard &) = delete;
};

/// Spelling of a dtype as a std::string (messages).
inline std::string dtStr(DType d) { return std::string(dtypeName(d)); }

} // namespace kiln::sema
