//===- InterpTestUtil.h - Building and running kernels in interpreter tests -*- C++ -*-===//
//
// KernelBuilder wraps ir::Builder with shorthands for the ops the tests use most;
// every op it makes gets its own source line so a test can check where an error was
// reported. runKernelChecked verifies the module first (a test must never feed the
// interpreter invalid IR by accident) and collects diagnostics and printed output.
// Buffer helpers encode and decode element bytes independently of the interpreter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "ir/Verifier.h"
#include "ir/interp/Interpreter.h"
#include "support/Diagnostics.h"
#include "support/FloatFormats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::interp::test {

using ir::OpKind;
using ir::Value;

//===--------------------------------------------------------------------===//
// Buffers
//===--------------------------------------------------------------------===//

/// A buffer of integer dtype `t` holding `values` (truncated to the element width).
inline Buffer intBuffer(std::string name, DType t, const std::vector<int64_t> &values) {
  Buffer b;
  b.name = std::move(name);
  b.dtype = t;
  unsigned bytes = dtypeBytes(t);
  b.data.resize(values.size() * bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = t == DType::Bool ? (values[i] != 0) : values[i];
    std::memcpy(b.data.data() + i * bytes, &v, bytes); // little-endian: low bytes first
  }
  return b;
}

/// The raw storage bits of one float value of dtype `t`.
inline uint64_t floatBits(DType t, double v) {
  if (t == DType::F16)
    return doubleToF16Bits(v);
  if (t == DType::BF16)
    return doubleToBF16Bits(v);
  if (t == DType::F8E4M3)
    return doubleToF8E4M3Bits(v);
  if (t == DType::F8E5M2)
    return doubleToF8E5M2Bits(v);
  uint64_t u = 0;
  if (t == DType::F32) {
    float f = static_cast<float>(v);
    std::memcpy(&u, &f, 4);
  } else {
    std::memcpy(&u, &v, 8);
  }
  return u;
}

