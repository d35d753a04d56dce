#!/usr/bin/env python3
#===- launch_bench.py - Host time per launch from Python, against its peers ---===#
#
# One small kernel (vector_add over 1024 f32 elements, one program) launched back to
# back on torch tensors, in one process:
#
#   torch op            torch.add(x, y, out=out)
#   Triton              the same kernel in Triton, kernel[(1,)](x, y, out, n, BLOCK=1024)
#   Kiln, tensors       kernel[1](x, y, out, n) on torch tensors (torch's current stream)
#   Kiln, Buffers       kernel[1](...) on Buffers over the same memory (no tensor to look at)
#   Kiln, general path  kernel.launch((1,), ...) on the Buffers: ctypes fields filled one
#                       by one, the path every argument kind can take
#   Kiln, Python        the tensors and Buffers rows again through the launchers written
#     launcher          in Python (kiln/_launch.py) instead of the C ones (_fastlaunch.c)
#
# Each row runs LAUNCHES launches after 2000 to warm up and reports the mean host time of
# a call, timed in batches of 100 with the GPU idle before each (the queue never fills),
# and the mean per launch of as many back to back until the GPU finished them.
# Every result is checked against x + y first. Prints a markdown table.
#
# Usage: launch_bench.py --bundle vector_add.kbin [--launches 20000]
#        (the kiln package and libkiln_runtime.so are found as python/README.md says)
#
#===---------------------------------------------------------------------------===#
import argparse
import time

import torch

N, WARMUP = 1024, 2000


def time_row(what, launch, count, batch=100):
    """(what, host µs per call timed in batches of `batch` with the GPU idle before each,
    µs per launch back to back until the GPU finished), as kiln-launch-bench times C."""
    for _ in range(WARMUP):
        launch()
    torch.cuda.synchronize()
    calls = 0.0
    for done in range(0, count, batch):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(min(batch, count - done)):
            launch()
        calls += time.perf_counter() - start
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        launch()
    torch.cuda.synchronize()
    return what, calls / count * 1e6, (time.perf_counter() - start) / count * 1e6


def triton_row(x, y, out, count):
    try:
        import triton
        import triton.language as tl
    except ImportError as e:
        return None, f"Triton: not measured ({e})"

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    out.zero_()
    add[(1,)](x, y, out, N, BLOCK=1024)
    torch.cuda.synchronize()
    ok = torch.equal(out, x + y)
    return time_row("Triton: kernel[(1,)](...)", lambda: add[(1,)](x, y, out, N, BLOCK=1024), count), \
        None if ok else "Triton: wrong result"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--launches", type=int, default=20000)
    args = parser.parse_args()
    import kiln

    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    out = torch.empty(N, device="cuda")
    rows, problems = [], []

    rows.append(time_row("torch op: torch.add(x, y, out=out)", lambda: torch.add(x, y, out=out), args.launches))

    row, problem = triton_row(x, y, out, args.launches)
    if row:
        rows.append(row)
    if problem:
        problems.append(problem)

    kernel = kiln.load(args.bundle)
    out.zero_()
    kernel[1](x, y, out, N)
    torch.cuda.synchronize()
    if not torch.equal(out, x + y):
        problems.append("Kiln on torch tensors: wrong result")
    which = "C" if kiln._launch.COMPILED else "Python"
    print(f"kernel[grid] written in {which}")
    rows.append(time_row("Kiln: kernel[1](x, y, out, n) on torch tensors", lambda: kernel[1](x, y, out, N),
                         args.launches))

    runtime = kiln.runtime()
    bx, by, bout = (runtime.wrap(t.data_ptr(), t.numel() * 4, "f32") for t in (x, y, out))
    rows.append(time_row("Kiln: kernel[1](...) on Buffers", lambda: kernel[1](bx, by, bout, N), args.launches))
    launch = kernel[1]
    rows.append(time_row("Kiln: launch = kernel[1] once, launch(...) on torch tensors", lambda: launch(x, y, out, N),
                         args.launches))
    rows.append(time_row("Kiln: kernel.launch((1,), ...) on Buffers", lambda: kernel.launch((1,), bx, by, bout, N),
                         args.launches))

    # The same launches through the launchers written in Python (the package without its
    # C extension, or KILN_COMPILED_LAUNCHER=0), measured beside the C ones.
    if kiln._launch.COMPILED:
        kiln._launch._fastlaunch = None
        kernel._launchers.clear()
        rows.append(time_row("Kiln, Python launcher: kernel[1](x, y, out, n) on torch tensors",
                             lambda: kernel[1](x, y, out, N), args.launches))
        rows.append(time_row("Kiln, Python launcher: kernel[1](...) on Buffers", lambda: kernel[1](bx, by, bout, N),
                             args.launches))

    # Where a Python launch's time goes, besides the C launch (kiln-launch-bench's rows):
    # one foreign call with no work in it, and torch's current stream.
    lib, handle = runtime._lib, bx._handle
    rows.append(time_row("(part) a ctypes call into Kiln that does nothing (kiln_buffer_size)",
                         lambda: lib.kiln_buffer_size(handle), args.launches))
    rows.append(time_row("(part) torch's current stream (torch._C._cuda_getCurrentRawStream)",
                         lambda: torch._C._cuda_getCurrentRawStream(0), args.launches))

    print(f"| launch of vector_add (1 program, 1024 elements) from Python, {args.launches} launches "
          "| host µs per call | µs per launch back to back until done |")
    print("| --- | --- | --- |")
    for what, call, drain in rows:
        print(f"| {what} | {call:.2f} | {drain:.2f} |")
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
