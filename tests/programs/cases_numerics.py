#===- cases_numerics.py - Cases behind each claim of docs/numerics.md ------------===#
#
# Every behaviour docs/numerics.md states (wrapping narrowing, NaN order, saturating f8,
# ...) is a case here, run on the interpreter and every backend like the rest of the
# corpus, so that the page cannot drift from what Kiln does.
#
# The references spell out Kiln's rule where it differs from NumPy (a NaN-skipping
# argmax, a truncating division, a saturating cast) and use NumPy's own function where
# the kernel computes the NumPy result with an idiom of the page.
#
#===---------------------------------------------------------------------------===#
import math

import numpy as np

from kilncase import (EXACT, Arr, Scalar, Tol, c_div, c_rem, cdiv, f8_bits, f8_value, f32,
                      normal, randint, round_bf16, round_f8, sat_cast, signed_uniform,
                      stable_topk_indices, uniform, with_specials, wrap)

FILE = "numerics.kiln"
I32_MIN, I32_MAX = -2 ** 31, 2 ** 31 - 1


def rand_n(lo, hi):
    """Sizes with one random length n in [lo, hi)."""
    return lambda r: {"n": int(r.integers(lo, hi))}


def blocks(block):
    return lambda s: (cdiv(s["n"], block),)


# ---- narrowing and float -> integer ------------------------------------------------

_NARROW_INTS = [300, -129, 128, 255, 65537, I32_MIN, I32_MAX, -1, 0, 127, -128, 32768]
_TO_INT_FLOATS = [np.nan, np.inf, -np.inf, 3e9, -3e9, -1.7, 300.5, -0.9, 127.5, -128.5,
                  255.9, 256.0, -0.0, 2147483520.0]


def _narrowing_ref(v, s):
    return {"w8": wrap(v.a, "i8"), "wu8": wrap(v.a, "u8"), "w16": wrap(v.a, "i16"),
            "st8": wrap(v.a, "i8"), "s32": sat_cast(v.x, "i32"), "s8": sat_cast(v.x, "i8"),
            "su8": sat_cast(v.x, "u8"), "via_i32": wrap(sat_cast(v.x, "i32"), "u8")}


# ---- shifts --------------------------------------------------------------------------

def _ashr(x, k, bits):
    """Arithmetic shift of int64 values by signed amounts; outside [0, bits): sign fill."""
    x, k = np.asarray(x, np.int64), np.asarray(k, np.int64)
    inside = (k >= 0) & (k < bits)
    return np.where(inside, x >> np.clip(k, 0, bits - 1), np.where(x < 0, -1, 0))


def _lshr(u, k, bits):
    """Logical shift of non-negative values by unsigned amounts; from `bits` on: 0."""
    u, k = np.asarray(u, np.uint64), np.asarray(k, np.uint64)
    inside = k < np.uint64(bits)
    return np.where(inside, u >> np.minimum(k, np.uint64(bits - 1)), np.uint64(0))