/// The value of float dtype `t` with storage bits `u`.
inline double floatFromBits(DType t, uint64_t u) {
  if (t == DType::F16)
    return f16BitsToDouble(uint16_t(u));
  if (t == DType::BF16)
    return bf16BitsToDouble(uint16_t(u));
  if (t == DType::F8E4M3)
    return f8E4M3BitsToDouble(uint8_t(u));
  if (t == DType::F8E5M2)
    return f8E5M2BitsToDouble(uint8_t(u));
  if (t == DType::F32) {
    uint32_t w = uint32_t(u);
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

/// A buffer of float dtype `t` holding `values` rounded to `t`.
inline Buffer floatBuffer(std::string name, DType t, const std::vector<double> &values) {
  Buffer b;
  b.name = std::move(name);
  b.dtype = t;
  unsigned bytes = dtypeBytes(t);
  b.data.resize(values.size() * bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t u = floatBits(t, values[i]);
    std::memcpy(b.data.data() + i * bytes, &u, bytes);
  }
  return b;
}

/// A zero-filled buffer of `n` elements.
inline Buffer zeroBuffer(std::string name, DType t, size_t n) {
  Buffer b;
  b.name = std::move(name);
  b.dtype = t;
  b.data.assign(n * dtypeBytes(t), std::byte{0});
  return b;
}

/// Element bits of a buffer, zero-extended.
inline std::vector<uint64_t> bitsOf(const Buffer &b) {
  unsigned bytes = dtypeBytes(b.dtype);
  std::vector<uint64_t> out(b.data.size() / bytes);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t u = 0;
    std::memcpy(&u, b.data.data() + i * bytes, bytes);
    out[i] = u;
  }
  return out;
}

/// Integer elements, sign-extended for signed dtypes.
inline std::vector<int64_t> intsOf(const Buffer &b) {
  std::vector<int64_t> out;
  unsigned bits = 8 * dtypeBytes(b.dtype);
  for (uint64_t u : bitsOf(b)) {
    if (isSigned(b.dtype) && bits < 64 && (u >> (bits - 1)) & 1)
      u |= ~uint64_t(0) << bits;
    out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

/// Float elements as doubles.
inline std::vector<double> floatsOf(const Buffer &b) {
  std::vector<double> out;
  for (uint64_t u : bitsOf(b))
    out.push_back(floatFromBits(b.dtype, u));
  return out;
}

//===--------------------------------------------------------------------===//
// Kernels
//===--------------------------------------------------------------------===//

class KernelBuilder {
public:
  explicit KernelBuilder(std::string name = "k") {
    file_ = module_->sources->addName("test.kiln");
    auto k = std::make_unique<ir::Kernel>();
    k->name = std::move(name);
    k->loc = Location{file_, 1, 1};
    kernel_ = k.get();
    module_->kernels.push_back(std::move(k));
    b_.setInsertionPointToEnd(kernel_->body.get());
  }

  ir::Module &module() { return *module_; }
  ir::Kernel &kernel() { return *kernel_; }
  ir::Builder &builder() { return b_; }
  /// A fresh location (one line per op).
  Location loc() { return Location{file_, ++line_, 1}; }

  Value *param(Type t, std::string name) { return kernel_->body->addArgument(t, std::move(name)); }
  Value *ptrParam(DType t, std::string name) { return param(Type::ptr(t), std::move(name)); }

  Value *op(OpKind k, std::vector<Value *> operands, Type result, ir::AttrMap attrs = {}) {
    return b_.createValue(k, loc(), std::move(operands), std::move(result), std::move(attrs));
  }
  ir::Op *make(OpKind k, std::vector<Value *> operands, std::vector<Type> results,
               ir::AttrMap attrs = {}, unsigned regions = 0) {
    return b_.create(k, loc(), std::move(operands), std::move(results), std::move(attrs), regions);
  }
  void stmt(OpKind k, std::vector<Value *> operands, ir::AttrMap attrs = {}) {
    b_.create(k, loc(), std::move(operands), {}, std::move(attrs));
  }

  Value *ci(int64_t v, DType t = DType::I32, Shape s = {}) {
    return b_.intConstant(loc(), Type::tile(t, std::move(s)), v);
  }
  Value *cf(double v, DType t = DType::F32, Shape s = {}) {
    return b_.floatConstant(loc(), Type::tile(t, std::move(s)), v);
  }
  Value *cb(bool v, Shape s = {}) { return b_.boolConstant(loc(), Type::tile(DType::Bool, s), v); }
  Value *arange(int64_t start, int64_t end) {
    return op(OpKind::Arange, {}, Type::tile(DType::I32, {end - start}),
              {{"start", start}, {"end", end}});
  }
  Value *splat(Value *scalar, Shape s) {
    return op(OpKind::Splat, {scalar}, scalar->type.withShape(s));
  }
  /// base (a scalar pointer) + offs, elementwise.
  Value *ptrs(Value *base, Value *offs) {
    return op(OpKind::PtrAdd, {splat(base, offs->type.shape), offs},
              base->type.withShape(offs->type.shape));
  }
  /// Pointers base + 0 .. base + n-1.
  Value *ptrRange(Value *base, int64_t n) { return ptrs(base, arange(0, n)); }
  Value *load(Value *p, Value *mask = nullptr, Value *other = nullptr) {
    std::vector<Value *> ops = {p};
    if (mask)
      ops.push_back(mask);
    if (other)
      ops.push_back(other);
    return op(OpKind::Load, ops, p->type.withDType(p->type.dtype));
  }
  ir::Op *store(Value *p, Value *v, Value *mask = nullptr) {
    std::vector<Value *> ops = {p, v};
    if (mask)
      ops.push_back(mask);
    return b_.create(OpKind::Store, loc(), ops, {});
  }
  Value *cmp(const char *pred, Value *a, Value *b) {
    return op(OpKind::Cmp, {a, b}, a->type.withDType(DType::Bool), {{"pred", std::string(pred)}});
  }
  Value *bin(OpKind k, Value *a, Value *b) { return op(k, {a, b}, a->type); }
  Value *cast(Value *v, DType t) { return op(OpKind::Cast, {v}, v->type.withDType(t)); }
  Value *programId(int axis) {
    return op(OpKind::ProgramId, {}, Type::scalar(DType::I32), {{"axis", int64_t(axis)}});
  }

  /// Ends the kernel body with `return`.
  void finish() { b_.create(OpKind::Return, loc(), {}, {}); }

private:
  std::unique_ptr<ir::Module> module_ = std::make_unique<ir::Module>();
  ir::Kernel *kernel_ = nullptr;
  ir::Builder b_;
  uint32_t file_ = 0;
  uint32_t line_ = 1;
};

struct Outcome {
  bool ok = false;
  std::vector<Diagnostic> diags;
  std::string printed;

  /// The first diagnostic's message ("" when none).
  std::string message() const { return diags.empty() ? "" : diags.front().message; }
};

/// Verifies the module, then runs its kernel; the kernel must already be finished.
inline Outcome runKernelChecked(KernelBuilder &kb, const std::vector<KernelArg> &args,
                                std::vector<Buffer> &buffers, RunOptions options = {}) {
  Outcome out;
  std::ostringstream sink, printed;
  DiagnosticEngine diags(*kb.module().sources, sink);
  diags.setHandler([&](const Diagnostic &d) { out.diags.push_back(d); });
  EXPECT_TRUE(ir::verifyModule(kb.module(), diags))
      << "test kernel does not verify: " << (out.diags.empty() ? "" : out.diags[0].message);
  if (!out.diags.empty())
    return out;
  if (!options.printStream)
    options.printStream = &printed;
  out.ok = runKernel(kb.kernel(), args, buffers, options, diags);
  out.printed = printed.str();
  EXPECT_EQ(out.ok, out.diags.empty()) << "runKernel's result disagrees with its diagnostics";
  return out;
}

/// Loads every input buffer as one tile of its element count, computes `body` on those
/// tiles and stores the result into a fresh buffer of dtype `outT`, which it returns.
/// The run must succeed.
inline Buffer mapKernel(const std::vector<Buffer> &inputs, DType outT,
                        const std::function<Value *(KernelBuilder &, std::vector<Value *>)> &body) {
  KernelBuilder kb;
  const int64_t n = inputs.at(0).numElements();
  std::vector<Value *> tiles;
  std::vector<Buffer> buffers = inputs;
  std::vector<KernelArg> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value *p = kb.ptrParam(inputs[i].dtype, inputs[i].name);
    tiles.push_back(kb.load(kb.ptrRange(p, inputs[i].numElements())));
    args.push_back(KernelArg::ofBuffer(i));
  }
  Value *outP = kb.ptrParam(outT, "out");
  Value *result = body(kb, tiles);
  kb.store(kb.ptrRange(outP, n), result);
  kb.finish();
  buffers.push_back(zeroBuffer("out", outT, n));
  args.push_back(KernelArg::ofBuffer(inputs.size()));
  Outcome o = runKernelChecked(kb, args, buffers);
  EXPECT_TRUE(o.ok) << o.message();
  return buffers.back();
}

/// Like mapKernel, but each input is loaded as a tile of the given shape (row-major)
/// and the result, of any shape, is stored flattened.
inline Buffer mapShaped(const std::vector<std::pair<Buffer, Shape>> &inputs, DType outT,
                        const std::function<Value *(KernelBuilder &, std::vector<Value *>)> &body) {
  KernelBuilder kb;
  std::vector<Value *> tiles;
  std::vector<Buffer> buffers;
  std::vector<KernelArg> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &[buf, shape] = inputs[i];
    Value *p = kb.ptrParam(buf.dtype, buf.name);
    Value *flat = kb.load(kb.ptrRange(p, numElements(shape)));
    tiles.push_back(
        shape.size() == 1 ? flat : kb.op(OpKind::Reshape, {flat}, flat->type.withShape(shape)));
    buffers.push_back(buf);
    args.push_back(KernelArg::ofBuffer(i));
  }
  Value *outP = kb.ptrParam(outT, "out");
  Value *result = body(kb, tiles);
  const int64_t n = result->type.numElements();
  Value *flat = result->type.rank() == 1
                    ? result
                    : kb.op(OpKind::Reshape, {result}, result->type.withShape({n}));
  kb.store(kb.ptrRange(outP, n), flat);
  kb.finish();
  buffers.push_back(zeroBuffer("out", outT, n));
  args.push_back(KernelArg::ofBuffer(inputs.size()));
  Outcome o = runKernelChecked(kb, args, buffers);
  EXPECT_TRUE(o.ok) << o.message();
  return buffers.back();
}

} // namespace kiln::interp::test
