#===- cases_memory.py - Cases of the memory builtins' options ----------------------===#
#
# atomic_and / atomic_or / atomic_xor, the `sem` and `scope` of atomics and the cache
# hints of load and store (tests/programs/atomic_bitwise.kiln), run on the interpreter
# and every backend like the rest of the corpus.
#
# Bitwise updates commute, so what they leave in memory is the same whatever order the
# programs reach it in: the references fold each cell's values with NumPy's bitwise
# reductions. The options change no value; the kernels that use them are checked like
# any other (a lock taken and released, per-program counters, a hinted copy).
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import EXACT, Arr, Scalar, cdiv, fill, normal, randint

FILE = "atomic_bitwise.kiln"


def rand_n(lo, hi):
    """Sizes with one random length n in [lo, hi)."""
    return lambda r: {"n": int(r.integers(lo, hi))}


def blocks(block):
    return lambda s: (cdiv(s["n"], block),)


def full_range(dtype):
    """Every value of an integer dtype (the GPU check fills these buffers with `bits`)."""
    info = np.iinfo(dtype)
    return lambda rng, shape: rng.integers(int(info.min), int(info.max) + 1, size=shape,
                                           dtype=dtype)


def _fold_cells(init, vals, cells, op):
    """init[c] op-folded with every vals[i] whose cell is c."""
    out = np.array(init, copy=True)
    idx = np.arange(len(vals)) % cells
    for c in range(cells):
        out[c] = op.reduce(np.concatenate([[out[c]], vals[idx == c]]).astype(out.dtype))
    return out


def _cells_ref(v, s):
    return {"ors": _fold_cells(v.ors, v.x, 16, np.bitwise_or),
            "ands": _fold_cells(v.ands, v.x, 16, np.bitwise_and),
            "xors": _fold_cells(v.xors, v.x, 16, np.bitwise_xor)}


def _widths_ref(v, s):
    return {"a8": _fold_cells(v.a8, v.v8, 8, np.bitwise_or),
            "b16": _fold_cells(v.b16, v.v16, 8, np.bitwise_xor),
            "c64": _fold_cells(v.c64, v.v64, 8, np.bitwise_and),
            "once": v.once ^ v.w64, "old": v.once}


def _block_local_ref(v, s):
    p, block = s["programs"], 128
    keys = v.keys.reshape(p, block).astype(np.int64)
    counts = np.stack([np.bincount(keys[i] % 8, minlength=8) for i in range(p)])
    seen = np.array([np.bitwise_or.reduce(np.uint64(1) << (keys[i] % 32).astype(np.uint64))
                     for i in range(p)])
    return {"counts": counts.reshape(-1) + v.counts, "seen": seen.astype(np.uint32) | v.seen,
            "peaks": np.maximum(v.peaks, keys.max(axis=1))}


def _hinted_ref(v, s):
    return {"y": v.x * np.float32(2.0), "hy": v.h, "by": (v.b.astype(np.int64) + 1) % 256,
            "dy": v.d + 0.5}


def register(add):
    """Adds this file's cases through cases.py's add()."""
    add("memory.atomic_bitwise", FILE, "bitwise_cells", sizes=rand_n(300, 1500), grid=blocks(64),
        args=[Arr("x", "i32", "n", full_range(np.int32)),
              Arr("ors", "i32", 16, full_range(np.int32)),
              Arr("ands", "i32", 16, full_range(np.int32)),
              Arr("xors", "i32", 16, full_range(np.int32)), Scalar("n", "i32", "n")],
        ref=_cells_ref, tol=EXACT)

    add("memory.atomic_bitwise_widths", FILE, "bitwise_widths", sizes=rand_n(40, 300),
        grid=blocks(32),
        args=[Arr("a8", "u8", 8, full_range(np.uint8)), Arr("b16", "i16", 8, full_range(np.int16)),
              Arr("c64", "u64", 8, full_range(np.uint64)),
              Arr("once", "i64", "n", full_range(np.int64)),
              Arr("v8", "u8", "n", full_range(np.uint8)), Arr("v16", "i16", "n", full_range(np.int16)),
              Arr("v64", "u64", "n", full_range(np.uint64)),
              Arr("w64", "i64", "n", full_range(np.int64)), Arr("old", "i64", "n"),
              Scalar("n", "i32", "n")],
        ref=_widths_ref, tol=EXACT)

    add("memory.atomic_scope_cta", FILE, "block_local",
        sizes=lambda r: {"programs": int(r.integers(2, 7))}, grid=("programs",),
        args=[Arr("counts", "i32", lambda s: 8 * s["programs"], randint(0, 100)),
              Arr("seen", "u32", "programs", full_range(np.uint32)),
              Arr("peaks", "i32", "programs", randint(-50, 1500)),
              Arr("keys", "i32", lambda s: 128 * s["programs"], randint(0, 1000))],
        ref=_block_local_ref, tol=EXACT)

    add("memory.atomic_acquire_release", FILE, "acquire_release", grid=(20,),
        args=[Arr("lock", "i32", 1), Arr("counter", "i32", 1)],
        ref=lambda v, s: {"lock": [0], "counter": [20 * 21 // 2]})

    add("memory.cache_hints", FILE, "hinted_copy", sizes=rand_n(300, 1000), grid=blocks(256),
        args=[Arr("x", "f32", "n", normal()), Arr("h", "bf16", "n", normal()),
              Arr("b", "u8", "n", full_range(np.uint8)),
              Arr("d", "f64", lambda s: cdiv(s["n"], 256), normal()),
              Arr("y", "f32", "n"), Arr("hy", "bf16", "n"), Arr("by", "u8", "n"),
              Arr("dy", "f64", lambda s: cdiv(s["n"], 256), fill(1.0)), Scalar("n", "i32", "n")],
        ref=_hinted_ref, tol=EXACT)
