//===- BlockMask.h - The block-sparse mask a block_mask parameter receives -*- C++ -*-===//
//
// A `block_mask<BM, BN>` kernel parameter (LANGUAGE.md, "Sparsity") is a pattern over a
// [rows, cols] element grid cut into BM x BN blocks, each *empty* (never visited), *full*
// (every element kept) or *partial* (an element bitmap says which are kept). This header
// is the one description of how such a mask is stored, shared by everything that builds
// one (the launchers, the runtime's C and C++ API, the test runners) and by the compiler,
// whose lowering reads it. It depends on nothing but the standard library.
//
// Storage: two levels, as in STOF and FlexAttention, with the block level in one list
// per block row so that a loop visits the row's blocks in ascending column order:
//
//   rowStart[numBlockRows() + 1]   block row rb owns entries rowStart[rb] .. rowStart[rb+1]-1
//   blocks[2 * entries]            entry e: blocks[2e] = its column block (ascending within
//                                  the row), blocks[2e + 1] = its bitmap slot, or -1 when
//                                  the block is full
//   bitmaps[slots * wordsPerBlock()]  slot s: element (r, c) of the block is bit
//                                  (r * BN + c) % 32 of word s * wordsPerBlock() + (r * BN + c) / 32
//
// A block that reaches past `rows` or `cols` holds elements that are not in the grid:
// they are never kept, so such a block is partial (or empty) even where every element in
// the grid is kept. Every array holds at least one element (a kernel buffer is never
// empty): a mask with no entries pads `blocks` with one unused pair of zeros, and a mask
// with no partial block pads `bitmaps` with one unused zero word.
//
// The kernel sees the mask as five runtime parameters, in this order, in place of the
// block_mask parameter: rows (i32), cols (i32), rowStart (*i32), blocks (*i32),
// bitmaps (*u32) — named NAME.rows, NAME.cols, NAME.row_start, NAME.blocks, NAME.bitmaps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln {

/// The runtime parameters a block_mask parameter becomes, in order.
inline constexpr unsigned kBlockMaskParams = 5;
/// Their name suffixes: NAME + suffix.
inline constexpr const char *kBlockMaskParamSuffixes[kBlockMaskParams] = {".rows", ".cols", ".row_start",
                                                                          ".blocks", ".bitmaps"};

/// Block sizes a block_mask may have: powers of two from 1 to 256 on each side (the
/// compiler refuses others when it checks the parameter's type).
bool isValidMaskBlockSize(int64_t size);

/// An extent that a `block_mask<BM, BN, ROWS, COLS>` parameter declares: a constant, or
/// the value of the kernel's integer runtime parameter `param`. The launchers and the
/// runtime refuse a mask whose extent differs from it.
struct BlockMaskExtent {
  int64_t value = 0; ///< the constant, when param < 0
  int32_t param = -1;

  bool operator==(const BlockMaskExtent &) const = default;
};
/// The declared rows, then columns.
using BlockMaskExtents = std::array<BlockMaskExtent, 2>;

struct BlockMaskLayout {
  int32_t rows = 0, cols = 0;           ///< element extents
  int32_t blockRows = 0, blockCols = 0; ///< BM, BN
  std::vector<int32_t> rowStart;        ///< numBlockRows() + 1 offsets into the entries
  std::vector<int32_t> blocks;          ///< two words per entry: column block, bitmap slot or -1
  std::vector<uint32_t> bitmaps;        ///< wordsPerBlock() words per partial block

  int32_t numBlockRows() const { return (rows + blockRows - 1) / blockRows; }
  int32_t numBlockCols() const { return (cols + blockCols - 1) / blockCols; }
  int32_t wordsPerBlock() const { return (blockRows * blockCols + 31) / 32; }
  /// Non-empty blocks in all (the padding word pair excluded).
  int64_t numEntries() const { return rowStart.empty() ? 0 : rowStart.back(); }

  /// Whether element (r, c) of the grid is kept (false outside it).
  bool kept(int64_t r, int64_t c) const;
};

