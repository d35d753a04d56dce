#!/usr/bin/python3
#===- test_codegen_options.py - dslc's code-generation options -----------------===#
#
# --emit=llvm|ptx|spirv|spirv-asm|bundle and --target: the defaults, every accepted
# combination, every rejected one (E0900, exit 1, nothing written), binary output refused
# on a terminal (through a pseudo-terminal), -o into a missing folder, a file with
# several kernels, --assume-multiple and its errors, --time-passes naming the code
# generation, --verify-diagnostics over code-generation errors, --num-warps and
# --num-stages, -o through a symlink and into a pipe, and a fuzz of option combinations
# that must never crash.
#
# Usage: test_codegen_options.py --dslc build/tools/dslc [--kiln-run PATH] [unittest options]
#
#===---------------------------------------------------------------------------===#
import itertools
import json
import os
import pty
import random
import re
import shutil
import subprocess
import sys
import threading

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

EXAMPLES = os.path.join(clitest.REPO, "examples")
SOFTMAX = os.path.join(EXAMPLES, "softmax.kiln")
SPIRV_MAGIC = b"\x03\x02\x23\x07"  # 0x07230203, little-endian
BUNDLE_MAGIC = b"KILNBNDL"

TWO = """\
kernel first(p: *f32, n: i32) { store(p, n.to(f32)); }
kernel second(p: *f32, scale: f32, flag: bool) { store(p, scale); }
"""

# Every kind of parameter, for --assume-multiple.
PARAMS = """\
kernel k(p: *f32, n: i32, m: u64, s: i8, f: f32, b: bool, const C: i32 = 4) {
    let offs = arange(0, 16);
    store(p + offs * n, f, mask = offs < C);
}
"""


CODEGEN_EMITS = ("llvm", "ptx", "spirv", "spirv-asm", "bundle")
TARGETS = ("sm_80", "sm_90", "sm_90a", "spirv64")


def accepted(emit, target):
    """Whether dslc accepts --emit=emit with --target=target (None: not given)."""
    if emit == "ast":
        return target is None
    if emit == "tir":  # the Tile IR as the passes compile it for the target
        return True
    if target is None or emit in ("llvm", "bundle"):
        return True
    return (target == "spirv64") == (emit in ("spirv", "spirv-asm"))


def run_on_terminal(argv, cwd):
    """Runs argv with stdout on a pseudo-terminal; returns (rc, stdout bytes, stderr)."""
    master, slave = pty.openpty()
    try:
        env = dict(os.environ, **clitest.NO_DRIVER_ENV)
        p = subprocess.Popen(argv, cwd=cwd, stdout=slave, stderr=subprocess.PIPE, env=env)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        _, err = p.communicate(timeout=clitest.TIME_LIMIT_S + 20)
        return p.returncode, b"".join(chunks), err.decode("utf-8", "replace")
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)


