#!/usr/bin/env python3
"""examples/vector_add.kiln from Python: compiled by the JIT, launched on torch tensors.

    pip install --no-index --no-build-isolation ./python     (once; docs/python.md)
    python3 examples/python/vector_add.py

The kernel runs on torch's current stream, between torch ops, as a Triton kernel would.
"""
import os
import sys

import torch

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    add = kiln.compile(os.path.join(HERE, "..", "vector_add.kiln"), kernel="vector_add", BLOCK=1024)
    n = 98_432
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    add[kiln.cdiv(n, 1024)](x, y, out, n)          # one program per 1024 elements
    ok = torch.equal(out, x + y)
    print(f"vector_add of {n} elements on {kiln.runtime().device_name}: {'matches' if ok else 'DIFFERS FROM'} torch")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
