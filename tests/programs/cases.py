#===- cases.py - The corpus of small Kiln programs and their numpy references --===#
#
# One Case per run of a program under tests/programs/ (see tests/examples/kilncase.py
# for the fields). References compute in float64 where the kernel's rounding does not
# matter, and mirror the kernel's float32/float16 operations where it does (floor of a
# product, weak-typed f16 arithmetic, casts), so tolerances stay tight.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import (Arr, Case, EXACT, Scalar, Tol, attention_ref, boolean, c_div, c_rem, cdiv,
                      erf, f32, f64, fill, normal, randint, random_uniform, random_words,
                      round_bf16, round_f8, sat_cast, sigmoid, signed_uniform, softmax_rows,
                      stable_topk_indices, uniform, with_specials, wrap)

CASES = []
P = "tests/programs/"


def add(name, file, kernel, **kw):
    CASES.append(Case(name=name, file=P + file, kernel=kernel, **kw))


def rand_n(lo, hi):
    """Sizes with one random length n in [lo, hi)."""
    return lambda r: {"n": int(r.integers(lo, hi))}


def blocks(block, key="n"):
    """A 1-D grid covering sizes[key] in BLOCK-wide programs."""
    return lambda s: (cdiv(s[key], block),)


def full_range(dtype):
    info = np.iinfo(dtype)
    return lambda rng, shape: rng.integers(int(info.min), int(info.max) + 1, size=shape,
                                           dtype=dtype)


# ---- elementwise math ---------------------------------------------------------------

def _unary_ref(v, s):
    x = v.x
    x64 = f64(x)
    t = f64(x - np.float32(2.0))               # the kernel subtracts in f32
    lin = x * np.float32(3.0) - np.float32(6.0)  # likewise: floor/ceil see this f32 value
    return {"out": np.stack([
        np.exp(x64), np.exp2(x64), np.log(x64), np.log2(x64), np.sqrt(x64),
        1.0 / np.sqrt(x64), np.sin(x64), np.cos(x64), np.tanh(t), erf(t), sigmoid(t),
        np.abs(t), np.floor(lin), np.ceil(lin)])}


add("math.unary", "math_unary.kiln", "unary_math", sizes=rand_n(300, 1000), grid=blocks(128),
    args=[Arr("x", "f32", "n", uniform(0.05, 4.0)), Arr("out", "f32", (14, "n")),
          Scalar("n", "i32", "n")],
    ref=_unary_ref)

add("math.half_f16", "math_half.kiln", "half_math", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "f16", "n", uniform(0.1, 3.0)), Arr("out", "f16", (5, "n")),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.stack([
        np.exp(f64(v.x)), np.log(f64(v.x)), np.sqrt(f64(v.x)), sigmoid(v.x),
        np.tanh(f64(v.x))])})

add("math.half_bf16", "math_half.kiln", "bhalf_math", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "bf16", "n", uniform(0.1, 3.0)), Arr("out", "bf16", (3, "n")),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.stack([
        np.exp(f64(v.x)), np.log(f64(v.x)), round_bf16(round_bf16(v.x * v.x) + v.x)])})


def _binary_ref(v, s):
    a, b = v.x, v.y
    return {"out": np.stack([
        a + b, a - b, a * b, a / b, np.fmod(a, b), np.power(np.abs(f64(a)), f64(b)),
        np.minimum(a, b), np.maximum(a, b), f64(a) * f64(b) + f64(a),
        -(a - b) * np.float32(0.5)])}


add("math.binary", "math_binary.kiln", "binary_math", sizes=rand_n(300, 1000), grid=blocks(128),
    args=[Arr("x", "f32", "n", normal(2.0)), Arr("y", "f32", "n", signed_uniform(0.5, 2.0)),
          Arr("out", "f32", (10, "n")), Scalar("n", "i32", "n")],
    ref=_binary_ref)

add("int.divrem", "int_divrem.kiln", "int_divrem", sizes=rand_n(200, 600), grid=blocks(64),
    args=[Arr("a", "i32", "n", with_specials(randint(-1000, 1001), [-7, 7, -7, 7, 0, -1])),
          Arr("b", "i32", "n", with_specials(randint(-9, 10), [2, -2, 0, 0, 3, 2])),
          Arr("q", "i32", "n"), Arr("r", "i32", "n"), Arr("lit", "i32", (3, "n")),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {
        "q": c_div(v.a, v.b), "r": c_rem(v.a, v.b),
        "lit": np.stack([c_div(v.a, 7), c_rem(v.a, -3), c_div(-v.a, 4) + c_rem(v.a, 5)])})


def _bitwise_i32_ref(v, s):
    x, y = v.a, v.b
    sh = (y & 31).astype(np.uint32)
    left = np.left_shift(x.view(np.uint32), sh).view(np.int32)
    right = np.right_shift(x, sh.astype(np.int32))
    return {"out": np.stack([x & y, x | y, x ^ y, ~x, left, right])}


add("int.bitwise_i32", "bitwise.kiln", "bitwise_i32", sizes=rand_n(100, 400), grid=blocks(64),
    args=[Arr("a", "i32", "n", full_range(np.int32)), Arr("b", "i32", "n", full_range(np.int32)),
          Arr("out", "i32", (6, "n")), Scalar("n", "i32", "n")],
    ref=_bitwise_i32_ref)


def _bitwise_u32_ref(v, s):
    x = v.a.astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    return {"out": np.stack([x >> np.uint64(3), (x << np.uint64(4)) & m32, ~x & m32,
                             x // np.uint64(10), x % np.uint64(10),
                             (x ^ np.uint64(0xFFFF)) & np.uint64(0x0F0F0F0F)]).astype(np.uint32)}


add("int.bitwise_u32", "bitwise.kiln", "bitwise_u32", sizes=rand_n(100, 400), grid=blocks(64),
    args=[Arr("a", "u32", "n", full_range(np.uint32)), Arr("out", "u32", (6, "n")),
          Scalar("n", "i32", "n")],
    ref=_bitwise_u32_ref)

# ---- casts ------------------------------------------------------------------------------

_HALF_SPECIALS = [1e5, -1e5, 65504.0, 65520.0, 70000.0, 1e-8, -3e-5, np.nan, np.inf, -np.inf,
                  0.1, 1.0 / 3.0, 1.00048828125, 1.0009765625 + 2 ** -12, 3.4028235e38]
add("cast.half", "cast_half.kiln", "to_half", sizes=rand_n(100, 500), grid=blocks(128),
    args=[Arr("x", "f32", "n", with_specials(normal(100.0), _HALF_SPECIALS)),
          Arr("h", "f16", "n"), Arr("b", "bf16", "n"), Arr("back", "f32", "n"),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"h": v.x.astype(np.float16), "b": round_bf16(v.x),
                      "back": v.x.astype(np.float16).astype(np.float32) + round_bf16(v.x)},
    tol=EXACT)

_INT_SPECIALS = [3e9, -3e9, np.nan, np.inf, -np.inf, 0.0, -0.5, 127.9, 128.0, -128.9, -129.0,
                 255.5, 256.0, -0.9, 2147483520.0, -2147483648.0, 1e20]
add("cast.float_to_int", "cast_int.kiln", "float_to_int", sizes=rand_n(100, 300),
    grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(150.0), _INT_SPECIALS)),
          Arr("oi32", "i32", "n"), Arr("oi8", "i8", "n"), Arr("ou8", "u8", "n"),
          Arr("ob", "bool", "n"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"oi32": sat_cast(v.x, "i32"), "oi8": sat_cast(v.x, "i8"),
                      "ou8": sat_cast(v.x, "u8"), "ob": v.x != 0})

add("cast.int_to_other", "cast_int.kiln", "int_to_other", sizes=rand_n(100, 300),
    grid=blocks(64),
    args=[Arr("a", "i32", "n", randint(-30000, 30000)), Arr("of", "f32", "n"),
          Arr("oi16", "i16", "n"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"of": f32(v.a) / np.float32(4), "oi16": v.a.astype(np.int16)},
    tol=EXACT)

_F8_SPECIALS = [1000.0, -1000.0, 448.0, 464.0, 480.0, 57344.0, 70000.0, -1e6, 1e-4, -2e-3, 0.0,
                0.0078125, 0.01171875, 240.0, 248.0, 1.0625, 1.1875, 1.125, 1.375, np.nan]
add("cast.f8", "cast_f8.kiln", "to_f8", sizes=rand_n(64, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(30.0), _F8_SPECIALS)),
          Arr("e4", "f8e4m3", "n"), Arr("e5", "f8e5m2", "n"), Arr("back", "f32", "n"),
          Arr("mixed", "f16", "n"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"e4": round_f8(v.x, "f8e4m3"), "e5": round_f8(v.x, "f8e5m2"),
                      "back": round_f8(v.x, "f8e4m3") - round_f8(v.x, "f8e5m2"),
                      "mixed": round_f8(v.x, "f8e4m3").astype(np.float16) +
                      round_f8(v.x, "f8e5m2").astype(np.float16)},
    tol=EXACT)


def _bitcast_ref(v, s):
    bits = v.x.view(np.uint32)
    return {"bits": bits,
            "expo": ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int32) - 127,
            "neg": (bits ^ np.uint32(0x80000000)).view(np.float32)}


add("cast.bitcast", "bitcast.kiln", "float_bits", sizes=rand_n(64, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(1e3), [0.0, -0.0, 1.0, -2.5, np.inf, 1e-40])),
          Arr("bits", "u32", "n"), Arr("expo", "i32", "n"), Arr("neg", "f32", "n"),
          Scalar("n", "i32", "n")],
    ref=_bitcast_ref, tol=EXACT)

# ---- 2-D tiles, broadcasting, masks -------------------------------------------------------

add("tile.outer_broadcast", "outer_broadcast.kiln", "outer",
    sizes=lambda r: {"M": int(r.integers(1, 50)), "N": int(r.integers(1, 90))},
    grid=lambda s: (cdiv(s["M"], 16), cdiv(s["N"], 32)),
    args=[Arr("x", "f32", "M", normal()), Arr("y", "f32", "N", normal()),
          Arr("out", "f32", ("M", "N")), Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"out": v.x[:, None] * v.y[None, :] + v.x[:, None]})

add("tile.transpose", "transpose.kiln", "transpose",
    sizes=lambda r: {"M": int(r.integers(1, 60)), "N": int(r.integers(1, 60))},
    grid=lambda s: (cdiv(s["M"], 16), cdiv(s["N"], 16)),
    args=[Arr("x", "f32", ("M", "N"), normal()), Arr("y", "f32", ("N", "M")),
          Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"y": v.x.T}, tol=EXACT)


def _shift_ref(v, s):
    n, sh = s["n"], s["shift"]
    src = np.arange(n) - sh
    ok = (src >= 0) & (src < n)
    return {"out": np.where(ok, v.x[np.clip(src, 0, n - 1)], np.float32(-7.5))}


add("mask.shift_pad", "masked_other.kiln", "shift_pad",
    sizes=lambda r: {"n": int(r.integers(50, 300)), "shift": int(r.integers(-40, 41))},
    grid=blocks(64),
    args=[Arr("x", "f32", "n", normal()), Arr("out", "f32", "n"), Scalar("n", "i32", "n"),
          Scalar("shift", "i32", "shift")],
    ref=_shift_ref, tol=EXACT)


def _column_mask_ref(v, s):
    keep = np.arange(s["cols"])[None, :] < s["keep"]
    return {"out": np.where(keep, v.x, -1), "out0": np.where(keep, v.x, 0)}


add("mask.column_other", "masked_other.kiln", "column_mask",
    sizes=lambda r: {"rows": int(r.integers(1, 9)), "cols": int(r.integers(1, 17)),
                     "keep": int(r.integers(0, 17))},
    grid=(1,),
    args=[Arr("x", "i32", ("rows", "cols"), randint(0, 1000)),
          Arr("out", "i32", ("rows", "cols")), Arr("out0", "i32", ("rows", "cols")),
          Scalar("rows", "i32", "rows"), Scalar("cols", "i32", "cols"),
          Scalar("keep", "i32", "keep")],
    ref=_column_mask_ref)

