#!/usr/bin/python3
#===- test_run_args.py - `dslc run` rejects bad arguments and bad runs cleanly -===#
#
# Every way a `dslc run` command line or a run can go wrong: unknown or ambiguous
# kernels, missing/unknown/repeated/malformed --arg, .npy files of the wrong dtype or
# broken, bad scalar literals, malformed grids, out-of-bounds accesses, failing device
# asserts, the step limit and bad -D overrides. Each must exit 1 with the documented
# error code in --diagnostics=json output, and must leave every file in the folder
# byte-identical with its old mtime (and create none).
#
# Usage: test_run_args.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import struct
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

TWO = """\
kernel first(p: *f32) { store(p, 1.0); }
kernel second(p: *f32) { store(p, 2.0); }
"""

# Program 0 stores, program 1 then reads far past the end of src.
OOB_LOAD = """\
kernel oob(src: *f32, dst: *f32) {
    let pid = program_id(0);
    store(dst + pid, 7.0);
    let v = load(src + pid * 100);
    store(dst + pid, v);
}
"""

OOB_STORE = """\
kernel oob(dst: *f32, n: i32) {
    let offs = program_id(0) * 4 + arange(0, 4);
    store(dst + offs, 1.0, mask = offs < n);
}
"""

OOB_NEGATIVE = """\
kernel oob(src: *f32, dst: *f32) {
    store(dst, 3.0);
    store(dst + 1, load(src - 1));
}
"""

ASSERT = """\
kernel chk(p: *f32, n: i32) {
    store(p + program_id(0), 1.0);
    assert(program_id(0) < n, "pid must be below n");
}
"""

LONG_LOOP = """\
kernel spin(p: *i32, n: i32) {
    store(p, 5);
    var acc = 0;
    for i in range(0, n) {
        acc += i;
    }
    store(p, acc);
}
"""

ENDLESS = """\
kernel spin(p: *i32) {
    store(p, 5);
    var i = 0;
    while i >= 0 {
        i = i * 1;
    }
    store(p, i);
}
"""

COPY_BF16 = """\
kernel cp(src: *bf16, dst: *bf16) { store(dst, load(src)); }
"""
COPY_I32 = """\
kernel cp(src: *i32, dst: *i32) { store(dst, load(src)); }
"""
COPY_U8 = """\
kernel cp(src: *u8, dst: *u8) { store(dst, load(src)); }
"""
COPY_F16 = """\
kernel cp(src: *f16, dst: *f16) { store(dst, load(src)); }
"""
COPY_F8 = """\
kernel cp(src: *f8e4m3, dst: *f8e4m3) { store(dst, load(src)); }
"""
COPY_BOOL = """\
kernel cp(src: *bool, dst: *bool) { store(dst, load(src)); }
"""
# Reads src only under a mask, so a run with n = 0 touches no element of it.
COPY_MASKED = """\
kernel cp(src: *f32, dst: *f32, n: i32) {
    let offs = arange(0, 4);
    store(dst + offs, load(src + offs, mask = offs < n), mask = offs < n);
}
"""


