//===- Compile.h - Kiln source to a bundle, in two halves ----------*- C++ -*-===//
//
// The JIT compiles in two halves because the cache key needs the first:
//   lowerKernel:    source (and imports) -> checked Tile IR of one kernel, and the key
//                   text of everything that IR depends on. Cheap (parsing and checking),
//                   and it is where nearly every error in a program is found.
//   generateBundle: Tile IR -> pipeline -> LLVM -> PTX or SPIR-V -> a bundle. The
//                   expensive half, skipped whenever the cache has the result.
// A graph goes the same way (lowerGraph, generateGraphBundle) into the graph bundle
// `dslc --emit=bundle --kernel GRAPH` writes: every kernel it launches and, on NVPTX,
// its persistent kernel.
// Errors come back as the compiler's diagnostics, rendered as dslc prints them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "frontend/Autotune.h"
#include "frontend/Sema.h"
#include "jit/CacheKey.h"
#include "runtime/Bundle.h"
#include "runtime/GraphBundle.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln::jit {

/// A program to compile: a file, or text given directly under a name.
struct Source {
  std::string name;                ///< the path, or the name used in diagnostics
  std::optional<std::string> text; ///< set: compile this text instead of reading `name`
};

/// What the caller chose of reduction-chain fusion.
struct FusionChoices {
  int64_t reductionSplit = 0; ///< the pipeline's --reduction-split (0: the cost model)
  bool fuseQuantized = false; ///< the pipeline's --fuse-quantized
};

/// One kernel after the frontend, ready for code generation.
struct LoweredKernel {
  std::unique_ptr<ir::Module> module;
  ir::Kernel *kernel = nullptr;
  bool optimized = false; ///< the Tile IR pipeline has run
  FusionChoices fusion;
  /// The sources (hashed), file names, kernel, const values, num_warps, num_stages, the
  /// pipeline and the compiler build: every input of the Tile IR.
  KeyText key;
};

/// Runs the frontend on `source` for kernel `kernel`; the pipeline will fuse reduction
/// chains as `fusion` says. On errors returns null and sets `diagnostics` to their text.
std::unique_ptr<LoweredKernel> lowerKernel(const Source &source, const std::string &kernel,
                                           const SemaOptions &options, const FusionChoices &fusion,
                                           std::string &diagnostics);

/// One graph after the frontend: the graph and every kernel it launches.
struct LoweredGraph {
  std::unique_ptr<ir::Module> module;
  ir::Kernel *graph = nullptr;
  FusionChoices fusion;
  /// As LoweredKernel's, for the graph and the kernels it launches.
  KeyText key;
};

/// Runs the frontend on `source` for graph `graph`. On errors (a kernel named instead
/// of a graph among them) returns null and sets `diagnostics` to their text.
std::unique_ptr<LoweredGraph> lowerGraph(const Source &source, const std::string &graph, const SemaOptions &options,
                                         const FusionChoices &fusion, std::string &diagnostics);

/// Kernel `kernel`'s @autotune configs (nullopt without @autotune). Returns false on
/// errors in the program, with their text in `diagnostics`.
bool listConfigs(const Source &source, const std::string &kernel, const SemaOptions &options,
                 std::optional<KernelAutotune> &out, std::string &diagnostics);

/// The key lines of the code-generation options (target included).
KeyText codegenKey(codegen::Target target, const codegen::CodegenOptions &options);

/// Runs the pipeline (once) and generates code for `target`. On errors returns nullopt
/// and sets `diagnostics`.
std::optional<rt::Bundle> generateBundle(LoweredKernel &lowered, codegen::Target target,
                                         const codegen::CodegenOptions &options, std::string &diagnostics);

/// Runs the pipeline as a graph's code needs it (one num_warps for every kernel, each
/// reduction in one program unless the caller split them) and builds the graph bundle
/// for `target`, with its persistent kernel on NVPTX targets. `lowered` is spent: call
/// once. On errors returns nullopt and sets `diagnostics`.
std::optional<rt::GraphBundle> generateGraphBundle(LoweredGraph &lowered, codegen::Target target,
                                                   const codegen::CodegenOptions &options, std::string &diagnostics);

} // namespace kiln::jit