class EmitAndTarget(clitest.CliTestCase):

    def emit(self, *args):
        r = self.dslc(SOFTMAX, *args)
        self.assertOk(r)
        self.assertEqual(r.stderr, "", r.describe())
        return r

    def test_ptx_defaults_to_sm_90(self):
        r = self.emit("--emit=ptx")
        self.assertRegex(r.stdout, r"(?m)^\.target sm_90$")
        self.assertRegex(r.stdout, r"(?m)^\.visible \.entry softmax\($")

    def test_each_ptx_target(self):
        for target in ("sm_80", "sm_90", "sm_90a"):
            with self.subTest(target=target):
                r = self.emit("--emit=ptx", "--target=" + target)
                self.assertRegex(r.stdout, r"(?m)^\.target %s$" % target)
                self.assertIn(".entry softmax(", r.stdout)

    def test_target_alone_means_its_code(self):
        ptx = self.emit("--target=sm_80")
        self.assertRegex(ptx.stdout, r"(?m)^\.target sm_80$")
        spirv = self.dslc(SOFTMAX, "--target=spirv64")  # stdout is a pipe here
        self.assertOk(spirv)
        self.assertTrue(spirv.stdout_bytes.startswith(SPIRV_MAGIC), spirv.stdout_bytes[:16])

    def test_spirv_defaults_to_spirv64(self):
        for args in (["--emit=spirv"], ["--emit=spirv", "--target=spirv64"]):
            with self.subTest(args=args):
                r = self.dslc(SOFTMAX, *args)
                self.assertOk(r)
                self.assertTrue(r.stdout_bytes.startswith(SPIRV_MAGIC))
                self.assertEqual(len(r.stdout_bytes) % 4, 0)

    def test_spirv_asm(self):
        r = self.emit("--emit=spirv-asm")
        self.assertIn("OpMemoryModel Physical64 OpenCL", r.stdout)
        self.assertRegex(r.stdout, r'OpEntryPoint Kernel %\d+ "softmax"')

    def test_llvm_for_each_target(self):
        triples = {"sm_80": "nvptx64-nvidia-cuda", "sm_90": "nvptx64-nvidia-cuda",
                   "sm_90a": "nvptx64-nvidia-cuda", "spirv64": "spirv64"}
        default = self.emit("--emit=llvm")
        self.assertIn('target triple = "nvptx64-nvidia-cuda"', default.stdout)
        for target, triple in triples.items():
            with self.subTest(target=target):
                r = self.emit("--emit=llvm", "--target=" + target)
                self.assertIn('target triple = "%s' % triple, r.stdout)
                self.assertRegex(r.stdout, r"define (ptx|spir)_kernel void @softmax\(")

    def test_output_files(self):
        for emit, name in (("ptx", "s.ptx"), ("llvm", "s.ll"), ("spirv-asm", "s.spvasm"), ("spirv", "s.spv"),
                           ("bundle", "s.kbin")):
            with self.subTest(emit=emit):
                r = self.dslc(SOFTMAX, "--emit=" + emit, "-o", name)
                self.assertOk(r)
                self.assertEqual(r.stdout, "")
                with open(self.path(name), "rb") as f:
                    data = f.read()
                piped = self.dslc(SOFTMAX, "--emit=" + emit)
                self.assertEqual(piped.stdout_bytes, data, "-o and stdout differ for --emit=" + emit)
                if emit == "bundle":
                    self.assertTrue(data.startswith(BUNDLE_MAGIC))
                if emit == "spirv":
                    self.assertTrue(data.startswith(SPIRV_MAGIC))

    def test_tir_and_ast_are_unchanged(self):
        tir = self.dslc(SOFTMAX)
        self.assertOk(tir)
        self.assertEqual(self.dslc(SOFTMAX, "--emit=tir").stdout, tir.stdout)
        self.assertTrue(tir.stdout.startswith("kernel @softmax("))

    def test_every_combination(self):
        argvs, expect = [], []
        for emit, target in itertools.product(("ast", "tir") + CODEGEN_EMITS, (None,) + TARGETS):
            argv = [SOFTMAX, "--emit=" + emit, "--diagnostics=json", "-o", "out-%s-%s" % (emit, target)]
            if target:
                argv.append("--target=" + target)
            argvs.append(argv)
            expect.append(accepted(emit, target))
        for argv, ok, r in zip(argvs, expect, self.dslc_many(argvs)):
            with self.subTest(argv=" ".join(argv[1:])):
                if ok:
                    self.assertOk(r)
                    self.assertTrue(os.path.exists(self.path(argv[4])))
                else:
                    self.assertUserError(r, "E0900")
                    self.assertFalse(os.path.exists(self.path(argv[4])), "written despite the error")


