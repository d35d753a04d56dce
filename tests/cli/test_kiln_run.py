#!/usr/bin/python3
#===- test_kiln_run.py - kiln-run, and bundles from dslc --emit=bundle ---------===#
#
# kiln-run's own command line (--help, --version, every argument error, coded and in
# JSON), the bundle round trip (`dslc --emit=bundle`, then `kiln-run --describe` parses
# it with the runtime), empty, truncated, damaged and foreign bundles (E0902), the
# --grid/--arg contract shared with `dslc run` checked against the bundle's signature
# before any driver is needed, the no-driver errors (KILN_CUDA_LIBRARY and
# KILN_ZE_LIBRARY pointing nowhere), and launches through the stand-in drivers of
# tests/unit/runtime (FakeCuda.cpp, FakeLevelZero.cpp): they run no code, so a launch
# changes no buffer and no file, but everything up to the driver is real — loading,
# the argument checks of the specialization, timing with events. Every failure leaves
# every file as it was. Also: kiln-run links no LLVM and no shared C++ runtime.
#
# Usage: test_kiln_run.py --dslc build/tools/dslc [--kiln-run PATH] [--fake-cuda PATH]
#                         [--fake-ze PATH] [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import random
import re
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

EXAMPLES = os.path.join(clitest.REPO, "examples")
SOFTMAX = os.path.join(EXAMPLES, "softmax.kiln")

# Every scalar kind, to check literals against the bundle's signature.
SCALARS = """\
kernel k(p: *f32, q: *i32, n: i32, u: u64, s: i8, f: f32, h: f16, b: bool) {
    store(p, f);
}
"""


class KilnRunCase(clitest.CliTestCase):

    # The stand-in driver a test class needs ("cuda", "ze"); skipped when not built.
    fake = None

    def setUp(self):
        if self.fake and not clitest.FAKE_DRIVERS.get(self.fake):
            self.skipTest("the stand-in %s driver was not given (--fake-%s)" % (self.fake, self.fake))
        super().setUp()
        self.rows, self.cols = 4, 1000
        x = np.random.default_rng(3).standard_normal((self.rows, self.cols)).astype(np.float32)
        self.npy("x.npy", x)
        self.npy("y.npy", np.zeros((self.rows, self.cols), np.float32))

    def bundle(self, name="s.kbin", *args, source=SOFTMAX):
        r = self.dslc(source, "--emit=bundle", "-o", name, *args)
        self.assertOk(r)
        return name

    def softmax_args(self, n_cols=None, stride=None):
        return ["--grid", str(self.rows), "--arg", "x=x.npy", "--arg", "y=y.npy",
                "--arg", "n_cols=%d" % (n_cols or self.cols), "--arg", "row_stride=%d" % (stride or self.cols)]

    def rejected(self, code, *args, message=None, env=None):
        """kiln-run with JSON diagnostics: exit 1, `code`, nothing on stdout, no file touched."""
        before = clitest.snapshot(self.tmp)
        r = self.kiln_run("--diagnostics=json", *args, env=env)
        errors = self.assertUserError(r, code, message)
        self.assertEqual(r.stdout, "", r.describe())
        self.assertEqual(clitest.snapshot(self.tmp), before, "files changed on an error")
        return errors

    def assertUntouched(self, before):
        after = clitest.snapshot(self.tmp)
        self.assertEqual(sorted(after), sorted(before), "files were created or removed")
        for name in before:
            self.assertEqual(after[name], before[name], "%s changed" % name)


