#!/usr/bin/env python3
#===- llama_bench.py - A Llama-3.2-1B-shaped decoding step against PyTorch -------===#
#
# stdlib/llama_decode.kiln's graph at Llama-3.2-1B's shapes (16 layers, hidden 2048, 32
# query and 8 key/value heads of 64, feed-forward 8192), random bf16 weights (1.95 GB),
# a bf16 KV cache of 1024 rows plus the new token's, batch 1, in one process:
#
#   Kiln, persistent     dslc run --graph-mode=persistent --time --repeat R
#   Kiln, CUDA graph     dslc run --graph-mode=cuda-graph --time --repeat R
#   Kiln, launches       dslc run --graph-mode=launches   --time --repeat R
#   PyTorch eager        the same step in bf16 (F.linear, scaled_dot_product_attention)
#   PyTorch CUDA graph   that step captured once and replayed
#   floor                the weights' and the cache's bytes at the copy bandwidth
#
# Each Kiln mode's hidden state and new cache rows after one run are checked first
# against the step in float64 on the GPU (the algorithm of tests/graphs/llama_reference.py).
# Prints PASS/FAIL lines and a markdown table (tests/gpu/jit-on-device.sh run llama-bench).
#
# Usage: llama_bench.py --dslc BIN --repo REPO --work DIR [--dslc-library-path PATH]
#                       [--layers 16] [--pos 1024] [--repeat 20] [--variants 'ROWS_IN=32;...']
#
#===---------------------------------------------------------------------------===#
import argparse
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F

import trace_summary
from graph_timing import MODE_NAMES, as_v2, cuda_graph_ms, median_ms, run_dslc, variant_arguments

HID, NQ, NKV, D, FF, SEGS = 2048, 32, 8, 64, 8192, 32  # SEGS: the graph's default


def dslc(args, env=None):
    return run_dslc(ARGS.dslc, ARGS.dslc_library_path, args, env)


def reference(w, x, kc, vc, cos, sin, pos, eps, layers):
    """The step in float64 on the GPU; returns x and the caches' row pos."""
    f = torch.float64
    x = x.to(f)
    kc, vc = kc.clone(), vc.clone()
    cos, sin = cos.to(f), sin.to(f)
    group = NQ // NKV

    def rms(v, g):
        return v * torch.rsqrt((v * v).mean() + eps) * g.to(f)

    for l in range(layers):
        heads = (w["w_qkv"][l].to(f) @ rms(x, w["g_attn"][l])).view(NQ + 2 * NKV, D)
        lo, hi = heads[:, : D // 2], heads[:, D // 2:]
        rot = torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=1)
        kc[l, :, pos] = rot[NQ:NQ + NKV].float().to(torch.bfloat16)
        vc[l, :, pos] = heads[NQ + NKV:].float().to(torch.bfloat16)
        keys = kc[l, :, : pos + 1].to(f).repeat_interleave(group, dim=0)
        vals = vc[l, :, : pos + 1].to(f).repeat_interleave(group, dim=0)
        p = torch.softmax(torch.einsum("hsd,hd->hs", keys, rot[:NQ]) / D ** 0.5, dim=1)
        x = x + w["w_o"][l].to(f) @ torch.einsum("hs,hsd->hd", p, vals).reshape(-1)
        gu = w["w_gu"][l].to(f) @ rms(x, w["g_mlp"][l])
        x = x + w["w_down"][l].to(f) @ (F.silu(gu[0::2]) * gu[1::2])  # the rows interleave
    return x, kc[:, :, pos], vc[:, :, pos]


