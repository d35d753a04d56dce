#!/usr/bin/env python3
#===- graph_checks.py - Graphs on the GPU against the interpreter -------------===#
#
# Runs graphs through `dslc run` on the reference interpreter (launch by launch: the
# meaning) and on a CUDA GPU as one persistent kernel, as one CUDA graph and launch by
# launch, on fresh random inputs, and compares. Also: repeated runs of the persistent kernel in one
# process (its counters carry over from run to run), the watchdog (a wait that can
# never be met, injected with KILN_TEST_GRAPH_UNREACHABLE_WAIT, must end the run with
# an error in bounded time and change no file), the time per run of a 64-launch graph
# in the three GPU modes, and its trace (--trace: a slice per task on its worker's row).
# Graph bundles too: the chain graph written with --emit=bundle and run by kiln-run in
# the three modes against the interpreter, and a graph that takes a block mask (an
# encoder layer over a BigBird mask). Called by tests/gpu/jit-on-device.sh; prints one line per
# check, "PASS name: detail" or "FAIL name: detail", and exits 1 if any failed.
#
# Usage: graph_checks.py --dslc BIN --kiln-run BIN --repo REPO --work DIR [--dslc-library-path PATH]
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np


from device_check import add_dslc_arguments, exit_status, record, run_dslc


def dslc(args, env=None, timeout=600):
    return run_dslc(ARGS, args, env, timeout)


def run_graph(source, graph, arrays, scalars, device, extra=(), defines=(), env=None, tag=None):
    """Writes `arrays` as .npy files, runs the graph, returns (process, outputs, seconds)."""
    folder = os.path.join(ARGS.work, tag or device)
    os.makedirs(folder, exist_ok=True)
    args = ["run", source, "--kernel", graph, "--device", device] + list(defines) + list(extra)
    for name, a in arrays.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, a)
        args += ["--arg", "%s=%s" % (name, path)]
    for name, v in scalars.items():
        args += ["--arg", "%s=%s" % (name, v)]
    p, seconds = dslc(args, env=env)
    outs = {name: np.load(os.path.join(folder, name + ".npy")) for name in arrays}
    return p, outs, seconds


