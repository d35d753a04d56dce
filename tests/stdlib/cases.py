#===- cases.py - Differential cases of the stdlib kernels -------------------------===#
#
# Every kernel of stdlib/ runs on the interpreter against numpy, on rows that span
# several column blocks, rows shorter than one block, exact multiples of the block and
# inputs with large magnitudes (where a softmax without its max subtraction overflows).
# See tests/examples/kilncase.py for the fields.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import (Arr, Case, Scalar, Tol, attention_ref, f32, f64, fill, fp8_matmul_ref,
                      fp8_quant_per_row, normal, on_first_columns, random_uniform, random_words,
                      softmax_rows, stable_topk_indices, strided_row_args, with_specials)

CASES = []

# Row shapes shared by the row-wise kernels: several blocks with a ragged tail, one short
# row, exact blocks, two blocks, four held blocks and random sizes. Rows of one block,
# and of up to as many as the program can hold (OnChipPath.cpp: 8 elements a thread of
# what the output loop loads, so at BLOCK 64 on 4 warps 8 blocks for softmax, 5 for
# layernorm, 4 with its residual), run without loops and read each element once, the
# blocks past the row's end masked off; longer rows take the fused loops and the
# trailing pass.
_ROWS = [
    ("", {"rows": 5, "n": 2000}, None),
    (".short_row", {"rows": 3, "n": 7}, 64),
    (".exact_blocks", {"rows": 4, "n": 512}, 128),
    (".two_blocks", {"rows": 3, "n": 400}, 256),
    (".held_blocks", {"rows": 3, "n": 209}, 64),
    (".random", lambda r: {"rows": int(r.integers(1, 9)), "n": int(r.integers(1, 1500))}, 256),
]


# On the GPU the row-wise kernels with two reductions (softmax, log_softmax, layernorm;
# rmsnorm has one, which is not split) also run split into 2 and 4 segments a row: on sm_90 a
# thread-block cluster whose programs each hold a share of one block or none (rows of
# up to 2 or 4 blocks) or walk their share in loops (longer rows); on sm_80 through the
# workspace, the last segment writing the row.
_ROW_SPLITS = (2, 4)


def _defines(block):
    return {"BLOCK": block} if block else {}


# ---- softmax / log_softmax -------------------------------------------------------------

def _log_softmax_rows(x):
    x = f64(x)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _softmax_family(kernel, ref, tol):
    for suffix, sizes, block in _ROWS + [(".strided", {"rows": 4, "n": 300, "stride": 333}, 128)]:
        CASES.append(Case(
            name="stdlib.%s%s" % (kernel, suffix), file="stdlib/softmax.kiln", kernel=kernel,
            sizes=sizes, defines=_defines(block), grid=("rows",),
            args=strided_row_args(), ref=on_first_columns(ref),
            tol=tol, gpu_splits=_ROW_SPLITS))


_softmax_family("softmax", softmax_rows, Tol(1e-5, 1e-7))
_softmax_family("log_softmax", _log_softmax_rows, Tol(1e-5, 1e-5))

# Rows whose first column blocks are all -inf: in the fused one-pass form the running
# maximum is still -inf there, where a naive rescale computes exp(-inf + inf) = NaN.
for _kernel, _ref in (("softmax", softmax_rows), ("log_softmax", _log_softmax_rows)):
    CASES.append(Case(
        name="stdlib.%s.neg_inf_prefix" % _kernel, file="stdlib/softmax.kiln", kernel=_kernel,
        sizes={"rows": 3, "n": 300}, defines={"BLOCK": 64}, grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), with_specials(normal(4.0), [-np.inf] * 150)),
              Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("row_stride", "i32", "n")],
        ref=lambda v, s, r=_ref: {"y": r(v.x)}, tol=Tol(1e-5, 1e-6)))


# ---- layernorm ---------------------------------------------------------------------------

