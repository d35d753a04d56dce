//===- BlockMask.cpp - Building block masks and reading them back ---------===//
//
// Every way of building a mask (a dense array of flags, a predicate, BSR arrays) ends in
// the same two steps: pack the kept elements of a block into its bitmap, then classify
// the block by its bits (none set: empty, all BM * BN set: full, else partial) and
// append it to the layout (LayoutBuilder). Bits are only ever set for elements inside
// the grid, so a block that reaches past its edge can never count as full.
//
// The dense and predicate builders walk the grid one block row at a time and, inside it,
// element row by element row, so each element is read once and a dense array in memory
// order. The bitmaps of the block row's blocks are gathered in a scratch buffer of at
// most kScratchWords words; a wider block row is cut into strips of column blocks. What
// reads an element is a template argument, so the dense path compiles to plain loads
// (eight bytes at a time) and only the predicate path pays for a call per element.
//
// Padding (every array holds at least one element, since a kernel buffer is never
// empty): a mask with no entries gets the pair {0, 0} in `blocks`, and a mask with no
// partial block gets one zero word in `bitmaps`. Neither changes numEntries() (which
// reads rowStart) nor any slot number; the padding counts towards the 2^31 word limit.
//
//===----------------------------------------------------------------------===//
#include "support/BlockMask.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace kiln {