add("tile.broadcast_expand", "broadcast_expand.kiln", "spread", grid=(1,),
    args=[Arr("x", "f32", 32, normal()), Arr("y", "f32", 8, normal()),
          Arr("out", "f32", (8, 32)), Arr("outer", "f32", (8, 32))],
    ref=lambda v, s: {"out": v.x[None, :] + np.arange(8, dtype=np.float32)[:, None],
                      "outer": v.y[:, None] * v.x[None, :]})

add("tile.reshape", "reshape.kiln", "reshape_rows", grid=(3,),
    args=[Arr("x", "f32", 3 * 8 * 16, normal()), Arr("sums", "f32", 3 * 8),
          Arr("flat_t", "f32", 3 * 8 * 16)],
    ref=lambda v, s: {"sums": f64(v.x).reshape(3, 8, 16).sum(axis=2).reshape(-1),
                      "flat_t": v.x.reshape(3, 8, 16).transpose(0, 2, 1).reshape(-1)})

add("tile.permute3d", "permute3d.kiln", "permute3", grid=(1,),
    args=[Arr("x", "f32", (4, 8, 16), normal()), Arr("y", "f32", (16, 4, 8)),
          Arr("mid", "f32", (4, 16))],
    ref=lambda v, s: {"y": v.x.transpose(2, 0, 1), "mid": f64(v.x).sum(axis=1)},
    tol={"y": EXACT})

