//===- Scope.h - Checked values and the name scopes that hold them -*- C++ -*-===//
//
// Semantic analysis evaluates expressions to `Val`s: a Type, an optional compile-time
// constant, the `weak` flag of literal-typed values, and the Tile IR value once one is
// needed. Constants are materialized lazily (as `constant` ops of the type the use
// needs), so `x_bf16 * 0.5` never builds an f32 constant it would have to convert.
//
// Names live in Scopes (one per block), grouped into Frames (one per kernel body or
// inlined fn call): a fn body sees its own frame and the module's items, never the
// caller's locals.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::sema {

/// A scalar compile-time value. Integers keep a 64-bit pattern read as unsigned when
/// their dtype is u64; bools are 0/1 in `i`.
struct ConstVal {
  enum class Kind : uint8_t { Int, Float, Bool };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;

  static ConstVal ofInt(int64_t v) { return {Kind::Int, v, 0}; }
  static ConstVal ofFloat(double v) { return {Kind::Float, 0, v}; }
  static ConstVal ofBool(bool v) { return {Kind::Bool, v ? 1 : 0, 0}; }
  bool isInt() const { return kind == Kind::Int; }
  bool isFloat() const { return kind == Kind::Float; }
  bool isBool() const { return kind == Kind::Bool; }
};

/// A checked value.
struct Val {
  enum class Kind : uint8_t {
    Poison, ///< the result of an erroneous expression: silences follow-on errors
    Void,   ///< a call that produces nothing (store, a fn without return)
    Value,  ///< a tile, scalar or pointer
    Tuple,  ///< several values (split)
    Fn,     ///< a fn, named or passed as an argument: fn apply(f, x) { return f(x); }
    Mask,   ///< a block_mask parameter (Sema::masks[mask]), or a name bound to one
  };
  Kind kind = Kind::Poison;
  Type type;
  /// Literal-typed: the dtype is nominal and yields to the other operand's.
  /// Invariant: a weak value is a scalar constant.
  bool weak = false;
  /// Scalar compile-time value (only for scalars).
  std::optional<ConstVal> cst;
  /// The IR value once materialized; null for a constant not yet needed in IR.
  ir::Value *ir = nullptr;
  /// The fn of a Fn value.
  const ast::FunctionItem *fn = nullptr;
  /// The block mask of a Mask value: an index into Sema::masks.
  int mask = -1;
  /// Tuple elements.
  std::vector<Val> elems;
  /// Where the value was computed (for errors raised when a weak value adopts a type).
  Location loc;

  bool isPoison() const { return kind == Kind::Poison; }
  bool isValue() const { return kind == Kind::Value; }
  bool isConst() const { return kind == Kind::Value && cst.has_value(); }

  static Val poison() { return Val{}; }
  static Val makeVoid() {
    Val v;
    v.kind = Kind::Void;
    return v;
  }
  static Val ofIR(ir::Value *value, Location loc) {
    Val v;
    v.kind = Kind::Value;
    v.type = value->type;
    v.ir = value;
    v.loc = loc;
    return v;
  }
  static Val ofFn(const ast::FunctionItem *f, Location loc) {
    Val v;
    v.kind = Kind::Fn;
    v.fn = f;
    v.loc = loc;
    return v;
  }
  static Val ofMask(int mask, Location loc) {
    Val v;
    v.kind = Kind::Mask;
    v.mask = mask;
    v.loc = loc;
    return v;
  }
  static Val ofConst(Type type, ConstVal c, bool weak, Location loc) {
    Val v;
    v.kind = Kind::Value;
    v.type = std::move(type);
    v.cst = c;
    v.weak = weak;
    v.loc = loc;
    return v;
  }
};

enum class BindingKind {
  Let,     ///< let x = e
  Var,     ///< var x = e: reassignable; SSA is built across control flow
  Param,   ///< a kernel or fn parameter
  Const,   ///< a const kernel parameter
  LoopVar, ///< the variable of a for loop or static_range
};

struct Binding {
  BindingKind kind;
  std::string name;
  Location loc;
  Val value;
};

/// The names declared in one block. Bindings are heap-allocated so that pointers to
/// them stay valid while the scope grows (loops keep pointers to carried vars).
struct Scope {
  std::vector<std::unique_ptr<Binding>> bindings;
  /// Name -> binding, so that a block with many bindings is checked in linear time.
  std::unordered_map<std::string, Binding *> byName;

  Binding *find(const std::string &name) const {
    auto it = byName.find(name);
    return it == byName.end() ? nullptr : it->second;
  }
  Binding *add(BindingKind kind, std::string name, Location loc, Val value) {
    bindings.push_back(std::make_unique<Binding>(Binding{kind, name, loc, std::move(value)}));
    byName[std::move(name)] = bindings.back().get();
    return bindings.back().get();
  }
};

/// The scopes of one kernel body or one inlined fn call.
struct Frame {
  std::vector<std::unique_ptr<Scope>> scopes;
  /// The fn being inlined; null for a kernel body (and constant contexts).
  const void *fn = nullptr;
  /// Set by the fn body's final `return e;`.
  std::optional<Val> returned;

  Binding *lookup(const std::string &name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it)
      if (Binding *b = (*it)->find(name))
        return b;
    return nullptr;
  }
};

} // namespace kiln::sema