def _layernorm(h, w, b, eps):
    h = f64(h)
    mean = h.mean(axis=1, keepdims=True)
    var = ((h - mean) ** 2).mean(axis=1, keepdims=True)
    return (h - mean) / (var + eps) ** 0.5 * f64(w) + f64(b)


for _suffix, _sizes, _block in _ROWS:
    # A large mean over a small spread: the naive sum(x^2)/n - mean^2 would cancel.
    CASES.append(Case(
        name="stdlib.layernorm" + _suffix, file="stdlib/layernorm.kiln", kernel="layernorm",
        sizes=_sizes, defines=_defines(_block), grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(2.0, mean=50.0)),
              Arr("w", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
              Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=lambda v, s: {"y": _layernorm(v.x, v.w, v.b, float(v.eps))},
        tol=Tol(1e-4, 1e-4), gpu_splits=_ROW_SPLITS))
    # The sum h = x + residual has mean 50 and spread about 2.2: the same cancellation
    # test, on a value the kernel computes and writes out itself.
    CASES.append(Case(
        name="stdlib.layernorm_residual" + _suffix, file="stdlib/layernorm.kiln",
        kernel="layernorm_residual", sizes=_sizes, defines=_defines(_block), grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(2.0, mean=80.0)),
              Arr("residual", "f32", ("rows", "n"), normal(1.0, mean=-30.0)),
              Arr("w", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
              Arr("h", "f32", ("rows", "n")), Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=lambda v, s: {"h": f32(v.x) + f32(v.residual),
                          "y": _layernorm(f32(v.x) + f32(v.residual), v.w, v.b, float(v.eps))},
        tol={"h": Tol(0.0, 0.0), "y": Tol(1e-4, 1e-4)},  # h: one f32 addition, bit-exact
        gpu_splits=_ROW_SPLITS))


def _dropped_residual(v):
    """residual + dropout(x): kept where rand(seed, element index) > p, scaled in f32."""
    x = f32(v.x)
    keep = random_uniform(random_words(v.seed, np.arange(x.size, dtype=np.uint32))[0]).reshape(x.shape) > \
        np.float32(v.p)
    return np.where(keep, x / (np.float32(1.0) - np.float32(v.p)), np.float32(0.0)) + f32(v.residual)


for _suffix, _sizes, _block in _ROWS:
    # Dropout at p = 0.3 with a random seed: about 30% of x dropped, the rest scaled by
    # 1/0.7; the mask is the one Triton's tl.rand draws for the same seed and indices.
    CASES.append(Case(
        name="stdlib.dropout_residual_layernorm" + _suffix, file="stdlib/layernorm.kiln",
        kernel="dropout_residual_layernorm",
        sizes=(lambda r, z=_sizes: dict(z(r) if callable(z) else z, seed=int(r.integers(-2**31, 2**31)))),
        defines=_defines(_block), grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(2.0, mean=80.0)),
              Arr("residual", "f32", ("rows", "n"), normal(1.0, mean=-30.0)),
              Arr("w", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
              Arr("h", "f32", ("rows", "n")), Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-5), Scalar("p", "f32", 0.3),
              Scalar("seed", "i32", "seed")],
        ref=lambda v, s: {"h": _dropped_residual(v),
                          "y": _layernorm(_dropped_residual(v), v.w, v.b, float(v.eps))},
        tol={"h": Tol(1e-6, 0.0), "y": Tol(1e-4, 1e-4)}, gpu_splits=_ROW_SPLITS))


# ---- rmsnorm / rmsnorm_residual -----------------------------------------------------------

def _rms(h, w, eps):
    h = f64(h)
    return h / np.sqrt((h * h).mean(axis=1, keepdims=True) + eps) * f64(w)


