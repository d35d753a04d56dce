//===- BlockMaskTest.cpp - Building, reading and digesting block masks -----===//
#include "support/BlockMask.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln {
namespace {

/// A dense row-major grid of element flags (nonzero = kept).
struct Grid {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> flags;

  Grid(int64_t rows, int64_t cols) : rows(rows), cols(cols), flags(size_t(rows * cols), 0) {}
  uint8_t &at(int64_t r, int64_t c) { return flags[size_t(r * cols + c)]; }
  bool kept(int64_t r, int64_t c) const { return flags[size_t(r * cols + c)] != 0; }
  void fill(int64_t r0, int64_t c0, int64_t h, int64_t w) {
    for (int64_t r = r0; r < r0 + h; ++r)
      for (int64_t c = c0; c < c0 + w; ++c)
        at(r, c) = 1;
  }
};

BlockMaskLayout fromDense(const Grid &g, int64_t bm, int64_t bn) {
  std::string error;
  auto m = blockMaskFromDense(g.flags, g.rows, g.cols, bm, bn, error);
  EXPECT_TRUE(m.has_value()) << error;
  return m ? *m : BlockMaskLayout{};
}

/// The layout written out the slow, obvious way: every element of every block looked
/// at on its own. What the builders must agree with exactly.
BlockMaskLayout referenceLayout(const Grid &g, int32_t bm, int32_t bn) {
  BlockMaskLayout m;
  m.rows = int32_t(g.rows);
  m.cols = int32_t(g.cols);
  m.blockRows = bm;
  m.blockCols = bn;
  const int32_t wpb = m.wordsPerBlock();
  m.rowStart.push_back(0);
  for (int32_t rb = 0; rb < m.numBlockRows(); ++rb) {
    for (int32_t cb = 0; cb < m.numBlockCols(); ++cb) {
      std::vector<uint32_t> words(size_t(wpb), 0);
      int64_t kept = 0;
      for (int32_t r = 0; r < bm; ++r)
        for (int32_t c = 0; c < bn; ++c) {
          const int64_t gr = int64_t(rb) * bm + r, gc = int64_t(cb) * bn + c;
          if (gr < g.rows && gc < g.cols && g.kept(gr, gc)) {
            ++kept;
            words[size_t((r * bn + c) / 32)] |= 1u << ((r * bn + c) % 32);
          }
        }
      if (kept == 0)
        continue;
      m.blocks.push_back(cb);
      if (kept == int64_t(bm) * bn) {
        m.blocks.push_back(-1);
      } else {
        m.blocks.push_back(int32_t(m.bitmaps.size() / size_t(wpb)));
        m.bitmaps.insert(m.bitmaps.end(), words.begin(), words.end());
      }
    }
    m.rowStart.push_back(int32_t(m.blocks.size() / 2));
  }
  if (m.blocks.empty())
    m.blocks = {0, 0};
  if (m.bitmaps.empty())
    m.bitmaps = {0};
  return m;
}

void expectSameLayout(const BlockMaskLayout &got, const BlockMaskLayout &want) {
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.cols, want.cols);
  EXPECT_EQ(got.blockRows, want.blockRows);
  EXPECT_EQ(got.blockCols, want.blockCols);
  EXPECT_EQ(got.rowStart, want.rowStart);
  EXPECT_EQ(got.blocks, want.blocks);
  EXPECT_EQ(got.bitmaps, want.bitmaps);
}

/// A grid whose blocks are a random mix of empty, full and scattered ones (a grid of
/// independent random elements would almost never have a full block). Kept elements
/// hold random nonzero bytes: any nonzero byte means kept.
Grid randomGrid(int64_t rows, int64_t cols, int64_t bm, int64_t bn, uint32_t seed) {
  std::mt19937 rng(seed);
  Grid g(rows, cols);
  std::uniform_int_distribution<int> state(0, 3), value(1, 255);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double densities[] = {0.03, 0.5, 0.97};
  for (int64_t r0 = 0; r0 < rows; r0 += bm)
    for (int64_t c0 = 0; c0 < cols; c0 += bn) {
      const int s = state(rng);
      const double p = s == 0 ? 0.0 : s == 1 ? 1.0 : densities[rng() % 3];
      for (int64_t r = r0; r < std::min(rows, r0 + bm); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + bn); ++c)
          g.at(r, c) = unit(rng) < p ? uint8_t(value(rng)) : 0;
    }
  return g;
}

