#===- example_cases.py - Differential cases of the teaching examples -----------===#
#
# Every kernel under examples/ is run here on several sizes: a random size, sizes that
# are not multiples of the tile, and the smallest input. See kilncase.py for the fields.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import (Arr, BlockMask, Case, Scalar, Tol, attention_ref, causal, cdiv, f32, f64,
                      fp8_matmul_ref, fp8_quant_per_row, longformer, masked_attention_ref,
                      masked_row_sum_ref, normal, on_first_columns,
                      random_blocks, random_uniform, random_words, sliding, softmax_rows,
                      stable_topk_indices, strided_row_args, with_specials)

CASES = []


# ---- vector_add -----------------------------------------------------------------------

def _vector_add(name, sizes, block=None, file="examples/vector_add.kiln", kernel="vector_add"):
    CASES.append(Case(
        name=name, file=file, kernel=kernel,
        sizes=sizes,
        defines={"BLOCK": block} if block else {},
        grid=lambda s: (cdiv(s["n"], block or 1024),),
        args=[Arr("x", "f32", "n", normal()), Arr("y", "f32", "n", normal()),
              Arr("out", "f32", "n"), Scalar("n", "i32", "n")],
        ref=lambda v, s: {"out": f32(v.x) + f32(v.y)},
        tol=Tol(0, 0)))  # one f32 rounding either way: bit-exact


_vector_add("example.vector_add", lambda r: {"n": int(r.integers(1000, 5000))}, block=256)
_vector_add("example.vector_add.default_block", {"n": 3000})
_vector_add("example.vector_add.one", {"n": 1}, block=128)
_vector_add("example.vector_add.exact_blocks", {"n": 512}, block=128)


# ---- autotune_add ---------------------------------------------------------------------
# The same sum under @autotune. The interpreter does not tune: it runs the BLOCK given
# with -D (each config's here), else the default, with the grid that BLOCK needs.

def _autotune_add(name, sizes, block=None):
    _vector_add(name, sizes, block, file="examples/autotune_add.kiln", kernel="add")


for _block in (64, 128, 1024):
    _autotune_add("example.autotune_add.block%d" % _block,
                  lambda r: {"n": int(r.integers(1, 5000))}, block=_block)
_autotune_add("example.autotune_add.default_block", {"n": 3000})


# ---- softmax --------------------------------------------------------------------------

def _softmax(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/softmax.kiln", kernel="softmax",
        sizes=sizes,
        defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=strided_row_args(),
        ref=on_first_columns(softmax_rows),
        tol=Tol(1e-5, 1e-7)))


_softmax("example.softmax", {"rows": 16, "n": 1000})
_softmax("example.softmax.random",
         lambda r: {"rows": int(r.integers(1, 24)), "n": int(r.integers(1, 129))}, block=128)
_softmax("example.softmax.strided", {"rows": 7, "n": 50, "stride": 61}, block=64)
_softmax("example.softmax.one_col", {"rows": 3, "n": 1}, block=16)


# ---- layernorm ------------------------------------------------------------------------

def _layernorm_ref(v, s):
    x = f64(v.x)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return {"y": (x - mean) / (var + float(v.eps)) ** 0.5 * f64(v.w) + f64(v.b)}


def _layernorm(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/layernorm.kiln", kernel="layernorm",
        sizes=sizes,
        defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(2.0, mean=3.0)),
              Arr("w", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
              Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=_layernorm_ref,
        tol=Tol(2e-5, 2e-5)))


_layernorm("example.layernorm", {"rows": 12, "n": 768})
_layernorm("example.layernorm.random",
           lambda r: {"rows": int(r.integers(1, 20)), "n": int(r.integers(2, 257))}, block=256)
_layernorm("example.layernorm.short_row", {"rows": 5, "n": 3}, block=32)


# ---- matmul ---------------------------------------------------------------------------

def _matmul(name, sizes, tiles=None):
    bm, bn = (tiles or {}).get("BM", 32), (tiles or {}).get("BN", 32)
    CASES.append(Case(
        name=name, file="examples/matmul.kiln", kernel="matmul",
        sizes=sizes, defines=tiles or {},
        grid=lambda s: (cdiv(s["M"], bm), cdiv(s["N"], bn)),
        args=[Arr("a", "f32", ("M", "K"), normal()), Arr("b", "f32", ("K", "N"), normal()),
              Arr("c", "f32", ("M", "N")),
              Scalar("M", "i32", "M"), Scalar("N", "i32", "N"), Scalar("K", "i32", "K")],
        ref=lambda v, s: {"c": f64(v.a) @ f64(v.b)},
        tol=Tol(1e-4, 1e-4)))


