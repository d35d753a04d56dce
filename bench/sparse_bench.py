#!/usr/bin/env python3
#===- sparse_bench.py - Block-sparse attention against flex_attention, on the GPU -===#
#
# Runs on the GPU machine (PyTorch, a CUDA driver; no compiler) from the repository root
# with the folder bench/sparse_prepare.sh wrote beside it:
#
#   python3 bench/sparse_bench.py build-sparse [--masks causal,sliding] [--seq 8192]
#
# For each mask of the table (B=1, H=16, D=128, bf16): the dense bool mask is
# built with PyTorch, saved as the .npy `kiln-run --arg mask=` takes, and every Kiln
# bundle of the folder (row-wise and block-wise mappings of
# bench/kernels/sparse_attention_bf16.kiln) runs through kiln-run, checked against
# PyTorch's attention with the same mask on 64 sampled query rows, then timed. The peers
# run in the same process: torch.compile'd flex_attention with the block mask PyTorch
# builds from the same predicate, and dense SDPA (cuDNN) for scale. Throughput counts
# the kept elements only: 4·D FLOPs per kept (query, key) pair and head.
#
# Prints one JSON line per measurement and a table; results.json and results.md go to
# $OUT (or /tmp).
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

B, H, D = 1, 16, 128


def masks(seq, device):
    """name -> the [seq, seq] bool mask on `device`, and the flex_attention mask_mod."""
    i = torch.arange(seq, device=device)[:, None]
    j = torch.arange(seq, device=device)[None, :]
    g = torch.Generator(device="cpu").manual_seed(0)
    rand_blocks = (torch.rand((seq + 127) // 128, (seq + 127) // 128, generator=g) < 0.05).to(device)

    def causal(b, h, q, k): return q >= k
    def sliding(b, h, q, k): return (q - k).abs() <= 512
    def causal_sliding(b, h, q, k): return (q >= k) & (q - k < 1024)
    def dilated(b, h, q, k): return ((q - k).abs() <= 2048) & ((q - k) % 2 == 0)
    def longformer(b, h, q, k): return ((q - k).abs() <= 256) | (q < 64) | (k < 64)
    def bigbird(b, h, q, k): return ((q - k).abs() <= 192) | (q < 64) | (k < 64) | rand_blocks[q // 128, k // 128]

    out = {}
    for name, fn in [("causal", causal), ("sliding ±512", sliding), ("causal sliding 1024", causal_sliding),
                     ("dilated", dilated), ("Longformer", longformer), ("BigBird", bigbird)]:
        out[name] = (fn(0, 0, i, j), fn)
    return out


def save_bf16(path, t):
    """A bf16 tensor as the .npy kiln-run reads: raw '|V2' elements."""
    np.save(path, t.contiguous().view(torch.int16).cpu().numpy().view("V2"))


def load_bf16(path):
    return torch.from_numpy(np.load(path).view(np.int16).copy()).view(torch.bfloat16)


def query_block(folder, bundle):
    """BM, the query rows of one program, from the bundle's consts (kiln-run --describe)."""
    out = subprocess.run([os.path.join(folder, "kiln-run"), "--describe", os.path.join(folder, bundle)],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"(?m)^const\s+BM = (\d+)", out).group(1))


def run_kiln(folder, bundle, grid, args, repeat):
    cmd = [os.path.join(folder, "kiln-run"), os.path.join(folder, bundle), "--grid", grid, "--time",
           "--repeat", str(repeat)]
    for a in args:
        cmd += ["--arg", a]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip()[-2000:])
    m = re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--masks", default="")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    dev = "cuda"
    seq = a.seq
    out_dir = os.environ.get("OUT") or "/tmp"
    work = os.path.join("/tmp", "kiln-sparse-bench")
    os.makedirs(work, exist_ok=True)
    bundles = sorted(f for f in os.listdir(a.folder) if f.endswith(".kbin"))
    from torch.nn.attention.flex_attention import flex_attention, create_block_mask
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    cflex = torch.compile(flex_attention)
    sdpa = torch.nn.functional.scaled_dot_product_attention

    torch.manual_seed(0)
    q = torch.randn(B, H, seq, D, dtype=torch.bfloat16, device=dev)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    scale = 1.0 / D ** 0.5
    for name, t in (("q", q), ("k", k), ("v", v)):
        save_bf16(os.path.join(work, name + ".npy"), t[0])
    save_bf16(os.path.join(work, "o.npy"), torch.zeros_like(q[0]))
    rows = torch.randint(0, seq, (64,), generator=torch.Generator().manual_seed(1)).tolist() + [0, seq - 1]

    results = []

    def rec(workload, system, ms, tflops, note=""):
        r = dict(workload=workload, system=system, ms=round(ms, 4), tflops=round(tflops, 1), note=note)
        results.append(r)
        print(json.dumps(r), flush=True)

    dense_flops = 4.0 * B * H * seq * seq * D
    for causal in (False, True):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            f = lambda: sdpa(q, k, v, is_causal=causal)
            ms = do_bench(f, warmup=25, rep=100, return_mode="median")
        flops = dense_flops / (2 if causal else 1)
        rec("dense " + ("causal" if causal else "full"), "sdpa-cuDNN", ms, flops / ms / 1e9)

    selected = [m.strip() for m in a.masks.split(",") if m.strip()]
    for name, (mask, fn) in masks(seq, dev).items():
        if selected and not any(s.lower() in name.lower() for s in selected):
            continue
        kept = int(mask.sum().item())
        flops = 4.0 * B * H * kept * D
        label = f"{name} (density {100.0 * kept / seq / seq:.1f}%)"
        # The reference on sampled rows, in f32 from the bf16 inputs.
        qs = q[0, :, rows].float()
        s = torch.einsum("hrd,hkd->hrk", qs, k[0].float()) * scale
        s = s.masked_fill(~mask[rows][None], float("-inf"))
        ref = torch.einsum("hrk,hkd->hrd", torch.softmax(s, -1), v[0].float())

        t0 = time.time()
        bm = create_block_mask(fn, None, None, seq, seq, device=dev)
        f = lambda: cflex(q, k, v, block_mask=bm, scale=scale)
        got = f()
        err = (got[0, :, rows].float() - ref).abs().max().item()
        ms = do_bench(f, warmup=25, rep=100, return_mode="median")
        rec(label, "flex_attention", ms, flops / ms / 1e9, f"max err {err:.3g}; mask+compile {time.time() - t0:.1f} s")

        mpath = os.path.join(work, "mask.npy")
        np.save(mpath, mask.cpu().numpy())
        for bundle in bundles:
            args = [f"q={work}/q.npy", f"k={work}/k.npy", f"v={work}/v.npy", f"o={work}/o.npy", f"mask={mpath}",
                    f"scale={scale!r}"]
            try:
                grid = f"{seq // query_block(a.folder, bundle)},{H}"
                run_kiln(a.folder, bundle, grid, args, 1)
                o = load_bf16(os.path.join(work, "o.npy")).to(dev)
                err = (o[:, rows].float() - ref).abs().max().item()
                ms = run_kiln(a.folder, bundle, grid, args, a.repeat)
                rec(label, "kiln " + bundle[:-5], ms, flops / ms / 1e9, f"max err {err:.3g}")
            except Exception as e:  # a failed bundle is a result too
                rec(label, "kiln " + bundle[:-5], float("nan"), float("nan"), "FAILED: " + str(e)[:300])

    with open(os.path.join(out_dir, "results.json"), "w") as fp:
        json.dump(results, fp, indent=1)
    lines = ["| workload | system | ms | TFLOP/s (kept) | note |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {r['workload']} | {r['system']} | {r['ms']} | {r['tflops']} | {r['note']} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out_dir, "results.md"), "w") as fp:
        fp.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
