//===- LowerMemory.cpp - Pointers, loads, stores and memory ordering ------===//
//
// Loads and stores walk the registers of the pointer tile in chunks. Where the axis
// analysis proves a run of pointers contiguous and aligned, the run becomes one vector
// access of up to 16 bytes. A masked run uses one predicate when the mask is provably
// constant over it; otherwise it takes the vector path when every lane of it is on and
// falls back to per-element accesses when not, so a lane with a false mask is never
// touched (it yields `other`, or 0).
//
// A scalar load is done by every thread (they all need the value); a scalar store by
// thread 0 only, as the interpreter performs it once per program.
//
// Memory ordering: the interpreter runs a program's ops one after another, so an op
// sees everything earlier ops did. Threads of a GPU program do not run in lock step;
// when an access may touch memory another thread accessed earlier (MemoryAccess.h), a
// barrier separates them.
//
// Cache hints (a load's `cache_modifier`, a load's or store's `eviction_policy`) change
// no value. On NVPTX they become qualifiers of the PTX instruction: LLVM 22 has no way
// to put a cache operator or an eviction priority on an ordinary load or store (its
// NVPTX back end ignores !nontemporal, and has no intrinsic for them), so a hinted
// access is written as the instruction itself, in inline assembly, with the same width,
// alignment and guards as the access it replaces. Unhinted accesses, and every access
// on SPIR-V, are ordinary LLVM loads and stores.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "support/CheckRecord.h"

#include <llvm/IR/InlineAsm.h>

#include <limits>

namespace kiln::codegen::detail {

//===--------------------------------------------------------------------===//
// Memory ordering
//===--------------------------------------------------------------------===//

void Lowering::orderAccess(const ir::Op &op) {
  MemAccess a;
  if (!accessOf(op, prov, a))
    return;
  for (const MemAccess &o : outstanding)
    if (accessesConflict(o, a)) {
      barrier();
      break;
    }
  outstanding.push_back(a);
}

void Lowering::addOutstanding(const ir::Block &block) { collectAccesses(block, prov, outstanding); }

llvm::Value *Lowering::readElement(const Type &elem, llvm::Value *ptr, llvm::Value *cond,
                                   llvm::Value *other) {
  llvm::Type *mty = memType(elem);
  const llvm::Align align(dtypeBytes(elem.dtype));
  if (!cond)
    return fromMemory(b.CreateAlignedLoad(mty, ptr, align), elem);
  if (!nvptx || mty->getPrimitiveSizeInBits() != 32)
    return guarded(cond, [&]() -> Values { return {fromMemory(b.CreateAlignedLoad(mty, ptr, align), elem)}; },
                   {other})[0];
  // A predicated ld: no branch, so that the reads of a tile's registers, each under
  // its own guard, stay one straight run the scheduler can interleave. The memory is
  // read-only, so the asm has no side effects and identical reads may merge.
  llvm::Type *i32t = b.getInt32Ty();
  auto *fty = llvm::FunctionType::get(i32t, {b.getInt64Ty(), i32t, i32t}, false);
  auto *asmv = llvm::InlineAsm::get(
      fty, "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\nmov.b32 $0, $3;\n@p ld.global.b32 $0, [$1];\n}",
      "=r,l,r,r", /*hasSideEffects=*/false);
  llvm::Value *otherBits = b.CreateBitCast(toMemory(other, elem), i32t);
  llvm::Value *bits = b.CreateCall(fty, asmv, {b.CreatePtrToInt(ptr, b.getInt64Ty()),
                                               b.CreateZExt(cond, i32t), otherBits});
  return fromMemory(b.CreateBitCast(bits, mty), elem);
}

bool Lowering::readOnly(const ir::Op &load) const {
  // A load that must read memory afresh (.cv: another agent may write it) is not.
  if (ir::readsAfresh(load))
    return false;
  MemAccess a;
  return accessOf(load, prov, a) && !a.writes && a.bases != kAnyBase &&
         (a.bases & writtenBases) == 0;
}

//===--------------------------------------------------------------------===//
// Element forms
//===--------------------------------------------------------------------===//

llvm::Value *Lowering::fromMemory(llvm::Value *v, const Type &elem) {
  if (elem.pointer)
    return v;
  switch (elem.dtype) {
  case DType::Bool:
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
    return decodeNarrow(elem.dtype, v);
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::F32:
  case DType::F64:
    return v;
  }
  return v;
}

llvm::Value *Lowering::toMemory(llvm::Value *v, const Type &elem) {
  if (elem.pointer)
    return v;
  switch (elem.dtype) {
  case DType::Bool:
    return b.CreateZExt(v, b.getInt8Ty());
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
    // A value a cast has just rounded is stored as the bits it was rounded to.
    if (llvm::Value *bits = narrowBitsOf(elem.dtype, v))
      return bits;
    return encodeNarrow(elem.dtype, v, /*keepInf=*/true);
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::F32:
  case DType::F64:
    return v;
  }
  return v;
}

//===--------------------------------------------------------------------===//
// ptr_add
//===--------------------------------------------------------------------===//

void Lowering::lowerPtrAdd(const ir::Op &op) {
  const Type &pt = op.operand(0)->type;
  const DType offT = op.operand(1)->type.dtype;
  llvm::Type *elemTy = memType(Type::scalar(pt.dtype));
  const Regs &p = get(op.operand(0)), &d = get(op.operand(1));
  Regs out;
  for (size_t i = 0; i < p.v.size(); ++i) {
    llvm::Value *off = d.v[i];
    off = isSigned(offT) ? b.CreateSExtOrTrunc(off, b.getInt64Ty())
                         : b.CreateZExtOrTrunc(off, b.getInt64Ty());
    out.v.push_back(b.CreateGEP(elemTy, p.v[i], off));
  }
  set(op.result(), std::move(out));
}

//===--------------------------------------------------------------------===//
// Cache hints
//===--------------------------------------------------------------------===//

namespace {

/// The PTX form of one access's cache hints; empty where there are none to give.
struct CacheHints {
  std::string qualifiers;        ///< after `ld.global` / `st.global`: ".cg", ".L1::evict_last...", ...
  llvm::Value *policy = nullptr; ///< with .L2::cache_hint: the 64-bit L2 cache policy
  bool refetch = false;          ///< .cv: every execution reads memory afresh