void expectKeptMatches(const BlockMaskLayout &m, const Grid &g) {
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c)
      ASSERT_EQ(m.kept(r, c), g.kept(r, c)) << "element (" << r << ", " << c << ")";
  EXPECT_FALSE(m.kept(-1, 0));
  EXPECT_FALSE(m.kept(0, -1));
  EXPECT_FALSE(m.kept(g.rows, 0));
  EXPECT_FALSE(m.kept(0, g.cols));
}

struct BlockSize {
  int32_t bm, bn;
};
const BlockSize kBlockSizes[] = {{1, 1}, {1, 32}, {2, 8}, {8, 2}, {4, 4}, {16, 16},
                                 {32, 4}, {4, 64}, {64, 64}, {256, 2}, {2, 256}};
const std::pair<int64_t, int64_t> kExtents[] = {{1, 1}, {1, 100}, {100, 1}, {37, 53}, {64, 64}, {129, 257}, {300, 70}};

TEST(BlockMask, ValidBlockSizes) {
  for (int64_t size = 1; size <= 256; size *= 2)
    EXPECT_TRUE(isValidMaskBlockSize(size)) << size;
  for (int64_t size : {0, -1, -4, 3, 6, 48, 255, 257, 512, 1 << 20})
    EXPECT_FALSE(isValidMaskBlockSize(size)) << size;
}

TEST(BlockMask, HandBuiltMaskWithFullPartialAndEmptyBlocks) {
  // 8 x 12 in 4 x 4 blocks: a 2 x 3 block grid.
  //   block row 0: full, empty, partial {(1, 9), (3, 11)}
  //   block row 1: partial {(4, 0), (6, 2)}, full, empty
  Grid g(8, 12);
  g.fill(0, 0, 4, 4);
  g.at(1, 9) = 1;
  g.at(3, 11) = 7;
  g.at(4, 0) = 0x80;
  g.at(6, 2) = 1;
  g.fill(4, 4, 4, 4);
  BlockMaskLayout m = fromDense(g, 4, 4);
  EXPECT_EQ(m.rows, 8);
  EXPECT_EQ(m.cols, 12);
  EXPECT_EQ(m.blockRows, 4);
  EXPECT_EQ(m.blockCols, 4);
  EXPECT_EQ(m.numBlockRows(), 2);
  EXPECT_EQ(m.numBlockCols(), 3);
  EXPECT_EQ(m.wordsPerBlock(), 1);
  EXPECT_EQ(m.numEntries(), 4);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(m.blocks, (std::vector<int32_t>{0, -1, 2, 0, 0, 1, 1, -1}));
  // Slot 0: local (1, 1) and (3, 3), bits 5 and 15. Slot 1: local (0, 0) and (2, 2), bits 0 and 10.
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0x8020u, 0x401u}));
  expectKeptMatches(m, g);
}

TEST(BlockMask, BitmapSpansSeveralWords) {
  // 4 x 32 in 4 x 16 blocks: 64 bits, two words per block.
  Grid g(4, 32);
  g.at(0, 0) = 1;  // bit 0: word 0, bit 0
  g.at(2, 5) = 1;  // bit 37: word 1, bit 5
  g.at(3, 15) = 1; // bit 63: word 1, bit 31
  g.fill(0, 16, 4, 16);
  BlockMaskLayout m = fromDense(g, 4, 16);
  EXPECT_EQ(m.wordsPerBlock(), 2);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(m.blocks, (std::vector<int32_t>{0, 0, 1, -1}));
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0x1u, 0x80000020u}));
  expectKeptMatches(m, g);
}

