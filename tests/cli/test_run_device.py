#!/usr/bin/python3
#===- test_run_device.py - `dslc run --device` and the choice of device ---------===#
#
# Without --device, `dslc run` takes CUDA, else Level Zero, else the reference
# interpreter, and says on stderr which and why (not under --diagnostics=json, where
# stderr holds only diagnostics). An explicit --device cuda|ze without its driver is an
# error (E0901, exit 1), never a silent fallback, and leaves every file alone. Through
# the stand-in drivers of tests/unit/runtime the GPU path runs end to end: code for the
# device's target, a bundle in memory, upload, launch, download — the stand-ins run no
# code, so no buffer changes and no file is rewritten.
#
# Usage: test_run_device.py --dslc build/tools/dslc [--fake-cuda PATH] [--fake-ze PATH]
#                           [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import re
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

EXAMPLES = os.path.join(clitest.REPO, "examples")
SOFTMAX = os.path.join(EXAMPLES, "softmax.kiln")

ADD = """\
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 16) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
}
"""



class RunDevice(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("add.kiln", ADD)
        self.x = np.arange(40, dtype=np.float32)
        self.npy("x.npy", self.x)
        self.npy("y.npy", np.full(40, 2, np.float32))
        self.npy("out.npy", np.zeros(40, np.float32))

    def add(self, *extra, env=None):
        return self.dslc("run", "add.kiln", "--grid", "3", "--arg", "x=x.npy", "--arg", "y=y.npy",
                         "--arg", "out=out.npy", "--arg", "n=40", *extra, env=env)

    def assertComputed(self):
        np.testing.assert_array_equal(self.load("out.npy"), self.x + 2)

    def fake(self, kind):
        path = clitest.FAKE_DRIVERS.get(kind)
        if not path:
            self.skipTest("the stand-in %s driver was not given (--fake-%s)" % (kind, kind))
        return {"KILN_CUDA_LIBRARY" if kind == "cuda" else "KILN_ZE_LIBRARY": path}


class Default(RunDevice):

    def test_no_driver_runs_on_the_interpreter_and_says_why(self):
        r = self.add(env=clitest.NO_DRIVER_ENV)
        self.assertOk(r)
        self.assertComputed()
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^dslc: running on the reference interpreter: no CUDA driver: cannot load "
                                   r"/nonexistent/libcuda\.so\.1 .*; no Level Zero driver: cannot load "
                                   r"/nonexistent/libze_loader\.so\.1")

    def test_auto_is_the_default(self):
        self.assertOk(self.add("--device", "auto"))
        self.assertIn("running on the reference interpreter", self.add("--device", "auto").stderr)

    def test_explicit_interp_is_silent(self):
        r = self.add("--device", "interp")
        self.assertOk(r)
        self.assertEqual(r.stderr, "")
        self.assertComputed()

    def test_json_keeps_stderr_for_diagnostics(self):
        r = self.add("--diagnostics=json")
        self.assertOk(r)
        self.assertEqual(r.stderr, "")
        self.assertComputed()

    def test_interpreter_errors_stay_the_interpreters(self):
        # Out of bounds (n larger than the buffers): E0602 from the interpreter, no file written.
        before = clitest.snapshot(self.tmp)
        r = self.dslc("run", "add.kiln", "--grid", "3", "--arg", "x=x.npy", "--arg", "y=y.npy",
                      "--arg", "out=out.npy", "--arg", "n=48", "--diagnostics=json")
        self.assertUserError(r, "E0602")
        self.assertEqual(clitest.snapshot(self.tmp), before)


class ExplicitWithoutDriver(RunDevice):

    def test_cuda(self):
        before = clitest.snapshot(self.tmp)
        r = self.add("--device", "cuda", "--diagnostics=json", env=clitest.NO_DRIVER_ENV)
        errors = self.assertUserError(r, "E0901", "no CUDA driver")
        self.assertIn("--device interp", errors[0]["hint"])
        self.assertEqual(clitest.snapshot(self.tmp), before)

    def test_level_zero(self):
        before = clitest.snapshot(self.tmp)
        r = self.add("--device", "ze", "--diagnostics=json", env=clitest.NO_DRIVER_ENV)
        self.assertUserError(r, "E0901", "no Level Zero driver")
        self.assertEqual(clitest.snapshot(self.tmp), before)

    def test_text_form(self):
        r = self.add("--device", "cuda", env=clitest.NO_DRIVER_ENV)
        self.assertExit(r, 1)
        self.assertRegex(r.stderr, r"^dslc: error\[E0901\]: no CUDA driver: cannot load /nonexistent/libcuda\.so\.1")
        self.assertIn("help: --device interp runs the kernel on the reference interpreter", r.stderr)

    def test_argument_errors_come_first(self):
        r = self.dslc("run", "add.kiln", "--grid", "3", "--device", "cuda", "--diagnostics=json")
        self.assertUserError(r, "E0600", "missing argument")

    def test_bad_device_and_max_steps(self):
        self.assertUserError(self.add("--device", "gpu", "--diagnostics=json"), "E0600", "unknown device 'gpu'")
        self.assertUserError(self.add("--device", "ze", "--max-steps", "5", "--diagnostics=json"), "E0600",
                             "--max-steps")

    def test_help_lists_the_devices(self):
        r = self.dslc("run", "--help")
        self.assertOk(r)
        self.assertRegex(r.stdout, r"--device=<cuda\|ze\|interp>")