  bool any() const { return !qualifiers.empty(); }
};

} // namespace

/// A 64-bit L2 cache policy giving every line an access touches `priority`. It reads
/// nothing, so LLVM shares one among the ops that make the same.
static llvm::Value *l2Policy(Lowering &L, const std::string &priority) {
  auto *fty = llvm::FunctionType::get(L.b.getInt64Ty(), false);
  auto *asmv = llvm::InlineAsm::get(
      fty, "createpolicy.fractional.L2::" + priority + ".b64 $0, 1.0;", "=l", /*hasSideEffects=*/false);
  llvm::CallInst *c = L.b.CreateCall(fty, asmv);
  c->setDoesNotAccessMemory();
  return c;
}

/// The hints of a load or store as PTX qualifiers. `.ca` and `evict_normal` are what an
/// ordinary access does already. An eviction priority applies to L2 through a cache
/// policy operand, and to L1 as the access's own priority unless a cache operator says
/// how L1 is used (PTX takes one or the other there). The policy is made here, where the
/// op begins, so that it dominates every guarded access of the op.
static CacheHints cacheHintsOf(Lowering &L, const ir::Op &op) {
  CacheHints h;
  if (!L.nvptx)
    return h; // SPIR-V: hints only, with nothing in OpenCL to carry them
  // Cache operators are a load's (a store's differ, and Kiln offers none).
  const bool load = op.kind() == OpKind::Load;
  std::string cop = load && op.hasAttr("cache_modifier") ? op.stringAttr("cache_modifier") : "";
  std::string evict = op.hasAttr("eviction_policy") ? op.stringAttr("eviction_policy") : "";
  if (cop == "ca")
    cop.clear();
  if (evict == "evict_normal")
    evict.clear();
  if (!cop.empty())
    h.qualifiers += "." + cop;
  if (!evict.empty()) {
    if (cop.empty())
      h.qualifiers += ".L1::" + evict;
    h.qualifiers += ".L2::cache_hint";
    h.policy = l2Policy(L, evict);
  }
  h.refetch = cop == "cv";
  return h;
}

namespace {

/// How a hinted access moves its bits: as one 8- or 16-bit value, or as one, two or four
/// 32-bit words (an access is aligned to its size, as every vector access of a run is).
struct AsmAccess {
  unsigned words = 1;
  llvm::Type *word = nullptr;
  const char *type = "";       ///< PTX type suffix
  const char *constraint = ""; ///< register class of a word