_matmul("example.matmul", {"M": 64, "N": 96, "K": 64})
_matmul("example.matmul.ragged", lambda r: {"M": int(r.integers(1, 80)),
                                            "N": int(r.integers(1, 80)),
                                            "K": int(r.integers(1, 70))})
_matmul("example.matmul.tiles", {"M": 50, "N": 70, "K": 45}, {"BM": 16, "BN": 64, "BK": 32})
_matmul("example.matmul.k_short", {"M": 33, "N": 17, "K": 5})


# ---- long_softmax ---------------------------------------------------------------------

def _long_softmax(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/long_softmax.kiln", kernel="long_softmax",
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), with_specials(normal(3.0), [90.0, -50.0])),
              Arr("y", "f32", ("rows", "n")), Scalar("n_cols", "i32", "n")],
        ref=lambda v, s: {"y": softmax_rows(v.x)},
        tol=Tol(1e-5, 1e-7)))


_long_softmax("example.long_softmax", {"rows": 6, "n": 2000})
_long_softmax("example.long_softmax.random",
              lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(1, 1500))}, block=128)
_long_softmax("example.long_softmax.one_block", {"rows": 3, "n": 100})
_long_softmax("example.long_softmax.exact_blocks", {"rows": 2, "n": 512}, block=64)
# Two blocks of 256: held on chip, each element read once (the first rows above run the
# fused loop and the output pass).
_long_softmax("example.long_softmax.two_blocks", {"rows": 3, "n": 400})


# ---- long_layernorm -------------------------------------------------------------------
# Rows whose mean is large against their spread, where Σx² - n·mean² cancels: the fused
# loop merges block statistics (Welford) and must match the centred two-pass result.
# Mean 50, spread 2: both forms are within 1e-4; the one-loop Σx², Σx form is off by
# about 2e-3. Mean 1000, spread 1: the f32 mean itself is off by about 1e-3 of the spread
# (fused or not), which y inherits; the Σx² form is off by 1 or more, or NaN.

def _long_layernorm(name, sizes, block=None, gen=normal(2.0, mean=50.0), tol=Tol(1e-4, 1e-4)):
    CASES.append(Case(
        name=name, file="examples/long_layernorm.kiln", kernel="long_layernorm",
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), gen),
              Arr("w", "f32", "n", normal()), Arr("b", "f32", "n", normal()),
              Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=_layernorm_ref, tol=tol))


_long_layernorm("example.long_layernorm", {"rows": 4, "n": 3000})
_long_layernorm("example.long_layernorm.random",
                lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(2, 1500))}, block=128)
_long_layernorm("example.long_layernorm.one_block", {"rows": 3, "n": 700})
_long_layernorm("example.long_layernorm.exact_blocks", {"rows": 2, "n": 512}, block=64)
_long_layernorm("example.long_layernorm.large_mean", {"rows": 4, "n": 4096},
                gen=normal(1.0, mean=1000.0), tol=Tol(1e-3, 1e-2))


# ---- attention ------------------------------------------------------------------------
# The three-loop attention, fused into one pass (and run unfused by examples.interp.unfused).
# Sequences span several key blocks with a ragged end; causal programs stop at their last
# row, which is not a multiple of BN when BM != BN.

def _attention(name, sizes, tiles, causal, gen=normal(), tol=Tol(1e-4, 1e-5)):
    bm = tiles.get("BM", 32)
    CASES.append(Case(
        name=name, file="examples/attention.kiln", kernel="attention",
        sizes=sizes, defines=dict(tiles, CAUSAL=causal),
        grid=lambda s: (cdiv(s["seq"], bm), s["heads"]),
        args=[Arr("q", "f32", ("heads", "seq", "d"), gen),
              Arr("k", "f32", ("heads", "seq", "d"), gen),
              Arr("v", "f32", ("heads", "seq", "d"), normal()),
              Arr("o", "f32", ("heads", "seq", "d")), Scalar("seq", "i32", "seq")],
        ref=attention_ref(causal, lambda v, s: 1 / np.sqrt(s["d"])), tol=tol))


