#===- graph_timing.py - What the graph benchmarks share ---------------------------===#
#
# bench/graph_bench.py (the decode chain) and bench/llama_bench.py (the Llama-shaped
# step) run `dslc run` on a graph in its three GPU modes and time PyTorch beside it in
# the same process; these are the pieces they have in common.
#
#===---------------------------------------------------------------------------===#
import os
import subprocess

import numpy as np
import torch

# `--graph-mode` values, as the tables name them.
MODE_NAMES = {"persistent": "one persistent kernel", "cuda-graph": "its launches in one CUDA graph",
              "launches": "launch by launch"}


def variant_arguments(variant, source):
    """A benchmark variant ('ROWS=8,BK=512,--num-warps=8,env:NAME=1,source:FILE') as dslc
    arguments (-D for a const, an option as it is), environment variables for the run, and
    the Kiln source to compile: `source` unless the variant names another file (a path
    relative to the repository, for a rewrite timed beside the kernel it replaces)."""
    args, env = [], {}
    for item in filter(None, variant.split(",")):
        if item.startswith("env:"):
            name, _, value = item[4:].partition("=")
            env[name] = value
        elif item.startswith("source:"):
            source = item[len("source:"):]
        else:
            args += [item] if item.startswith("--") else ["-D", item]
    return args, env, source


def run_dslc(binary, library_path, args, extra_env=None):
    """`binary args...`, with LD_LIBRARY_PATH set to `library_path` when it is given (the
    libraries tests/gpu/jit-on-device.sh carries) and `extra_env` added."""
    env = dict(os.environ)
    env.update(extra_env or {})
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    return subprocess.run([binary] + args, capture_output=True, text=True, env=env, timeout=600)


def median_ms(fn, runs):
    """The median of `runs` timings of `fn` with CUDA events, after three warm-up calls."""
    start = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for _ in range(3):
        fn()
    for i in range(runs):
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    return float(np.median([s.elapsed_time(e) for s, e in zip(start, end)]))


def cuda_graph_ms(step, runs):
    """`step` captured once in a CUDA graph (after a warm-up on a side stream, as capture
    requires), then its replay timed by median_ms."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return median_ms(graph.replay, runs)


def as_v2(t):
    """A bf16 tensor as the raw 2-byte elements `dslc run` reads from .npy files."""
    return t.contiguous().view(torch.int16).cpu().numpy().view(np.dtype("V2"))