add("tile.join", "join_split.kiln", "interleave", sizes=rand_n(50, 300), grid=blocks(64),
    args=[Arr("a", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
          Arr("out", "f32", ("n", 2)), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.stack([v.a, v.b], axis=1)}, tol=EXACT)


def _complex_ref(v, s):
    x = v.x[:, 0] + 1j * f64(v.x[:, 1])
    y = v.y[:, 0] + 1j * f64(v.y[:, 1])
    z = x * y
    return {"z": np.stack([z.real, z.imag], axis=1)}


add("tile.split", "join_split.kiln", "complex_mul", sizes=rand_n(50, 300), grid=blocks(64),
    args=[Arr("x", "f32", ("n", 2), normal()), Arr("y", "f32", ("n", 2), normal()),
          Arr("z", "f32", ("n", 2)), Scalar("n", "i32", "n")],
    ref=_complex_ref, tol=Tol(1e-5, 1e-6))

def _rows_by(n):
    return lambda r: {"rows": int(r.integers(1, n))}


add("tile.cat", "cat_gather.kiln", "cat_rows", sizes=_rows_by(20), grid=lambda s: (-(-s["rows"] // 4),),
    args=[Arr("a", "f32", ("rows", 16), normal()), Arr("b", "f32", ("rows", 8), normal()),
          Arr("out", "f32", ("rows", 24)), Scalar("rows", "i32", "rows")],
    ref=lambda v, s: {"out": np.concatenate([v.a, v.b], axis=1)}, tol=EXACT)


def _cat_mixed_ref(v, s):
    y = f32(v.b)
    y2 = y.reshape(4, 8)
    return {"out1": np.concatenate([f32(v.a), y]),
            "out0": np.concatenate([y2, y2 * np.float32(2.0)], axis=0).reshape(-1)}


add("tile.cat.mixed", "cat_gather.kiln", "cat_mixed", grid=(1,),
    args=[Arr("a", "i32", 32, randint(-1000, 1000)), Arr("b", "f32", 32, normal()),
          Arr("out1", "f32", 64), Arr("out0", "f32", 64)],
    ref=_cat_mixed_ref, tol=EXACT)


def _gather_ref(v, s):
    def take(row, at):
        ok = (at >= 0) & (at < row.shape[-1])
        return np.where(ok, np.take_along_axis(row, np.clip(at, 0, row.shape[-1] - 1), axis=-1), 0.0)
    x = f64(v.x)
    return {"out": take(x, v.idx.astype(np.int64)), "out1": take(x[0], v.idx64)}


add("tile.gather", "cat_gather.kiln", "gather_rows", sizes=_rows_by(20), grid=lambda s: (-(-s["rows"] // 4),),
    args=[Arr("x", "f32", ("rows", 32), normal()), Arr("idx", "i32", ("rows", 12), randint(-3, 36)),
          Arr("out", "f32", ("rows", 12)), Arr("idx64", "i64", 16, randint(-2, 34)),
          Arr("out1", "f32", 16), Scalar("rows", "i32", "rows")],
    ref=_gather_ref, tol=EXACT)

add("tile.gather.narrow", "cat_gather.kiln", "gather_narrow", grid=(1,),
    args=[Arr("x", "f32", 256, normal()), Arr("i8idx", "i8", 64, randint(-128, 128)),
          Arr("u8idx", "u8", 64, randint(0, 256)), Arr("out8", "f32", 64), Arr("outu", "f32", 64)],
    ref=lambda v, s: {"out8": np.where(v.i8idx >= 0, f64(v.x)[np.clip(v.i8idx.astype(np.int64), 0, 255)], 0.0),
                      "outu": f64(v.x)[v.u8idx.astype(np.int64)]}, tol=EXACT)

# Broadcasts read where they are needed (codegen/LowerShape.cpp): one warp, so that a
# thread holds several rounds of the broadcast tile.
add("tile.broadcast_reads.rows", "broadcast_reads.kiln", "row_broadcast",
    sizes=lambda r: {"m": int(r.integers(1, 60)), "n": int(r.integers(1, 300))},
    grid=lambda s: (-(-s["m"] // 16),),
    args=[Arr("w", "bf16", ("m", "n"), normal(0.1)), Arr("x", "f32", "n", normal()),
          Arr("y", "f32", "m"), Scalar("m", "i32", "m"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"y": f64(v.w) @ (f64(v.x) * 0.5 - 1.0)}, tol=Tol(1e-4, 1e-4))

add("tile.broadcast_reads.middle", "broadcast_reads.kiln", "middle_broadcast", grid=(1,),
    args=[Arr("a", "f32", (4, 1, 32), normal()), Arr("b", "bf16", (4, 1, 32), normal()),
          Arr("out", "f32", (4, 8, 32))],
    ref=lambda v, s: {"out": f64(f32(v.a) * f32(v.b)) + np.arange(8.0)[None, :, None]}, tol=Tol(1e-6, 1e-6))

add("tile.broadcast_reads.sparse_rows", "broadcast_reads.kiln", "sparse_rows", grid=(1,),
    args=[Arr("x", "f32", 32, normal()), Arr("flag", "i32", 32, randint(0, 2)), Arr("out", "f32", (8, 32))],
    ref=lambda v, s: {"out": np.where(v.flag != 0, f32(v.x), -f32(v.x))[None, :]
                      * np.arange(1.0, 9.0, dtype=np.float32)[:, None]},
    tol=EXACT)

add("tile.broadcast_reads.long_rows", "broadcast_reads.kiln", "long_rows", grid=(1,),
    args=[Arr("x", "f32", 256, normal()), Arr("out", "f32", (4, 256))],
    ref=lambda v, s: {"out": (f32(v.x) + np.float32(1.0))[None, :] * np.arange(2.0, 6.0, dtype=np.float32)[:, None]},
    tol=EXACT)

# ---- reductions ---------------------------------------------------------------------------

_MN = lambda r: {"M": int(r.integers(1, 41)), "N": int(r.integers(1, 65))}  # noqa: E731


def _extrema_ref(axis):
    def ref(v, s):
        x = f64(v.x)
        return {"osum": x.sum(axis=axis), "omax": x.max(axis=axis), "omin": x.min(axis=axis),
                "oprod": x.prod(axis=axis)}
    return ref


def _reduction_args(out_len):
    return [Arr("x", "f32", ("M", "N"), uniform(0.8, 1.25))] + [
        Arr(o, "f32", out_len) for o in ("osum", "omax", "omin", "oprod")] + [
        Scalar("M", "i32", "M"), Scalar("N", "i32", "N")]


add("reduce.rows", "reduce_rows.kiln", "reduce_rows", sizes=_MN,
    grid=lambda s: (cdiv(s["M"], 8),), args=_reduction_args("M"), ref=_extrema_ref(1))

add("reduce.cols", "reduce_cols.kiln", "reduce_cols",
    sizes=lambda r: {"M": int(r.integers(1, 65)), "N": int(r.integers(1, 50))},
    grid=lambda s: (cdiv(s["N"], 16),), args=_reduction_args("N"), ref=_extrema_ref(0))

add("reduce.argmax_argmin", "argmax_argmin.kiln", "arg_extrema",
    sizes=lambda r: {"M": int(r.integers(1, 33)), "N": int(r.integers(1, 33))}, grid=(1,),
    args=[Arr("x", "f32", ("M", "N"), randint(0, 5)), Arr("amax", "i32", "M"),
          Arr("amin", "i32", "N"), Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"amax": np.argmax(v.x, axis=1), "amin": np.argmin(v.x, axis=0)})

add("reduce.argmax_1d", "argmax_argmin.kiln", "arg_extrema_1d", sizes=rand_n(1, 129),
    grid=(1,),
    args=[Arr("x", "i32", "n", randint(-20, 20)), Arr("out", "i32", 2), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": [np.argmax(v.x), np.argmin(v.x)]})

add("reduce.custom", "reduce_custom.kiln", "custom_reduce",
    sizes=lambda r: {"M": int(r.integers(1, 17)), "N": int(r.integers(1, 33))}, grid=(1,),
    args=[Arr("x", "f32", ("M", "N"), normal()),
          Arr("bits", "i32", ("M", "N"), randint(0, 1 << 20)),
          Arr("oabs", "f32", "M"), Arr("oor", "i32", "N"),
          Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"oabs": np.abs(v.x).max(axis=1),
                      "oor": np.bitwise_or.reduce(v.bits, axis=0)},
    tol=EXACT)

add("reduce.int_narrow", "int_reductions.kiln", "narrow_sums", grid=(1,),
    args=[Arr("a", "i8", 256, randint(-100, 100)), Arr("b", "u8", 256, randint(0, 256)),
          Arr("out", "i32", 3), Arr("uout", "u32", 1), Arr("mx", "i8", 1)],
    ref=lambda v, s: {
        "out": [v.a.astype(np.int64).sum(), (v.a > 0).sum(), (v.a.astype(np.int64) ** 2).sum()],
        "uout": [v.b.astype(np.int64).sum()],
        "mx": [wrap(int(v.a.max()) - int(c_div(v.a.min(), np.int8(2))), "i8")]})

add("reduce.half_sum_f32", "half_sum.kiln", "half_sum", grid=(6,),
    args=[Arr("x", "f16", (6, 1024), uniform(0.0, 1.0)), Arr("out", "f32", 12),
          Arr("hmax", "f16", 6), Scalar("rows", "i32", 6)],
    ref=lambda v, s: {"out": np.concatenate([
        f64(v.x).sum(axis=1), f64(v.x * v.x).sum(axis=1)]), "hmax": v.x.max(axis=1)},
    tol={"out": Tol(1e-5, 1e-3), "hmax": EXACT})

# ---- scans, sorting, top-k ------------------------------------------------------------------

def _first_nonzero(row):
    out, seen = [], 0
    for e in row:
        seen = seen if seen != 0 else e
        out.append(seen)
    return out


def _scan_ref(v, s):
    sparse = np.where(v.bits % 3 == 0, v.bits, 0)
    first = np.array([_first_nonzero(r) for r in sparse]).reshape(sparse.shape)
    return {"omax": np.maximum.accumulate(v.x, axis=1),
            "oxor": np.bitwise_xor.accumulate(v.bits, axis=0),
            "ofirst": first, "rfirst": first[:, -1]}


add("scan.custom", "scan_custom.kiln", "custom_scan",
    sizes=lambda r: {"M": int(r.integers(1, 17)), "N": int(r.integers(1, 33))}, grid=(1,),
    args=[Arr("x", "f32", ("M", "N"), normal()),
          Arr("bits", "i32", ("M", "N"), randint(0, 1 << 16)),
          Arr("omax", "f32", ("M", "N")), Arr("oxor", "i32", ("M", "N")),
          Arr("ofirst", "i32", ("M", "N")), Arr("rfirst", "i32", "M"),
          Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=_scan_ref, tol=EXACT)

add("scan.cumsum_cumprod", "cumsum_cumprod.kiln", "cumulative",
    sizes=lambda r: {"M": int(r.integers(1, 17)), "N": int(r.integers(1, 65))}, grid=(1,),
    args=[Arr("x", "f32", ("M", "N"), uniform(0.9, 1.1)),
          Arr("k", "i32", ("M", "N"), randint(-100, 100)),
          Arr("csum", "f32", ("M", "N")), Arr("cprod", "f32", ("M", "N")),
          Arr("ksum", "i32", ("M", "N")), Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"csum": np.cumsum(f64(v.x), axis=1), "cprod": np.cumprod(f64(v.x), axis=0),
                      "ksum": np.cumsum(v.k, axis=0)},
    tol={"csum": Tol(1e-5, 1e-5), "cprod": Tol(1e-5, 1e-6)})

add("scan.cumsum_1d", "cumsum_cumprod.kiln", "cumsum_1d", sizes=rand_n(1, 257), grid=(1,),
    args=[Arr("k", "i32", "n", randint(-1000, 1000)), Arr("out", "i32", "n"),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.cumsum(v.k)})

add("sort.rows", "sort.kiln", "sort_rows",
    sizes=lambda r: {"M": int(r.integers(1, 21)), "N": int(r.integers(1, 65))},
    grid=lambda s: (cdiv(s["M"], 8),),
    args=[Arr("x", "f32", ("M", "N"), normal()), Arr("up", "f32", ("M", "N")),
          Arr("down", "f32", ("M", "N")), Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"up": np.sort(v.x, axis=1), "down": -np.sort(-v.x, axis=1)}, tol=EXACT)

add("sort.ints", "sort.kiln", "sort_ints", sizes=rand_n(1, 129), grid=(1,),
    args=[Arr("k", "i32", "n", randint(-20, 20)), Arr("out", "i32", "n"),
          Arr("cols", "i32", (16, 4), randint(0, 10)), Arr("ocols", "i32", (16, 4)),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.sort(v.k), "ocols": -np.sort(-v.cols, axis=0)})


def _topk_ref(v, s):
    idx = stable_topk_indices(v.x, 4, axis=1)
    return {"vals": np.take_along_axis(v.x, idx, axis=1), "idx": idx}


add("topk.rows", "topk.kiln", "row_topk",
    sizes=lambda r: {"M": int(r.integers(1, 21)), "N": int(r.integers(4, 65))},
    grid=lambda s: (cdiv(s["M"], 8),),
    args=[Arr("x", "f32", ("M", "N"), normal()), Arr("vals", "f32", ("M", 4)),
          Arr("idx", "i32", ("M", 4)), Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=_topk_ref, tol=EXACT)

add("topk.ties", "topk.kiln", "topk_ties", sizes=rand_n(8, 65), grid=(1,),
    args=[Arr("k", "i32", "n", randint(0, 6)), Arr("vals", "i32", 8), Arr("idx", "i32", 8),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"vals": v.k[stable_topk_indices(v.k, 8)],
                      "idx": stable_topk_indices(v.k, 8)})

_TOPK_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan, 1e-40, -1e-40, 0.0, -0.0, np.inf, 3.0, 3.0]


def _topk_specials_ref(v, s):
    def top(a, k, axis=-1):
        i = stable_topk_indices(a, k, axis=axis)
        return np.take_along_axis(a, i, axis=axis), i
    out = {}
    out["vals"], out["idx"] = top(f32(v.x), 6, 1)
    out["cvals"], out["cidx"] = top(f32(v.x), 3, 0)
    out["hvals"], out["hidx"] = top(f32(v.h), 5)
    out["uvals"], out["uidx"] = top(v.u.astype(np.int64), 5)
    return out


add("topk.specials", "topk.kiln", "topk_specials", grid=(1,),
    args=[Arr("x", "f32", (8, 32), with_specials(normal(), _TOPK_SPECIALS)),
          Arr("h", "bf16", 32, with_specials(normal(), [np.nan, -0.0, 0.0, np.inf, 2.0, 2.0])),
          Arr("u", "u8", 32, randint(0, 256)),
          Arr("vals", "f32", (8, 6)), Arr("idx", "i32", (8, 6)),
          Arr("cvals", "f32", (3, 32)), Arr("cidx", "i32", (3, 32)),
          Arr("hvals", "bf16", 5), Arr("hidx", "i32", 5),
          Arr("uvals", "u8", 5), Arr("uidx", "i32", 5)],
    ref=_topk_specials_ref, tol=EXACT)

# ---- dot ----------------------------------------------------------------------------------

add("dot.once", "dot_basic.kiln", "dot_once",
    sizes=lambda r: {"M": int(r.integers(1, 17)), "N": int(r.integers(1, 33)),
                     "K": int(r.integers(1, 33))},
    grid=(1,),
    args=[Arr("a", "f32", ("M", "K"), normal()), Arr("b", "f32", ("K", "N"), normal()),
          Arr("c", "f32", ("M", "N")), Arr("d", "f32", ("M", "N"), normal()),
          Scalar("M", "i32", "M"), Scalar("N", "i32", "N"), Scalar("K", "i32", "K")],
    ref=lambda v, s: {"c": f64(v.a) @ f64(v.b), "d": f64(v.a) @ f64(v.b) + v.d},
    tol=Tol(1e-4, 1e-5))

add("dot.odd_shapes", "dot_basic.kiln", "dot_odd", grid=(1,),
    args=[Arr("a", "f32", (8, 12), normal()), Arr("b", "f32", (12, 24), normal()),
          Arr("c", "f32", (8, 24))],
    ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)}, tol=Tol(1e-4, 1e-5))

_MATMUL_F16_ARGS = [Arr("a", "f16", ("M", "K"), normal()), Arr("b", "f16", ("K", "N"), normal()),
                    Arr("c", "f16", ("M", "N")),
                    Scalar("M", "i32", "M"), Scalar("N", "i32", "N"), Scalar("K", "i32", "K")]

add("dot.f16_k_loop", "dot_f16_loop.kiln", "matmul_f16",
    sizes=lambda r: {"M": int(r.integers(1, 48)), "N": int(r.integers(1, 48)),
                     "K": int(r.integers(1, 60))},
    grid=lambda s: (cdiv(s["M"], 16), cdiv(s["N"], 16)),
    args=_MATMUL_F16_ARGS, ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)}, tol=Tol(2e-3, 2e-3))

add("dot.bf16", "dot_f16_loop.kiln", "dot_bf16", grid=(1,),
    args=[Arr("a", "bf16", (16, 16), normal()), Arr("b", "bf16", (16, 32), normal()),
          Arr("c", "f32", (16, 32))],
    ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)}, tol=Tol(1e-5, 1e-5))

add("dot.acc_f16", "dot_f16_loop.kiln", "dot_acc_f16", grid=(1,),
    args=[Arr("a", "f16", (16, 32), normal()), Arr("b", "f16", (32, 16), normal()),
          Arr("c", "f16", (16, 16), normal())],
    ref=lambda v, s: {"c": f64(v.a) @ f64(v.b) + f64(v.c)}, tol=Tol(2e-3, 2e-3))

# One 64-row strip of the result per warpgroup of the 4 warps: on sm_90a these dots run
# on wgmma (a K loop with masked loads, its operands staged from registers and its
# accumulator carried; and a single dot).
add("dot.wgmma_k_loop", "dot_f16_loop.kiln", "matmul_f16",
    defines={"BM": 64, "BN": 32, "BK": 32},
    sizes=lambda r: {"M": int(r.integers(65, 140)), "N": int(r.integers(20, 80)),
                     "K": int(r.integers(40, 100))},
    grid=lambda s: (cdiv(s["M"], 64), cdiv(s["N"], 32)),
    args=_MATMUL_F16_ARGS, ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)}, tol=Tol(2e-3, 2e-3))

add("dot.wgmma_bf16", "dot_f16_loop.kiln", "dot_bf16", grid=(1,),
    defines={"M": 64, "N": 64, "K": 32},
    args=[Arr("a", "bf16", (64, 32), normal()), Arr("b", "bf16", (32, 64), normal()),
          Arr("c", "f32", (64, 64))],
    ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)}, tol=Tol(1e-4, 1e-4))

add("dot.int8", "dot_int8.kiln", "dot_i8", grid=(1,),
    args=[Arr("a", "i8", (16, 64), randint(-128, 128)),
          Arr("b", "i8", (64, 16), randint(-128, 128)),
          Arr("c", "i32", (16, 16))],
    ref=lambda v, s: {"c": v.a.astype(np.int64) @ v.b.astype(np.int64)})

# One 64-row strip per warpgroup: wgmma's integer form on sm_90a (mma.sync elsewhere).
add("dot.int8_wgmma", "dot_int8.kiln", "dot_i8", grid=(1,), defines={"M": 64, "N": 64, "K": 128},
    args=[Arr("a", "i8", (64, 128), randint(-128, 128)),
          Arr("b", "i8", (128, 64), randint(-128, 128)),
          Arr("c", "i32", (64, 64))],
    ref=lambda v, s: {"c": v.a.astype(np.int64) @ v.b.astype(np.int64)})

add("dot.u8_i8_acc", "dot_int8.kiln", "dot_u8_i8_acc", grid=(1,),
    args=[Arr("a", "u8", (64, 128), randint(0, 256)),
          Arr("b", "i8", (128, 64), randint(-128, 128)),
          Arr("c", "i32", (64, 64), randint(-100000, 100000))],
    ref=lambda v, s: {"c": v.c.astype(np.int64) + v.a.astype(np.int64) @ v.b.astype(np.int64)})

add("dot.f8_acc", "dot_f8.kiln", "dot_f8", grid=(1,),
    args=[Arr("a", "f8e4m3", (64, 96), normal()),
          Arr("b", "f8e5m2", (96, 64), normal()),
          Arr("c", "f32", (64, 64), normal())],
    ref=lambda v, s: {"c": f64(v.c) + f64(v.a) @ f64(v.b)}, tol=Tol(1e-5, 1e-5))

# The benchmark's bf16 attention (three loops, fused) at small sizes. Both products run on
# the tensor cores; on sm_90a (4 warps, 64-row strips: wgmma) the scores, their row max and
# sum, the probabilities and the output stay in the dots' fragments, and the probabilities
# are the second dot's A operand in registers (codegen/FragmentPlan.h). The probabilities
# are rounded to bf16 before the product with V, as in FlashAttention: the reference keeps
# f64 throughout, so the tolerance covers that rounding.

def _attention_bf16(name, seq, tiles, causal=False, gen=normal()):
    bm = tiles["BM"]
    CASES.append(Case(
        name=name, file="bench/kernels/attention_bf16.kiln", kernel="attention_bf16",
        sizes={"heads": 2, "seq": seq, "d": tiles["D"]}, defines=dict(tiles, CAUSAL=causal),
        grid=lambda s: (s["seq"] // bm, s["heads"]),
        args=[Arr("q", "bf16", ("heads", "seq", "d"), gen),
              Arr("k", "bf16", ("heads", "seq", "d"), gen),
              Arr("v", "bf16", ("heads", "seq", "d"), normal()),
              Arr("o", "bf16", ("heads", "seq", "d")), Scalar("seq", "i32", "seq"),
              Scalar("scale", "f32", lambda s: s["d"] ** -0.5)],
        ref=attention_ref(causal), tol=Tol(2e-2, 2e-2)))


_attention_bf16("dot.attention_bf16", 128, {"D": 64, "BM": 64, "BN": 64})
_attention_bf16("dot.attention_bf16.causal_bn32", 128, {"D": 64, "BM": 64, "BN": 32, "KEYS_BY_ROW": True},
                causal=True)
# Accurate exp, keys loaded by rows, scores large enough that exp without the running
# maximum would overflow.
_attention_bf16("dot.attention_bf16.exp_keys_by_row", 128,
                {"D": 32, "BM": 64, "BN": 128, "EXP2": False, "KEYS_BY_ROW": True},
                gen=normal(4.0))

# ---- atomics --------------------------------------------------------------------------------

add("atomic.histogram", "atomic_hist.kiln", "histogram",
    sizes=lambda r: {"n": int(r.integers(500, 3000)), "bins": 37}, grid=blocks(128),
    args=[Arr("keys", "i32", "n", randint(0, 37)), Arr("hist", "i32", "bins"),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"hist": np.bincount(v.keys, minlength=s["bins"])})


add("atomic.tickets", "atomic_hist.kiln", "tickets", grid=(1,),
    args=[Arr("counter", "i32", 1, randint(0, 100)), Arr("got", "i32", 32)],
    ref=lambda v, s: {"counter": v.counter + 32, "got": v.counter[0] + np.arange(32)})


def _group_ref(v, s):
    progs = cdiv(s["n"], 64)
    gmax, gmin = v.gmax.copy(), v.gmin.copy()
    for p in range(progs):
        blk = v.x[p * 64:(p + 1) * 64]
        g = p % s["groups"]
        gmax[g] = max(gmax[g], blk.max())
        gmin[g] = min(gmin[g], blk.min())
    return {"gmax": gmax, "gmin": gmin, "total": [f64(v.vals).sum() + f64(v.total[0])]}


add("atomic.max_min_add", "atomic_minmax.kiln", "group_extrema",
    sizes=lambda r: {"n": int(r.integers(300, 1500)), "groups": int(r.integers(1, 5))},
    grid=blocks(64),
    args=[Arr("x", "i32", "n", randint(-10 ** 6, 10 ** 6)), Arr("vals", "f32", "n", normal()),
          Arr("gmax", "i32", "groups", fill(-2 ** 31)),
          Arr("gmin", "i32", "groups", fill(2 ** 31 - 1)),
          Arr("total", "f32", 1, normal()), Scalar("n", "i32", "n"),
          Scalar("groups", "i32", "groups")],
    ref=_group_ref, tol={"total": Tol(1e-5, 1e-4)})

add("atomic.lane_max", "atomic_minmax.kiln", "lane_max", grid=(10,),
    args=[Arr("x", "f32", (10, 32), normal()), Arr("cells", "f32", 32, normal())],
    ref=lambda v, s: {"cells": np.maximum(v.cells, v.x.max(axis=0))}, tol=EXACT)

add("atomic.cas", "atomic_cas.kiln", "cas_cells", grid=(50,),
    args=[Arr("cells", "i32", 50, randint(0, 3)), Arr("cmp", "i32", 50, randint(0, 3)),
          Arr("val", "i32", 50, randint(100, 200)), Arr("old", "i32", 50)],
    ref=lambda v, s: {"cells": np.where(v.cells == v.cmp, v.val, v.cells), "old": v.cells})

add("atomic.spin_lock", "atomic_cas.kiln", "locked_count", grid=(20,),
    args=[Arr("lock", "i32", 1), Arr("counter", "i32", 1), Arr("visits", "i32", 20)],
    ref=lambda v, s: {"lock": [0], "counter": [20 * 21 // 2], "visits": np.ones(20)})

# ---- control flow -----------------------------------------------------------------------------

add("loop.for_carried", "for_carried.kiln", "long_rows",
    sizes=lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(1, 500))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), normal()), Arr("sums", "f32", "rows"),
          Arr("maxes", "f32", "rows"), Scalar("n_cols", "i32", "n")],
    ref=lambda v, s: {"sums": f64(v.x).sum(axis=1), "maxes": v.x.max(axis=1)},
    tol={"sums": Tol(1e-5, 1e-5), "maxes": EXACT})

add("loop.grid_stride", "for_carried.kiln", "grid_stride", sizes=rand_n(100, 2000), grid=(3,),
    args=[Arr("x", "f32", "n", normal()), Arr("out", "f32", "n"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": v.x * np.float32(0.5) - np.float32(1)}, tol=EXACT)

add("loop.for_zero_trip", "for_carried.kiln", "long_rows", sizes={"rows": 3, "n": 0},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n")), Arr("sums", "f32", "rows", normal()),
          Arr("maxes", "f32", "rows", normal()), Scalar("n_cols", "i32", "n")],
    ref=lambda v, s: {"sums": np.zeros(3), "maxes": np.full(3, -np.inf)}, tol=EXACT)

add("loop.static_range", "static_range.kiln", "weighted_blocks", grid=(1,),
    args=[Arr("x", "f32", 128, normal()), Arr("out", "f32", 32), Arr("tri", "f32", 4),
          Arr("down", "i32", 3)],
    ref=lambda v, s: {"out": sum(f64(v.x[i * 32:(i + 1) * 32]) * (i + 1) for i in range(4)),
                      "tri": [f64(v.x[:i + 1]).sum() for i in range(4)],
                      "down": [60, 41, 22]},
    tol=Tol(1e-5, 1e-6))


def _collatz(x):
    steps = []
    for v in x:
        v, k = int(v), 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        steps.append(k)
    return steps


add("loop.while_collatz", "while_loop.kiln", "collatz", grid=(40,),
    args=[Arr("x", "i32", 40, with_specials(randint(1, 1000), [1, 2, 27])),
          Arr("steps", "i32", 40)],
    ref=lambda v, s: {"steps": _collatz(v.x)})


def _halve_ref(v, s):
    t, k = v.x.copy(), 0
    while t.max() >= v.limit:
        t = t * np.float32(0.5)
        k += 1
    return {"out": t, "rounds": [k]}


add("loop.while_tile", "while_loop.kiln", "halve_until", grid=(1,),
    args=[Arr("x", "f32", 32, uniform(0.0, 100.0)), Arr("out", "f32", 32), Arr("rounds", "i32", 1),
          Scalar("limit", "f32", 3.0)],
    ref=_halve_ref, tol=EXACT)


def _classify_ref(v, s):
    out, kind = v.out.copy().reshape(-1, 16), []
    for p, blk in enumerate(v.x.reshape(-1, 16)):
        total = f64(blk).sum()
        if total > 4.0:
            res, k = blk * np.float32(0.5), 1
        elif total < -4.0:
            res, k = -blk, 2
        else:
            res, k = blk, 3
        out[p] = res + (np.float32(100.0) if p % 2 == 1 else 0)
        kind.append(k)
    return {"out": out.reshape(-1), "kind": kind}


def _block_means(rng, shape):
    """16-wide blocks whose sums lie near -9.6, 0 or 9.6: far from the thresholds +-4, so
    the order of the f32 additions cannot change which branch a program takes."""
    means = rng.choice([-0.6, 0.0, 0.6], size=shape[0] // 16)
    return np.repeat(means, 16) + rng.normal(0.0, 0.05, size=shape)


add("branch.if_else", "if_else.kiln", "classify", grid=(30,),
    args=[Arr("x", "f32", 30 * 16, _block_means), Arr("out", "f32", 30 * 16),
          Arr("kind", "i32", 30)],
    ref=_classify_ref)

def _compound_ref(v, s):
    f = (((v.x + np.float32(1.5)) * np.float32(2)) - np.float32(0.25)) / np.float32(3)
    i = (v.k.astype(np.int64) + 7) * 3 - 1
    i = c_rem(c_div(i, 2), 1000)
    i = np.right_shift(i * 4, 1)
    i = ((i & 0x7FF) | 0x1000) ^ 0x55
    return {"of": f, "oi": np.append(i, 24)}


add("assign.compound", "compound_assign.kiln", "compound", grid=(1,),
    args=[Arr("x", "f32", 64, normal()), Arr("k", "i32", 64, randint(-500, 500)),
          Arr("of", "f32", 64), Arr("oi", "i32", 65)],
    ref=_compound_ref, tol={"of": EXACT})

def _nested(name, sizes):
    add(name, "nested_loops.kiln", "triangular", sizes=sizes, grid=(1,),
        args=[Arr("x", "i32", "n", randint(-50, 50)), Arr("tri", "i32", lambda s: s["n"] + 2),
              Arr("down", "i32", "n"), Scalar("n", "i32", "n")],
        ref=lambda v, s: {
            "tri": np.concatenate([np.cumsum(v.x), [np.cumsum(v.x).sum(), (v.x > 0).sum()]]),
            "down": v.x[::-1].astype(np.int64) * 10 + np.arange(s["n"])})


_nested("loop.nested", rand_n(1, 40))
_nested("loop.nested_zero_trip", {"n": 0})   # empty buffers, no iteration at all

# ---- functions, imports, consts, attributes ---------------------------------------------------


def _act_ref(v, s):
    a, b = f64(v.x), f64(v.y)
    silu = a * sigmoid(a)
    gelu = 0.5 * a * (1.0 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))
    return {"out": np.stack([silu, gelu, silu * b, a * (2.0 * 1.5 * sigmoid(1.5))]),
            "outb": f64(v.xb) * sigmoid(v.xb)}


add("fn.generic", "generic_fn.kiln", "activations", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", normal(2.0)), Arr("y", "f32", "n", normal()),
          Arr("xb", "bf16", "n", normal(2.0)), Arr("out", "f32", (4, "n")),
          Arr("outb", "bf16", "n"), Scalar("n", "i32", "n")],
    ref=_act_ref, tol={"out": Tol(1e-5, 1e-5)})


add("fn.no_result", "generic_fn.kiln", "pairs", grid=(5,),
    args=[Arr("x", "f32", 5, normal()), Arr("out", "f32", 10)],
    ref=lambda v, s: {"out": np.stack([v.x * np.float32(3), -(v.x * np.float32(3))],
                                      axis=1).reshape(-1)},
    tol=EXACT)


def _import_ref(v, s):
    x = f64(v.x)
    softplus = np.log1p(np.exp(x))
    return {"out": np.stack([softplus, x * np.tanh(softplus), np.maximum(x, 0) ** 2,
                             v.x * np.float32(1.4426950408889634)])}


add("fn.import", "import_helper.kiln", "imported", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", normal(2.0)), Arr("out", "f32", (4, "n")), Scalar("n", "i32", "n")],
    ref=_import_ref, tol=Tol(1e-5, 1e-5))


def _affine(scale, shift):
    return lambda v, s: {"out": v.x * np.float32(scale) + np.float32(shift) + np.float32(1.5)}


_AFFINE_ARGS = [Arr("x", "f32", "n", normal()), Arr("out", "f32", "n"), Scalar("n", "i32", "n")]
add("const.defaults", "const_params.kiln", "affine", sizes=rand_n(100, 400), grid=blocks(64),
    args=_AFFINE_ARGS, ref=_affine(2, 0.25))
add("const.overrides", "const_params.kiln", "affine", sizes=rand_n(100, 400),
    defines={"BLOCK": 16, "SCALE": 5, "SHIFT": -1.5}, grid=blocks(16),
    args=_AFFINE_ARGS, ref=_affine(5, -1.5))
add("const.static_assert_fails", "const_params.kiln", "affine", sizes={"n": 64},
    defines={"BLOCK": 8}, grid=(8,), args=_AFFINE_ARGS, ref=_affine(2, 0.25),
    expect_error="E0502")
add("const.unknown_override", "const_params.kiln", "affine", sizes={"n": 64},
    defines={"NOPE": 1}, grid=(1,), args=_AFFINE_ARGS, ref=_affine(2, 0.25),
    expect_error="E0107")

_BRANCH_ARGS = [Arr("x", "f32", 16, normal()), Arr("out", "f32", 16)]
add("const.if_mode0", "const_if.kiln", "const_branch", grid=(1,), args=_BRANCH_ARGS,
    ref=lambda v, s: {"out": v.x * np.float32(2)}, tol=EXACT)
add("const.if_mode1", "const_if.kiln", "const_branch", grid=(1,), args=_BRANCH_ARGS,
    defines={"MODE": 1}, ref=lambda v, s: {"out": v.x + np.float32(1)}, tol=EXACT)
add("const.if_mode2_rejected", "const_if.kiln", "const_branch", grid=(1,), args=_BRANCH_ARGS,
    defines={"MODE": 2}, ref=lambda v, s: {}, expect_error="E0502")

add("attr.num_warps", "attributes.kiln", "scale_hinted", sizes=rand_n(50, 500), grid=blocks(64),
    args=_AFFINE_ARGS, ref=lambda v, s: {"out": v.x * np.float32(3)}, tol=EXACT)
add("attr.autotune", "attributes.kiln", "square_all", sizes=rand_n(1, 2000), grid=(1,),
    args=_AFFINE_ARGS, ref=lambda v, s: {"out": v.x * v.x}, tol=EXACT)


def _grid3d_case(name, grid):
    nx, ny, nz = grid

    def ref(v, s):
        out = np.zeros((nz, ny, nx, 4), dtype=np.int64)
        for z in range(nz):
            for y in range(ny):
                for x in range(nx):
                    out[z, y, x] = [x, y, z, nx * ny * nz]
        return {"out": out}
    add(name, "grid3d.kiln", "ids3d", grid=grid, args=[Arr("out", "i32", (nz, ny, nx, 4))],
        ref=ref)


_grid3d_case("grid.3d", (3, 4, 2))
_grid3d_case("grid.3d_flat_y", (5, 1, 3))
_grid3d_case("grid.3d_single", (1, 1, 1))

# ---- typing -------------------------------------------------------------------------------------

add("types.weak_literals", "weak_literals.kiln", "weak_types", sizes=rand_n(64, 300),
    grid=blocks(64),
    args=[Arr("xh", "f16", "n", with_specials(normal(3.0), [0.0999755859375, 0.1001, 0.0999])),
          Arr("xb", "bf16", "n", normal(3.0)),
          Arr("xi", "i32", "n", randint(-100, 100)), Arr("xu", "u8", "n", randint(0, 256)),
          Arr("oh", "f16", "n"), Arr("ob", "bf16", "n"), Arr("oi", "f32", "n"),
          Arr("ou", "i32", "n"), Arr("olt", "bool", "n"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {
        "oh": v.xh * np.float16(3) + np.float16(0.1),
        "ob": round_bf16(round_bf16(v.xb * np.float32(0.5)) + np.float32(2)),
        "oi": f32(v.xi) * np.float32(0.5),
        "ou": (v.xu.astype(np.int64) + 200) % 256,
        "olt": v.xh < np.float16(0.1)},
    tol=EXACT)

add("types.promotion", "promotion.kiln", "promote", sizes=rand_n(64, 300), grid=blocks(64),
    args=[Arr("xi", "i32", "n", randint(-100, 100)), Arr("xh", "f16", "n", normal()),
          Arr("xb", "bf16", "n", normal()), Arr("xf", "f32", "n", normal()),
          Arr("xu", "u32", "n", full_range(np.uint32)),
          Arr("xs", "i16", "n", randint(-30000, 30000)),
          Arr("xl", "i64", "n", randint(-2 ** 40, 2 ** 40)), Arr("xb8", "u8", "n", randint(0, 256)),
          Arr("oh", "f16", "n"), Arr("of", "f32", "n"), Arr("ofb", "f32", "n"),
          Arr("ou", "u32", "n"), Arr("ol", "i64", "n"), Arr("osi", "i64", "n"),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {
        "oh": v.xi.astype(np.float16) + v.xh,
        "of": f32(v.xh) + f32(v.xb),
        "ofb": f32(v.xb) * v.xf,
        "ou": (v.xu.astype(np.int64) + v.xi.astype(np.int64)) % 2 ** 32,
        "ol": v.xs.astype(np.int64) * v.xl,
        "osi": v.xb8.astype(np.int64) - v.xi},
    tol=EXACT)


def _wide_ref(v, s):
    a, b = v.a, v.b
    return {"oa": np.stack([a * np.int64(1000003) + np.int64(s["big"]),
                            c_div(a, np.int64(7)) - c_rem(a, np.int64(7)),
                            np.right_shift(a, np.int64(40))]),
            "ob": np.stack([b >> np.uint64(33), b * np.uint64(3) + np.uint64(5),
                            b // np.uint64(1000000007)])}


add("types.wide_ints", "wide_ints.kiln", "wide", sizes=lambda r: {
        "n": int(r.integers(64, 300)), "big": 5_000_000_000 + int(r.integers(0, 1000))},
    grid=blocks(64),
    args=[Arr("a", "i64", "n", randint(-2 ** 50, 2 ** 50)),
          Arr("b", "u64", "n", full_range(np.uint64)),
          Arr("oa", "i64", (3, "n")), Arr("ob", "u64", (3, "n")),
          Scalar("big", "i64", "big"), Scalar("n", "i32", "n")],
    ref=_wide_ref)


def _int_misc_ref(v, s):
    x, y = v.a.astype(np.int64), v.b.astype(np.int64)
    return {"out": np.stack([np.abs(x), -y, np.minimum(x, y), np.maximum(x, y),
                             wrap(x * 65536 + y, "i32")]),
            "oh": wrap(v.h.astype(np.int64) * 3 - 7, "i16")}


add("int.misc", "int_ops.kiln", "int_misc", sizes=rand_n(64, 300), grid=blocks(64),
    args=[Arr("a", "i32", "n", randint(-2 ** 31 + 1, 2 ** 31)),
          Arr("b", "i32", "n", randint(-2 ** 31 + 1, 2 ** 31)),
          Arr("out", "i32", (5, "n")), Arr("h", "i16", "n", full_range(np.int16)),
          Arr("oh", "i16", "n"), Scalar("n", "i32", "n")],
    ref=_int_misc_ref)


def _logic_ref(v, s):
    a, b = v.x, v.y
    c1 = (a > 0) & ~(b < 0)
    c2 = (a == b) | (a >= 1) | (b <= -1)
    c3 = (a != a) ^ (a < b)
    progs = cdiv(s["n"], 64)
    return {"out": np.stack([c1, c2, c3 | (c1 & c2)]),
            "cnt": [c1[p * 64:(p + 1) * 64].sum() for p in range(progs)]}


add("types.logical", "logical.kiln", "logic", sizes=rand_n(64, 400), grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(randint(-2, 3), [np.nan, 1.0])),
          Arr("y", "f32", "n", randint(-2, 3)), Arr("out", "bool", (3, "n")),
          Arr("cnt", "i32", lambda s: cdiv(s["n"], 64)), Scalar("n", "i32", "n")],
    ref=_logic_ref)

add("types.where", "where_select.kiln", "select", sizes=rand_n(64, 400), grid=blocks(64),
    args=[Arr("x", "f32", "n", normal()), Arr("y", "f32", "n", normal()),
          Arr("k", "i32", "n", randint(-50, 50)), Arr("out", "f32", (4, "n")),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.stack([
        np.where(v.x > 0, v.x, 0), np.where(v.x > v.y, v.x, v.y),
        np.where(c_rem(v.k, 3) == 0, f32(v.k), v.x), v.x - v.y])},
    tol=EXACT)

add("types.lexical", "lexical.kiln", "literals", grid=(1,),
    args=[Arr("flags", "bool", 32, boolean()), Arr("x", "f32", 32, normal()),
          Arr("out", "f32", 32), Arr("iout", "i32", 34)],
    ref=lambda v, s: {
        "out": np.where(v.flags, v.x * np.float32(1e-3), v.x + np.float32(250)),
        "iout": np.concatenate([np.where(v.flags, 42, 1000) + 255, [v.flags.sum()] * 2])},
    tol=EXACT)

add("types.annotations", "annotations.kiln", "annotated", grid=(1,),
    args=[Arr("x", "f32", 32, normal(3.0)), Arr("out", "f32", 32), Arr("stats", "f32", 2)],
    ref=lambda v, s: {"out": np.clip(v.x, -4, 4),
                      "stats": [np.clip(f64(v.x), -4, 4).sum(),
                                np.clip(f64(v.x), -4, 4).sum() + f64(v.x).sum()]},
    tol={"stats": Tol(1e-5, 1e-5)})

add("types.f64", "f64_math.kiln", "double_ops", sizes=rand_n(1, 129), grid=(1,),
    args=[Arr("x", "f64", "n", uniform(0.0, 5.0)), Arr("out", "f64", "n"),
          Arr("stats", "f64", 3), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": np.sqrt(v.x) * np.exp(-v.x) + 1e-12,
                      "stats": [v.x.sum(), (v.x * v.x).sum() / s["n"], v.x.max()]},
    tol=Tol(1e-12, 1e-14))

add("types.nan_inf", "nan_inf.kiln", "nan_rules", grid=(1,),
    args=[Arr("x", "f32", 16, with_specials(normal(), [np.nan, 5.0, np.nan, -7.0])),
          Arr("y", "f32", 16, with_specials(normal(), [1.0, np.nan, np.nan, np.inf])),
          Arr("red", "f32", 6), Arr("mm", "f32", 32), Arr("sorted", "f32", 16),
          Arr("cmp", "bool", 32)],
    ref=lambda v, s: {
        "red": [np.nanmax(v.x), np.nanmin(v.x), np.nan, np.nansum(f64(v.x)), np.inf, -np.inf],
        "mm": np.concatenate([np.fmin(v.x, v.y), np.fmax(v.x, v.y)]),
        "sorted": np.sort(v.x),
        "cmp": np.concatenate([v.x < v.y, v.x != v.y])},
    tol={"red": Tol(1e-5, 1e-6), "mm": EXACT, "sorted": EXACT})

add("types.store_convert", "store_convert.kiln", "store_convert", grid=(1,),
    args=[Arr("x", "f32", 64, with_specials(normal(100.0), [3e9, -0.5, np.nan, 2.7, -2.7, 7e4])),
          Arr("h", "f16", 64), Arr("b", "bf16", 64), Arr("i", "i32", 64), Arr("u", "u8", 64),
          Arr("hl", "f16", 64, normal()), Arr("lo", "f32", 64)],
    ref=lambda v, s: {"h": v.x.astype(np.float16), "b": round_bf16(v.x),
                      "i": sat_cast(v.x, "i32"), "u": np.full(64, 7),
                      "lo": np.where(np.arange(64) < 10, v.hl, np.float16(0.1))},
    tol=EXACT)

add("scope.shadowing", "scopes.kiln", "shadowing", grid=(1,),
    args=[Arr("x", "i32", 16, randint(-1000, 1000)), Arr("out", "i32", 16)],
    ref=lambda v, s: {"out": 14 * v.x.astype(np.int64) + 106})

# ---- pointers, scalars, methods, creation --------------------------------------------------


def _column_ref(v, s):
    return {"out": v.x[:, s["col"]], "rev": v.x[0, ::-1]}


add("ptr.strided", "strided_ptr.kiln", "column",
    sizes=lambda r: (lambda st: {"rows": int(r.integers(1, 100)), "stride": st,
                                 "col": int(r.integers(0, st))})(int(r.integers(1, 65))),
    grid=blocks(64, "rows"),
    args=[Arr("x", "f32", ("rows", "stride"), normal()), Arr("out", "f32", "rows"),
          Arr("rev", "f32", "stride"), Scalar("rows", "i32", "rows"),
          Scalar("stride", "i32", "stride"), Scalar("col", "i32", "col")],
    ref=_column_ref, tol=EXACT)

add("scalar.loop_dot", "scalar_ops.kiln", "scalar_dot", sizes=rand_n(1, 200), grid=(1,),
    args=[Arr("x", "f32", "n", normal()), Arr("y", "f32", "n", normal()), Arr("out", "f32", 2),
          Scalar("n", "i32", "n")],
    ref=lambda v, s: {"out": [f64(v.x) @ f64(v.y), v.x[0] * np.float32(2) + v.y[-1]]},
    tol=Tol(1e-5, 1e-4))

add("method.calls", "method_calls.kiln", "methods", grid=(1,),
    args=[Arr("x", "f32", (8, 16), normal()), Arr("sums", "f32", 16), Arr("misc", "f32", 3),
          Arr("h", "f16", (8, 16))],
    ref=lambda v, s: {"sums": f64(v.x).sum(axis=0),
                      "misc": [v.x.max(), np.abs(v.x).min(), np.exp(f64(v.x)).sum(axis=1).max()],
                      "h": (v.x * np.float32(2)).astype(np.float16)},
    tol={"sums": Tol(1e-5, 1e-6), "misc": Tol(1e-5, 1e-6), "h": EXACT})

add("create.zeros_full_arange", "creation.kiln", "create", grid=(1,),
    args=[Arr("out", "f32", 64), Arr("iout", "i32", 32), Arr("bout", "bf16", (2, 32)),
          Arr("neg", "i32", 8)],
    ref=lambda v, s: {"out": np.concatenate([np.full(32, 3.5), -2.0 * np.arange(10, 42)]),
                      "iout": np.arange(5, 37) + 7, "bout": np.full((2, 32), 1.25),
                      "neg": np.arange(-3, 5) * 2},
    tol=EXACT)

# ---- small kernels as a user writes them ------------------------------------------------------

add("kernel.softmax_2d", "softmax_rows2d.kiln", "softmax_2d",
    sizes=lambda r: {"M": int(r.integers(1, 30)), "N": int(r.integers(1, 129))},
    grid=lambda s: (cdiv(s["M"], 4),),
    args=[Arr("x", "f32", ("M", "N"), normal(3.0)), Arr("y", "f32", ("M", "N")),
          Scalar("M", "i32", "M"), Scalar("N", "i32", "N")],
    ref=lambda v, s: {"y": softmax_rows(v.x)}, tol=Tol(1e-5, 1e-7))


def _rms_ref(v, s):
    x = f64(v.x)
    return {"y": x / np.sqrt((x * x).mean(axis=1, keepdims=True) + float(v.eps)) * f64(v.w)}


add("kernel.rmsnorm_loop", "rmsnorm_loop.kiln", "rmsnorm",
    sizes=lambda r: {"rows": int(r.integers(1, 7)), "n": int(r.integers(1, 600))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), normal()), Arr("w", "f32", "n", normal()),
          Arr("y", "f32", ("rows", "n")), Scalar("n_cols", "i32", "n"),
          Scalar("eps", "f32", 1e-6)],
    ref=_rms_ref, tol=Tol(2e-5, 1e-6))


# ---- runtime checks: assert, print, bounds ----------------------------------------------------

_CHECK_ARGS = [Arr("x", "f32", "n", uniform(0.0, 5.0)), Arr("out", "f32", "n"),
               Scalar("n", "i32", "n"), Scalar("factor", "f32", "factor")]
add("check.assert_pass_print", "assert_print.kiln", "checked_scale",
    sizes=lambda r: {"n": int(r.integers(33, 200)), "factor": 2.5}, grid=blocks(32),
    args=_CHECK_ARGS, ref=lambda v, s: {"out": v.x * v.factor}, tol=EXACT,
    expect_stdout="kiln-check first")
add("check.assert_fails", "assert_print.kiln", "checked_scale",
    sizes={"n": 40, "factor": -1.0}, grid=(2,), args=_CHECK_ARGS,
    ref=lambda v, s: {}, expect_error="E0604")
add("check.assert_fails_data", "assert_print.kiln", "checked_scale",
    sizes={"n": 40, "factor": 1.0}, grid=(2,),
    args=[Arr("x", "f32", "n", with_specials(uniform(0.0, 5.0), [1.0, -3.0]))] + _CHECK_ARGS[1:],
    ref=lambda v, s: {}, expect_error="E0604")
add("check.out_of_bounds", "out_of_bounds.kiln", "unmasked_copy", sizes={"n": 100},
    grid=blocks(64), args=_AFFINE_ARGS, ref=lambda v, s: {}, expect_error="E0602")
add("check.in_bounds", "out_of_bounds.kiln", "unmasked_copy", sizes={"n": 128},
    grid=blocks(64), args=_AFFINE_ARGS, ref=lambda v, s: {"out": v.x}, tol=EXACT)


def _shifted_chain_ref(v, s):
    x = f64(v.x)
    total = x.sum(axis=1, keepdims=True)
    top = (x - total / x.shape[1]).max(axis=1, keepdims=True)
    share = (np.exp(x - top) / total).sum(axis=1, keepdims=True)
    return {"out": np.concatenate([top, share], axis=1)}


# Reduction-chain fusion (a max-type reduction shifted by a running sum, a deferred
# factor); the means are kept away from 0, where 1/total would amplify rounding.
def _f16_weights_ref(v, s):
    x = f64(v.x)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (p * f64(v.v)).sum(axis=1)}


# Weights rounded to f16 under a running maximum, fused under --fuse-quantized (without
# it the loops stay as written): the fused sum rounds exp(x - m_prev)
# where the written program rounds exp(x - m), both within f16's precision of the exact
# sum (products of f16 values are rounded to f16 too, hence the tolerance).
add("fusion.f16_weights", "fusion_chains.kiln", "f16_weights",
    sizes=lambda r: {"rows": int(r.integers(1, 6)), "n": int(r.integers(1, 400))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), normal(3.0)), Arr("v", "f32", ("rows", "n"), uniform(0.5, 2.0)),
          Arr("out", "f32", "rows"), Scalar("n", "i32", "n")],
    ref=_f16_weights_ref, tol=Tol(4e-3, 1e-3), flags=("--fuse-quantized",))


add("fusion.one_line_rows", "fusion_chains.kiln", "one_line_rows", grid=(3,),
    args=[Arr("x", "f32", (3, 256), normal(3.0)), Arr("y", "f32", (3, 256))],
    ref=lambda v, s: {"y": softmax_rows(v.x)}, tol=Tol(1e-5, 1e-7))


def _quant_sum_ref(v, s):
    """total = sum(q(x * s_inv)) / s_inv per row, s_inv = 448 / max|x|; fused (the case
    runs with --fuse-quantized), block by block at the running maximum from -inf, the sum
    rescaled by s_inv / s_inv_prev (0 while the factor before was not finite), each
    segment from -inf, the segments merged at the final scale."""
    x = f32(v.x)
    B, segs = 64, (v.segments or 1)
    out = []
    for row in x:
        n = row.size
        inv_final = np.float32(448.0) / np.abs(row).max()
        if not v.fusion:
            out.append(f64(round_f8((row * inv_final).astype(np.float32), "f8e4m3")).sum() / inv_final)
            continue
        blocks, total = -(-n // B), 0.0
        for seg in range(segs):
            amax, part = np.float32(-np.inf), 0.0
            inv_prev = np.float32(448.0) / amax
            for blk in range(seg * blocks // segs, (seg + 1) * blocks // segs):
                block = row[blk * B:(blk + 1) * B]
                amax = max(amax, np.abs(block).max())
                inv = np.float32(448.0) / amax
                ratio = np.float32(inv / inv_prev)
                part = part * (float(ratio) if np.isfinite(ratio) else 0.0) + \
                    f64(round_f8((block * inv).astype(np.float32), "f8e4m3")).sum()
                inv_prev = inv
            ratio = np.float32(inv_final / inv_prev)
            total += part * (float(ratio) if np.isfinite(ratio) else 0.0)
        out.append(total / inv_final)
    return {"out": np.array(out)}


add("fusion.quant_sum", "fusion_chains.kiln", "quant_sum",
    sizes=lambda r: {"rows": int(r.integers(1, 5)), "n": int(r.integers(1, 400))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), uniform(0.5, 4.0)), Arr("out", "f32", "rows"),
          Scalar("n", "i32", "n")],
    ref=_quant_sum_ref, tol=Tol(1e-4, 1e-4), flags=("--fuse-quantized", "--reduction-split=1"))


add("fusion.shifted_chain", "fusion_chains.kiln", "shifted_chain",
    sizes=lambda r: {"rows": int(r.integers(1, 6)), "n": int(r.integers(1, 300))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), uniform(0.5, 2.0)), Arr("out", "f32", ("rows", 2)),
          Scalar("n", "i32", "n")],
    ref=_shifted_chain_ref, tol=Tol(1e-4, 1e-5))