namespace {

constexpr int64_t kMaxExtent = int64_t(1) << 30;
/// All three arrays together hold at most this many words, so that any index into them
/// (and any offset in rowStart) fits an i32 in the kernel.
constexpr int64_t kMaxWords = std::numeric_limits<int32_t>::max();
/// The most scratch words the grid builders hold for one strip of a block row: 256 KiB,
/// about what a core's L2 cache keeps close.
constexpr int64_t kScratchWords = int64_t(1) << 16;

std::string countOf(int64_t n, const char *singular, const char *plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string tooManyWordsMessage() {
  return "the mask's arrays would hold 2^31 words or more; row_start, blocks and bitmaps together must stay "
         "below that so that 32-bit offsets reach every word";
}

/// Checks the parameters every builder shares.
bool checkGrid(int64_t rows, int64_t cols, int64_t blockRows, int64_t blockCols, std::string &error) {
  for (auto [extent, what] : {std::pair{rows, "rows"}, std::pair{cols, "columns"}}) {
    if (extent < 1) {
      error = "the mask has " + std::to_string(extent) + " " + what + "; it needs at least one";
      return false;
    }
    if (extent > kMaxExtent) {
      error = "the mask has " + std::to_string(extent) + " " + what + "; it may have at most " +
              std::to_string(kMaxExtent);
      return false;
    }
  }
  for (int64_t size : {blockRows, blockCols})
    if (!isValidMaskBlockSize(size)) {
      error = "block size " + std::to_string(size) + " is not a power of two from 1 to 256";
      return false;
    }
  return true;
}

/// A layout with its extents set and rowStart sized, but no entries yet.
BlockMaskLayout emptyLayout(int64_t rows, int64_t cols, int64_t blockRows, int64_t blockCols) {
  BlockMaskLayout m;
  m.rows = static_cast<int32_t>(rows);
  m.cols = static_cast<int32_t>(cols);
  m.blockRows = static_cast<int32_t>(blockRows);
  m.blockCols = static_cast<int32_t>(blockCols);
  m.rowStart.assign(static_cast<size_t>(m.numBlockRows()) + 1, 0);
  return m;
}

/// Appends classified blocks to a layout in order (block rows ascending, column blocks
/// ascending within each) and keeps the word count under kMaxWords as it goes, so that
/// a mask too large to index fails before it is fully allocated.
class LayoutBuilder {
public:
  explicit LayoutBuilder(BlockMaskLayout layout)
      : m_(std::move(layout)), wordsPerBlock_(m_.wordsPerBlock()),
        fullWord_(m_.blockRows * m_.blockCols >= 32 ? ~0u : (1u << (m_.blockRows * m_.blockCols)) - 1),
        words_(static_cast<int64_t>(m_.rowStart.size())) {}

  /// Classifies the block at column block `col` of the current block row by its
  /// bitmap (wordsPerBlock() words, only in-grid bits set) and appends it unless empty.
  bool add(int32_t col, const uint32_t *bitmap, std::string &error) {
    // Full means every bit of the block set: each word is fullWord_, so is their AND.
    uint32_t any = 0, all = ~0u;
    for (int32_t w = 0; w < wordsPerBlock_; ++w) {
      any |= bitmap[w];
      all &= bitmap[w];
    }
    if (any == 0)
      return true;
    const bool full = all == fullWord_;
    words_ += 2 + (full ? 0 : wordsPerBlock_);
    if (words_ > kMaxWords) {
      error = tooManyWordsMessage();
      return false;
    }
    m_.blocks.push_back(col);
    if (full) {
      m_.blocks.push_back(-1);
    } else {
      m_.blocks.push_back(static_cast<int32_t>(m_.bitmaps.size() / wordsPerBlock_));
      m_.bitmaps.insert(m_.bitmaps.end(), bitmap, bitmap + wordsPerBlock_);
    }
    return true;
  }

  /// Closes block row `row`: the entries added since the last call are its own.
  void endRow(int32_t row) { m_.rowStart[row + 1] = static_cast<int32_t>(m_.blocks.size() / 2); }

  /// Pads the arrays (see the file comment) and hands the layout over.
  std::optional<BlockMaskLayout> finish(std::string &error) {
    if (m_.blocks.empty())
      m_.blocks = {0, 0};
    if (m_.bitmaps.empty())
      m_.bitmaps = {0};
    if (int64_t(m_.rowStart.size() + m_.blocks.size() + m_.bitmaps.size()) > kMaxWords) {
      error = tooManyWordsMessage();
      return std::nullopt;
    }
    return std::move(m_);
  }

private:
  BlockMaskLayout m_;
  int32_t wordsPerBlock_;
  uint32_t fullWord_; ///< every word of a full block's bitmap
  int64_t words_; ///< in the three arrays so far, padding excluded
};

/// The BSR builder's way to fill a block, one row of it at a time (the grid builder
/// fills many blocks' rows at once instead).
/// Sets the bits of `w` elements of one row of a block, from bit `bitBase` on, in pieces
/// of `piece` = min(32, BN) elements that `pack(j, n)` returns as the low `n` bits of a
/// word (bit i for element j + i). BN is a power of two, so a piece never straddles two
/// words: with BN >= 32 every row starts on a word, and with BN < 32 a row lies within
/// one word.
template <typename Pack>
inline void fillRow(uint32_t *bitmap, int64_t bitBase, int32_t w, int32_t piece, Pack &&pack) {
  for (int32_t j = 0; j < w; j += piece) {
    const int64_t bit = bitBase + j;
    bitmap[bit >> 5] |= pack(j, std::min(piece, w - j)) << (bit & 31);
  }
}

/// Bit i set where byte i of `p[0..n)` is nonzero, n <= 32.
inline uint32_t packNonzeroBytes(const uint8_t *p, int32_t n) {
  uint32_t bits = 0;
  int32_t j = 0;
  if constexpr (std::endian::native == std::endian::little) {
    // Eight bytes at a time: the high bit of each byte of `t` says whether that byte is
    // nonzero, and the multiply gathers the eight high bits into the top byte.
    constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL, kHigh = 0x8080808080808080ULL;
    for (; j + 8 <= n; j += 8) {
      uint64_t x;
      std::memcpy(&x, p + j, 8);
      const uint64_t t = (((x & kLow7) + kLow7) | x) & kHigh;
      bits |= static_cast<uint32_t>(((t >> 7) * 0x0102040810204080ULL) >> 56) << j;
    }
  }
  for (; j < n; ++j)
    bits |= static_cast<uint32_t>(p[j] != 0) << j;
  return bits;
}

/// Builds the mask of a grid whose elements `pack(r, c, n)` reads, n <= 32 at a time
/// (bit i: element (r, c + i) is kept). The grid has been checked.
template <typename Pack>
std::optional<BlockMaskLayout> buildFromGrid(int64_t rows, int64_t cols, int64_t blockRows, int64_t blockCols,
                                             Pack &&pack, std::string &error) {
  LayoutBuilder builder(emptyLayout(rows, cols, blockRows, blockCols));
  const int32_t bm = static_cast<int32_t>(blockRows), bn = static_cast<int32_t>(blockCols);
  const int32_t nRows = static_cast<int32_t>(rows), nCols = static_cast<int32_t>(cols);
  const int32_t numBlockRows = (nRows + bm - 1) / bm, numBlockCols = (nCols + bn - 1) / bn;
  const int32_t wordsPerBlock = (bm * bn + 31) / 32;
  const int bnShift = std::countr_zero(static_cast<uint32_t>(bn));
  const uint32_t blockRowBits = bn >= 32 ? ~0u : (1u << bn) - 1;
  const int32_t stripBlocks =
      static_cast<int32_t>(std::clamp<int64_t>(kScratchWords / wordsPerBlock, 1, numBlockCols));
  std::vector<uint32_t> scratch(static_cast<size_t>(stripBlocks) * wordsPerBlock);

  for (int32_t rb = 0; rb < numBlockRows; ++rb) {
    const int32_t r0 = rb * bm, rEnd = std::min(nRows, r0 + bm);
    for (int32_t cb0 = 0; cb0 < numBlockCols; cb0 += stripBlocks) {
      const int32_t cb1 = std::min(numBlockCols, cb0 + stripBlocks);
      const int32_t cEnd = std::min(nCols, cb1 * bn);
      std::fill(scratch.begin(), scratch.end(), 0u);
      for (int32_t r = r0; r < rEnd; ++r) {
        // Where this row starts in the bitmap of each block of the strip.
        const int32_t rowBit = (r - r0) * bn;
        // Pieces of 32 elements start at a block's edge (BN >= 32) or cover 32 / BN
        // whole blocks (BN < 32), since BN is a power of two; a piece with nothing
        // kept costs one test.
        for (int32_t c = cb0 * bn; c < cEnd; c += 32) {
          uint32_t bits = pack(r, c, std::min(32, cEnd - c));
          if (bits == 0)
            continue;
          uint32_t *bitmap = scratch.data() + size_t((c >> bnShift) - cb0) * wordsPerBlock;
          if (bn >= 32) {
            bitmap[(rowBit + (c & (bn - 1))) >> 5] |= bits;
            continue;
          }
          // BN bits per block, each block's landing at the same place of its bitmap.
          uint32_t *word = bitmap + (rowBit >> 5);
          for (; bits != 0; bits >>= bn, word += wordsPerBlock)
            *word |= (bits & blockRowBits) << (rowBit & 31);
        }
      }
      for (int32_t cb = cb0; cb < cb1; ++cb)
        if (!builder.add(cb, scratch.data() + size_t(cb - cb0) * wordsPerBlock, error))
          return std::nullopt;
    }
    builder.endRow(rb);
  }
  return builder.finish(error);
}

} // namespace

bool isValidMaskBlockSize(int64_t size) { return size >= 1 && size <= 256 && (size & (size - 1)) == 0; }

bool BlockMaskLayout::kept(int64_t r, int64_t c) const {
  if (r < 0 || r >= rows || c < 0 || c >= cols || blockRows <= 0 || blockCols <= 0)
    return false;
  const int64_t rb = r / blockRows, cb = c / blockCols;
  if (rb + 1 >= static_cast<int64_t>(rowStart.size()))
    return false;
  // The row's entries are sorted by column block: binary search them.
  int64_t lo = rowStart[rb], hi = rowStart[rb + 1];
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (blocks[2 * mid] < cb)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == rowStart[rb + 1] || blocks[2 * lo] != cb)
    return false;
  const int32_t slot = blocks[2 * lo + 1];
  if (slot < 0)
    return true;
  const int64_t bit = (r % blockRows) * blockCols + c % blockCols;
  return (bitmaps[int64_t(slot) * wordsPerBlock() + bit / 32] >> (bit % 32)) & 1u;
}