def bf16_values(a):
    """bf16 stored as raw 2-byte values, as the float32 numbers they are."""
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_bits(values):
    """float32 values rounded to the nearest bf16, as raw 2-byte values."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).view(np.dtype("V2"))


def compare(name, source, graph, arrays, scalars, defines=(), rtol=1e-4, atol=1e-5, extra_gpu=(), bf16=False):
    """`bf16`: bf16 arrays compare as numbers within the tolerances, not bit for bit."""
    ref, ref_out, _ = run_graph(source, graph, arrays, scalars, "interp", defines=defines, tag="ref")
    if ref.returncode != 0:
        record(False, name, "the interpreter failed: " + ref.stderr.strip()[-400:])
        return
    for mode in ("persistent", "cuda-graph", "launches"):
        p, out, _ = run_graph(source, graph, arrays, scalars, "cuda", ("--graph-mode=" + mode,) + tuple(extra_gpu),
                              defines, tag=mode)
        if p.returncode != 0:
            record(False, "%s, %s" % (name, mode), "exit %d: %s" % (p.returncode, p.stderr.strip()[-600:]))
            continue
        worst, where = 0.0, ""
        for k in arrays:
            a, b = out[k], ref_out[k]
            if a.dtype.kind == "V" and bf16:
                a, b = bf16_values(a), bf16_values(b)
            elif a.dtype.kind == "V":  # bf16 as raw bits: must be unchanged bit for bit
                a, b = a.view(np.uint16).astype(np.float32), b.view(np.uint16).astype(np.float32)
            bad = ~np.isclose(a, b, rtol=rtol, atol=atol)
            if bad.any():
                worst = max(worst, float(np.abs(a - b).max()))
                where += " %s: %d of %d differ" % (k, int(bad.sum()), a.size)
        record(not where, "%s, %s" % (name, mode),
               "matches the interpreter" if not where else "largest difference %.3g;%s" % (worst, where))


def bundle_checks(chain, rng):
    n = 3001
    x = rng.standard_normal(n).astype(np.float32)
    arrays = {"x": x, "tmp": np.full(n, np.nan, np.float32), "out": np.full(2 * n, np.nan, np.float32)}
    scalars = {"n": n, "twice": 1}
    ref, ref_out, _ = run_graph(chain, "chain", arrays, scalars, "interp", tag="bundle-ref")
    kgraph = os.path.join(ARGS.work, "chain.kgraph")
    p, _ = dslc([chain, "--kernel", "chain", "--emit=bundle", "--target=sm_90", "-o", kgraph])
    if ref.returncode or p.returncode:
        record(False, "graph bundle", "exit %d/%d: %s" % (ref.returncode, p.returncode, (ref.stderr + p.stderr)[-400:]))
        return
    for mode in ("persistent", "cuda-graph", "launches"):
        folder = os.path.join(ARGS.work, "bundle-" + mode)
        os.makedirs(folder, exist_ok=True)
        args = [ARGS.kiln_run, kgraph, "--graph-mode=" + mode, "--repeat", "3", "--time"]
        for name, a in arrays.items():
            np.save(os.path.join(folder, name + ".npy"), a)
            args += ["--arg", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
        args += ["--arg", "n=%d" % n, "--arg", "twice=1"]
        k = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if k.returncode:
            record(False, "graph bundle, kiln-run " + mode, "exit %d: %s" % (k.returncode, k.stderr.strip()[-400:]))
            continue
        bad = [name for name in arrays
               if not np.allclose(np.load(os.path.join(folder, name + ".npy")), ref_out[name], rtol=1e-5, atol=1e-6)]
        line = [l for l in k.stdout.splitlines() if "graph chain on" in l]
        record(not bad, "graph bundle, kiln-run " + mode,
               ("differ: " + ", ".join(bad)) if bad else (line[0] if line else "matches the interpreter"))


def main():
    rng = np.random.default_rng()
    example = os.path.join(ARGS.repo, "examples", "graph.kiln")
    chain = os.path.join(ARGS.repo, "tests", "graphs", "chain.kiln")

    # The example: RMS norm then a SiLU residual, 3 layers, rows that fit the default
    # tile and longer ones with NP raised.
    for rows, n, defines in ((96, 200, ()), (33, 700, ("-D", "NP=1024"))):
        x = rng.standard_normal((rows, n)).astype(np.float32)
        compare("examples/graph.kiln %dx%d" % (rows, n), example, "residual_stack",
                {"x": x, "h": np.full((rows, n), np.nan, np.float32)}, {"rows": rows, "n": n, "eps": 1e-5},
                defines)
    # 32 layers: 64 launches whose tasks depend across programs.
    x = rng.standard_normal((64, 256)).astype(np.float32)
    compare("examples/graph.kiln, 32 layers", example, "residual_stack",
            {"x": x, "h": np.zeros((64, 256), np.float32)}, {"rows": 64, "n": 256, "eps": 1e-5},
            ("-D", "LAYERS=32"))
    # Views of one buffer, consts by name, and the `if` both ways; sizes off the blocks.
    for n, twice in ((1000, 1), (77, 0), (4099, 1)):
        x = rng.standard_normal(n).astype(np.float32)
        compare("chain n=%d twice=%d" % (n, twice), chain, "chain",
                {"x": x, "tmp": np.full(n, np.nan, np.float32), "out": np.full(2 * n, np.nan, np.float32)},
                {"n": n, "twice": twice})
    # The decode chain (stdlib/decode_chain.kiln), small: 4 layers of 512, bf16 weights.
    n, layers = 512, 4
    w = (rng.standard_normal(layers * n * n) / np.sqrt(n)).astype(np.float32)
    w16 = ((w.view(np.uint32) + 0x8000) >> 16).astype(np.uint16).view(np.dtype("V2"))
    compare("stdlib/decode_chain.kiln 4x512", os.path.join(ARGS.repo, "stdlib", "decode_chain.kiln"),
            "decode_chain", {"w": w16, "g": (1 + 0.1 * rng.standard_normal(layers * n)).astype(np.float32),
                             "h": rng.standard_normal(n).astype(np.float32), "y": np.zeros(2 * n, np.float32)},
            {"n": n, "eps": 1e-5}, ("-D", "LAYERS=4", "-D", "NP=512", "-D", "BK=128"), rtol=1e-3, atol=1e-4)
    # The Llama-shaped decode step (stdlib/llama_decode.kiln), two small layers; the
    # attention's later segments are empty.
    sys.path.insert(0, os.path.join(ARGS.repo, "tests", "graphs"))
    import llama_reference
    shape = {"LAYERS": 2, "HID": 256, "NQ": 8, "NKV": 2, "D": 64, "FF": 512, "SEGS": 4}
    arrays, scalars = llama_reference.inputs(rng, shape["LAYERS"], shape["HID"], shape["NQ"], shape["NKV"],
                                             shape["D"], shape["FF"], 200, 150)
    arrays.update(llama_reference.scratch(shape["NQ"], shape["NKV"], shape["D"], shape["FF"], shape["SEGS"], 0.0))
    compare("stdlib/llama_decode.kiln, 2 small layers", os.path.join(ARGS.repo, "stdlib", "llama_decode.kiln"),
            "llama_decode", arrays, scalars, [a for k, v in shape.items() for a in ("-D", "%s=%d" % (k, v))],
            rtol=1e-2, atol=1e-3)  # a new cache row may round to the neighbouring bf16
    # A graph that takes a block mask (stdlib/encoder_layer.kiln): a BigBird mask built on
    # the GPU from the stdlib predicate, passed whole to the sparse attention; the
    # projections run on tensor cores in another order than the interpreter's, so the
    # bf16 activations agree to a few of their roundings.
    t, heads, d, ff = 256, 2, 64, 512
    e = heads * d
    normal = lambda shape, scale: bf16_bits(rng.normal(0.0, scale, shape))
    arrays = {"x": normal((t, e), 1.0), "w_qkv": normal((e, 3 * e), 0.08), "b_qkv": normal(3 * e, 0.1),
              "key_bias": np.where(rng.random(t) < 0.1, -4.0, 0.0).astype(np.float32),
              "w_o": normal((e, e), 0.08), "b_o": normal(e, 0.1), "g1": bf16_bits(rng.uniform(0.8, 1.2, e)),
              "be1": normal(e, 0.1), "w_1": normal((e, ff), 0.08), "b_1": normal(ff, 0.1),
              "w_2": normal((ff, e), 0.06), "b_2": normal(e, 0.1), "g2": bf16_bits(rng.uniform(0.8, 1.2, e)),
              "be2": normal(e, 0.1), "y": normal((t, e), 0.0), "qkv": normal((t, 3 * e), 0.0),
              "a": normal((t, e), 0.0), "h": normal((t, e), 0.0), "f": normal((t, ff), 0.0)}
    compare("stdlib/encoder_layer.kiln, a graph with a BigBird block mask",
            os.path.join(ARGS.repo, "stdlib", "encoder_layer.kiln"), "encoder_layer", arrays,
            {"mask": "bigbird(%d,%d,6,3,16,30,7)" % (t, t), "T": t, "F": ff, "scale": d ** -0.5, "eps": 1e-5},
            ("-D", "H=%d" % heads, "-D", "D=%d" % d, "-D", "NP=128"), rtol=0.03, atol=0.06, bf16=True)
    # Five runs in one process: the counters keep growing; the graph is idempotent, so
    # the last run's results must still be the interpreter's.
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    compare("chain, 5 runs of the persistent kernel", chain, "chain",
            {"x": x, "tmp": np.zeros(n, np.float32), "out": np.zeros(2 * n, np.float32)}, {"n": n, "twice": 1},
            extra_gpu=("--repeat", "5"))

    # The same graph as a graph bundle, run by kiln-run (no compiler) in the three modes.
    bundle_checks(chain, rng)

    # The watchdog: a wait that can never be met stops the run, reports it, changes no file.
    arrays = {"x": x, "tmp": np.zeros(n, np.float32), "out": np.zeros(2 * n, np.float32)}
    p, out, seconds = run_graph(chain, "chain", arrays, {"n": n, "twice": 1}, "cuda",
                                ("--graph-mode=persistent", "--graph-wait-timeout=300"),
                                env={"KILN_TEST_GRAPH_UNREACHABLE_WAIT": "1"}, tag="watchdog")
    stopped = "the persistent kernel stopped" in p.stderr and "waited more than 300 ms" in p.stderr
    unchanged = all(np.array_equal(out[k], arrays[k]) for k in arrays)
    record(p.returncode == 1 and stopped and unchanged and seconds < 60, "watchdog",
           "exit %d after %.1f s, %s; files %s" % (p.returncode, seconds,
                                                    (re.findall(r"the persistent kernel stopped[^\"\n]*", p.stderr)
                                                     or [p.stderr.strip()[-300:]])[0],
                                                    "unchanged" if unchanged else "CHANGED"))

    # Time per run, 64 launches of small kernels: the launch overhead a megakernel removes.
    x = rng.standard_normal((8, 1024)).astype(np.float32)
    # The persistent kernel also with fewer workers than the GPU holds (each one polls).
    for mode, extra in (("persistent", ()), ("persistent", ("--graph-workers=16",)),
                        ("persistent", ("--graph-workers=132",)), ("cuda-graph", ()), ("launches", ())):
        p, _, _ = run_graph(example, "residual_stack", {"x": x, "h": np.zeros((8, 1024), np.float32)},
                            {"rows": 8, "n": 1024, "eps": 1e-5}, "cuda",
                            ("--graph-mode=" + mode, "--repeat", "50", "--time") + extra,
                            ("-D", "LAYERS=32", "-D", "NP=1024"), tag="time-" + mode)
        line = [l for l in p.stderr.splitlines() if "graph residual_stack on" in l]
        record(p.returncode == 0 and bool(line), "time, 32 layers of 8x1024, " + " ".join((mode,) + extra),
               line[0] if line else p.stderr.strip()[-300:])
    # The trace: one slice per task on its worker's row, none overlapping on a row.
    trace = os.path.join(ARGS.work, "trace.json")
    p, _, _ = run_graph(example, "residual_stack", {"x": x, "h": np.zeros((8, 1024), np.float32)},
                        {"rows": 8, "n": 1024, "eps": 1e-5}, "cuda", ("--trace", trace),
                        ("-D", "LAYERS=32", "-D", "NP=1024"), tag="trace")
    problem = "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]) if p.returncode else ""
    if not problem:
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        slices = [e for e in events if e.get("cat") == "task"]
        rows = {}
        for e in slices:
            rows.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
        overlapping = sum(1 for r in rows.values() for a, b in zip(sorted(r), sorted(r)[1:]) if b[0] < a[1] - 1e-3)
        if len(slices) != 768 or overlapping or any(e["dur"] < 0 for e in slices):
            problem = "%d task slices (want 768), %d overlapping on a row" % (len(slices), overlapping)
    summary = [l for l in p.stderr.splitlines() if "trace of graph" in l]
    record(not problem, "trace, 32 layers of 8x1024", problem or (summary[0] if summary else "no summary line"))
    return exit_status()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_dslc_arguments(parser)
    parser.add_argument("--kiln-run", required=True)
    ARGS = parser.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    sys.exit(main())