def _chain_inits_ref(v, s):
    x = f64(v.x)
    n = x.shape[1]
    total = n + x.sum(axis=1, keepdims=True)
    mean = total / n
    m = np.maximum(0.5, (x - mean).max(axis=1, keepdims=True))
    l = 1.0 + np.exp(x - mean - m).sum(axis=1, keepdims=True)
    return {"out": np.concatenate([total, m, l], axis=1)}


# Initial values that are not the identity of each ⊕ count once, unrescaled; short
# rows (n = 1 gives a mean above every element) hold the maximum at its floor.
add("fusion.chain_inits", "fusion_chains.kiln", "chain_inits",
    sizes=lambda r: {"rows": int(r.integers(1, 6)), "n": int(r.integers(1, 300))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), uniform(-2.0, 2.0)), Arr("out", "f32", ("rows", 3)),
          Scalar("n", "i32", "n")],
    ref=_chain_inits_ref, tol=Tol(1e-4, 1e-5))


def _continued_loops_ref(v, s):
    x = f64(v.x)
    B = 32
    t_all, s_all, y = [], [], np.empty_like(x)
    for r in range(x.shape[0]):
        row = x[r]
        m = max(-1.0, row.max()) if row.size else -1.0
        t = 0.5 * m + np.exp(row - m).sum()
        acc = m
        for i in range(0, row.size, B):
            acc += np.exp(row[i:i + B] - acc).sum()
        y[r] = row - t - acc
        t_all.append(t)
        s_all.append(acc)
    return {"y": y, "out": np.stack([t_all, s_all], axis=1)}


