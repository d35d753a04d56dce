#===- cases_encoder.py - The kernels of stdlib/encoder_layer.kiln -----------------===#
#
# Each kernel of the BERT-like encoder layer against NumPy in double precision from the
# same bf16 inputs: the projection with its bias (and GELU), the projection fused with
# the residual add and the layernorm, the unfused layernorm, and sparse attention read in
# place from the packed QKV matrix with a scale and an additive key bias. Sizes that are
# not multiples of the tiles, and a BigBird mask.
#
#===---------------------------------------------------------------------------===#
import numpy as np

from kilncase import Arr, BlockMask, Scalar, Tol, bigbird, cdiv, erf, f64, normal, uniform

FILE = "../../stdlib/encoder_layer.kiln"
# bf16 inputs and outputs, f32 sums: a few units of bf16's last place.
BF16_TOL = Tol(2e-2, 2e-2)


def _linear_ref(act):
    def ref(v, s):
        out = f64(v.x).reshape(s["M"], s["K"]) @ f64(v.w).reshape(s["K"], s["N"]) + f64(v.b)[None, :]
        if act:
            out = 0.5 * out * (1.0 + erf(out / np.sqrt(2.0)))
        return {"y": out}
    return ref


def _layernorm(h, gamma, beta, eps):
    d = h - h.mean(axis=1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps) * gamma[None, :] + beta[None, :]


def _linear_residual_layernorm_ref(v, s):
    h = (f64(v.x).reshape(s["M"], s["K"]) @ f64(v.w).reshape(s["K"], s["N"]) + f64(v.b)[None, :]
         + f64(v.res).reshape(s["M"], s["N"]))
    return {"y": _layernorm(h, f64(v.gamma), f64(v.beta), float(v.eps))}


def _residual_layernorm_ref(v, s):
    h = f64(v.a).reshape(s["M"], s["N"]) + f64(v.res).reshape(s["M"], s["N"])
    return {"y": _layernorm(h, f64(v.gamma), f64(v.beta), float(v.eps))}


def _attention_ref(v, s):
    T, H, D = s["T"], s["H"], s["D"]
    qkv = f64(v.qkv).reshape(T, 3, H, D)
    q, k, vv = (qkv[:, i].transpose(1, 0, 2) for i in range(3))  # [H, T, D]
    keep = np.asarray(v.mask, dtype=bool)
    scores = np.einsum("htd,hsd->hts", q, k) * float(v.scale) + f64(v.key_bias)[None, None, :]
    scores = np.where(keep[None], scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = np.where(keep[None], p, 0.0)
    out = np.einsum("hts,hsd->htd", p / p.sum(axis=-1, keepdims=True), vv)
    return {"a": out.transpose(1, 0, 2).reshape(-1)}


def _linear(suffix, M, N, K, act=0, even=False):
    defines = ({"ACT": act} if act else {}) | ({"EVEN": True} if even else {})
    return ("encoder.linear" + suffix, FILE, "linear",
            dict(sizes={"M": M, "N": N, "K": K}, defines=defines,
                 grid=lambda s: (cdiv(s["M"], 64), cdiv(s["N"], 64)),
                 args=[Arr("x", "bf16", ("M", "K"), normal()), Arr("w", "bf16", ("K", "N"), normal(0.1)),
                       Arr("b", "bf16", "N", normal()), Arr("y", "bf16", ("M", "N")),
                       Scalar("M", "i32", "M"), Scalar("N", "i32", "N"), Scalar("K", "i32", "K")],
                 ref=_linear_ref(act), tol=BF16_TOL))


def _norm_args():
    return [Arr("gamma", "bf16", "N", uniform(0.5, 1.5)), Arr("beta", "bf16", "N", normal(0.1))]


def _linear_residual_layernorm(suffix, M, N, K):
    return ("encoder.linear_residual_layernorm" + suffix, FILE, "linear_residual_layernorm",
            dict(sizes={"M": M, "N": N, "K": K}, defines={"NP": 128},
                 grid=lambda s: (cdiv(s["M"], 16),),
                 args=[Arr("x", "bf16", ("M", "K"), normal()), Arr("w", "bf16", ("K", "N"), normal(0.1)),
                       Arr("b", "bf16", "N", normal()), Arr("res", "bf16", ("M", "N"), normal())]
                 + _norm_args() + [Arr("y", "bf16", ("M", "N")), Scalar("M", "i32", "M"), Scalar("N", "i32", "N"),
                                   Scalar("K", "i32", "K"), Scalar("eps", "f32", 1e-5)],
                 ref=_linear_residual_layernorm_ref, tol=BF16_TOL))


def _residual_layernorm(suffix, M, N):
    return ("encoder.residual_layernorm" + suffix, FILE, "residual_layernorm",
            dict(sizes={"M": M, "N": N}, defines={"NP": 128},
                 grid=lambda s: (cdiv(s["M"], 16),),
                 args=[Arr("a", "bf16", ("M", "N"), normal()), Arr("res", "bf16", ("M", "N"), normal())]
                 + _norm_args() + [Arr("y", "bf16", ("M", "N")), Scalar("M", "i32", "M"), Scalar("N", "i32", "N"),
                                   Scalar("eps", "f32", 1e-5)],
                 ref=_residual_layernorm_ref, tol=BF16_TOL))


def _attention(suffix, T, pattern, **kw):
    return ("encoder.attention" + suffix, FILE, "encoder_attention",
            dict(sizes={"T": T, "H": 2, "D": 64}, defines={"H": 2},
                 grid=lambda s: (s["T"] // 64, s["H"]),
                 args=[Arr("qkv", "bf16", lambda s: s["T"] * 3 * s["H"] * s["D"], normal()),
                       Arr("key_bias", "f32", "T", normal()),
                       Arr("a", "bf16", lambda s: s["T"] * s["H"] * s["D"]),
                       BlockMask("mask", ("T", "T"), 64, 64, pattern, **kw),
                       Scalar("scale", "f32", 64 ** -0.5)],
                 ref=_attention_ref, tol=BF16_TOL))


CASES = [
    _linear(".ragged", 50, 96, 80),
    _linear(".gelu", 70, 64, 64, act=1),
    _linear(".even_gelu", 128, 192, 96, act=1, even=True),  # unmasked: multiples of the tiles
    _linear_residual_layernorm(".ragged", 37, 96, 80),
    _linear_residual_layernorm(".full_width", 32, 128, 64),
    _residual_layernorm(".ragged", 37, 100),
    _attention(".bigbird", 128, bigbird(6, 3, 16, 30, 7)),
    _attention(".bigbird_split", 192, bigbird(10, 5, 32, 20, 3)),
]


def register(add):
    """Adds this file's cases through cases.py's add()."""
    for name, file, kernel, kw in CASES:
        add(name, file, kernel, **kw)