TEST(BlockMask, BlocksPastTheEdgeArePartial) {
  // 5 x 6, all kept, in 4 x 4 blocks: only block (0, 0) lies inside the grid.
  Grid g(5, 6);
  g.fill(0, 0, 5, 6);
  BlockMaskLayout m = fromDense(g, 4, 4);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(m.blocks, (std::vector<int32_t>{0, -1, 1, 0, 0, 1, 1, 2}));
  // (0, 1): 4 rows x 2 columns; (1, 0): 1 row x 4 columns; (1, 1): 1 row x 2 columns.
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0x3333u, 0xFu, 0x3u}));
  expectKeptMatches(m, g);

  // Rows of 32 bits or more: 3 x 40, all kept, in 2 x 32 blocks.
  Grid wide(3, 40);
  wide.fill(0, 0, 3, 40);
  BlockMaskLayout w = fromDense(wide, 2, 32);
  EXPECT_EQ(w.rowStart, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(w.blocks, (std::vector<int32_t>{0, -1, 1, 0, 0, 1, 1, 2}));
  EXPECT_EQ(w.bitmaps, (std::vector<uint32_t>{0xFFu, 0xFFu, 0xFFFFFFFFu, 0u, 0xFFu, 0u}));
  expectKeptMatches(w, wide);

  // A grid smaller than one block is never full.
  Grid tiny(3, 3);
  tiny.fill(0, 0, 3, 3);
  BlockMaskLayout t = fromDense(tiny, 4, 4);
  EXPECT_EQ(t.blocks, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(t.bitmaps, (std::vector<uint32_t>{0x777u}));
}

TEST(BlockMask, BlockRowWithNoBlock) {
  // 12 x 8 in 4 x 4 blocks; nothing is kept in rows 4 to 7.
  Grid g(12, 8);
  g.at(0, 0) = 1;
  g.at(9, 7) = 1; // block (2, 1), local (1, 3): bit 7
  BlockMaskLayout m = fromDense(g, 4, 4);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 1, 1, 2}));
  EXPECT_EQ(m.blocks, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0x1u, 0x80u}));
  expectKeptMatches(m, g);
}

TEST(BlockMask, EmptyMaskIsPadded) {
  Grid g(9, 5);
  BlockMaskLayout m = fromDense(g, 4, 2);
  EXPECT_EQ(m.numEntries(), 0);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(m.blocks, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0u}));
  expectKeptMatches(m, g);
}

TEST(BlockMask, FullyDenseMask) {
  Grid g(64, 64);
  g.fill(0, 0, 64, 64);
  BlockMaskLayout m = fromDense(g, 16, 16);
  EXPECT_EQ(m.numEntries(), 16);
  EXPECT_EQ(m.rowStart, (std::vector<int32_t>{0, 4, 8, 12, 16}));
  std::vector<int32_t> blocks;
  for (int rb = 0; rb < 4; ++rb)
    for (int cb = 0; cb < 4; ++cb)
      blocks.insert(blocks.end(), {cb, -1});
  EXPECT_EQ(m.blocks, blocks);
  EXPECT_EQ(m.bitmaps, (std::vector<uint32_t>{0u})); // no partial block: one padding word
  expectKeptMatches(m, g);
}

TEST(BlockMask, DiagonalOnlyMask) {
  Grid g(64, 64);
  for (int i = 0; i < 64; ++i)
    g.at(i, i) = 1;
  BlockMaskLayout m = fromDense(g, 8, 8);
  EXPECT_EQ(m.wordsPerBlock(), 2);
  std::vector<int32_t> rowStart, blocks;
  std::vector<uint32_t> bitmaps;
  for (int rb = 0; rb < 8; ++rb) {
    rowStart.push_back(rb);
    blocks.insert(blocks.end(), {rb, rb});
    // Local (i, i) is bit 9i: bits 0, 9, 18, 27 in word 0, and 36, 45, 54, 63 in word 1.
    bitmaps.insert(bitmaps.end(), {0x08040201u, 0x80402010u});
  }
  rowStart.push_back(8);
  EXPECT_EQ(m.rowStart, rowStart);
  EXPECT_EQ(m.blocks, blocks);
  EXPECT_EQ(m.bitmaps, bitmaps);
  expectKeptMatches(m, g);

  // In 1 x 1 blocks every kept element is a full block of its own.
  BlockMaskLayout ones = fromDense(g, 1, 1);
  EXPECT_EQ(ones.numEntries(), 64);
  EXPECT_EQ(ones.bitmaps, (std::vector<uint32_t>{0u}));
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(ones.blocks[2 * i], i);
    EXPECT_EQ(ones.blocks[2 * i + 1], -1);
  }
}

TEST(BlockMask, RandomMasksMatchTheReference) {
  for (uint32_t seed : {1u, 2u, 3u})
    for (auto [rows, cols] : kExtents)
      for (BlockSize b : kBlockSizes) {
        SCOPED_TRACE(testing::Message() << rows << " x " << cols << " in " << b.bm << " x " << b.bn << " blocks, seed "
                                        << seed);
        Grid g = randomGrid(rows, cols, b.bm, b.bn, seed * 7919 + uint32_t(rows * 31 + cols));
        BlockMaskLayout m = fromDense(g, b.bm, b.bn);
        expectSameLayout(m, referenceLayout(g, b.bm, b.bn));
        expectKeptMatches(m, g);
        if (HasFatalFailure())
          return;
      }
}