# Loops that continue from an earlier loop's result stay unfused, and the short-row
# versions (one block, held blocks, an empty row) start each from the one before it.
add("fusion.continued_loops", "fusion_chains.kiln", "continued_loops",
    sizes=lambda r: {"rows": int(r.integers(1, 5)), "n": int(r.choice([0, int(r.integers(1, 33)),
                                                                       int(r.integers(33, 300))]))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), uniform(-2.0, 2.0)), Arr("y", "f32", ("rows", "n")),
          Arr("out", "f32", ("rows", 2)), Scalar("n", "i32", "n")],
    ref=_continued_loops_ref, tol=Tol(1e-4, 1e-5))


def _two_chains_ref(v, s):
    x = f64(v.x)

    def lse(a):
        m = a.max(axis=1)
        return m + np.log(np.exp(a - m[:, None]).sum(axis=1))
    return {"out": np.stack([lse(x), lse(x[:, :s["k"]])], axis=1)}


# Two chains in one kernel, over a row and over its first k elements; on the GPU also
# with the first split over 3 segments.
add("fusion.two_chains", "fusion_chains.kiln", "two_chains",
    sizes=lambda r: {"rows": int(r.integers(1, 5)), "n": int(r.integers(40, 300)),
                     "k": int(r.integers(1, 40))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), normal(5.0)), Arr("out", "f32", ("rows", 2)),
          Scalar("n", "i32", "n"), Scalar("k", "i32", "k")],
    ref=_two_chains_ref, tol=Tol(1e-5, 1e-5), gpu_splits=(3,))


