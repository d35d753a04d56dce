#!/usr/bin/python3
#===- test_run_success.py - What a successful `dslc run` does to the files ----===#
#
# A run that succeeds writes back exactly the buffers the kernel stored into, keeps
# each file's dtype and shape, leaves read-only inputs alone (same bytes, same mtime),
# lets one file passed to two pointer parameters alias one buffer, carries bf16 ('|V2')
# and f8 ('|V1') bit patterns exactly, and takes scalar arguments of every dtype at the
# edges of their ranges.
#
# Usage: test_run_success.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import stat
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

ADD = """\
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 16) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
}
"""

# dst[i] = src[i] + 1 for i < n: with src and dst the same file, an in-place increment.
INC = """\
kernel inc(src: *f32, dst: *f32, n: i32) {
    let offs = arange(0, 64);
    let m = offs < n;
    store(dst + offs, load(src + offs, mask = m) + 1.0, mask = m);
}
"""

# A store through one parameter is seen by a later load through the other one when
# both name the same file; with two separate buffers the load would see 0.
ALIAS = """\
kernel alias(a: *f32, b: *f32) {
    store(a, 5.0);
    store(a + 1, load(b) * 2.0);
}
"""

COPY = """\
kernel cp(src: *%(t)s, dst: *%(t)s, n: i32) {
    let offs = program_id(0) * 256 + arange(0, 256);
    let m = offs < n;
    store(dst + offs, load(src + offs, mask = m), mask = m);
}
"""

NOT = """\
kernel flip(src: *bool, dst: *bool, n: i32) {
    let offs = arange(0, 32);
    let m = offs < n;
    store(dst + offs, !load(src + offs, mask = m), mask = m);
}
"""

GRID = """\
kernel ids(out: *i32) {
    let x = program_id(0);
    let y = program_id(1);
    let z = program_id(2);
    let nx = num_programs(0);
    let ny = num_programs(1);
    store(out + (z * ny + y) * nx + x, x * 100 + y * 10 + z);
}
"""

HIST = """\
kernel histogram(keys: *i32, hist: *i32, n: i32) {
    let offs = program_id(0) * 8 + arange(0, 8);
    let m = offs < n;
    atomic_add(hist + load(keys + offs, mask = m), 1, mask = m);
}
"""

TWO = """\
kernel first(p: *f32) { store(p, 1.0); }
kernel second(p: *f32) { store(p, 2.0); }
"""

DTYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f16", "bf16", "f32", "f64", "bool", "f8e4m3", "f8e5m2"]
NPY_DESCR = {"i8": "i1", "i16": "<i2", "i32": "<i4", "i64": "<i8", "u8": "u1", "u16": "<u2",
             "u32": "<u4", "u64": "<u8", "f16": "<f2", "f32": "<f4", "f64": "<f8", "bool": "?",
             "bf16": "V2", "f8e4m3": "V1", "f8e5m2": "V1"}

# One kernel taking a scalar of every dtype and storing each into its own buffer.
SCALARS = "kernel scalars(%s) {\n%s}\n" % (
    ", ".join("o_%s: *%s, v_%s: %s" % (t, t, t, t) for t in DTYPES),
    "".join("    store(o_%s, v_%s);\n" % (t, t) for t in DTYPES))


def bits(array):
    """The raw little-endian bytes of an array, as hex (dtype-independent comparison)."""
    return np.ascontiguousarray(array).tobytes().hex()


def le(value, descr):
    return bits(np.array([value], dtype=descr))


