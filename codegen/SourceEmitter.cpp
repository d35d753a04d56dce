//===- SourceEmitter.cpp - A kernel as OpenCL C or CUDA C++ source --------===//
//
// Prints a kernel's Tile IR as OpenCL C or CUDA C++ that a reader can follow op by op:
// each op becomes one statement or one short loop, with its source line as a comment
// and the Kiln names of its values. The two languages share the text; a Dialect holds
// what they spell differently (qualifiers, barriers, thread and program indices).
//
//   scalars      one `const` C variable each;
//   tiles        a private array per value, of the registers one work-item holds in
//                the tile's layout (codegen/Layout.h); register r holds element
//                KILN_ELEM(r, VEC) of the row-major order, when that is below the
//                tile's element count (the last round of a thread may hold none);
//   elementwise  a loop over the registers, with Kiln's arithmetic (the prelude's
//                helpers: NaN-ignoring minimum/maximum, integer division by zero = 0,
//                bf16 results rounded once from f32);
//   exchanges    broadcasts and reductions write their operand to local memory, wait
//                at a barrier, read what each register needs, and wait again before
//                the buffer is used next;
//   control      `for` and `if` become C loops and branches; carried and yielded
//                tiles are copied into arrays declared before them.
//
// Reshapes and expand_dims keep the row-major order, hence the layout: the result
// names the operand's array. What it does not print yet (dots, scans, sorts, atomics,
// gathers, cluster exchanges, f16 and f8 values, ...) is an E0109 error at the op.
//
//===----------------------------------------------------------------------===//
#include "codegen/SourceEmitter.h"

#include "codegen/Codegen.h"
#include "codegen/Layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kiln::codegen {

namespace {

using ir::OpKind;

/// What OpenCL C and CUDA C++ spell differently; the rest of the printed code is the
/// same text in both (the CUDA prelude names OpenCL's types and conversions).
struct Dialect {
  const char *flag;         ///< the --emit= kind
  const char *language;
  const char *head;         ///< before the shared prelude
  const char *kernel;       ///< before the kernel's name
  const char *global;       ///< qualifies a pointer to global memory
  const char *local;        ///< declares the exchange buffer
  const char *localPointer; ///< qualifies a pointer into it
  const char *barrier;
  const char *storeBarrier; ///< orders a program's global stores before its later loads
  const char *threadIndex;
  const char *programIds[3], *programCounts[3];
};

constexpr Dialect kOpenCL = {
    "opencl", "OpenCL C",
    "// Launch with work-groups of KILN_T work-items, one per program; build with\n"
    "// -cl-fp32-correctly-rounded-divide-sqrt (Kiln divides correctly rounded).\n"
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "#define KILN_FN static inline\n",
    "__kernel void ", "__global ", "__local ", "__local ", "barrier(CLK_LOCAL_MEM_FENCE)",
    "barrier(CLK_GLOBAL_MEM_FENCE)", "get_local_id(0)",
    {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"},
    {"get_num_groups(0)", "get_num_groups(1)", "get_num_groups(2)"}};

constexpr Dialect kCuda = {
    "cuda", "CUDA C++",
    "// Launch with blocks of KILN_T threads, one per program; compile with -fmad=false\n"
    "// (Kiln does not fuse a * b + c into one rounding).\n"
    "// OpenCL's unsigned type names, which the code below uses (glibc's differ in width).\n"
    "typedef unsigned char kiln_uchar;\n"
    "typedef unsigned short kiln_ushort;\n"
    "typedef unsigned int kiln_uint;\n"
    "typedef unsigned long long kiln_ulong;\n"
    "#define uchar kiln_uchar\n"
    "#define ushort kiln_ushort\n"
    "#define uint kiln_uint\n"
    "#define ulong kiln_ulong\n"
    "#define KILN_FN __device__ __forceinline__\n"
    "// A value whose every use is recomputed where it is needed stays declared, unread.\n"
    "#pragma nv_diag_suppress set_but_not_used\n"
    "KILN_FN float as_float(uint u) { return __uint_as_float(u); }\n"
    "KILN_FN uint as_uint(float f) { return __float_as_uint(f); }\n"
    "// Float to integer: truncated, saturated, NaN to 0 (OpenCL's _sat_rtz conversions).\n"
    "KILN_FN int convert_int_sat_rtz(double x) { return __double2int_rz(x); }\n"
    "KILN_FN uint convert_uint_sat_rtz(double x) { return __double2uint_rz(x); }\n"
    "KILN_FN long convert_long_sat_rtz(double x) { return __double2ll_rz(x); }\n"
    "KILN_FN ulong convert_ulong_sat_rtz(double x) { return __double2ull_rz(x); }\n"
    "KILN_FN char convert_char_sat_rtz(double x) { return (char)max(-128, min(127, __double2int_rz(x))); }\n"
    "KILN_FN uchar convert_uchar_sat_rtz(double x) { return (uchar)min(255u, __double2uint_rz(x)); }\n"
    "KILN_FN short convert_short_sat_rtz(double x) { return (short)max(-32768, min(32767, __double2int_rz(x))); }\n"
    "KILN_FN ushort convert_ushort_sat_rtz(double x) { return (ushort)min(65535u, __double2uint_rz(x)); }\n",
    "extern \"C\" __global__ void __launch_bounds__(KILN_T) ", "", "__shared__ ", "", "__syncthreads()",
    "__syncthreads()", "(int)threadIdx.x",
    {"blockIdx.x", "blockIdx.y", "blockIdx.z"},
    {"gridDim.x", "gridDim.y", "gridDim.z"}};

/// Kiln's arithmetic where C's differs, and the bf16 conversions.
constexpr const char *kPrelude = R"(
// Element of the row-major order that register r of this work-item holds in a layout
// of VEC-element chunks dealt round-robin to the KILN_T work-items (codegen/Layout.h).
#define KILN_ELEM(r, VEC) ((((r) / (VEC)) * KILN_T + kiln_tid) * (VEC) + (r) % (VEC))

KILN_FN float kiln_bf16_to_f32(ushort h) { return as_float((uint)h << 16); }
KILN_FN ushort kiln_f32_to_bf16(float f) { // round to nearest even; NaN stays NaN
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
KILN_FN float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }
// IEEE maxNum / minNum with -0 below +0.
KILN_FN float kiln_maxf(float a, float b) { return a == b ? (signbit(a) ? b : a) : fmax(a, b); }
KILN_FN float kiln_minf(float a, float b) { return a == b ? (signbit(a) ? a : b) : fmin(a, b); }
// Truncating division and C remainder with x / 0 = 0, x % 0 = 0 and no trap on MIN / -1.
KILN_FN int kiln_div_i32(int a, int b) { return b == 0 ? 0 : b == -1 ? (int)(0u - (uint)a) : a / b; }
KILN_FN int kiln_rem_i32(int a, int b) { return b == 0 || b == -1 ? 0 : a % b; }
KILN_FN long kiln_div_i64(long a, long b) { return b == 0 ? 0 : b == -1 ? (long)(0ul - (ulong)a) : a / b; }
KILN_FN long kiln_rem_i64(long a, long b) { return b == 0 || b == -1 ? 0 : a % b; }
// Shifts by an amount outside [0, bits) shift everything out (arithmetic right shifts
// fill with the sign).
KILN_FN int kiln_shl_i32(int a, int b) { return (uint)b < 32 ? (int)((uint)a << b) : 0; }
KILN_FN int kiln_shr_i32(int a, int b) { return (uint)b < 32 ? a >> b : (a < 0 ? -1 : 0); }
KILN_FN uint kiln_shl_u32(uint a, uint b) { return b < 32 ? a << b : 0; }
KILN_FN uint kiln_shr_u32(uint a, uint b) { return b < 32 ? a >> b : 0; }
KILN_FN long kiln_shl_i64(long a, long b) { return (ulong)b < 64 ? (long)((ulong)a << b) : 0; }
KILN_FN long kiln_shr_i64(long a, long b) { return (ulong)b < 64 ? a >> b : (a < 0 ? -1 : 0); }
KILN_FN ulong kiln_shl_u64(ulong a, ulong b) { return b < 64 ? a << b : 0; }
KILN_FN ulong kiln_shr_u64(ulong a, ulong b) { return b < 64 ? a >> b : 0; }
)";

/// What a value is in the emitted C.
struct Printed {
  std::string name;   ///< the variable or array
  bool tile = false;  ///< an array of registers
};

class SourceEmitter {
public:
  SourceEmitter(const ir::Kernel &kernel, const Dialect &dialect, DiagnosticEngine &diags)
      : kernel(kernel), d(dialect), diags(diags), T(kernel.numWarps * 32), maxVec(chunkLimit(kernel)) {}