def _logsumexp_ref(v, s):
    x = f64(v.x)
    m = x.max(axis=1)
    return {"out": m + np.log(np.exp(x - m[:, None]).sum(axis=1))}


# The chain in the body of a loop over rows; three programs share the rows.
add("fusion.logsumexp_rows", "fusion_chains.kiln", "logsumexp_rows",
    sizes=lambda r: {"rows": int(r.integers(1, 11)), "n": int(r.integers(1, 300))},
    grid=(3,),
    args=[Arr("x", "f32", ("rows", "n"), with_specials(normal(30.0), [500.0, -500.0])),
          Arr("out", "f32", "rows"), Scalar("rows", "i32", "rows"), Scalar("n", "i32", "n")],
    ref=_logsumexp_ref, tol=Tol(1e-5, 1e-4))


# Rows of one block, of two (held on chip) and of more.
add("fusion.softmax_in_place", "fusion_chains.kiln", "softmax_in_place",
    sizes=lambda r: {"rows": int(r.integers(1, 5)), "n": int(r.integers(1, 300))},
    grid=("rows",),
    args=[Arr("x", "f32", ("rows", "n"), normal(4.0)), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"x": softmax_rows(v.x)}, tol=Tol(1e-5, 1e-7))


# Rows with no element (rows past the grid's last full block of 4) stay masked off; the
# GPU check also splits each program's rows over 2 and 3 programs, in a thread-block
# cluster on sm_90a, exchanging tile states.
add("fusion.softmax_row_blocks", "fusion_chains.kiln", "softmax_row_blocks",
    sizes=lambda r: {"rows": int(r.integers(1, 11)), "n": int(r.integers(1, 300))},
    grid=lambda s: (cdiv(s["rows"], 4),),
    args=[Arr("x", "f32", ("rows", "n"), normal(4.0)), Arr("y", "f32", ("rows", "n")),
          Scalar("rows", "i32", "rows"), Scalar("n", "i32", "n")],
    ref=lambda v, s: {"y": softmax_rows(v.x)}, tol=Tol(1e-5, 1e-7), gpu_splits=(2, 3))


