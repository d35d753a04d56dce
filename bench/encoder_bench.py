#!/usr/bin/env python3
#===- encoder_bench.py - A sparse BERT-base encoder layer against PyTorch, on the GPU -===#
#
# Runs on the GPU machine (PyTorch, a CUDA driver; no compiler) from the repository root
# with the folder bench/encoder_prepare.sh wrote beside it:
#
#   python3 bench/encoder_bench.py build-encoder [--tokens 4096] [--repeat 20]
#
# One encoder layer of BERT-base's widths (12 heads of 64, E = 768, FFN 3072), bf16, over
# T tokens whose attention keeps a BigBird mask (a band of ±192, 64 global tokens, 5% of
# the 128 x 128 blocks at random: bench/sparse_bench.py's), with an additive key bias:
#
#   Kiln     stdlib/encoder_layer.kiln's kernels through kiln-run, in both fusion scopes
#            (the residual add and layernorm fused into each output projection, or a
#            separate residual_layernorm), attention row-wise and block-wise, at
#            hand-picked tiles and at the configs the JIT's @autotune chose (TUNED_*);
#            the layer's time is the sum of its kernels' medians (launch gaps excluded);
#   PyTorch  the same layer in eager mode, attention by torch.compile'd flex_attention
#            with the same block mask and the bias as a score_mod (timed whole).
#
# Kiln's output is checked against PyTorch's. Prints one JSON line per measurement and
# a table; results.json and results.md go to $OUT (or /tmp).
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch

H, D, FFN = 12, 64, 3072
# The tile of `linear` that bench/encoder_prepare.sh compiles (BM x BN).
LINEAR_TILE = 128
# The "tuned" bundles of bench/encoder_prepare.sh: the configs the JIT's @autotune chose
# on the H200 for T = 4096 (examples/host/encoder_layer.cpp), one bundle per projection
# shape: name -> (BM, BN) of `linear`, or BM of the layernorm kernels.
TUNED_LINEAR = {"linear_n2304_k768": (128, 128), "linear_n768_k768": (128, 128),
                "linear_gelu_n3072_k768": (64, 128), "linear_n768_k3072": (128, 128)}
TUNED_ROWS = {"linear_residual_layernorm_k768": 16, "linear_residual_layernorm_k3072": 16,
              "residual_layernorm_tuned": 8}
E = H * D


def save_bf16(path, t):
    """A bf16 tensor as the .npy kiln-run reads: raw '|V2' elements."""
    np.save(path, t.contiguous().view(torch.int16).cpu().numpy().view("V2"))


def load_bf16(path):
    return torch.from_numpy(np.load(path).view(np.int16).copy()).view(torch.bfloat16)


def run_kiln(folder, bundle, grid, args, repeat):
    cmd = [os.path.join(folder, "kiln-run"), os.path.join(folder, bundle + ".kbin"), "--grid", grid, "--time",
           "--repeat", str(repeat)]
    for a in args:
        cmd += ["--arg", a]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(" ".join(cmd[1:3]) + ": " + p.stderr.strip()[-2000:])
    m = re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr)
    return float(m.group(1))