  static std::optional<AsmAccess> of(Lowering &L, llvm::Type *ty) {
    const uint64_t bits = ty->getPrimitiveSizeInBits().getFixedValue();
    AsmAccess a;
    switch (bits) {
    case 8: // PTX has no 8-bit registers: a byte moves in a 16-bit one
      a.word = L.b.getInt16Ty(), a.type = ".u8", a.constraint = "h";
      return a;
    case 16:
      a.word = L.b.getInt16Ty(), a.type = ".b16", a.constraint = "h";
      return a;
    case 32:
    case 64:
    case 128:
      a.words = static_cast<unsigned>(bits / 32);
      a.word = L.b.getInt32Ty(), a.type = ".b32", a.constraint = "r";
      return a;
    default:
      return std::nullopt;
    }
  }

  std::string vec() const { return words == 4 ? ".v4" : words == 2 ? ".v2" : ""; }

  /// `{$first, ...}` (or `$first` for one word).
  std::string registers(unsigned first) const {
    std::string r = words > 1 ? "{" : "";
    for (unsigned i = 0; i < words; ++i)
      r += (i ? ", $" : "$") + std::to_string(first + i);
    return r + (words > 1 ? "}" : "");
  }
};

} // namespace

/// Loads a `ty` from global memory at `ptr` (aligned to `align`), with `h`'s hints.
static llvm::Value *globalLoad(Lowering &L, llvm::Type *ty, llvm::Value *ptr, llvm::Align align,
                               const CacheHints &h) {
  auto &b = L.b;
  const std::optional<AsmAccess> a = h.any() ? AsmAccess::of(L, ty) : std::nullopt;
  if (!a)
    return b.CreateAlignedLoad(ty, ptr, align);
  std::string text = "ld.global" + h.qualifiers + a->vec() + a->type + " " + a->registers(0) +
                     ", [$" + std::to_string(a->words) + "]";
  std::string cons;
  for (unsigned i = 0; i < a->words; ++i)
    cons += std::string("=") + a->constraint + ",";
  cons += "l";
  std::vector<llvm::Value *> args = {b.CreatePtrToInt(ptr, b.getInt64Ty())};
  if (h.policy) {
    text += ", $" + std::to_string(a->words + 1);
    cons += ",l";
    args.push_back(h.policy);
  }
  text += ";";
  llvm::Type *ret = a->words == 1
                        ? a->word
                        : llvm::StructType::get(L.ctx, std::vector<llvm::Type *>(a->words, a->word));
  std::vector<llvm::Type *> argTypes;
  for (llvm::Value *v : args)
    argTypes.push_back(v->getType());
  auto *fty = llvm::FunctionType::get(ret, argTypes, false);
  // A .cv load must happen every time it is reached; any other hinted load only reads
  // memory, so LLVM may drop it when unused, or share it as it would a plain load.
  llvm::CallInst *call =
      b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/h.refetch), args);
  if (!h.refetch)
    call->setOnlyReadsMemory();
  llvm::Value *bits = call;
  if (a->words > 1) {
    llvm::Value *vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(a->word, a->words));
    for (unsigned i = 0; i < a->words; ++i)
      vec = b.CreateInsertElement(vec, b.CreateExtractValue(call, i), uint64_t{i});
    bits = vec;
  } else if (ty->getPrimitiveSizeInBits().getFixedValue() == 8) {
    bits = b.CreateTrunc(call, b.getInt8Ty());
  }
  return b.CreateBitCast(bits, ty);
}

