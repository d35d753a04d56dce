//===- Codegen.h - Tile IR to PTX and SPIR-V -----------------------*- C++ -*-===//
//
// The code generator lowers one Tile IR kernel to LLVM IR and from there to a GPU
// target: PTX text for NVIDIA GPUs (sm_80, sm_90, sm_90a) or a SPIR-V module for the
// OpenCL kernel environment (spirv64, run through Level Zero on Intel GPUs).
//
// One program of the grid is one CTA / work-group of `num_warps * 32` threads. Tiles are
// spread over those threads (Layout.h); ops that move elements between threads go
// through one per-kernel shared-memory arena whose size is reported in `sharedBytes`.
// docs/codegen.md describes the design and the kernel ABI.
//
// This header is free of LLVM types on purpose: including it costs nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::codegen {

enum class Target { SM80, SM90, SM90a, SPIRV64 };

/// "sm_80", "sm_90", "sm_90a", "spirv64" -> Target; nullopt otherwise.
std::optional<Target> parseTarget(std::string_view name);
/// The spelling parseTarget accepts.
std::string_view targetName(Target target);
/// True for the NVIDIA targets (PTX output).
bool isNvptxTarget(Target target);
/// Whether the target launches thread-block clusters (sm_90, sm_90a).
bool hasClusters(Target target);

struct CodegenOptions {
  /// LLVM optimization level of the IR pipeline and the target code generator (0..3).
  int optLevel = 3;
  /// Pointer parameters point at 16-byte aligned memory (the runtime's buffers always
  /// do); lets aligned, contiguous accesses become 16-byte vector loads and stores.
  bool assumeAlignedPointers = true;
  /// libdevice, linked for math functions on NVPTX.
  std::string libdevicePath = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  /// Produce the SPIR-V assembly text too (spirv64 only).
  bool emitSpirvAsm = true;
  /// Use tensor-core mma.sync for `dot` where the target, dtypes and shapes allow it.
  bool useTensorCores = true;
  /// A wgmma loop that streams its operands through three buffers or more publishes
  /// each buffer with an mbarrier rather than a barrier of every warp, so that its
  /// warpgroups need not step together (codegen/LowerDot.cpp, MmaPipeline::published).
  bool publishedRing = true;
  /// Integer parameters known to be divisible by a power of two: (parameter index,
  /// divisor). The caller guarantees it, typically by specializing on the launch's
  /// arguments (as Triton does for multiples of 16); it lets accesses such as
  /// `x + row * stride + cols` become vector loads.
  std::vector<std::pair<unsigned, int64_t>> paramDivisibility;
  /// Checked mode (LowerChecks.cpp): every load, store and atomic is bounds-checked
  /// against the buffer passed for its pointer, and the first violation recorded.
  bool checked = false;
  /// Graphs' persistent kernel (Megakernel.cpp): before a task waits, its threads ask
  /// L2 for the elements it will read (ir/TaskFootprints.h), so its weights stream in
  /// while the launch before it finishes. Off by default: it has not paid on the H200.
  bool taskPrefetch = false;
  /// Graphs' persistent kernel: compiled so that this many workers fit on one SM
  /// (nvvm.minctasm: ptxas caps the registers to fit). Two by default: register
  /// allocation over the union of every kind of task otherwise drifts high.
  int64_t workersPerSM = 2;
  /// The programs per SM a kernel is compiled for (nvvm.minctasm, PTX .minnctapersm:
  /// ptxas keeps its registers within what that many leave); 0 lets ptxas choose. A
  /// graph's kernels without a tensor-core product take workersPerSM
  /// (GraphBundleBuilder.cpp).
  int64_t programsPerSM = 0;
};

/// paramDivisibility with the kernel's own promises (ir::Kernel::paramMultiples) added,
/// the larger multiple where both speak of one parameter.
std::vector<std::pair<unsigned, int64_t>> effectiveDivisibility(const ir::Kernel &kernel,
                                                                const CodegenOptions &options);

struct CodegenResult {
  std::string entry;           ///< symbol of the kernel entry point in ptx / spirv
  std::string llvmIR;          ///< the optimized LLVM module, as text
  std::string ptx;             ///< sm_* targets: PTX text
  std::vector<uint8_t> spirv;  ///< spirv64: the SPIR-V binary module
  std::string spirvAsm;        ///< spirv64: its assembly text (when asked for)
  int64_t sharedBytes = 0;     ///< shared (local) memory per program, in bytes
  int64_t numThreads = 0;      ///< threads per program: num_warps * 32
};

/// Lowers `kernel` (one kernel of `module`) for `target`. Constructs the code generator
/// does not support are reported as located diagnostics (E0109) and nullopt returned;
/// an internal inconsistency (an LLVM module that fails verification) is a compiler
/// bug and raised as an internal compiler error.
std::optional<CodegenResult> generate(const ir::Module &module, const ir::Kernel &kernel,
                                      Target target, DiagnosticEngine &diags,
                                      const CodegenOptions &options = {});

/// The persistent kernel of graph `graph` (docs/graphs.md, "The persistent kernel"):
/// one kernel whose programs, the workers, claim the tasks of a launch table in order
/// (support/TaskTable.h), wait for the counter their launch depends on, run the task as
/// the kernel `kinds[kind]` inlined with the task's program id, and count it done. A
/// wait that outlasts the timeout stops every worker and leaves an error record. Every
/// kind must have the same num_warps, and none a split grid. NVPTX targets only; the
/// result's entry is `<graph>_persistent`.
/// A kernel's (or graph's) name as its PTX / SPIR-V entry symbol: characters other than
/// letters, digits and `_` become `_`, and a leading digit gets a `k_` prefix.
std::string entrySymbol(const std::string &name);

/// The 64-bit words of one launch record of the megakernel of `kinds`
/// (support/TaskTable.h): the header and the most parameters any kind takes, twice that
/// when `checked` (the arguments' extents).
unsigned taskRecordWords(const std::vector<const ir::Kernel *> &kinds, bool checked);

/// `unaligned[k]`, where given and true, compiles kind k without assuming 16-byte
/// aligned pointers (some launch passes it a view that starts off such a boundary).
std::optional<CodegenResult> generateMegakernel(const ir::Module &module, const ir::Kernel &graph,
                                                const std::vector<const ir::Kernel *> &kinds, Target target,
                                                DiagnosticEngine &diags, const CodegenOptions &options = {},
                                                const std::vector<bool> &unaligned = {});

} // namespace kiln::codegen