def cdiv(a, b):
    return (a + b - 1) // b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    dev, T = "cuda", a.tokens
    out_dir = os.environ.get("OUT") or "/tmp"
    work = os.path.join("/tmp", "kiln-encoder-bench")
    os.makedirs(work, exist_ok=True)
    from torch.nn.attention.flex_attention import flex_attention, create_block_mask
    from triton.testing import do_bench
    cflex = torch.compile(flex_attention)

    torch.manual_seed(0)
    bf = dict(dtype=torch.bfloat16, device=dev)
    p = {"x": torch.randn(T, E, **bf),
         "w_qkv": torch.randn(E, 3 * E, **bf) * 0.03, "b_qkv": torch.randn(3 * E, **bf) * 0.1,
         "w_o": torch.randn(E, E, **bf) * 0.03, "b_o": torch.randn(E, **bf) * 0.1,
         "g1": 1 + 0.1 * torch.randn(E, **bf), "be1": 0.1 * torch.randn(E, **bf),
         "w_1": torch.randn(E, FFN, **bf) * 0.03, "b_1": torch.randn(FFN, **bf) * 0.1,
         "w_2": torch.randn(FFN, E, **bf) * 0.02, "b_2": torch.randn(E, **bf) * 0.1,
         "g2": 1 + 0.1 * torch.randn(E, **bf), "be2": 0.1 * torch.randn(E, **bf)}
    key_bias = torch.where(torch.rand(T, device=dev) < 0.05, -4.0, 0.0).float()
    for name, t in p.items():
        save_bf16(os.path.join(work, name + ".npy"), t)
    np.save(os.path.join(work, "key_bias.npy"), key_bias.cpu().numpy())

    i = torch.arange(T, device=dev)[:, None]
    j = torch.arange(T, device=dev)[None, :]
    g = torch.Generator(device="cpu").manual_seed(0)
    rand_blocks = (torch.rand(cdiv(T, 128), cdiv(T, 128), generator=g) < 0.05).to(dev)

    def bigbird(b, h, q, k):
        return ((q - k).abs() <= 192) | (q < 64) | (k < 64) | rand_blocks[q // 128, k // 128]

    mask = bigbird(0, 0, i, j)
    np.save(os.path.join(work, "mask.npy"), mask.cpu().numpy())
    density = mask.float().mean().item()

    def bias_mod(score, b, h, q_idx, kv_idx):
        return score + key_bias[kv_idx]

    scale = D ** -0.5
    bm = create_block_mask(bigbird, None, None, T, T, device=dev)
    ln = torch.nn.functional.layer_norm

    def torch_layer():
        x = p["x"]
        qkv = (x @ p["w_qkv"] + p["b_qkv"]).view(T, 3, H, D).permute(1, 2, 0, 3)
        attn = cflex(qkv[0][None], qkv[1][None], qkv[2][None], score_mod=bias_mod, block_mask=bm, scale=scale)
        attn = attn[0].permute(1, 0, 2).reshape(T, E)
        h = ln(x + attn @ p["w_o"] + p["b_o"], (E,), p["g1"], p["be1"], 1e-5)
        f = torch.nn.functional.gelu(h @ p["w_1"] + p["b_1"])
        return ln(h + f @ p["w_2"] + p["b_2"], (E,), p["g2"], p["be2"], 1e-5)

    results = []

    def rec(system, ms, note=""):
        r = dict(workload=f"encoder layer, T={T}, BigBird (density {100 * density:.1f}%)", system=system,
                 ms=round(ms, 4), note=note)
        results.append(r)
        print(json.dumps(r), flush=True)

    want = torch_layer()
    rec("PyTorch eager + flex_attention", do_bench(torch_layer, warmup=25, rep=100, return_mode="median"))

    w = lambda n: f"{work}/{n}.npy"  # noqa: E731

    def linear(x, wt, b, y, M, N, K, gelu=False, tuned=False):
        save_bf16(w(y), torch.zeros(M, N, dtype=torch.bfloat16))
        name = "linear_gelu" if gelu else "linear"
        bm, bn = LINEAR_TILE, LINEAR_TILE
        if tuned:
            name = f"{name}_n{N}_k{K}"
            bm, bn = TUNED_LINEAR[name]
        return (name, f"{cdiv(M, bm)},{cdiv(N, bn)}",
                [f"x={w(x)}", f"w={w(wt)}", f"b={w(b)}", f"y={w(y)}", f"M={M}", f"N={N}", f"K={K}"])

    def project_and_normalize(fused, x, wt, b, res, gm, bt, y, K, tuned=False):
        save_bf16(w(y), torch.zeros(T, E, dtype=torch.bfloat16))
        if fused:
            name = f"linear_residual_layernorm_k{K}" if tuned else "linear_residual_layernorm"
            return [(name, f"{cdiv(T, TUNED_ROWS.get(name, 16))}",
                     [f"x={w(x)}", f"w={w(wt)}", f"b={w(b)}", f"res={w(res)}", f"gamma={w(gm)}", f"beta={w(bt)}",
                      f"y={w(y)}", f"M={T}", f"N={E}", f"K={K}", "eps=1e-05"])]
        name = "residual_layernorm_tuned" if tuned else "residual_layernorm"
        return [linear(x, wt, b, y + "_proj", T, E, K, tuned=tuned),
                (name, f"{cdiv(T, TUNED_ROWS.get(name, 16))}",
                 [f"a={w(y + '_proj')}", f"res={w(res)}", f"gamma={w(gm)}", f"beta={w(bt)}", f"y={w(y)}", f"M={T}",
                  f"N={E}", "eps=1e-05"])]

    # Both scopes with attention row-wise and block-wise at the hand-picked tiles, then
    # both scopes at the configs the JIT tuned (attention block-wise, the faster).
    configurations = [(fused, attention, False) for fused in (True, False)
                      for attention in ("attention_row", "attention_block4")]
    configurations += [(fused, "attention_block4", True) for fused in (True, False)]
    for fused, attention, tuned in configurations:
        save_bf16(w("a"), torch.zeros(T, E, dtype=torch.bfloat16))
        steps = [linear("x", "w_qkv", "b_qkv", "qkv", T, 3 * E, E, tuned=tuned),
                 (attention, f"{T // 64},{H}", [f"qkv={w('qkv')}", f"key_bias={w('key_bias')}", f"a={w('a')}",
                                                f"mask={w('mask')}", f"scale={scale!r}"])]
        steps += project_and_normalize(fused, "a", "w_o", "b_o", "x", "g1", "be1", "h", E, tuned=tuned)
        steps.append(linear("h", "w_1", "b_1", "f", T, FFN, E, gelu=True, tuned=tuned))
        steps += project_and_normalize(fused, "f", "w_2", "b_2", "h", "g2", "be2", "y", FFN, tuned=tuned)
        name = "kiln " + ("fused" if fused else "unfused") + " scope, " + attention + \
            (", configs the JIT tuned" if tuned else "")
        try:
            for bundle, grid, args in steps:  # once in order, for the output
                run_kiln(a.folder, bundle, grid, args, 1)
            got = load_bf16(w("y")).to(dev)
            err = (got.float() - want.float()).abs().max().item()
            times = [run_kiln(a.folder, bundle, grid, args, a.repeat) for bundle, grid, args in steps]
            rec(name, sum(times), f"max err {err:.3g} vs PyTorch; kernels " +
                " + ".join(f"{t:.3f}" for t in times) + " ms")
        except Exception as e:  # a failed configuration is a result too
            rec(name, float("nan"), "FAILED: " + str(e)[:300])

    with open(os.path.join(out_dir, "results.json"), "w") as fp:
        json.dump(results, fp, indent=1)
    lines = ["| workload | system | ms | note |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['workload']} | {r['system']} | {r['ms']} | {r['note']} |" for r in results]
    print("\n".join(lines))
    with open(os.path.join(out_dir, "results.md"), "w") as fp:
        fp.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