for _causal in (False, True):
    _tag = "example.attention" + (".causal" if _causal else "")
    _attention(_tag, {"heads": 2, "seq": 75, "d": 16}, {"D": 16, "BM": 16, "BN": 16}, _causal)
    _attention(_tag + ".default_tiles", {"heads": 2, "seq": 150, "d": 64}, {}, _causal)
    _attention(_tag + ".bm_ne_bn", {"heads": 1, "seq": 90, "d": 16}, {"D": 16, "BM": 32, "BN": 8},
               _causal)
    # Scores in the hundreds: exp(s) without the running maximum would overflow. f32 scores
    # of that size carry rounding errors near 1e-5, which exp turns into relative errors.
    _attention(_tag + ".large_scores", {"heads": 1, "seq": 40, "d": 16},
               {"D": 16, "BM": 16, "BN": 8}, _causal, normal(12.0), Tol(2e-3, 1e-4))
    _attention(_tag + ".random", lambda r: {"heads": int(r.integers(1, 3)),
                                            "seq": int(r.integers(1, 70)), "d": 16},
               {"D": 16, "BM": 16, "BN": 16}, _causal, normal(2.0))


# ---- decode_attention -----------------------------------------------------------------

def _decode_ref(v, s):
    q, k, vv = f64(v.q), f64(v.k), f64(v.v)
    scores = np.einsum("hd,hjd->hj", q, k) / np.sqrt(s["d"])
    return {"o": np.einsum("hj,hjd->hd", softmax_rows(scores), vv)}


def _decode(name, sizes, tiles, gen=normal(), tol=Tol(1e-4, 1e-5)):
    CASES.append(Case(
        name=name, file="examples/decode_attention.kiln", kernel="decode_attention",
        sizes=sizes, defines=tiles, grid=("heads",),
        args=[Arr("q", "f32", ("heads", "d"), gen), Arr("k", "f32", ("heads", "seq", "d"), gen),
              Arr("v", "f32", ("heads", "seq", "d"), normal()), Arr("o", "f32", ("heads", "d")),
              Scalar("seq", "i32", "seq")],
        ref=_decode_ref, tol=tol))


_decode("example.decode_attention", {"heads": 3, "seq": 520, "d": 64}, {})
_decode("example.decode_attention.ragged", {"heads": 3, "seq": 300, "d": 16}, {"D": 16, "BN": 32})
_decode("example.decode_attention.one_block", {"heads": 2, "seq": 20, "d": 16}, {"D": 16, "BN": 32})
_decode("example.decode_attention.large_scores", {"heads": 2, "seq": 100, "d": 16},
        {"D": 16, "BN": 16}, normal(12.0), Tol(2e-3, 1e-4))
_decode("example.decode_attention.random",
        lambda r: {"heads": int(r.integers(1, 4)), "seq": int(r.integers(1, 400)), "d": 16},
        {"D": 16, "BN": 64}, normal(2.0))


# ---- moe_routing ----------------------------------------------------------------------
# The reference takes the other route to the same numbers: the K largest logits (softmax
# keeps their order), and a softmax over those K alone, which is what renormalizing the
# K largest probabilities gives.

def _route_ref(k):
    def ref(v, s):
        z = f64(v.logits)
        idx = stable_topk_indices(z, k, axis=1)
        return {"experts": idx, "weights": softmax_rows(np.take_along_axis(z, idx, axis=1))}
    return ref


def _route(name, sizes, bt, be, k):
    CASES.append(Case(
        name=name, file="examples/moe_routing.kiln", kernel="route",
        sizes=sizes, defines={"BT": bt, "BE": be, "K": k},
        grid=lambda s: (cdiv(s["t"], bt),),
        args=[Arr("logits", "f32", ("t", "e"), normal(2.0)), Arr("experts", "i32", ("t", k)),
              Arr("weights", "f32", ("t", k)), Scalar("n_tokens", "i32", "t"),
              Scalar("n_experts", "i32", "e")],
        ref=_route_ref(k), tol={"weights": Tol(1e-5, 1e-6)}))


_route("example.moe_routing", {"t": 20, "e": 8}, 8, 8, 2)
_route("example.moe_routing.random",
       lambda r: {"t": int(r.integers(1, 40)), "e": int(r.integers(2, 17))}, 8, 16, 2)
_route("example.moe_routing.e64_k8", {"t": 37, "e": 64}, 4, 64, 8)


# ---- fp8_quant ------------------------------------------------------------------------
# Per-row absmax scale and f8e4m3 codes, with the scale stored after the cast loop
# (`quant`: the loops form a chain, one-block version when the row fits) and between the
# loops (`quant_scale_first`: kept apart). The same f32 arithmetic and one rounding to f8
# as the reference: bit-exact. Rows of very different magnitudes, and an all-zero row.

