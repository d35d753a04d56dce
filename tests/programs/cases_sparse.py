#===- cases_sparse.py - Cases of block-sparse iteration ---------------------------===#
#
# `block_mask` parameters and `for kb in blocks(mask, rb)` (LANGUAGE.md, "Sparsity"):
# the kernels of tests/programs/block_sparse.kiln and stdlib/sparse_attention.kiln over
# masks of every shape the runtime builds — full, partial and empty blocks, grids that
# are not multiples of the blocks (the edge blocks are partial even where every element
# is kept), block rows with no block at all, masks that keep everything, only the
# diagonal, or nothing. The mask reaches `dslc run` as a dense bool array and the
# references read that same array, so they check the compression (support/BlockMask.h)
# together with the loop and `mask.elements`.
#
# Outputs start with values the kernels never write (a fill other than zero) wherever
# a kernel leaves elements alone, so that a stray store shows.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import (EXACT, Arr, BlockMask, MaskPattern, Scalar, Tol, bigbird, causal, causal_window, cdiv,
                      dense, diagonal, dilated, f64, fill, longformer, masked_attention_ref,
                      masked_row_sum_ref, normal, randint, random_blocks, sliding, with_specials)

FILE = "block_sparse.kiln"
# add() names files relative to tests/programs/.
ATTENTION = "../../stdlib/sparse_attention.kiln"
BM, BN = 4, 8  # block_sparse.kiln's block_mask<4, 8>

# Sums of up to ~100 normal values in f32, in the loop's order.
SUM_TOL = Tol(1e-5, 2e-5)
SOFTMAX_TOL = Tol(2e-5, 1e-6)
# f32 scores of 64-long dots, softmax and a weighted sum of up to 100 rows.
ATTENTION_TOL = Tol(1e-4, 1e-5)


def grid_sizes(rows, cols):
    return {"rows": rows, "cols": cols}


def random_grid(max_rows, max_cols):
    """Extents drawn at random, most of them not multiples of the blocks."""
    return lambda r: {"rows": int(r.integers(1, max_rows)), "cols": int(r.integers(1, max_cols))}


def block_rows(s):
    return (cdiv(s["rows"], BM),)


def mask_arg(pattern, **kw):
    return BlockMask("mask", ("rows", "cols"), BM, BN, pattern, **kw)


# ---- row_sum ------------------------------------------------------------------------

def _row_sum(suffix, sizes, pattern, **kw):
    return ("sparse.row_sum" + suffix, FILE, "row_sum",
            dict(sizes=sizes, grid=block_rows,
                 args=[Arr("x", "f32", ("rows", "cols"), normal()),
                       Arr("out", "f32", "rows", fill(5.0)), mask_arg(pattern, **kw)],
                 ref=masked_row_sum_ref, tol=SUM_TOL))


# ---- visits -------------------------------------------------------------------------

def _visits_ref(maxb):
    """Each block row's non-empty column blocks in ascending order with their kept
    counts, -1 after the last when fewer than MAXB; the rest keeps its contents."""
    def ref(v, s):
        keep = np.asarray(v.mask, dtype=bool)
        rows, cols = keep.shape
        cols_out = np.array(v.cols_out, dtype=np.int64).reshape(-1, maxb)
        kept_out = np.array(v.kept_out, dtype=np.int64).reshape(-1, maxb)
        for rb in range(cdiv(rows, BM)):
            n = 0
            for cb in range(cdiv(cols, BN)):
                kept = int(keep[rb * BM:(rb + 1) * BM, cb * BN:(cb + 1) * BN].sum())
                if kept:
                    cols_out[rb, n], kept_out[rb, n] = cb, kept
                    n += 1
            assert n <= maxb, "the case's MAXB is too small for its mask"
            if n < maxb:
                cols_out[rb, n] = -1
        return {"cols_out": cols_out.reshape(-1), "kept_out": kept_out.reshape(-1)}
    return ref


def _visits(suffix, sizes, pattern, maxb=8, **kw):
    out = lambda s: cdiv(s["rows"], BM) * maxb  # noqa: E731
    return ("sparse.visits" + suffix, FILE, "visits",
            dict(sizes=sizes, grid=block_rows, defines={} if maxb == 8 else {"MAXB": maxb},
                 args=[Arr("cols_out", "i32", out, randint(100, 200)),
                       Arr("kept_out", "i32", out, randint(100, 200)), mask_arg(pattern, **kw)],
                 ref=_visits_ref(maxb), tol=EXACT))


