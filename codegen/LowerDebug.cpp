//===- LowerDebug.cpp - Device-side assert and print ----------------------===//
//
// assert: every thread checks the elements it owns (a scalar is checked by thread 0);
// on NVPTX a failure calls the CUDA device runtime's __assertfail with the message,
// file and line, which prints and stops the kernel. OpenCL cannot stop a kernel, so on
// SPIR-V the failure prints the message and the program goes on.
//
// print: scalars are printed by thread 0 as one line, `[pid (x, y, z)] label: a, b`,
// the interpreter's format; each element of a tile operand is printed by the thread
// that owns it on its own line, `[pid (x, y, z)] label[i, j]: v` (lines of different
// threads and programs interleave in no fixed order).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

namespace kiln::codegen::detail {

static std::string escapePercent(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%%";
    else if (c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F))
      out += c;
    else
      out += ' ';
  }
  return out;
}

void Lowering::lowerAssert(const ir::Op &op) {
  const Type &t = op.operand(0)->type;
  const Regs &c = get(op.operand(0));
  const std::string message = op.stringAttr("message");
  llvm::Value *failed = nullptr;
  if (t.isScalar()) {
    failed = b.CreateAnd(isThread0(), b.CreateNot(c.v[0]));
  } else {
    const Layout l = layoutOf(t);
    for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
      llvm::Value *bad = b.CreateNot(c.v[reg]);
      if (llvm::Value *valid = roundValid(l, reg / l.vec))
        bad = b.CreateAnd(bad, valid);
      failed = failed ? b.CreateOr(failed, bad) : bad;
    }
  }
  guardedVoid(failed, [&] { emitAssertFail("device assert failed: " + message, op.loc()); });
}

/// printf conversion for one element of `t` and the argument it needs.
static std::string formatOf(Lowering &L, const Type &t, llvm::Value *&v) {
  auto &b = L.b;
  if (t.pointer)
    return "%p";
  if (isFloat(t.dtype)) {
    if (t.dtype != DType::F64) {
      v = b.CreateFPExt(v, b.getDoubleTy());
      return "%.9g";
    }
    return "%.17g";
  }
  if (t.dtype == DType::Bool) {
    v = b.CreateZExt(v, b.getInt32Ty());
    return "%d";
  }
  const unsigned bits = dtypeBits(t.dtype);
  if (bits < 32)
    v = isSigned(t.dtype) ? b.CreateSExt(v, b.getInt32Ty()) : b.CreateZExt(v, b.getInt32Ty());
  if (bits == 64) // OpenCL's printf spells 64-bit integers with `l`, C with `ll`
    return std::string(L.nvptx ? "%ll" : "%l") + (isSigned(t.dtype) ? "d" : "u");
  return isSigned(t.dtype) ? "%d" : "%u";
}

void Lowering::lowerPrint(const ir::Op &op) {
  const std::string label = escapePercent(op.stringAttr("label"));
  Values pid = {readProgramId(0), readProgramId(1), readProgramId(2)};
  const std::string head = "[pid (%d, %d, %d)] " + label;

  // Scalars: one line from thread 0.
  std::string fmt = head;
  Values args = pid;
  bool first = true, anyScalar = false;
  for (const ir::Value *v : op.operands()) {
    if (!v->type.isScalar())
      continue;
    llvm::Value *x = get(v).v[0];
    fmt += first ? (label.empty() ? "" : ": ") : ", ";
    fmt += formatOf(*this, v->type, x);
    args.push_back(x);
    first = false;
    anyScalar = true;
  }
  if (anyScalar || op.numOperands() == 0)
    guardedVoid(isThread0(), [&] { emitPrintf(fmt + "\n", args); });

  // Tiles: an element per line, from its owner.
  for (const ir::Value *v : op.operands()) {
    if (v->type.isScalar())
      continue;
    const Layout l = layoutOf(v->type);
    const Regs &r = get(v);
    std::string efmt = head + "[";
    for (size_t d = 0; d < v->type.rank(); ++d)
      efmt += d ? ", %d" : "%d";
    efmt += "]: ";
    for (int64_t reg = 0; reg < l.numRegs(); ++reg) {
      guardedVoid(roundValid(l, reg / l.vec), [&] {
        Values eargs = pid;
        for (llvm::Value *i : unravel(elementIndex(l, reg), v->type.shape))
          eargs.push_back(i);
        llvm::Value *x = r.v[reg];
        std::string conv = formatOf(*this, v->type.element(), x);
        eargs.push_back(x);
        emitPrintf(efmt + conv + "\n", eargs);
      });
    }
  }
}

} // namespace kiln::codegen::detail