def _shifts_ref(v, s):
    a = v.a.astype(np.int64)
    k = v.s.astype(np.int64)
    ku = v.s.view(np.uint32).astype(np.uint64)          # k.to(u32)
    au = v.a.view(np.uint32).astype(np.uint64)          # a.to(u32)
    inside = (k >= 0) & (k < 32)
    shifted = (au << np.clip(k, 0, 31).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    left = np.where(inside, shifted, np.uint64(0))
    return {"ar": _ashr(a, k, 32).astype(np.int32),
            "lg": _lshr(au, ku, 32).astype(np.uint32),
            "mixed": _lshr(au, ku, 32).astype(np.uint32),
            "wide": _ashr(a, ku.astype(np.int64), 64),
            "narrow": _lshr(wrap(v.a, "u8"), wrap(v.s, "u8"), 8).astype(np.uint8),
            "left": left.astype(np.uint32).view(np.int32)}


# ---- division ------------------------------------------------------------------------

def _divide_ref(v, s):
    a, b = v.a.astype(np.int64), v.b.astype(np.int64)
    safe = np.where(b == 0, 1, b)
    return {"q": c_div(v.a, v.b), "r": c_rem(v.a, v.b),
            "fq": wrap(np.where(b == 0, 0, np.floor_divide(a, safe)), "i32"),
            "fr": wrap(np.where(b == 0, 0, np.mod(a, safe)), "i32"),
            "tq": f32(v.a) / f32(v.b),
            "fm": np.fmod(f32(v.x), f32(v.y))}


# ---- NaN in order and extrema --------------------------------------------------------

_N, _K, _ROWS = 16, 4, 8
_NAN_ROWS = ([3, np.nan, -np.inf, 1, np.nan, np.inf, -2, 0, 1, -0.0, np.nan, 3, 2, -1, 0, 5] +
             [np.nan] * 16 +
             [np.nan] * 7 + [1.0] + [np.nan] * 8 +
             [np.inf, -np.inf, np.nan] * 5 + [2.0])


def _skip_nan_arg(x, pick):
    """Kiln's argmax/argmin of each row: NaNs skipped, the first of equal values; a row of
    NaNs gives 0."""
    out = np.zeros(x.shape[0], np.int32)
    for i, row in enumerate(x):
        if not np.isnan(row).all():
            out[i] = pick(row)
    return out


def _nan_order_ref(v, s):
    x = f32(v.x)
    lo, hi = f32(v.lo), f32(v.hi)
    w = x[:, ::-1]
    ti = stable_topk_indices(x, _K, axis=1)
    # Stable sorts: -0.0 and +0.0 compare equal and keep their order (NaN goes last).
    up = np.sort(x, axis=1, kind="stable")
    down = np.take_along_axis(x, np.argsort(-x, axis=1, kind="stable"), axis=1)
    return {"up": up,
            "down": down,
            "flip": up[:, ::-1],
            "tv": np.take_along_axis(x, ti, axis=1), "ti": ti,
            "am": np.stack([_skip_nan_arg(x, np.nanargmax), _skip_nan_arg(x, np.nanargmin)], 1),
            "red": np.stack([np.fmax.reduce(x, axis=1), np.fmin.reduce(x, axis=1)], 1),
            "mm": np.concatenate([np.fmax(x, w), np.fmin(x, w),
                                  np.fmin(np.fmax(x, lo), hi)], axis=1),
            "relus": np.concatenate([np.where(x < 0, 0, x), np.fmax(x, 0)], axis=1),
            "like_red": np.stack([np.max(x, axis=1), np.min(x, axis=1)], 1),
            "like_am": np.stack([np.argmax(x, axis=1), np.argmin(x, axis=1)], 1),
            "like_mm": np.concatenate([np.maximum(x, w), np.minimum(x, w),
                                       np.clip(x, lo, hi)], axis=1)}


# ---- signed zeros in extrema ---------------------------------------------------------

_ZERO_ROWS = 12
# Mostly zeros of both signs, some NaN and negatives, in a fixed pattern (so the GPU spec
# can spell it out): rows of -0 alone, of alternating signs both ways round, a NaN-only
# corner; the rest drawn once from the values below.
_ZERO_PATTERN = ([np.nan] * 4 + [-0.0] * 12 + [-0.0] * 16 + [-0.0, 0.0] * 8 + [0.0, -0.0] * 8 +
                 list(np.random.default_rng(5).choice([0.0, -0.0, -0.0, 0.0, -1.0, np.nan, -np.inf],
                                                      size=(_ZERO_ROWS - 4) * 16)))


def _extremum(values, want_max):
    """Kiln's max/min over `values`: NaN ignored (NaN only when all are), -0 below +0."""
    vals = [float(x) for x in values if x == x]
    if not vals:
        return np.float32(np.nan)
    key = lambda x: (x, math.copysign(1.0, x))
    return np.float32(max(vals, key=key) if want_max else min(vals, key=key))


def _signed_zeros_ref(v, s):
    x = f32(v.x)
    n4 = _N // 4
    red = np.array([[_extremum(r, True), _extremum(r, False)] for r in x], np.float32)
    rows = np.array([[_extremum(r[i * n4:(i + 1) * n4], True) for i in range(4)] +
                     [_extremum(r[i * n4:(i + 1) * n4], False) for i in range(4)] for r in x],
                    np.float32)
    w = x[:, ::-1]
    pair = np.vectorize(lambda a, b, m: _extremum([a, b], m), otypes=[np.float32])
    return {"red": red, "rows": rows,
            "mm": np.concatenate([pair(x, w, True), pair(x, w, False)], axis=1)}


# ---- f8 ------------------------------------------------------------------------------

_F8_SPECIALS = [np.inf, -np.inf, 1000.0, -1e6, np.nan, -np.nan, 464.0, 470.0, 480.0, 57344.0,
                61439.0, 61440.0, 70000.0, 0.0, -0.0, 1e-9, 448.0, 449.0, -57345.0]
_E5M2_CODES = [0x7C, 0xFC, 0x7B, 0xFB, 0x7D, 0x7E, 0x7F, 0xFD, 0x3C, 0x00, 0x80]


def _kiln_f8_codes(x, fmt):
    """Kiln's f8 codes of f32 values: kilncase's rounding, and a NaN that keeps its sign
    (the top two payload bits of the f32 NaN: 0x7E for a quiet NaN)."""
    x = f32(x)
    sign = ((x.view(np.uint32) >> 31) << 7).astype(np.uint8)
    nan_code = sign | np.uint8(0x7F if fmt == "f8e4m3" else 0x7E)
    return np.where(np.isnan(x), nan_code, f8_bits(x, fmt)).astype(np.uint8)


def _f8_ref(v, s):
    e = f8_value(v.codes, "f8e5m2")
    e5 = _kiln_f8_codes(v.x, "f8e5m2")
    x = f32(v.x)
    return {"e4": _kiln_f8_codes(x, "f8e4m3"), "e5": f8_value(e5, "f8e5m2"), "e5bits": e5,
            "e4like": np.where(np.abs(x) < 480, round_f8(x, "f8e4m3"), np.nan),
            "back": np.stack([e, round_f8(e * np.float32(2), "f8e5m2")])}


# ---- narrow floats and accumulators --------------------------------------------------

def _half_ref(v, s):
    x, y, z = f32(v.a), f32(v.b), f32(v.s)
    one = np.float32(1)
    tenth = np.float32(0.1)
    h = v.h.astype(np.float64)
    return {"ob": np.stack([round_bf16(round_bf16(x * y) - one),
                                  round_bf16(x * y - one),
                                  round_bf16(z * round_bf16(tenth)),
                                  round_bf16(z * tenth)]),
            "hs": np.concatenate([[h.sum()], np.cumsum(h)]),
            "hr": np.array([np.inf, np.float16(h.sum() / 8)]),
            "isum": np.array([v.c.astype(np.int64).sum(), (v.c > 0).sum(),
                              wrap(v.big.astype(np.int64).sum(), "i32")]),
            "wsum": np.array([v.big.astype(np.int64).sum()])}


# ---- masked loads --------------------------------------------------------------------

def _padding_ref(v, s):
    n = s["n"]
    x, xi = v.x.astype(np.float64), v.xi.astype(np.int64)
    return {"out": np.array([x.sum(), 0.0, x.max(), x.min(), 0.0, x.prod(), x.max(),
                             x.sum() / 64, x.mean()]),
            "outi": np.array([n, np.argmax(x), np.argmin(x), 0, xi.max(), xi.min()])}


def register(add):
    """Adds this file's cases through cases.py's add()."""
    add("numerics.narrowing", FILE, "narrowing", sizes=rand_n(100, 300), grid=blocks(64),
        args=[Arr("a", "i32", "n", with_specials(randint(I32_MIN, I32_MAX + 1), _NARROW_INTS)),
              Arr("x", "f32", "n", with_specials(normal(300.0), _TO_INT_FLOATS)),
              Arr("w8", "i8", "n"), Arr("wu8", "u8", "n"), Arr("w16", "i16", "n"),
              Arr("st8", "i8", "n"), Arr("s32", "i32", "n"), Arr("s8", "i8", "n"),
              Arr("su8", "u8", "n"), Arr("via_i32", "u8", "n"), Scalar("n", "i32", "n")],
        ref=_narrowing_ref, tol=EXACT)

    add("numerics.shifts", FILE, "shifts", sizes=rand_n(100, 300), grid=blocks(64),
        args=[Arr("a", "i32", "n", with_specials(randint(I32_MIN, I32_MAX + 1),
                                                 [-16, -1, 16, I32_MIN, I32_MAX, -16, -16, -16, 5])),
              Arr("s", "i32", "n", with_specials(randint(0, 32), [1, 1, 1, 31, 31, 32, 40, -1, 0])),
              Arr("ar", "i32", "n"), Arr("lg", "u32", "n"), Arr("mixed", "u32", "n"),
              Arr("wide", "i64", "n"), Arr("narrow", "u8", "n"), Arr("left", "i32", "n"),
              Scalar("n", "i32", "n")],
        ref=_shifts_ref, tol=EXACT)

    add("numerics.divide", FILE, "divide", sizes=rand_n(100, 300), grid=blocks(64),
        args=[Arr("a", "i32", "n", with_specials(randint(-1000, 1001),
                                                 [7, -7, 7, -7, 5, I32_MIN, I32_MIN, 0, -6, 6])),
              Arr("b", "i32", "n", with_specials(randint(-9, 10), [2, 2, -2, -2, 0, -1, 0, 0, 3, -3])),
              Arr("x", "f32", "n", with_specials(normal(5.0), [7.5, -7.5, 1.0, -1.0, np.nan, np.inf, 5.0])),
              Arr("y", "f32", "n", with_specials(signed_uniform(0.5, 3.0),
                                                 [2.0, 2.0, 0.0, -0.0, 2.0, 2.0, np.inf])),
              Arr("q", "i32", "n"), Arr("r", "i32", "n"), Arr("fq", "i32", "n"),
              Arr("fr", "i32", "n"), Arr("tq", "f32", "n"), Arr("fm", "f32", "n"),
              Scalar("n", "i32", "n")],
        ref=_divide_ref, tol=EXACT)

    add("numerics.nan_order", FILE, "nan_order", grid=(_ROWS,),
        args=[Arr("x", "f32", (_ROWS, _N), with_specials(randint(-3, 4), _NAN_ROWS)),
              Arr("up", "f32", (_ROWS, _N)), Arr("down", "f32", (_ROWS, _N)),
              Arr("flip", "f32", (_ROWS, _N)), Arr("tv", "f32", (_ROWS, _K)),
              Arr("ti", "i32", (_ROWS, _K)), Arr("am", "i32", (_ROWS, 2)),
              Arr("red", "f32", (_ROWS, 2)), Arr("mm", "f32", (_ROWS, 3 * _N)),
              Arr("relus", "f32", (_ROWS, 2 * _N)),
              Arr("like_red", "f32", (_ROWS, 2)), Arr("like_am", "i32", (_ROWS, 2)),
              Arr("like_mm", "f32", (_ROWS, 3 * _N)),
              Scalar("lo", "f32", -1.5), Scalar("hi", "f32", 2.25)],
        ref=_nan_order_ref, tol=EXACT)

    add("numerics.signed_zeros", FILE, "signed_zeros", grid=(_ZERO_ROWS,),
        args=[Arr("x", "f32", (_ZERO_ROWS, _N), with_specials(randint(-1, 1), _ZERO_PATTERN)), Arr("red", "f32", (_ZERO_ROWS, 2)),
              Arr("rows", "f32", (_ZERO_ROWS, 8)), Arr("mm", "f32", (_ZERO_ROWS, 2 * _N))],
        ref=_signed_zeros_ref, tol=EXACT)

    add("numerics.f8_saturate", FILE, "f8_convert", sizes=rand_n(100, 300), grid=blocks(64),
        args=[Arr("x", "f32", "n", with_specials(normal(300.0), _F8_SPECIALS)),
              Arr("e4", "u8", "n"), Arr("e5", "f8e5m2", "n"), Arr("e5bits", "u8", "n"),
              Arr("e4like", "f8e4m3", "n"),
              Arr("codes", "u8", "n", with_specials(randint(0, 256), _E5M2_CODES)),
              Arr("back", "f32", (2, "n")), Scalar("n", "i32", "n")],
        ref=_f8_ref, tol=EXACT)

    add("numerics.half_steps", FILE, "half_steps", sizes=rand_n(20, 65), grid=(1,),
        args=[Arr("a", "bf16", "n", uniform(0.95, 1.05)), Arr("b", "bf16", "n", uniform(0.95, 1.05)),
              Arr("s", "bf16", "n", with_specials(uniform(1.0, 100.0), [15.5, 3.0, 100.0])),
              Arr("h", "f16", 8, uniform(30000.0, 65504.0)), Arr("c", "i8", 8, randint(-128, 128)),
              Arr("big", "i32", 8, randint(2 ** 30, 2 ** 31)),
              Arr("ob", "bf16", (4, "n")), Arr("hs", "f32", 9), Arr("hr", "f16", 2),
              Arr("isum", "i32", 3), Arr("wsum", "i64", 1), Scalar("n", "i32", "n")],
        ref=_half_ref, tol=EXACT)

    add("numerics.masked_padding", FILE, "padding", sizes=rand_n(1, 64), grid=(1,),
        args=[Arr("x", "f32", "n", uniform(-1.2, -0.8)), Arr("xi", "i32", "n", randint(-1000, 0)),
              Arr("out", "f32", 9), Arr("outi", "i32", 6), Scalar("n", "i32", "n")],
        ref=_padding_ref, tol={"out": Tol(1e-5, 1e-6)})
