#!/usr/bin/env python3
"""The `kiln` Python package on a GPU, inside torch programs (docs/python.md).

Kernels, either bundles compiled on the build machine (--bundles DIR, from
bench/launch_bench.sh prepare) loaded with kiln.load, or compiled here by the JIT with
kiln.compile (--jit; tests/gpu/jit-on-device.sh run python), are launched on torch
tensors, then checked against torch on fresh random inputs:
  - vector_add and softmax on torch tensors (the result is exact, resp. within f32
    rounding of torch.softmax);
  - on a side stream: torch op, Kiln kernel, torch op in order, with no synchronisation
    between them (the Kiln launch goes on torch's current stream);
  - captured into a torch CUDA graph with torch ops around it, replayed on new inputs;
  - the same memory as __cuda_array_interface__ and DLPack objects, and NumPy arrays
    copied in and back;
  - a tensor of another dtype, on the CPU, or not contiguous: kiln.Error naming the
    parameter;
  - with --jit, graphs compiled by kiln.compile, run in each mode (persistent,
    cuda-graph, launches) against torch in f64, then again from the disk cache.
Prints PASS/FAIL lines; exit status 1 on any failure.

    python_checks.py --bundles build-launch    (PYTHONPATH has the repository's python/)
    python_checks.py --jit                     (KILN_LIBRARY is a libkiln.so)
"""

import argparse
import os
import sys

import numpy as np
import torch

import kiln

FAILURES = []


def expect(what, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))
    if not ok:
        FAILURES.append(what)


def raises(what, fn, text):
    try:
        fn()
    except kiln.Error as e:
        expect(what, text in str(e), str(e).splitlines()[0])
        return
    expect(what, False, "no kiln.Error")


class CudaArray:
    """Only __cuda_array_interface__, as CuPy or Numba arrays have it."""

    def __init__(self, t):
        self.t, self.__cuda_array_interface__ = t, t.__cuda_array_interface__


