#!/usr/bin/env python3
#===- graph_bench.py - The decode chain: a persistent kernel against its peers ---===#
#
# stdlib/decode_chain.kiln at n = 4096, 8 layers (256 MiB of bf16 weights), batch 1, on
# one GPU, in one process so that every figure comes from the same device state:
#
#   Kiln, persistent     dslc run --graph-mode=persistent --time --repeat R
#   Kiln, CUDA graph     dslc run --graph-mode=cuda-graph --time --repeat R
#   Kiln, launches       dslc run --graph-mode=launches   --time --repeat R
#   PyTorch eager        torch.mv on the bf16 weights, SiLU and RMS norm in f32
#   PyTorch CUDA graph   the same step captured once and replayed
#   floor                the weights' bytes at the copy bandwidth measured here
#
# Kiln's result after one run is checked against PyTorch's in f64 first. Prints a
# markdown table (docs/benchmarks.md's format) and "PASS"/"FAIL" lines for the caller
# (tests/gpu/jit-on-device.sh run graph-bench).
#
# Usage: graph_bench.py --dslc BIN --repo REPO --work DIR [--dslc-library-path PATH]
#                       [--n 4096] [--layers 8] [--repeat 100] [--variants 'ROWS=8,BK=512;...']
#
#===---------------------------------------------------------------------------===#
import argparse
import os
import re
import sys

import numpy as np
import torch

import trace_summary
from graph_timing import MODE_NAMES, as_v2, cuda_graph_ms, median_ms, run_dslc, variant_arguments


def dslc(args, env=None):
    return run_dslc(ARGS.dslc, ARGS.dslc_library_path, args, env)


def main():
    n, layers, eps = ARGS.n, ARGS.layers, 1e-5
    rng = np.random.default_rng(5)
    w32 = (rng.standard_normal((layers, n, n)) / np.sqrt(n)).astype(np.float32)
    w16 = torch.from_numpy(w32).to(torch.bfloat16)
    g = (1 + 0.1 * rng.standard_normal((layers, n))).astype(np.float32)
    h0 = rng.standard_normal(n).astype(np.float32)
    os.makedirs(ARGS.work, exist_ok=True)
    path = lambda name: os.path.join(ARGS.work, name + ".npy")
    np.save(path("w"), as_v2(w16).reshape(-1))
    np.save(path("g"), g.reshape(-1))
    np.save(path("y"), np.zeros(2 * n, np.float32))
    default_source = os.path.join(ARGS.repo, "stdlib", "decode_chain.kiln")
    base = ["--kernel", "decode_chain", "--device", "cuda", "-D", "LAYERS=%d" % layers,
            "--arg", "w=" + path("w"), "--arg", "g=" + path("g"), "--arg", "h=" + path("h"),
            "--arg", "y=" + path("y"), "--arg", "n=%d" % n, "--arg", "eps=%g" % eps]

    # The reference in f64 from the same bf16 weights.
    wd = w16.to(torch.float64).cuda()
    gd = torch.from_numpy(g).to(torch.float64).cuda()
    x = torch.from_numpy(h0).to(torch.float64).cuda()
    for l in range(layers):
        s = torch.nn.functional.silu(wd[l] @ x)
        x = s * torch.rsqrt((s * s).mean() + eps) * gd[l]
    reference = x.cpu().numpy()
    del wd

    ok = True
    times = {}
    for variant in ARGS.variants.split(";"):
        defines, env, source = variant_arguments(variant, default_source)
        command = ["run", os.path.join(ARGS.repo, source)] + base + defines
        label = " (%s)" % variant if variant else ""
        for mode in ("persistent", "cuda-graph", "launches"):
            np.save(path("h"), h0)
            once = dslc(command + ["--graph-mode=" + mode], env)
            if once.returncode != 0:
                print("FAIL decode chain%s, %s: %s" % (label, mode, once.stderr.strip()[-500:]))
                ok = False
                continue
            got = np.load(path("h"))
            err = float(np.abs(got - reference).max())
            good = bool(np.allclose(got, reference, rtol=2e-3, atol=2e-3))
            ok &= good
            print("%s decode chain%s, %s: largest difference from f64 %.3g"
                  % ("PASS" if good else "FAIL", label, mode, err))
            timed = dslc(command + ["--graph-mode=" + mode, "--time", "--repeat", str(ARGS.repeat)], env)
            m = re.search(r"median ([0-9.]+) ms", timed.stderr)
            if timed.returncode != 0 or not m:
                print("FAIL decode chain%s, %s, timed: %s" % (label, mode, timed.stderr.strip()[-500:]))
                ok = False
                continue
            times["Kiln, %s%s" % (MODE_NAMES[mode], label)] = float(m.group(1))
            workers = re.search(r"persistent kernel of (\d+) workers", timed.stderr)
            if workers:
                print("INFO persistent kernel%s: %s workers" % (label, workers.group(1)))
                trace = os.path.join(ARGS.work, "trace.json")
                traced = dslc(command + ["--trace", trace], env)
                for line in traced.stderr.splitlines():
                    if "trace of graph" in line:
                        print("INFO" + label + " " + line.split(": ", 1)[1])
                if traced.returncode == 0:
                    for line in trace_summary.summarize(trace):
                        print("INFO" + label + " " + line)

    # PyTorch, eager and in one CUDA graph, on the same bf16 weights.
    wt = w16.cuda()
    gt = torch.from_numpy(g).cuda()
    h = torch.from_numpy(h0).cuda()

    def step():
        x = h
        for l in range(layers):
            s = torch.nn.functional.silu(torch.mv(wt[l], x.to(torch.bfloat16)).float())
            x = s * torch.rsqrt((s * s).mean() + eps) * gt[l]
        h.copy_(x)

    times["PyTorch eager"] = median_ms(step, ARGS.repeat)
    times["PyTorch, one CUDA graph"] = cuda_graph_ms(step, ARGS.repeat)
    # The floor: the weights once, at the device-to-device copy bandwidth (reads + writes).
    src = wt.view(-1)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src), ARGS.repeat)
    weight_bytes = src.numel() * 2
    bandwidth = 2 * weight_bytes / (copy_ms * 1e-3)
    times["floor: the weights at the copy bandwidth"] = weight_bytes / bandwidth * 1e3

    graph_ms = times.get("PyTorch, one CUDA graph")
    print()
    print("| decode chain, n %d, %d layers, bf16 weights (%.0f MiB) | µs | vs PyTorch CUDA graph | GB/s |"
          % (n, layers, weight_bytes / 2**20))
    print("| --- | --- | --- | --- |")
    for name, ms in times.items():
        print("| %s | %.1f | %.2fx | %.0f |" % (name, ms * 1e3, graph_ms / ms, weight_bytes / (ms * 1e-3) / 1e9))
    print("\ncopy bandwidth %.0f GB/s; %s" % (bandwidth / 1e9, torch.cuda.get_device_name()))
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--dslc-library-path", default="")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--variants", default="",
                        help="';'-separated sets of graph consts (and dslc options such as --num-warps=8) "
                             "to time, e.g. 'ROWS=8,BK=512;ROWS=4,--num-warps=8'")
    ARGS = parser.parse_args()
    sys.exit(main())