class OnFakeCuda(RunDevice):

    def test_default_picks_cuda_and_says_so(self):
        env = self.fake("cuda")
        before = clitest.snapshot(self.tmp)
        r = self.add(env=env)
        self.assertOk(r)
        self.assertEqual(r.stderr.splitlines(), ["dslc: running on Fake H200 (CUDA, sm_90): a CUDA device is present "
                                                 "(the order is CUDA, Level Zero, the interpreter)"])
        # The stand-in runs no code: out.npy did not change, so it is not rewritten.
        self.assertEqual(clitest.snapshot(self.tmp), before)

    def test_explicit_cuda(self):
        r = self.add("--device", "cuda", env=self.fake("cuda"))
        self.assertOk(r)
        self.assertEqual(r.stderr, "")

    def test_time_passes_show_codegen_and_the_launch(self):
        r = self.add("--device", "cuda", "--time-passes", env=self.fake("cuda"))
        self.assertOk(r)
        # A 9.0 device runs the most specific code: sm_90a.
        for stage in ("frontend", r"codegen: sm_90a", "emit: bundle", r"run: load the kernel \(sm_90\)",
                      "run: upload", "run: launch and wait", "run: download"):
            self.assertRegex(r.stderr, stage)

    def test_examples_run(self):
        env = self.fake("cuda")
        self.npy("a.npy", np.zeros((64, 1000), np.float32))
        self.npy("b.npy", np.zeros((64, 1000), np.float32))
        r = self.dslc("run", SOFTMAX, "--grid", "64", "--arg", "x=a.npy", "--arg", "y=b.npy", "--arg", "n_cols=1000",
                      "--arg", "row_stride=1000", "--device", "cuda", env=env)
        self.assertOk(r)

    def test_unsupported_construct_is_located(self):
        self.write("u.tir", clitest.UNSUPPORTED_TIR)
        self.npy("p.npy", np.zeros(1, np.float32))
        r = self.dslc("run", "u.tir", "--grid", "1", "--arg", "x=p.npy", "--device", "cuda", "--diagnostics=json",
                      env=self.fake("cuda"))
        errors = self.assertUserError(r, "E0109")
        self.assertEqual((errors[0]["file"], errors[0]["line"]), ("u.tir", 5))
        # The interpreter runs it.
        self.assertOk(self.dslc("run", "u.tir", "--grid", "1", "--arg", "x=p.npy", "--device", "interp"))
        self.assertNotEqual(self.load("p.npy")[0], 0.0)

    def test_scalars_of_every_kind(self):
        self.write("s.kiln", "kernel s(p: *f32, n: i64, u: u32, f: f32, h: bf16, b: bool) { store(p, f); }\n")
        self.npy("p.npy", np.zeros(1, np.float32))
        r = self.dslc("run", "s.kiln", "--grid", "1", "--arg", "p=p.npy", "--arg", "n=-9223372036854775808",
                      "--arg", "u=4294967295", "--arg", "f=0.1", "--arg", "h=1e-3", "--arg", "b=true",
                      "--device", "cuda", env=self.fake("cuda"))
        self.assertOk(r)


class OnFakeLevelZero(RunDevice):

    def test_default_picks_level_zero_without_cuda(self):
        env = self.fake("ze")
        r = self.add(env=env)
        self.assertOk(r)
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^dslc: running on .* \(Level Zero, spirv64\): no CUDA driver: cannot load "
                                   r"/nonexistent/libcuda\.so\.1")

    def test_explicit_ze_with_time_passes(self):
        r = self.add("--device", "ze", "--time-passes", env=self.fake("ze"))
        self.assertOk(r)
        self.assertRegex(r.stderr, r"codegen: spirv64")
        self.assertRegex(r.stderr, r"run: load the kernel \(spirv64\)")


if __name__ == "__main__":
    clitest.main()