  std::optional<std::string> run();

private:
  const ir::Kernel &kernel;
  const Dialect &d;
  DiagnosticEngine &diags;
  const int64_t T;
  const int64_t maxVec;
  std::ostringstream body;
  int depth = 1;
  std::unordered_map<const ir::Value *, Printed> values;
  std::unordered_map<std::string, int> namesUsed;
  int64_t scratchWords = 0; ///< 8-byte words of local memory the exchanges need (one an element)
  int lastLine = -1;        ///< the source line of the last comment printed

  struct Unsupported {};
  [[noreturn]] void unsupported(Location loc, const std::string &what) {
    diags.error(loc, DiagCode::Unsupported) << "--emit=" << d.flag << " does not print " << what << " yet";
    throw Unsupported{};
  }
  [[noreturn]] void unsupported(const ir::Op &op, const std::string &what) { unsupported(op.loc(), what); }

  std::ostream &line() { return body << std::string(static_cast<size_t>(depth) * 2, ' '); }
  Layout layoutOf(const Type &t) const { return Layout::forType(t, T, maxVec); }
  std::string fresh(const std::string &hint);
  const Printed &get(const ir::Value *v) const { return values.at(v); }
  /// Operand `v` at register `r` (a scalar is the same in every register).
  std::string at(const ir::Value *v, const std::string &r = "r") const {
    const Printed &p = get(v);
    return p.tile ? p.name + "[" + r + "]" : p.name;
  }

  std::string cType(const Type &t, const ir::Op *where) const;
  /// A `const` declaration of a value of type `t` (without its initializer).
  std::string constDecl(const Type &t, const ir::Op *where, const std::string &name) const;
  std::string memoryType(DType t, const ir::Op *where) const;
  std::string literal(const ir::Op &op) const;