# ---- masked_softmax -----------------------------------------------------------------
#
# The kernel stores only the elements it keeps (`store(..., mask = keep)`): an element
# not kept keeps y's previous contents. A row that keeps nothing inside a block row that
# has blocks gets m = -inf and l = NaN, but writes nothing, so y's row is left alone;
# a block row with no block runs no loop at all. The reference says exactly that.

def _masked_softmax_ref(v, s):
    keep = np.asarray(v.mask, dtype=bool)
    x = np.where(keep, f64(v.x), -np.inf)
    m = x.max(axis=1, keepdims=True)
    e = np.where(keep, np.exp(x - np.where(np.isfinite(m), m, 0.0)), 0.0)
    l = e.sum(axis=1, keepdims=True)
    y = f64(v.y).copy()
    y[keep] = (e / np.where(l > 0, l, 1.0))[keep]
    return {"y": y}


def _masked_softmax(suffix, sizes, pattern, x=normal(3.0), **kw):
    return ("sparse.masked_softmax" + suffix, FILE, "masked_softmax",
            dict(sizes=sizes, grid=block_rows,
                 args=[Arr("x", "f32", ("rows", "cols"), x),
                       Arr("y", "f32", ("rows", "cols"), fill(-2.5)), mask_arg(pattern, **kw)],
                 ref=_masked_softmax_ref, tol=SOFTMAX_TOL))


# ---- sparse_attention ----------------------------------------------------------------
#
# A query row must keep at least one key: one that keeps none inside a block row with
# blocks has only -inf scores, and the program as written computes NaN for it (the
# kernel's own comment). So every mask here keeps each row's diagonal element — the
# causal and sliding patterns do by construction, the random ones by `keep_diagonal`.
# A block row with no block at all is different and well defined: its loops run zero
# times, so its rows store the accumulator's initial zeros.

def _sparse_attention_ref(v, s):
    keep = np.asarray(v.mask, dtype=bool)
    nothing = ~keep.any(axis=1)
    # Rows that keep nothing may only be whole empty block rows (see above).
    for rb in range(cdiv(keep.shape[0], 32)):
        rows = nothing[rb * 32:(rb + 1) * 32]
        assert rows.all() or not rows.any(), "a query row keeps no key in a block row with blocks"
    return masked_attention_ref(v, s)


def _attention(suffix, heads, seq, pattern, flags=(), gpu_splits=(4,), **kw):
    shape = ("heads", "seq", "d")
    return ("sparse.attention" + suffix, ATTENTION, "sparse_attention",
            dict(sizes={"heads": heads, "seq": seq, "d": 64}, flags=flags, gpu_splits=gpu_splits,
                 grid=lambda s: (cdiv(s["seq"], 32), s["heads"]),
                 args=[Arr("q", "f32", shape, normal()), Arr("k", "f32", shape, normal()),
                       Arr("v", "f32", shape, normal()), Arr("o", "f32", shape, fill(9.0)),
                       BlockMask("mask", ("seq", "seq"), 32, 32, pattern, **kw),
                       Scalar("scale", "f32", 64 ** -0.5)],
                 ref=_sparse_attention_ref, tol=ATTENTION_TOL))


# The bf16 benchmark kernel (bench/kernels/sparse_attention_bf16.kiln): tensor-core
# products, probabilities rounded to bf16 before the product with V, 128 x 64 blocks and
# no bounds on the loads (seq a multiple of 128). On a GPU its fused loop keeps the
# scores and the accumulator in the tensor cores' fragments through the full- and
# partial-block branches; the GPU check compares that with the interpreter.
BENCH = "../../bench/kernels/sparse_attention_bf16.kiln"


