#===- kilncase.py - How differential test cases of Kiln kernels are described --===#
#
# A case names a Kiln file, a kernel, a grid, `-D` overrides, its arguments and a numpy
# reference. The runner (run_kernels.py) turns a case into fresh random `.npy` inputs,
# one `dslc run` and a comparison of every output against the reference.
#
# Values and files: every array has a Kiln dtype. The reference sees "values": numpy
# arrays of a native dtype (f16 as float16, i8 as int8, ...), except bf16 and the f8
# formats, which numpy lacks: their values are float32 arrays holding numbers that are
# exactly representable in the format. The files carry what `dslc run` expects: the
# exact little-endian dtype, bf16 as raw '|V2' and f8 as raw '|V1' bit patterns. A
# block_mask parameter (BlockMask) is a dense bool array of its [rows, cols] elements
# both for the reference and in its file; `dslc run` compresses it.
#
#===---------------------------------------------------------------------------===#
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import numpy as np

# ---- dtypes ---------------------------------------------------------------------------

# Kiln dtype -> (numpy dtype of the values, numpy dtype of the .npy file).
_NATIVE = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
_RAW_WIDTH = {"bf16": 2, "f8e4m3": 1, "f8e5m2": 1}


def is_float(dtype: str) -> bool:
    return dtype.startswith("f") or dtype == "bf16"


# ---- bf16 -----------------------------------------------------------------------------

def bf16_bits(a) -> np.ndarray:
    """float32 values -> bf16 bit patterns (uint16), round to nearest even."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    # NaN must stay NaN even when its payload sits in the low half only.
    quiet = ((u >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(a), quiet, rounded)


def bf16_value(bits) -> np.ndarray:
    """bf16 bit patterns -> float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(a) -> np.ndarray:
    """Rounds to the nearest bf16 (through float32, as Kiln's f32 -> bf16 cast does)."""
    return bf16_value(bf16_bits(np.asarray(a, dtype=np.float32)))


# ---- f8 (OCP E4M3 "fn" and E5M2) -----------------------------------------------------