TEST(BlockMask, WideBlockRowsAreBuiltInStrips) {
  // Wide enough that a block row's bitmaps do not fit the builder's scratch at once.
  for (auto [rows, cols, bm, bn] : {std::tuple{300, 9000, 256, 256}, std::tuple{257, 8200, 256, 1}}) {
    SCOPED_TRACE(testing::Message() << rows << " x " << cols << " in " << bm << " x " << bn << " blocks");
    Grid g = randomGrid(rows, cols, bm, bn, 42);
    BlockMaskLayout m = fromDense(g, bm, bn);
    expectSameLayout(m, referenceLayout(g, bm, bn));
  }
}

TEST(BlockMask, PredicateEqualsDense) {
  for (uint32_t seed : {5u, 6u})
    for (auto [rows, cols] : kExtents)
      for (BlockSize b : {BlockSize{1, 1}, BlockSize{4, 16}, BlockSize{16, 4}, BlockSize{64, 64}}) {
        SCOPED_TRACE(testing::Message() << rows << " x " << cols << " in " << b.bm << " x " << b.bn << " blocks");
        Grid g = randomGrid(rows, cols, b.bm, b.bn, seed);
        std::vector<int> calls(g.flags.size(), 0);
        std::string error;
        auto m = blockMaskFromPredicate(
            [&](int32_t r, int32_t c) {
              ++calls[size_t(r * cols + c)];
              return g.kept(r, c);
            },
            rows, cols, b.bm, b.bn, error);
        ASSERT_TRUE(m.has_value()) << error;
        expectSameLayout(*m, fromDense(g, b.bm, b.bn));
        EXPECT_EQ(std::count(calls.begin(), calls.end(), 1), int64_t(calls.size())) << "each element asked once";
      }
}

struct Bsr {
  std::vector<int64_t> rowPtr, colIndices;
  std::vector<uint8_t> data;
};
/// BSR arrays of the blocks of `g` that keep something, with their data (elements past
/// the grid's edge hold `outside`); a block that keeps nothing is listed too where
/// `listEmpty` says so.
Bsr bsrOf(const Grid &g, int64_t bm, int64_t bn, uint8_t outside,
          const std::function<bool(int64_t, int64_t)> &listEmpty) {
  Bsr bsr;
  bsr.rowPtr.push_back(0);
  for (int64_t r0 = 0; r0 < g.rows; r0 += bm) {
    for (int64_t c0 = 0; c0 < g.cols; c0 += bn) {
      std::vector<uint8_t> block(size_t(bm * bn), outside);
      bool any = false;
      for (int64_t r = 0; r < bm; ++r)
        for (int64_t c = 0; c < bn; ++c)
          if (r0 + r < g.rows && c0 + c < g.cols) {
            block[size_t(r * bn + c)] = g.flags[size_t((r0 + r) * g.cols + c0 + c)];
            any |= block[size_t(r * bn + c)] != 0;
          }
      if (!any && !listEmpty(r0 / bm, c0 / bn))
        continue;
      bsr.colIndices.push_back(c0 / bn);
      bsr.data.insert(bsr.data.end(), block.begin(), block.end());
    }
    bsr.rowPtr.push_back(int64_t(bsr.colIndices.size()));
  }
  return bsr;
}

TEST(BlockMask, BsrWithDataRoundTrips) {
  for (uint32_t seed : {11u, 12u})
    for (auto [rows, cols] : kExtents)
      for (BlockSize b : kBlockSizes) {
        SCOPED_TRACE(testing::Message() << rows << " x " << cols << " in " << b.bm << " x " << b.bn << " blocks");
        Grid g = randomGrid(rows, cols, b.bm, b.bn, seed);
        // Flags past the grid's edge are dropped, and listed blocks that keep nothing too.
        Bsr bsr = bsrOf(g, b.bm, b.bn, 1, [](int64_t rb, int64_t cb) { return (rb + cb) % 3 == 0; });
        std::string error;
        auto m = blockMaskFromBsr(bsr.rowPtr, bsr.colIndices, std::span<const uint8_t>(bsr.data), rows, cols, b.bm,
                                  b.bn, error);
        ASSERT_TRUE(m.has_value()) << error;
        expectSameLayout(*m, fromDense(g, b.bm, b.bn));
      }
}