def main():
    layers, pos, eps = ARGS.layers, ARGS.pos, 1e-5
    cap = pos + 1
    gen = torch.Generator(device="cuda").manual_seed(7)
    dev = "cuda"

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen, device=dev) * scale

    width = (NQ + 2 * NKV) * D
    w = {"w_qkv": randn(layers, width, HID, scale=HID ** -0.5).to(torch.bfloat16),
         "w_o": randn(layers, HID, NQ * D, scale=(NQ * D) ** -0.5).to(torch.bfloat16),
         "w_gu": randn(layers, 2 * FF, HID, scale=HID ** -0.5).to(torch.bfloat16),
         "w_down": randn(layers, HID, FF, scale=FF ** -0.5).to(torch.bfloat16),
         "g_attn": 1 + 0.1 * randn(layers, HID), "g_mlp": 1 + 0.1 * randn(layers, HID)}
    kc = torch.zeros(layers, NKV, cap, D, device=dev, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    kc[:, :, :pos] = randn(layers, NKV, pos, D).to(torch.bfloat16)
    vc[:, :, :pos] = randn(layers, NKV, pos, D).to(torch.bfloat16)
    angles = pos * 500000.0 ** (-torch.arange(0, D // 2, device=dev, dtype=torch.float64) * 2 / D)
    cos, sin = torch.cos(angles).float(), torch.sin(angles).float()
    x0 = randn(HID)

    os.makedirs(ARGS.work, exist_ok=True)
    path = lambda name: os.path.join(ARGS.work, name + ".npy")
    for name, t in w.items():
        np.save(path(name), as_v2(t).reshape(-1) if t.dtype == torch.bfloat16 else t.cpu().numpy().reshape(-1))
    np.save(path("cos"), cos.cpu().numpy())
    np.save(path("sin"), sin.cpu().numpy())
    scratch = {"qkv": width, "q": NQ * D, "o": NQ * D, "act": FF, "part": NQ * SEGS * (D + 2)}
    for name, size in scratch.items():
        np.save(path(name), np.zeros(size, np.float32))

    def fresh_state():
        np.save(path("x"), x0.cpu().numpy())
        np.save(path("kc"), as_v2(kc).reshape(-1))
        np.save(path("vc"), as_v2(vc).reshape(-1))

    default_source = os.path.join(ARGS.repo, "stdlib", "llama_decode.kiln")
    base = ["--kernel", "llama_decode", "--device", "cuda", "-D", "LAYERS=%d" % layers]
    for name in list(w) + ["kc", "vc", "cos", "sin", "x"] + list(scratch):
        base += ["--arg", "%s=%s" % (name, path(name))]
    base += ["--arg", "pos=%d" % pos, "--arg", "cap=%d" % cap, "--arg", "eps=%g" % eps]

    want_x, want_k, want_v = reference(w, x0, kc, vc, cos, sin, pos, eps, layers)
    want_x, want_k, want_v = (t.float().cpu().numpy() for t in (want_x, want_k, want_v))

    ok = True
    times = {}
    variants = [v for v in ARGS.variants.split(";")]
    for variant, mode in [(v, m) for v in variants for m in ("persistent", "cuda-graph", "launches")]:
        defines, env, source = variant_arguments(variant, default_source)
        command = ["run", os.path.join(ARGS.repo, source)] + base + defines
        label = " (%s)" % variant if variant else ""
        fresh_state()
        once = dslc(command + ["--graph-mode=" + mode], env)
        if once.returncode != 0:
            print("FAIL llama step%s, %s: %s" % (label, mode, once.stderr.strip()[-600:]))
            ok = False
            continue
        got_x = np.load(path("x"))
        bf = lambda a: (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        got_k = bf(np.load(path("kc"))).reshape(layers, NKV, cap, D)[:, :, pos]
        got_v = bf(np.load(path("vc"))).reshape(layers, NKV, cap, D)[:, :, pos]
        scale = float(np.abs(want_x).max())
        err = float(np.abs(got_x - want_x).max()) / scale
        good = err < 2e-3 and np.allclose(got_k, want_k, rtol=2e-2, atol=2e-2) and \
            np.allclose(got_v, want_v, rtol=2e-2, atol=2e-2)
        ok &= bool(good)
        print("%s llama step%s, %s: largest difference from f64 %.3g of the largest |x| (%.3g); new cache rows %s"
              % ("PASS" if good else "FAIL", label, mode, err, scale,
                 "match" if good else "k %.3g, v %.3g" % (np.abs(got_k - want_k).max(), np.abs(got_v - want_v).max())))
        timed = dslc(command + ["--graph-mode=" + mode, "--time", "--repeat", str(ARGS.repeat)], env)
        m = re.search(r"median ([0-9.]+) ms", timed.stderr)
        if timed.returncode != 0 or not m:
            print("FAIL llama step%s, %s, timed: %s" % (label, mode, timed.stderr.strip()[-500:]))
            ok = False
            continue
        times["Kiln, " + MODE_NAMES[mode] + label] = float(m.group(1))
        if mode == "persistent":
            workers = re.search(r"persistent kernel of (\d+) workers", timed.stderr)
            print("INFO persistent kernel%s: %s workers" % (label, workers.group(1) if workers else "?"))
            trace = os.path.join(ARGS.work, "trace%s.json" % variants.index(variant))
            traced = dslc(command + ["--trace", trace], env)
            for line in traced.stderr.splitlines():
                if "trace of graph" in line:
                    print("INFO" + label + " " + line.split(": ", 1)[1])
            if traced.returncode == 0:
                for line in trace_summary.summarize(trace):
                    print("INFO" + label + " " + line)

    # PyTorch in bf16: the usual modules' operations, eager and in one CUDA graph.
    x = x0.to(torch.bfloat16).view(1, HID).clone()
    kt, vt = kc.clone(), vc.clone()
    cb, sb = cos.to(torch.bfloat16), sin.to(torch.bfloat16)
    ga, gm = w["g_attn"].to(torch.bfloat16), w["g_mlp"].to(torch.bfloat16)

    def rms(v, g):
        v32 = v.float()
        return (v32 * torch.rsqrt(v32.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16) * g

    def step():
        h = x
        for l in range(layers):
            qkv = F.linear(rms(h, ga[l]), w["w_qkv"][l]).view(NQ + 2 * NKV, D)
            lo, hi = qkv[:, : D // 2], qkv[:, D // 2:]
            rot = torch.cat([lo * cb - hi * sb, hi * cb + lo * sb], dim=1)
            kt[l, :, pos] = rot[NQ:NQ + NKV]
            vt[l, :, pos] = qkv[NQ + NKV:]
            a = F.scaled_dot_product_attention(rot[:NQ].view(1, NQ, 1, D), kt[l:l + 1], vt[l:l + 1],
                                               enable_gqa=True)
            h = h + F.linear(a.reshape(1, NQ * D), w["w_o"][l])
            gate, up = F.linear(rms(h, gm[l]), w["w_gu"][l]).split(FF, dim=-1)
            h = h + F.linear(F.silu(gate) * up, w["w_down"][l])
        x.copy_(h)

    times["PyTorch eager"] = median_ms(step, ARGS.repeat)
    times["PyTorch, one CUDA graph"] = cuda_graph_ms(step, ARGS.repeat)

    # The floor: every weight and the cache rows read once, at the copy bandwidth.
    moved = sum(t.numel() * t.element_size() for t in w.values()) + 2 * kc.numel() * 2
    src = w["w_gu"].view(-1)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src), ARGS.repeat)
    bandwidth = 2 * src.numel() * 2 / (copy_ms * 1e-3)
    times["floor: weights and cache at the copy bandwidth"] = moved / bandwidth * 1e3

    torch_graph = times["PyTorch, one CUDA graph"]
    kiln_graph = times.get("Kiln, its launches in one CUDA graph" + (" (%s)" % variants[0] if variants[0] else ""))
    print()
    print("| Llama-3.2-1B-shaped decode step, %d layers, cache %d, batch 1 (%.2f GB) | µs | vs PyTorch CUDA graph "
          "| vs Kiln CUDA graph | GB/s |" % (layers, cap, moved / 1e9))
    print("| --- | --- | --- | --- | --- |")
    for name, ms in times.items():
        versus = "%.2fx" % (kiln_graph / ms) if kiln_graph else "-"
        print("| %s | %.1f | %.2fx | %s | %.0f |" % (name, ms * 1e3, torch_graph / ms, versus,
                                                     moved / (ms * 1e-3) / 1e9))
    print("\ncopy bandwidth %.0f GB/s; %s; torch %s" % (bandwidth / 1e9, torch.cuda.get_device_name(),
                                                       torch.__version__))
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--dslc-library-path", default="")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--pos", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--variants", default="",
                        help="';'-separated sets of the graph's consts to time, e.g. 'ROWS_IN=32;BK_OUT=1024' "
                             "('' is the defaults); the first is the Kiln CUDA graph the table compares with")
    ARGS = parser.parse_args()
    sys.exit(main())
