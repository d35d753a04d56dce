#!/usr/bin/env python3
"""examples/autotune_add.kiln from Python: @autotune configs chosen on the GPU.

    python3 examples/python/autotune_add.py

The configs (examples/autotune_add.kiln) cover different numbers of elements per program,
so the grid is a function of the config that runs, as Triton's `grid = lambda META: ...`.
The first launch for each n times every config; the choice is kept in the disk cache.
"""
import os
import sys

import torch

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    add = kiln.compile(os.path.join(HERE, "..", "autotune_add.kiln"))
    print(f"configs: {', '.join(add.configs)}")
    status = 0
    for n in (1000, 1 << 20, 50_000_017):
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.empty_like(x)
        add[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        ok = torch.equal(out, x + y)
        status |= not ok
        print(f"n = {n}: {'matches' if ok else 'DIFFERS FROM'} torch")
    return status


if __name__ == "__main__":
    sys.exit(main())