for _suffix, _sizes, _block in _ROWS:
    CASES.append(Case(
        name="stdlib.rmsnorm" + _suffix, file="stdlib/rmsnorm.kiln", kernel="rmsnorm",
        sizes=_sizes, defines=_defines(_block), grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(3.0)), Arr("w", "f32", "n", normal()),
              Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-6)],
        ref=lambda v, s: {"y": _rms(v.x, v.w, float(v.eps))},
        tol=Tol(1e-5, 1e-5)))
    CASES.append(Case(
        name="stdlib.rmsnorm_residual" + _suffix, file="stdlib/rmsnorm.kiln",
        kernel="rmsnorm_residual", sizes=_sizes, defines=_defines(_block), grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(3.0)),
              Arr("residual", "f32", ("rows", "n"), normal(3.0)),
              Arr("w", "f32", "n", normal()),
              Arr("h", "f32", ("rows", "n")), Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-6)],
        ref=lambda v, s: {"h": f32(v.x) + f32(v.residual),
                          "y": _rms(f32(v.x) + f32(v.residual), v.w, float(v.eps))},
        tol=Tol(1e-5, 1e-5)))


# ---- decode_chain: norm_matvec, vector_rmsnorm ------------------------------------------------

def _rms_g(x, g, eps):
    s = f64(x)
    return s / np.sqrt((s * s).mean() + eps) * f64(g)


def _silu(v):
    return v / (1 + np.exp(-v))


