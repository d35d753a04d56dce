#!/usr/bin/python3
#===- test_run_graph.py - `dslc run` of a graph on the interpreter --------------===#
#
# A graph's meaning is its launches run one after another (LANGUAGE.md, "Persistent
# graphs"). `dslc run --kernel GRAPH` runs it so on the reference interpreter: each
# launch sees the stores of the ones before it, static_range loops and `if`s on scalar
# parameters choose the launches, consts given by name make their own instances, and
# pointer arithmetic passes views of a buffer. Compared with NumPy on random inputs. A
# graph takes no --grid; a launch that fails reports its error with a note at the
# launch and leaves every file as it was. --explain-graph prints the dependencies
# between launches. On the stand-in CUDA driver (which runs no code), the GPU path's
# host side: one launch of the persistent kernel over the resident workers, or the
# launches one by one, and the --graph-* options' errors. The GPU runs the same graphs
# for real (tests/gpu/jit-on-device.sh).
#
# Usage: test_run_graph.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

with open(os.path.join(clitest.REPO, "tests", "graphs", "chain.kiln"), encoding="utf-8") as f:
    CHAIN = f.read()

# The second launch reads past the end of x when n exceeds its length.
OVERRUN = """\
kernel copy(src: *f32, dst: *f32, n: i32) {
    let offs = program_id(0) * 32 + arange(0, 32);
    store(dst + offs, load(src + offs, mask = offs < n), mask = offs < n);
}

graph twice(x: *f32, y: *f32, n: i32) {
    launch copy[(1,)](x, y, 32);
    launch copy[((n + 31) / 32,)](x, y, n);
}
"""