def _bench_attention(suffix, seq, pattern, d=64, **kw):
    shape = ("heads", "seq", "d")
    return ("sparse.attention_bf16" + suffix, BENCH, "sparse_attention_bf16",
            dict(sizes={"heads": 2, "seq": seq, "d": d}, defines={"D": d}, gpu_splits=(2,),
                 grid=lambda s: (s["seq"] // 128, s["heads"]),
                 args=[Arr("q", "bf16", shape, normal()), Arr("k", "bf16", shape, normal()),
                       Arr("v", "bf16", shape, normal()), Arr("o", "bf16", shape),
                       BlockMask("mask", ("seq", "seq"), 128, 64, pattern, **kw),
                       Scalar("scale", "f32", d ** -0.5)],
                 # bf16 probabilities and output: a few units of the last place of bf16.
                 ref=masked_attention_ref, tol=Tol(2e-2, 2e-2)))


# ---- masks built from predicates ---------------------------------------------------
#
# `--arg mask=PREDICATE(ROWS,COLS,...)`: dslc builds the mask on the device from a Kiln
# predicate (stdlib/block_masks.kiln, or checkerboard in block_sparse.kiln) with the
# passes cases_mask_build.py checks one by one; the references see the same pattern
# drawn in NumPy, so these check the whole chain.

def checkerboard():
    """block_sparse.kiln's checkerboard: every other 4 x 8 block, and the diagonal."""
    def draw(rng, shape, bm, bn):
        r = np.arange(shape[0])[:, None]
        c = np.arange(shape[1])[None, :]
        return np.broadcast_to(((r // 4 + c // 8) % 2 == 0) | (r == c), shape)
    return MaskPattern("checkerboard", (), draw)


def _predicate(pattern):
    return (pattern.name if pattern.name != "sliding" else "sliding_window",) + pattern.params


CASES = [
    _bench_attention(".causal", 256, causal()),
    _bench_attention(".random", 384, random_blocks(0.3, 0.3), keep_diagonal=True),
    # The rest of the benchmark's six masks, scaled to 256 keys.
    _bench_attention(".sliding", 256, sliding(64)),
    _bench_attention(".causal_window", 256, causal_window(128)),
    _bench_attention(".dilated", 256, dilated(128, 2)),
    _bench_attention(".longformer", 256, longformer(16, 8)),
    _bench_attention(".bigbird", 256, bigbird(24, 16, 64, 10, 0)),
    # D 128: three buffers of 32 KiB on the kernel's two warpgroups, which sm_90a
    # publishes by mbarriers (codegen/LowerDot.cpp, MmaPipeline::published).
    _bench_attention(".d128.causal", 384, causal(), d=128),
    _bench_attention(".d128.bigbird", 256, bigbird(24, 16, 64, 10, 0), d=128),
    # A mix of empty, full and partial blocks on a grid of ragged edges (37 = 9·4 + 1
    # rows, 45 = 5·8 + 5 columns).
    _row_sum(".random", grid_sizes(37, 45), random_blocks(0.3, 0.3)),
    _row_sum(".random_sizes", random_grid(70, 100), random_blocks(0.3, 0.3)),
    _row_sum(".causal", grid_sizes(37, 45), causal()),
    _row_sum(".sliding", grid_sizes(40, 48), sliding(5)),
    # Every element kept: full blocks inside, partial ones at the ragged edges.
    _row_sum(".dense", grid_sizes(37, 45), dense()),
    _row_sum(".dense_exact", grid_sizes(32, 64), dense()),
    _row_sum(".diagonal", grid_sizes(37, 45), diagonal()),
    # Block rows with no block: the first, the fourth and the last (which holds the one
    # row past 36), and many more drawn at random.
    _row_sum(".empty_rows", grid_sizes(37, 45), random_blocks(0.2, 0.4), empty_rows=(0, 3, -1)),
    _row_sum(".mostly_empty", grid_sizes(37, 45), random_blocks(0.85, 0.1)),
    # Nothing kept at all: the compressed mask has no entry, only its padding.
    _row_sum(".nothing_kept", grid_sizes(37, 45), random_blocks(1.0, 0.0)),
    _row_sum(".one_element", grid_sizes(1, 1), dense()),

    _visits(".random", grid_sizes(37, 45), random_blocks(0.3, 0.3)),
    _visits(".causal", grid_sizes(37, 45), causal()),
    _visits(".diagonal", grid_sizes(37, 45), diagonal()),
    _visits(".sliding", grid_sizes(40, 48), sliding(5)),
    # Eight column blocks in every row, as many as MAXB: no -1 is written.
    _visits(".dense_exact", grid_sizes(32, 64), dense()),
    _visits(".empty_rows", grid_sizes(37, 45), random_blocks(0.2, 0.4), empty_rows=(0, 3, -1)),
    _visits(".wide", grid_sizes(21, 125), random_blocks(0.3, 0.3, 0.3), maxb=16),
    _visits(".nothing_kept", grid_sizes(37, 45), random_blocks(1.0, 0.0)),

    # Large entries first: without its maximum subtracted, exp would overflow.
    _masked_softmax(".random", grid_sizes(37, 45), random_blocks(0.3, 0.3),
                    x=with_specials(normal(4.0), [100.0, 95.0, -100.0])),
    _masked_softmax(".random_sizes", random_grid(70, 100), random_blocks(0.3, 0.3)),
    _masked_softmax(".causal", grid_sizes(37, 45), causal()),
    _masked_softmax(".sliding", grid_sizes(40, 48), sliding(5)),
    _masked_softmax(".dense", grid_sizes(37, 45), dense()),
    _masked_softmax(".diagonal", grid_sizes(37, 45), diagonal()),
    _masked_softmax(".empty_rows", grid_sizes(37, 45), random_blocks(0.2, 0.4), empty_rows=(0, 3, -1)),
    # Partial blocks that keep few elements: many rows keep nothing in a block row that
    # has blocks (m = -inf, l = NaN there, and nothing written).
    _masked_softmax(".sparse_rows", grid_sizes(37, 45), random_blocks(0.2, 0.0, 0.05)),

    _attention(".causal", 2, 100, causal()),
    _attention(".sliding", 2, 96, sliding(20)),
    _attention(".random", 2, 100, random_blocks(0.3, 0.3), keep_diagonal=True),
    _attention(".dense", 1, 64, dense()),
    # Block row 1 (queries 32..63) has no block: those rows come out as 0.
    _attention(".empty_block_row", 2, 100, random_blocks(0.3, 0.3), keep_diagonal=True,
               empty_rows=(1,)),
    # Both mappings whatever the cost model would pick from the mask (`dslc run` shows it
    # the mask): row-wise (one segment), and block-wise with three programs per block row
    # whose states merge, on a mask whose rows differ in length. The GPU check runs every
    # attention case row-wise (it compiles without the mask) and split in four.
    _attention(".row_wise", 2, 100, random_blocks(0.3, 0.3), flags=("--reduction-split=1",),
               keep_diagonal=True),
    _attention(".block_wise", 2, 100, random_blocks(0.3, 0.3), flags=("--reduction-split=3",),
               keep_diagonal=True),
    _attention(".block_wise_longformer", 1, 128, longformer(8, 4), flags=("--reduction-split=4",)),
    _attention(".longformer", 2, 100, longformer(6, 3)),
    # The rest of the benchmark's masks (docs/benchmarks.md), scaled down: causal
    # sliding, dilated (most partial blocks keep a third of their elements) and BigBird.
    _attention(".causal_window", 2, 100, causal_window(40)),
    _attention(".dilated", 2, 100, dilated(48, 3)),
    _attention(".bigbird", 2, 100, bigbird(6, 3, 16, 30, 7)),

    _row_sum(".predicate_causal", grid_sizes(37, 45), causal(), predicate="causal"),
    _row_sum(".predicate_sliding", random_grid(70, 100), sliding(5), predicate=_predicate(sliding(5))),
    _row_sum(".predicate_checkerboard", grid_sizes(37, 45), checkerboard(), predicate="checkerboard"),
    _visits(".predicate_dilated", grid_sizes(40, 48), dilated(12, 3), predicate=_predicate(dilated(12, 3))),
    _masked_softmax(".predicate_bigbird", grid_sizes(37, 45), bigbird(2, 3, 8, 30, 7),
                    predicate=_predicate(bigbird(2, 3, 8, 30, 7))),
    _attention(".predicate_bigbird", 2, 100, bigbird(6, 3, 16, 30, 7), predicate=_predicate(bigbird(6, 3, 16, 30, 7))),
    _attention(".predicate_longformer_block_wise", 1, 128, longformer(8, 4), flags=("--reduction-split=4",),
               predicate=("longformer", 8, 4)),
]


def register(add):
    """Adds this file's cases through cases.py's add()."""
    for name, file, kernel, kw in CASES:
        add(name, file, kernel, **kw)