# n a multiple of 16 (the kernel promises it): several column blocks with a ragged tail,
# exact blocks, and rows that end inside the last program.
# FOLD 8 (the default) sums 8 adjacent columns' products in registers; FOLD 1 keeps a
# partial sum per column, FOLD 4 in between.
for _suffix, _n, _defines_nm in ((".ragged", 400, {"BK": 128}),
                                 (".exact", 512, {"BK": 256, "ROWS": 16}),
                                 (".one_block", 48, {"BK": 64, "ROWS": 4}),
                                 (".fold1", 400, {"BK": 128, "FOLD": 1}),
                                 (".fold4", 512, {"BK": 256, "ROWS": 16, "FOLD": 4})):
    # Also with the weights streamed one iteration ahead (ir/transforms/PrefetchLoads.cpp).
    for _norm, _stages in ((True, 1), (False, 1), (True, 2), (False, 2)):
        CASES.append(Case(
            name="stdlib.norm_matvec%s%s%s" % (_suffix, "" if _norm else ".plain", "" if _stages == 1 else ".stages2"),
            file="stdlib/decode_chain.kiln",
            kernel="norm_matvec", sizes={"n": _n, "programs": -(-_n // _defines_nm.get("ROWS", 8))},
            defines=dict(_defines_nm, NORM=_norm), grid=("programs",),
            args=[Arr("w", "bf16", ("n", "n"), normal(0.05)), Arr("x", "f32", "n", normal(2.0)),
                  Arr("g", "f32", "n", normal(1.0, 1.0)), Arr("y", "f32", "n"),
                  Scalar("n", "i32", "n"), Scalar("eps", "f32", 1e-5)],
            ref=(lambda v, s: {"y": _silu(f64(v.w) @ _rms_g(v.x, v.g, float(v.eps)))}) if _norm
            else (lambda v, s: {"y": _silu(f64(v.w) @ f64(v.x))}),
            tol=Tol(1e-4, 1e-4), flags=() if _stages == 1 else ("--num-stages=2",)))
for _suffix, _n, _np in (("", 1000, 1024), (".exact", 256, 256)):
    CASES.append(Case(
        name="stdlib.vector_rmsnorm" + _suffix, file="stdlib/decode_chain.kiln", kernel="vector_rmsnorm",
        sizes={"n": _n}, defines={"NP": _np}, grid=(1,),
        args=[Arr("s", "f32", "n", normal(3.0)), Arr("g", "f32", "n", normal(1.0, 1.0)), Arr("h", "f32", "n"),
              Scalar("n", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=lambda v, s: {"h": _rms_g(v.s, v.g, float(v.eps))},
        tol=Tol(1e-5, 1e-5)))


# ---- llama_decode: decode_matvec, rope_append, attend_partial, attend_combine ------------------

# The projections: the norm fused in front (a ragged last program of rows), the gate and
# up rows paired by the SiLU epilogue, a plain product of one column block; with a residual.
for _suffix, _m, _k, _defines_dm in ((".norm_residual", 100, 256, {"IN": 1, "RESIDUAL": True, "BK": 128}),
                                     (".glu", 64, 96, {"GLU": True, "BK": 64, "ROWS": 8}),
                                     (".plain", 33, 48, {"BK": 64, "ROWS": 8}),
                                     (".glu_fold8", 64, 96, {"IN": 1, "GLU": True, "BK": 32, "ROWS": 8, "FOLD": 8})):
    CASES.append(Case(
        name="stdlib.decode_matvec" + _suffix, file="stdlib/llama_decode.kiln", kernel="decode_matvec",
        sizes={"m": _m, "k": _k, "programs": -(-_m // _defines_dm.get("ROWS", 16)),
               "outs": _m // 2 if _defines_dm.get("GLU") else _m},
        defines=_defines_dm, grid=("programs",),
        args=[Arr("w", "bf16", ("m", "k"), normal(0.1)), Arr("x", "f32", "k", normal(1.0)),
              Arr("g", "f32", "k", normal(1.0, 1.0)), Arr("res", "f32", "m", normal(1.0)), Arr("y", "f32", "outs"),
              Scalar("m", "i32", "m"), Scalar("k", "i32", "k"), Scalar("eps", "f32", 1e-5)],
        ref=lambda v, s, d=_defines_dm: {"y": (lambda out: _silu(out[0::2]) * out[1::2] if d.get("GLU") else out)(
            f64(v.w) @ (f64(v.x) / np.sqrt((f64(v.x) ** 2).mean() + float(v.eps)) * f64(v.g) if d.get("IN") else f64(v.x))
            + (f64(v.res) if d.get("RESIDUAL") else 0))},
        tol=Tol(1e-4, 1e-4)))


def _rope_ref(v, s):
    d = 32
    heads = f64(v.qkv).reshape(8, d)
    lo, hi = heads[:, : d // 2], heads[:, d // 2:]
    rot = np.concatenate([lo * f64(v.cos) - hi * f64(v.sin), hi * f64(v.cos) + lo * f64(v.sin)], axis=1)
    kc, vc = f64(v.kc).reshape(2, 6, d).copy(), f64(v.vc).reshape(2, 6, d).copy()
    kc[:, 3], vc[:, 3] = rot[4:6], heads[6:8]
    return {"q": rot[:4].ravel(), "kc": kc, "vc": vc}


# 4 query and 2 key/value heads of 32: queries rotated, the new key (rotated) and value at
# row 3 of a cache of 6, the other rows untouched.
CASES.append(Case(
    name="stdlib.rope_append", file="stdlib/llama_decode.kiln", kernel="rope_append",
    defines={"NQ": 4, "NKV": 2, "D": 32}, grid=(2, 4),
    args=[Arr("qkv", "f32", (8 * 32,), normal(1.0)), Arr("cos", "f32", (16,), normal(0.7)),
          Arr("sin", "f32", (16,), normal(0.7)), Arr("q", "f32", (4 * 32,)),
          Arr("kc", "bf16", (2, 6, 32), normal(1.0)), Arr("vc", "bf16", (2, 6, 32), normal(1.0)),
          Scalar("pos", "i32", 3), Scalar("cap", "i32", 6)],
    ref=_rope_ref, tol={"q": Tol(1e-5, 1e-5), "kc": Tol(1e-2, 1e-2), "vc": Tol(1e-2, 1e-2)}))


def _partial_ref(v, s):
    g, d, bn, segs, seq = 2, 32, 16, 8, 50
    q = f64(v.q).reshape(2, g, d) * float(v.scale) * np.log2(np.e)
    kc, vc = f64(v.kc).reshape(2, 64, d), f64(v.vc).reshape(2, 64, d)
    chunk = -(-(-(-seq // bn)) // segs) * bn
    part = np.zeros((2, segs, g, d + 2))
    for kv in range(2):
        for seg in range(segs):
            lo, hi = seg * chunk, min(seg * chunk + chunk, seq)
            if lo >= hi:
                part[kv, seg, :, d] = -np.inf
                continue
            sc = q[kv] @ kc[kv, lo:hi].T
            m = sc.max(axis=1)
            p = np.exp2(sc - m[:, None])
            part[kv, seg, :, :d] = p @ vc[kv, lo:hi]
            part[kv, seg, :, d], part[kv, seg, :, d + 1] = m, p.sum(axis=1)
    return {"part": part.ravel()}


# Two key/value heads of 32 with 2 query heads each, 50 keys in blocks of 16 over 8
# segments: 4 segments of one block (the last ragged), 4 empty.
CASES.append(Case(
    name="stdlib.attend_partial", file="stdlib/llama_decode.kiln", kernel="attend_partial",
    defines={"G": 2, "D": 32, "BN": 16, "SEGS": 8}, grid=(2, 8),
    args=[Arr("q", "f32", (4 * 32,), normal(1.0)), Arr("kc", "bf16", (2, 64, 32), normal(1.0)),
          Arr("vc", "bf16", (2, 64, 32), normal(1.0)), Arr("part", "f32", (2 * 8 * 2 * 34,)),
          Scalar("seq", "i32", 50), Scalar("cap", "i32", 64), Scalar("scale", "f32", 0.17677669)],
    ref=_partial_ref, tol=Tol(1e-4, 1e-4)))


def _combine_parts(rng, shape):
    part = rng.normal(0.0, 1.0, size=(2, 8, 2, 34))
    part[..., 32] = rng.normal(0.0, 3.0, size=(2, 8, 2))
    part[..., 33] = rng.uniform(0.5, 4.0, size=(2, 8, 2))
    part[:, 5:, :, 32] = -np.inf  # empty segments
    part[:, 5:, :, 33] = 0.0
    part[:, 5:, :, :32] = 0.0
    return part.reshape(shape)


def _combine_ref(v, s):
    part = f64(v.part).reshape(2, 8, 2, 34)
    o = np.zeros((4, 32))
    for h in range(4):
        seg = part[h // 2, :, h % 2]
        w = np.exp2(seg[:, 32] - seg[:, 32].max())
        o[h] = (seg[:, :32] * w[:, None]).sum(axis=0) / (seg[:, 33] * w).sum()
    return {"o": o.ravel()}


CASES.append(Case(
    name="stdlib.attend_combine", file="stdlib/llama_decode.kiln", kernel="attend_combine",
    defines={"G": 2, "D": 32, "SEGS": 8}, grid=(2, 2),
    args=[Arr("part", "f32", (2 * 8 * 2 * 34,), _combine_parts), Arr("o", "f32", (4 * 32,))],
    ref=_combine_ref, tol=Tol(1e-5, 1e-5)))


# ---- fp8 per-token quantization ----------------------------------------------------------

def _quant(name, sizes, block, gen):
    CASES.append(Case(
        name=name, file="stdlib/fp8_quant.kiln", kernel="quant_per_token",
        sizes=sizes, defines=_defines(block), grid=("rows",),
        args=[Arr("x", "bf16", ("rows", "n"), gen),
              Arr("q", "f8e4m3", ("rows", "n")), Arr("scale", "f32", "rows"),
              Scalar("n_cols", "i32", "n")],
        ref=fp8_quant_per_row,
        tol=Tol(0.0, 0.0)))  # the same f32 arithmetic and one rounding: bit-exact


for _suffix, _sizes, _block in _ROWS:
    _quant("stdlib.quant_per_token" + _suffix, _sizes, _block, normal(8.0))
# All-zero rows: scale 1 and q 0, not a division by zero.
_quant("stdlib.quant_per_token.zero_rows", {"rows": 2, "n": 100}, 64, fill(0.0))


# ---- fp8_matmul ---------------------------------------------------------------------------
# y = q(x)·w with x quantized per row, fused into one pass under --fuse-quantized (the
# reference then models the running scale; see fp8_matmul_ref) and as written without
# it. Rows of very different magnitudes, an all-zero row, rows whose first half is zero
# (the running maximum is 0 there: scale 1) and rows that grow along K (the maximum, and
# so the rescale, changes at almost every block).

def _fp8_matmul_rows(rng, shape):
    rows, depth = shape
    x = rng.standard_normal(shape)
    kind = np.arange(rows) % 6
    x *= np.array([0.01, 1.0, 30.0, 0.0, 1e3, 1.0])[kind][:, None]
    x[kind == 1, : depth // 2] = 0.0
    x[kind == 5] *= 1.0 + 50.0 * np.arange(depth) / max(depth, 1)
    return x


def _fp8_matmul(suffix, sizes, fused=True, bk=32):
    CASES.append(Case(
        name="stdlib.quant_matmul" + suffix, file="stdlib/fp8_matmul.kiln", kernel="quant_matmul",
        sizes=sizes, defines={"BM": 16, "BN": 16, "BK": bk},
        grid=lambda s: (-(-s["m"] // 16), -(-s["n"] // 16)),
        args=[Arr("x", "bf16", ("m", "k"), _fp8_matmul_rows), Arr("w", "f8e4m3", ("k", "n"), normal(1.0)),
              Arr("y", "bf16", ("m", "n")), Scalar("w_scale", "f32", 0.03),
              Scalar("M", "i32", "m"), Scalar("N", "i32", "n"), Scalar("K", "i32", "k")],
        ref=fp8_matmul_ref(bk, fused),
        tol=Tol(8e-3, 1e-6),  # the f32 sums in another order, one rounding to bf16
        flags=("--fuse-quantized", "--reduction-split=1") if fused else ()))


_fp8_matmul("", {"m": 37, "n": 45, "k": 300})
_fp8_matmul(".as_written", {"m": 37, "n": 45, "k": 300}, fused=False)
_fp8_matmul(".one_block", {"m": 20, "n": 17, "k": 29})
_fp8_matmul(".random", lambda r: {"m": int(r.integers(1, 50)), "n": int(r.integers(1, 40)),
                                  "k": int(r.integers(1, 400))})


# ---- softmax_topk --------------------------------------------------------------------------
# The K most probable columns of each row and their probabilities: a top-k merge over
# column blocks, fused with the max and sum loops. Columns exact (ties: the lower column
# first), probabilities to f32 rounding. Rows spanning several blocks, a row that fits
# one, rows near 1000 (where exp without the max subtraction overflows), and integer
# logits with many exact ties (the maximum is in the first block, so every tied value is
# computed against the same maximum, fused or not).

def _softmax_topk_ref(k):
    def ref(v, s):
        p = softmax_rows(v.x)
        cols = np.arange(p.shape[1])
        order = np.array([np.lexsort((cols, -row))[:k] for row in p])
        return {"top_p": np.take_along_axis(p, order, axis=1), "top_i": order}
    return ref


def _near_1000(rng, shape):
    """Logits near 1000 with no two equal in a row once in f32: candidates that tie may be
    taken in either order by the fused forms (docs/fusion.md), and at 1000 f32 values are
    6e-5 apart, so a row of normal draws sometimes holds an exact tie among its best."""
    x = (1000.0 + 3.0 * rng.standard_normal(shape)).astype(np.float32)
    for row in x.reshape(-1, shape[-1]):
        while len(np.unique(row)) < row.size:
            _, first = np.unique(row, return_index=True)
            again = np.setdiff1d(np.arange(row.size), first)
            row[again] = (1000.0 + 3.0 * rng.standard_normal(again.size)).astype(np.float32)
    return x.astype(np.float64)


def _ties_max_first(rng, shape):
    x = rng.integers(0, 6, size=shape).astype(np.float64)
    x[:, 0] = 5.0
    return x


def _softmax_topk(suffix, sizes, block, gen, k=8, gpu_splits=()):
    CASES.append(Case(
        name="stdlib.softmax_topk" + suffix, file="stdlib/softmax_topk.kiln", kernel="softmax_topk",
        sizes=sizes, defines={"BLOCK": block, "K": k}, grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), gen), Arr("top_p", "f32", ("rows", k)),
              Arr("top_i", "i32", ("rows", k)), Scalar("n_cols", "i32", "n")],
        ref=_softmax_topk_ref(k), tol={"top_p": Tol(1e-5, 1e-7)}, gpu_splits=gpu_splits))


_softmax_topk("", {"rows": 5, "n": 2000}, 256, normal(3.0), gpu_splits=(3,))
_softmax_topk(".one_block", {"rows": 3, "n": 50}, 64, normal(3.0))
_softmax_topk(".k1", {"rows": 4, "n": 300}, 64, normal(3.0), k=1)
_softmax_topk(".large", {"rows": 4, "n": 700}, 128, _near_1000)
_softmax_topk(".ties", {"rows": 4, "n": 500}, 64, _ties_max_first)
_softmax_topk(".random", lambda r: {"rows": int(r.integers(1, 6)), "n": int(r.integers(8, 1500))}, 128,
              normal(3.0))


# ---- attention ---------------------------------------------------------------------------

def softmax_rows_last(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention(suffix, sizes, defines, causal, gen, tol=Tol(1e-4, 1e-5)):
    CASES.append(Case(
        name="stdlib.attention" + suffix, file="stdlib/attention.kiln", kernel="attention",
        sizes=sizes, defines=dict(defines, CAUSAL=causal),
        grid=(lambda s: (s["seq"] + defines.get("BM", 32) - 1) // defines.get("BM", 32), "heads"),
        args=[Arr("q", "f32", ("heads", "seq", "d"), gen), Arr("k", "f32", ("heads", "seq", "d"), gen),
              Arr("v", "f32", ("heads", "seq", "d"), normal()), Arr("o", "f32", ("heads", "seq", "d")),
              Scalar("seq", "i32", "seq"), Scalar("scale", "f32", lambda s: s["d"] ** -0.5)],
        ref=attention_ref(causal), tol=tol))


for _causal in (False, True):
    _tag = ".causal" if _causal else ""
    # A ragged sequence over several key blocks.
    _attention(_tag, {"heads": 2, "seq": 75, "d": 16}, {"D": 16, "BM": 16, "BN": 16}, _causal, normal())
    # Scores in the hundreds: exp(s) without the running maximum would overflow.
    # The f32 scores (about 150 in magnitude) carry rounding errors near 1e-5, which exp
    # turns into relative errors of that size: the tolerance is wider.
    _attention(_tag + ".large_scores", {"heads": 1, "seq": 40, "d": 16}, {"D": 16, "BM": 16, "BN": 8},
               _causal, normal(12.0), Tol(2e-3, 1e-4))
    _attention(_tag + ".random", lambda r: {"heads": int(r.integers(1, 3)), "seq": int(r.integers(1, 70)),
                                            "d": 16}, {"D": 16, "BM": 16, "BN": 16}, _causal, normal(2.0))


# ---- decode attention (one query per head, a long KV cache) --------------------------------

def _decode_ref(v, s):
    q, k, vv = f64(v.q), f64(v.k), f64(v.v)
    scores = np.einsum("hd,hjd->hj", q, k) * float(v.scale)
    return {"o": np.einsum("hj,hjd->hd", softmax_rows_last(scores), vv)}


def _decode(suffix, sizes, defines, gen, tol=Tol(1e-4, 1e-5), gpu_splits=()):
    CASES.append(Case(
        name="stdlib.decode_attention" + suffix, file="stdlib/decode_attention.kiln",
        kernel="decode_attention", sizes=sizes, defines=defines, grid=("heads",),
        args=[Arr("q", "f32", ("heads", "d"), gen), Arr("k", "f32", ("heads", "seq", "d"), gen),
              Arr("v", "f32", ("heads", "seq", "d"), normal()), Arr("o", "f32", ("heads", "d")),
              Scalar("seq", "i32", "seq"), Scalar("scale", "f32", lambda s: s["d"] ** -0.5)],
        ref=_decode_ref, tol=tol, gpu_splits=gpu_splits))


# A KV cache of many blocks with a ragged end, one that fits one block, and scores in the
# hundreds (see the attention cases for the tolerance). On the GPU they also run split
# over segments (flash-decoding), one per head more than the blocks for .one_block.
_decode("", {"heads": 3, "seq": 300, "d": 16}, {"D": 16, "BN": 32}, normal(), gpu_splits=(4,))
_decode(".one_block", {"heads": 2, "seq": 20, "d": 16}, {"D": 16, "BN": 32}, normal(), gpu_splits=(2,))
_decode(".large_scores", {"heads": 2, "seq": 100, "d": 16}, {"D": 16, "BN": 16}, normal(12.0),
        Tol(2e-3, 1e-4), gpu_splits=(3,))
_decode(".random", lambda r: {"heads": int(r.integers(1, 4)), "seq": int(r.integers(1, 400)), "d": 16},
        {"D": 16, "BN": 64}, normal(2.0), gpu_splits=(5,))
# Five blocks, the last ragged: split over 2, 3, 4 or 7 segments the shares are uneven
# or empty (examples.interp.split*), and the heads' maxima lie in different segments.
_decode(".few_blocks", {"heads": 5, "seq": 70, "d": 16}, {"D": 16, "BN": 16}, normal(4.0), Tol(2e-4, 1e-5),
        gpu_splits=(3, 7))
# The shape of a decoding step at its default D = 64 and BN = 64: few heads, a cache of
# 10 blocks (the last ragged), split on the GPU into 8 segments per head, as the cost
# model would for a few heads on a large GPU.
_decode(".long_cache", {"heads": 2, "seq": 600, "d": 64}, {}, normal(), Tol(2e-4, 1e-5), gpu_splits=(8,))


# ---- MoE routing ---------------------------------------------------------------------------

def _route_ref(k):
    def ref(v, s):
        p = softmax_rows(v.logits)
        idx = stable_topk_indices(p, k, axis=1)
        top = np.take_along_axis(p, idx, axis=1)
        return {"experts": idx, "weights": top / top.sum(axis=1, keepdims=True)}
    return ref


def _route(suffix, sizes, bt, be, k):
    CASES.append(Case(
        name="stdlib.moe_routing" + suffix, file="stdlib/moe_routing.kiln", kernel="route",
        sizes=sizes, defines={"BT": bt, "BE": be, "K": k},
        grid=lambda s, bt=bt: ((s["t"] + bt - 1) // bt,),
        args=[Arr("logits", "f32", ("t", "e"), normal(2.0)), Arr("experts", "i32", ("t", k)),
              Arr("weights", "f32", ("t", k)), Scalar("n_tokens", "i32", "t"),
              Scalar("n_experts", "i32", "e")],
        ref=_route_ref(k), tol={"weights": Tol(1e-5, 1e-6)}))


_route("", lambda r: {"t": int(r.integers(1, 40)), "e": int(r.integers(2, 17))}, 8, 16, 2)
# The benchmark's shapes, scaled down in tokens: 64 and 256 experts, top 8.
_route(".e64_k8", {"t": 37, "e": 64}, 4, 64, 8)
_route(".e256_k8", {"t": 9, "e": 256}, 2, 256, 8)
