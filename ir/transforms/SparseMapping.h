//===- SparseMapping.h - Row-wise or block-wise, for a blocks() loop -*- C++ -*-===//
//
// A fused chain over `for kb in blocks(mask, rb)` runs either row-wise — one program
// walks its block row — or block-wise: the row's non-empty blocks are shared among S
// programs whose partial states merge, the multi-segment reduction of
// SplitReduction.cpp (STOF's two mappings of sparse attention). Which one is faster
// depends on how many blocks the rows have and how unevenly, against how many programs
// the grid has for the processors. This is the analytical model that chooses, from what
// is known when compiling: the mask itself when the caller has it (`dslc run`, the
// autotuner), else nothing, and then a row-wise mapping.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/BlockMask.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::ir {

enum class SparseMapping { Auto, Row, Block };
/// "auto", "row", "block".
const char *sparseMappingName(SparseMapping m);
std::optional<SparseMapping> parseSparseMapping(std::string_view text);

/// What PipelineOptions carries for blocks() loops.
struct SparseMappingOptions {
  SparseMapping mapping = SparseMapping::Auto;
  /// Block-wise: segments per block row; 0 lets the model choose.
  int64_t segments = 0;
  /// The kernel's masks when known when compiling (one profile for all: kernels take
  /// one mask in practice).
  std::optional<BlockMaskStats> mask;
};

struct SparseMappingInputs {
  SparseMappingOptions options;
  std::optional<int64_t> programs; ///< of the grid, when known
  int64_t processors = 132;
};

struct SparseMappingChoice {
  int64_t segments = 1; ///< 1: row-wise
  std::string why;      ///< for --explain-sparsity and --explain-fusion
};

/// The model: the time of a mapping is the larger of its critical path — the longest
/// block row's share, plus a merge of the partial states when split — and the total
/// work spread over the processors; block-wise with S segments is chosen when it beats
/// row-wise by more than a tenth, S the power of two from 2 to 64 that does best.
SparseMappingChoice chooseSparseMapping(const SparseMappingInputs &inputs);

} // namespace kiln::ir