def _f8_table(exp_bits: int, man_bits: int, has_inf: bool) -> np.ndarray:
    """The float value of each of the 256 codes."""
    bias = (1 << (exp_bits - 1)) - 1
    out = np.zeros(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        if has_inf and e == (1 << exp_bits) - 1:
            out[code] = sign * math.inf if m == 0 else math.nan
        elif not has_inf and e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
            out[code] = math.nan
        elif e == 0:
            out[code] = sign * m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            out[code] = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return out


_F8 = {"f8e4m3": _f8_table(4, 3, False), "f8e5m2": _f8_table(5, 2, True)}


def f8_bits(a, fmt: str) -> np.ndarray:
    """Values -> f8 codes: round to nearest even, saturate to the largest finite value."""
    table = _F8[fmt]
    pos = table[:128]
    finite = np.isfinite(pos)
    max_code = int(np.nonzero(finite)[0].max())
    vals = pos[: max_code + 1]  # increasing with the code
    a = np.asarray(a, dtype=np.float64)
    mag = np.minimum(np.abs(np.nan_to_num(a, nan=0.0, posinf=np.inf)), vals[-1])
    hi = np.clip(np.searchsorted(vals, mag), 0, max_code)
    lo = np.clip(hi - 1, 0, max_code)
    d_lo, d_hi = mag - vals[lo], vals[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo).astype(np.uint8)
    code = code | np.where(np.signbit(a), 0x80, 0).astype(np.uint8)
    nan_code = 0x7F
    return np.where(np.isnan(a), nan_code, code).astype(np.uint8)


def f8_value(bits, fmt: str) -> np.ndarray:
    return _F8[fmt][np.asarray(bits, dtype=np.uint8)].astype(np.float32)


def round_f8(a, fmt: str) -> np.ndarray:
    return f8_value(f8_bits(a, fmt), fmt)


# ---- values <-> files -----------------------------------------------------------------

def to_values(a, dtype: str) -> np.ndarray:
    """Converts numbers to the values a Kiln array of `dtype` can hold (rounding floats
    to nearest even; integers must already be in range)."""
    if dtype == "bf16":
        return round_bf16(a)
    if dtype in _F8:
        return round_f8(a, dtype)
    return np.asarray(a).astype(_NATIVE[dtype])


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values -> the array `dslc run` reads (C-contiguous, exact file dtype)."""
    if dtype == "bf16":
        out = bf16_bits(values).view("V2")
    elif dtype in _F8:
        out = f8_bits(values, dtype).view("V1")
    else:
        out = np.asarray(values, dtype=_NATIVE[dtype])
    return np.ascontiguousarray(out)


def file_descr(dtype: str) -> str:
    if dtype in _RAW_WIDTH:
        return "|V%d" % _RAW_WIDTH[dtype]
    return np.dtype(_NATIVE[dtype]).newbyteorder("<").str.replace("=", "<")


def decode(arr: np.ndarray, dtype: str) -> np.ndarray:
    """An array read back from a file -> values."""
    if dtype == "bf16":
        return bf16_value(arr.view(np.uint16))
    if dtype in _F8:
        return f8_value(arr.view(np.uint8), dtype)
    return arr.astype(_NATIVE[dtype])


# ---- coverage -------------------------------------------------------------------------

def covered_by_cases(rel, used, repo):
    """Whether the Kiln file `rel` (relative to `repo`) is run by a case: it is the file
    of one (`used`, normalized relative paths), or it holds no kernel (a library of fns,
    such as stdlib/block_masks.kiln) and a file of one imports it."""
    import os
    import re
    if rel in used:
        return True
    with open(os.path.join(repo, rel)) as f:
        if re.search(r"^[^/\n]*\bkernel\s+\w+\s*\(", f.read(), re.M):
            return False
    target = os.path.normpath(os.path.join(repo, rel))
    for user in used:
        with open(os.path.join(repo, user)) as f:
            for path in re.findall(r'^\s*import\s+"([^"]+)"\s*;', f.read(), re.M):
                candidates = [os.path.join(repo, os.path.dirname(user), path), os.path.join(repo, path)]
                if any(os.path.normpath(c) == target for c in candidates):
                    return True
    return False


# ---- generators -----------------------------------------------------------------------
# A generator is called as gen(rng, shape) and returns numbers; the runner rounds them to
# the array's dtype.

Gen = Callable[[np.random.Generator, tuple], np.ndarray]


def normal(scale: float = 1.0, mean: float = 0.0) -> Gen:
    return lambda rng, shape: rng.normal(mean, scale, size=shape)


def uniform(lo: float, hi: float) -> Gen:
    return lambda rng, shape: rng.uniform(lo, hi, size=shape)


def randint(lo: int, hi: int) -> Gen:
    """Integers in [lo, hi)."""
    return lambda rng, shape: rng.integers(lo, hi, size=shape, dtype=np.int64)


def signed_uniform(lo: float, hi: float) -> Gen:
    """Magnitudes in [lo, hi) with a random sign (keeps divisors away from zero)."""
    def gen(rng, shape):
        return rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return gen


def boolean(p: float = 0.5) -> Gen:
    return lambda rng, shape: rng.random(size=shape) < p


def fill(value) -> Gen:
    return lambda rng, shape: np.full(shape, value)


def zeros() -> Gen:
    return fill(0)


def with_specials(base: Gen, specials) -> Gen:
    """`base`, with the first elements (in row-major order) replaced by `specials`."""
    def gen(rng, shape):
        a = np.asarray(base(rng, shape), dtype=np.float64).reshape(-1)
        k = min(len(specials), a.size)
        a[:k] = specials[:k]
        return a.reshape(shape)
    return gen


# ---- case description -----------------------------------------------------------------

Sizes = dict


def resolve(x, sizes: Sizes):
    """An int, a size name, a callable of the sizes, or a tuple/list of those."""
    if isinstance(x, (tuple, list)):
        return tuple(resolve(e, sizes) for e in x)
    if isinstance(x, str):
        return sizes[x]
    if callable(x):
        return x(sizes)
    return x


@dataclass
class Arr:
    """A pointer parameter: the buffer is an array of `shape` (flattened for the kernel).
    Arrays the reference returns are outputs; every other array must come back unchanged."""
    name: str
    dtype: str
    shape: Any
    gen: Gen = field(default_factory=zeros)


class MaskPattern:
    """How a block mask's elements are drawn: called as pattern(rng, (rows, cols), bm, bn),
    it returns the dense bool element mask. `spec` is the pattern as the spec line of the
    GPU check and the SPIR-V test writes it (tests/spirv/KernelCase.h), which draws the
    same distribution in C++."""

    def __init__(self, name: str, params: tuple, draw):
        self.name, self.params, self._draw = name, tuple(params), draw

    def __call__(self, rng, shape, bm: int, bn: int) -> np.ndarray:
        return np.asarray(self._draw(rng, shape, bm, bn), dtype=bool)

    @property
    def spec(self) -> str:
        return " ".join([self.name] + [repr(float(p)) if isinstance(p, float) else str(p)
                                       for p in self.params])

    def __repr__(self):
        return "MaskPattern(%s)" % self.spec


def random_blocks(p_empty: float, p_full: float, p_elem: float = 0.5) -> MaskPattern:
    """Each BM x BN block (cut at the grid's edge) is empty with probability p_empty,
    full with p_full, and otherwise keeps each element with probability p_elem."""
    def draw(rng, shape, bm, bn):
        rows, cols = shape
        nbr, nbc = cdiv(rows, bm), cdiv(cols, bn)
        kind = rng.random((nbr, nbc))
        elems = rng.random((nbr, bm, nbc, bn)) < p_elem
        full = (kind >= p_empty) & (kind < p_empty + p_full)
        partial = kind >= p_empty + p_full
        keep = full[:, None, :, None] | (partial[:, None, :, None] & elems)
        return keep.reshape(nbr * bm, nbc * bn)[:rows, :cols]
    return MaskPattern("random", (float(p_empty), float(p_full), float(p_elem)), draw)


def _element_rule(name, params, rule) -> MaskPattern:
    def draw(rng, shape, bm, bn):
        r = np.arange(shape[0], dtype=np.int64)[:, None]
        c = np.arange(shape[1], dtype=np.int64)[None, :]
        return np.broadcast_to(rule(r, c), shape)
    return MaskPattern(name, params, draw)


def causal() -> MaskPattern:
    """Element (r, c) kept when c <= r."""
    return _element_rule("causal", (), lambda r, c: c <= r)


def sliding(w: int) -> MaskPattern:
    """Element (r, c) kept when |r - c| <= w."""
    return _element_rule("sliding", (int(w),), lambda r, c: np.abs(r - c) <= w)


def longformer(w: int, g: int) -> MaskPattern:
    """A band |r - c| <= w and g global tokens: rows and columns below g kept whole, so
    the first block rows are far longer than the others."""
    return _element_rule("longformer", (int(w), int(g)),
                         lambda r, c: (np.abs(r - c) <= w) | (r < g) | (c < g))


def random_block(rb, cb, percent, seed):
    """stdlib/block_masks.kiln's random_block in NumPy: whether block (rb, cb) is kept,
    from the same hash in wrapping u32 arithmetic."""
    def u32(x):
        return np.asarray(x, dtype=np.int64).astype(np.uint32)
    h = (u32(rb) * np.uint32(2654435761)) ^ (u32(cb) * np.uint32(2246822519)) ^ (u32(seed) * np.uint32(3266489917))
    h = (h ^ (h >> np.uint32(15))) * np.uint32(2246822519)
    h = (h ^ (h >> np.uint32(13))) * np.uint32(3266489917)
    h = h ^ (h >> np.uint32(16))
    return (h % np.uint32(100)).astype(np.int64) < percent


def causal_window(w: int) -> MaskPattern:
    """Causal and fewer than w positions back: 0 <= r - c < w."""
    return _element_rule("causal_window", (int(w),), lambda r, c: (c <= r) & (r - c < w))


def dilated(w: int, d: int) -> MaskPattern:
    """Every d-th key within w of the query: |r - c| <= w and (r - c) % d == 0 (C's
    remainder), as stdlib/block_masks.kiln's dilated."""
    return _element_rule("dilated", (int(w), int(d)),
                         lambda r, c: (np.abs(r - c) <= w) & (np.fmod(r - c, d) == 0))


def bigbird(w: int, g: int, b: int, percent: int, seed: int) -> MaskPattern:
    """Longformer's band and global tokens plus random b x b blocks, as
    stdlib/block_masks.kiln's bigbird."""
    return _element_rule("bigbird", (int(w), int(g), int(b), int(percent), int(seed)),
                         lambda r, c: (np.abs(r - c) <= w) | (r < g) | (c < g) |
                         random_block(r // b, c // b, percent, seed))


def dense() -> MaskPattern:
    """Every element kept."""
    return _element_rule("dense", (), lambda r, c: np.ones_like(r + c, dtype=bool))


def diagonal() -> MaskPattern:
    """Only the elements with r == c kept."""
    return _element_rule("diagonal", (), lambda r, c: r == c)


class BlockMask(Arr):
    """A `block_mask<BM, BN>` parameter. Its file is the dense element mask, a bool array
    of `shape` (rows, cols), which `dslc run` compresses into the five runtime parameters;
    the reference sees that dense bool array. `pattern` (a MaskPattern) draws it; then
    `keep_diagonal` keeps every element (i, i), and the block rows of `empty_rows`
    (indices, negative from the end) are cleared, so that the loop over them is empty.
    With `predicate`, the mask reaches `dslc run` as that Kiln predicate instead."""

    def __init__(self, name: str, shape, bm: int, bn: int, pattern: MaskPattern,
                 keep_diagonal: bool = False, empty_rows: tuple = (), predicate=None):
        self.bm, self.bn, self.pattern = int(bm), int(bn), pattern
        # A Kiln element predicate that keeps what `pattern` draws, as its name or a tuple
        # (name, integer arguments...): `dslc run` is given
        # `--arg NAME=PREDICATE(ROWS,COLS,ARGS...)` and builds the mask on the device from
        # it, and the reference sees the pattern's dense array.
        self.predicate = (predicate,) if isinstance(predicate, str) else predicate
        self.keep_diagonal, self.empty_rows = bool(keep_diagonal), tuple(int(r) for r in empty_rows)
        super().__init__(name, "bool", shape, self._draw)

    def _draw(self, rng, shape):
        if len(shape) != 2:
            raise ValueError("block mask %s: shape %s is not (rows, cols)" % (self.name, shape))
        keep = np.array(self.pattern(rng, shape, self.bm, self.bn), dtype=bool)
        if self.keep_diagonal:
            d = np.arange(min(shape))
            keep[d, d] = True
        block_rows = cdiv(shape[0], self.bm)
        for rb in self.empty_rows:
            if not -block_rows <= rb < block_rows:
                raise ValueError("block mask %s: no block row %d of %d" % (self.name, rb, block_rows))
            rb %= block_rows
            keep[rb * self.bm:(rb + 1) * self.bm, :] = False
        return keep

    @property
    def spec_modifiers(self) -> str:
        """The spec line's words after the pattern (tests/spirv/KernelCase.h)."""
        words = []
        if self.keep_diagonal:
            words.append("keep_diagonal")
        if self.empty_rows:
            words += ["empty_rows"] + [str(r) for r in self.empty_rows]
        return " ".join(words)


@dataclass
class Scalar:
    """A scalar parameter; `value` is a number, a size name or a callable of the sizes."""
    name: str
    dtype: str
    value: Any


@dataclass
class Tol:
    """An element passes when |got - expected| <= atol + rtol * |expected|."""
    rtol: float = 0.0
    atol: float = 0.0


EXACT = Tol(0.0, 0.0)

DEFAULT_TOL = {
    "f64": Tol(1e-12, 1e-12),
    "f32": Tol(1e-5, 1e-6),
    "f16": Tol(2e-3, 1e-3),
    "bf16": Tol(1e-2, 1e-2),
    "f8e4m3": Tol(0.13, 1e-2),
    "f8e5m2": Tol(0.26, 1e-2),
}


def default_tol(dtype: str) -> Tol:
    return DEFAULT_TOL.get(dtype, EXACT)


@dataclass
class Case:
    """One `dslc run` compared against numpy.

    ref(v, s) gets the values of every argument before the run (outputs hold their
    initial contents), as attributes of `v`, and the sizes `s`; it returns a dict
    output name -> expected values (any shape-compatible numeric array)."""
    name: str
    file: str                       # relative to the repository root
    kernel: str
    grid: Any                       # tuple of Dims, or callable(sizes) -> tuple
    args: list
    ref: Callable[[Any, Sizes], dict]
    sizes: Union[Sizes, Callable[[np.random.Generator], Sizes]] = field(default_factory=dict)
    defines: Union[dict, Callable[[Sizes], dict]] = field(default_factory=dict)
    tol: Union[Tol, dict, None] = None
    expect_error: Optional[str] = None  # a code such as "E0604": the run must fail with it
    expect_stdout: Optional[str] = None  # a substring the run must print
    # Segment counts the GPU check also runs the case with (dslc's --reduction-split), as
    # cases named <name>.split<S> (tests/gpu/make_specs.py).
    gpu_splits: tuple = ()
    # dslc options the case always runs with, such as "--fuse-quantized" (the GPU check
    # compiles with them too); a --reduction-split of the run replaces the case's own.
    # The reference sees whether fusion was on as `v.fusion`, and the forced segment
    # count as `v.segments` (None: the cost model's choice).
    flags: tuple = ()

    def tol_for(self, out: str, dtype: str) -> Tol:
        if isinstance(self.tol, Tol):
            return self.tol
        if isinstance(self.tol, dict) and out in self.tol:
            return self.tol[out]
        return default_tol(dtype)


class Values:
    """Attribute access to the argument values handed to a reference."""

    def __init__(self, d: dict):
        self.__dict__.update(d)

    def __getitem__(self, k):
        return self.__dict__[k]


# ---- helpers for references -----------------------------------------------------------

def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def c_div(a, b):
    """C integer division (truncate toward zero); x / 0 = 0, in the operands' dtype."""
    a = np.asarray(a)
    b = np.asarray(b)
    dt = np.result_type(a, b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
    return np.where(b64 == 0, 0, q).astype(dt)


def c_rem(a, b):
    """C remainder (sign of the dividend); x % 0 = 0."""
    a = np.asarray(a)
    b = np.asarray(b)
    dt = np.result_type(a, b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    r = a64 - c_div(a64, b64).astype(np.int64) * b64
    return np.where(b64 == 0, 0, r).astype(dt)


_INT_RANGE = {d: (np.iinfo(_NATIVE[d]).min, np.iinfo(_NATIVE[d]).max)
              for d in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")}


def sat_cast(x, dtype: str):
    """Kiln float -> integer cast: truncate toward zero, saturate, NaN -> 0."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = _INT_RANGE[dtype]
    t = np.trunc(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf))
    # Compare in float64 against the bounds; the largest i64/u64 are not exact in float64,
    # so clamp with the integer bounds afterwards.
    big = t >= float(hi)
    small = t <= float(lo)
    mid = np.where(big | small, 0, t).astype(np.int64 if dtype != "u64" else np.uint64)
    out = mid.astype(_NATIVE[dtype])
    out = np.where(big, np.array(hi, dtype=_NATIVE[dtype]), out)
    out = np.where(small, np.array(lo, dtype=_NATIVE[dtype]), out)
    return out.astype(_NATIVE[dtype])


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


def sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-x))


def f32(x):
    return np.asarray(x, dtype=np.float32)


def f64(x):
    return np.asarray(x, dtype=np.float64)


def softmax_rows(x):
    x = f64(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_ref(causal, scale=lambda v, s: float(v.scale)):
    """A reference for attention kernels (q, k, v -> o, [heads, seq, d]): softmax(q kᵀ
    scale) v per head in f64, keys after the query masked when causal. `scale(v, s)`
    gives the factor (default: the kernel's `scale` argument)."""
    def ref(v, s):
        q, k, vv = f64(v.q), f64(v.k), f64(v.v)
        scores = np.einsum("hid,hjd->hij", q, k) * scale(v, s)
        if causal:
            n = scores.shape[-1]
            scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        return {"o": np.einsum("hij,hjd->hid", softmax_rows(scores), vv)}
    return ref


def masked_row_sum_ref(v, s):
    """A reference for block-sparse row sums (x, out, mask): out[r] = Σ x[r, c] over the
    elements the dense bool mask keeps, in f64."""
    return {"out": np.where(v.mask, f64(v.x), 0.0).sum(axis=1)}


def masked_attention_ref(v, s):
    """A reference for block-sparse attention (q, k, v, mask, scale -> o, [heads, seq, d]):
    softmax(q kᵀ scale) v over the keys the dense bool mask keeps, in f64. A query row
    that keeps no key comes out as 0: its loops never run (an empty block row)."""
    keep = np.asarray(v.mask, dtype=bool)
    scores = np.where(keep, np.einsum("hid,hjd->hij", f64(v.q), f64(v.k)) * float(v.scale), -np.inf)
    m = scores.max(axis=-1, keepdims=True)
    e = np.where(keep, np.exp(scores - np.where(np.isfinite(m), m, 0.0)), 0.0)
    l = e.sum(axis=-1, keepdims=True)
    return {"o": np.einsum("hij,hjd->hid", e / np.where(l > 0, l, 1.0), f64(v.v))}


def fp8_quant_per_row(v, s):
    """A reference for per-token quantization kernels (x, q, scale): each row's absmax
    scale (1 for a zero row) and its f8e4m3 codes, with the f32 steps the kernels take and
    one rounding to f8, so that the result is bit-exact."""
    x = f32(v.x)
    amax = np.abs(x).max(axis=1)
    scale = np.where(amax > 0, amax / np.float32(448.0), np.float32(1.0)).astype(np.float32)
    inv = (np.float32(1.0) / scale).astype(np.float32)
    return {"q": round_f8((x * inv[:, None]).astype(np.float32), "f8e4m3"), "scale": scale}


def fp8_matmul_ref(bk: int, fuse_quantized: bool):
    """A reference for the quant_matmul kernels (x, w, y, w_scale): y = q(x)·w with each
    row of x quantized to f8e4m3 by its absmax scale (1 for a zero row), then scaled back.

    As written, every block of K is quantized with the row's final scale. Fused (the case
    runs with --fuse-quantized and v.fusion is on), each BK-wide block is quantized with
    the maximum known so far and the accumulator rescaled by inv/inv_prev when it grows;
    split over v.segments segments, each segment does so over its share of the blocks
    from a maximum of 0, and the merge brings each segment's sum to the final scale.
    That is modelled step by step, in the kernel's f32 for everything but the sums."""
    def scale_of(amax):
        return np.where(amax > 0, amax / np.float32(448.0), np.float32(1.0)).astype(np.float32)

    def inv_of(scale):
        return (np.float32(1.0) / scale).astype(np.float32)

    def quantized(x, inv):
        return f64(round_f8((x * inv[:, None]).astype(np.float32), "f8e4m3"))

    def ref(v, s):
        x, w = f32(v.x), f64(v.w)
        rows, depth = x.shape
        amax = np.abs(x).max(axis=1) if depth else np.zeros(rows, np.float32)
        scale = scale_of(amax)
        if not (fuse_quantized and v.fusion):
            acc = quantized(x, inv_of(scale)) @ w
        else:
            blocks, segments = -(-depth // bk), v.segments or 1
            acc = np.zeros((rows, w.shape[1]))
            for s in range(segments):
                part = np.zeros((rows, w.shape[1]))
                running = np.zeros(rows, np.float32)
                inv_prev = inv_of(scale_of(running))
                for blk in range(s * blocks // segments, (s + 1) * blocks // segments):
                    block = x[:, blk * bk:(blk + 1) * bk]
                    running = np.maximum(running, np.abs(block).max(axis=1))
                    inv = inv_of(scale_of(running))
                    part = part * f64(inv / inv_prev)[:, None] + quantized(block, inv) @ w[blk * bk:(blk + 1) * bk]
                    inv_prev = inv
                acc += part * f64(inv_of(scale) / inv_prev)[:, None]
        return {"y": acc * (f64(scale) * f64(v.w_scale))[:, None]}
    return ref


def strided_row_args():
    """The arguments of a row kernel (x, y, n_cols, row_stride) over `rows` rows of `n`
    columns, `stride` apart (default n). Large entries come first in x: a softmax without
    its max subtraction overflows on them."""
    shape = lambda s: (s["rows"], s.get("stride", s["n"]))  # noqa: E731
    return [Arr("x", "f32", shape, with_specials(normal(4.0), [100.0, 95.0, -100.0])),
            Arr("y", "f32", shape),
            Scalar("n_cols", "i32", "n"),
            Scalar("row_stride", "i32", lambda s: s.get("stride", s["n"]))]


def on_first_columns(row_ref):
    """A reference for strided_row_args: `row_ref` on the first n columns of x; y's
    padding columns keep their contents."""
    def ref(v, s):
        y = f64(v.y).copy()
        y[:, : s["n"]] = row_ref(v.x[:, : s["n"]])
        return {"y": y}
    return ref


def stable_topk_indices(x, k: int, axis: int = -1):
    """Indices of the k largest along `axis`, largest first, lower index first on ties."""
    x = np.asarray(x)
    key = -x.astype(np.float64) if is_float_array(x) else -x.astype(np.int64)
    return np.argsort(key, axis=axis, kind="stable").take(np.arange(k), axis=axis)


def is_float_array(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def wrap(x, dtype: str):
    """Integer results wrapped to `dtype` (two's complement), as Kiln integers overflow."""
    return np.asarray(x).astype(np.int64).astype(_NATIVE[dtype]) if dtype != "u64" \
        else np.asarray(x).astype(np.uint64)


# ---- random numbers (Philox 4x32, as Kiln and Triton draw them) -------------------------

def philox4x32(c, k0, k1, rounds=10):
    """Philox 4x32 over counters c (four uint32 arrays) under the key (k0, k1)."""
    c0, c1, c2, c3 = [np.asarray(x, np.uint32) for x in c]
    k0, k1 = int(k0) & 0xffffffff, int(k1) & 0xffffffff
    for r in range(rounds):
        p0 = c0.astype(np.uint64) * np.uint64(0xD2511F53)
        p2 = c2.astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), p0.astype(np.uint32)
        hi2, lo2 = (p2 >> np.uint64(32)).astype(np.uint32), p2.astype(np.uint32)
        c0, c1, c2, c3 = hi2 ^ c1 ^ np.uint32(k0), lo2, hi0 ^ c3 ^ np.uint32(k1), lo0
        k0, k1 = (k0 + 0x9E3779B9) & 0xffffffff, (k1 + 0xBB67AE85) & 0xffffffff
    return c0, c1, c2, c3


def random_words(seed, offsets, rounds=10):
    """Kiln's randint4x (and Triton's): the words of (offset, 0, 0, 0) under the seed's
    low and high halves."""
    seed = int(seed) & 0xffffffffffffffff  # a negative seed is sign-extended first
    zero = np.zeros_like(offsets, np.uint32)
    return philox4x32((offsets.astype(np.uint32), zero, zero, zero), seed, seed >> 32, rounds)


def random_uniform(word):
    """Kiln's rand of a randint word: an f32 in [0, 1), as the kernel computes it."""
    i = word.view(np.int32)
    folded = np.where(i < 0, ~i, i)
    return folded.astype(np.float32) * np.float32(4.6566127342e-10)
