//===- SemaBuiltinsRandom.cpp - Counter-based random numbers --------------===//
//
// rand, randn, randint, randint4x and philox: random numbers a kernel computes from a
// seed and a counter, with no state, so that any program can draw the numbers of any
// element in any order and a dropout mask can be recomputed in the backward pass
// instead of stored. The generator is Philox 4x32 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011): ten rounds of two 32x32 -> 64-bit products
// over a 128-bit counter under a 64-bit key.
//
// The builtins are expanded here into ordinary Tile IR (64-bit products, shifts, xors,
// casts), so the interpreter, PTX and SPIR-V all run the same arithmetic and agree bit
// for bit. They follow Triton's tl.randint4x, tl.randint, tl.rand and tl.randn: the
// key is the seed's low and high 32 bits, the counter (offset, 0, 0, 0), a uniform
// float is the counter's word read as i32, folded to non-negative and scaled by
// 4.6566127342e-10, and a normal one is Box-Muller over two uniform words; so the same
// seed and offsets give Triton's numbers.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"

namespace kiln::sema {

using ir::OpKind;

namespace {

// Philox 4x32's multipliers and Weyl key increments (the golden ratio and sqrt(3) - 1).
constexpr uint32_t kRoundA = 0xD2511F53;
constexpr uint32_t kRoundB = 0xCD9E8D57;
constexpr uint32_t kKeyA = 0x9E3779B9;
constexpr uint32_t kKeyB = 0xBB67AE85;
constexpr int64_t kDefaultRounds = 10;
// A u32 read as i32 and folded to [0, 2^31) times this is a float in [0, 1) (Triton's).
constexpr float kUniformScale = 4.6566127342e-10f;

/// Builds the expansion at one call's location, in Sema's own operations, so that
/// broadcasting and types follow the language's rules.
struct RandomEmitter {
  Sema &s;
  Location loc;

  Val constant(DType d, uint64_t bits) const {
    return Val::ofConst(Type::scalar(d), ConstVal::ofInt(static_cast<int64_t>(bits)), false, loc);
  }
  Val floatConstant(double v) const { return Val::ofConst(Type::scalar(DType::F32), ConstVal::ofFloat(v), false, loc); }
  /// `v` as an IR value: the arithmetic below wraps, which only the ops (not constant
  /// folding in the checker, which refuses overflow) promise.
  Val value(Val v) const { return Val::ofIR(s.materialize(v), loc); }
  ir::Value *ir(Val v) const { return s.materialize(v); }
  Val bin(ast::BinaryOp op, const Val &a, const Val &b) const { return s.binaryOp(op, a, b, loc); }
  Val cast(const Val &v, DType d) const { return s.castTo(v, d, loc); }

  /// The high 32 bits of the 64-bit product of `x` (u32) and `m`.
  Val mulhi(const Val &x, uint32_t m) const {
    Val wide = bin(ast::BinaryOp::Mul, cast(x, DType::U64), constant(DType::U64, m));
    return cast(bin(ast::BinaryOp::Shr, wide, constant(DType::U64, 32)), DType::U32);
  }

  /// Philox 4x32 with `rounds` rounds on the counter `c` under the key (k0, k1).
  std::array<Val, 4> philox(std::array<Val, 4> c, Val k0, Val k1, int64_t rounds) const {
    using ast::BinaryOp;
    for (int64_t r = 0; r < rounds; ++r) {
      Val a = c[0], b = c[2];
      c[0] = bin(BinaryOp::BitXor, bin(BinaryOp::BitXor, mulhi(b, kRoundB), c[1]), k0);
      c[2] = bin(BinaryOp::BitXor, bin(BinaryOp::BitXor, mulhi(a, kRoundA), c[3]), k1);
      c[1] = bin(BinaryOp::Mul, b, constant(DType::U32, kRoundB));
      c[3] = bin(BinaryOp::Mul, a, constant(DType::U32, kRoundA));
      if (r + 1 < rounds) {
        k0 = bin(BinaryOp::Add, k0, constant(DType::U32, kKeyA));
        k1 = bin(BinaryOp::Add, k1, constant(DType::U32, kKeyB));
      }
    }
    return c;
  }