  void emitBlock(const ir::Block &block);
  void emitOp(const ir::Op &op);
  /// Declares the result of `op`: a scalar assigned `expr`, or a tile whose register r
  /// is `expr` (in terms of `r`).
  void define(const ir::Op &op, const std::string &expr);
  /// Declares the result of `op` as one scalar `expr` that every register shares.
  void defineUniform(const ir::Op &op, const std::string &expr);
  /// C for "register r of layout l holds an element", or "" when every register does.
  std::string inside(const Layout &l, const std::string &r = "r") const;
  void declareTile(const ir::Value *v, const std::string &hint);
  std::string elementwise(const ir::Op &op);
  std::string castExpr(const ir::Op &op, const std::string &x);
  /// Kiln's maximum (or minimum) of `a` and `b` of dtype `t`.
  static std::string extremum(bool max, DType t, const std::string &a, const std::string &b);
  void emitLoad(const ir::Op &op);
  void emitStore(const ir::Op &op);
  void storeBarrier();
  void emitBroadcast(const ir::Op &op);
  /// C for element `index` (a flat index) of `v` computed from scratch, when `v` is a
  /// tree of at most `budget` cheap ops over aranges and values every register shares.
  std::optional<std::string> recompute(const ir::Value *v, const std::string &index, int &budget);
  static constexpr int kRecomputeBudget = 8;
  void emitReduce(const ir::Op &op);
  void emitFor(const ir::Op &op);
  void emitIf(const ir::Op &op);
  void emitWhile(const ir::Op &op);
  /// The rest of a loop opened at `depth`: `body`, its yield copied into `carried`, the
  /// closing brace; `loop`'s results then name the carried values.
  void closeLoop(const ir::Op &loop, const ir::Block &body, const std::vector<Printed> &carried);
  /// Declares the arrays (or scalars) that carry `carried`'s values, set from `inits`.
  std::vector<Printed> declareCarried(const ir::Op &op, const std::vector<const ir::Value *> &carried,
                                      const std::vector<const ir::Value *> &inits);
  /// Copies the yielded values of `yield` into `targets` (through temporaries where a
  /// yielded value is one of the targets).
  void copyYields(const ir::Op &yield, const std::vector<Printed> &targets);
  void writeScratch(const ir::Value *v, const std::string &scratch);
  std::string scratchType(const Type &type, const ir::Op &where) const;
};

/// Names a value may not take: OpenCL C's keywords and types, and the builtins and
/// helpers the printed code calls (an op's mnemonic is the name of a value without one).
static bool reserved(const std::string &name) {
  static const std::unordered_set<std::string> words = {
      "auto", "bool", "break", "case", "char", "const", "constant", "continue", "default", "do", "double",
      "else", "enum", "extern", "float", "for", "global", "goto", "half", "if", "inline", "int", "kernel",
      "local", "long", "private", "register", "restrict", "return", "short", "signed", "sizeof", "static",
      "struct", "switch", "typedef", "uchar", "uint", "ulong", "union", "unsigned", "ushort", "void",
      "volatile", "while", "read_only", "write_only", "and", "or", "not", "xor", "bitand", "bitor", "compl",
      "and_eq", "or_eq", "xor_eq", "not_eq", "new", "delete", "class", "this", "template", "typename",
      "namespace", "operator", "public", "protected", "try", "catch", "throw", "virtual", "friend", "using",
      "explicit", "mutable", "true", "false", "nullptr", "decltype", "noexcept", "asm", "export", "concept",
      "requires", "alignas", "alignof", "char16_t", "char32_t", "wchar_t", "dim3", "blockIdx", "threadIdx",
      "gridDim", "blockDim", "warpSize", "abs", "ceil", "cos", "erf", "exp", "exp2", "fabs",
      "floor", "fma", "fmax", "fmin", "fmod", "log", "log2", "max", "min", "pow", "rsqrt", "select", "sin",
      "sqrt", "tanh", "barrier", "signbit", "as_float", "as_uint", "r"};
  return words.count(name) != 0 || name.rfind("kiln_", 0) == 0 || name.rfind("convert_", 0) == 0 ||
         name.rfind("get_", 0) == 0 || name.rfind("__", 0) == 0;
}

std::string SourceEmitter::fresh(const std::string &hint) {
  std::string base;
  for (char c : hint)
    base += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])))
    base = "v" + base;
  if (reserved(base))
    base += "_v";
  const int n = namesUsed[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::string SourceEmitter::cType(const Type &t, const ir::Op *where) const {
  if (t.pointer)
    return d.global + memoryType(t.dtype, where) + " *";
  switch (t.dtype) {
  case DType::Bool: return "bool";
  case DType::I8: return "char";
  case DType::U8: return "uchar";
  case DType::I16: return "short";
  case DType::U16: return "ushort";
  case DType::I32: return "int";
  case DType::U32: return "uint";
  case DType::I64: return "long";
  case DType::U64: return "ulong";
  case DType::F32:
  case DType::BF16: return "float"; // bf16 values are held as floats they round to
  case DType::F64: return "double";
  default: break;
  }
  const_cast<SourceEmitter *>(this)->unsupported(where ? where->loc() : kernel.loc,
                                                 "values of type " + std::string(dtypeName(t.dtype)));
}

std::string SourceEmitter::memoryType(DType t, const ir::Op *where) const {
  switch (t) {
  case DType::Bool: return "uchar";
  case DType::BF16: return "ushort";
  default: return cType(Type::scalar(t), where);
  }
}

std::string SourceEmitter::literal(const ir::Op &op) const {
  const Type &t = op.result()->type;
  std::ostringstream s;
  if (t.dtype == DType::Bool) {
    const ir::Attr &a = op.attrs().at("value");
    const bool v = std::holds_alternative<bool>(a) ? std::get<bool>(a) : std::get<int64_t>(a) != 0;
    return v ? "true" : "false";
  }
  if (isFloat(t.dtype)) {
    const double v = op.floatAttr("value");
    if (std::isnan(v))
      return "NAN";
    if (std::isinf(v))
      return v > 0 ? "INFINITY" : "-INFINITY";
    s.precision(17);
    s << v;
    std::string text = s.str();
    if (text.find_first_of(".e") == std::string::npos)
      text += ".0";
    return t.dtype == DType::F64 ? text : text + "f";
  }
  const int64_t v = op.intAttr("value");
  switch (t.dtype) {
  case DType::U64: s << static_cast<uint64_t>(v) << "UL"; break;
  case DType::U32: s << static_cast<uint32_t>(v) << "u"; break;
  case DType::I64:
    if (v == INT64_MIN)
      return "LONG_MIN";
    s << v << "L";
    break;
  default: s << v; break;
  }
  return s.str();
}

void SourceEmitter::declareTile(const ir::Value *v, const std::string &hint) {
  Printed p{fresh(hint), true};
  line() << cType(v->type.withShape({}), v->definingOp()) << " " << p.name << "["
         << layoutOf(v->type).numRegs() << "];\n";
  values[v] = p;
}

void SourceEmitter::define(const ir::Op &op, const std::string &expr) {
  const ir::Value *v = op.result();
  const std::string hint = v->nameHint.empty() ? op.mnemonic() : v->nameHint;
  if (v->type.isScalar()) {
    Printed p{fresh(hint), false};
    line() << constDecl(v->type, &op, p.name) << " = " << expr << ";\n";
    values[v] = p;
    return;
  }
  declareTile(v, hint);
  line() << "for (int r = 0; r < " << layoutOf(v->type).numRegs() << "; ++r) " << get(v).name << "[r] = " << expr
         << ";\n";
}

void SourceEmitter::defineUniform(const ir::Op &op, const std::string &expr) {
  const ir::Value *v = op.result();
  Printed p{fresh(v->nameHint.empty() ? "c" : v->nameHint), false};
  line() << constDecl(v->type.withShape({}), &op, p.name) << " = " << expr << ";\n";
  values[v] = p;
}

std::string SourceEmitter::constDecl(const Type &t, const ir::Op *where, const std::string &name) const {
  // `const` before a pointer type would make what it points to const.
  return t.pointer ? cType(t, where) + "const " + name : "const " + cType(t, where) + " " + name;
}

std::string SourceEmitter::inside(const Layout &l, const std::string &r) const {
  if (l.numChunks() % l.numThreads == 0) // every register holds an element
    return "";
  return "KILN_ELEM(" + r + ", " + std::to_string(l.vec) + ") < " + std::to_string(l.numElements);
}

void SourceEmitter::emitBlock(const ir::Block &block) {
  for (const auto &owned : block.ops())
    emitOp(*owned);
}

std::optional<std::string> SourceEmitter::run() {
  std::ostringstream head;
  head << "// " << kernel.name << ": " << d.language << " from Kiln (dslc --emit=" << d.flag << ").\n"
     << d.head << "#define KILN_T " << T << "\n" << kPrelude << "\n";
  const std::string entry = sourceEntryName(kernel.name);
  std::ostringstream signature;
  signature << d.kernel << entry << "(";
  try {
    const auto &params = kernel.params();
    for (size_t i = 0; i < params.size(); ++i) {
      const ir::Value *p = params[i].get();
      Printed printed{fresh(p->nameHint.empty() ? "arg" + std::to_string(i) : p->nameHint), false};
      signature << (i ? ", " : "");
      if (p->type.pointer) {
        signature << cType(p->type, nullptr) << printed.name;
      } else if (p->type.dtype == DType::BF16 || p->type.dtype == DType::Bool) {
        // Passed as their raw bits, as to the SPIR-V kernel.
        const std::string bits = printed.name + "_bits";
        signature << (p->type.dtype == DType::Bool ? "uchar " : "ushort ") << bits;
        line() << "const " << cType(p->type, nullptr) << " " << printed.name << " = "
               << (p->type.dtype == DType::Bool ? bits + " != 0" : "kiln_bf16_to_f32(" + bits + ")") << ";\n";
      } else {
        signature << cType(p->type, nullptr) << " " << printed.name;
      }
      values[p] = printed;
    }
    emitBlock(*kernel.body);
  } catch (Unsupported &) {
    return std::nullopt;
  }
  signature << ") {\n";
  std::ostringstream out;
  out << head.str() << signature.str() << "  const int kiln_tid = " << d.threadIndex << ";\n";
  if (scratchWords > 0)
    out << "  // Where broadcasts and reductions exchange elements.\n  " << d.local << "ulong kiln_scratch["
        << scratchWords << "];\n";
  out << body.str() << "}\n";
  return out.str();
}

void SourceEmitter::emitOp(const ir::Op &op) {
  if (op.loc().valid() && !op.loc().isCommandLine() && op.kind() != OpKind::Yield &&
      op.kind() != OpKind::Return && static_cast<int>(op.loc().line) != lastLine) {
    lastLine = static_cast<int>(op.loc().line);
    line() << "// line " << lastLine << "\n";
  }
  const Type &rt = op.numResults() ? op.result()->type : Type{};
  switch (op.kind()) {
  case OpKind::Constant:
    return defineUniform(op, literal(op));
  case OpKind::ProgramId:
    return define(op, std::string("(int)") + d.programIds[op.intAttr("axis")]);
  case OpKind::NumPrograms:
    return define(op, std::string("(int)") + d.programCounts[op.intAttr("axis")]);
  case OpKind::Arange:
    if (rt.dtype != DType::I32)
      unsupported(op, "an arange of " + std::string(dtypeName(rt.dtype)));
    return define(op, std::to_string(op.intAttr("start")) + " + KILN_ELEM(r, " +
                          std::to_string(layoutOf(rt).vec) + ")");
  case OpKind::Splat: // the same in every register: the scalar itself
    values[op.result()] = get(op.operand(0));
    return;
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    values[op.result()] = get(op.operand(0)); // the same elements in the same registers
    return;
  case OpKind::Broadcast:
    return emitBroadcast(op);
  case OpKind::Cast:
    return define(op, castExpr(op, at(op.operand(0))));
  case OpKind::Load:
    return emitLoad(op);
  case OpKind::Store:
    return emitStore(op);
  case OpKind::Reduce:
    return emitReduce(op);
  case OpKind::For:
    return emitFor(op);
  case OpKind::If:
    return emitIf(op);
  case OpKind::While:
    return emitWhile(op);
  case OpKind::Condition: // tested by the while loop it ends
    return;
  case OpKind::Yield: // copied by the loop or branch it ends
    return;
  case OpKind::Return:
    if (op.parentOp())
      unsupported(op, "a return inside a loop or branch");
    return;
  default:
    if (ir::isElementwise(op.kind()) || op.kind() == OpKind::Cmp || op.kind() == OpKind::Select ||
        op.kind() == OpKind::PtrAdd)
      return define(op, elementwise(op));
    unsupported(op, std::string("'") + op.mnemonic() + "'");
  }
}

std::string SourceEmitter::elementwise(const ir::Op &op) {
  auto x = [&](unsigned i) { return at(op.operand(i)); };
  const DType t = op.operand(0)->type.dtype;
  const bool flt = isFloat(t) && !op.operand(0)->type.pointer;
  const bool wide = t == DType::I64 || t == DType::U64;
  const std::string unsignedT = wide ? "ulong" : "uint";
  const std::string resultC = op.result()->type.pointer ? "" : cType(op.result()->type.withShape({}), &op);
  std::string e;
  switch (op.kind()) {
  case OpKind::PtrAdd: return x(0) + " + " + x(1);
  case OpKind::Select: return x(0) + " ? " + x(1) + " : " + x(2);
  case OpKind::Cmp: {
    static const std::unordered_map<std::string, std::string> ops = {
        {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
    return x(0) + " " + ops.at(op.stringAttr("pred")) + " " + x(1);
  }
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul: {
    const char *sym = op.kind() == OpKind::Add ? " + " : op.kind() == OpKind::Sub ? " - " : " * ";
    if (flt || t == DType::Bool)
      e = x(0) + sym + x(1);
    else // wrapping, as Kiln's integers do
      e = "(" + resultC + ")((" + unsignedT + ")" + x(0) + sym + "(" + unsignedT + ")" + x(1) + ")";
    break;
  }
  case OpKind::Div:
  case OpKind::Rem:
    if (flt)
      e = op.kind() == OpKind::Div ? x(0) + " / " + x(1) : "fmod(" + x(0) + ", " + x(1) + ")";
    else if (t == DType::I32 || t == DType::I64)
      e = std::string("kiln_") + (op.kind() == OpKind::Div ? "div" : "rem") + (wide ? "_i64(" : "_i32(") + x(0) +
          ", " + x(1) + ")";
    else
      unsupported(op, "integer division of " + std::string(dtypeName(t)));
    break;
  case OpKind::And: e = t == DType::Bool ? x(0) + " && " + x(1) : x(0) + " & " + x(1); break;
  case OpKind::Or: e = t == DType::Bool ? x(0) + " || " + x(1) : x(0) + " | " + x(1); break;
  case OpKind::Xor: e = x(0) + " ^ " + x(1); break;
  case OpKind::Shl:
  case OpKind::Shr: {
    const char *suffix = t == DType::I32   ? "_i32("
                         : t == DType::U32 ? "_u32("
                         : t == DType::I64 ? "_i64("
                         : t == DType::U64 ? "_u64("
                                           : nullptr;
    if (!suffix)
      unsupported(op, "shifts of " + std::string(dtypeName(t)));
    e = std::string(op.kind() == OpKind::Shl ? "kiln_shl" : "kiln_shr") + suffix + x(0) + ", " + x(1) + ")";
    break;
  }
  case OpKind::Minimum:
  case OpKind::Maximum:
    e = extremum(op.kind() == OpKind::Maximum, t, x(0), x(1));
    break;
  case OpKind::Pow: e = "pow(" + x(0) + ", " + x(1) + ")"; break;
  case OpKind::Fma: e = "fma(" + x(0) + ", " + x(1) + ", " + x(2) + ")"; break;
  case OpKind::Neg: e = flt ? "-" + x(0) : "(" + resultC + ")(0 - (" + unsignedT + ")" + x(0) + ")"; break;
  case OpKind::Not: e = t == DType::Bool ? "!" + x(0) : "~" + x(0); break;
  case OpKind::Abs: e = flt ? "fabs(" + x(0) + ")" : "(" + resultC + ")abs(" + x(0) + ")"; break;
  case OpKind::Exp: e = "exp(" + x(0) + ")"; break;
  case OpKind::Exp2: e = "exp2(" + x(0) + ")"; break;
  case OpKind::Log: e = "log(" + x(0) + ")"; break;
  case OpKind::Log2: e = "log2(" + x(0) + ")"; break;
  case OpKind::Sqrt: e = "sqrt(" + x(0) + ")"; break;
  case OpKind::Rsqrt: // 1 / sqrt(x), both correctly rounded, as Kiln defines it
    e = std::string(t == DType::F64 ? "1.0" : "1.0f") + " / sqrt(" + x(0) + ")";
    break;
  case OpKind::Sin: e = "sin(" + x(0) + ")"; break;
  case OpKind::Cos: e = "cos(" + x(0) + ")"; break;
  case OpKind::Tanh: e = "tanh(" + x(0) + ")"; break;
  case OpKind::Erf: e = "erf(" + x(0) + ")"; break;
  case OpKind::Sigmoid: e = "1.0f / (1.0f + exp(-" + x(0) + "))"; break;
  case OpKind::Floor: e = "floor(" + x(0) + ")"; break;
  case OpKind::Ceil: e = "ceil(" + x(0) + ")"; break;
  default:
    unsupported(op, std::string("'") + op.mnemonic() + "'");
  }
  // A bf16 result is computed in f32 and rounded once.
  return op.result()->type.dtype == DType::BF16 && flt ? "kiln_round_bf16(" + e + ")" : e;
}

std::string SourceEmitter::extremum(bool max, DType t, const std::string &a, const std::string &b) {
  if (t == DType::F64) // the prelude's helpers are for f32 (a device may lack f64)
    return "(" + a + " == " + b + " ? (signbit(" + a + ") ? " + (max ? b : a) + " : " + (max ? a : b) + ") : " +
           (max ? "fmax(" : "fmin(") + a + ", " + b + "))";
  if (isFloat(t))
    return std::string(max ? "kiln_maxf(" : "kiln_minf(") + a + ", " + b + ")";
  return std::string(max ? "max(" : "min(") + a + ", " + b + ")";
}

std::string SourceEmitter::castExpr(const ir::Op &op, const std::string &x) {
  const DType from = op.operand(0)->type.dtype, to = op.result()->type.dtype;
  const std::string toC = cType(op.result()->type.withShape({}), &op);
  if (from == to)
    return x;
  if (to == DType::Bool)
    return x + " != 0";
  if (from == DType::Bool)
    return x + " ? (" + toC + ")1 : (" + toC + ")0";
  if (to == DType::BF16) {
    // Through f32 only where that is exact: a second rounding could differ from Kiln's one.
    if (from != DType::F32 && from != DType::I8 && from != DType::U8 && from != DType::I16 && from != DType::U16)
      unsupported(op, "a conversion to bf16 from " + std::string(dtypeName(from)));
    return "kiln_round_bf16((float)" + x + ")";
  }
  if (isFloat(from) && !isFloat(to)) // truncated, saturated, NaN to 0
    return "convert_" + toC + "_sat_rtz(" + x + ")";
  return "(" + toC + ")" + x; // widening floats, bf16 to f32, integers (wrapping)
}

void SourceEmitter::emitLoad(const ir::Op &op) {
  const ir::Value *ptr = op.operand(0);
  const DType t = op.result()->type.dtype;
  auto read = [&](const std::string &p) {
    return t == DType::BF16 ? "kiln_bf16_to_f32(*" + p + ")" : t == DType::Bool ? "*" + p + " != 0" : "*" + p;
  };
  cType(op.result()->type, &op); // refuses what it cannot hold
  if (op.result()->type.isScalar()) {
    if (op.numOperands() > 1)
      return define(op, at(op.operand(1)) + " ? " + read(at(ptr)) + " : " +
                            (op.numOperands() > 2 ? at(op.operand(2)) : std::string("0")));
    return define(op, read(at(ptr)));
  }
  const ir::Value *v = op.result();
  declareTile(v, v->nameHint.empty() ? "loaded" : v->nameHint);
  const Layout l = layoutOf(v->type);
  line() << "for (int r = 0; r < " << l.numRegs() << "; ++r) {\n";
  std::string cond = inside(l);
  if (op.numOperands() > 1)
    cond += (cond.empty() ? "" : " && ") + at(op.operand(1));
  if (cond.empty())
    line() << "  " << get(v).name << "[r] = " << read(at(ptr)) << ";\n";
  else
    line() << "  " << get(v).name << "[r] = " << cond << " ? " << read(at(ptr)) << " : "
           << (op.numOperands() > 2 ? at(op.operand(2)) : std::string("0")) << ";\n";
  line() << "}\n";
}

void SourceEmitter::storeBarrier() {
  // A program's ops take effect in order whichever of its threads makes them (Kiln's
  // memory order within a program): a store waits for every earlier load, and later
  // loads wait for the store.
  line() << d.storeBarrier << ";\n";
}

void SourceEmitter::emitStore(const ir::Op &op) {
  const ir::Value *ptr = op.operand(0), *val = op.operand(1);
  const DType t = val->type.dtype;
  auto write = [&](const std::string &p, const std::string &v) {
    return "*" + p + " = " +
           (t == DType::BF16 ? "kiln_f32_to_bf16(" + v + ")" : t == DType::Bool ? "(uchar)" + v : v) + ";";
  };
  cType(val->type, &op);
  const std::string mask = op.numOperands() > 2 ? at(op.operand(2)) : "";
  storeBarrier(); // every thread's earlier loads are done before any thread overwrites
  if (ptr->type.isScalar()) {
    // Every work-item holds the value; one stores it.
    line() << "if (kiln_tid == 0" << (mask.empty() ? "" : " && " + mask) << ") " << write(at(ptr), at(val)) << "\n";
    storeBarrier();
    return;
  }
  const Layout l = layoutOf(ptr->type);
  std::string cond = inside(l);
  if (!mask.empty())
    cond += (cond.empty() ? "" : " && ") + mask;
  line() << "for (int r = 0; r < " << l.numRegs() << "; ++r)\n";
  line() << "  " << (cond.empty() ? "" : "if (" + cond + ") ") << write(at(ptr), at(val)) << "\n";
  storeBarrier();
}

std::string SourceEmitter::scratchType(const Type &type, const ir::Op &where) const {
  if (type.pointer)
    return "ulong"; // exchanged as addresses
  const DType t = type.dtype;
  switch (t) {
  case DType::Bool:
  case DType::I32:
  case DType::U32:
  case DType::F32:
  case DType::BF16:
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I64:
  case DType::U64:
  case DType::F64:
    return cType(Type::scalar(t), &where);
  default:
    const_cast<SourceEmitter *>(this)->unsupported(where, "exchanging " + std::string(dtypeName(t)) + " elements");
  }
}

void SourceEmitter::writeScratch(const ir::Value *v, const std::string &scratch) {
  const Layout l = layoutOf(v->type);
  scratchWords = std::max(scratchWords, l.numElements);
  const std::string cond = inside(l);
  line() << "for (int r = 0; r < " << l.numRegs() << "; ++r)\n";
  line() << "  " << (cond.empty() ? "" : "if (" + cond + ") ") << scratch << "[KILN_ELEM(r, " << l.vec
         << ")] = " << (v->type.pointer ? "(ulong)" : "") << at(v) << ";\n";
  line() << d.barrier << ";\n";
}

/// C for the flat index into `src` (row-major) of flat element `e` of `dst`, where
/// `src` broadcasts to `dst` (axes of size 1 repeat).
static std::string broadcastIndex(const std::string &e, const Shape &src, const Shape &dst) {
  std::string index = "0";
  int64_t dstStride = 1, srcStride = 1;
  for (size_t d = dst.size(); d-- > 0;) {
    if (src[d] != 1) {
      const std::string coord = "(" + e + " / " + std::to_string(dstStride) + ") % " + std::to_string(dst[d]);
      index += " + " + coord + " * " + std::to_string(srcStride);
    }
    dstStride *= dst[d];
    srcStride *= src[d];
  }
  return index;
}

void SourceEmitter::emitBroadcast(const ir::Op &op) {
  const ir::Value *src = op.operand(0);
  const Type &st = src->type, &rt = op.result()->type;
  if (st.shape == rt.shape) {
    values[op.result()] = get(src);
    return;
  }
  if (!get(src).tile) { // the same in every register already
    values[op.result()] = get(src);
    return;
  }
  const Layout rl = layoutOf(rt);
  const std::string element = "KILN_ELEM(r, " + std::to_string(rl.vec) + ")";
  int budget = kRecomputeBudget;
  if (std::optional<std::string> recomputed = recompute(src, broadcastIndex(element, st.shape, rt.shape), budget))
    return define(op, *recomputed); // cheap enough to compute where it is needed: no exchange
  const std::string ty = scratchType(st, op);
  const std::string scratch = fresh("bcast");
  line() << d.localPointer << ty << " *" << scratch << " = (" << d.localPointer << ty << " *)kiln_scratch;\n";
  writeScratch(src, scratch);
  const Layout l = layoutOf(rt);
  const std::string e = "KILN_ELEM(r, " + std::to_string(l.vec) + ")";
  std::string read = scratch + "[" + broadcastIndex(e, st.shape, rt.shape) + "]";
  if (st.pointer)
    read = "(" + cType(rt.withShape({}), &op) + ")" + read;
  define(op, inside(l).empty() || st.pointer ? read : "(" + inside(l) + ") ? " + read + " : 0");
  line() << d.barrier << ";\n";
}

std::optional<std::string> SourceEmitter::recompute(const ir::Value *v, const std::string &index, int &budget) {
  const Printed &p = get(v);
  if (!p.tile)
    return p.name;
  const ir::Op *def = v->definingOp();
  if (!def || --budget < 0)
    return std::nullopt;
  switch (def->kind()) {
  case OpKind::Arange:
    return "(" + std::to_string(def->intAttr("start")) + " + (" + index + "))";
  case OpKind::ExpandDims:
  case OpKind::Reshape: // the same row-major order
    return recompute(def->operand(0), index, budget);
  default:
    break;
  }
  if (!ir::isElementwise(def->kind()) && def->kind() != OpKind::Cmp && def->kind() != OpKind::PtrAdd)
    return std::nullopt;
  switch (def->kind()) { // a few instructions each, not a library call
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Cmp:
  case OpKind::PtrAdd:
  case OpKind::Neg:
  case OpKind::Not:
    break;
  default:
    return std::nullopt;
  }
  // The operands' expressions stand in for their names in the op's C.
  std::unordered_map<const ir::Value *, Printed> saved;
  for (const ir::Value *o : def->operands()) {
    std::optional<std::string> e = recompute(o, index, budget);
    if (!e)
      return std::nullopt;
    saved.emplace(o, values[o]);
    values[o] = Printed{"(" + *e + ")", false};
  }
  const std::string expr = elementwise(*def);
  for (auto &[o, printed] : saved)
    values[o] = printed;
  return expr;
}

void SourceEmitter::emitReduce(const ir::Op &op) {
  if (op.numRegions() > 0 && !op.region(0)->empty())
    unsupported(op, "a reduction with its own combiner");
  const ir::Value *src = op.operand(0);
  const Type &st = src->type, &rt = op.result()->type;
  const std::string kind = op.stringAttr("kind");
  const int64_t axis = op.intAttr("axis");
  if (st.pointer)
    unsupported(op, "a reduction of pointers");
  const std::string ty = scratchType(st, op);
  const std::string scratch = fresh("red");
  line() << d.localPointer << ty << " *" << scratch << " = (" << d.localPointer << ty << " *)kiln_scratch;\n";
  writeScratch(src, scratch);
  // Result element o reads its line: coordinates before the axis (outer), along it, after
  // it (inner), in the order the interpreter sums them.
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < st.shape.size(); ++d)
    inner *= st.shape[d];
  const int64_t length = st.shape[static_cast<size_t>(axis)];
  const bool flt = isFloat(st.dtype);
  std::string combine;
  if (kind == "sum")
    combine = "kiln_acc + kiln_x";
  else if (kind == "prod")
    combine = "kiln_acc * kiln_x";
  else
    combine = extremum(kind == "max", st.dtype, "kiln_acc", "kiln_x");
  if (!flt && (kind == "sum" || kind == "prod")) { // wrapping, as Kiln's integers do
    if (st.dtype != DType::I32 && st.dtype != DType::I64 && st.dtype != DType::U32 && st.dtype != DType::U64)
      unsupported(op, "sums and products of " + std::string(dtypeName(st.dtype)));
    const std::string u = st.dtype == DType::I64 || st.dtype == DType::U64 ? "ulong" : "uint";
    combine = "(" + ty + ")((" + u + ")kiln_acc " + (kind == "sum" ? "+" : "*") + " (" + u + ")kiln_x)";
  }
  auto reduceAt = [&](const std::string &o, const std::string &target) {
    line() << "{\n";
    line() << "  const int kiln_base = (" << o << " / " << inner << ") * " << length * inner << " + (" << o << " % "
           << inner << ");\n";
    line() << "  " << ty << " kiln_acc = " << scratch << "[kiln_base];\n";
    line() << "  for (int kiln_i = 1; kiln_i < " << length << "; ++kiln_i) {\n";
    line() << "    const " << ty << " kiln_x = " << scratch << "[kiln_base + kiln_i * " << inner << "];\n";
    line() << "    kiln_acc = " << combine << ";\n";
    line() << "  }\n";
    line() << "  " << target << " = " << (st.dtype == DType::BF16 ? "kiln_round_bf16(kiln_acc)" : "kiln_acc") << ";\n";
    line() << "}\n";
  };
  if (rt.isScalar()) {
    Printed p{fresh(op.result()->nameHint.empty() ? "total" : op.result()->nameHint), false};
    line() << cType(rt, &op) << " " << p.name << ";\n";
    reduceAt("0", p.name);
    values[op.result()] = p;
  } else {
    declareTile(op.result(), op.result()->nameHint.empty() ? "reduced" : op.result()->nameHint);
    const Layout l = layoutOf(rt);
    line() << "for (int r = 0; r < " << l.numRegs() << "; ++r) {\n";
    ++depth;
    line() << "const int kiln_o = KILN_ELEM(r, " << l.vec << ");\n";
    if (!inside(l).empty())
      line() << "if (kiln_o < " << l.numElements << ")\n";
    reduceAt("kiln_o", get(op.result()).name + "[r]");
    --depth;
    line() << "}\n";
  }
  line() << d.barrier << ";\n";
}

void SourceEmitter::copyYields(const ir::Op &yield, const std::vector<Printed> &targets) {
  std::vector<std::string> sources;
  bool clash = false;
  for (unsigned i = 0; i < yield.numOperands(); ++i) {
    sources.push_back(get(yield.operand(i)).name);
    for (const Printed &t : targets)
      clash = clash || (get(yield.operand(i)).name == t.name && &t != &targets[i]);
  }
  std::vector<std::string> from = sources;
  if (clash) // a carried value yielded into another slot: copy through temporaries
    for (unsigned i = 0; i < yield.numOperands(); ++i) {
      const ir::Value *v = yield.operand(i);
      from[i] = fresh("next");
      const int64_t regs = v->type.isScalar() ? 0 : layoutOf(v->type).numRegs();
      line() << cType(v->type, &yield) << " " << from[i] << (regs ? "[" + std::to_string(regs) + "]" : "") << ";\n";
      if (regs)
        line() << "for (int r = 0; r < " << regs << "; ++r) " << from[i] << "[r] = " << at(v) << ";\n";
      else
        line() << from[i] << " = " << sources[i] << ";\n";
    }
  for (unsigned i = 0; i < yield.numOperands(); ++i) {
    if (from[i] == targets[i].name)
      continue;
    const bool fromTile = clash ? targets[i].tile : get(yield.operand(i)).tile;
    if (targets[i].tile)
      line() << "for (int r = 0; r < " << layoutOf(yield.operand(i)->type).numRegs() << "; ++r) " << targets[i].name
             << "[r] = " << from[i] << (fromTile ? "[r]" : "") << ";\n";
    else
      line() << targets[i].name << " = " << from[i] << ";\n";
  }
}

std::vector<Printed> SourceEmitter::declareCarried(const ir::Op &op, const std::vector<const ir::Value *> &args,
                                                  const std::vector<const ir::Value *> &inits) {
  std::vector<Printed> carried;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Value *arg = args[i];
    const std::string hint = arg->nameHint.empty() ? "carried" : arg->nameHint;
    if (arg->type.isScalar()) {
      Printed p{fresh(hint), false};
      line() << cType(arg->type, &op) << " " << p.name << " = " << at(inits[i]) << ";\n";
      values[arg] = p;
    } else {
      declareTile(arg, hint);
      line() << "for (int r = 0; r < " << layoutOf(arg->type).numRegs() << "; ++r) " << get(arg).name
             << "[r] = " << at(inits[i]) << ";\n";
    }
    carried.push_back(get(arg));
  }
  return carried;
}

void SourceEmitter::closeLoop(const ir::Op &loop, const ir::Block &body, const std::vector<Printed> &carried) {
  emitBlock(body);
  if (const ir::Op *yield = body.terminator(); yield && yield->kind() == OpKind::Yield)
    copyYields(*yield, carried);
  --depth;
  line() << "}\n";
  for (unsigned i = 0; i < loop.numResults(); ++i) // after the loop, its results are what it carried
    values[loop.result(i)] = carried[i];
}

void SourceEmitter::emitWhile(const ir::Op &op) {
  const ir::Block &before = *op.region(0), &after = *op.region(1);
  std::vector<const ir::Value *> args, inits;
  for (unsigned i = 0; i < op.numResults(); ++i) {
    args.push_back(before.argument(i));
    inits.push_back(op.operand(i));
  }
  const std::vector<Printed> carried = declareCarried(op, args, inits);
  line() << "while (true) {\n";
  ++depth;
  emitBlock(before);
  const ir::Op *cond = before.terminator();
  if (!cond || cond->kind() != OpKind::Condition)
    unsupported(op, "a while loop without its condition");
  line() << "if (!" << at(cond->operand(0)) << ")\n";
  line() << "  break;\n";
  for (unsigned i = 0; i < op.numResults(); ++i) // the body starts from the same values
    values[after.argument(i)] = carried[i];
  closeLoop(op, after, carried);
}

void SourceEmitter::emitFor(const ir::Op &op) {
  const ir::Block &loopBody = *op.region(0);
  std::vector<const ir::Value *> args, inits;
  for (unsigned i = 0; i < op.numResults(); ++i) {
    args.push_back(loopBody.argument(i + 1));
    inits.push_back(op.operand(3 + i));
  }
  const std::vector<Printed> carried = declareCarried(op, args, inits);
  const ir::Value *iv = loopBody.argument(0);
  Printed ivName{fresh(iv->nameHint.empty() ? "i" : iv->nameHint), false};
  values[iv] = ivName;
  const std::string ty = cType(iv->type, &op);
  const std::string lb = at(op.operand(0)), ub = at(op.operand(1)), step = at(op.operand(2));
  // A constant step (the usual case) gives the plain comparison.
  const std::optional<int64_t> constantStep = ir::integerConstant(op.operand(2));
  const std::string up = ivName.name + " < " + ub, down = ivName.name + " > " + ub;
  const std::string cond = !constantStep ? step + " > 0 ? " + up + " : " + down : *constantStep > 0 ? up : down;
  line() << "for (" << ty << " " << ivName.name << " = " << lb << "; " << cond << "; " << ivName.name << " += " << step
         << ") {\n";
  ++depth;
  closeLoop(op, loopBody, carried);
}

void SourceEmitter::emitIf(const ir::Op &op) {
  std::vector<Printed> results;
  for (unsigned i = 0; i < op.numResults(); ++i) {
    const ir::Value *v = op.result(i);
    const std::string hint = v->nameHint.empty() ? "chosen" : v->nameHint;
    if (v->type.isScalar()) {
      Printed p{fresh(hint), false};
      line() << cType(v->type, &op) << " " << p.name << ";\n";
      values[v] = p;
    } else {
      declareTile(v, hint);
    }
    results.push_back(get(v));
  }
  line() << "if (" << at(op.operand(0)) << ") {\n";
  for (unsigned b = 0; b < op.numRegions(); ++b) {
    if (b == 1)
      line() << "} else {\n";
    ++depth;
    const ir::Block &branch = *op.region(b);
    emitBlock(branch);
    if (const ir::Op *yield = branch.terminator(); yield && yield->kind() == OpKind::Yield)
      copyYields(*yield, results);
    --depth;
  }
  line() << "}\n";
}

} // namespace

std::string sourceEntryName(const std::string &kernelName) {
  const std::string entry = entrySymbol(kernelName); // the name the PTX and SPIR-V kernels take
  // A C library function of the same name would clash with an extern "C" kernel.
  static const std::unordered_set<std::string> libc = {"select", "exit",  "abort", "printf", "malloc", "free",
                                                       "time",   "rand",  "signal", "kill",  "main",   "read",
                                                       "write",  "open",  "close",  "sleep", "wait",   "index"};
  return reserved(entry) || libc.count(entry) ? entry + "_kernel" : entry;
}

std::optional<std::string> emitOpenCL(const ir::Kernel &kernel, DiagnosticEngine &diags) {
  return SourceEmitter(kernel, kOpenCL, diags).run();
}

std::optional<std::string> emitCuda(const ir::Kernel &kernel, DiagnosticEngine &diags) {
  return SourceEmitter(kernel, kCuda, diags).run();
}

} // namespace kiln::codegen