double BlockMaskStats::blockDensity() const {
  const int64_t all = blockRows * blockCols;
  return all > 0 ? double(full + partial) / double(all) : 0.0;
}

double BlockMaskStats::elementDensity(int64_t rows, int64_t cols) const {
  return rows > 0 && cols > 0 ? double(keptElements) / (double(rows) * double(cols)) : 0.0;
}

double BlockMaskStats::rowImbalance() const {
  const int64_t nonEmpty = full + partial;
  if (nonEmpty == 0 || blockRows == 0)
    return 1.0;
  return double(maxRowBlocks) / (double(nonEmpty) / double(blockRows));
}

BlockMaskStats blockMaskStats(const BlockMaskLayout &mask) {
  BlockMaskStats s;
  if (mask.blockRows <= 0 || mask.blockCols <= 0 || mask.rows <= 0 || mask.cols <= 0)
    return s;
  s.blockRows = mask.numBlockRows();
  s.blockCols = mask.numBlockCols();
  const int64_t wordsPerBlock = mask.wordsPerBlock();
  const int64_t blockElements = int64_t(mask.blockRows) * mask.blockCols;
  for (int64_t rb = 0; rb < s.blockRows && rb + 1 < static_cast<int64_t>(mask.rowStart.size()); ++rb) {
    const int64_t begin = mask.rowStart[rb], end = mask.rowStart[rb + 1];
    s.maxRowBlocks = std::max(s.maxRowBlocks, end - begin);
    s.emptyRows += begin == end;
    for (int64_t e = begin; e < end; ++e) {
      const int32_t slot = mask.blocks[2 * e + 1];
      if (slot < 0) {
        ++s.full;
        s.keptElements += blockElements;
        continue;
      }
      ++s.partial;
      // Bits outside the grid are never set, so the bitmap's bits are the kept elements.
      for (int64_t w = 0; w < wordsPerBlock; ++w)
        s.keptElements += std::popcount(mask.bitmaps[slot * wordsPerBlock + w]);
    }
  }
  s.empty = s.blockRows * s.blockCols - s.full - s.partial;
  return s;
}