/// Stores `v` to global memory at `ptr` (aligned to `align`), with `h`'s hints.
static void globalStore(Lowering &L, llvm::Value *v, llvm::Value *ptr, llvm::Align align,
                        const CacheHints &h) {
  auto &b = L.b;
  const std::optional<AsmAccess> a = h.any() ? AsmAccess::of(L, v->getType()) : std::nullopt;
  if (!a) {
    b.CreateAlignedStore(v, ptr, align);
    return;
  }
  // A byte is stored from the low half of a 16-bit register.
  const char *type = a->type == std::string(".u8") ? ".b8" : a->type;
  std::string text = "st.global" + h.qualifiers + a->vec() + type + " [$0], " + a->registers(1);
  std::string cons = "l";
  std::vector<llvm::Value *> args = {b.CreatePtrToInt(ptr, b.getInt64Ty())};
  llvm::Value *bits = v;
  if (v->getType()->getPrimitiveSizeInBits().getFixedValue() == 8)
    bits = b.CreateZExt(b.CreateBitCast(v, b.getInt8Ty()), a->word);
  else
    bits = b.CreateBitCast(v, a->words > 1 ? llvm::FixedVectorType::get(a->word, a->words) : a->word);
  for (unsigned i = 0; i < a->words; ++i) {
    args.push_back(a->words > 1 ? b.CreateExtractElement(bits, uint64_t{i}) : bits);
    cons += std::string(",") + a->constraint;
  }
  if (h.policy) {
    text += ", $" + std::to_string(a->words + 1);
    cons += ",l";
    args.push_back(h.policy);
  }
  text += ";";
  std::vector<llvm::Type *> argTypes;
  for (llvm::Value *x : args)
    argTypes.push_back(x->getType());
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), argTypes, false);
  b.CreateCall(fty, llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true), args);
}

//===--------------------------------------------------------------------===//
// load / store
//===--------------------------------------------------------------------===//

/// How the lanes of one memory op are grouped.
struct AccessShape {
  int64_t width = 1;         ///< lanes per vector access
  bool maskPerVector = true; ///< the mask is constant over each vector
};

/// `chunk`: the consecutive elements of the last axis each thread holds per round (the
/// pointer tile's own layout's, unless the registers are another tile's: a broadcast
/// that reads its source where it is needed).
static AccessShape accessShape(Lowering &L, const ir::Op &op, int64_t maskOperand, int64_t chunk) {
  const Type &pt = op.operand(0)->type;
  AccessShape s;
  if (pt.isScalar())
    return s;
  const int64_t eb = dtypeBytes(pt.dtype);
  s.width = accessVectorWidth(L.axis.info(op.operand(0)), pt.shape, chunk, eb);
  if (maskOperand >= 0 && static_cast<int64_t>(op.numOperands()) > maskOperand) {
    const AxisInfo &m = L.axis.info(op.operand(static_cast<unsigned>(maskOperand)));
    s.maskPerVector = m.constancy.back() % s.width == 0;
  }
  return s;
}

/// Pairs of bf16 travel as 32-bit words: each value is the top half of an f32, so the
/// low one is the word shifted up and the high one the word with its low half cleared
/// (one instruction each, where widening each 16-bit value takes two).
static bool loadsAsWords(const Type &elem, int64_t w) {
  return elem.dtype == DType::BF16 && !elem.pointer && w >= 2;
}

/// The w / 2 words of lanes [base, base + w). One word is loaded as a scalar: SPIR-V
/// has no one-element vectors.
static Values loadWords(Lowering &L, const Regs &ptrs, int64_t base, int64_t w,
                        const CacheHints &h) {
  auto &b = L.b;
  llvm::Type *wty = w == 2 ? static_cast<llvm::Type *>(b.getInt32Ty())
                           : llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(w / 2));
  llvm::Value *v = globalLoad(L, wty, ptrs.v[base], llvm::Align(w * 2), h);
  Values words;
  for (int64_t j = 0; j < w / 2; ++j)
    words.push_back(w == 2 ? v : b.CreateExtractElement(v, j));
  return words;
}

static Values unpackWords(Lowering &L, const Values &words) {
  auto &b = L.b;
  Values out;
  for (llvm::Value *word : words) {
    out.push_back(b.CreateBitCast(b.CreateShl(word, L.i32(16)), b.getFloatTy()));
    out.push_back(b.CreateBitCast(b.CreateAnd(word, L.i32(0xFFFF0000)), b.getFloatTy()));
  }
  return out;
}

/// Two bf16 register values (f32 with a zero low half) as the word memory holds them.
static llvm::Value *packWord(Lowering &L, llvm::Value *lo, llvm::Value *hi) {
  auto &b = L.b;
  llvm::Value *l = b.CreateLShr(b.CreateBitCast(lo, b.getInt32Ty()), L.i32(16));
  return b.CreateOr(l, b.CreateBitCast(hi, b.getInt32Ty()));
}