def _rows_of_scales(rng, shape):
    scales = np.array([0.01, 1.0, 30.0, 0.0, 1e3])[np.arange(shape[0]) % 5]
    return rng.standard_normal(shape) * scales[:, None]


def _fp8_quant(name, sizes, block=None, kernel="quant"):
    CASES.append(Case(
        name=name, file="examples/fp8_quant.kiln", kernel=kernel,
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "bf16", ("rows", "n"), _rows_of_scales),
              Arr("q", "f8e4m3", ("rows", "n")), Arr("scale", "f32", "rows"),
              Scalar("n_cols", "i32", "n")],
        ref=fp8_quant_per_row, tol=Tol(0, 0)))


for _kernel in ("quant", "quant_scale_first"):
    _fp8_quant(f"example.fp8_quant.{_kernel}", {"rows": 5, "n": 3000}, kernel=_kernel)
    _fp8_quant(f"example.fp8_quant.{_kernel}.one_block", {"rows": 5, "n": 700}, kernel=_kernel)
    _fp8_quant(f"example.fp8_quant.{_kernel}.random",
               lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(1, 1500))},
               block=128, kernel=_kernel)


# ---- rmsnorm_residual -----------------------------------------------------------------
# h must be NumPy's f32 sum exactly; y is within f32 rounding of the double reference.

def _rms_residual_ref(v, s):
    h = f32(v.x) + f32(v.residual)
    rms = np.sqrt((f64(h) ** 2).mean(axis=1, keepdims=True) + float(v.eps))
    return {"h": h, "y": h / rms * f64(v.w)}


def _rmsnorm_residual(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/rmsnorm_residual.kiln", kernel="rmsnorm_residual",
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(3.0)),
              Arr("residual", "f32", ("rows", "n"), normal(3.0)),
              Arr("w", "f32", "n", normal()),
              Arr("h", "f32", ("rows", "n")), Arr("y", "f32", ("rows", "n")),
              Scalar("n_cols", "i32", "n"), Scalar("eps", "f32", 1e-6)],
        ref=_rms_residual_ref, tol=Tol(1e-5, 1e-5)))


_rmsnorm_residual("example.rmsnorm_residual", {"rows": 4, "n": 700})
_rmsnorm_residual("example.rmsnorm_residual.long_rows", {"rows": 3, "n": 3000})
_rmsnorm_residual("example.rmsnorm_residual.random",
                  lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(1, 1500))}, block=128)


# ---- graph: the two kernels the graph launches, each alone ------------------------------
# (tests/cli/test_run_graph.py runs the graph itself.)

def _graph_rmsnorm_ref(v, s):
    x = f64(v.x)
    return {"h": x / np.sqrt((x * x).mean(axis=1, keepdims=True) + float(v.eps))}


def _graph_rmsnorm(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/graph.kiln", kernel="rmsnorm",
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=("rows",),
        args=[Arr("x", "f32", ("rows", "n"), normal(3.0)), Arr("h", "f32", ("rows", "n")),
              Scalar("n", "i32", "n"), Scalar("eps", "f32", 1e-5)],
        ref=_graph_rmsnorm_ref, tol=Tol(1e-5, 1e-6)))


def _graph_add_silu_ref(v, s):
    h = f64(v.h)
    return {"x": f64(v.x) + h / (1 + np.exp(-h))}


def _graph_add_silu(name, sizes, block=None):
    CASES.append(Case(
        name=name, file="examples/graph.kiln", kernel="add_silu",
        sizes=sizes, defines={"BLOCK": block} if block else {},
        grid=lambda s: (cdiv(s["count"], block or 128),),
        args=[Arr("x", "f32", "count", normal(2.0)), Arr("h", "f32", "count", normal(2.0)),
              Scalar("count", "i32", "count")],
        ref=_graph_add_silu_ref, tol=Tol(1e-5, 1e-6)))


_graph_rmsnorm("example.graph.rmsnorm", {"rows": 5, "n": 200})
_graph_rmsnorm("example.graph.rmsnorm.random",
               lambda r: {"rows": int(r.integers(1, 8)), "n": int(r.integers(1, 1025))}, block=1024)
_graph_add_silu("example.graph.add_silu", {"count": 1000})
_graph_add_silu("example.graph.add_silu.random", lambda r: {"count": int(r.integers(1, 5000))}, block=512)


# ---- fp8_matmul ---------------------------------------------------------------------------
# As written (one rounding at each row's final scale), and fused under --fuse-quantized,
# against a step-by-step model of the running scale (fp8_matmul_ref). Rows of very
# different magnitudes, so every row has its own scale.

