//===- Interpreter.h - The reference interpreter of Tile IR ------*- C++ -*-===//
//
// Runs a Kernel on the CPU over a grid of programs, one program after another, with
// the exact semantics documented in ir/Ops.def. It is the oracle of every differential
// test, the `dslc run --device interp` backend and the agent loop's correctness check.
//
// Memory is a set of Buffers; pointer arguments name a buffer. The interpreter works
// on private copies and writes them back only when the whole grid ran without error,
// so a failed run leaves the caller's data untouched.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <array>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln::interp {

/// A flat, typed array of elements in global memory.
struct Buffer {
  std::string name;          ///< for messages ("x.npy")
  DType dtype = DType::F32;
  std::vector<std::byte> data; ///< numElements * dtypeBytes(dtype) bytes
  bool written = false;      ///< set when a run stored into it

  int64_t numElements() const { return static_cast<int64_t>(data.size() / dtypeBytes(dtype)); }
};

/// One runtime argument of a kernel: a buffer (for a pointer parameter) or a scalar.
struct KernelArg {
  enum class Kind { Buffer, Int, Float } kind = Kind::Int;
  size_t buffer = 0; ///< index into the buffers vector
  int64_t i = 0;     ///< integers and bool (as 0/1); for a buffer, the element it points at
  double f = 0;

  static KernelArg ofBuffer(size_t b, int64_t offset = 0) { return {Kind::Buffer, b, offset, 0}; }
  static KernelArg ofInt(int64_t v) { return {Kind::Int, 0, v, 0}; }
  static KernelArg ofFloat(double v) { return {Kind::Float, 0, 0, v}; }
};

struct RunOptions {
  std::array<int64_t, 3> grid = {1, 1, 1};
  /// Upper bound on executed steps (summed over programs) before E0605; 0: no limit.
  /// An op counts one step per element it makes (a store, per element it writes).
  uint64_t maxSteps = 4'000'000'000ull;
  std::ostream *printStream = nullptr; ///< where print() goes (stdout when null)
  /// Called for every element a load, store or atomic touches: its buffer, its element
  /// offset, whether it is written, and the program (for analyses checked against what
  /// really happens, such as ir/TaskFootprints.h).
  std::function<void(size_t buffer, int64_t element, bool write, const std::array<int64_t, 3> &pid)> observeAccess;
};

/// Runs `kernel` over the grid. Errors (out-of-bounds or misaligned access, failed
/// assert, step limit, argument mismatch) are reported through `diags` with the
/// kernel's source location; on error `buffers` is left unchanged and false returned.
bool runKernel(const ir::Kernel &kernel, const std::vector<KernelArg> &args,
               std::vector<Buffer> &buffers, const RunOptions &options,
               DiagnosticEngine &diags);

/// One launch that a graph's body makes, with the grid and arguments the body computed.
struct GraphLaunchCall {
  const ir::Op *op = nullptr;         ///< the `launch` op (where it is, which one it is)
  const ir::Kernel *kernel = nullptr; ///< the kernel instance it launches
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<KernelArg> args;        ///< a pointer is a buffer of `buffers` and an element offset
};

/// Evaluates graph `graph`'s body for `args` (its scalar arithmetic and `if`s) without
/// running any kernel: the launches it makes, in order. A graph's body reads no memory,
/// so this is what every run of the graph on these arguments launches; it is how a GPU
/// runs a graph, launch by launch or as one persistent kernel. Arguments are checked
/// against `buffers` as runKernel checks them; false, with diagnostics, when one is bad.
bool planGraph(const ir::Module &module, const ir::Kernel &graph, const std::vector<KernelArg> &args,
               const std::vector<Buffer> &buffers, DiagnosticEngine &diags, std::vector<GraphLaunchCall> &out);

/// Runs graph `graph` of `module` (Module::graphs): its launches one after another, each
/// as runKernel runs it, on the grid and arguments the graph computes (`options.grid`
/// is not used; `maxSteps` bounds each launch). A launch that fails stops the graph
/// with its error and a note at the launch; `buffers` is then left unchanged.
bool runGraph(const ir::Module &module, const ir::Kernel &graph, const std::vector<KernelArg> &args,
              std::vector<Buffer> &buffers, const RunOptions &options, DiagnosticEngine &diags);

} // namespace kiln::interp