std::string blockMaskDigest(const BlockMaskLayout &mask) {
  // FNV-1a (64-bit) over: rows, cols, blockRows, blockCols as 4-byte little-endian
  // integers, then rowStart, blocks and bitmaps in that order, each as its length (an
  // 8-byte little-endian integer) followed by its elements (4-byte little-endian). The
  // lengths keep two different layouts from serializing to the same bytes. Digests are
  // stored on disk: this serialization must never change.
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto bytes = [&](uint64_t value, int n) {
    for (int i = 0; i < n; ++i) {
      hash ^= (value >> (8 * i)) & 0xFFu;
      hash *= 0x100000001b3ULL;
    }
  };
  for (int32_t v : {mask.rows, mask.cols, mask.blockRows, mask.blockCols})
    bytes(static_cast<uint32_t>(v), 4);
  auto array = [&](const auto &values) {
    bytes(values.size(), 8);
    for (auto v : values)
      bytes(static_cast<uint32_t>(v), 4);
  };
  array(mask.rowStart);
  array(mask.blocks);
  array(mask.bitmaps);
  static const char digits[] = "0123456789abcdef";
  std::string hex(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    hex[i] = digits[hash & 0xF];
  return hex;
}

bool checkBlockMaskIndex(const BlockMaskLayout &mask, int64_t bitmapWords, std::string &error) {
  if (!checkGrid(mask.rows, mask.cols, mask.blockRows, mask.blockCols, error))
    return false;
  const int32_t numBlockRows = mask.numBlockRows(), numBlockCols = mask.numBlockCols();
  if (static_cast<int64_t>(mask.rowStart.size()) != int64_t(numBlockRows) + 1) {
    error = "row_start has " + countOf(static_cast<int64_t>(mask.rowStart.size()), "entry", "entries") +
            "; a grid of " + countOf(numBlockRows, "block row", "block rows") + " needs " +
            std::to_string(int64_t(numBlockRows) + 1);
    return false;
  }
  if (mask.rowStart[0] != 0) {
    error = "row_start[0] = " + std::to_string(mask.rowStart[0]) + ": the row offsets must start at 0";
    return false;
  }
  for (size_t i = 1; i < mask.rowStart.size(); ++i)
    if (mask.rowStart[i] < mask.rowStart[i - 1]) {
      error = "row_start[" + std::to_string(i) + "] = " + std::to_string(mask.rowStart[i]) +
              " is less than row_start[" + std::to_string(i - 1) + "] = " + std::to_string(mask.rowStart[i - 1]) +
              ": the row offsets must not decrease";
      return false;
    }
  const int64_t entries = mask.rowStart.back();
  if (static_cast<int64_t>(mask.blocks.size()) < 2 * std::max<int64_t>(entries, 1)) {
    error = "blocks has " + countOf(static_cast<int64_t>(mask.blocks.size()), "word", "words") + "; " +
            countOf(entries, "entry", "entries") + " need " + std::to_string(2 * std::max<int64_t>(entries, 1)) +
            " words";
    return false;
  }
  const int64_t slots = bitmapWords / mask.wordsPerBlock();
  for (int32_t rb = 0; rb < numBlockRows; ++rb)
    for (int64_t e = mask.rowStart[rb]; e < mask.rowStart[rb + 1]; ++e) {
      const int32_t col = mask.blocks[2 * e], slot = mask.blocks[2 * e + 1];
      if (col < 0 || col >= numBlockCols) {
        error = "entry " + std::to_string(e) + " (block row " + std::to_string(rb) + ") names column block " +
                std::to_string(col) + ", outside the " + countOf(numBlockCols, "column block", "column blocks") +
                " of the grid";
        return false;
      }
      if (e > mask.rowStart[rb] && col <= mask.blocks[2 * (e - 1)]) {
        error = "entry " + std::to_string(e) + " names column block " + std::to_string(col) +
                ", which does not follow the previous entry's " + std::to_string(mask.blocks[2 * (e - 1)]) +
                " in ascending order within block row " + std::to_string(rb);
        return false;
      }
      // Kernels skip their own bounds where the mask's elements guard them: a block that
      // reaches past the grid keeps nothing there, so it is never full.
      const bool overhangs = (int64_t(rb) + 1) * mask.blockRows > mask.rows ||
                             (int64_t(col) + 1) * mask.blockCols > mask.cols;
      if (slot == -1 && overhangs) {
        error = "entry " + std::to_string(e) + " marks block (" + std::to_string(rb) + ", " + std::to_string(col) +
                ") full, but it reaches past the grid's edge, where nothing is kept";
        return false;
      }
      if (slot < -1 || slot >= slots) {
        error = "entry " + std::to_string(e) + " names bitmap slot " + std::to_string(slot) + ", but " +
                (slots ? "the slots run from 0 to " + std::to_string(slots - 1) : std::string("there is no bitmap")) +
                " (-1 marks a full block)";
        return false;
      }
    }
  return true;
}

bool checkBlockMaskBitmaps(const BlockMaskLayout &mask, std::string &error) {
  const int32_t numBlockRows = mask.numBlockRows(), words = mask.wordsPerBlock();
  for (int32_t rb = 0; rb < numBlockRows; ++rb)
    for (int64_t e = mask.rowStart[rb]; e < mask.rowStart[rb + 1]; ++e) {
      const int32_t col = mask.blocks[2 * e], slot = mask.blocks[2 * e + 1];
      const int64_t inRows = std::min<int64_t>(mask.blockRows, mask.rows - int64_t(rb) * mask.blockRows);
      const int64_t inCols = std::min<int64_t>(mask.blockCols, mask.cols - int64_t(col) * mask.blockCols);
      if (slot < 0 || (inRows == mask.blockRows && inCols == mask.blockCols))
        continue;
      const uint32_t *bits = mask.bitmaps.data() + int64_t(slot) * words;
      for (int64_t r = 0; r < mask.blockRows; ++r)
        for (int64_t c = 0; c < mask.blockCols; ++c) {
          const int64_t i = r * mask.blockCols + c;
          if ((r >= inRows || c >= inCols) && (bits[i / 32] >> (i % 32) & 1u)) {
            error = "the bitmap of block (" + std::to_string(rb) + ", " + std::to_string(col) + ") keeps element (" +
                    std::to_string(r) + ", " + std::to_string(c) + "), past the grid's edge";
            return false;
          }
        }
    }
  return true;
}

std::optional<BlockMaskLayout> blockMaskFromDense(std::span<const uint8_t> kept, int64_t rows, int64_t cols,
                                                  int64_t blockRows, int64_t blockCols, std::string &error) {
  if (!checkGrid(rows, cols, blockRows, blockCols, error))
    return std::nullopt;
  if (static_cast<int64_t>(kept.size()) != rows * cols) {
    error = "the dense mask has " + countOf(static_cast<int64_t>(kept.size()), "element", "elements") + "; a " +
            std::to_string(rows) + " x " + std::to_string(cols) + " grid needs " + std::to_string(rows * cols);
    return std::nullopt;
  }
  const uint8_t *data = kept.data();
  return buildFromGrid(
      rows, cols, blockRows, blockCols,
      [data, cols](int32_t r, int32_t c, int32_t n) { return packNonzeroBytes(data + r * cols + c, n); }, error);
}

std::optional<BlockMaskLayout> blockMaskFromPredicate(const std::function<bool(int32_t, int32_t)> &keep,
                                                      int64_t rows, int64_t cols, int64_t blockRows,
                                                      int64_t blockCols, std::string &error) {
  if (!checkGrid(rows, cols, blockRows, blockCols, error))
    return std::nullopt;
  return buildFromGrid(
      rows, cols, blockRows, blockCols,
      [&keep](int32_t r, int32_t c, int32_t n) {
        uint32_t bits = 0;
        for (int32_t i = 0; i < n; ++i)
          bits |= static_cast<uint32_t>(keep(r, c + i)) << i;
        return bits;
      },
      error);
}

std::optional<BlockMaskLayout> blockMaskFromBsr(std::span<const int64_t> rowPtr,
                                                std::span<const int64_t> colIndices,
                                                std::optional<std::span<const uint8_t>> blockData, int64_t rows,
                                                int64_t cols, int64_t blockRows, int64_t blockCols,
                                                std::string &error) {
  if (!checkGrid(rows, cols, blockRows, blockCols, error))
    return std::nullopt;
  BlockMaskLayout layout = emptyLayout(rows, cols, blockRows, blockCols);
  const int32_t numBlockRows = layout.numBlockRows(), numBlockCols = layout.numBlockCols();
  const int64_t nnz = static_cast<int64_t>(colIndices.size());

  if (static_cast<int64_t>(rowPtr.size()) != int64_t(numBlockRows) + 1) {
    error = "row_ptr has " + countOf(static_cast<int64_t>(rowPtr.size()), "entry", "entries") + "; a grid of " +
            countOf(numBlockRows, "block row", "block rows") + " needs " + std::to_string(int64_t(numBlockRows) + 1);
    return std::nullopt;
  }
  if (rowPtr[0] != 0) {
    error = "row_ptr[0] = " + std::to_string(rowPtr[0]) + ": BSR row offsets must start at 0";
    return std::nullopt;
  }
  for (size_t i = 1; i < rowPtr.size(); ++i)
    if (rowPtr[i] < rowPtr[i - 1]) {
      error = "row_ptr[" + std::to_string(i) + "] = " + std::to_string(rowPtr[i]) + " is less than row_ptr[" +
              std::to_string(i - 1) + "] = " + std::to_string(rowPtr[i - 1]) +
              ": BSR row offsets must not decrease";
      return std::nullopt;
    }
  if (rowPtr.back() != nnz) {
    error = "row_ptr[" + std::to_string(rowPtr.size() - 1) + "] = " + std::to_string(rowPtr.back()) +
            ", but col_indices has " + countOf(nnz, "entry", "entries") +
            ": the last BSR row offset must be the number of blocks";
    return std::nullopt;
  }
  // The offsets start at 0, do not decrease and end at nnz, so every one indexes
  // colIndices safely from here on.
  for (int32_t rb = 0; rb < numBlockRows; ++rb)
    for (int64_t e = rowPtr[rb]; e < rowPtr[rb + 1]; ++e) {
      const int64_t col = colIndices[e];
      if (col < 0 || col >= numBlockCols) {
        error = "col_indices[" + std::to_string(e) + "] = " + std::to_string(col) + " is outside the " +
                countOf(numBlockCols, "column block", "column blocks") + " of the grid";
        return std::nullopt;
      }
      if (e > rowPtr[rb] && col <= colIndices[e - 1]) {
        error = "col_indices[" + std::to_string(e) + "] = " + std::to_string(col) + " does not follow col_indices[" +
                std::to_string(e - 1) + "] = " + std::to_string(colIndices[e - 1]) +
                " in ascending order within block row " + std::to_string(rb);
        return std::nullopt;
      }
    }
  const int64_t blockElements = blockRows * blockCols;
  if (blockData && static_cast<int64_t>(blockData->size()) != nnz * blockElements) {
    error = "block_data has " + countOf(static_cast<int64_t>(blockData->size()), "element", "elements") + "; " +
            countOf(nnz, "block", "blocks") + " of " + std::to_string(blockRows) + " x " + std::to_string(blockCols) +
            " need " + std::to_string(nnz * blockElements);
    return std::nullopt;
  }

  const int32_t bm = layout.blockRows, bn = layout.blockCols, wordsPerBlock = layout.wordsPerBlock();
  if (!blockData) {
    // Every listed block is kept, so the arrays' sizes are known now: refuse a mask
    // too large to index before allocating it. A block is partial where it crosses
    // the grid's edge.
    const bool rowEdge = rows % bm != 0, colEdge = cols % bn != 0;
    int64_t partial = rowEdge ? nnz - rowPtr[numBlockRows - 1] : 0;
    for (int32_t rb = 0; colEdge && rb < numBlockRows; ++rb)
      if (rowPtr[rb + 1] > rowPtr[rb] && colIndices[rowPtr[rb + 1] - 1] == numBlockCols - 1 &&
          !(rowEdge && rb == numBlockRows - 1))
        ++partial;
    const int64_t words = int64_t(layout.rowStart.size()) + 2 * std::max<int64_t>(nnz, 1) +
                          std::max<int64_t>(partial, 1) * wordsPerBlock;
    if (words > kMaxWords) {
      error = tooManyWordsMessage();
      return std::nullopt;
    }
    layout.blocks.reserve(2 * nnz);
    layout.bitmaps.reserve(partial * wordsPerBlock);
  }

  LayoutBuilder builder(std::move(layout));
  const int32_t piece = std::min<int32_t>(32, bn);
  std::vector<uint32_t> bitmap(wordsPerBlock);
  const uint8_t *data = blockData ? blockData->data() : nullptr;
  for (int32_t rb = 0; rb < numBlockRows; ++rb) {
    const int32_t h = static_cast<int32_t>(std::min<int64_t>(bm, rows - int64_t(rb) * bm));
    for (int64_t e = rowPtr[rb]; e < rowPtr[rb + 1]; ++e) {
      const int32_t cb = static_cast<int32_t>(colIndices[e]);
      const int32_t w = static_cast<int32_t>(std::min<int64_t>(bn, cols - int64_t(cb) * bn));
      std::fill(bitmap.begin(), bitmap.end(), 0u);
      // Only the block's in-grid h x w corner is read: data past the edge is dropped.
      for (int32_t r = 0; r < h; ++r) {
        const int64_t bitBase = int64_t(r) * bn;
        if (data) {
          const uint8_t *row = data + (e * bm + r) * bn;
          fillRow(bitmap.data(), bitBase, w, piece,
                  [row](int32_t j, int32_t n) { return packNonzeroBytes(row + j, n); });
        } else {
          fillRow(bitmap.data(), bitBase, w, piece,
                  [](int32_t, int32_t n) { return n == 32 ? ~0u : (uint32_t(1) << n) - 1; });
        }
      }
      if (!builder.add(cb, bitmap.data(), error))
        return std::nullopt;
    }
    builder.endRow(rb);
  }
  return builder.finish(error);
}

} // namespace kiln