def _fp8_matmul(name, sizes, fused):
    CASES.append(Case(
        name=name, file="examples/fp8_matmul.kiln", kernel="quant_matmul",
        sizes=sizes, defines={"BM": 16, "BN": 16, "BK": 32},
        grid=lambda s: (cdiv(s["m"], 16), cdiv(s["n"], 16)),
        args=[Arr("x", "bf16", ("m", "k"), _rows_of_scales), Arr("w", "f8e4m3", ("k", "n"), normal(1.0)),
              Arr("y", "bf16", ("m", "n")), Scalar("w_scale", "f32", 0.05),
              Scalar("M", "i32", "m"), Scalar("N", "i32", "n"), Scalar("K", "i32", "k")],
        ref=fp8_matmul_ref(32, fused),
        tol=Tol(8e-3, 1e-6),  # the f32 sums in another order, one rounding to bf16
        flags=("--fuse-quantized", "--reduction-split=1") if fused else ()))


_fp8_matmul("example.fp8_matmul", {"m": 40, "n": 24, "k": 250}, fused=True)
_fp8_matmul("example.fp8_matmul.as_written", {"m": 40, "n": 24, "k": 250}, fused=False)
_fp8_matmul("example.fp8_matmul.random",
            lambda r: {"m": int(r.integers(1, 40)), "n": int(r.integers(1, 40)), "k": int(r.integers(1, 300))},
            fused=True)


# ---- dropout --------------------------------------------------------------------------

def _dropout_ref(v, s):
    keep = random_uniform(random_words(v.seed, np.arange(s["n"], dtype=np.uint32))[0]) > np.float32(v.p)
    return {"out": np.where(keep, f32(v.x) / (np.float32(1.0) - np.float32(v.p)), np.float32(0.0))}


for _name, _sizes, _p in [("example.dropout", lambda r: {"n": int(r.integers(2000, 9000)),
                                                          "seed": int(r.integers(-2**31, 2**31))}, 0.25),
                          ("example.dropout.one", {"n": 1, "seed": 7}, 0.5),
                          ("example.dropout.keep_all", {"n": 700, "seed": 1}, 0.0)]:
    CASES.append(Case(
        name=_name, file="examples/dropout.kiln", kernel="dropout", sizes=_sizes, defines={"BLOCK": 256},
        grid=lambda s: (cdiv(s["n"], 256),),
        args=[Arr("x", "f32", "n", normal()), Arr("out", "f32", "n"), Scalar("n", "i32", "n"),
              Scalar("p", "f32", _p), Scalar("seed", "i32", "seed")],
        ref=_dropout_ref, tol=Tol(1e-6, 0.0)))


# ---- sparse_attention -----------------------------------------------------------------
# The row sum over ragged grids (edge blocks partial even where everything is kept), and
# attention over banded, causal and Longformer-like masks; every query row keeps its
# diagonal, so each has a softmax.

for _name, _shape, _pattern in [("example.sparse_row_sum", (100, 100), sliding(20)),
                                ("example.sparse_row_sum.random", (75, 130), random_blocks(0.4, 0.3))]:
    CASES.append(Case(
        name=_name, file="examples/sparse_attention.kiln", kernel="sparse_row_sum",
        sizes={"rows": _shape[0], "cols": _shape[1]}, grid=lambda s: (cdiv(s["rows"], 16),),
        args=[Arr("x", "f32", ("rows", "cols"), normal()), Arr("out", "f32", "rows"),
              BlockMask("mask", ("rows", "cols"), 16, 16, _pattern)],
        ref=masked_row_sum_ref, tol=Tol(1e-5, 2e-5)))


for _name, _seq, _pattern in [("example.sparse_attention", 100, sliding(20)),
                              ("example.sparse_attention.causal", 75, causal()),
                              ("example.sparse_attention.longformer", 90, longformer(8, 5))]:
    _shape = ("heads", "seq", "d")
    CASES.append(Case(
        name=_name, file="examples/sparse_attention.kiln", kernel="sparse_attention",
        sizes={"heads": 2, "seq": _seq, "d": 32}, grid=lambda s: (cdiv(s["seq"], 16), s["heads"]),
        args=[Arr("q", "f32", _shape, normal()), Arr("k", "f32", _shape, normal()),
              Arr("v", "f32", _shape, normal()), Arr("o", "f32", _shape),
              BlockMask("mask", ("seq", "seq"), 16, 16, _pattern), Scalar("scale", "f32", 32 ** -0.5)],
        ref=masked_attention_ref, tol=Tol(1e-4, 1e-5), gpu_splits=(4,)))