# Each scalar case: the --arg text and the bytes the buffer must then hold.
SCALAR_CASES = [
    {"i8": ("-128", le(-128, "i1")), "i16": ("-32768", le(-32768, "<i2")),
     "i32": ("-2147483648", le(-2**31, "<i4")), "i64": ("-9223372036854775808", le(-2**63, "<i8")),
     "u8": ("0", "00"), "u16": ("0", "0000"), "u32": ("0", "00000000"), "u64": ("0", "00" * 8),
     "f16": ("-65504", le(-65504, "<f2")), "bf16": ("1.5", "c03f"),
     "f32": ("-3.4028234663852886e38", le(-3.4028234663852886e38, "<f4")),
     "f64": ("-0.0", le(-0.0, "<f8")), "bool": ("false", "00"),
     "f8e4m3": ("448", "7e"), "f8e5m2": ("-57344", "fb")},
    {"i8": ("127", le(127, "i1")), "i16": ("32767", le(32767, "<i2")),
     "i32": ("2147483647", le(2**31 - 1, "<i4")), "i64": ("9223372036854775807", le(2**63 - 1, "<i8")),
     "u8": ("255", "ff"), "u16": ("65535", "ffff"), "u32": ("4294967295", "ffffffff"),
     "u64": ("18446744073709551615", "ff" * 8),
     "f16": ("inf", le(np.inf, "<f2")), "bf16": ("-2.5", "20c0"),
     "f32": ("1e-45", le(1e-45, "<f4")), "f64": ("1e300", le(1e300, "<f8")), "bool": ("true", "01"),
     "f8e4m3": ("1.5", "3c"), "f8e5m2": ("-3", "c2")},
    {"i8": ("-0x80", le(-128, "i1")), "i16": ("0x7F_FF", le(32767, "<i2")),
     "i32": ("1_000_000", le(10**6, "<i4")), "i64": ("-1", "ff" * 8),
     "u8": ("0xFF", "ff"), "u16": ("0xffff", "ffff"), "u32": ("0xFFFF_FFFF", "ffffffff"),
     "u64": ("0xFFFFFFFFFFFFFFFF", "ff" * 8),
     "f16": ("-inf", le(-np.inf, "<f2")), "bf16": ("0", "0000"),
     "f32": ("2.5e3", le(2500.0, "<f4")), "f64": ("2.2250738585072014e-308",
                                                  le(2.2250738585072014e-308, "<f8")),
     "bool": ("1", "01"), "f8e4m3": ("-0.5", "b0"), "f8e5m2": ("0.5", "38")},
]