class DLPackOnly:
    """Only the DLPack protocol."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def residual_stack_reference(x, layers, eps):
    """examples/graph.kiln's residual_stack in float64: per layer, a row RMS norm, then
    x += silu(h)."""
    x = x.double()
    for _ in range(layers):
        h = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + eps)
        x = x + h * torch.sigmoid(h)
    return x


def check_jit_graphs(repo):
    """Graphs compiled by the JIT (kiln.compile of a graph's name), run in each mode on
    torch tensors against torch, then loaded again from the disk cache."""
    path = os.path.join(repo, "examples", "graph.kiln")
    rows, n, layers, eps = 300, 250, 4, 1e-5
    for attempt in ("compiled", "from the disk cache"):
        stack = kiln.compile(path, kernel="residual_stack", LAYERS=layers)
        for mode in ("persistent", "cuda-graph", "launches"):
            x0 = torch.randn(rows, n, device="cuda")
            x, h = x0.clone(), torch.empty_like(x0)
            stack(x, h, rows, n, eps, mode=mode)
            kiln.runtime().synchronize()  # cuda-graph mode replays on the runtime's own stream
            torch.cuda.synchronize()
            stack.check()
            want = residual_stack_reference(x0, layers, eps)
            err = ((x.double() - want).abs() / (1 + want.abs())).max().item()
            expect(f"a JIT graph ({attempt}), mode {mode}: residual_stack against torch in f64",
                   stack.last_run()["mode"] == mode and err < 1e-5, f"max relative difference {err:.2e}")
    chain = kiln.compile(os.path.join(repo, "tests", "graphs", "chain.kiln"), kernel="chain")
    m = 100_003
    for twice in (1, 0):
        x = torch.randn(m, device="cuda")
        tmp, out = torch.empty_like(x), torch.empty(2 * m, device="cuda")
        chain(x, tmp, out, m, twice)
        torch.cuda.synchronize()
        chain.check()
        six = (x * 2) * 3
        want = torch.cat([six * 2 if twice else six, six])
        expect(f"a JIT graph with views of one buffer and an `if` (twice={twice})", torch.equal(out, want))


def main():
    parser = argparse.ArgumentParser()
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--bundles")
    how.add_argument("--jit", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    if args.jit:
        add = kiln.compile(os.path.join(repo, "examples", "vector_add.kiln"), kernel="vector_add", BLOCK=1024)
        block = 4096
        softmax = kiln.compile(os.path.join(repo, "stdlib", "softmax.kiln"), kernel="softmax", BLOCK=block)
        remarks = kiln.explain_fusion(os.path.join(repo, "stdlib", "softmax.kiln"), kernel="softmax")
        expect("explain_fusion: the compiler's remarks", "fused the reduction loops" in remarks)
        tuned = kiln.compile(os.path.join(repo, "examples", "autotune_add.kiln"))
        m = 3_000_001
        tx, ty = torch.rand(m, device="cuda"), torch.rand(m, device="cuda")
        tout = torch.empty_like(tx)
        tuned[lambda meta: (kiln.cdiv(m, meta["BLOCK"]),)](tx, ty, tout, m)
        torch.cuda.synchronize()
        expect("an @autotune kernel, its grid from the config that runs", torch.equal(tout, tx + ty))
        check_jit_graphs(repo)
    else:
        add = kiln.load(os.path.join(args.bundles, "vector_add.kbin"))
        softmax = kiln.load(os.path.join(args.bundles, "softmax.kbin"))
        block = softmax.const("BLOCK")
    print(f"kiln on {kiln.runtime().device_name} ({kiln.runtime().target}); torch {torch.__version__}; "
          f"kernel[grid] written in {'C' if kiln._launch.COMPILED else 'Python'}")

    n = 1_000_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    add[kiln.cdiv(n, 1024)](x, y, out, n)
    torch.cuda.synchronize()
    expect("vector_add on torch tensors", torch.equal(out, x + y))

    rows, cols = 333, 3000
    a = torch.randn(rows, cols, device="cuda") * 10
    s = torch.empty_like(a)
    softmax[rows](a, s, cols, cols)
    err = (s - torch.softmax(a, dim=1)).abs().max().item()
    expect("softmax on torch tensors", err < 1e-6, f"max |difference| {err:.2e} (BLOCK {block})")

    # Ordered with torch's ops on a side stream, no synchronisation in between: slow work
    # is queued first, then the op that writes Kiln's input; a launch on any other stream
    # would read the input before it is written.
    side = torch.cuda.Stream()
    big = torch.randn(128 * 1024 * 1024, device="cuda")
    out.zero_()
    with torch.cuda.stream(side):
        side.wait_stream(torch.cuda.current_stream())
        for _ in range(4):
            big.mul_(1.0)
        z = big[:n] * 2
        add[kiln.cdiv(n, 1024)](z, y, out, n)
        w = out + 1
    side.synchronize()
    expect("on torch's current stream (a side stream): torch op, Kiln, torch op in order",
           torch.equal(w, (big[:n] * 2) + y + 1))

    # Captured in a torch CUDA graph.
    xs, ys = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    outs = torch.empty_like(xs)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        doubled = xs * 2
        add[kiln.cdiv(n, 1024)](doubled, ys, outs, n)
        result = outs - 1
    for trial in range(3):
        xs.copy_(torch.randn(n, device="cuda"))
        ys.copy_(torch.randn(n, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        expect(f"captured in a torch CUDA graph, replay {trial + 1} on new inputs",
               torch.equal(result, (xs * 2 + ys) - 1))

    # Other device arrays, NumPy.
    out.zero_()
    add[kiln.cdiv(n, 1024)](CudaArray(x), DLPackOnly(y), out, n)
    torch.cuda.synchronize()
    expect("__cuda_array_interface__ and DLPack objects by address", torch.equal(out, x + y))
    hx, hy = np.random.rand(5000).astype(np.float32), np.random.rand(5000).astype(np.float32)
    hout = np.zeros(5000, np.float32)
    add[5](hx, hy, hout, 5000)
    expect("NumPy arrays copied in and back", np.array_equal(hout, hx + hy))

    # Refusals.
    raises("a tensor of another dtype", lambda: add[1](x.half(), y, out, n), "parameter 'x' is *f32")
    raises("a CPU tensor", lambda: add[1](x.cpu(), y, out, n), "on the CPU")
    raises("a tensor that is not contiguous", lambda: add[1](a.t(), y, out, n), "not contiguous")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