class OptionErrors(clitest.CliTestCase):

    def rejected(self, code, *args, message=None):
        before = clitest.snapshot(self.tmp)
        r = self.dslc(*args, "--diagnostics=json")
        errors = self.assertUserError(r, code, message)
        self.assertEqual(r.stdout, "")
        self.assertEqual(clitest.snapshot(self.tmp), before, "files changed on an error")
        for e in errors:
            if code == "E0900":  # about the command line, not a place in a file
                self.assertEqual((e["file"], e["line"], e["col"]), ("", 0, 0), e)
        return errors

    def test_repeated_single_valued_options(self):
        # A repeat is refused rather than the last one winning: `--max-steps 5
        # --max-steps 0` would otherwise turn the limit off without a word.
        cases = [("--emit", [SOFTMAX, "--emit=tir", "--emit=ptx"]),
                 ("--target", [SOFTMAX, "--target=sm_80", "--target", "sm_90"]),
                 ("--kernel", [SOFTMAX, "--kernel", "softmax", "--kernel=softmax"]),
                 ("-o", [SOFTMAX, "-o", "a.tir", "-o", "b.tir"]),
                 ("--diagnostics", [SOFTMAX, "--diagnostics=json"]),  # rejected() gives it once too
                 ("--grid", ["run", SOFTMAX, "--grid", "1", "--grid", "2"]),
                 ("--max-steps", ["run", SOFTMAX, "--device", "interp", "--max-steps", "5", "--max-steps", "0"])]
        for name, args in cases:
            with self.subTest(args=args):
                self.rejected("E0900", *args, message="option '%s' is given more than once" % name)
        # Options that collect a list may repeat.
        self.assertOk(self.dslc(SOFTMAX, "-D", "BLOCK=256", "-I", ".", "-I", "."))

    def test_unknown_target(self):
        for target in ("sm_75", "", "SM_90", "sm_90 ", "spirv", "nvptx64", "sm_100"):
            with self.subTest(target=target):
                errors = self.rejected("E0900", SOFTMAX, "--target=" + target, message="unknown target")
                self.assertIn("sm_80", errors[0]["hint"])

    def test_unknown_emit(self):
        for emit in ("", "PTX", "obj", "asm", "cubin", "spir-v"):
            with self.subTest(emit=emit):
                errors = self.rejected("E0900", SOFTMAX, "--emit=" + emit, message="unknown --emit kind")
                self.assertIn("bundle", errors[0]["hint"])

    def test_emit_target_mismatch(self):
        cases = [("ptx", "spirv64", "needs an NVIDIA target"), ("spirv", "sm_90", "needs --target=spirv64"),
                 ("spirv-asm", "sm_80", "needs --target=spirv64"), ("spirv-asm", "sm_90a", "produces PTX"),
                 ("ast", "spirv64", "applies to code generation")]
        for emit, target, message in cases:
            with self.subTest(emit=emit, target=target):
                self.rejected("E0900", SOFTMAX, "--emit=" + emit, "--target=" + target, message=message)

    def test_tir_is_compiled_for_the_target(self):
        # Fusion splits a row over a thread-block cluster only where the target has them.
        chain = os.path.join(clitest.REPO, "stdlib", "softmax.kiln")
        sm90 = self.dslc(chain, "--kernel=softmax", "--emit=tir", "--target=sm_90", "--reduction-split=4")
        sm80 = self.dslc(chain, "--kernel=softmax", "--emit=tir", "--target=sm_80", "--reduction-split=4")
        self.assertOk(sm90)
        self.assertOk(sm80)
        self.assertIn("cluster_exchange", sm90.stdout)
        self.assertNotIn("cluster_exchange", sm80.stdout)
        self.assertIn("atomic_rmw", sm80.stdout)

    def test_bad_emit_and_target_reported_together(self):
        r = self.dslc(SOFTMAX, "--emit=obj", "--target=sm_75", "--diagnostics=json")
        errors = self.assertUserError(r, "E0900")
        self.assertEqual(len(errors), 2, r.describe())

    def test_binary_to_a_terminal_is_refused(self):
        for args in (["--emit=bundle"], ["--emit=spirv"], ["--target=spirv64"], ["--emit=bundle", "-o", "-"]):
            with self.subTest(args=args):
                rc, out, err = run_on_terminal([clitest.TOOLS["dslc"], SOFTMAX] + args, self.tmp)
                self.assertEqual(rc, 1, err)
                self.assertEqual(out, b"")
                self.assertRegex(err, r"^dslc: error\[E0900\]: .*not writing it to a terminal")
                self.assertIn("help: write it to a file with -o", err)

    def test_text_to_a_terminal_is_fine(self):
        rc, out, err = run_on_terminal([clitest.TOOLS["dslc"], SOFTMAX, "--emit=ptx"], self.tmp)
        self.assertEqual(rc, 0, err)
        self.assertIn(b".entry softmax(", out)

    def test_binary_to_a_pipe_or_file_is_fine(self):
        r = self.dslc(SOFTMAX, "--emit=bundle")
        self.assertOk(r)
        self.assertTrue(r.stdout_bytes.startswith(BUNDLE_MAGIC))

    def test_output_into_a_missing_folder(self):
        for emit in ("tir",) + CODEGEN_EMITS:
            with self.subTest(emit=emit):
                errors = self.rejected("E0008", SOFTMAX, "--emit=" + emit, "-o", "no/such/dir/out")
                self.assertIn("no/such/dir/out", errors[0]["message"])

    def test_output_onto_a_folder(self):
        os.mkdir(self.path("dir"))
        for emit in CODEGEN_EMITS:
            with self.subTest(emit=emit):
                self.rejected("E0008", SOFTMAX, "--emit=" + emit, "-o", "dir")

    def test_several_kernels(self):
        self.write("two.kiln", TWO)
        for emit in CODEGEN_EMITS:
            with self.subTest(emit=emit):
                errors = self.rejected("E0106", "two.kiln", "--emit=" + emit, "-o", "out")
                self.assertIn("first, second", errors[0]["message"])
                self.assertIn("--kernel", errors[0]["hint"])
        for name in ("first", "second"):
            r = self.dslc("two.kiln", "--kernel", name, "--emit=ptx")
            self.assertOk(r)
            self.assertIn(".entry %s(" % name, r.stdout)
        self.rejected("E0106", "two.kiln", "--kernel", "third", "--emit=ptx")

    def test_unsupported_construct_is_located(self):
        self.write("u.tir", clitest.UNSUPPORTED_TIR)
        for emit in CODEGEN_EMITS:
            with self.subTest(emit=emit):
                r = self.dslc("u.tir", "--emit=" + emit, "-o", "out", "--diagnostics=json")
                errors = self.assertUserError(r, "E0109")
                self.assertEqual((errors[0]["file"], errors[0]["line"]), ("u.tir", 5), errors[0])
                self.assertFalse(os.path.exists(self.path("out")))

    def test_verify_diagnostics_covers_code_generation(self):
        lines = clitest.UNSUPPORTED_TIR.splitlines(keepends=True)
        lines.insert(4, "    // expected-error@+1 E0109 {{'splat'}}\n")
        self.write("v.tir", "".join(lines))
        self.assertOk(self.dslc("v.tir", "--emit=ptx", "--verify-diagnostics"))
        self.assertOk(self.dslc("v.tir", "--emit=bundle", "--verify-diagnostics"))
        # Without code generation there is no error, so the expectation fails.
        self.assertExit(self.dslc("v.tir", "--verify-diagnostics"), 1)