  /// A u32 word as a float in [0, 1).
  Val uniform(const Val &word) const {
    Val i = cast(word, DType::I32);
    Val negative = bin(ast::BinaryOp::Lt, i, constant(DType::I32, 0));
    Val flipped = s.unaryOp(ast::UnaryOp::BitNot, i, loc); // -i - 1 for a negative i
    Val folded = s.emitValue(OpKind::Select, loc, {ir(negative), ir(flipped), ir(i)}, i.type);
    return bin(ast::BinaryOp::Mul, cast(folded, DType::F32), floatConstant(kUniformScale));
  }

  /// The first of the Box-Muller pair of two uniform floats: a standard normal float.
  Val normal(const Val &u1, const Val &u2) const {
    using ast::BinaryOp;
    Val floor = s.broadcastTo(floatConstant(1.0e-7), u1.type.shape, loc);
    Val safe = s.emitValue(OpKind::Maximum, loc, {ir(u1), ir(floor)}, u1.type);
    Val theta = bin(BinaryOp::Mul, floatConstant(6.283185307179586), u2);
    Val logged = s.emitValue(OpKind::Log, loc, {ir(safe)}, safe.type);
    Val radius = s.emitValue(OpKind::Sqrt, loc, {ir(bin(BinaryOp::Mul, floatConstant(-2.0), logged))}, safe.type);
    return bin(BinaryOp::Mul, radius, s.emitValue(OpKind::Cos, loc, {ir(theta)}, theta.type));
  }
};

/// The key of a seed argument: its low and high 32 bits, as IR values. E0300 unless
/// the seed is an integer scalar.
std::optional<std::pair<Val, Val>> seedKey(Sema &s, CallArgs &a, const RandomEmitter &e) {
  Val seed = s.argValue(a, 0);
  if (!seed.isValue())
    return std::nullopt;
  if (seed.type.pointer || !seed.type.isScalar() || !isInteger(seed.type.dtype)) {
    s.error(a.locs[0], DiagCode::TypeMismatch, a.callee + " needs an integer scalar seed, got " + s.describe(seed),
            "pass the seed as a kernel parameter, e.g. seed: i64");
    return std::nullopt;
  }
  Val wide = e.value(e.cast(seed, DType::U64));
  Val lo = e.cast(wide, DType::U32);
  Val hi = e.cast(e.bin(ast::BinaryOp::Shr, wide, e.constant(DType::U64, 32)), DType::U32);
  return std::pair{lo, hi};
}

/// A counter argument: a 32-bit integer tile or scalar, as u32 IR values. E0300
/// otherwise (64-bit counters would need Philox 4x64, which Kiln does not offer).
std::optional<Val> counterArg(Sema &s, CallArgs &a, size_t i, const RandomEmitter &e) {
  Val c = s.argValue(a, i);
  if (!c.isValue())
    return std::nullopt;
  if (c.weak)
    c = s.adopt(c, DType::I32);
  if (c.type.pointer || !isInteger(c.type.dtype) || dtypeBits(c.type.dtype) != 32) {
    s.error(a.locs[i], DiagCode::TypeMismatch,
            a.callee + " needs 32-bit integer counters (i32 or u32), got " + s.describe(c),
            dtypeBits(c.type.dtype) == 64 ? "convert them with .to(i32); Kiln's Philox counter words are 32 bits"
                                          : "");
    return std::nullopt;
  }
  return e.value(e.cast(c, DType::U32));
}

/// n_rounds: a constant from 1 to 64 (10 when absent, the standard Philox 4x32-10).
std::optional<int64_t> roundsArg(Sema &s, CallArgs &a, size_t i) {
  if (!a.has(i))
    return kDefaultRounds;
  std::optional<int64_t> n = s.argConstInt(a, i, "n_rounds");
  if (!n)
    return std::nullopt;
  if (*n < 1 || *n > 64) {
    s.error(a.locs[i], DiagCode::InvalidArgument, "n_rounds must be from 1 to 64, got " + std::to_string(*n),
            "the standard count is 10 (Philox 4x32-10); with fewer than 7 the numbers fail statistical tests");
    return std::nullopt;
  }
  return n;
}

Val tupleOf(std::array<Val, 4> words, Location loc) {
  Val t;
  t.kind = Val::Kind::Tuple;
  t.loc = loc;
  t.elems.assign(words.begin(), words.end());
  return t;
}

/// The four Philox words of (offset, 0, 0, 0) under the seed's key, or nullopt after
/// an error. Parameters: seed, offset, n_rounds.
std::optional<std::array<Val, 4>> drawWords(Sema &s, CallArgs &a, const RandomEmitter &e) {
  auto key = seedKey(s, a, e);
  auto offset = counterArg(s, a, 1, e);
  auto rounds = roundsArg(s, a, 2);
  if (!key || !offset || !rounds)
    return std::nullopt;
  Val zero = s.broadcastTo(e.constant(DType::U32, 0), offset->type.shape, a.loc);
  return e.philox({*offset, zero, zero, zero}, key->first, key->second, *rounds);
}

Val randint4x(Sema &s, CallArgs &a) {
  RandomEmitter e{s, a.loc};
  auto words = drawWords(s, a, e);
  return words ? tupleOf(*words, a.loc) : Val::poison();
}

Val randint(Sema &s, CallArgs &a) {
  RandomEmitter e{s, a.loc};
  auto words = drawWords(s, a, e);
  return words ? (*words)[0] : Val::poison();
}

Val rand(Sema &s, CallArgs &a) {
  RandomEmitter e{s, a.loc};
  auto words = drawWords(s, a, e);
  return words ? e.uniform((*words)[0]) : Val::poison();
}

Val randn(Sema &s, CallArgs &a) {
  RandomEmitter e{s, a.loc};
  auto words = drawWords(s, a, e);
  return words ? e.normal(e.uniform((*words)[0]), e.uniform((*words)[1])) : Val::poison();
}

/// philox(seed, c0, c1, c2, c3, n_rounds): the generator itself, on a whole counter.
Val philox(Sema &s, CallArgs &a) {
  RandomEmitter e{s, a.loc};
  auto key = seedKey(s, a, e);
  std::array<std::optional<Val>, 4> c;
  for (size_t i = 0; i < 4; ++i)
    c[i] = counterArg(s, a, i + 1, e);
  auto rounds = roundsArg(s, a, 5);
  if (!key || !c[0] || !c[1] || !c[2] || !c[3] || !rounds)
    return Val::poison();
  Shape shape;
  for (const auto &w : c) {
    auto sh = s.commonShape(shape, w->type.shape, a.loc, "(counter words of philox)");
    if (!sh)
      return Val::poison();
    shape = *sh;
  }
  std::array<Val, 4> words;
  for (size_t i = 0; i < 4; ++i)
    words[i] = e.value(s.broadcastTo(*c[i], shape, a.loc));
  return tupleOf(e.philox(words, key->first, key->second, *rounds), a.loc);
}

} // namespace

void addRandomBuiltins(std::vector<BuiltinInfo> &t) {
  t.push_back({"randint4x", {"seed", "offset", "n_rounds"}, 2, randint4x});
  t.push_back({"randint", {"seed", "offset", "n_rounds"}, 2, randint});
  t.push_back({"rand", {"seed", "offset", "n_rounds"}, 2, rand});
  t.push_back({"randn", {"seed", "offset", "n_rounds"}, 2, randn});
  t.push_back({"philox", {"seed", "c0", "c1", "c2", "c3", "n_rounds"}, 5, philox});
}

} // namespace kiln::sema