class HelpAndVersion(KilnRunCase):

    def test_help(self):
        for args in (["--help"], ["-h"], ["s.kbin", "--grid", "x", "--help"], ["--frobnicate", "--help"]):
            with self.subTest(args=args):
                r = self.kiln_run(*args)
                self.assertOk(r)
                self.assertEqual(r.stderr, "")
                self.assertIn("kiln-run BUNDLE.kbin --grid X[,Y[,Z]]", r.stdout)
                for option in ("--grid", "--arg", "--device", "--repeat", "--time", "--describe", "--diagnostics",
                               "--help", "--version", "KILN_CUDA_LIBRARY", "EXIT STATUS"):
                    self.assertIn(option, r.stdout)

    def test_version(self):
        r = self.kiln_run("--version")
        self.assertOk(r)
        self.assertRegex(r.stdout.strip(), r"^kiln-run \(Kiln\) \d+\.\d+\.\d+$")
        dslc = self.dslc("--version").stdout.split()[-1]
        self.assertEqual(r.stdout.split()[-1], dslc, "kiln-run and dslc report the same version")

    def test_links_no_llvm_and_no_shared_cxx_runtime(self):
        out = subprocess.run(["readelf", "-d", clitest.TOOLS["kiln-run"]], capture_output=True, text=True)
        if out.returncode != 0:
            self.skipTest("readelf is not available")
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", out.stdout)
        self.assertTrue(needed, out.stdout)
        for lib in needed:
            self.assertFalse(re.match(r"lib(LLVM|stdc\+\+|gcc_s|antlr4)", lib), "kiln-run needs %s" % lib)