/// Counts that say how sparse a mask is and how evenly: what --explain-sparsity prints
/// and the mapping cost model reads.
struct BlockMaskStats {
  int64_t blockRows = 0, blockCols = 0; ///< of the block grid
  int64_t full = 0, partial = 0, empty = 0;
  int64_t keptElements = 0;   ///< kept elements of the grid
  int64_t maxRowBlocks = 0;   ///< the most non-empty blocks of any block row
  int64_t emptyRows = 0;      ///< block rows with no block at all
  /// Non-empty blocks over all blocks of the grid.
  double blockDensity() const;
  /// Kept elements over rows * cols.
  double elementDensity(int64_t rows, int64_t cols) const;
  /// maxRowBlocks over the mean number of non-empty blocks per block row (1: even).
  double rowImbalance() const;
};
BlockMaskStats blockMaskStats(const BlockMaskLayout &mask);

/// A stable 64-bit digest of the mask's content (extents, block sizes and the three
/// arrays), as lowercase hex: part of the key of tuning results cached on disk.
std::string blockMaskDigest(const BlockMaskLayout &mask);

/// Checks the block level of `mask` as a kernel reads it, for arrays built elsewhere (on
/// the device, by the passes of stdlib/block_mask_build.kiln): extents and block sizes in
/// range, numBlockRows() + 1 row offsets from 0 that never decrease, 2 * max(1, entries)
/// words of `blocks` at least, columns inside the grid and ascending within each row,
/// slots that are -1 or name one of the `bitmapWords` / wordsPerBlock() bitmaps, and no
/// full block (-1) reaching past the grid's edge.
/// `mask.bitmaps` is not read. Returns false and sets `error`, naming the first
/// offending index, otherwise.
bool checkBlockMaskIndex(const BlockMaskLayout &mask, int64_t bitmapWords, std::string &error);

/// After checkBlockMaskIndex, with `mask.bitmaps` holding every slot an entry names:
/// whether the bitmaps of the blocks that reach past the grid keep nothing there (a
/// kernel relies on it for its bounds). Sets `error`, naming the block and element.
bool checkBlockMaskBitmaps(const BlockMaskLayout &mask, std::string &error);

/// Builds the mask from a dense row-major [rows, cols] array of element flags (one byte
/// each, nonzero = kept). Returns nullopt and sets `error` (a sentence without a trailing
/// period) when the extents or block sizes are out of range (extents from 1 to 2^30,
/// block sizes by isValidMaskBlockSize, fewer than 2^31 array words).
std::optional<BlockMaskLayout> blockMaskFromDense(std::span<const uint8_t> kept, int64_t rows, int64_t cols,
                                                  int64_t blockRows, int64_t blockCols, std::string &error);

/// Builds the mask from an element predicate, called once per element of the grid.
std::optional<BlockMaskLayout> blockMaskFromPredicate(const std::function<bool(int32_t, int32_t)> &keep,
                                                      int64_t rows, int64_t cols, int64_t blockRows,
                                                      int64_t blockCols, std::string &error);

/// Builds the mask from BSR (block compressed sparse row) arrays: `rowPtr` of
/// numBlockRows + 1 non-decreasing offsets from 0 to the number of blocks, `colIndices`
/// strictly ascending within each block row and inside the block grid, and optionally
/// `blockData`, a [blocks, BM, BN] array of element flags (absent: every listed block is
/// kept whole, cut at the grid's edge). A listed block whose data keeps nothing is
/// dropped. Returns nullopt and sets `error`, naming the first offending index, when the
/// arrays break these rules.
std::optional<BlockMaskLayout> blockMaskFromBsr(std::span<const int64_t> rowPtr,
                                                std::span<const int64_t> colIndices,
                                                std::optional<std::span<const uint8_t>> blockData, int64_t rows,
                                                int64_t cols, int64_t blockRows, int64_t blockCols,
                                                std::string &error);

} // namespace kiln