/// Loads lanes [base, base + w) with one vector access; returns register values.
static Values vectorLoad(Lowering &L, const Regs &ptrs, int64_t base, int64_t w,
                         const Type &elem, const CacheHints &h) {
  auto &b = L.b;
  llvm::Type *mty = L.memType(elem);
  const unsigned eb = dtypeBytes(elem.dtype);
  Values out;
  if (w == 1) {
    out.push_back(L.fromMemory(globalLoad(L, mty, ptrs.v[base], llvm::Align(eb), h), elem));
    return out;
  }
  if (loadsAsWords(elem, w))
    return unpackWords(L, loadWords(L, ptrs, base, w, h));
  auto *vty = llvm::FixedVectorType::get(mty, static_cast<unsigned>(w));
  llvm::Value *v = globalLoad(L, vty, ptrs.v[base], llvm::Align(w * eb), h);
  for (int64_t j = 0; j < w; ++j)
    out.push_back(L.fromMemory(b.CreateExtractElement(v, j), elem));
  return out;
}

static void vectorStore(Lowering &L, const Regs &ptrs, const Regs &vals, int64_t base, int64_t w,
                        const Type &elem, const CacheHints &h) {
  auto &b = L.b;
  llvm::Type *mty = L.memType(elem);
  const unsigned eb = dtypeBytes(elem.dtype);
  if (w == 1) {
    globalStore(L, L.toMemory(vals.v[base], elem), ptrs.v[base], llvm::Align(eb), h);
    return;
  }
  auto *vty = llvm::FixedVectorType::get(mty, static_cast<unsigned>(w));
  llvm::Value *v = llvm::PoisonValue::get(vty);
  if (L.nvptx && elem.dtype == DType::BF16 && !elem.pointer) {
    // Rounded in pairs: a two-lane truncation is one cvt.rn.bf16x2.f32 that yields the
    // packed word, where lane-by-lane truncation is left to instruction selection,
    // which packs some vectors and rounds others one value at a time.
    auto *pair = llvm::FixedVectorType::get(b.getFloatTy(), 2);
    auto *words = llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(w / 2));
    llvm::Value *packed = llvm::PoisonValue::get(words);
    // A value already rounded to bf16 (widened from a truncation) rounds to the same bits
    // from the f32 it was rounded from, so the pair starts there.
    auto unrounded = [](llvm::Value *v) {
      if (auto *ext = llvm::dyn_cast<llvm::FPExtInst>(v))
        if (auto *trunc = llvm::dyn_cast<llvm::FPTruncInst>(ext->getOperand(0)))
          if (trunc->getDestTy()->isBFloatTy() && trunc->getSrcTy()->isFloatTy())
            return trunc->getOperand(0);
      return v;
    };
    for (int64_t j = 0; j < w; j += 2) {
      llvm::Value *two =
          b.CreateInsertElement(llvm::PoisonValue::get(pair), unrounded(vals.v[base + j]), uint64_t{0});
      two = b.CreateInsertElement(two, unrounded(vals.v[base + j + 1]), uint64_t{1});
      llvm::Value *word = b.CreateBitCast(
          b.CreateFPTrunc(two, llvm::FixedVectorType::get(b.getBFloatTy(), 2)), b.getInt32Ty());
      packed = b.CreateInsertElement(packed, word, j / 2);
    }
    globalStore(L, b.CreateBitCast(packed, vty), ptrs.v[base], llvm::Align(w * eb), h);
    return;
  }
  for (int64_t j = 0; j < w; ++j)
    v = b.CreateInsertElement(v, L.toMemory(vals.v[base + j], elem), j);
  globalStore(L, v, ptrs.v[base], llvm::Align(w * eb), h);
}

static llvm::Value *andAll(Lowering &L, const Regs &mask, int64_t base, int64_t w) {
  llvm::Value *all = mask.v[base];
  for (int64_t j = 1; j < w; ++j)
    all = L.b.CreateAnd(all, mask.v[base + j]);
  return all;
}

static llvm::Value *andMaybe(Lowering &L, llvm::Value *a, llvm::Value *c) {
  if (!a)
    return c;
  if (!c)
    return a;
  return L.b.CreateAnd(a, c);
}