def npy_bytes(header, data=b"", version=1):
    """A .npy file with a hand-written header dict (padded as NumPy pads it)."""
    h = header.encode("latin1")
    size_len = 2 if version == 1 else 4
    pad = (64 - (6 + 2 + size_len + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    length = struct.pack("<H" if version == 1 else "<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h + data


class RunArgs(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("add.kiln", ADD)
        self.npy("x.npy", np.arange(40, dtype=np.float32))
        self.npy("y.npy", np.ones(40, dtype=np.float32))
        self.npy("out.npy", np.zeros(40, dtype=np.float32))

    def rejected(self, code, *args, message=None, all_code=True):
        """Runs dslc with JSON diagnostics and checks the error and untouched files."""
        before = clitest.snapshot(self.tmp)
        result = self.dslc(*args, "--diagnostics=json")
        errors = self.assertUserError(result, code, message, all_code)
        after = clitest.snapshot(self.tmp)
        self.assertEqual(sorted(after), sorted(before), "files were created or removed")
        for name in before:
            self.assertEqual(after[name][0], before[name][0], "%s was rewritten" % name)
            self.assertEqual(after[name][1], before[name][1], "%s has a new mtime" % name)
        return errors

    def rejected_many(self, code, argvs, message=None):
        """rejected() for several command lines, run concurrently."""
        before = clitest.snapshot(self.tmp)
        results = self.dslc_many([list(a) + ["--diagnostics=json"] for a in argvs])
        for argv, result in zip(argvs, results):
            with self.subTest(argv=" ".join(argv)):
                self.assertUserError(result, code, message)
        after = clitest.snapshot(self.tmp)
        self.assertEqual(sorted(after), sorted(before), "files were created or removed")
        for name in before:
            self.assertEqual(after[name][:2], before[name][:2], "%s was rewritten" % name)

    def add_args(self, **override):
        args = {"x": "x.npy", "y": "y.npy", "out": "out.npy", "n": "40"}
        args.update(override)
        out = []
        for k, v in args.items():
            if v is not None:
                out += ["--arg", "%s=%s" % (k, v)]
        return out

    def run_add(self, code, *extra, message=None, grid="3", **override):
        return self.rejected(code, "run", "add.kiln", "--grid", grid, *self.add_args(**override),
                             *extra, message=message)

    # ---- kernels -----------------------------------------------------------------

    def test_unknown_kernel(self):
        self.run_add("E0106", "--kernel", "nope", message="nope")

    def test_several_kernels_without_kernel_option(self):
        self.write("two.kiln", TWO)
        errors = self.rejected("E0106", "run", "two.kiln", "--grid", "1", "--arg", "p=out.npy")
        self.assertIn("first", errors[0]["message"])
        self.assertIn("second", errors[0]["message"])

    def test_missing_input_file(self):
        self.rejected("E0001", "run", "nothere.kiln", "--grid", "1")

    # ---- --arg -------------------------------------------------------------------

    def test_missing_pointer_and_scalar_args(self):
        errors = self.run_add("E0600", y=None, n=None)
        self.assertEqual(len(errors), 2, errors)
        self.assertTrue(any("'y: *f32'" in e["message"] for e in errors), errors)
        self.assertTrue(any("'n: i32'" in e["message"] for e in errors), errors)
        for e in errors:
            self.assertEqual((e["file"], e["line"], e["col"]), ("", 0, 0))

    def test_unknown_parameter(self):
        self.run_add("E0600", "--arg", "zz=3", message="no parameter 'zz'")

    def test_const_parameter_is_not_an_arg(self):
        # BLOCK is a compile-time parameter: it is set with -D, not --arg.
        self.run_add("E0600", "--arg", "BLOCK=8", message="BLOCK")

    def test_repeated_parameter(self):
        self.run_add("E0600", "--arg", "n=3", message="more than once")

    def test_repeated_pointer_parameter(self):
        self.run_add("E0600", "--arg", "x=y.npy", message="more than once")

    def test_arg_without_equals(self):
        self.run_add("E0600", "--arg", "n40", message="malformed --arg 'n40'", n=None)

    def test_arg_with_empty_name(self):
        self.rejected("E0600", "run", "add.kiln", "--grid", "3", *self.add_args(), "--arg", "=40",
                      message="malformed --arg '=40'")

    # ---- .npy files --------------------------------------------------------------

    def check_dtype_rejected(self, kernel, array):
        self.write("k.kiln", kernel)
        self.npy("src.npy", array)
        self.npy("dst.npy", array)
        self.rejected("E0601", "run", "k.kiln", "--grid", "1", "--arg", "src=src.npy",
                      "--arg", "dst=dst.npy")

    def test_f64_for_f32(self):
        self.npy("x64.npy", np.arange(40, dtype=np.float64))
        self.run_add("E0601", x="x64.npy", message="float64")

    def test_f16_for_bf16(self):
        self.check_dtype_rejected(COPY_BF16, np.zeros(4, np.float16))

    def test_f32_for_bf16(self):
        self.check_dtype_rejected(COPY_BF16, np.zeros(4, np.float32))

    def test_raw_bytes_for_f16(self):
        # '|V2' is how bf16 travels; it must not be taken for f16.
        self.check_dtype_rejected(COPY_F16, np.zeros(4, "V2"))

    def test_raw_two_bytes_for_f8(self):
        self.check_dtype_rejected(COPY_F8, np.zeros(4, "V2"))

    def test_i64_for_i32(self):
        self.check_dtype_rejected(COPY_I32, np.zeros(4, np.int64))

    def test_u32_for_i32(self):
        self.check_dtype_rejected(COPY_I32, np.zeros(4, np.uint32))

    def test_i8_for_u8(self):
        self.check_dtype_rejected(COPY_U8, np.zeros(4, np.int8))

    def test_u8_for_bool(self):
        self.check_dtype_rejected(COPY_BOOL, np.zeros(4, np.uint8))

    def test_bool_for_u8(self):
        self.check_dtype_rejected(COPY_U8, np.zeros(4, np.bool_))

    def test_same_file_for_different_pointee_types(self):
        self.write("k.kiln", "kernel k(a: *f32, b: *i32) { store(a, 1.0); store(b, 1); }\n")
        self.rejected("E0601", "run", "k.kiln", "--grid", "1", "--arg", "a=out.npy", "--arg", "b=out.npy")

    def test_text_file_as_npy(self):
        self.write("text.npy", "x,y\n1,2\n")
        self.run_add("E0601", x="text.npy", message="not a .npy file")

    def test_empty_npy(self):
        self.write("empty.npy", b"")
        self.run_add("E0601", x="empty.npy")

    def test_truncated_data(self):
        with open(self.path("x.npy"), "rb") as f:
            data = f.read()
        self.write("trunc.npy", data[:-7])
        self.run_add("E0601", x="trunc.npy", message="shorter")

    def test_truncated_header(self):
        with open(self.path("x.npy"), "rb") as f:
            data = f.read()
        self.write("trunc.npy", data[:30])
        self.run_add("E0601", x="trunc.npy")

    def test_fortran_order(self):
        self.npy("f.npy", np.asfortranarray(np.arange(40, dtype=np.float32).reshape(8, 5)))
        self.run_add("E0601", x="f.npy", message="Fortran")

    def test_big_endian(self):
        self.npy("be.npy", np.arange(40, dtype=">f4"))
        self.run_add("E0601", x="be.npy", message="big-endian")

    def test_missing_npy(self):
        self.run_add("E0601", x="absent.npy", message="absent.npy")

    def test_directory_as_npy(self):
        os.mkdir(self.path("dir.npy"))
        self.run_add("E0601", x="dir.npy")

    def test_unsupported_dtypes(self):
        for name, array in [("c", np.zeros(4, np.complex64)), ("u", np.zeros(4, "<U3")),
                            ("s", np.zeros(4, [("a", "<f4"), ("b", "<i4")]))]:
            with self.subTest(dtype=str(array.dtype)):
                self.npy(name + ".npy", array)
                self.run_add("E0601", x=name + ".npy")

    def test_unknown_format_version(self):
        self.write("v9.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (40,), }",
                                       b"\0" * 160, version=9))
        self.run_add("E0601", x="v9.npy", message="version")

    def test_malformed_header(self):
        self.write("h.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False}", b"\0" * 160))
        self.run_add("E0601", x="h.npy")

    def test_negative_shape(self):
        self.write("neg.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }"))
        self.run_add("E0601", x="neg.npy", message="shape")

    def test_shape_whose_size_overflows(self):
        # 2^32 * 2^32 elements wrap to 0 in 64-bit arithmetic; the file holds no data.
        # The kernel reads nothing from src (n = 0), so only the reader can refuse it.
        self.write("k.kiln", COPY_MASKED)
        self.write("big.npy", npy_bytes(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 1), }"))
        self.npy("dst.npy", np.zeros(4, np.float32))
        self.rejected("E0601", "run", "k.kiln", "--grid", "1", "--arg", "src=big.npy",
                      "--arg", "dst=dst.npy", "--arg", "n=0")

    # ---- scalar literals ---------------------------------------------------------

    def test_scalar_literal_errors(self):
        # One kernel with a scalar parameter per bad literal: one run reports each once.
        cases = [("i32", "abc"), ("i32", "1.5"), ("i32", ""), ("i32", "1e3"), ("i32", " 1"),
                 ("i32", "1 "), ("i32", "true"), ("i32", "2147483648"), ("i32", "-2147483649"),
                 ("i32", "0x"), ("i32", "--1"), ("i32", "_100"), ("i32", "100_"), ("i32", "1__00"),
                 ("i32", "0x_10"), ("f32", "_1.5"), ("f32", "1._5"), ("f32", "1__0.5"), ("f32", "1.5_"),
                 ("i8", "128"), ("i8", "-129"), ("i8", "0x80"),
                 ("u8", "256"), ("u8", "-1"), ("i16", "32768"), ("u16", "65536"),
                 ("u32", "4294967296"), ("i64", "9223372036854775808"),
                 ("i64", "-9223372036854775809"), ("u64", "18446744073709551616"), ("u64", "-1"),
                 ("f32", "true"), ("f32", "abc"), ("f32", ""), ("f32", "1e999"), ("f32", "1.0f"),
                 ("f32", "1,5"), ("f64", "-1e400"), ("f16", "x"), ("bf16", "one"),
                 ("bool", "2"), ("bool", "yes"), ("bool", "True"), ("bool", "1.0")]
        params = ", ".join("p%d: %s" % (i, t) for i, (t, _) in enumerate(cases))
        self.write("s.kiln", "kernel s(out: *f32, %s) { store(out, 1.0); }\n" % params)
        self.npy("s_out.npy", np.zeros(1, np.float32))
        args = ["--arg", "out=s_out.npy"]
        for i, (_, text) in enumerate(cases):
            args += ["--arg", "p%d=%s" % (i, text)]
        errors = self.rejected("E0600", "run", "s.kiln", "--grid", "1", *args)
        for i, (t, text) in enumerate(cases):
            with self.subTest(dtype=t, value=text):
                named = [e for e in errors if "'p%d: %s'" % (i, t) in e["message"]]
                self.assertEqual(len(named), 1, errors)
        self.assertEqual(len(errors), len(cases))

    # ---- grid --------------------------------------------------------------------

    def test_malformed_grids(self):
        grids = ["0", "-1", "1,2,3,4", "a", "", "1,", ",1", "1,,2", "1,0", "2,-3",
                 "2147483648", "3x", " 3", "1.5", "99999999999999999999",
                 # A grid is a count: plain decimal digits, as the error's hint says.
                 "+4", "0x10", "1_0", "4,+2"]
        self.rejected_many("E0606", [["run", "add.kiln", "--grid", g] + self.add_args() for g in grids])

    def test_missing_grid(self):
        self.rejected("E0606", "run", "add.kiln", *self.add_args())

    # ---- failures during the run -------------------------------------------------

    def test_out_of_bounds_load_after_other_stores(self):
        self.write("oob.kiln", OOB_LOAD)
        self.npy("src.npy", np.arange(8, dtype=np.float32))
        self.npy("dst.npy", np.zeros(8, dtype=np.float32))
        errors = self.rejected("E0602", "run", "oob.kiln", "--grid", "4", "--arg", "src=src.npy",
                               "--arg", "dst=dst.npy")
        e = errors[0]
        self.assertEqual((e["file"], e["line"], e["col"]), ("oob.kiln", 4, 13), e)
        self.assertIn("src.npy", e["message"])
        self.assertIn("100", e["message"])  # the element index

    def test_out_of_bounds_load_text_form(self):
        self.write("oob.kiln", OOB_LOAD)
        self.npy("src.npy", np.arange(8, dtype=np.float32))
        self.npy("dst.npy", np.zeros(8, dtype=np.float32))
        result = self.dslc("run", "oob.kiln", "--grid", "4", "--arg", "src=src.npy", "--arg", "dst=dst.npy",
                           "--device", "interp")
        self.assertExit(result, 1)
        lines = result.stderr.splitlines()
        self.assertRegex(lines[0], r"^oob\.kiln:4:13: error\[E0602\]: ")
        self.assertEqual(lines[1], "      let v = load(src + pid * 100);")
        self.assertEqual(lines[2], " " * 14 + "^")

    def test_out_of_bounds_store(self):
        self.write("oob.kiln", OOB_STORE)
        self.npy("dst.npy", np.zeros(10, dtype=np.float32))
        errors = self.rejected("E0602", "run", "oob.kiln", "--grid", "3", "--arg", "dst=dst.npy",
                               "--arg", "n=12")
        self.assertEqual((errors[0]["line"], errors[0]["col"]), (3, 5), errors[0])

    def test_out_of_bounds_negative_offset(self):
        self.write("oob.kiln", OOB_NEGATIVE)
        self.npy("src.npy", np.arange(8, dtype=np.float32))
        self.npy("dst.npy", np.zeros(8, dtype=np.float32))
        errors = self.rejected("E0602", "run", "oob.kiln", "--grid", "1", "--arg", "src=src.npy",
                               "--arg", "dst=dst.npy")
        self.assertEqual((errors[0]["line"], errors[0]["col"]), (3, 20), errors[0])  # the load

    def test_device_assert(self):
        self.write("chk.kiln", ASSERT)
        self.npy("p.npy", np.zeros(8, dtype=np.float32))
        errors = self.rejected("E0604", "run", "chk.kiln", "--grid", "4", "--arg", "p=p.npy", "--arg", "n=2")
        e = errors[0]
        self.assertEqual((e["file"], e["line"], e["col"]), ("chk.kiln", 3, 5), e)
        self.assertIn("pid must be below n", e["message"])

    def test_step_limit_on_long_loop(self):
        self.write("loop.kiln", LONG_LOOP)
        self.npy("p.npy", np.zeros(1, dtype=np.int32))
        errors = self.rejected("E0605", "run", "loop.kiln", "--grid", "1", "--arg", "p=p.npy",
                               "--arg", "n=100000000", "--max-steps", "1000")
        self.assertEqual(errors[0]["file"], "loop.kiln")
        self.assertIn(errors[0]["line"], (4, 5, 6), errors[0])  # the loop, lines 4-6

    def test_step_limit_on_endless_loop(self):
        self.write("spin.kiln", ENDLESS)
        self.npy("p.npy", np.zeros(1, dtype=np.int32))
        errors = self.rejected("E0605", "run", "spin.kiln", "--grid", "1", "--arg", "p=p.npy",
                               "--max-steps", "1000")
        self.assertIn(errors[0]["line"], (4, 5, 6), errors[0])

    # ---- -D ----------------------------------------------------------------------

    def test_malformed_defines(self):
        defines = ["BLOCK", "1X=2", "=3", "BLOCK=", "BL-OCK=4"]
        argvs = [["run", "add.kiln", "--grid", "3", "-D", d] + self.add_args() for d in defines]
        argvs += [["add.kiln", "-D", d] for d in defines]
        self.rejected_many("E0108", argvs, message="malformed -D")

    def test_define_of_unknown_const(self):
        self.rejected_many("E0107", [["run", "add.kiln", "--grid", "3", "-D", "NOPE=4"] + self.add_args(),
                                     ["add.kiln", "-D", "NOPE=4"]], message="NOPE")

    def test_define_of_wrong_type(self):
        values = ["1.5", "abc", "true", "99999999999", "1 6", "0x"]
        argvs = [["run", "add.kiln", "--grid", "3", "-D", "BLOCK=" + v] + self.add_args() for v in values]
        argvs += [["add.kiln", "-D", "BLOCK=" + v] for v in values]
        self.rejected_many("E0108", argvs, message="BLOCK")

    def test_defines_across_the_integer_range(self):
        # u64 holds what i64 cannot; beyond both, the message says so instead of
        # calling the digits a float.
        self.write("u.kiln", "kernel k(x: *u64, const A: u64 = 0) {\n    store(x, A);\n}\n")
        for value, bits in (("18446744073709551615", "-1"), ("9223372036854775808", "-9223372036854775808"),
                            ("0xffff_ffff_ffff_ffff", "-1"), ("7", "7")):
            with self.subTest(value=value):
                r = self.dslc("u.kiln", "-D", "A=" + value)
                self.assertOk(r)
                self.assertIn("constant {value = %s} : u64" % bits, r.stdout)
        for value in ("99999999999999999999", "-9223372036854775809"):
            with self.subTest(value=value):
                self.rejected("E0108", "u.kiln", "-D", "A=" + value, message="outside the range of every integer type")
        self.rejected("E0108", "add.kiln", "-D", "BLOCK=9223372036854775808", message="does not fit")

    # ---- option values the option parser itself rejects -------------------------

    def test_bad_option_values_are_coded_json(self):
        # A malformed option value is an error in the arguments: exit 1, and with
        # --diagnostics=json every line of stderr is a coded JSON diagnostic.
        for extra in (["--max-steps=abc"], ["--device", "tpu"], ["--device", ""],
                      ["--device", "cuda", "--max-steps", "10"]):
            with self.subTest(option=extra):
                self.run_add("E0600", *extra)


# A row sum over a block mask, with predicates for `--arg mask=PRED(ROWS,COLS,...)`.
MASKED = """\
fn band(r, c, w) { return abs(r - c) <= w; }
fn not_bool(r, c) { return r - c; }
kernel row_sum(x: *f32, out: *f32, mask: block_mask<4, 8>) {
    let rb = program_id(0);
    let rows = rb * 4 + arange(0, 4);
    var acc = zeros([4], f32);
    for kb in blocks(mask, rb) {
        let cols = kb * 8 + arange(0, 8);
        acc += sum(load(x + rows[:, None] * mask.cols + cols[None, :], mask = mask.elements(rb, kb), other = 0.0),
                   axis = 1);
    }
    store(out + rows, acc, mask = rows < mask.rows);
}
"""


class PredicateMasks(clitest.CliTestCase):
    """`--arg mask=PRED(ROWS,COLS,...)`: dslc builds the mask from a Kiln predicate."""

    def setUp(self):
        super().setUp()
        self.write("masked.kiln", MASKED)
        self.x = np.random.default_rng(3).standard_normal((37, 45)).astype(np.float32)
        self.npy("x.npy", self.x)
        self.npy("out.npy", np.zeros(37, np.float32))

    def run_masked(self, mask, *extra, source="masked.kiln"):
        return self.dslc("run", source, "--grid", "10", "--arg", "x=x.npy", "--arg", "out=out.npy",
                         "--arg", "mask=" + mask, "--device", "interp", *extra)

    def test_a_programs_own_predicate_wins_over_the_stdlibs(self):
        # The program defines `causal` the other way round (keys after the query): its
        # own is used, without a clash with stdlib/block_masks.kiln's.
        self.write("own.kiln", "fn causal(r, c) { return c >= r; }\n" + MASKED)
        r, c = np.arange(37)[:, None], np.arange(45)[None, :]
        self.assertOk(self.run_masked("causal(37,45)", source="own.kiln"))
        np.testing.assert_allclose(self.load("out.npy"), np.where(c >= r, self.x, 0).sum(axis=1), rtol=1e-5,
                                   atol=1e-5)

    def test_program_and_stdlib_predicates(self):
        r, c = np.arange(37)[:, None], np.arange(45)[None, :]
        for mask, keep in (("band(37,45,3)", np.abs(r - c) <= 3), ("causal(37, 45)", c <= r),
                           ("longformer(37,45,2,5)", (np.abs(r - c) <= 2) | (r < 5) | (c < 5))):
            with self.subTest(mask=mask):
                self.assertOk(self.run_masked(mask))
                np.testing.assert_allclose(self.load("out.npy"), np.where(keep, self.x, 0).sum(axis=1),
                                           rtol=1e-5, atol=1e-5)

    def rejected(self, code, mask, message=None, all_code=True, source="masked.kiln"):
        before = clitest.snapshot(self.tmp)
        result = self.run_masked(mask, "--diagnostics=json", source=source)
        errors = self.assertUserError(result, code, message, all_code)
        after = clitest.snapshot(self.tmp)
        self.assertEqual(sorted(after), sorted(before), "files were created or removed")
        for name in before:
            self.assertEqual(after[name][:2], before[name][:2], "%s was rewritten" % name)
        return errors

    def test_malformed_spellings(self):
        for mask in ("band(37,45,)", "band(37)", "band(37,45,99999999999)", "band(1,2,3,4,5,6,7,8,9)",
                     "band(37,45,x)"):
            with self.subTest(mask=mask):
                self.rejected("E0608", mask, message="PREDICATE\\(ROWS,COLS")

    def test_extents_out_of_range(self):
        for mask in ("band(0,45,3)", "band(37,0,3)", "band(3000000000,45,3)", "band(37,45,3000000000)"):
            with self.subTest(mask=mask):
                self.rejected("E0608", mask)

    def test_predicate_that_does_not_compile(self):
        # Each is reported where it goes wrong, then as the argument's error.
        for mask, code in (("nope(37,45)", "E0400"), ("not_bool(37,45)", "E0302"), ("band(37,45)", "E0401"),
                           ("causal(37,45,1)", "E0401")):
            with self.subTest(mask=mask):
                errors = self.rejected("E0608", mask, message="does not compile as the mask's element predicate",
                                       all_code=False)
                self.assertIn(code, [e["code"] for e in errors])

    def test_tile_ir_input(self):
        r = self.dslc("masked.kiln", "--emit=tir", "-o", self.path("masked.tir"))
        self.assertOk(r)
        self.rejected("E0608", "band(37,45,3)", message="Tile IR", source="masked.tir")


# A row sum whose mask must be S x 45: block_mask<4, 8, S, 45>.
DECLARED = """\
kernel row_sum(x: *f32, out: *f32, mask: block_mask<4, 8, S, 45>, S: i32) {
    let rb = program_id(0);
    let rows = rb * 4 + arange(0, 4);
    var acc = zeros([4], f32);
    for kb in blocks(mask, rb) {
        let cols = kb * 8 + arange(0, 8);
        acc += sum(load(x + rows[:, None] * 45 + cols[None, :], mask = mask.elements(rb, kb), other = 0.0), axis = 1);
    }
    store(out + rows, acc, mask = rows < S);
}
"""


class MaskExtents(clitest.CliTestCase):
    """A mask whose extents differ from those its kernel declares is E0608, before anything runs."""

    def setUp(self):
        super().setUp()
        self.write("declared.kiln", DECLARED)
        self.npy("x.npy", np.ones((37, 45), np.float32))
        self.npy("out.npy", np.zeros(37, np.float32))
        self.npy("m.npy", np.tril(np.ones((37, 45), bool)))
        self.npy("narrow.npy", np.ones((37, 44), bool))

    def run_declared(self, mask, s, *extra):
        return self.dslc("run", "declared.kiln", "--grid", "10", "--arg", "x=x.npy", "--arg", "out=out.npy",
                         "--arg", "mask=" + mask, "--arg", "S=%d" % s, "--device", "interp", *extra)

    def test_matching_extents_run(self):
        self.assertOk(self.run_declared("m.npy", 37))
        np.testing.assert_array_equal(self.load("out.npy"), np.tril(np.ones((37, 45))).sum(axis=1))
        self.assertOk(self.run_declared("causal(37,45)", 37))

    def test_mismatches(self):
        for mask, s, message in (("m.npy", 36, "the mask has 37 rows, but kernel 'row_sum' declares S = 36 rows"),
                                 ("narrow.npy", 37, "the mask has 44 columns, but kernel 'row_sum' declares 45"),
                                 ("causal(40,45)", 37, "the mask has 40 rows")):
            with self.subTest(mask=mask):
                before = clitest.snapshot(self.tmp)
                r = self.run_declared(mask, s, "--diagnostics=json")
                errors = self.assertUserError(r, "E0608", message)
                self.assertIn("block_mask<4, 8, S, 45>", errors[0]["message"])
                self.assertEqual(clitest.snapshot(self.tmp), before, "files changed on an error")


if __name__ == "__main__":
    clitest.main()