class AssumeMultiple(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("k.kiln", PARAMS)

    def test_changes_the_code(self):
        plain = self.dslc(SOFTMAX, "--emit=ptx")
        strided = self.dslc(SOFTMAX, "--emit=ptx", "--assume-multiple", "row_stride=16")
        self.assertOk(plain)
        self.assertOk(strided)
        self.assertNotIn("ld.global.v4", plain.stdout)
        self.assertIn("ld.global.v4", strided.stdout)

    def test_accepted_forms(self):
        for args in (["--assume-multiple", "n=16"], ["--assume-multiple=n=1"], ["--assume-multiple", "n=0x10"],
                     ["--assume-multiple", "n=1_024"], ["--assume-multiple", "m=8", "--assume-multiple", "s=2"],
                     ["--assume-multiple", "n=1073741824"]):
            with self.subTest(args=args):
                self.assertOk(self.dslc("k.kiln", "--emit=ptx", *args))

    def test_errors(self):
        cases = {
            "n": "malformed", "=16": "malformed", "n=": "malformed", "": "malformed",
            "n=3": "not a power of two", "n=0": "not a power of two", "n=-16": "not a power of two",
            "n=2147483648": "not a power of two", "n=99999999999999999999999": "not a power of two",
            "n=abc": "not a power of two", "n=16.0": "not a power of two",
            "nope=16": "has no parameter 'nope'", "p=16": "is a pointer", "f=16": "not an integer",
            "b=2": "not an integer", "C=16": "const parameter",
        }
        argvs = [["k.kiln", "--emit=ptx", "--diagnostics=json", "--assume-multiple", value] for value in cases]
        for (value, message), r in zip(cases.items(), self.dslc_many(argvs)):
            with self.subTest(value=value):
                errors = self.assertUserError(r, "E0900", message)
                if "parameter" in message or "pointer" in message or "integer" in message:
                    self.assertIn("n: i32, m: u64, s: i8", errors[0].get("hint", ""), errors[0])

    def test_repeated_name(self):
        r = self.dslc("k.kiln", "--emit=ptx", "--diagnostics=json", "--assume-multiple", "n=16",
                      "--assume-multiple", "n=32")
        self.assertUserError(r, "E0900", "more than once")

    def test_only_with_code_generation(self):
        for emit in ("tir", "ast"):
            r = self.dslc("k.kiln", "--emit=" + emit, "--diagnostics=json", "--assume-multiple", "n=16")
            self.assertUserError(r, "E0900", "applies to code generation")

    def test_source_hints_act_as_the_option(self):
        # assume(n % 16 == 0) and multiple_of(n, 16) in the source are the same promise as
        # --assume-multiple: the same vector loads, recorded in the bundle, merged with
        # the option (the larger multiple wins), and printed in the Tile IR.
        with open(SOFTMAX) as f:
            source = f.read()
        marker = "let row = program_id(0);"
        self.assertIn(marker, source)
        self.write("assumed.kiln", source.replace(marker, marker + " assume(row_stride % 16 == 0);", 1))
        self.write("multiple.kiln", source.replace(marker, marker + " let rs = multiple_of(row_stride, 16);", 1))
        option = self.dslc(SOFTMAX, "--emit=ptx", "--assume-multiple", "row_stride=16")
        for name in ("assumed.kiln", "multiple.kiln"):
            with self.subTest(name=name):
                r = self.dslc(name, "--emit=ptx")
                self.assertOk(r)
                self.assertIn("ld.global.v4", r.stdout)
                self.assertEqual(r.stdout.count("ld.global.v4"), option.stdout.count("ld.global.v4"))
        tir = self.dslc("assumed.kiln")
        self.assertOk(tir)
        self.assertIn("multiple_of = {row_stride = 16}", tir.stdout)
        self.assertOk(self.dslc("assumed.kiln", "--emit=bundle", "-o", "a.kbin", "--assume-multiple", "row_stride=64"))
        d = self.kiln_run("--describe", "a.kbin")
        self.assertOk(d)
        self.assertRegex(d.stdout, r"(?m)^param\s+row_stride: i32  \(assumed a multiple of 64\)$")
        self.assertOk(self.dslc("assumed.kiln", "--emit=bundle", "-o", "b.kbin"))
        d = self.kiln_run("--describe", "b.kbin")
        self.assertRegex(d.stdout, r"(?m)^param\s+row_stride: i32  \(assumed a multiple of 16\)$")

    def test_recorded_in_the_bundle(self):
        r = self.dslc("k.kiln", "--emit=bundle", "-o", "k.kbin", "--assume-multiple", "n=16",
                      "--assume-multiple", "m=64")
        self.assertOk(r)
        d = self.kiln_run("--describe", "k.kbin")
        self.assertOk(d)
        self.assertRegex(d.stdout, r"(?m)^param\s+n: i32  \(assumed a multiple of 16\)$")
        self.assertRegex(d.stdout, r"(?m)^param\s+m: u64  \(assumed a multiple of 64\)$")
        self.assertRegex(d.stdout, r"(?m)^param\s+s: i8$")
        self.assertRegex(d.stdout, r"(?m)^param\s+p: \*f32  \(address a multiple of 16 bytes\)$")


DECODE = os.path.join(clitest.REPO, "stdlib", "decode_attention.kiln")


class LaunchSettings(clitest.CliTestCase):
    """--num-warps and --num-stages override a kernel's @num_warps and @num_stages, as an
    @autotune config's num_warps and num_stages do, and are recorded in the bundle."""

    LINEAR = os.path.join(clitest.REPO, "stdlib", "encoder_layer.kiln")

    def test_override_the_kernel(self):
        r = self.dslc(self.LINEAR, "--kernel", "linear")
        self.assertOk(r)
        self.assertIn("num_warps = 4", r.stdout)
        r = self.dslc(self.LINEAR, "--kernel", "linear", "--num-warps=8", "--num-stages=2")
        self.assertOk(r)
        self.assertRegex(r.stdout, r"num_stages = 2\b")
        self.assertRegex(r.stdout, r"num_warps = 8\b")
        r = self.dslc(self.LINEAR, "--kernel", "linear", "--num-warps=8", "--emit=bundle", "-o", "k.kbin")
        self.assertOk(r)
        d = self.kiln_run("--describe", "k.kbin")
        self.assertOk(d)
        self.assertRegex(d.stdout, r"(?m)^num_warps\s+8 \(256 threads per program\)")

    def test_bad_values(self):
        cases = [("--num-warps=" + v, "--num-warps needs a power of two from 1 to 32") for v in
                 ["0", "3", "64", "-1", "four", "", "1e1"]]
        cases += [("--num-stages=" + v, "--num-stages needs a number from 1 to 8") for v in ["0", "9", "x", "-2"]]
        argvs = [[self.LINEAR, "--kernel", "linear", "--diagnostics=json", option] for option, _ in cases]
        for (option, message), r in zip(cases, self.dslc_many(argvs)):
            with self.subTest(option=option):
                self.assertUserError(r, "E0900", message)


class ReductionSplit(clitest.CliTestCase):
    """--reduction-split: its values, the launch contract it records in a bundle, and a
    split kernel printed as Tile IR and run again from the text."""

    def test_bad_values(self):
        values = ["0", "-1", "1025", "four", "", "2.0", "99999999999"]
        argvs = [[DECODE, "--diagnostics=json", "--reduction-split=" + v] for v in values]
        for value, r in zip(values, self.dslc_many(argvs)):
            with self.subTest(value=value):
                self.assertUserError(r, "E0900", "--reduction-split needs a number of segments from 1 to 1024")

    def test_recorded_in_the_bundle(self):
        r = self.dslc(DECODE, "--emit=bundle", "-o", "k.kbin", "--reduction-split=4")
        self.assertOk(r)
        d = self.kiln_run("--describe", "k.kbin")
        self.assertOk(d)
        self.assertRegex(d.stdout, r"(?m)^signature\s+decode_attention\(q: \*f32, k: \*f32, v: \*f32, o: \*f32, "
                                   r"seq: i32, scale: f32\)$")
        self.assertRegex(d.stdout, r"(?m)^grid_split\s+4 programs per program of the grid .* a workspace of "
                                   r"1168 bytes per program of the grid")
        r = self.dslc(DECODE, "--emit=bundle", "-o", "one.kbin", "--reduction-split=1")
        self.assertOk(r)
        d = self.kiln_run("--describe", "one.kbin")
        self.assertOk(d)
        self.assertNotIn("grid_split", d.stdout)

    def test_split_tir_runs_again(self):
        import numpy as np
        r = self.dslc(DECODE, "--reduction-split=3", "-o", "split.tir")
        self.assertOk(r)
        with open(self.path("split.tir")) as f:
            self.assertIn("grid_split = 3", f.read())
        rng = np.random.default_rng(7)
        heads, seq, d = 2, 150, 64
        q = rng.standard_normal((heads, d)).astype(np.float32)
        k = rng.standard_normal((heads, seq, d)).astype(np.float32)
        v = rng.standard_normal((heads, seq, d)).astype(np.float32)
        for name, a in (("q", q), ("k", k), ("v", v), ("o", np.zeros((heads, d), np.float32))):
            self.npy(name + ".npy", a)
        r = self.dslc("run", "split.tir", "--grid", str(heads), "--device", "interp", "--arg", "q=q.npy",
                      "--arg", "k=k.npy", "--arg", "v=v.npy", "--arg", "o=o.npy", "--arg", "seq=150",
                      "--arg", "scale=0.125")
        self.assertOk(r)
        s = np.einsum("hd,hjd->hj", q.astype(np.float64), k) * 0.125
        p = np.exp(s - s.max(axis=1, keepdims=True))
        want = np.einsum("hj,hjd->hd", p / p.sum(axis=1, keepdims=True), v)
        np.testing.assert_allclose(self.load("o.npy"), want, rtol=1e-4, atol=1e-5)
        # The workspace is the launcher's: naming it is an unknown argument.
        r = self.dslc("run", "split.tir", "--grid", "1", "--device", "interp", "--diagnostics=json", "--arg",
                      "q=q.npy", "--arg", "k=k.npy", "--arg", "v=v.npy", "--arg", "o=o.npy", "--arg", "seq=150",
                      "--arg", "scale=0.125", "--arg", "workspace=o.npy")
        self.assertUserError(r, "E0600", "workspace")


class OutputPlaces(clitest.CliTestCase):

    def test_bundle_through_a_symlink(self):
        os.mkdir(self.path("real"))
        os.symlink("real/k.kbin", self.path("link.kbin"))
        r = self.dslc(SOFTMAX, "--emit=bundle", "-o", "link.kbin")
        self.assertOk(r)
        self.assertTrue(os.path.islink(self.path("link.kbin")), "the symlink was replaced")
        with open(self.path("real/k.kbin"), "rb") as f:
            self.assertTrue(f.read().startswith(BUNDLE_MAGIC))

    def test_bundle_into_a_pipe(self):
        # A special file (here a FIFO; /dev/null alike) is written straight through, never
        # replaced by a regular file.
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
        reader.start()
        r = self.dslc(SOFTMAX, "--emit=bundle", "-o", "pipe")
        reader.join(timeout=30)
        self.assertOk(r)
        self.assertTrue(got and got[0].startswith(BUNDLE_MAGIC))
        self.assertTrue(os.path.exists(fifo) and not os.path.isfile(fifo))

    def test_overwrites_an_old_bundle_atomically(self):
        self.write("k.kbin", "old contents")
        os.chmod(self.path("k.kbin"), 0o600)
        self.assertOk(self.dslc(SOFTMAX, "--emit=bundle", "-o", "k.kbin"))
        with open(self.path("k.kbin"), "rb") as f:
            self.assertTrue(f.read().startswith(BUNDLE_MAGIC))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["k.kbin"], "a temporary file was left behind")


