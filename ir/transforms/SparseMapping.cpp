//===- SparseMapping.cpp - The cost model of row-wise and block-wise mapping ---===//
//
// Work is counted in blocks visited. Row-wise, program r visits its row's n_r blocks; the
// programs run on P processors, so the time is at least the longest row (M blocks) and
// at least the total (N blocks times the heads) over P. Block-wise with S segments a
// program visits ceil(n_r / S) blocks, writes its state and the last of a row merges S
// states: the critical path is ceil(M / S) + the merge, and the total grows by the
// states written and read. A merge of S states is priced at kMergeBlocks per state: a
// state is the size of one block's output (BM x D values), read once, with no product.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/SparseMapping.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kiln::ir {

namespace {
/// A state written and merged, in blocks visited (a store and a load of BM x D values
/// against a block's two products).
constexpr double kMergeBlocks = 0.25;
/// Block-wise must beat row-wise by this factor: it costs a workspace and a second pass.
constexpr double kRequiredGain = 1.1;
constexpr int64_t kMaxSparseSegments = 64;

std::string fixed(double v) {
  std::ostringstream os;
  os.precision(v < 10 ? 2 : 0);
  os << std::fixed << v;
  return os.str();
}
} // namespace

const char *sparseMappingName(SparseMapping m) {
  switch (m) {
  case SparseMapping::Auto: return "auto";
  case SparseMapping::Row: return "row";
  case SparseMapping::Block: return "block";
  }
  return "auto";
}

std::optional<SparseMapping> parseSparseMapping(std::string_view text) {
  for (SparseMapping m : {SparseMapping::Auto, SparseMapping::Row, SparseMapping::Block})
    if (text == sparseMappingName(m))
      return m;
  return std::nullopt;
}

SparseMappingChoice chooseSparseMapping(const SparseMappingInputs &in) {
  const SparseMappingOptions &o = in.options;
  if (o.mapping == SparseMapping::Row)
    return {1, "row-wise, as --sparse-mapping=row asks"};
  const int64_t processors = std::max<int64_t>(in.processors, 1);
  if (!o.mask) {
    if (o.mapping == SparseMapping::Block) {
      int64_t s = o.segments > 1 ? std::min(o.segments, kMaxSparseSegments) : 4;
      return {s, "block-wise, " + std::to_string(s) + " segments per block row, as --sparse-mapping=block asks" +
                     (o.segments > 1 ? std::string() : " (the mask is not known when compiling: 4 segments)")};
    }
    return {1, "row-wise: the mask is not known when compiling (the model weighs the longest block row against "
               "the work spread over the processors: dslc run, which has the mask, or --mask NAME=FILE.npy or "
               "NAME=PRED(ROWS,COLS) gives it)"};
  }
  const BlockMaskStats &m = *o.mask;
  const int64_t nonEmpty = m.full + m.partial;
  const int64_t rows = std::max<int64_t>(m.blockRows, 1);
  // Programs of the grid per block row: the heads (or batches) the grid's other axes run.
  const double heads = in.programs ? std::max(1.0, double(*in.programs) / double(rows)) : 1.0;
  const double total = double(nonEmpty) * heads;
  const double mean = double(nonEmpty) / double(rows);
  auto timeOf = [&](int64_t s) {
    if (s == 1)
      return std::max(double(m.maxRowBlocks), total / double(processors));
    const double merge = kMergeBlocks * double(s);
    const double path = std::ceil(double(m.maxRowBlocks) / double(s)) + merge;
    const double work = total + double(rows) * heads * merge;
    return std::max(path, work / double(processors));
  };
  const double rowTime = timeOf(1);
  int64_t best = 2;
  for (int64_t s = 4; s <= kMaxSparseSegments; s *= 2)
    if (timeOf(s) < timeOf(best))
      best = s;
  if (o.mapping == SparseMapping::Block && o.segments > 1)
    best = std::min(o.segments, kMaxSparseSegments);
  const std::string profile = std::to_string(nonEmpty) + " non-empty blocks of " +
                              std::to_string(m.blockRows * m.blockCols) + " (" + std::to_string(m.full) + " full, " +
                              std::to_string(m.partial) + " partial, " + std::to_string(m.empty) +
                              " empty; block density " + fixed(100 * m.blockDensity()) + "%), " + fixed(mean) +
                              " per block row on average and " +
                              std::to_string(m.maxRowBlocks) + " at most, " + fixed(heads * double(rows)) +
                              " programs for " + std::to_string(processors) + " processors";
  const double blockTime = timeOf(best);
  if (o.mapping == SparseMapping::Block)
    return {best, "block-wise, " + std::to_string(best) + " segments per block row, as --sparse-mapping=block asks (" +
                      profile + "; modelled " + fixed(rowTime / blockTime) + "x row-wise)"};
  if (rowTime > kRequiredGain * blockTime)
    return {best, "block-wise, " + std::to_string(best) + " segments per block row: " + profile +
                      "; the longest row bounds the row-wise time, and splitting it is modelled " +
                      fixed(rowTime / blockTime) + "x faster"};
  return {1, "row-wise: " + profile + "; splitting the rows would not pay for its merges (modelled " +
                 fixed(rowTime / blockTime) + "x)"};
}

} // namespace kiln::ir