class ArgumentErrors(KilnRunCase):

    def setUp(self):
        super().setUp()
        self.bundle()

    def test_option_errors(self):
        cases = [
            ([], "no bundle given"),
            (["--grid", "4"], "no bundle given"),
            (["s.kbin", "--frobnicate"] + self.softmax_args(), "unknown option '--frobnicate'"),
            (["s.kbin", "-x"] + self.softmax_args(), "unknown option '-x'"),
            (["s.kbin", "--gird=4"] + self.softmax_args(), "unknown option '--gird'"),
            (["s.kbin"] + self.softmax_args() + ["--grid"], "needs a value"),
            (["s.kbin"] + self.softmax_args() + ["--grid", "8"], "more than once"),
            (["s.kbin"] + self.softmax_args() + ["--time=yes"], "takes no value"),
            (["s.kbin", "other.kbin"] + self.softmax_args(), "unexpected argument 'other.kbin'"),
            (["s.kbin"] + self.softmax_args() + ["--repeat", "0"], "--repeat needs a count"),
            (["s.kbin"] + self.softmax_args() + ["--repeat", "-3"], "--repeat needs a count"),
            (["s.kbin"] + self.softmax_args() + ["--repeat", "lots"], "--repeat needs a count"),
            (["s.kbin"] + self.softmax_args() + ["--repeat", "1000000001"], "--repeat needs a count"),
            (["s.kbin", "--describe", "--grid", "4"], "runs nothing"),
            (["s.kbin", "--describe", "--time"], "runs nothing"),
            # rejected() gives --diagnostics=json too: a second one is a repeat like any other.
            (["s.kbin"] + self.softmax_args() + ["--diagnostics", "json"], "'--diagnostics' is given more than once"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                errors = self.rejected("E0900", *args, message=message)
                for e in errors:
                    self.assertEqual((e["file"], e["line"], e["col"]), ("", 0, 0), e)
        r = self.kiln_run("s.kbin", *self.softmax_args(), "--diagnostics", "xml")
        self.assertExit(r, 1)
        self.assertIn("kiln-run: error[E0900]: unknown --diagnostics format 'xml'", r.stderr)

    def test_device_errors(self):
        for device in ("tpu", "", "CUDA", "interp"):
            with self.subTest(device=device):
                self.rejected("E0600", "s.kbin", *self.softmax_args(), "--device", device, message="unknown device")

    def test_grid_errors(self):
        self.rejected("E0606", "s.kbin", "--arg", "x=x.npy", message="needs --grid")
        for grid in ("0", "-1", "1,2,3,4", "x", "", "2147483648", "1,,2"):
            with self.subTest(grid=grid):
                self.rejected("E0606", "s.kbin", "--grid", grid, *self.softmax_args()[2:], message="malformed grid")

    def test_text_form(self):
        r = self.kiln_run("s.kbin", "--frobnicate")
        self.assertExit(r, 1)
        self.assertRegex(r.stderr.splitlines()[0], r"^kiln-run: error\[E0900\]: unknown option '--frobnicate'$")
        self.assertIn("help: kiln-run --help lists the options", r.stderr)

    def test_double_dash_ends_options(self):
        # After `--` an argument is a file name, even when it starts with '-'.
        r = self.kiln_run("--diagnostics=json", "--grid", "1", "--", "--grid")
        errors = self.assertUserError(r, "E0001")
        self.assertIn("'--grid'", errors[0]["message"])


class Arguments(KilnRunCase):
    """The --arg contract, checked against the bundle's signature before any driver."""

    def setUp(self):
        super().setUp()
        self.bundle()
        self.write("k.kiln", SCALARS)
        self.bundle("k.kbin", source="k.kiln")
        self.npy("p.npy", np.zeros(4, np.float32))
        self.npy("q.npy", np.zeros(4, np.int32))

    def k_args(self, **override):
        values = {"p": "p.npy", "q": "q.npy", "n": "1", "u": "2", "s": "3", "f": "1.5", "h": "0.5", "b": "true"}
        values.update(override)
        args = ["k.kbin", "--grid", "1"]
        for name, value in values.items():
            if value is not None:
                args += ["--arg", "%s=%s" % (name, value)]
        return args

    def test_unknown_missing_repeated(self):
        errors = self.rejected("E0600", *self.k_args(), "--arg", "zz=1", message="has no parameter 'zz'")
        self.assertIn("p: *f32, q: *i32, n: i32, u: u64, s: i8, f: f32, h: f16, b: bool", errors[0]["message"])
        self.rejected("E0600", *self.k_args(n=None), message="missing argument for parameter 'n: i32'")
        self.rejected("E0600", *self.k_args(), "--arg", "n=2", message="more than once")
        self.rejected("E0600", *self.k_args(), "--arg", "novalue", message="malformed --arg")

    def test_bad_scalars(self):
        cases = [("n", "1.5"), ("u", "-1"), ("s", "128"), ("f", "abc"), ("h", ""), ("b", "maybe"),
                 ("n", "99999999999999999999"), ("f", "1e999")]
        for name, value in cases:
            with self.subTest(name=name, value=value):
                self.rejected("E0600", *self.k_args(**{name: value}), message="bad value")

    def test_npy_errors(self):
        self.npy("wrong.npy", np.zeros(4, np.float64))
        self.write("garbage.npy", "not numpy")
        self.rejected("E0601", *self.k_args(p="wrong.npy"), message="float64")
        self.rejected("E0601", *self.k_args(p="garbage.npy"))
        self.rejected("E0601", *self.k_args(p="absent.npy"), message="absent.npy")
        self.rejected("E0601", *self.k_args(p="p.npy", q="p.npy"), message="different pointee types")

    def test_predicate_mask_needs_the_compiler(self):
        # A bundle holds its kernel only: a mask named by a predicate is refused (dslc
        # run builds it), before any driver is looked for.
        self.write("m.kiln", "kernel m(p: *f32, mask: block_mask<4, 8>) { store(p, mask.rows.to(f32)); }\n")
        self.bundle("m.kbin", source="m.kiln")
        self.rejected("E0608", "m.kbin", "--grid", "1", "--arg", "p=p.npy", "--arg", "mask=causal(16,16)",
                      message="kiln-run cannot build a mask from a predicate", env=clitest.NO_DRIVER_ENV)

    def test_mask_extents_are_checked_before_the_driver(self):
        self.write("d.kiln", "kernel d(p: *f32, mask: block_mask<4, 8, S, 16>, S: i32) { store(p, 1.0); }\n")
        self.bundle("d.kbin", source="d.kiln")
        self.npy("m.npy", np.ones((12, 16), bool))
        errors = self.rejected("E0608", "d.kbin", "--grid", "1", "--arg", "p=p.npy", "--arg", "mask=m.npy",
                               "--arg", "S=13", message="the mask has 12 rows, but kernel 'd' declares S = 13 rows",
                               env=clitest.NO_DRIVER_ENV)
        self.assertIn("mask: block_mask<4, 8, S, 16>", errors[0]["message"])

    def test_argument_errors_come_before_the_driver(self):
        # No driver here: still the argument error, not E0901.
        self.rejected("E0600", *self.k_args(n="x"), env=clitest.NO_DRIVER_ENV)


class Bundles(KilnRunCase):

    def test_describe_round_trip(self):
        self.bundle("s.kbin", "--target=sm_90a", "-D", "BLOCK=2048", "--assume-multiple", "row_stride=16")
        r = self.kiln_run("--describe", "s.kbin")
        self.assertOk(r)
        self.assertEqual(r.stderr, "")
        rows = {}
        for line in r.stdout.splitlines():
            key, _, value = line.partition(" ")
            rows.setdefault(key, []).append(value.strip())
        self.assertEqual(rows["kernel"], ["softmax"])
        self.assertEqual(rows["entry"], ["softmax"])
        self.assertEqual(rows["signature"], ["softmax(x: *f32, y: *f32, n_cols: i32, row_stride: i32)"])
        self.assertEqual(rows["param"], ["x: *f32  (address a multiple of 16 bytes)",
                                         "y: *f32  (address a multiple of 16 bytes)", "n_cols: i32",
                                         "row_stride: i32  (assumed a multiple of 16)"])
        self.assertEqual(rows["const"], ["BLOCK = 2048"])
        self.assertEqual(rows["target"], ["sm_90a"])
        self.assertRegex(rows["section"][0], r"^PTX for sm_90a, \d+ bytes$")
        self.assertRegex(rows["num_warps"][0], r"^\d+ \(\d+ threads per program\)$")
        self.assertRegex(rows["compiler"][0], r"^kiln \d+\.\d+\.\d+$")
        self.assertRegex(rows["source"][0], r"softmax\.kiln:\d+:\d+$")
        self.assertRegex(rows["source_hash"][0], r"^[0-9a-f]{64}$")
        self.assertIn("--arg x=FILE.npy --arg y=FILE.npy --arg n_cols=VALUE --arg row_stride=VALUE",
                      rows["usage"][0])

    def test_describe_each_target(self):
        for target, kind in (("sm_80", "PTX"), ("sm_90", "PTX"), ("spirv64", "SPIR-V")):
            with self.subTest(target=target):
                self.bundle("b.kbin", "--target=" + target)
                r = self.kiln_run("b.kbin", "--describe")
                self.assertOk(r)
                self.assertRegex(r.stdout, r"(?m)^target\s+%s$" % target)
                self.assertRegex(r.stdout, r"(?m)^section\s+%s for %s, \d+ bytes$" % (kind, target))

    def test_describe_escapes_the_bundles_text(self):
        # A bundle is untrusted: its source path is shown with a bidirectional override
        # (U+202E), a C1 control as a character (U+009B) and as a byte (0x9B), and bytes
        # that are not UTF-8 as visible escapes, never as raw bytes a terminal acts on.
        name = b"evil\xe2\x80\xaelnik\xc2\x9b\x9b\xff.kiln"
        with open(SOFTMAX, "rb") as src, open(os.path.join(os.fsencode(self.tmp), name), "wb") as dst:
            dst.write(src.read())
        self.bundle("e.kbin", source=os.fsdecode(name))
        r = self.kiln_run("--describe", "e.kbin")
        self.assertOk(r)
        for raw in (b"\xe2\x80\xae", b"\xc2\x9b", b"\x9b", b"\xff"):
            self.assertNotIn(raw, r.stdout_bytes)
        self.assertRegex(r.stdout, r"(?m)^source\s+evil\\u\{202E\}lnik\\u\{009B\}\\x9B\\xFF\.kiln:\d+:\d+$")

    def test_describe_needs_no_driver(self):
        self.bundle()
        self.assertOk(self.kiln_run("--describe", "s.kbin", env=clitest.NO_DRIVER_ENV))

    def test_unreadable(self):
        os.mkdir(self.path("dir.kbin"))
        self.rejected("E0001", "absent.kbin", *self.softmax_args(), message="absent.kbin")
        self.rejected("E0001", "dir.kbin", *self.softmax_args(), message="dir.kbin")
        self.rejected("E0001", "--describe", "absent.kbin")

    def test_foreign_and_empty_files(self):
        self.write("empty.kbin", b"")
        self.write("text.kbin", "kernel k() {}\n")
        with open(SOFTMAX, "rb") as f:
            self.write("source.kbin", f.read())
        for name, message in (("empty.kbin", "empty"), ("text.kbin", "bad magic"), ("source.kbin", "bad magic"),
                              ("x.npy", "bad magic")):
            with self.subTest(file=name):
                errors = self.rejected("E0902", name, *self.softmax_args(), message=message)
                self.assertIn("dslc", errors[0]["hint"])
                self.rejected("E0902", "--describe", name)

    def test_truncated(self):
        self.bundle()
        with open(self.path("s.kbin"), "rb") as f:
            data = f.read()
        for n in sorted({1, 7, 8, 47, 48, 60, len(data) // 2, len(data) - 1}):
            with self.subTest(length=n):
                self.write("t.kbin", data[:n])
                self.rejected("E0902", "t.kbin", *self.softmax_args(), message="truncated|bad magic")

    def test_damaged(self):
        # One flipped byte anywhere is detected: the header, the metadata, the code.
        self.bundle()
        with open(self.path("s.kbin"), "rb") as f:
            data = f.read()
        for at in sorted({0, 8, 20, 44, 48, 60, 100, len(data) // 2, len(data) - 1}):
            with self.subTest(offset=at):
                damaged = bytearray(data)
                damaged[at] ^= 0x20
                self.write("d.kbin", bytes(damaged))
                self.rejected("E0902", "d.kbin", *self.softmax_args())
        self.write("long.kbin", data + b"\0")
        self.rejected("E0902", "long.kbin", *self.softmax_args(), message="trailing")

    def test_bundles_are_reproducible(self):
        self.bundle("a.kbin")
        self.bundle("b.kbin")
        with open(self.path("a.kbin"), "rb") as a, open(self.path("b.kbin"), "rb") as b:
            self.assertEqual(a.read(), b.read())


class NoDriver(KilnRunCase):

    def setUp(self):
        super().setUp()
        self.bundle()

    def test_auto(self):
        errors = self.rejected("E0901", "s.kbin", *self.softmax_args(), env=clitest.NO_DRIVER_ENV)
        self.assertIn("no CUDA driver", errors[0]["message"])
        self.assertIn("no Level Zero driver", errors[0]["message"])
        self.assertIn("dslc run --device interp", errors[0]["hint"])

    def test_explicit(self):
        for device, message in (("cuda", "no CUDA driver"), ("ze", "no Level Zero driver")):
            with self.subTest(device=device):
                errors = self.rejected("E0901", "s.kbin", *self.softmax_args(), "--device", device,
                                       message=message, env=clitest.NO_DRIVER_ENV)
                self.assertIn("/nonexistent", errors[0]["message"])

    def test_text_form_is_one_line(self):
        r = self.kiln_run("s.kbin", *self.softmax_args(), env=clitest.NO_DRIVER_ENV)
        self.assertExit(r, 1)
        lines = r.stderr.splitlines()
        self.assertRegex(lines[0], r"^kiln-run: error\[E0901\]: no GPU backend is available: CUDA: no CUDA "
                                   r"driver: .*; Level Zero: no Level Zero driver: ")
        self.assertTrue(lines[1].startswith("  help: "), r.stderr)
        self.assertEqual(len(lines), 2, r.stderr)


class Fuzz(KilnRunCase):

    def test_argument_combinations_never_crash(self):
        self.bundle()
        with open(self.path("s.kbin"), "rb") as f:
            data = f.read()
        rng = random.Random(20261130)
        for i in range(8):
            damaged = bytearray(data[:rng.randint(0, len(data))])
            for _ in range(rng.randint(0, 4)):
                if damaged:
                    damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            self.write("f%d.kbin" % i, bytes(damaged))
        pool = ["--grid", "4", "--grid=1,2", "--grid=0", "--grid=", "--arg", "x=x.npy", "--arg=y=y.npy",
                "--arg=n_cols=1000", "--arg=row_stride=-1", "--arg=x=", "--arg==", "--device", "cuda", "--device=ze",
                "--device=auto", "--device=", "--repeat", "3", "--repeat=0", "--time", "--time=1", "--describe",
                "--diagnostics=json", "--diagnostics", "--", "-", "-q", "--x", "s.kbin", "absent.kbin",
                # Paths that are not regular files: each must be refused, never block.
                "--arg=x=fifo.npy", "--arg=y=fifo.npy", "--arg=x=dir.npy", "--arg=y=/dev/zero", "fifo.kbin"]
        os.mkfifo(self.path("fifo.npy"))
        os.mkfifo(self.path("fifo.kbin"))
        os.mkdir(self.path("dir.npy"))
        files = ["s.kbin", "fifo.kbin", "/dev/zero", "dir.npy"] + ["f%d.kbin" % i for i in range(8)]
        argvs = [[rng.choice(files)] + rng.sample(pool, rng.randint(0, 7)) for _ in range(150)]
        envs = [None, clitest.NO_DRIVER_ENV]
        if clitest.FAKE_DRIVERS["cuda"]:
            envs.append({"KILN_CUDA_LIBRARY": clitest.FAKE_DRIVERS["cuda"]})
        for n, argv in enumerate(argvs):
            r = self.kiln_run(*argv, env=envs[n % len(envs)])
            with self.subTest(argv=" ".join(argv)):
                self.assertIsNotNone(r.rc, "timed out:\n" + r.describe())
                self.assertIn(r.rc, (0, 1), r.describe())
                self.assertNotIn("internal error", r.stderr)
                if r.rc == 1:
                    self.assertRegex(r.stderr, r"(kiln-run: error\[E\d{4}\]|\"code\":\"E\d{4}\")", r.describe())


class FakeCuda(KilnRunCase):
    """Launches through the stand-in CUDA driver (compute capability 9.0, sm_90)."""

    fake = "cuda"

    def env(self):
        return {"KILN_CUDA_LIBRARY": clitest.FAKE_DRIVERS["cuda"]}

    def test_launch_succeeds_and_leaves_unchanged_buffers_alone(self):
        self.bundle()
        before = clitest.snapshot(self.tmp)
        r = self.kiln_run("s.kbin", *self.softmax_args(), env=self.env())
        self.assertOk(r)
        self.assertEqual((r.stdout, r.stderr), ("", ""))
        # The stand-in runs no code: nothing changed, so nothing is rewritten.
        self.assertUntouched(before)

    def test_each_ptx_target_loads(self):
        for target in ("sm_80", "sm_90", "sm_90a"):
            with self.subTest(target=target):
                self.bundle("t.kbin", "--target=" + target)
                self.assertOk(self.kiln_run("t.kbin", *self.softmax_args(), "--device", "cuda", env=self.env()))

    def test_spirv_bundle_has_no_code_for_cuda(self):
        self.bundle("v.kbin", "--target=spirv64")
        self.rejected("E0901", "v.kbin", *self.softmax_args(), message="has code for spirv64 only", env=self.env())

    def test_repeat_and_time(self):
        self.bundle()
        r = self.kiln_run("s.kbin", *self.softmax_args(), "--repeat", "5", "--time", env=self.env())
        self.assertOk(r)
        # The stand-in's launches take a quarter of a millisecond of fake device time.
        self.assertRegex(r.stdout, r"^kiln-run: softmax on Fake H200 \(CUDA, sm_90\), grid 4,1,1, 5 launches: "
                                   r"min 0\.2500 ms, median 0\.2500 ms, mean 0\.2500 ms, max 0\.2500 ms\n$")
        self.assertEqual(r.stderr, "")
        once = self.kiln_run("s.kbin", *self.softmax_args(), "--time", env=self.env())
        self.assertRegex(once.stdout, r", 1 launch: ")
        quiet = self.kiln_run("s.kbin", *self.softmax_args(), "--repeat", "3", env=self.env())
        self.assertOk(quiet)
        self.assertEqual(quiet.stdout, "")

    def test_specialization_is_checked_at_launch(self):
        self.bundle("s16.kbin", "--assume-multiple", "row_stride=16")
        errors = self.rejected("E0600", "s16.kbin", *self.softmax_args(), message="multiples of 16, got 1000",
                               env=self.env())
        self.assertIn("row_stride", errors[0]["message"])
        self.npy("x.npy", np.zeros((self.rows, 1024), np.float32))
        self.npy("y.npy", np.zeros((self.rows, 1024), np.float32))
        self.assertOk(self.kiln_run("s16.kbin", *self.softmax_args(n_cols=1000, stride=1024), env=self.env()))

    def test_scalar_literals_reach_the_runtime(self):
        # Each literal is rounded to its parameter's type, as in Kiln source, so the
        # runtime's exact-value check accepts 0.1 for an f32 and 0.3 for an f16.
        self.write("k.kiln", SCALARS)
        self.bundle("k.kbin", source="k.kiln")
        self.npy("p.npy", np.zeros(4, np.float32))
        self.npy("q.npy", np.zeros(4, np.int32))
        r = self.kiln_run("k.kbin", "--grid", "1", "--arg", "p=p.npy", "--arg", "q=q.npy", "--arg", "n=-7",
                          "--arg", "u=18446744073709551615", "--arg", "s=-128", "--arg", "f=0.1", "--arg", "h=0.3",
                          "--arg", "b=false", env=self.env())
        self.assertOk(r)

    def test_aliased_buffers(self):
        self.bundle()
        r = self.kiln_run("s.kbin", "--grid", "4", "--arg", "x=x.npy", "--arg", "y=x.npy", "--arg", "n_cols=1000",
                          "--arg", "row_stride=1000", env=self.env())
        self.assertOk(r)

    def test_empty_buffers(self):
        self.npy("e.npy", np.zeros(0, np.float32))
        self.bundle()
        r = self.kiln_run("s.kbin", "--grid", "1", "--arg", "x=e.npy", "--arg", "y=e.npy", "--arg", "n_cols=0",
                          "--arg", "row_stride=0", env=self.env())
        self.assertOk(r)


class FakeLevelZero(KilnRunCase):

    fake = "ze"

    def env(self):
        return {"KILN_ZE_LIBRARY": clitest.FAKE_DRIVERS["ze"]}

    def test_spirv_bundle_runs(self):
        self.bundle("v.kbin", "--target=spirv64")
        before = clitest.snapshot(self.tmp)
        r = self.kiln_run("v.kbin", *self.softmax_args(), "--repeat", "2", "--time", env=self.env())
        self.assertOk(r)
        self.assertRegex(r.stdout, r"^kiln-run: softmax on .* \(Level Zero, spirv64\), grid 4,1,1, 2 launches: ")
        self.assertUntouched(before)

    def test_ptx_bundle_has_no_code_for_level_zero(self):
        self.bundle()
        self.rejected("E0901", "s.kbin", *self.softmax_args(), "--device", "ze", message="Level Zero needs spirv64",
                      env=self.env())


if __name__ == "__main__":
    clitest.main()