def _scale_by_max_ref(v, s):
    x, y = f64(v.x), np.zeros(s["n"])
    lo, hi = s["lo"], s["hi"]
    if hi > lo:
        end = min(lo + cdiv(hi - lo, 32) * 32, s["n"])
        y[lo:end] = x[lo:end] / max(0.0, np.abs(x[lo:end]).max())
    return {"y": y}


# Two blocks (held on chip), three of eight held blocks (the five past hi lie inside the
# buffer, unmasked by the kernel: only the version's guard keeps them out of the maximum
# and the output), a reversed range (empty: nothing written) and ten blocks (the loops).
for _suffix, _lo, _hi in ((".on_chip", 5, 60), (".held", 5, 100), (".reversed", 150, 20), (".loops", 0, 290)):
    add("fusion.scale_by_max" + _suffix, "fusion_chains.kiln", "scale_by_max",
        sizes={"n": 300, "lo": _lo, "hi": _hi}, grid=(1,),
        args=[Arr("x", "f32", "n", normal(3.0)), Arr("y", "f32", "n"), Scalar("n", "i32", "n"),
              Scalar("lo", "i32", "lo"), Scalar("hi", "i32", "hi")],
        ref=_scale_by_max_ref, tol=Tol(1e-6, 1e-7))


# ---- random numbers -------------------------------------------------------------------

def _draws_ref(v, s):
    offs = np.arange(s["n"], dtype=np.uint32)
    w0, w1, _, _ = random_words(v.seed, offs)
    u1 = np.maximum(random_uniform(w0), np.float32(1e-7)).astype(np.float64)
    u2 = f64(np.float32(6.283185307179586) * random_uniform(w1))
    return {"ints": w0, "uniforms": random_uniform(w0), "normals": np.sqrt(-2.0 * np.log(u1)) * np.cos(u2)}


# Random123's published known-answer vectors for Philox 4x32-10: (key, counter) -> words.
for i, (seed, ctr, want) in enumerate([
        (0, (0, 0, 0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
        (0xffffffffffffffff, (0xffffffff,) * 4, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
        (0x299f31d0a4093822, (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
         (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]):
    add("random.philox_kat%d" % i, "random.kiln", "philox_kat", grid=(1,),
        args=[Arr("out", "u32", 4), Scalar("seed", "u64", seed)] +
             [Scalar("c%d" % k, "u32", ctr[k]) for k in range(4)],
        ref=lambda v, s, want=want: {"out": np.array(want, np.uint32)}, tol=EXACT)

add("random.draws", "random.kiln", "draws",
    sizes=lambda r: {"n": int(r.integers(300, 1000)), "seed": int(r.integers(-2**31, 2**31))},
    grid=blocks(128),
    args=[Arr("ints", "u32", "n"), Arr("uniforms", "f32", "n"), Arr("normals", "f32", "n"),
          Scalar("seed", "i32", "seed"), Scalar("n", "i32", "n")],
    ref=_draws_ref, tol={"ints": EXACT, "uniforms": EXACT, "normals": Tol(rtol=1e-5, atol=1e-5)})

add("random.words", "random.kiln", "words",
    sizes=lambda r: {"seed": int(r.integers(-2**63, 2**63))}, grid=(1,),
    args=[Arr("out", "u32", 4 * 8 * 32), Scalar("seed", "i64", "seed")],
    ref=lambda v, s: {"out": np.concatenate(random_words(v.seed, np.arange(256, dtype=np.uint32), 7))},
    tol=EXACT)


# ---- early return ---------------------------------------------------------------------

def _early_return_ref(v, s):
    x, y = f32(v.x), f32(v.y).copy()
    for r in range(s["rows"]):
        if r % 3 == 1:
            y[r] = -x[r]
            continue
        if r % 3 == 2:
            y[r] = x[r] * x[r]
        if x[r].sum(dtype=np.float64) > 0.0:
            continue
        y[r] = x[r] * np.float32(2.0) + np.float32(1.0)
    return {"y": y}


add("control.early_return", "early_return.kiln", "rows",
    sizes=lambda r: {"rows": int(r.integers(6, 14)), "n": int(r.integers(20, 128))},
    grid=lambda s: (s["rows"] + 3,),  # programs past the last row return at once
    args=[Arr("x", "f32", ("rows", "n"), normal()), Arr("y", "f32", ("rows", "n"), normal()),
          Scalar("n", "i32", "n"), Scalar("n_rows", "i32", "rows")],
    ref=_early_return_ref, tol=Tol(1e-6, 1e-6))


def _for_return_ref(v, s):
    rows, n, B = s["rows"], s["n"], 16
    x = f32(v.x).reshape(rows, n)
    y = f32(v.y).reshape(rows, n).copy()
    out = np.full(rows, -1.0)
    for r in range(rows):
        total = np.float32(0.0)
        for i in range(0, n, B):
            total = np.float32(total + x[r, i:i + B].sum(dtype=np.float32))
            if total < -3.0:
                out[r] = i
                break
            y[r, i:i + B] = x[r, i:i + B] * np.float32(2.0)
    return {"y": y, "out": out}


add("control.for_return", "early_return_loops.kiln", "for_return",
    sizes=lambda r: {"rows": int(r.integers(4, 12)), "n": int(r.integers(40, 200))},
    grid=lambda s: (s["rows"],),
    args=[Arr("x", "f32", ("rows", "n"), normal(0.6, -0.05)), Arr("y", "f32", ("rows", "n")),
          Arr("out", "f32", "rows"), Scalar("n", "i32", "n")],
    ref=_for_return_ref, tol={"y": EXACT, "out": EXACT})


def _while_return_ref(v, s):
    rows, n = s["rows"], s["n"]
    x = f32(v.x).reshape(rows, n)
    out = np.zeros((rows, 2), dtype=np.int64)
    for r in range(rows):
        hits = np.nonzero(x[r] > 1.5)[0]
        if len(hits):
            out[r, 0] = hits[0]
            continue
        out[r, 0] = -1
        out[r, 1] = 100 + r % 4 if r % 4 >= 2 else -7
    return {"out": out}


add("control.while_return", "early_return_loops.kiln", "while_return",
    sizes=lambda r: {"rows": int(r.integers(8, 16)), "n": int(r.integers(5, 40))},
    grid=lambda s: (s["rows"],),
    args=[Arr("x", "f32", ("rows", "n"), normal(0.7)), Arr("out", "i32", ("rows", 2)),
          Scalar("n", "i32", "n")],
    ref=_while_return_ref, tol=EXACT)


# ---- cdiv, clamp, max/min of scalars --------------------------------------------------

def _cdiv_clamp_ref(v, s):
    n, i = s["n"], v.iv.astype(np.int64)
    return {"fout": np.minimum(np.maximum(f32(v.x), np.float32(v.lo)), np.float32(v.hi)),
            "iout": np.concatenate([np.clip(i, -5, 5), c_div(i + 6, 7),
                                    [cdiv(n, 64), max(v.a, v.b), min(v.a, v.b)]])}


add("math.cdiv_clamp", "cdiv_clamp.kiln", "cdiv_clamp",
    sizes=lambda r: {"n": int(r.integers(100, 400)), "a": int(r.integers(-50, 50)),
                     "b": int(r.integers(-50, 50))},
    grid=blocks(64),
    args=[Arr("x", "f32", "n", normal(3.0)), Arr("iv", "i32", "n", randint(-40, 40)),
          Arr("fout", "f32", "n"), Arr("iout", "i32", (lambda s: 2 * s["n"] + 3)),
          Scalar("lo", "f32", -1.5), Scalar("hi", "f32", 2.25),
          Scalar("a", "i32", "a"), Scalar("b", "i32", "b"), Scalar("n", "i32", "n")],
    ref=_cdiv_clamp_ref, tol=EXACT)


# ---- derived math: log1p ... softplus, mean, argmax as i64 ------------------------------

def _log_magnitudes(lo, hi):
    """Magnitudes spread evenly in log scale over [lo, hi), with a random sign."""
    def gen(rng, shape):
        mag = np.exp(rng.uniform(np.log(lo), np.log(hi), size=shape))
        return mag * rng.choice([-1.0, 1.0], size=shape)
    return gen


_DERIVED_SPECIALS = [np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -0.5, -2.5, -0.0, 0.0, 1e-30, -1.0]


def _round_half_even(x):
    return np.round(x)  # numpy rounds halves to even


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _derived_ref(v, s):
    x, t = f64(v.x), f64(v.t)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rows = [np.expm1(x), _round_half_even(x), np.trunc(x),
                np.sign(x), np.where(x < 0, 0.0, x), x * sigmoid(x), _gelu(x), _gelu_tanh(x),
                _softplus(x), _softplus(x, 2.0, 10.0), np.log1p(x)]
    i = v.iv.astype(np.int64)
    return {"out": np.stack(rows), "tiny": np.stack([np.log1p(t), np.expm1(t)]),
            "flags": np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)]).astype(np.int32),
            "iout": np.stack([np.sign(i), np.maximum(i, 0), np.full_like(i, 4)])}


add("math.derived", "math_derived.kiln", "derived_math", sizes=rand_n(100, 400), grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(3.0), _DERIVED_SPECIALS)),
          Arr("t", "f32", "n", with_specials(_log_magnitudes(1e-9, 0.5), [0.0, -0.0, np.inf])),
          Arr("tiny", "f32", (2, "n")), Arr("out", "f32", (11, "n")),
          Arr("flags", "i32", (3, "n")),
          Arr("iv", "i32", "n", randint(-100, 100)), Arr("iout", "i32", (3, "n")),
          Scalar("n", "i32", "n")],
    # log1p and expm1 of tiny t are checked relative to their value: that is the point.
    ref=_derived_ref, tol={"tiny": Tol(3e-6, 1e-30), "out": Tol(1e-5, 1e-6), "flags": EXACT,
                           "iout": EXACT})


