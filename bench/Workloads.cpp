//===- Workloads.cpp - The benchmark workloads ----------------------------===//
//
// The sizes are those of the performance targets (docs/benchmarks.md): every input is
// larger than the H200's L2 cache or, where it is not, the harness flushes the cache
// before each timed launch. Each problem is run in a few configurations, as an
// autotuner would try them; the report names the configuration of every row.
//
//===----------------------------------------------------------------------===//
#include "bench/Workloads.h"

namespace kiln::bench {

std::string Workload::config() const {
  std::string s = kernel;
  for (const auto &[name, value] : defines)
    s += " " + name + "=" + value;
  if (numWarps > 0)
    s += " warps=" + std::to_string(numWarps);
  if (numStages > 0)
    s += " stages=" + std::to_string(numStages);
  if (segments > 0)
    s += " segments=" + std::to_string(segments);
  return s;
}

static Workload vectorAdd(int64_t block, int64_t warps) {
  Workload w;
  w.kind = WorkloadKind::VectorAdd;
  w.label = "vector add f32 2^28";
  w.rows = int64_t(1) << 28;
  w.source = "examples/vector_add.kiln";
  w.kernel = "vector_add";
  w.defines = {{"BLOCK", std::to_string(block)}};
  w.numWarps = warps;
  w.divisibility = {{"n", 16}};
  w.name = "vector_add_b" + std::to_string(block) + "_w" + std::to_string(warps);
  return w;
}

static Workload rowwise(WorkloadKind kind, int64_t rows, int64_t cols, int64_t warps,
                        const std::string &kernel) {
  const bool softmax = kind == WorkloadKind::Softmax;
  const char *problem = softmax ? "softmax" : kind == WorkloadKind::LayerNorm ? "layernorm" : "rmsnorm";
  Workload w;
  w.kind = kind;
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  w.label = std::string(problem) + " bf16 " + shape;
  w.rows = rows;
  w.cols = cols;
  w.source = "bench/kernels/" + std::string(problem) + "_bf16.kiln";
  w.kernel = kernel;
  w.defines = {{"BLOCK", std::to_string(cols)}};
  w.numWarps = warps;
  if (softmax)
    w.divisibility = {{"n_cols", 16}, {"row_stride", 16}};
  else
    w.divisibility = {{"n_cols", 16}};
  w.name = w.kernel + "_" + shape + "_w" + std::to_string(warps);
  return w;
}

/// `w` walking each row `block` columns at a time instead of in one block.
static Workload chunked(Workload w, int64_t block) {
  w.defines = {{"BLOCK", std::to_string(block)}};
  w.name += "_b" + std::to_string(block);
  return w;
}

/// The three-loop softmax: fused by the compiler into a statistics pass and an output
/// pass, or, when BLOCK covers the row, one pass that reads the row once.
static Workload softmaxChain(int64_t rows, int64_t cols, int64_t block, int64_t warps,
                             const std::string &kernel = "softmax_chain_bf16") {
  return chunked(rowwise(WorkloadKind::Softmax, rows, cols, warps, kernel), block);
}

/// The three-loop softmax with the row length a const: the cost model sees the range.
static Workload softmaxRows(int64_t rows, int64_t cols, int64_t block, int64_t warps) {
  Workload w = softmaxChain(rows, cols, block, warps, "softmax_rows_bf16_exp2");
  w.defines.push_back({"N", std::to_string(cols)});
  w.divisibility = {{"row_stride", 16}};
  w.constCols = true;
  return w;
}

/// `w` with its chain split over `segments` programs a row (--reduction-split): on
/// sm_90 one thread-block cluster whose programs each hold a block of the row.
static Workload splitRows(Workload w, int64_t segments) {
  w.segments = segments;
  w.name += "_s" + std::to_string(segments);
  return w;
}

static Workload matmul(int64_t bm, int64_t bn, int64_t bk, int64_t warps, int64_t stages,
                       int64_t size = 4096) {
  Workload w;
  w.kind = WorkloadKind::Matmul;
  w.label = "matmul bf16 " + std::to_string(size) + "^3";
  w.rows = w.cols = w.depth = size;
  w.source = "bench/kernels/matmul_bf16.kiln";
  w.kernel = "matmul_bf16";
  w.defines = {{"BM", std::to_string(bm)}, {"BN", std::to_string(bn)}, {"BK", std::to_string(bk)}};
  w.numWarps = warps;
  w.numStages = stages;
  w.divisibility = {{"M", 16}, {"N", 16}, {"K", 16}};
  w.name = "matmul_bf16_" + std::to_string(size) + "_" + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
           std::to_string(bk) + "_w" + std::to_string(warps) + "_s" + std::to_string(stages);
  return w;
}

/// Attention over batch 4 x 32 heads of 4096 queries and keys, head dimension 128, as
/// FlashAttention's benchmarks size it: the three-loop kernel, fused by the compiler.
/// `stages` 0 keeps the kernel's own num_stages (3: as many buffers as fit); the keys
/// and values are streamed with cp.async when the keys are loaded by rows
/// (docs/codegen.md).
static Workload attention(bool causal, int64_t bm, int64_t bn, int64_t warps,
                          bool keysByRow = false, bool exp2 = true, int64_t stages = 0,
                          int64_t d = 128) {
  Workload w;
  w.kind = WorkloadKind::Attention;
  w.label = std::string("attention bf16 ") + (causal ? "causal " : "") + "4x32x4096x128";
  w.rows = 4096;
  w.cols = d;
  w.depth = 4 * 32;
  w.source = "bench/kernels/attention_bf16.kiln";
  w.kernel = "attention_bf16";
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  w.defines = {{"D", std::to_string(d)}, {"BM", std::to_string(bm)},    {"BN", std::to_string(bn)},
               {"CAUSAL", flag(causal)}, {"EXP2", flag(exp2)}, {"KEYS_BY_ROW", flag(keysByRow)}};
  w.numWarps = warps;
  w.numStages = stages;
  w.divisibility = {{"seq", 16}};
  w.name = std::string("attention_bf16") + (causal ? "_causal" : "") + "_" + std::to_string(bm) + "x" +
           std::to_string(bn) + "_w" + std::to_string(warps) + (keysByRow ? "_krows" : "") +
           (exp2 ? "" : "_exp") + (stages ? "_s" + std::to_string(stages) : "") +
           (d != 128 ? "_d" + std::to_string(d) : "");
  return w;
}

/// Per-token quantization of bf16 16384x4096 to f8e4m3 (stdlib/fp8_quant.kiln, the
/// absmax loop and the cast loop): one block per row reads the row once.
static Workload fp8Quant(int64_t block, int64_t warps) {
  Workload w;
  w.kind = WorkloadKind::Fp8Quant;
  w.label = "fp8 e4m3 per-token quant bf16 16384x4096";
  w.rows = 16384;
  w.cols = 4096;
  w.source = "stdlib/fp8_quant.kiln";
  w.kernel = "quant_per_token";
  w.defines = {{"BLOCK", std::to_string(block)}};
  w.numWarps = warps;
  w.divisibility = {{"n_cols", 16}};
  w.name = "fp8_quant_16384x4096_w" + std::to_string(warps) + (block == w.cols ? "" : "_b" + std::to_string(block));
  return w;
}

/// MoE routing of 16384 tokens over `experts` experts, top 8: the stdlib kernel (`topk`
/// and `argtopk`, each a sort of the token's experts) or the top 8 taken by rounds of
/// `argmax` (bench/kernels/moe_routing_f32.kiln); `bt` tokens per program.
static Workload moeRouting(int64_t experts, bool byRounds, int64_t bt, int64_t warps) {
  Workload w;
  w.kind = WorkloadKind::MoeRouting;
  w.label = "moe routing f32 16384x" + std::to_string(experts) + " top8";
  w.rows = 16384;
  w.cols = experts;
  w.depth = 8;
  w.source = byRounds ? "bench/kernels/moe_routing_f32.kiln" : "stdlib/moe_routing.kiln";
  w.kernel = byRounds ? "route_by_rounds" : "route";
  w.defines = {{"BT", std::to_string(bt)}, {"BE", std::to_string(experts)}, {"K", "8"}};
  w.numWarps = warps;
  w.divisibility = {{"n_experts", 16}};
  w.name = std::string(byRounds ? "moe_rounds" : "moe_route") + "_e" + std::to_string(experts) + "_bt" +
           std::to_string(bt) + "_w" + std::to_string(warps);
  return w;
}

/// Decoding attention, batch 8 x 32 heads, one query each against 32768 cached keys
/// and values of dimension 128: the three-loop kernel, fused into one pass (one program
/// per head walks its whole cache).
static Workload decodeAttention(int64_t bn, int64_t warps, bool keyRows, int64_t segments = 0) {
  Workload w;
  w.kind = WorkloadKind::DecodeAttention;
  w.label = "decode attention bf16 8x32x32768x128";
  w.rows = 32768;
  w.cols = 128;
  w.depth = 8 * 32;
  w.source = "bench/kernels/decode_attention_bf16.kiln";
  w.kernel = "decode_attention_bf16";
  w.defines = {{"D", "128"}, {"BN", std::to_string(bn)}, {"KEY_ROWS", keyRows ? "true" : "false"}};
  w.numWarps = warps;
  w.divisibility = {{"seq", 16}};
  w.segments = segments;
  w.name = "decode_bf16_bn" + std::to_string(bn) + "_w" + std::to_string(warps) + (keyRows ? "_rows" : "") +
           (segments > 0 ? "_s" + std::to_string(segments) : "");
  return w;
}

/// `table` and then the attention configurations, non-causal and causal. wgmma takes a
/// dot whose rows are 16 per warp (BM 64 with 4 warps, 128 with 8).
static std::vector<Workload> withAttention(std::vector<Workload> table) {
  for (bool causal : {false, true}) {
    table.push_back(attention(causal, 128, 64, 8));
    table.push_back(attention(causal, 128, 64, 8, /*keysByRow=*/true, true, /*stages=*/1));
    table.push_back(attention(causal, 128, 64, 8, /*keysByRow=*/true));
    table.push_back(attention(causal, 128, 64, 8, /*keysByRow=*/true, /*exp2=*/false));
    table.push_back(attention(causal, 128, 64, 8, true, true, 2));
    table.push_back(attention(causal, 64, 64, 4, true, true, 2));
    table.push_back(attention(causal, 128, 32, 8, true, true, 2));
    table.push_back(attention(causal, 128, 128, 8, /*keysByRow=*/true, true, /*stages=*/1));
    table.push_back(attention(causal, 128, 128, 8, /*keysByRow=*/true));
    table.push_back(attention(causal, 128, 32, 8, /*keysByRow=*/true));
    table.push_back(attention(causal, 64, 64, 4, /*keysByRow=*/true));
    table.push_back(attention(causal, 64, 128, 4, /*keysByRow=*/true));
    table.push_back(attention(causal, 64, 32, 4, /*keysByRow=*/true));
  }
  return table;
}

const std::vector<Workload> &workloads() {
  using K = WorkloadKind;
  static const std::vector<Workload> table = {
      vectorAdd(1024, 4),
      vectorAdd(4096, 4),
      vectorAdd(4096, 8),
      // A program is one row: how many rows an SM holds at once (registers, warps, the
      // limit of 32 programs) sets how much memory traffic is in flight, hence the
      // range of warps.
      rowwise(K::Softmax, 16384, 1024, 2, "softmax_bf16"),
      rowwise(K::Softmax, 16384, 1024, 4, "softmax_bf16"),
      rowwise(K::Softmax, 16384, 1024, 1, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 16384, 1024, 2, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 16384, 1024, 4, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 4096, 8192, 8, "softmax_bf16"),
      rowwise(K::Softmax, 4096, 8192, 16, "softmax_bf16"),
      rowwise(K::Softmax, 4096, 8192, 4, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 4096, 8192, 8, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 4096, 8192, 16, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 1024, 32768, 32, "softmax_bf16"),
      rowwise(K::Softmax, 1024, 32768, 16, "softmax_bf16_exp2"),
      rowwise(K::Softmax, 1024, 32768, 32, "softmax_bf16_exp2"),
      softmaxChain(16384, 1024, 1024, 2),
      softmaxChain(16384, 1024, 1024, 4),
      softmaxChain(4096, 8192, 8192, 8),
      softmaxChain(4096, 8192, 2048, 4),
      softmaxChain(1024, 32768, 32768, 16), // BLOCK = row: the one-block version
      softmaxChain(1024, 32768, 32768, 32),
      softmaxChain(1024, 32768, 8192, 8),
      softmaxChain(1024, 32768, 4096, 8),
      // Rows of two blocks, which the program holds on chip (OnChipPath.cpp: 8 elements
      // a thread): read once, like BLOCK = row.
      softmaxChain(16384, 1024, 512, 4),
      softmaxChain(4096, 8192, 4096, 32),
      // The three loops with `softmax_bf16_exp2`'s arithmetic, BLOCK = row.
      softmaxChain(16384, 1024, 1024, 2, "softmax_chain_bf16_exp2"),
      softmaxChain(4096, 8192, 8192, 8, "softmax_chain_bf16_exp2"),
      softmaxChain(1024, 32768, 32768, 16, "softmax_chain_bf16_exp2"),
      // Rows split over a thread-block cluster, each program holding one block: more,
      // smaller programs per row than one program per row allows.
      // The row length a const: the cost model splits 1024x32768 over clusters of 4 (blocks
      // of 8192) and 8 (4096), and 4096x8192 in blocks of 4096 over 2.
      softmaxRows(1024, 32768, 8192, 8),
      softmaxRows(1024, 32768, 4096, 4),
      softmaxRows(4096, 8192, 4096, 8),
      softmaxRows(4096, 8192, 8192, 8),
      softmaxRows(16384, 1024, 1024, 2),
      softmaxChain(1024, 32768, 8192, 8, "softmax_chain_bf16_exp2"), // the same BLOCKs unsplit
      softmaxChain(4096, 8192, 4096, 8, "softmax_chain_bf16_exp2"),
      splitRows(softmaxChain(1024, 32768, 8192, 8, "softmax_chain_bf16_exp2"), 4),
      splitRows(softmaxChain(1024, 32768, 8192, 16, "softmax_chain_bf16_exp2"), 4),
      splitRows(softmaxChain(1024, 32768, 4096, 4, "softmax_chain_bf16_exp2"), 8),
      splitRows(softmaxChain(1024, 32768, 4096, 8, "softmax_chain_bf16_exp2"), 8),
      splitRows(softmaxChain(4096, 8192, 4096, 8, "softmax_chain_bf16_exp2"), 2),
      splitRows(softmaxChain(4096, 8192, 2048, 4, "softmax_chain_bf16_exp2"), 4),
      splitRows(softmaxChain(16384, 1024, 512, 2, "softmax_chain_bf16_exp2"), 2),
      rowwise(K::LayerNorm, 16384, 4096, 4, "layernorm_bf16"),
      rowwise(K::LayerNorm, 16384, 4096, 8, "layernorm_bf16"),
      rowwise(K::LayerNorm, 16384, 4096, 16, "layernorm_bf16"),
      // The three-loop layernorm: one block per row (read once), and four blocks per
      // row (a Welford pass, then the output pass).
      rowwise(K::LayerNorm, 16384, 4096, 4, "layernorm_chain_bf16"),
      rowwise(K::LayerNorm, 16384, 4096, 8, "layernorm_chain_bf16"),
      chunked(rowwise(K::LayerNorm, 16384, 4096, 8, "layernorm_chain_bf16"), 1024),
      // The two-loop RMS norm: one block per row (read once), and four blocks per row.
      rowwise(K::RMSNorm, 16384, 4096, 4, "rmsnorm_chain_bf16"),
      rowwise(K::RMSNorm, 16384, 4096, 8, "rmsnorm_chain_bf16"),
      chunked(rowwise(K::RMSNorm, 16384, 4096, 8, "rmsnorm_chain_bf16"), 1024),
      matmul(128, 128, 32, 8, 3),
      matmul(128, 128, 32, 8, 4),
      matmul(128, 128, 64, 8, 3),
      matmul(128, 256, 32, 8, 3),
      matmul(128, 256, 64, 8, 3),
      matmul(64, 64, 32, 4, 3),
      // Without streamed operands (num_stages 1), for comparison.
      matmul(128, 128, 32, 8, 1),
      // Small tiles, for the check more than the time: one column of 16x8 tiles per
      // warp, and a product with fewer tiles than warps.
      matmul(64, 8, 16, 4, 3, 1024),
      matmul(16, 8, 16, 4, 3, 1024),
      // Per-token fp8 quantization: a row per program, read once when BLOCK covers it.
      fp8Quant(4096, 4),
      fp8Quant(4096, 8),
      fp8Quant(4096, 16),
      fp8Quant(1024, 4),
      // MoE routing: topk / argtopk run as rounds of a maximum over about eight experts
      // per lane; how many tokens a program routes sets how many lines its lanes hold at
      // once. The rounds written out in Kiln (route_by_rounds) are kept for comparison.
      moeRouting(64, false, 16, 4),
      moeRouting(64, false, 32, 4),
      moeRouting(64, false, 32, 8),
      moeRouting(64, false, 64, 8),
      moeRouting(64, false, 8, 2),
      moeRouting(64, true, 16, 2),
      moeRouting(64, false, 4, 1),
      moeRouting(256, false, 8, 8),
      moeRouting(256, false, 16, 8),
      moeRouting(256, false, 4, 4),
      moeRouting(256, false, 2, 2),
      moeRouting(256, true, 4, 1),
      moeRouting(256, false, 1, 1),
      moeRouting(256, false, 2, 1),
      // Decoding attention: 256 programs, one per head, so the bytes in flight per
      // program (BN keys of K and V) set the bandwidth.
      decodeAttention(32, 4, false),
      decodeAttention(64, 4, false),
      decodeAttention(64, 8, false),
      decodeAttention(128, 8, false),
      decodeAttention(128, 16, false),
      decodeAttention(32, 4, true),
      decodeAttention(64, 8, true),
      decodeAttention(128, 16, true),
      // Flash-decoding: the keys of a head split over S programs (the multi-segment
      // strategy); for this grid of 256 programs the cost model picks S = 2.
      decodeAttention(64, 8, true, 2),
      decodeAttention(64, 8, true, 4),
      decodeAttention(64, 8, true, 8),
      decodeAttention(64, 4, false, 4),
      decodeAttention(128, 8, false, 4),
      decodeAttention(128, 8, false, 8),
      decodeAttention(128, 8, false, 16),
  };
  static const std::vector<Workload> all = withAttention(table);
  return all;
}

} // namespace kiln::bench