TEST(BlockMask, BsrWithoutDataKeepsWholeBlocks) {
  for (auto [rows, cols] : kExtents)
    for (BlockSize b : kBlockSizes) {
      SCOPED_TRACE(testing::Message() << rows << " x " << cols << " in " << b.bm << " x " << b.bn << " blocks");
      Grid g = randomGrid(rows, cols, b.bm, b.bn, 21);
      Bsr bsr = bsrOf(g, b.bm, b.bn, 0, [](int64_t, int64_t) { return false; });
      // The same blocks, every in-grid element kept.
      Grid whole(rows, cols);
      for (int64_t rb = 0; rb + 1 < int64_t(bsr.rowPtr.size()); ++rb)
        for (int64_t e = bsr.rowPtr[rb]; e < bsr.rowPtr[rb + 1]; ++e) {
          const int64_t r0 = rb * b.bm, c0 = bsr.colIndices[e] * b.bn;
          whole.fill(r0, c0, std::min<int64_t>(b.bm, rows - r0), std::min<int64_t>(b.bn, cols - c0));
        }
      std::string error;
      auto m = blockMaskFromBsr(bsr.rowPtr, bsr.colIndices, std::nullopt, rows, cols, b.bm, b.bn, error);
      ASSERT_TRUE(m.has_value()) << error;
      expectSameLayout(*m, fromDense(whole, b.bm, b.bn));
    }

  // 6 x 6 in 4 x 4 blocks, blocks (0, 0) and (1, 1) listed: one inside the grid, one cut by both edges.
  std::vector<int64_t> rowPtr{0, 1, 2}, cols{0, 1};
  std::string error;
  auto m = blockMaskFromBsr(rowPtr, cols, std::nullopt, 6, 6, 4, 4, error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->rowStart, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(m->blocks, (std::vector<int32_t>{0, -1, 1, 0}));
  EXPECT_EQ(m->bitmaps, (std::vector<uint32_t>{0x33u}));

  // No block at all.
  std::vector<int64_t> zeros{0, 0, 0}, none;
  m = blockMaskFromBsr(zeros, none, std::nullopt, 6, 6, 4, 4, error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->rowStart, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(m->blocks, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(m->bitmaps, (std::vector<uint32_t>{0u}));
}

TEST(BlockMask, LargestGridIsAccepted) {
  // 2^30 x 2^30 in 256 x 256 blocks: 2^22 block rows, one block listed in the last.
  const int64_t n = int64_t(1) << 30, blockRowsCount = n / 256;
  std::vector<int64_t> rowPtr(size_t(blockRowsCount + 1), 0), cols{blockRowsCount - 1};
  rowPtr.back() = 1;
  std::string error;
  auto m = blockMaskFromBsr(rowPtr, cols, std::nullopt, n, n, 256, 256, error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(m->numEntries(), 1);
  EXPECT_EQ(m->blocks, (std::vector<int32_t>{int32_t(blockRowsCount - 1), -1}));
  EXPECT_TRUE(m->kept(n - 1, n - 1));
  EXPECT_TRUE(m->kept(n - 256, n - 256));
  EXPECT_FALSE(m->kept(n - 257, n - 1));
  EXPECT_FALSE(m->kept(n, n - 1));
}

std::string bsrError(std::vector<int64_t> rowPtr, std::vector<int64_t> cols, int64_t rows, int64_t ncols, int64_t bm,
                     int64_t bn, std::optional<std::vector<uint8_t>> data = std::nullopt) {
  std::string error;
  std::optional<std::span<const uint8_t>> span;
  if (data)
    span = std::span<const uint8_t>(*data);
  auto m = blockMaskFromBsr(rowPtr, cols, span, rows, ncols, bm, bn, error);
  EXPECT_FALSE(m.has_value());
  return error;
}

TEST(BlockMask, BsrErrors) {
  // 16 x 32 in 4 x 4 blocks: 4 block rows of 8 column blocks.
  EXPECT_EQ(bsrError({0, 0, 0}, {}, 16, 32, 4, 4), "row_ptr has 3 entries; a grid of 4 block rows needs 5");
  EXPECT_EQ(bsrError({}, {}, 3, 32, 4, 4), "row_ptr has 0 entries; a grid of 1 block row needs 2");
  EXPECT_EQ(bsrError({1, 1, 1, 1, 1}, {0}, 16, 32, 4, 4), "row_ptr[0] = 1: BSR row offsets must start at 0");
  EXPECT_EQ(bsrError({0, 3, 7, 5, 9}, {0, 1, 2, 0, 1, 2, 3, 0, 1}, 16, 32, 4, 4),
            "row_ptr[3] = 5 is less than row_ptr[2] = 7: BSR row offsets must not decrease");
  EXPECT_EQ(bsrError({0, -1, 0, 0, 0}, {}, 16, 32, 4, 4),
            "row_ptr[1] = -1 is less than row_ptr[0] = 0: BSR row offsets must not decrease");
  EXPECT_EQ(bsrError({0, 1, 2, 3, 3}, {0, 0}, 16, 32, 4, 4),
            "row_ptr[4] = 3, but col_indices has 2 entries: the last BSR row offset must be the number of blocks");
  EXPECT_EQ(bsrError({0, 1, 1, 1, 1}, {}, 16, 32, 4, 4),
            "row_ptr[4] = 1, but col_indices has 0 entries: the last BSR row offset must be the number of blocks");
  EXPECT_EQ(bsrError({0, 3, 6, 6, 6}, {0, 1, 7, 0, 9, 1}, 16, 32, 4, 4),
            "col_indices[4] = 9 is outside the 8 column blocks of the grid");
  EXPECT_EQ(bsrError({0, 1, 1, 1, 1}, {-1}, 16, 32, 4, 4),
            "col_indices[0] = -1 is outside the 8 column blocks of the grid");
  EXPECT_EQ(bsrError({0, 1}, {1}, 4, 4, 4, 4), "col_indices[0] = 1 is outside the 1 column block of the grid");
  EXPECT_EQ(bsrError({0, 2, 6, 6, 6}, {3, 5, 0, 1, 2, 2}, 16, 32, 4, 4),
            "col_indices[5] = 2 does not follow col_indices[4] = 2 in ascending order within block row 1");
  EXPECT_EQ(bsrError({0, 2, 4, 4, 4}, {3, 5, 4, 1}, 16, 32, 4, 4),
            "col_indices[3] = 1 does not follow col_indices[2] = 4 in ascending order within block row 1");
  // The first offending index is the one named.
  EXPECT_EQ(bsrError({0, 3, 3, 3, 3}, {2, 2, 99}, 16, 32, 4, 4),
            "col_indices[1] = 2 does not follow col_indices[0] = 2 in ascending order within block row 0");
  EXPECT_EQ(bsrError({0, 1, 2, 2, 2}, {0, 1}, 16, 32, 4, 4, std::vector<uint8_t>(10, 1)),
            "block_data has 10 elements; 2 blocks of 4 x 4 need 32");
  EXPECT_EQ(bsrError({0, 1, 2, 2, 2}, {0, 1}, 16, 32, 4, 4, std::vector<uint8_t>(33, 1)),
            "block_data has 33 elements; 2 blocks of 4 x 4 need 32");
  EXPECT_EQ(bsrError({0, 0}, {}, 4, 4, 4, 4, std::vector<uint8_t>(1, 1)),
            "block_data has 1 element; 0 blocks of 4 x 4 need 0");
  // The grid is checked first, as for the other builders.
  EXPECT_EQ(bsrError({0, 0}, {}, 0, 4, 4, 4), "the mask has 0 rows; it needs at least one");
  EXPECT_EQ(bsrError({0, 0}, {}, 4, 4, 4, 12), "block size 12 is not a power of two from 1 to 256");

  // Column blocks start afresh in each block row.
  std::string error;
  std::vector<int64_t> rowPtr{0, 2, 4, 4, 4}, cols{3, 5, 0, 1};
  EXPECT_TRUE(blockMaskFromBsr(rowPtr, cols, std::nullopt, 16, 32, 4, 4, error).has_value()) << error;
}

TEST(BlockMask, BsrTooLargeToIndex) {
  // 2^20 block rows of 256 x 256 blocks, each listing the partial block at the right
  // edge: 2^20 bitmaps of 2048 words are more than 32-bit offsets reach.
  const int64_t blockRowsCount = int64_t(1) << 20, rows = blockRowsCount * 256 - 1, cols = (int64_t(1) << 30) - 1;
  std::vector<int64_t> rowPtr(size_t(blockRowsCount + 1)), colIndices(size_t(blockRowsCount), (cols + 255) / 256 - 1);
  for (int64_t i = 0; i <= blockRowsCount; ++i)
    rowPtr[size_t(i)] = i;
  std::string error;
  EXPECT_FALSE(blockMaskFromBsr(rowPtr, colIndices, std::nullopt, rows, cols, 256, 256, error).has_value());
  EXPECT_EQ(error, "the mask's arrays would hold 2^31 words or more; row_start, blocks and bitmaps together must "
                   "stay below that so that 32-bit offsets reach every word");
}

std::string denseError(size_t size, int64_t rows, int64_t cols, int64_t bm, int64_t bn) {
  std::vector<uint8_t> flags(size, 1);
  std::string error;
  auto m = blockMaskFromDense(flags, rows, cols, bm, bn, error);
  EXPECT_FALSE(m.has_value());
  // The predicate builder checks the same grid (it has no array to size), without
  // asking for any element.
  if (error.rfind("the dense mask", 0) != 0) {
    bool asked = false;
    std::string predicateError;
    auto p = blockMaskFromPredicate([&](int32_t, int32_t) { return asked = true; }, rows, cols, bm, bn,
                                    predicateError);
    EXPECT_FALSE(p.has_value());
    EXPECT_FALSE(asked);
    EXPECT_EQ(predicateError, error);
  }
  return error;
}

TEST(BlockMask, DenseErrors) {
  EXPECT_EQ(denseError(0, 0, 4, 4, 4), "the mask has 0 rows; it needs at least one");
  EXPECT_EQ(denseError(0, -2, 4, 4, 4), "the mask has -2 rows; it needs at least one");
  EXPECT_EQ(denseError(0, 4, 0, 4, 4), "the mask has 0 columns; it needs at least one");
  EXPECT_EQ(denseError(0, (int64_t(1) << 30) + 1, 1, 4, 4),
            "the mask has 1073741825 rows; it may have at most 1073741824");
  EXPECT_EQ(denseError(0, 1, int64_t(1) << 40, 4, 4),
            "the mask has 1099511627776 columns; it may have at most 1073741824");
  EXPECT_EQ(denseError(16, 4, 4, 48, 4), "block size 48 is not a power of two from 1 to 256");
  EXPECT_EQ(denseError(16, 4, 4, 4, 0), "block size 0 is not a power of two from 1 to 256");
  EXPECT_EQ(denseError(16, 4, 4, 512, 4), "block size 512 is not a power of two from 1 to 256");
  EXPECT_EQ(denseError(16, 4, 4, -4, 4), "block size -4 is not a power of two from 1 to 256");
  EXPECT_EQ(denseError(15, 4, 4, 4, 4), "the dense mask has 15 elements; a 4 x 4 grid needs 16");
  EXPECT_EQ(denseError(17, 4, 4, 4, 4), "the dense mask has 17 elements; a 4 x 4 grid needs 16");
  EXPECT_EQ(denseError(1, 1, 2, 1, 1), "the dense mask has 1 element; a 1 x 2 grid needs 2");
}

TEST(BlockMask, StatsOfKnownMasks) {
  // The mask of HandBuiltMaskWithFullPartialAndEmptyBlocks: 2 full, 2 partial, 2 empty.
  Grid g(8, 12);
  g.fill(0, 0, 4, 4);
  g.at(1, 9) = 1;
  g.at(3, 11) = 1;
  g.at(4, 0) = 1;
  g.at(6, 2) = 1;
  g.fill(4, 4, 4, 4);
  BlockMaskStats s = blockMaskStats(fromDense(g, 4, 4));
  EXPECT_EQ(s.blockRows, 2);
  EXPECT_EQ(s.blockCols, 3);
  EXPECT_EQ(s.full, 2);
  EXPECT_EQ(s.partial, 2);
  EXPECT_EQ(s.empty, 2);
  EXPECT_EQ(s.keptElements, 36);
  EXPECT_EQ(s.maxRowBlocks, 2);
  EXPECT_EQ(s.emptyRows, 0);
  EXPECT_DOUBLE_EQ(s.blockDensity(), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.elementDensity(8, 12), 36.0 / 96.0);
  EXPECT_DOUBLE_EQ(s.rowImbalance(), 1.0);

  // Uneven rows: 3 blocks in block row 0, 1 in block row 2, none in block row 1.
  Grid u(12, 12);
  u.fill(0, 0, 4, 12);
  u.at(10, 5) = 1;
  s = blockMaskStats(fromDense(u, 4, 4));
  EXPECT_EQ(s.full, 3);
  EXPECT_EQ(s.partial, 1);
  EXPECT_EQ(s.empty, 5);
  EXPECT_EQ(s.keptElements, 49);
  EXPECT_EQ(s.maxRowBlocks, 3);
  EXPECT_EQ(s.emptyRows, 1);
  EXPECT_DOUBLE_EQ(s.blockDensity(), 4.0 / 9.0);
  EXPECT_DOUBLE_EQ(s.rowImbalance(), 3.0 / (4.0 / 3.0));

  // Edge blocks count only their in-grid elements.
  Grid e(5, 6);
  e.fill(0, 0, 5, 6);
  s = blockMaskStats(fromDense(e, 4, 4));
  EXPECT_EQ(s.full, 1);
  EXPECT_EQ(s.partial, 3);
  EXPECT_EQ(s.keptElements, 30);
  EXPECT_DOUBLE_EQ(s.elementDensity(5, 6), 1.0);
  EXPECT_DOUBLE_EQ(s.blockDensity(), 1.0);

  // Nothing kept.
  s = blockMaskStats(fromDense(Grid(9, 9), 4, 4));
  EXPECT_EQ(s.empty, 9);
  EXPECT_EQ(s.full + s.partial + s.keptElements + s.maxRowBlocks, 0);
  EXPECT_EQ(s.emptyRows, 3);
  EXPECT_DOUBLE_EQ(s.blockDensity(), 0.0);
  EXPECT_DOUBLE_EQ(s.elementDensity(9, 9), 0.0);
  EXPECT_DOUBLE_EQ(s.rowImbalance(), 1.0);

  // Stats agree with a count over the elements on random masks.
  for (BlockSize b : kBlockSizes) {
    Grid r = randomGrid(129, 257, b.bm, b.bn, 99);
    BlockMaskLayout m = fromDense(r, b.bm, b.bn);
    s = blockMaskStats(m);
    EXPECT_EQ(s.keptElements, std::count_if(r.flags.begin(), r.flags.end(), [](uint8_t f) { return f != 0; }));
    EXPECT_EQ(s.full + s.partial, m.numEntries());
    EXPECT_EQ(s.full + s.partial + s.empty, int64_t(m.numBlockRows()) * m.numBlockCols());
  }
}

TEST(BlockMask, DefaultLayoutIsHarmless) {
  BlockMaskLayout m;
  EXPECT_FALSE(m.kept(0, 0));
  EXPECT_EQ(m.numEntries(), 0);
  BlockMaskStats s = blockMaskStats(m);
  EXPECT_EQ(s.blockRows * s.blockCols, 0);
  EXPECT_DOUBLE_EQ(s.blockDensity(), 0.0);
  EXPECT_DOUBLE_EQ(s.rowImbalance(), 1.0);
}

TEST(BlockMask, DigestIsStable) {
  Grid g = randomGrid(37, 53, 8, 4, 3);
  const std::string digest = blockMaskDigest(fromDense(g, 8, 4));
  ASSERT_EQ(digest.size(), 16u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_EQ(blockMaskDigest(fromDense(g, 8, 4)), digest);
  std::string error;
  auto viaPredicate =
      blockMaskFromPredicate([&](int32_t r, int32_t c) { return g.kept(r, c); }, 37, 53, 8, 4, error);
  ASSERT_TRUE(viaPredicate.has_value()) << error;
  EXPECT_EQ(blockMaskDigest(*viaPredicate), digest);

  // Any one element flipped changes the digest.
  for (int64_t i : {int64_t(0), int64_t(100), int64_t(g.flags.size() - 1)}) {
    Grid flipped = g;
    flipped.flags[size_t(i)] = flipped.flags[size_t(i)] ? 0 : 1;
    EXPECT_NE(blockMaskDigest(fromDense(flipped, 8, 4)), digest) << "element " << i;
  }
  // So do the extents and block sizes, with the same arrays.
  BlockMaskLayout m = fromDense(g, 8, 4);
  for (int field = 0; field < 4; ++field) {
    BlockMaskLayout changed = m;
    int32_t *fields[] = {&changed.rows, &changed.cols, &changed.blockRows, &changed.blockCols};
    ++*fields[field];
    EXPECT_NE(blockMaskDigest(changed), digest) << "field " << field;
  }
  // One bit of a bitmap word.
  BlockMaskLayout bit = m;
  bit.bitmaps.back() ^= 0x80000000u;
  EXPECT_NE(blockMaskDigest(bit), digest);

  // The serialization is fixed (digests are stored on disk): this is the value of the
  // mask of HandBuiltMaskWithFullPartialAndEmptyBlocks, worked out independently.
  Grid hand(8, 12);
  hand.fill(0, 0, 4, 4);
  hand.at(1, 9) = 1;
  hand.at(3, 11) = 1;
  hand.at(4, 0) = 1;
  hand.at(6, 2) = 1;
  hand.fill(4, 4, 4, 4);
  EXPECT_EQ(blockMaskDigest(fromDense(hand, 4, 4)), "909ecc34846e1b99");
}

} // namespace
} // namespace kiln