class RunSuccess(clitest.CliTestCase):

    def assertUnchanged(self, name, before):
        with open(self.path(name), "rb") as f:
            self.assertEqual(f.read(), before[name][0], "%s was modified" % name)
        self.assertEqual(self.mtime_ns(name), before[name][1], "%s was rewritten" % name)

    def assertNoStrayFiles(self, expected):
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(expected))

    def test_outputs_written_and_read_only_inputs_untouched(self):
        self.write("add.kiln", ADD)
        x = np.random.default_rng(1).standard_normal(40).astype(np.float32)
        y = np.random.default_rng(2).standard_normal(40).astype(np.float32)
        self.npy("x.npy", x)
        self.npy("y.npy", y)
        self.npy("out.npy", np.zeros(40, np.float32))
        before = clitest.snapshot(self.tmp)
        r = self.dslc("run", "add.kiln", "--grid", "3", "--arg", "x=x.npy", "--arg", "y=y.npy",
                      "--arg", "out=out.npy", "--arg", "n=40", "--device", "interp")
        self.assertOk(r)
        self.assertEqual(r.stderr, "", "an explicit --device runs silently")
        np.testing.assert_array_equal(self.load("out.npy"), x + y)
        self.assertNotEqual(self.mtime_ns("out.npy"), clitest.OLD_MTIME_NS)
        self.assertUnchanged("x.npy", before)
        self.assertUnchanged("y.npy", before)
        self.assertUnchanged("add.kiln", before)
        self.assertNoStrayFiles(["add.kiln", "x.npy", "y.npy", "out.npy"])

    def test_define_changes_the_run(self):
        # With BLOCK = 8 a grid of 4 covers 32 of the 40 elements.
        self.write("add.kiln", ADD)
        self.npy("x.npy", np.arange(40, dtype=np.float32))
        self.npy("y.npy", np.ones(40, dtype=np.float32))
        self.npy("out.npy", np.full(40, -1, dtype=np.float32))
        r = self.dslc("run", "add.kiln", "-D", "BLOCK=8", "--grid", "4", "--arg", "x=x.npy",
                      "--arg", "y=y.npy", "--arg", "out=out.npy", "--arg", "n=40")
        self.assertOk(r)
        expect = np.concatenate([np.arange(32, dtype=np.float32) + 1, np.full(8, -1, np.float32)])
        np.testing.assert_array_equal(self.load("out.npy"), expect)

    def test_kernel_selected_by_name(self):
        self.write("two.kiln", TWO)
        self.npy("p.npy", np.zeros(1, np.float32))
        self.assertOk(self.dslc("run", "two.kiln", "--kernel", "second", "--grid", "1", "--arg", "p=p.npy"))
        self.assertEqual(self.load("p.npy")[0], 2.0)
        self.assertOk(self.dslc("run", "two.kiln", "--kernel=first", "--grid", "1", "--arg", "p=p.npy"))
        self.assertEqual(self.load("p.npy")[0], 1.0)

    def test_same_file_twice_is_in_place(self):
        self.write("inc.kiln", INC)
        a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        self.npy("a.npy", a)
        self.assertOk(self.dslc("run", "inc.kiln", "--grid", "1", "--arg", "src=a.npy",
                                "--arg", "dst=a.npy", "--arg", "n=24"))
        np.testing.assert_array_equal(self.load("a.npy"), a + 1)
        self.assertNoStrayFiles(["inc.kiln", "a.npy"])

    def test_alias_through_different_spellings_of_the_path(self):
        self.write("alias.kiln", ALIAS)
        self.npy("a.npy", np.array([1, 1], dtype=np.float32))
        for b in ("a.npy", "./a.npy", self.path("a.npy"), "sub/../a.npy"):
            with self.subTest(b=b):
                os.makedirs(self.path("sub"), exist_ok=True)
                self.npy("a.npy", np.array([1, 1], dtype=np.float32))
                self.assertOk(self.dslc("run", "alias.kiln", "--grid", "1", "--arg", "a=a.npy",
                                        "--arg", "b=" + b))
                np.testing.assert_array_equal(self.load("a.npy"), [5.0, 10.0])

    def test_bf16_bit_patterns_round_trip(self):
        self.write("cp.kiln", COPY % {"t": "bf16"})
        src = np.arange(65536, dtype=np.uint16).view("V2")  # every pattern, NaNs included
        self.npy("src.npy", src)
        self.npy("dst.npy", np.zeros(65536, "V2"))
        self.assertOk(self.dslc("run", "cp.kiln", "--grid", "256", "--arg", "src=src.npy",
                                "--arg", "dst=dst.npy", "--arg", "n=65536"))
        dst = self.load("dst.npy")
        self.assertEqual(dst.dtype.str, "|V2")
        self.assertEqual(dst.shape, (65536,))
        self.assertEqual(bits(dst), bits(src))

    def test_f8_bit_patterns_round_trip(self):
        for t in ("f8e4m3", "f8e5m2"):
            with self.subTest(dtype=t):
                self.write("cp.kiln", COPY % {"t": t})
                src = np.arange(256, dtype=np.uint8).view("V1").reshape(16, 16)
                self.npy("src.npy", src)
                self.npy("dst.npy", np.zeros((16, 16), "V1"))
                self.assertOk(self.dslc("run", "cp.kiln", "--grid", "1", "--arg", "src=src.npy",
                                        "--arg", "dst=dst.npy", "--arg", "n=256"))
                dst = self.load("dst.npy")
                self.assertEqual(dst.dtype.str, "|V1")
                self.assertEqual(dst.shape, (16, 16))
                self.assertEqual(bits(dst), bits(src))

    def test_bool_arrays(self):
        self.write("flip.kiln", NOT)
        src = np.array([True, False, True, True, False, False, True, False, True, True])
        self.npy("src.npy", src)
        self.npy("dst.npy", np.zeros(10, np.bool_))
        self.assertOk(self.dslc("run", "flip.kiln", "--grid", "1", "--arg", "src=src.npy",
                                "--arg", "dst=dst.npy", "--arg", "n=10"))
        dst = self.load("dst.npy")
        self.assertEqual(dst.dtype, np.bool_)
        np.testing.assert_array_equal(dst, ~src)

    def test_arrays_of_any_rank_are_flat_buffers(self):
        self.write("inc.kiln", INC)
        for shape in [(), (1,), (7,), (2, 3), (2, 3, 4), (1, 2, 1, 3)]:
            with self.subTest(shape=shape):
                size = int(np.prod(shape, dtype=np.int64))
                a = (np.arange(size, dtype=np.float32) * 3).astype(np.float32).reshape(shape)
                self.npy("a.npy", a)
                self.npy("b.npy", np.zeros(shape, np.float32))
                self.assertOk(self.dslc("run", "inc.kiln", "--grid", "1", "--arg", "src=a.npy",
                                        "--arg", "dst=b.npy", "--arg", "n=%d" % a.size))
                b = self.load("b.npy")
                self.assertEqual(b.shape, shape)
                self.assertEqual(b.dtype, np.float32)
                np.testing.assert_array_equal(b, a + 1)

    def test_npy_format_versions_2_and_3(self):
        from numpy.lib import format as npformat
        self.write("inc.kiln", INC)
        for version in ((2, 0), (3, 0)):
            with self.subTest(version=version):
                with open(self.path("a.npy"), "wb") as f:
                    npformat.write_array(f, np.arange(5, dtype=np.float32), version=version)
                self.assertOk(self.dslc("run", "inc.kiln", "--grid", "1", "--arg", "src=a.npy",
                                        "--arg", "dst=a.npy", "--arg", "n=5"))
                np.testing.assert_array_equal(self.load("a.npy"), np.arange(5) + 1)

    def test_scalar_params_of_every_dtype(self):
        self.write("s.kiln", SCALARS)
        for i, case in enumerate(SCALAR_CASES):
            args = []
            for t in DTYPES:
                self.npy("o_%s.npy" % t, np.zeros(1, NPY_DESCR[t]))
                args += ["--arg", "o_%s=o_%s.npy" % (t, t), "--arg", "v_%s=%s" % (t, case[t][0])]
            r = self.dslc("run", "s.kiln", "--grid", "1", *args)
            self.assertOk(r)
            for t in DTYPES:
                with self.subTest(case=i, dtype=t, value=case[t][0]):
                    self.assertEqual(bits(self.load("o_%s.npy" % t)), case[t][1])

    def test_nan_scalar(self):
        self.write("s.kiln", "kernel s(o: *f32, v: f32) { store(o, v); }\n")
        self.npy("o.npy", np.zeros(1, np.float32))
        self.assertOk(self.dslc("run", "s.kiln", "--grid", "1", "--arg", "o=o.npy", "--arg", "v=nan"))
        self.assertTrue(np.isnan(self.load("o.npy")[0]))

    def test_unsigned_minus_zero(self):
        # "-0" is zero, which every unsigned type holds; all of them take it alike.
        for t in ("u8", "u16", "u32", "u64"):
            with self.subTest(dtype=t):
                self.write("s.kiln", "kernel s(o: *%s, v: %s) { store(o, v); }\n" % (t, t))
                self.npy("o.npy", np.ones(1, NPY_DESCR[t]))
                self.assertOk(self.dslc("run", "s.kiln", "--grid", "1", "--arg", "o=o.npy", "--arg", "v=-0"))
                self.assertEqual(int(self.load("o.npy")[0]), 0)

    def test_three_dimensional_grid(self):
        self.write("ids.kiln", GRID)
        self.npy("out.npy", np.full(24, -1, np.int32))
        self.assertOk(self.dslc("run", "ids.kiln", "--grid", "2,3,4", "--arg", "out=out.npy"))
        z, y, x = np.meshgrid(np.arange(4), np.arange(3), np.arange(2), indexing="ij")
        np.testing.assert_array_equal(self.load("out.npy"), (x * 100 + y * 10 + z).ravel())

    def test_atomics_are_written_back(self):
        self.write("h.kiln", HIST)
        keys = np.array([0, 1, 1, 2, 3, 3, 3, 0, 2, 2, 2, 2, 1, 0, 3, 3, 3, 3, 1, 0], np.int32)
        self.npy("keys.npy", keys)
        self.npy("hist.npy", np.zeros(4, np.int32))
        before = clitest.snapshot(self.tmp)
        self.assertOk(self.dslc("run", "h.kiln", "--grid", "3", "--arg", "keys=keys.npy",
                                "--arg", "hist=hist.npy", "--arg", "n=20"))
        np.testing.assert_array_equal(self.load("hist.npy"), np.bincount(keys, minlength=4))
        self.assertUnchanged("keys.npy", before)

    def test_write_back_keeps_the_file_mode(self):
        self.write("inc.kiln", INC)
        self.npy("a.npy", np.arange(4, dtype=np.float32))
        os.chmod(self.path("a.npy"), 0o600)
        self.assertOk(self.dslc("run", "inc.kiln", "--grid", "1", "--arg", "src=a.npy",
                                "--arg", "dst=a.npy", "--arg", "n=4"))
        np.testing.assert_array_equal(self.load("a.npy"), np.arange(4) + 1)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("a.npy")).st_mode), 0o600)

    def test_write_back_through_a_symlink_updates_the_target(self):
        self.write("inc.kiln", INC)
        os.mkdir(self.path("data"))
        self.npy("data/real.npy", np.arange(4, dtype=np.float32))
        os.symlink("data/real.npy", self.path("link.npy"))
        self.assertOk(self.dslc("run", "inc.kiln", "--grid", "1", "--arg", "src=link.npy",
                                "--arg", "dst=link.npy", "--arg", "n=4"))
        self.assertTrue(os.path.islink(self.path("link.npy")), "the symlink was replaced")
        np.testing.assert_array_equal(self.load("data/real.npy"), np.arange(4) + 1)


if __name__ == "__main__":
    clitest.main()