void Lowering::lowerLoad(const ir::Op &op) {
  orderAccess(op);
  const Regs *mask = op.numOperands() > 1 ? &get(op.operand(1)) : nullptr;
  const Regs *other = op.numOperands() > 2 ? &get(op.operand(2)) : nullptr;
  const int64_t chunk = op.operand(0)->type.isScalar() ? 1 : layoutOf(op.operand(0)->type).vec;
  set(op.result(), readTile(op, get(op.operand(0)), mask, other, chunk));
}

Regs Lowering::readTile(const ir::Op &op, const Regs &ptrs, const Regs *mask, const Regs *other, int64_t chunk) {
  const Type &pt = op.operand(0)->type;
  const Type elem = Type::scalar(pt.dtype);
  llvm::Value *zero = llvm::Constant::getNullValue(regType(elem));
  auto otherAt = [&](int64_t i) { return other ? other->v[i] : zero; };
  const CacheHints hints = cacheHintsOf(*this, op);
  const AccessShape s = accessShape(*this, op, 1, chunk);
  // Checked mode (LowerChecks.cpp): lanes out of bounds are masked off. A vector tested
  // whole is loaded under its test as unchecked code loads it under its mask, so a
  // correct run keeps the unchecked kernel's shape and registers; one that reaches
  // outside its buffer reads 0 (or `other`) in all of its lanes. (Loading the lanes
  // inside one by one put a second path beside every vector whose values met the first
  // at a join, and ptxas gave a layernorm half again as many registers for it.)
  CheckedLanes checked;
  Regs vectorTests;
  bool maskPerVector = s.maskPerVector;
  if (opts.checked) {
    checked = boundsCheck(op, ptrs, mask, [](int64_t) -> llvm::Value * { return nullptr; }, dtypeBytes(pt.dtype),
                          check::CheckKind::Load, s.width, s.maskPerVector);
    if (!checked.wholeChunk.empty()) {
      for (size_t i = 0; i < ptrs.v.size(); ++i)
        vectorTests.v.push_back(checked.wholeChunk[i / s.width]);
      mask = &vectorTests;
      maskPerVector = true;
    } else {
      mask = &checked.ok;
      maskPerVector = false;
    }
  }
  const int64_t n = static_cast<int64_t>(ptrs.v.size());
  // Registers of an invalid round are loaded like the element they copy (in bounds
  // whenever the program's own accesses are), so loads need no validity guard.
  Regs out;
  out.v.resize(n);
  for (int64_t base = 0; base < n; base += s.width) {
    const int64_t w = s.width;
    auto whole = [&] { return vectorLoad(*this, ptrs, base, w, elem, hints); };
    Values got;
    if (!mask) {
      got = whole();
    } else {
      Values others;
      for (int64_t j = 0; j < w; ++j)
        others.push_back(otherAt(base + j));
      auto lanesOneByOne = [&] {
        Values lanes;
        for (int64_t j = 0; j < w; ++j)
          lanes.push_back(guarded(
              checked.laneMask(base + j, *mask), [&] { return vectorLoad(*this, ptrs, base + j, 1, elem, hints); },
              {others[j]})[0]);
        return lanes;
      };
      if (loadsAsWords(elem, w) && maskPerVector) {
        // The words are merged with `other` before they are widened: half the values
        // cross the join, and they stay packed until used.
        Values otherWords;
        for (int64_t j = 0; j < w; j += 2)
          otherWords.push_back(packWord(*this, others[j], others[j + 1]));
        got = unpackWords(
            *this, guarded(mask->v[base], [&] { return loadWords(*this, ptrs, base, w, hints); }, otherWords));
      } else if (w == 1 || maskPerVector) {
        got = guarded(mask->v[base], whole, others);
      } else {
        got = ifElse(andAll(*this, *mask, base, w), whole, lanesOneByOne);
      }
    }
    for (int64_t j = 0; j < w; ++j)
      out.v[base + j] = got[j];
  }
  return out;
}