class RunGraph(clitest.CliTestCase):
    def setUp(self):
        super().setUp()
        self.rng = np.random.default_rng()

    def run_chain(self, n, twice):
        self.write("chain.kiln", CHAIN)
        x = self.rng.standard_normal(n).astype(np.float32)
        self.npy("x.npy", x)
        self.npy("tmp.npy", np.full(n, np.nan, np.float32))
        self.npy("out.npy", np.full(2 * n, np.nan, np.float32))
        before = self.mtime_ns("x.npy")
        result = self.dslc("run", "chain.kiln", "--kernel", "chain", "--arg", "x=x.npy", "--arg", "tmp=tmp.npy",
                           "--arg", "out=out.npy", "--arg", "n=%d" % n, "--arg", "twice=%d" % twice)
        self.assertOk(result)
        self.assertIn("running on the reference interpreter", result.stderr)
        tmp = x * np.float32(2)
        out = np.concatenate([tmp * np.float32(3), tmp * np.float32(3)])
        if twice:
            out[:n] += out[n:]
        np.testing.assert_array_equal(self.load("tmp.npy"), tmp)
        np.testing.assert_array_equal(self.load("out.npy"), out)
        np.testing.assert_array_equal(self.load("x.npy"), x)
        self.assertEqual(self.mtime_ns("x.npy"), before, "a buffer no launch stored into was rewritten")

    def test_launches_run_in_order(self):
        # Sizes that are not multiples of either block, and the `if` both ways.
        for n, twice in ((1000, 1), (77, 0), (129, 1)):
            with self.subTest(n=n, twice=twice):
                self.run_chain(n, twice)

    def rejected(self, code, *args, message=None, env=None):
        before = clitest.snapshot(self.tmp)
        errors = self.assertUserError(self.dslc(*args, "--diagnostics=json", env=env), code, message)
        after = clitest.snapshot(self.tmp)
        self.assertEqual(after, before, "a rejected run changed the folder")
        return errors

    def test_a_failed_launch_changes_no_file(self):
        self.write("overrun.kiln", OVERRUN)
        self.npy("x.npy", self.rng.standard_normal(40).astype(np.float32))
        self.npy("y.npy", np.zeros(64, np.float32))
        # The first launch succeeds and stores into y; the second overruns x, so y keeps
        # its old bytes.
        errors = self.rejected("E0602", "run", "overrun.kiln", "--kernel", "twice", "--arg", "x=x.npy",
                               "--arg", "y=y.npy", "--arg", "n=64")
        notes = errors[0].get("notes", [])
        self.assertTrue(any(n["line"] == 8 and "launch of kernel 'copy' on grid (2, 1, 1)" in n["message"]
                            for n in notes), errors[0])

    def chain_args(self, n=4):
        self.write("chain.kiln", CHAIN)
        self.npy("x.npy", np.zeros(n, np.float32))
        self.npy("tmp.npy", np.zeros(n, np.float32))
        self.npy("out.npy", np.zeros(2 * n, np.float32))
        return ("run", "chain.kiln", "--kernel", "chain", "--arg", "x=x.npy", "--arg", "tmp=tmp.npy",
                "--arg", "out=out.npy", "--arg", "n=%d" % n)

    def test_graph_options_are_checked(self):
        args = self.chain_args() + ("--arg", "twice=0")
        self.rejected("E0606", *args, "--grid", "1", message="--grid is for kernels")
        self.rejected("E0900", *args, "--graph-mode=megakernel",
                      message="--graph-mode takes persistent, cuda-graph or launches")
        self.rejected("E0900", *args, "--graph-workers=0", message="--graph-workers needs a number")
        self.rejected("E0900", *args, "--graph-wait-timeout=soon", message="--graph-wait-timeout needs a number")
        self.rejected("E0900", *args, "--repeat=-1", message="--repeat needs a number")
        self.rejected("E0900", *args, "--device", "interp", "--trace", "t.json", message="runs on the interpreter")
        # No driver: the usual device error, with the interpreter as the way out.
        errors = self.rejected("E0901", *args, "--device", "cuda")
        self.assertIn("--device interp runs the graph", errors[0].get("hint", ""))

    def test_on_the_stand_in_level_zero_driver(self):
        # Level Zero runs a graph launch by launch (SPIR-V promises no forward progress
        # between work-groups); the persistent kernel and CUDA graphs are refused there.
        if not clitest.FAKE_DRIVERS.get("ze"):
            self.skipTest("the stand-in Level Zero driver was not given (--fake-ze)")
        env = {"KILN_ZE_LIBRARY": clitest.FAKE_DRIVERS["ze"]}
        args = self.chain_args(200) + ("--arg", "twice=1", "--device", "ze")
        r = self.dslc(*args, "--time", env=env)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"\(Level Zero, spirv64\), launch by launch, 4 launches, 12 tasks, 1 run: ")
        for mode in ("persistent", "cuda-graph"):
            with self.subTest(mode=mode):
                self.rejected("E0109", *args, "--graph-mode=" + mode, env=env)

    def test_on_the_stand_in_cuda_driver(self):
        if not clitest.FAKE_DRIVERS.get("cuda"):
            self.skipTest("the stand-in CUDA driver was not given (--fake-cuda)")
        env = {"KILN_CUDA_LIBRARY": clitest.FAKE_DRIVERS["cuda"]}
        n = 200
        args = self.chain_args(n) + ("--arg", "twice=1", "--device", "cuda", "--time", "--repeat", "3")
        before = clitest.snapshot(self.tmp)
        # The default: one persistent kernel of 2 programs per SM (what the stand-in's
        # occupancy says) over 132 SMs, running 4 launches of 4 + 2 + 2 + 4 programs.
        r = self.dslc(*args, env=env)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"dslc: graph chain on Fake H200 \(CUDA, sm_90\), one persistent kernel of "
                                   r"264 workers, 4 launches, 12 tasks, 3 runs: min ")
        # The stand-in runs no code, so no file changes.
        self.assertEqual(clitest.snapshot(self.tmp), before)
        r = self.dslc(*args, "--graph-workers=7", env=env)
        self.assertOk(r)
        self.assertIn("one persistent kernel of 7 workers", r.stderr)
        r = self.dslc(*args, "--graph-mode=launches", env=env)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"launch by launch, 4 launches, 12 tasks, 3 runs: ")
        # Recorded once as a CUDA graph, replayed per run: each run is still the four
        # launches' quarter milliseconds of stand-in time.
        r = self.dslc(*args, "--graph-mode=cuda-graph", env=env)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"its launches in one CUDA graph, 4 launches, 12 tasks, 3 runs: min 1\.0000 ms")
        # Checked mode runs in every mode: the persistent kernel checks its tasks too.
        r = self.dslc(*args, "--checked", env=env)
        self.assertOk(r)
        self.assertIn("one persistent kernel of 264 workers, 4 launches, 12 tasks, 3 runs: ", r.stderr)
        r = self.dslc(*args, "--checked", "--graph-mode=cuda-graph", env=env)
        self.assertOk(r)
        self.assertIn("its launches in one CUDA graph", r.stderr)
        r = self.dslc(*args, "--checked", "--graph-mode=launches", env=env)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"launch by launch, 4 launches, 12 tasks, 3 runs: ")
        # --trace: a Chrome trace of the persistent run (the stand-in's timestamps are
        # whatever its memory held, so only the shape is checked), and a summary line.
        r = self.dslc(*args, "--trace", "trace.json", env=env)
        self.assertOk(r)
        self.assertIn("dslc: trace of graph chain in trace.json: 12 tasks on 264 workers over ", r.stderr)
        with open(self.path("trace.json")) as f:
            events = json.load(f)["traceEvents"]
        self.assertEqual(sum(1 for e in events if e.get("cat") == "task"), 12)
        self.assertEqual(sum(1 for e in events if e.get("name") == "thread_name"), 264)
        self.rejected("E0900", *args, "--trace", "t.json", "--graph-mode=launches", env=env,
                      message="--trace records the tasks of a persistent kernel")
        # A grid the graph computes as empty (n = 0) is refused at the launch, before
        # anything runs, as the interpreter refuses it.
        errors = self.rejected("E0606", *self.chain_args(0), "--arg", "twice=0", "--device", "cuda", env=env)
        self.assertEqual(errors[0]["line"], 18)
        self.assertIn("launches kernel 'scale' at chain.kiln:18:5 on grid (0, 1, 1)", errors[0]["message"])
        # With the `if` false, three launches.
        r = self.dslc(*self.chain_args(n), "--arg", "twice=0", "--device", "cuda", "--time", env=env)
        self.assertOk(r)
        self.assertIn("3 launches, 8 tasks, 1 run: ", r.stderr)

    def graph_bundle(self, *extra):
        """chain.kiln's graph as a graph bundle, and kiln-run's arguments for n = 200."""
        self.chain_args(200)
        self.assertOk(self.dslc("chain.kiln", "--kernel", "chain", "--emit=bundle", "-o", "chain.kgraph", *extra))
        return ("chain.kgraph", "--arg", "x=x.npy", "--arg", "tmp=tmp.npy", "--arg", "out=out.npy", "--arg", "n=200")

    def kiln_run_rejected(self, code, *args, message=None, env=None):
        before = clitest.snapshot(self.tmp)
        errors = self.assertUserError(self.kiln_run(*args, "--diagnostics=json", env=env), code, message)
        self.assertEqual(clitest.snapshot(self.tmp), before, "a rejected run changed the folder")
        return errors

    def test_kiln_run_checks_a_graph_bundle(self):
        # What needs no GPU: --describe, and every error found before a device opens.
        args = self.graph_bundle()
        r = self.kiln_run("--describe", "chain.kgraph")
        self.assertOk(r)
        self.assertIn("signature   chain(x: *f32, tmp: *f32, out: *f32, n: i32, twice: i32)", r.stdout)
        self.assertIn("launches    4 (1 under an `if`), 4 dependencies between them", r.stdout)
        self.assertIn("persistent  yes", r.stdout)
        self.kiln_run_rejected("E0606", *args, "--arg", "twice=1", "--grid", "4",
                               message="launches its kernels on the grids it computes")
        self.kiln_run_rejected("E0900", *args, "--arg", "twice=1", "--graph-mode=fast",
                               message="--graph-mode takes persistent, cuda-graph or launches")
        self.kiln_run_rejected("E0900", *args, "--arg", "twice=1", "--graph-mode=launches", "--trace", "t.json",
                               message="--trace records the tasks of a persistent kernel")
        self.kiln_run_rejected("E0600", *args, message="missing argument for parameter 'twice: i32'")
        # The kernels compute n = 0 into empty grids: refused before anything runs.
        self.kiln_run_rejected("E0606", "chain.kgraph", "--arg", "x=x.npy", "--arg", "tmp=tmp.npy", "--arg",
                               "out=out.npy", "--arg", "n=0", "--arg", "twice=1",
                               message=r"launches kernel 'scale' at chain.kiln:18:5 on grid \(0, 1, 1\)")
        # A damaged file, and graph options on a kernel bundle.
        data = bytearray(open(self.path("chain.kgraph"), "rb").read())
        data[len(data) // 2] ^= 0x40
        open(self.path("bad.kgraph"), "wb").write(bytes(data))
        self.kiln_run_rejected("E0902", "bad.kgraph", *args[1:], "--arg", "twice=1", message="checksum mismatch")
        self.write("k.kiln", "kernel k(p: *f32) { store(p, 1.0); }\n")
        self.assertOk(self.dslc("k.kiln", "--emit=bundle", "-o", "k.kbin"))
        self.kiln_run_rejected("E0900", "k.kbin", "--grid", "1", "--arg", "p=x.npy", "--graph-mode=launches",
                               message="are for graph bundles")
        # For SPIR-V the bundle holds no persistent kernel.
        self.assertOk(self.dslc("chain.kiln", "--kernel", "chain", "--emit=bundle", "--target=spirv64", "-o",
                                "chain-spirv.kgraph"))
        r = self.kiln_run("--describe", "chain-spirv.kgraph")
        self.assertOk(r)
        self.assertIn("persistent  no", r.stdout)
        self.kiln_run_rejected("E0109", "chain-spirv.kgraph", *args[1:], "--arg", "twice=1",
                               "--graph-mode=persistent", message="holds no persistent kernel")

    def test_kiln_run_on_the_stand_in_cuda_driver(self):
        if not clitest.FAKE_DRIVERS.get("cuda"):
            self.skipTest("the stand-in CUDA driver was not given (--fake-cuda)")
        env = {"KILN_CUDA_LIBRARY": clitest.FAKE_DRIVERS["cuda"]}
        args = self.graph_bundle() + ("--time", "--repeat", "3")
        before = clitest.snapshot(self.tmp)
        r = self.kiln_run(*args, "--arg", "twice=1", env=env)
        self.assertOk(r)
        self.assertRegex(r.stdout, r"kiln-run: graph chain on Fake H200 \(CUDA, sm_90\), one persistent kernel of "
                                   r"264 workers, 4 launches, 12 tasks, 3 runs: min ")
        self.assertEqual(clitest.snapshot(self.tmp), before)  # the stand-in runs no code
        r = self.kiln_run(*args, "--arg", "twice=0", "--graph-mode=launches", env=env)
        self.assertOk(r)
        self.assertRegex(r.stdout, r"launch by launch, 3 launches, 8 tasks, 3 runs: ")
        r = self.kiln_run(*args, "--arg", "twice=1", "--graph-mode=cuda-graph", env=env)
        self.assertOk(r)
        self.assertRegex(r.stdout, r"its launches in one CUDA graph, 4 launches, 12 tasks, 3 runs: ")
        r = self.kiln_run(*args, "--arg", "twice=1", "--trace", "trace.json", env=env)
        self.assertOk(r)
        self.assertIn("kiln-run: trace of graph chain in trace.json: 12 tasks on 264 workers over ", r.stdout)
        with open(self.path("trace.json")) as f:
            events = json.load(f)["traceEvents"]
        self.assertEqual(sum(1 for e in events if e.get("cat") == "task"), 12)

    def test_the_example(self):
        # examples/graph.kiln against NumPy in double precision.
        with open(os.path.join(clitest.REPO, "examples", "graph.kiln"), encoding="utf-8") as f:
            self.write("graph.kiln", f.read())
        # Rows that fit the default tile, and longer ones with the graph's const raised.
        for rows, n, defines in ((5, 200, ()), (3, 700, ("-D", "NP=1024"))):
            with self.subTest(rows=rows, n=n):
                x = self.rng.standard_normal((rows, n)).astype(np.float32)
                self.npy("x.npy", x)
                self.npy("h.npy", np.zeros((rows, n), np.float32))
                self.assertOk(self.dslc("run", "graph.kiln", "--kernel", "residual_stack", *defines, "--arg",
                                        "x=x.npy", "--arg", "h=h.npy", "--arg", "rows=%d" % rows, "--arg",
                                        "n=%d" % n, "--arg", "eps=1e-5"))
                want = x.astype(np.float64)
                for _ in range(3):
                    h = want / np.sqrt((want * want).mean(axis=1, keepdims=True) + 1e-5)
                    want = want + h / (1 + np.exp(-h))
                np.testing.assert_allclose(self.load("x.npy"), want, rtol=1e-5, atol=1e-5)

    def test_llama_decode_step(self):
        # stdlib/llama_decode.kiln, two small layers, against tests/graphs/llama_reference.py
        # in double precision: the hidden state and the caches' new rows. Segments of the
        # attention that are empty (past the sequence) must merge to nothing.
        sys.path.insert(0, os.path.join(clitest.REPO, "tests", "graphs"))
        import llama_reference as ref
        shape = {"LAYERS": 2, "HID": 128, "NQ": 4, "NKV": 2, "D": 32, "FF": 256, "SEGS": 4}
        for pos, cap in ((150, 160), (5, 8)):
            with self.subTest(pos=pos):
                arrays, scalars = ref.inputs(self.rng, shape["LAYERS"], shape["HID"], shape["NQ"], shape["NKV"],
                                             shape["D"], shape["FF"], cap, pos)
                arrays.update(ref.scratch(shape["NQ"], shape["NKV"], shape["D"], shape["FF"], shape["SEGS"]))
                args = []
                for name, a in arrays.items():
                    self.npy(name + ".npy", a)
                    args += ["--arg", "%s=%s.npy" % (name, name)]
                for name, v in scalars.items():
                    args += ["--arg", "%s=%s" % (name, v)]
                defines = [a for k, v in shape.items() for a in ("-D", "%s=%d" % (k, v))]
                self.assertOk(self.dslc("run", os.path.join(clitest.REPO, "stdlib", "llama_decode.kiln"),
                                        "--kernel", "llama_decode", *defines, *args))
                x, kc, vc = ref.step(arrays, pos, scalars["eps"], shape["LAYERS"], shape["NQ"], shape["NKV"],
                                     shape["D"], shape["FF"])
                np.testing.assert_allclose(self.load("x.npy"), x, rtol=1e-4, atol=1e-4)
                # The caches: rows before pos unchanged bit for bit, row pos within a bf16 step.
                got_k, got_v = ref.from_bf16(self.load("kc.npy")), ref.from_bf16(self.load("vc.npy"))
                np.testing.assert_array_equal(got_k[:, :, :pos], ref.from_bf16(arrays["kc"])[:, :, :pos])
                np.testing.assert_array_equal(got_v[:, :, pos + 1:], ref.from_bf16(arrays["vc"])[:, :, pos + 1:])
                np.testing.assert_allclose(got_k[:, :, pos], kc[:, :, pos], rtol=1e-2, atol=1e-3)
                np.testing.assert_allclose(got_v[:, :, pos], vc[:, :, pos], rtol=1e-2, atol=1e-3)

    def test_explain_graph(self):
        self.write("chain.kiln", CHAIN)
        result = self.dslc("chain.kiln", "--kernel", "chain", "--explain-graph", "-o", "chain.tir")
        self.assertOk(result)
        self.assertIn("graph 'chain': 4 launches", result.stderr)
        self.assertIn("after launch 0: read-after-write on tmp", result.stderr)
        self.assertIn("graph @chain", open(self.path("chain.tir")).read())
        # Without a graph there is nothing to explain.
        self.rejected("E0106", "chain.kiln", "--explain-graph", message="--explain-graph explains a graph")

    def test_arguments_are_checked_like_a_kernels(self):
        self.write("chain.kiln", CHAIN)
        self.npy("x.npy", np.zeros(8, np.float32))
        self.npy("i.npy", np.zeros(8, np.int32))
        self.rejected("E0600", "run", "chain.kiln", "--kernel", "chain", "--arg", "x=x.npy", message="tmp")
        self.rejected("E0601", "run", "chain.kiln", "--kernel", "chain", "--arg", "x=i.npy", "--arg", "tmp=x.npy",
                      "--arg", "out=x.npy", "--arg", "n=4", "--arg", "twice=0")
        # Named as a graph, not as a kernel.
        self.rejected("E0600", "run", "chain.kiln", "--kernel", "chain", "--arg", "nope=1",
                      message="graph 'chain' has no parameter 'nope'")


if __name__ == "__main__":
    sys.exit(clitest.main())
