#===- llama_reference.py - One Llama-shaped decoding step in NumPy -------------===#
#
# The meaning of stdlib/llama_decode.kiln's graph `llama_decode`, in float64 on the same
# inputs: what tests/cli/test_run_graph.py compares the interpreter's run with. Random
# inputs of a given shape come from `inputs`; bf16 arrays are NumPy's raw 2-byte `V2`
# (as `dslc run` reads and writes them), converted with `to_bf16` / `from_bf16`.
#
#===---------------------------------------------------------------------------===#
import numpy as np


def to_bf16(a):
    """float32 values rounded to nearest even bf16, as raw V2 elements."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16).view(np.dtype("V2"))


def from_bf16(a):
    return (np.asarray(a).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def inputs(rng, layers, hid, nq, nkv, d, ff, cap, pos):
    """The graph's arrays (weights scaled so activations stay of order one) and its
    scalars for a step at position `pos` of a cache of `cap` rows, rows < pos filled."""
    width = (nq + 2 * nkv) * d

    def weights(rows, cols):
        return to_bf16(rng.standard_normal((layers, rows, cols)).astype(np.float32) / np.sqrt(cols))

    cache = np.zeros((layers, nkv, cap, d), np.float32)
    cache[:, :, :pos] = rng.standard_normal((layers, nkv, pos, d))
    values = np.zeros_like(cache)
    values[:, :, :pos] = rng.standard_normal((layers, nkv, pos, d))
    angles = pos * 500000.0 ** (-np.arange(0, d // 2) * 2.0 / d)
    arrays = {
        "x": rng.standard_normal(hid).astype(np.float32),
        "w_qkv": weights(width, hid), "w_o": weights(hid, nq * d),
        "w_gu": weights(2 * ff, hid), "w_down": weights(hid, ff),
        "g_attn": (1 + 0.1 * rng.standard_normal((layers, hid))).astype(np.float32),
        "g_mlp": (1 + 0.1 * rng.standard_normal((layers, hid))).astype(np.float32),
        "kc": to_bf16(cache), "vc": to_bf16(values),
        "cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32),
    }
    return arrays, {"pos": pos, "cap": cap, "eps": 1e-5}


def scratch(nq, nkv, d, ff, segs, fill=np.nan):
    """The graph's scratch buffers (qkv, q, o, act, part), filled with `fill`."""
    sizes = {"qkv": (nq + 2 * nkv) * d, "q": nq * d, "o": nq * d, "act": ff, "part": nq * segs * (d + 2)}
    return {name: np.full(n, fill, np.float32) for name, n in sizes.items()}


def step(a, pos, eps, layers, nq, nkv, d, ff):
    """x after `layers` layers, and the caches with row `pos` written (float64, the caches'
    new rows rounded to bf16 as the kernels store them)."""
    f64 = np.float64
    x = a["x"].astype(f64)
    kc, vc = from_bf16(a["kc"]).astype(f64), from_bf16(a["vc"]).astype(f64)
    cos, sin = a["cos"].astype(f64), a["sin"].astype(f64)
    group = nq // nkv

    def rms(v, g):
        return v / np.sqrt((v * v).mean() + eps) * g

    for l in range(layers):
        heads = (from_bf16(a["w_qkv"][l]).astype(f64) @ rms(x, a["g_attn"][l])).reshape(nq + 2 * nkv, d)
        lo, hi = heads[:, : d // 2], heads[:, d // 2:]
        rot = np.concatenate([lo * cos - hi * sin, hi * cos + lo * sin], axis=1)
        kc[l, :, pos] = from_bf16(to_bf16(rot[nq:nq + nkv].astype(np.float32)))
        vc[l, :, pos] = from_bf16(to_bf16(heads[nq + nkv:].astype(np.float32)))
        o = np.empty((nq, d))
        for h in range(nq):
            keys, vals = kc[l, h // group, :pos + 1], vc[l, h // group, :pos + 1]
            s = keys @ rot[h] / np.sqrt(d)
            p = np.exp(s - s.max())
            o[h] = (p / p.sum()) @ vals
        x = x + from_bf16(a["w_o"][l]).astype(f64) @ o.ravel()
        gu = from_bf16(a["w_gu"][l]).astype(f64) @ rms(x, a["g_mlp"][l])
        gate, up = gu[0::2], gu[1::2]  # the rows interleave
        act = gate / (1 + np.exp(-gate)) * up
        x = x + from_bf16(a["w_down"][l]).astype(f64) @ act
    return x, kc, vc