void Lowering::lowerStore(const ir::Op &op) {
  orderAccess(op);
  const Type &pt = op.operand(0)->type;
  const Type elem = Type::scalar(pt.dtype);
  const Regs &ptrs = get(op.operand(0));
  const Regs &vals = get(op.operand(1));
  const Regs *mask = op.numOperands() > 2 ? &get(op.operand(2)) : nullptr;
  const CacheHints hints = cacheHintsOf(*this, op);
  const std::optional<Layout> tile = pt.isScalar() ? std::nullopt : std::optional(layoutOf(pt));
  const AccessShape s = tile ? accessShape(*this, op, 2, tile->vec) : AccessShape{};
  // The lanes stored under `m`, constant over each vector where `perVector`; `checked`:
  // the lanes' bounds tests, a vector stored whole where its test passed.
  auto writeLanes = [&](const Regs *m, bool perVector, const CheckedLanes *checked) {
    if (pt.isScalar()) {
      llvm::Value *cond = andMaybe(*this, isThread0(), m ? m->v[0] : nullptr);
      guardedVoid(cond, [&] { vectorStore(*this, ptrs, vals, 0, 1, elem, hints); });
      return;
    }
    const Layout l = *tile;
    const int64_t n = static_cast<int64_t>(ptrs.v.size());
    for (int64_t base = 0; base < n; base += s.width) {
      const int64_t w = s.width;
      llvm::Value *valid = roundValid(l, base / l.vec);
      auto whole = [&] { vectorStore(*this, ptrs, vals, base, w, elem, hints); };
      if (!m) {
        guardedVoid(valid, whole);
        continue;
      }
      if (w == 1 || perVector) {
        guardedVoid(andMaybe(*this, valid, m->v[base]), whole);
        continue;
      }
      const bool byChunk = checked && !checked->wholeChunk.empty();
      llvm::Value *all =
          andMaybe(*this, valid, byChunk ? checked->wholeChunk[base / w] : andAll(*this, *m, base, w));
      auto oneByOne = [&] {
        for (int64_t j = 0; j < w; ++j) {
          llvm::Value *on = checked ? checked->laneMask(base + j, *m) : m->v[base + j];
          guardedVoid(andMaybe(*this, valid, on), [&] { vectorStore(*this, ptrs, vals, base + j, 1, elem, hints); });
        }
      };
      // A checked vector that failed its test: one lane per iteration of a loop kept
      // rolled, its value picked by index from the vector's, so the path holds little
      // beyond what the vector already holds.
      auto inLoop = [&] {
        const unsigned bytes = dtypeBytes(pt.dtype);
        loop(
            i32(0), i32(w), 1, {},
            [&](llvm::Value *j, const Values &) {
              llvm::Value *j64 = b.CreateZExt(j, b.getInt64Ty());
              Regs lane, value;
              lane.v = {b.CreateGEP(b.getInt8Ty(), ptrs.v[base], b.CreateMul(j64, i64(bytes)))};
              value.v = {vals.v[base]};
              for (int64_t k = 1; k < w; ++k)
                value.v[0] = b.CreateSelect(b.CreateICmpEQ(j, i32(k)), vals.v[base + k], value.v[0]);
              guardedVoid(andMaybe(*this, valid, checked->laneOkAt(base, j64)),
                          [&] { vectorStore(*this, lane, value, 0, 1, elem, hints); });
              return Values{};
            },
            /*keepRolled=*/true);
      };
      ifElse(
          all, [&] { whole(); return Values{}; },
          [&] {
            if (byChunk && checked->laneOkAt)
              inLoop();
            else
              oneByOne();
            return Values{};
          });
    }
  };
  if (!opts.checked) {
    writeLanes(mask, s.maskPerVector, nullptr);
    return;
  }
  // Checked mode (LowerChecks.cpp): where no active lane is out of bounds -- every
  // correct run -- the store is made as unchecked code makes it, after one test and one
  // branch; otherwise the first bad lane is recorded and the lanes inside are stored, a
  // vector that passed its test whole. A vector lies in one round of its thread's
  // registers (its width divides the layout's vec), so one validity test holds for all of
  // its lanes. (Stores carry no values out of the branch, so the second path costs no
  // registers at the join, as it would for a load.)
  CheckedLanes checked = boundsCheck(
      op, ptrs, mask, [&](int64_t i) { return tile ? roundValid(*tile, i / tile->vec) : isThread0(); },
      dtypeBytes(pt.dtype), check::CheckKind::Store, s.width, s.maskPerVector, /*deferRecord=*/true);
  ifElse(
      checked.clear,
      [&] {
        writeLanes(mask, s.maskPerVector, nullptr);
        return Values{};
      },
      [&] {
        checked.record();
        writeLanes(&checked.ok, false, &checked);
        return Values{};
      });
}

} // namespace kiln::codegen::detail
