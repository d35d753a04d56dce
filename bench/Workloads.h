//===- Workloads.h - The benchmark workloads and how each is compiled -*- C++ -*-===//
//
// One table names every benchmark run: which Kiln kernel, at which sizes, with which
// const values, warps and divisibility specialization. kiln-bench-prepare compiles each
// entry to `<name>.kbin`; kiln-bench loads the same entries on the GPU machine, makes
// inputs, checks the results against a CPU reference and times them. Several entries
// may share a `label` (the same problem in different configurations); the report
// compares each against the peers measured for that label.
//
// Pure data: no compiler and no runtime types, so both tools link it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::bench {

/// What a workload computes; fixes its arguments, reference and figure of merit.
enum class WorkloadKind {
  VectorAdd,       ///< out = x + y, f32; bandwidth
  Softmax,         ///< row softmax, bf16; bandwidth
  LayerNorm,       ///< row layernorm with weight and bias, bf16; bandwidth
  RMSNorm,         ///< row RMS norm with a weight, bf16; bandwidth
  Matmul,          ///< c = a @ b, bf16 in and out, f32 accumulation; TFLOP/s
  Attention,       ///< softmax(q·kᵀ/√D)·v per head, bf16, f32 accumulation; TFLOP/s
  Fp8Quant,        ///< per-row absmax scale and f8e4m3 cast of bf16 rows; bandwidth
  MoeRouting,      ///< softmax over experts, top K, renormalized weights, f32 logits; time
  DecodeAttention, ///< one query per head against a bf16 KV cache; bandwidth on K and V
};

struct Workload {
  std::string name;  ///< unique; the bundle's file stem
  std::string label; ///< the problem, as the report and the peers name it
  WorkloadKind kind;
  /// Sizes: VectorAdd n = rows; Softmax/LayerNorm/RMSNorm/Fp8Quant rows x cols; Matmul
  /// M = rows, N = cols, K = depth; Attention and DecodeAttention sequence length = rows,
  /// head dimension = cols, batch·heads = depth; MoeRouting tokens = rows, experts =
  /// cols, experts picked per token = depth.
  int64_t rows = 1, cols = 1, depth = 1;
  std::string source; ///< Kiln file, relative to the repository root
  std::string kernel;
  std::vector<std::pair<std::string, std::string>> defines; ///< const parameters
  int64_t numWarps = 0;  ///< 0: the kernel's own @num_warps
  int64_t numStages = 0; ///< 0: the kernel's own @num_stages
  /// Segments a fused reduction chain is split into (--reduction-split); 0: one, as the
  /// pipeline does for a kernel compiled without its grid.
  int64_t segments = 0;
  /// Row-wise kernels: the row length is the const N (no `n_cols` argument).
  bool constCols = false;
  /// Integer parameters the launch guarantees to be multiples of a power of two.
  std::vector<std::pair<std::string, int64_t>> divisibility;

  /// "softmax_bf16 BLOCK=1024 warps=4": the kernel and its configuration, for the report.
  std::string config() const;
};

/// Every benchmark workload, in report order.
const std::vector<Workload> &workloads();

} // namespace kiln::bench
