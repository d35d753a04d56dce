#!/usr/bin/env python3
"""examples/softmax.kiln from Python: one row per program, against torch.softmax.

    python3 examples/python/softmax.py

The second run of this script compiles nothing: the JIT's disk cache (~/.cache/kiln, or
$KILN_CACHE_DIR) keeps the kernel, as it does for examples/host/softmax_jit.cpp.
"""
import os
import sys
import time

import torch

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rows, cols = 1823, 781
    x = torch.randn(rows, cols, device="cuda") * 4
    y = torch.empty_like(x)
    kiln.runtime()                                # the device, before the clock starts
    start = time.perf_counter()
    softmax = kiln.compile(os.path.join(HERE, "..", "softmax.kiln"), kernel="softmax", BLOCK=1024)
    softmax[rows](x, y, cols, x.stride(0))        # a row per program; BLOCK >= cols
    torch.cuda.synchronize()
    first = time.perf_counter() - start           # code is generated (or read) at the first launch
    err = (y - torch.softmax(x, dim=1)).abs().max().item()
    print(f"softmax {rows}x{cols}: compile and first launch {first * 1e3:.1f} ms, "
          f"largest difference from torch.softmax {err:.2e}")
    return 0 if err < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
