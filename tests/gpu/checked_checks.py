#!/usr/bin/env python3
#===- checked_checks.py - Checked mode on the GPU --------------------------------===#
#
# Runs the kernels of tests/spirv/checked/out_of_bounds.kiln (an overrun by one, an
# underrun by one, a pointer chosen at run time between two buffers, an atomic past the
# end) compiled with `dslc run --checked --device cuda`: each must fail with E0602
# naming the access, its line, the program and the element, and change no file. An
# in-bounds kernel checked must give the same result as unchecked, and the time of a
# memory-bound kernel (vector add of 64 Mi floats) is printed checked and unchecked: the
# cost of checked mode. Called by tests/gpu/jit-on-device.sh; prints "PASS name: detail"
# or "FAIL name: detail" per check and exits 1 if any failed.
#
# Usage: checked_checks.py --dslc BIN --repo REPO --work DIR [--dslc-library-path PATH]
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import sys

import numpy as np

from device_check import add_dslc_arguments, exit_status, record, run_dslc


def dslc(args):
    return run_dslc(ARGS, args)[0]


def run(kernel, grid, arrays, scalars, extra=(), source=None):
    folder = os.path.join(ARGS.work, kernel)
    os.makedirs(folder, exist_ok=True)
    args = ["run", source or os.path.join(ARGS.repo, "tests", "spirv", "checked", "out_of_bounds.kiln"),
            "--kernel", kernel, "--device", "cuda", "--diagnostics=json"] + list(extra)
    if grid is not None:  # a graph computes its own grids
        args += ["--grid", grid]
    for name, a in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), a)
        args += ["--arg", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
    for name, v in scalars.items():
        args += ["--arg", "%s=%s" % (name, v)]
    p = dslc(args)
    outs = {name: np.load(os.path.join(folder, name + ".npy")) for name in arrays}
    return p, outs


def expect_violation(name, kernel, grid, arrays, scalars, want, source=None, extra=()):
    p, outs = run(kernel, grid, arrays, scalars, ("--checked",) + tuple(extra), source)
    messages = []
    for line in p.stderr.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        messages.append("%s %s" % (d.get("code"), d.get("message")))
    hit = any(m.startswith("E0602") and want in m for m in messages)
    unchanged = all(np.array_equal(outs[k], arrays[k]) for k in arrays)
    record(p.returncode == 1 and hit and unchanged, name,
           (messages[0] if messages else p.stderr.strip()[-300:]) + ("" if unchanged else "; a file CHANGED"))


def main():
    rng = np.random.default_rng()
    expect_violation("checked: overrun by one", "overrun", "2", {"dst": np.zeros(100, np.float32)}, {"n": 100},
                     "store out of bounds at ")
    expect_violation("checked: overrun names the program and element", "overrun", "2",
                     {"dst": np.zeros(100, np.float32)}, {"n": 100}, "in program (1, 0, 0): element 100 of parameter 'dst'")
    expect_violation("checked: underrun by one", "underrun", "1",
                     {"src": rng.standard_normal(40).astype(np.float32), "dst": np.zeros(40, np.float32)}, {"n": 40},
                     "element -1 of parameter 'src'")
    expect_violation("checked: a pointer chosen at run time", "chosen", "1",
                     {"a": np.ones(64, np.float32), "b": np.full(64, 2, np.float32), "out": np.zeros(32, np.float32)},
                     {"which": 0, "start": 40}, "load out of bounds at ")
    expect_violation("checked: an atomic past the end", "atomic_overrun", "3", {"counts": np.zeros(10, np.int32)},
                     {"n": 10}, "atomic out of bounds at ")
    # Vector accesses (4 floats), tested a vector at a time: one partly past the end.
    expect_violation("checked: a vector load partly past the end", "vector_copy", "1",
                     {"src": rng.standard_normal(1002).astype(np.float32), "dst": np.zeros(1024, np.float32)}, {},
                     "element 1002 of parameter 'src'")
    expect_violation("checked: a vector store partly past the end", "vector_copy", "1",
                     {"src": rng.standard_normal(1024).astype(np.float32), "dst": np.zeros(1002, np.float32)}, {},
                     "element 1002 of parameter 'dst'")
    expect_violation("checked: a masked vector load partly past the end", "vector_copy_masked", "1",
                     {"src": rng.standard_normal(998).astype(np.float32), "dst": np.zeros(1008, np.float32)},
                     {"n": 1000}, "element 998 of parameter 'src'")
    src = rng.standard_normal(2048).astype(np.float32)
    p, outs = run("vector_copy", "2", {"src": src, "dst": np.zeros(2048, np.float32)}, {}, ("--checked",))
    record(p.returncode == 0 and np.array_equal(outs["dst"], src + np.float32(1)),
           "checked: vector accesses in bounds", "exit %d" % p.returncode if p.returncode else "2048 values")
    # A GEMM whose operands stream into shared memory by cp.async, each copy checked:
    # b four rows short, its last copies outside; in bounds, the same result as unchecked.
    a16 = rng.standard_normal((128, 96)).astype(np.float16)
    b16 = rng.standard_normal((96, 64)).astype(np.float16)
    expect_violation("checked: a streamed GEMM operand past the end", "streamed_matmul", "2",
                     {"a": a16, "b": b16.reshape(-1)[:-8].copy(), "c": np.zeros((128, 64), np.float32)}, {"k": 96},
                     "element 6136 of parameter 'b'")
    results = {}
    for mode, extra in (("unchecked", ()), ("checked", ("--checked",))):
        p, outs = run("streamed_matmul", "2", {"a": a16, "b": b16, "c": np.zeros((128, 64), np.float32)}, {"k": 96},
                      extra)
        results[mode] = outs["c"] if p.returncode == 0 else None
    err = (float(np.abs(results["checked"] - a16.astype(np.float64) @ b16.astype(np.float64)).max())
           if results["checked"] is not None else float("nan"))
    record(results["checked"] is not None and results["unchecked"] is not None
           and np.array_equal(results["checked"], results["unchecked"]) and err < 1e-3,
           "checked: a streamed GEMM in bounds", "equal to unchecked, largest difference from f64 %.2g" % err)
    # A graph whose second launch overruns, checked in every mode: as one persistent
    # kernel (its tasks checked, the task named), launch by launch, as a CUDA graph.
    graph = os.path.join(ARGS.work, "graph_overrun.kiln")
    with open(graph, "w") as f:
        f.write("import \"%s\";\n\ngraph g(dst: *f32, n: i32) {\n    launch overrun[(1,)](dst, n);\n"
                "    launch overrun[((n + 64) / 64,)](dst, n);\n}\n"
                % os.path.join(ARGS.repo, "tests", "spirv", "checked", "out_of_bounds.kiln"))
    for mode in ("persistent", "launches", "cuda-graph"):
        expect_violation("checked: a graph's launch overruns (%s)" % mode, "g", None, {"dst": np.zeros(100, np.float32)},
                         {"n": 100}, "element 100 of parameter 'dst'", graph, ("--graph-mode=" + mode,))
    # In bounds: the chosen pointer inside b passes, with b's values.
    p, outs = run("chosen", "1", {"a": np.ones(64, np.float32), "b": np.full(64, 2, np.float32),
                                  "out": np.zeros(32, np.float32)}, {"which": 1, "start": 16}, ("--checked",))
    record(p.returncode == 0 and np.all(outs["out"] == 2), "checked: in bounds through a chosen pointer",
           "exit %d" % p.returncode if p.returncode else "32 values of b")
    # The cost: vector add of 64 Mi floats, unchecked and checked, same process kind.
    n = 1 << 26
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    times = {}
    for mode, extra in (("unchecked", ()), ("checked", ("--checked",))):
        p, outs = run("vector_add", str((n + 1023) // 1024), {"x": x, "y": y, "out": np.zeros(n, np.float32)},
                      {"n": n}, extra + ("--time", "--repeat", "50"),
                      os.path.join(ARGS.repo, "examples", "vector_add.kiln"))
        ok = p.returncode == 0 and np.array_equal(outs["out"], x + y)
        line = [l for l in p.stderr.splitlines() if "median" in l]
        times[mode] = line[0] if line else p.stderr.strip()[-200:]
        record(ok, "checked: vector_add of 64 Mi, " + mode, times[mode])
    return exit_status()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_dslc_arguments(parser)
    ARGS = parser.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    sys.exit(main())
