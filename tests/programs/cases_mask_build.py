#===- cases_mask_build.py - Block masks built on the device from a predicate ------===#
#
# The three passes of stdlib/block_mask_build.kiln (classify, index, bitmaps), as
# tests/programs/block_mask_build.kiln instantiates them for the stdlib predicates, each
# against a NumPy version of the same pass: the predicates rewritten in NumPy (BigBird's
# block hash included: kilncase's patterns), and the layout of support/BlockMask.h. Grids
# that are not multiples of the 4 x 8 blocks, a single element, states drawn at random
# (empty block rows, rows with everything, nothing kept at all) and chunks narrower and
# wider than a block row.
#
# `dslc run --arg mask=keep(ROWS,COLS)` chains the passes; cases_sparse.py runs kernels
# on masks built that way against the same references as masks read from .npy files.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import (EXACT, Arr, Scalar, bigbird, causal, causal_window, cdiv, dilated, fill, longformer, randint,
                      sliding)

FILE = "block_mask_build.kiln"
BM, BN = 4, 8


# ---- the predicates, as stdlib/block_masks.kiln writes them (kilncase) ------------

# block_mask_build.kiln's keep_* predicates, with their parameters.
PATTERNS = {
    "causal": causal(),
    "sliding": sliding(5),
    "causal_window": causal_window(9),
    "dilated": dilated(12, 3),
    "longformer": longformer(3, 2),
    "bigbird": bigbird(2, 3, 8, 30, 7),
}


def dense_mask(name, rows, cols):
    return PATTERNS[name](None, (rows, cols), BM, BN)


def block_tile(keep, rb, cb, bm, bn):
    """Block (rb, cb) of `keep`, padded with False past the grid's edges."""
    t = np.zeros((bm, bn), dtype=bool)
    part = keep[rb * bm:(rb + 1) * bm, cb * bn:(cb + 1) * bn]
    t[:part.shape[0], :part.shape[1]] = part
    return t


def bitmap_words(tile):
    bits = tile.reshape(-1).astype(np.uint64)
    lanes = min(32, bits.size)
    bits = bits.reshape(-1, lanes) << np.arange(lanes, dtype=np.uint64)[None, :]
    return bits.sum(axis=1)


# ---- references ------------------------------------------------------------------

def _classify_ref(pattern):
    def ref(v, s):
        keep = dense_mask(pattern, s["rows"], s["cols"])
        status = np.zeros((cdiv(s["rows"], BM), cdiv(s["cols"], BN)), dtype=np.int64)
        for rb in range(status.shape[0]):
            for cb in range(status.shape[1]):
                kept = int(block_tile(keep, rb, cb, BM, BN).sum())
                status[rb, cb] = 2 if kept == BM * BN else (1 if kept else 0)
        return {"status": status.reshape(-1)}
    return ref


def _index_ref(v, s):
    nbr, nbc = cdiv(s["rows"], BM), cdiv(s["cols"], BN)
    status = np.array(v.status, dtype=np.int64).reshape(nbr, nbc)
    row_start = np.zeros(nbr + 1, dtype=np.int64)
    blocks = np.array(v.blocks, dtype=np.int64)
    slot_of = np.full(nbr * nbc, -1, dtype=np.int64)
    entries = slots = 0
    for rb in range(nbr):
        row_start[rb] = entries
        for cb in range(nbc):
            if status[rb, cb] <= 0:
                continue
            slot = -1
            if status[rb, cb] == 1:
                slot, slots = slots, slots + 1
            blocks[2 * entries], blocks[2 * entries + 1] = cb, slot
            slot_of[rb * nbc + cb] = slot
            entries += 1
    row_start[nbr] = entries
    if entries == 0:
        blocks[0] = blocks[1] = 0
    return {"row_start": row_start, "blocks": blocks, "slot_of": slot_of, "totals": np.array([entries, slots])}