class TimePasses(clitest.CliTestCase):

    def test_reports_code_generation(self):
        for emit, target in (("ptx", "sm_90a"), ("spirv-asm", "spirv64"), ("bundle", "sm_80")):
            with self.subTest(emit=emit):
                args = [SOFTMAX, "--kernel", "softmax", "--emit=" + emit, "--target=" + target, "--time-passes",
                        "-o", "out"]
                r = self.dslc(*args)
                self.assertOk(r)
                self.assertRegex(r.stderr, r"codegen: %s\b" % re.escape(target))
                self.assertRegex(r.stderr, r"frontend")
                self.assertRegex(r.stderr, r"emit: ")
                self.assertRegex(r.stderr, r"Total")

    def test_softmax_ptx_is_quick(self):
        # The full compile of softmax to PTX, as a user runs it; CPU time, which the
        # machine's load hardly changes. The target is 100 ms of wall time on an idle
        # machine; the bound here only catches gross regressions.
        rc, cpu = clitest.run_tool_cpu("dslc", [SOFTMAX, "--kernel", "softmax", "--target=sm_90a", "--emit=ptx"],
                                       self.tmp)
        self.assertEqual(rc, 0)
        self.assertLess(cpu, 2.0)


class Fuzz(clitest.CliTestCase):

    def test_option_combinations_never_crash(self):
        self.write("two.kiln", TWO)
        self.write("k.kiln", PARAMS)
        self.write("u.tir", clitest.UNSUPPORTED_TIR)
        rng = random.Random(20261130)
        pool = [
            "--emit=ptx", "--emit=spirv", "--emit=spirv-asm", "--emit=llvm", "--emit=bundle", "--emit=tir",
            "--emit=ast", "--emit=", "--emit=PTX", "--target=sm_80", "--target=sm_90a", "--target=spirv64",
            "--target=", "--target=sm_75", "--assume-multiple=n=16", "--assume-multiple=n=3",
            "--assume-multiple=p=16", "--assume-multiple=", "--assume-multiple=row_stride=16", "--kernel=first",
            "--kernel=softmax", "--kernel=", "-o", "out", "-o", "no/dir/out", "-o", "-", "--O0",
            "--print-after-all", "--time-passes", "--verify-diagnostics", "--print-locations", "-D", "BLOCK=256",
            "-D", "BLOCK=3", "-DX", "--libdevice=/nonexistent.bc", "--diagnostics=json",
        ]
        inputs = ["two.kiln", "k.kiln", "u.tir", SOFTMAX, "absent.kiln"]
        argvs = []
        for _ in range(120):
            argv = [rng.choice(inputs)] + rng.sample(pool, rng.randint(1, 6))
            argvs.append(argv)
        for argv, r in zip(argvs, self.dslc_many(argvs)):
            with self.subTest(argv=" ".join(argv)):
                self.assertIsNotNone(r.rc, "timed out:\n" + r.describe())
                self.assertIn(r.rc, (0, 1), r.describe())
                self.assertNotIn("internal compiler error", r.stderr)
                self.assertNotIn("Stack dump", r.stderr)
                if r.rc == 1:
                    self.assertTrue(r.stderr.strip(), r.describe())
                if r.rc == 1 and "--diagnostics=json" in argv and "--verify-diagnostics" not in argv:
                    for line in r.stderr.splitlines():
                        if line.startswith("{"):
                            self.assertWellFormedJson(clitest.parse_json_lines(line)[0], r)