def _derived_half_ref(v, s):
    h, b = f64(v.h), f64(v.b)
    return {"hout": np.stack([_gelu(h), h * sigmoid(h), np.log1p(h)]),
            "bout": np.stack([_gelu_tanh(b), _softplus(b), np.expm1(b)])}


add("math.derived_half", "math_derived.kiln", "derived_half", sizes=rand_n(100, 300),
    grid=blocks(64),
    args=[Arr("h", "f16", "n", uniform(-3.0, 3.0)), Arr("b", "bf16", "n", uniform(-3.0, 3.0)),
          Arr("hout", "f16", (3, "n")), Arr("bout", "bf16", (3, "n")), Scalar("n", "i32", "n")],
    ref=_derived_half_ref)


def _means_ref(v, s):
    x = f64(v.x).reshape(8, 32)
    h = f64(v.h).reshape(8, 32)
    consts = [np.log1p(1e-7), 2.0 - 0.0 - 1.0,
              float(_gelu(1.0)) + 1.0 * sigmoid(1.0) + 30.0 + np.expm1(1e-10) * 1e10, 4.0]
    return {"rows_out": x.mean(axis=1), "cols_out": x.mean(axis=0), "hrows": h.mean(axis=1),
            "idx": np.concatenate([np.argmax(x, axis=1), np.argmin(x, axis=0)]),
            "consts": np.array(consts)}


add("math.means", "math_derived.kiln", "means", grid=(1,),
    args=[Arr("x", "f32", (8, 32), normal()), Arr("h", "f16", (8, 32), normal()),
          Arr("rows_out", "f32", 8), Arr("cols_out", "f32", 32), Arr("hrows", "f16", 8),
          Arr("idx", "i64", 40), Arr("consts", "f32", 4)],
    ref=_means_ref, tol={"idx": EXACT, "rows_out": Tol(1e-5, 1e-6), "cols_out": Tol(1e-5, 1e-6),
                         "hrows": Tol(2e-3, 1e-3), "consts": Tol(1e-6, 1e-7)})


# ---- ** and the conditional expression -------------------------------------------------

def _pow_cond_ref(v, s):
    n, k = s["n"], v.k
    x = f32(v.x)
    x64 = f64(x)
    i = v.iv.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = [x * x, -(x * (x * x)), np.float32(1.0) / x, np.sqrt(np.abs(x64)), np.exp2(x64),
                np.ones_like(x64), np.where(x > 0, x, -2.0 * x64),
                np.full(n, 1.0 if k > 3 else 0.5 if k > 0 else 0.25), (x * x) * (x * x)]
    out = np.concatenate([np.concatenate(rows), [f64(v.x[:8]).sum() / 8, 2.0 * k]])
    return {"out": out,
            "iout": np.concatenate([wrap(i * i * i, "i32"), np.where(i % 2 == 0, i, -i),
                                    [81 + 1024]])}


add("math.pow_cond", "pow_cond.kiln", "pow_cond",
    sizes=lambda r: {"n": int(r.integers(100, 300)), "k": int(r.integers(-2, 6))},
    grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(2.0), [np.nan, np.inf, -np.inf, 0.0, -0.0])),
          Arr("iv", "i32", "n", randint(-2000, 2000)),
          Arr("out", "f32", lambda s: 9 * s["n"] + 2), Arr("iout", "i32", lambda s: 2 * s["n"] + 1),
          Scalar("n", "i32", "n"), Scalar("k", "i32", "k")],
    ref=_pow_cond_ref, tol={"out": Tol(1e-5, 1e-6), "iout": EXACT})


# ---- several values at once, and the reduction options ---------------------------------

def _tuples_ref(v, s):
    m = f64(v.m).reshape(4, 12)
    best, at = m.max(axis=1), m.argmax(axis=1)
    cm = np.maximum.accumulate(m, axis=1)
    # the rightmost index reaching the running maximum
    ci = np.array([[max(k for k in range(j + 1) if m[r, k] == cm[r, j]) for j in range(12)]
                   for r in range(4)])
    rm = np.maximum.accumulate(m[:, ::-1], axis=1)[:, ::-1]
    ri = np.array([[min(k for k in range(j, 12) if m[r, k] == rm[r, j]) for j in range(12)]
                   for r in range(4)])
    return {"rows_out": np.concatenate([best, m.mean(axis=1), m.var(axis=1), [m.min(), m.max()]]),
            "idx_out": at, "scan_out": np.stack([cm, rm]), "scan_idx": np.stack([ci, ri])}


add("reduce.tuples", "reduce_options.kiln", "tuples", grid=(1,),
    args=[Arr("m", "f32", (4, 12), normal()), Arr("rows_out", "f32", 14),
          Arr("idx_out", "i32", 4), Arr("scan_out", "f32", (2, 4, 12)),
          Arr("scan_idx", "i32", (2, 4, 12))],
    ref=_tuples_ref, tol={"rows_out": Tol(1e-5, 1e-6), "scan_out": EXACT, "idx_out": EXACT,
                          "scan_idx": EXACT})


def _umulhi(a, b, signed):
    if signed:
        return wrap((a.astype(np.int64) * b) >> 32, "i32")
    return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.int64)


def _options_ref(v, s):
    R, C = 4, 12
    m = f64(f32(v.m)).reshape(R, C)
    with np.errstate(invalid="ignore"):
        centred = m - m.mean(axis=1, keepdims=True)
    finite = np.where(np.isnan(m), -np.inf, m)
    mx, ix = finite.max(axis=1), finite.argmax(axis=1)
    nan_row = np.isnan(m).any(axis=1)
    pn = np.where(nan_row, np.nan, mx)
    pi = np.where(nan_row, np.isnan(m).argmax(axis=1), ix)
    with np.errstate(invalid="ignore"):
        colmin = np.where(np.isnan(m).any(axis=0), np.nan, np.nanmin(m, axis=0))
    x = f32(v.x)
    order = np.argsort(x, kind="stable")[:3]
    bins = (np.abs(x) * np.float32(2.0)).astype(np.int32)[:12]
    hist = np.array([(bins == k).sum() for k in range(4)])
    inter = np.stack([x, -x], axis=1).reshape(-1)
    b = v.b.astype(np.int64)
    u = v.u.astype(np.uint64)
    out = np.concatenate([centred.reshape(-1), [m.sum(), np.nanmax(m)], mx, pn, colmin,
                          x[::-1], x[order], inter])
    iout = np.concatenate([[np.nanargmax(m)], ix, pi, order, hist,
                           _umulhi(v.u.view(np.int32), np.int64(-7), True)])
    return {"out": out, "iout": iout,
            "bout": wrap(np.concatenate([[b.sum()], np.cumsum(b[::-1])[::-1]]), "i8"),
            "uout": _umulhi(u, (u + 12345) % (1 << 32), False)}


add("reduce.options", "reduce_options.kiln", "options", grid=(1,),
    args=[Arr("m", "f32", (4, 12), with_specials(normal(), [0.3, -1.1, 0.7, 0.2, 1.5, np.nan])),
          Arr("b", "i8", 16, randint(-128, 128)), Arr("x", "f32", 16, normal()),
          Arr("u", "u32", 16, randint(0, 1 << 32)),
          Arr("out", "f32", 4 * 12 + 2 + 8 + 12 + 16 + 3 + 32), Arr("iout", "i32", 8 + 8 + 16),
          Arr("bout", "i8", 17), Arr("uout", "u32", 16)],
    ref=_options_ref, tol={"out": Tol(1e-5, 1e-6), "iout": EXACT, "bout": EXACT, "uout": EXACT})


def _fn_values_ref(v, s):
    n = s["n"]
    x = f32(v.x)
    blocks = cdiv(n, 64)
    padded = np.zeros(blocks * 64, dtype=np.float64)
    padded[:n] = f64(x) ** 2
    return {"y": np.concatenate([(x * x) * (x * x) + x * np.float32(0.5),
                                 padded.reshape(blocks, 64).sum(axis=1)])}


add("control.fn_values", "fn_values.kiln", "fn_values", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", normal()), Arr("y", "f32", lambda s: s["n"] + cdiv(s["n"], 64)),
          Scalar("n", "i32", "n")],
    ref=_fn_values_ref, tol=Tol(1e-5, 1e-5))


def _bool_rows_ref(v, s):
    m = f32(v.m).reshape(4, 12)
    return {"out": np.concatenate([(m > 1.0).any(axis=1), (m > -1.5).all(axis=1)]).astype(np.int32)}


add("reduce.bool_rows", "reduce_options.kiln", "bool_rows", grid=(1,),
    args=[Arr("m", "f32", (4, 12), normal()), Arr("out", "i32", 8)],
    ref=_bool_rows_ref, tol=EXACT)


def _dot_batched_ref(v, s):
    a = f64(v.a).reshape(3, 16, 32)
    b = f64(v.b).reshape(3, 32, 16)
    c = a @ b
    return {"c": c, "d": c + 0.5 * c}


add("dot.batched", "dot_batched.kiln", "dot_batched", grid=(1,),
    args=[Arr("a", "f32", (3, 16, 32), normal()), Arr("b", "f32", (3, 32, 16), normal()),
          Arr("c", "f32", (3, 16, 16)), Arr("d", "f32", (3, 16, 16))],
    ref=_dot_batched_ref, tol=Tol(1e-4, 1e-4))


def _tf32(x):
    bits = f32(x).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


def _dot_tf32_ref(v, s):
    a = f32(v.a).reshape(16, 32)
    b = f32(v.b).reshape(32, 16)
    return {"c": np.stack([f64(_tf32(a)) @ f64(_tf32(b)), f64(a) @ f64(b)])}


add("dot.tf32", "dot_batched.kiln", "dot_tf32", grid=(1,),
    args=[Arr("a", "f32", (16, 32), normal()), Arr("b", "f32", (32, 16), normal()),
          Arr("c", "f32", (2, 16, 16))],
    ref=_dot_tf32_ref, tol=Tol(1e-5, 1e-5))


def _nan_minmax_ref(v, s):
    x, y = f32(v.x), f32(v.y)
    return {"out": np.stack([np.maximum(x, y), np.minimum(x, y), np.fmax(x, y)])}


add("math.nan_minmax", "dot_batched.kiln", "nan_minmax", sizes=rand_n(100, 300), grid=blocks(64),
    args=[Arr("x", "f32", "n", with_specials(normal(), [np.nan, 1.0, np.nan, -np.inf])),
          Arr("y", "f32", "n", with_specials(normal(), [2.0, np.nan, np.nan, np.nan])),
          Arr("out", "f32", (3, "n")), Scalar("n", "i32", "n")],
    ref=_nan_minmax_ref, tol=EXACT)


# ---- the documented numerics (docs/numerics.md) -----------------------------------------

def _register_file(name):
    """Runs register(add) of tests/programs/<name>.py, a group of cases kept apart."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.register(add)


_register_file("cases_numerics")
_register_file("cases_memory")
_register_file("cases_sparse")
_register_file("cases_mask_build")
_register_file("cases_encoder")


# ---- loads streamed ahead (num_stages) ------------------------------------------------

def _pair_sums_ref(v, s):
    x = np.zeros(-(-s["n"] // 64) * 64)
    x[: s["n"]] = f64(v.x)
    return {"out": x.reshape(-1, 64).sum(axis=0) ** 2}


# Ragged, one block, none (the loops run no iteration: the streamed loads touch nothing).
for _suffix, _n in ((".ragged", 300), (".one_block", 64), (".empty", 0)):
    add("prefetch.nested" + _suffix, "prefetch_nested.kiln", "pair_sums", sizes={"n": _n}, grid=(1,),
        args=[Arr("x", "f32", (max(_n, 1),), normal(1.0)), Arr("out", "f32", (64,)), Scalar("n", "i32", "n")],
        ref=_pair_sums_ref, tol=Tol(1e-5, 1e-5))