def _bitmaps_ref(pattern, bm, bn):
    def ref(v, s):
        keep = dense_mask(pattern, s["rows"], s["cols"])
        nbc = cdiv(s["cols"], bn)
        words = bm * bn // min(32, bm * bn)
        out = np.array(v.bitmaps, dtype=np.int64)
        for b, slot in enumerate(np.array(v.slot_of, dtype=np.int64)):
            if slot >= 0:
                out[slot * words:(slot + 1) * words] = bitmap_words(block_tile(keep, b // nbc, b % nbc, bm, bn))
        return {"bitmaps": out}
    return ref


# ---- cases -----------------------------------------------------------------------

def _sizes(rows, cols):
    return {"rows": rows, "cols": cols}


def _random_sizes(r):
    return {"rows": int(r.integers(1, 80)), "cols": int(r.integers(1, 100))}


def _blocks(s, bm=BM, bn=BN):
    return cdiv(s["rows"], bm) * cdiv(s["cols"], bn)


def _grid(bm, bn):
    return lambda s: (cdiv(s["rows"], bm), cdiv(s["cols"], bn))


def _extents():
    return [Scalar("rows", "i32", "rows"), Scalar("cols", "i32", "cols")]


def _classify(pattern, suffix, sizes):
    return ("mask_build.classify_%s%s" % (pattern, suffix), FILE, "classify_" + pattern,
            dict(sizes=sizes, grid=_grid(BM, BN),
                 args=[Arr("status", "i32", _blocks, fill(-9))] + _extents(),
                 ref=_classify_ref(pattern), tol=EXACT))


def _index(suffix, sizes, states=randint(0, 3), chunk=None):
    return ("mask_build.index" + suffix, FILE, "index",
            dict(sizes=sizes, grid=(1,), defines={} if chunk is None else {"CHUNK": chunk},
                 args=[Arr("status", "i32", _blocks, states),
                       Arr("row_start", "i32", lambda s: cdiv(s["rows"], BM) + 1, fill(-9)),
                       Arr("blocks", "i32", lambda s: 2 * max(1, _blocks(s)), fill(-9)),
                       Arr("slot_of", "i32", _blocks, fill(-9)),
                       Arr("totals", "i32", 2, fill(-9))] + _extents(),
                 ref=_index_ref, tol=EXACT))


def _slots(rng, shape):
    """Each block its own slot in a random order, or -1 (not partial) for a third."""
    n = int(np.prod(shape))
    return np.where(rng.random(n) < 1 / 3, -1, rng.permutation(n)).reshape(shape)


def _bitmaps(kernel, pattern, suffix, sizes, bm=BM, bn=BN):
    words = bm * bn // min(32, bm * bn)
    blocks = lambda s: _blocks(s, bm, bn)  # noqa: E731
    return ("mask_build.%s%s" % (kernel, suffix), FILE, kernel,
            dict(sizes=sizes, grid=_grid(bm, bn),
                 args=[Arr("slot_of", "i32", blocks, _slots),
                       Arr("bitmaps", "u32", lambda s: words * blocks(s), fill(7))] + _extents(),
                 ref=_bitmaps_ref(pattern, bm, bn), tol=EXACT))


CASES = (
    [_classify(p, "", _sizes(37, 45)) for p in PATTERNS]
    + [_classify(p, ".random_sizes", _random_sizes) for p in ("causal", "bigbird")]
    + [_classify("dilated", ".exact", _sizes(32, 64)), _classify("longformer", ".one_element", _sizes(1, 1))]
    + [
        _index(".random", _sizes(37, 45)),
        _index(".random_sizes", _random_sizes),
        # A chunk wider than a block row (6 column blocks) and one that divides it.
        _index(".wide_chunk", _sizes(37, 45), chunk=16),
        _index(".chunk_of_two", _sizes(37, 45), chunk=2),
        _index(".all_full", _sizes(37, 45), states=fill(2)),
        _index(".all_partial", _sizes(20, 30), states=fill(1)),
        # No entry at all: row_start is all zeros and blocks holds its padding pair.
        _index(".nothing_kept", _sizes(37, 45), states=fill(0)),
        _index(".one_block", _sizes(1, 1)),
        _bitmaps("bitmaps_causal", "causal", "", _sizes(37, 45)),
        _bitmaps("bitmaps_sliding", "sliding", ".random_sizes", _random_sizes),
        _bitmaps("bitmaps_dilated", "dilated", "", _sizes(40, 48)),
        _bitmaps("bitmaps_bigbird", "bigbird", "", _sizes(37, 45)),
        _bitmaps("bitmaps_small", "sliding", "", _sizes(19, 23), bm=2, bn=4),
    ]
)


def register(add):
    """Adds this file's cases through cases.py's add()."""
    for name, file, kernel, kw in CASES:
        add(name, file, kernel, **kw)