PTXAS = os.environ.get("KILN_PTXAS") or shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) else None)


class ResourceUsage(clitest.CliTestCase):
    """dslc --resource-usage: threads, shared memory, registers, spills, occupancy."""

    def usage(self, *args, env=None):
        r = self.dslc(SOFTMAX, "--resource-usage", "--diagnostics=json", *args, env=env)
        self.assertOk(r)
        lines = [json.loads(line)["resource_usage"] for line in r.stderr.splitlines() if "resource_usage" in line]
        return r, lines

    def test_alone_it_compiles_for_sm_90_and_writes_no_code(self):
        r, [u] = self.usage()
        self.assertEqual(r.stdout, "")
        self.assertEqual((u["kernel"], u["target"], u["threads"]), ("softmax", "sm_90", 128))
        self.assertGreaterEqual(u["shared_bytes"], 0)
        if PTXAS:
            self.assertGreater(u["registers"], 0)
            self.assertEqual(u["spill_store_bytes"], 0)
            # 128 threads: at most 16 programs of 4 warps on an SM of 64 warps.
            self.assertLessEqual(u["programs_per_sm"], 16)
            self.assertEqual(u["warps_per_sm"], 4 * u["programs_per_sm"])
            self.assertIn(u["limited_by"], ("threads", "registers", "shared memory", "programs"))

    def test_with_code_and_text(self):
        out = self.path("k.ptx")
        r = self.dslc(SOFTMAX, "--resource-usage", "--target=sm_80", "-o", out)
        self.assertOk(r)
        self.assertRegex(r.stderr, r"resource usage of 'softmax' on sm_80: 128 threads, \d+ bytes of shared memory")
        with open(out) as f:
            self.assertIn(".target sm_80", f.read())

    def test_without_ptxas_the_rest_is_still_reported(self):
        _, [u] = self.usage(env={"KILN_PTXAS": self.path("no-such-ptxas")})
        self.assertEqual(u["threads"], 128)
        self.assertNotIn("registers", u)
        self.assertIn("no-such-ptxas", u["registers_unknown"])

    def test_spirv_has_no_register_report(self):
        _, [u] = self.usage("--emit=spirv-asm", "-o", os.devnull)
        self.assertEqual(u["target"], "spirv64")
        self.assertIn("NVIDIA targets only", u["registers_unknown"])

    def test_a_graph_reports_each_kernel_then_its_persistent_kernel(self):
        r = self.dslc(os.path.join(clitest.REPO, "stdlib", "decode_chain.kiln"), "--kernel", "decode_chain",
                      "--resource-usage", "--diagnostics=json", "-D", "LAYERS=2")
        self.assertOk(r)
        names = [json.loads(line)["resource_usage"]["kernel"] for line in r.stderr.splitlines()]
        self.assertEqual(names[-1], "decode_chain")
        self.assertTrue(any(n.startswith("norm_matvec") for n in names[:-1]), names)
        # The same for the graph bundle, from the code it carries.
        out = self.path("chain.kgraph")
        r = self.dslc(os.path.join(clitest.REPO, "stdlib", "decode_chain.kiln"), "--kernel", "decode_chain",
                      "--resource-usage", "--diagnostics=json", "-D", "LAYERS=2", "--emit=bundle", "-o", out)
        self.assertOk(r)
        self.assertTrue(os.path.exists(out))
        usage = [json.loads(line)["resource_usage"] for line in r.stderr.splitlines()]
        self.assertEqual(usage[-1]["kernel"], "decode_chain")
        self.assertTrue(any(u["kernel"].startswith("norm_matvec") for u in usage[:-1]), usage)
        self.assertTrue(all(u["threads"] > 0 for u in usage), usage)

    def test_not_with_the_tile_ir(self):
        r = self.dslc(SOFTMAX, "--resource-usage", "--emit=tir")
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("--resource-usage reports on generated code", r.stderr)


if __name__ == "__main__":
    clitest.main()

