#!/usr/bin/python3
#===- test_cli_options.py - dslc and dslc-opt options besides `run` arguments --===#
#
# --help/--version, the README's commands, --emit=ast|tir to stdout and to -o, Tile IR
# (.tir) input that prints back identically, dslc-opt's pass list and passes, -I import
# search, --verify-diagnostics (passing, and failing with a message on a wrong or
# missing expectation), --time-passes and --print-after-all.
#
# Usage: test_cli_options.py --dslc build/tools/dslc [--dslc-opt PATH] [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import random
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

EXAMPLES = os.path.join(clitest.REPO, "examples")

ADD = """\
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 16) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
}
"""

# Foldable arithmetic, a common subexpression and a dead value: every pass has work.
WORK = """\
kernel work(p: *f32, n: i32) {
    let offs = arange(0, 16);
    let a = offs * 1 + 0;
    let b = (n + 2) * 3;
    let c = (n + 2) * 3;
    let unused = load(p + offs) * 7.0;
    store(p + a, (b + c).to(f32), mask = offs < n);
}
"""


def example_files():
    return sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".kiln"))


def readme_commands():
    """The shell commands of README.md's "Using dslc" block, continuations joined."""
    with open(os.path.join(clitest.REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Using dslc"):]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1)
    commands, pending = [], ""
    for line in block.splitlines():
        line = line.split("#", 1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            commands.append(shlex.split(line))
    return commands


def help_option_names(help_text):
    """Option names that a --help text lists (`--emit`, `-D`, ...)."""
    names = set()
    for line in help_text.splitlines():
        m = re.match(r"^\s+(-{1,2}[A-Za-z0-9][\w-]*)", line)
        if m:
            names.add(m.group(1))
    return names


class HelpAndVersion(clitest.CliTestCase):

    def test_help_lists_every_readme_option(self):
        helps = {"dslc": self.dslc("--help"), "run": self.dslc("run", "--help"),
                 "dslc-opt": self.dslc_opt("--help"), "kiln-run": self.kiln_run("--help")}
        for r in helps.values():
            self.assertOk(r)
        listed = {k: help_option_names(r.stdout) for k, r in helps.items()}
        commands = readme_commands()
        self.assertGreaterEqual(len(commands), 5)
        for argv in commands:
            which = "run" if argv[:2] == ["dslc", "run"] else argv[0]
            for word in argv[1:]:
                if word.startswith("-"):
                    name = word.split("=", 1)[0]
                    with self.subTest(command=" ".join(argv), option=name):
                        self.assertIn(name, listed[which], helps[which].stdout)

    def test_run_help_lists_run_options(self):
        r = self.dslc("run", "--help")
        self.assertOk(r)
        names = help_option_names(r.stdout)
        for name in ("--kernel", "--grid", "--arg", "--device", "--max-steps", "-D", "-I", "--diagnostics"):
            self.assertIn(name, names, r.stdout)

    def test_version(self):
        for tool in ("dslc", "dslc-opt"):
            with self.subTest(tool=tool):
                r = clitest.run_tool(tool, ["--version"], self.tmp)
                self.assertOk(r)
                self.assertRegex(r.stdout.strip(), r"^%s \(Kiln\) \d+\.\d+\.\d+$" % re.escape(tool))

    def test_unknown_option_and_no_input(self):
        self.write("add.kiln", ADD)
        for args in (["--frobnicate", "add.kiln"], ["add.kiln", "--emit=frobnicate"], []):
            with self.subTest(args=args):
                r = self.dslc(*args)
                self.assertExit(r, 1)
                self.assertEqual(r.stdout, "")
                self.assertTrue(r.stderr.strip())

    def test_missing_input_file(self):
        r = self.dslc("absent.kiln", "--diagnostics=json")
        errors = self.assertUserError(r, "E0001")
        self.assertIn("absent.kiln", errors[0]["message"])
        for args in ([], ["run", "--kernel", "k", "--grid", "1"]):
            with self.subTest(args=args):
                self.assertUserError(self.dslc(*args, "--diagnostics=json"), "E0001", message="no input file")

    def test_readme_commands_work(self):
        os.makedirs(self.path("examples"))
        shutil.copy(os.path.join(EXAMPLES, "softmax.kiln"), self.path("examples/softmax.kiln"))
        os.makedirs(self.path("stdlib"))
        shutil.copy(os.path.join(clitest.REPO, "stdlib", "attention.kiln"), self.path("stdlib/attention.kiln"))
        rows, cols = 64, 1000
        x = np.random.default_rng(7).standard_normal((rows, cols)).astype(np.float32)
        self.npy("x.npy", x)
        self.npy("y.npy", np.zeros((rows, cols), np.float32))
        self.write("bad.kiln", "kernel k(p: *f32) { store(p, nope); }\n")
        self.write("kernel.tir", self.dslc("examples/softmax.kiln").stdout)
        fake_cuda = clitest.FAKE_DRIVERS["cuda"]
        for argv in readme_commands():
            with self.subTest(command=" ".join(argv)):
                # kiln-run needs a GPU driver: the stand-in one when built, else none.
                gpu_run = argv[0] == "kiln-run" and "--describe" not in argv
                env = {"KILN_CUDA_LIBRARY": fake_cuda} if gpu_run and fake_cuda else None
                r = clitest.run_tool(argv[0], argv[1:], self.tmp, env=env)
                if "bad.kiln" in argv:
                    self.assertUserError(r, "E0200")
                    continue
                if gpu_run and not fake_cuda:
                    self.assertExit(r, 1)
                    self.assertIn("E0901", r.stderr)
                    continue
                self.assertOk(r)
                if argv[1] == "run":
                    e = np.exp(x - x.max(axis=1, keepdims=True))
                    np.testing.assert_allclose(self.load("y.npy"), e / e.sum(axis=1, keepdims=True),
                                               rtol=1e-5, atol=1e-7)


class Emit(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("add.kiln", ADD)

    def test_emit_tir_to_stdout_and_file(self):
        r = self.dslc("add.kiln", "--emit=tir")
        self.assertOk(r)
        self.assertTrue(r.stdout.startswith("kernel @add(%x: *f32, %y: *f32, %out: *f32, %n: i32)"), r.stdout)
        self.assertIn("BLOCK = 16", r.stdout)
        self.assertEqual(r.stderr, "")
        default = self.dslc("add.kiln")
        self.assertEqual(default.stdout, r.stdout, "--emit=tir is the default")
        to_file = self.dslc("add.kiln", "--emit=tir", "-o", "add.tir")
        self.assertOk(to_file)
        self.assertEqual(to_file.stdout, "")
        with open(self.path("add.tir"), encoding="utf-8") as f:
            self.assertEqual(f.read(), r.stdout)
        dash = self.dslc("add.kiln", "-o", "-")
        self.assertEqual(dash.stdout, r.stdout)

    def test_emit_tir_follows_defines(self):
        r = self.dslc("add.kiln", "-D", "BLOCK=64")
        self.assertOk(r)
        self.assertIn("BLOCK = 64", r.stdout)
        self.assertIn("tile<i32, [64]>", r.stdout)
        self.assertNotIn("[16]", r.stdout)

    def test_emit_ast_to_stdout_and_file(self):
        r = self.dslc("add.kiln", "--emit=ast")
        self.assertOk(r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "Module")
        self.assertRegex(lines[1], r"^\s+KernelItem add 1:1$")
        self.assertIn("arange", r.stdout)
        to_file = self.dslc("add.kiln", "--emit=ast", "-o", "add.ast")
        self.assertOk(to_file)
        self.assertEqual(to_file.stdout, "")
        with open(self.path("add.ast"), encoding="utf-8") as f:
            self.assertEqual(f.read(), r.stdout)

    def test_output_not_written_on_error(self):
        # A semantic error (--emit=tir) and a syntax error (--emit=ast) leave -o alone.
        self.write("out.txt", "previous contents\n")
        self.write("bad.kiln", "kernel k(p: *f32) { store(p, nope); }\n")
        self.write("worse.kiln", "kernel k(p: *f32) { store(p 1.0); }\n")
        before = clitest.snapshot(self.tmp)
        for src, emit in (("bad.kiln", "tir"), ("worse.kiln", "ast"), ("worse.kiln", "tir")):
            with self.subTest(src=src, emit=emit):
                r = self.dslc(src, "--emit=" + emit, "-o", "out.txt", "--diagnostics=json")
                self.assertExit(r, 1)
                self.assertEqual(clitest.snapshot(self.tmp), before)

    def test_unwritable_output(self):
        os.mkdir(self.path("dir"))
        for target in ("dir", "no/such/dir/out.tir"):
            for emit in ("tir", "bundle"):
                with self.subTest(target=target, emit=emit):
                    self.assertUserError(self.dslc("add.kiln", "--emit=" + emit, "-o", target, "--diagnostics=json"),
                                         "E0008")
        # A full device: the reason is given, and the exit status says the output was lost.
        for emit in ("tir", "ptx", "bundle"):
            with self.subTest(target="/dev/full", emit=emit):
                self.assertUserError(self.dslc("add.kiln", "--emit=" + emit, "-o", "/dev/full", "--diagnostics=json"),
                                     "E0008", message="No space left on device")

    def test_lost_stdout_is_an_error(self):
        # Results printed to a standard output that cannot take them must not exit 0.
        for args in (["add.kiln"], ["add.kiln", "--emit=ptx"], ["add.kiln", "--emit=bundle"]):
            with self.subTest(args=args):
                with open("/dev/full", "w") as full:
                    p = subprocess.run([clitest.TOOLS["dslc"]] + args + ["--diagnostics=json"], cwd=self.tmp,
                                       stdout=full, stderr=subprocess.PIPE, timeout=30,
                                       env=dict(os.environ, **clitest.NO_DRIVER_ENV))
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("E0008", p.stderr.decode())

    def test_output_replaces_the_file_a_link_names(self):
        # -o onto a symbolic link updates the file it names and keeps its permissions.
        self.write("target.tir", "old\n")
        os.chmod(self.path("target.tir"), 0o600)
        os.symlink("target.tir", self.path("link.tir"))
        for emit in ("tir", "bundle"):
            with self.subTest(emit=emit):
                self.assertOk(self.dslc("add.kiln", "--emit=" + emit, "-o", "link.tir"))
                self.assertTrue(os.path.islink(self.path("link.tir")))
                self.assertEqual(os.stat(self.path("target.tir")).st_mode & 0o777, 0o600)
                with open(self.path("target.tir"), "rb") as f:
                    self.assertNotEqual(f.read(), b"old\n")

    def test_inputs_that_are_not_files(self):
        os.mkdir(self.path("dir.kiln"))
        os.mkdir(self.path("dir.tir"))
        for args in (["dir.kiln"], ["dir.tir"], ["dir.kiln", "--emit=ast"], ["run", "dir.kiln", "--kernel", "k",
                                                                          "--grid", "1", "--device", "interp"]):
            with self.subTest(args=args):
                self.assertUserError(self.dslc(*args, "--diagnostics=json"), "E0001", message="Is a directory")
        # A device that never ends is refused before a byte is read.
        r = self.dslc("/dev/zero", "--diagnostics=json")
        self.assertUserError(r, "E0001", message="not a regular file \\(a character device\\)")

    def test_print_locations(self):
        r = self.dslc("add.kiln", "--print-locations")
        self.assertOk(r)
        self.assertIn('loc("add.kiln":4:5)', r.stdout)  # the store
        self.assertNotIn("loc(", self.dslc("add.kiln").stdout)


class TileIRInput(clitest.CliTestCase):

    def test_examples_print_back_identically(self):
        for path in example_files():
            name = os.path.basename(path)
            with self.subTest(example=name):
                first = self.dslc(path)
                self.assertOk(first)
                self.write(name + ".tir", first.stdout)
                again = self.dslc(name + ".tir")
                self.assertOk(again)
                self.assertEqual(again.stdout, first.stdout)
                no_passes = self.dslc(name + ".tir", "--O0")
                self.assertEqual(no_passes.stdout, first.stdout)

    def test_unoptimized_ir_resumes_through_the_pipeline(self):
        # `--O0` stops before the passes; feeding its text back runs them.
        for path in example_files():
            name = os.path.basename(path)
            with self.subTest(example=name):
                raw = self.dslc(path, "--O0")
                self.assertOk(raw)
                self.write(name + ".raw.tir", raw.stdout)
                resumed = self.dslc(name + ".raw.tir")
                self.assertOk(resumed)
                # The text form spells the printer's suffixes into the names (%start_2),
                # so a pass that deletes a loop can leave other suffixes than it would
                # from source: compare the IR with the suffixes of named values dropped.
                plain = lambda text: re.sub(r"(%[A-Za-z]\w*?)(?:_\d+)+\b", r"\1", text)  # noqa: E731
                self.assertEqual(plain(resumed.stdout), plain(self.dslc(path).stdout))

    def test_locations_survive_the_text_form(self):
        path = os.path.join(EXAMPLES, "softmax.kiln")
        first = self.dslc(path, "--print-locations")
        self.assertOk(first)
        self.write("s.tir", first.stdout)
        again = self.dslc("s.tir", "--print-locations")
        self.assertOk(again)
        self.assertEqual(again.stdout, first.stdout)

    def test_tir_kernel_selection(self):
        self.write("two.kiln", "kernel a(p: *f32) { store(p, 1.0); }\nkernel b(p: *f32) { store(p, 2.0); }\n")
        self.write("two.tir", self.dslc("two.kiln").stdout)
        only_b = self.dslc("two.tir", "--kernel", "b")
        self.assertOk(only_b)
        self.assertIn("kernel @b(", only_b.stdout)
        self.assertNotIn("kernel @a(", only_b.stdout)
        self.assertUserError(self.dslc("two.tir", "--kernel", "c", "--diagnostics=json"), "E0106")

    def test_run_from_tir(self):
        self.write("add.kiln", ADD)
        self.write("add.tir", self.dslc("add.kiln").stdout)
        self.npy("x.npy", np.arange(40, dtype=np.float32))
        self.npy("y.npy", np.full(40, 2, np.float32))
        self.npy("out.npy", np.zeros(40, np.float32))
        r = self.dslc("run", "add.tir", "--grid", "3", "--arg", "x=x.npy", "--arg", "y=y.npy",
                      "--arg", "out=out.npy", "--arg", "n=40")
        self.assertOk(r)
        np.testing.assert_array_equal(self.load("out.npy"), np.arange(40) + 2)

    def test_malformed_tir(self):
        good = self.dslc(os.path.join(EXAMPLES, "softmax.kiln")).stdout
        self.assertIn("= sub ", good)
        cases = {
            "garbage.tir": ("this is not tile ir\n", "E0700"),
            "unknown-op.tir": (good.replace("= sub ", "= frobnicate ", 1), "E0700"),
            "undefined-value.tir": (re.sub(r"= sub %[\w.]+", "= sub %999", good, count=1), "E0700"),
            "truncated.tir": (good[:len(good) // 2], "E0700"),
            "binary.tir": (b"\x00\xff\xfe", "E0700"),
            "no-return.tir": (good.replace("  return\n", ""), "E0701"),
        }
        for name, (text, code) in cases.items():
            with self.subTest(file=name):
                self.write(name, text)
                r = self.dslc(name, "--diagnostics=json")
                errors = self.assertUserError(r, code)
                self.assertEqual(errors[0]["file"], name)
                self.assertGreaterEqual(errors[0]["line"], 1)


class DslcOpt(clitest.CliTestCase):

    def passes(self):
        r = self.dslc_opt("--list-passes")
        self.assertOk(r)
        names = re.findall(r"^  ([a-z][\w-]*)\s{2,}\S", r.stdout, re.MULTILINE)
        return names, r

    def pipeline(self):
        r = self.dslc_opt("--list-passes")
        self.assertOk(r)
        line = re.search(r"^Default pipeline: (.*)$", r.stdout, re.MULTILINE)
        self.assertIsNotNone(line, r.stdout)
        return line.group(1).split(", ")

    def test_list_passes(self):
        names, r = self.passes()
        self.assertGreaterEqual(len(names), 3, r.stdout)
        for name in ("canonicalize", "cse", "dce"):
            self.assertIn(name, names)
        self.assertEqual(len(names), len(set(names)))
        help_text = self.dslc_opt("--help").stdout
        for name in names:
            self.assertIn(name, help_text)

    def test_unknown_pass(self):
        self.write("w.kiln", WORK)
        r = self.dslc_opt("w.kiln", "--pass=frobnicate")
        self.assertExit(r, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("frobnicate", r.stderr)
        self.assertRegex(r.stderr, r"^dslc-opt: error\[E0600\]: ")

    def test_missing_input(self):
        for args in ([], ["absent.tir"]):
            with self.subTest(args=args):
                r = self.dslc_opt(*args)
                self.assertExit(r, 1)
                self.assertRegex(r.stderr, r"^dslc-opt: error\[E0001\]: ")

    def test_all_passes_in_order_equal_the_pipeline(self):
        self.write("w.kiln", WORK)
        names = self.pipeline()
        raw = self.dslc("w.kiln", "--O0")
        self.assertOk(raw)
        self.write("w.tir", raw.stdout)
        opt = self.dslc_opt("w.tir", *["--pass=" + n for n in names])
        self.assertOk(opt)
        self.assertEqual(opt.stdout, self.dslc("w.kiln").stdout)
        self.assertNotEqual(opt.stdout, raw.stdout, "the passes had work to do")

    def test_no_pass_prints_the_input(self):
        self.write("w.kiln", WORK)
        raw = self.dslc("w.kiln", "--O0").stdout
        self.write("w.tir", raw)
        r = self.dslc_opt("w.tir")
        self.assertOk(r)
        self.assertEqual(r.stdout, raw)
        from_source = self.dslc_opt("w.kiln")
        self.assertEqual(from_source.stdout, raw, "Kiln input is lowered without the pipeline")

    def test_each_pass_alone(self):
        self.write("w.kiln", WORK)
        self.write("w.tir", self.dslc("w.kiln", "--O0").stdout)
        names, _ = self.passes()
        for name in names:
            with self.subTest(pass_name=name):
                r = self.dslc_opt("w.tir", "--pass=" + name, "-o", name + ".tir")
                self.assertOk(r)
                self.assertEqual(r.stdout, "")
                with open(self.path(name + ".tir"), encoding="utf-8") as f:
                    text = f.read()
                self.write(name + ".again.tir", text)
                self.assertEqual(self.dslc("%s.again.tir" % name, "--O0").stdout, text)

    def test_print_after_all(self):
        self.write("w.kiln", WORK)
        self.write("w.tir", self.dslc("w.kiln", "--O0").stdout)
        r = self.dslc_opt("w.tir", "--pass=cse", "--pass=dce", "--pass=dce", "--print-after-all")
        self.assertOk(r)
        headers = re.findall(r"IR Dump After (\S+)", r.stderr)
        self.assertEqual(headers, ["cse", "dce", "dce"], r.stderr)
        # The second dce finds nothing left to delete.
        self.assertRegex(r.stderr, r"IR Dump After dce \(unchanged\)")


class Imports(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("inc1/helpers.kiln", "fn twice(x) { return x * 2.0; }\n")
        self.write("inc2/helpers.kiln", "fn twice(x) { return x * 3.0; }\n")
        self.write("src/main.kiln", 'import "helpers.kiln";\n'
                                    "kernel k(p: *f32) { store(p, twice(load(p))); }\n")

    def constant(self, *args):
        r = self.dslc("src/main.kiln", *args)
        self.assertOk(r)
        return re.findall(r"constant \{value = ([\d.]+)\} : f32", r.stdout)

    def test_not_found_without_search_path(self):
        errors = self.assertUserError(self.dslc("src/main.kiln", "--diagnostics=json"), "E0100")
        self.assertEqual((errors[0]["file"], errors[0]["line"], errors[0]["col"]), ("src/main.kiln", 1, 8))

    def test_search_path(self):
        self.assertEqual(self.constant("-I", "inc1"), ["2.0"])
        self.assertEqual(self.constant("-Iinc2"), ["3.0"])

    def test_search_order(self):
        self.assertEqual(self.constant("-I", "inc2", "-I", "inc1"), ["3.0"])
        self.assertEqual(self.constant("-I", "inc1", "-I", "inc2"), ["2.0"])

    def test_importing_files_folder_comes_first(self):
        self.write("src/helpers.kiln", "fn twice(x) { return x * 5.0; }\n")
        self.assertEqual(self.constant("-I", "inc1"), ["5.0"])

    def test_search_path_in_run(self):
        self.npy("p.npy", np.array([7.0], np.float32))
        self.assertOk(self.dslc("run", "src/main.kiln", "-I", "inc2", "--grid", "1", "--arg", "p=p.npy"))
        self.assertEqual(self.load("p.npy")[0], 21.0)


VERIFY_OK = """\
kernel k(p: *f32, q: *i32) {
    // expected-error@+1 E0200 {{undefined name 'nope'}}
    store(p, nope);
    store(p, exp(load(q))); // expected-error E0300 {{exp needs a float operand}}
}
"""


class VerifyDiagnostics(clitest.CliTestCase):

    def verify(self, name, text, *args):
        self.write(name, text)
        return self.dslc(name, "--verify-diagnostics", *args)

    def test_correct_expectations_pass(self):
        r = self.verify("ok.kiln", VERIFY_OK)
        self.assertOk(r)
        self.assertEqual(r.stderr, "")

    def test_syntax_error_expectation(self):
        src = "kernel k(p: *f32) {\n    // expected-error@+1 E0006 {{expected ';'}}\n    store(p, 1.0)\n}\n"
        self.assertOk(self.verify("syn.kiln", src))

    def test_expectation_with_define(self):
        src = ('kernel k(p: *f32, const B: i32 = 4) {\n'
               '    static_assert(B == 4, "B is 4"); // expected-error E0502 {{B is 4}}\n}\n')
        self.assertOk(self.verify("d.kiln", src, "-D", "B=8"))
        self.assertExit(self.verify("d.kiln", src), 1)

    def check_fails(self, name, text, *needles):
        r = self.verify(name, text)
        self.assertExit(r, 1)
        for needle in needles:
            self.assertIn(needle, r.stderr, r.describe())

    def test_wrong_message_fails(self):
        self.check_fails("m.kiln", VERIFY_OK.replace("undefined name 'nope'", "unknown name 'nope'"),
                         "unexpected error", "undefined name 'nope'", "not produced", "unknown name 'nope'")

    def test_wrong_code_fails(self):
        self.check_fails("c.kiln", VERIFY_OK.replace("@+1 E0200", "@+1 E0201"), "unexpected error", "E0201")

    def test_wrong_line_fails(self):
        self.check_fails("l.kiln", VERIFY_OK.replace("@+1 E0200", "@+2 E0200"), "not produced at line 4")

    def test_missing_expectation_fails(self):
        self.check_fails("x.kiln", VERIFY_OK.replace("    // expected-error@+1 E0200 {{undefined name 'nope'}}\n", ""),
                         "unexpected error", "x.kiln:2:14", "undefined name 'nope'")

    def test_expected_error_that_does_not_occur_fails(self):
        self.check_fails("n.kiln", "kernel k(p: *f32) {\n    store(p, 1.0); // expected-error {{boom}}\n}\n",
                         "not produced", "boom")

    def test_malformed_expectation_fails(self):
        self.check_fails("bad.kiln", "kernel k(p: *f32) {\n    store(p, nope); // expected-error E0200 undefined\n}\n",
                         "malformed expectation")
        self.check_fails("neg.kiln", "kernel k(p: *f32) {\n    // expected-error@-5 {{x}}\n}\n",
                         "malformed expectation")
        # Offsets no file can have, including ones past a 64-bit integer, are malformed too.
        for offset in ("+99999999999999999999", "-9223372036854775808", "+9223372036854775807", "+1000000000"):
            self.check_fails("big.kiln", "kernel k(p: *f32) {\n    // expected-error@%s {{x}}\n}\n" % offset,
                             "malformed expectation", "out of range")


class Fusion(clitest.CliTestCase):
    """--explain-fusion and --no-fuse-reductions (docs/fusion.md)."""

    SOFTMAX = os.path.join(clitest.REPO, "stdlib", "softmax.kiln")

    def test_explain_fusion_text_and_json(self):
        text = self.dslc(self.SOFTMAX, "--kernel", "softmax", "--explain-fusion")
        self.assertOk(text)
        self.assertEqual(text.stdout, self.dslc(self.SOFTMAX, "--kernel", "softmax").stdout,
                         "remarks go to stderr and do not change the output")
        self.assertIn("remark[E1000]: fused the reduction loops at lines 18 and 25", text.stderr)
        self.assertIn("remark[E1001]: the loop at line 30 is not fused", text.stderr)
        as_json = self.dslc(self.SOFTMAX, "--kernel", "softmax", "--explain-fusion", "--diagnostics=json")
        self.assertOk(as_json)
        diags = clitest.parse_json_lines(as_json.stderr)
        self.assertEqual([(d["code"], d["severity"], d["line"]) for d in diags],
                         [("E1000", "remark", 18), ("E1001", "remark", 30)])
        self.assertEqual([n["line"] for n in diags[0]["notes"]], [18, 25])
        self.assertIn("exp(m_prev - m)", diags[0]["notes"][1]["message"])
        quiet = self.dslc(self.SOFTMAX, "--kernel", "softmax")
        self.assertNotIn("remark", quiet.stderr, "remarks only when asked")

    def test_no_fuse_reductions_keeps_the_loops(self):
        fused = self.dslc(self.SOFTMAX, "--kernel", "softmax")
        plain = self.dslc(self.SOFTMAX, "--kernel", "softmax", "--no-fuse-reductions")
        self.assertOk(fused)
        self.assertOk(plain)
        loops = lambda text: len(re.findall(r"\bfor %", text))  # noqa: E731
        self.assertEqual(loops(plain.stdout), 3)
        self.assertNotIn("one_block_path", plain.stdout)
        self.assertNotIn("exp2", plain.stdout)
        # Fused: the one-block version (no loop), then the fused max+sum loop and the
        # output loop.
        self.assertIn("one_block_path", fused.stdout)
        self.assertIn("exp2", fused.stdout)
        self.assertEqual(loops(fused.stdout), 2)

    def test_run_explains_too(self):
        rows, cols = 3, 300
        x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
        self.npy("x.npy", x)
        self.npy("y.npy", np.zeros((rows, cols), np.float32))
        r = self.dslc("run", self.SOFTMAX, "--kernel", "softmax", "-D", "BLOCK=64", "--grid", str(rows),
                      "--device", "interp", "--explain-fusion", "--arg", "x=x.npy", "--arg", "y=y.npy",
                      "--arg", "n_cols=%d" % cols, "--arg", "row_stride=%d" % cols)
        self.assertOk(r)
        self.assertIn("remark[E1000]", r.stderr)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(self.load("y.npy"), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


class PrintingScales(clitest.CliTestCase):
    """Printing Tile IR is linear in the values printed, whatever their names.

    Each check prints one kernel of many values whose source names collide (each must
    get its own suffix: %t, %t_1, %t_2, ...) and the same kernel with every name
    distinct, and compares their CPU time (the ratio does not depend on the machine).
    A namer that searches for a free suffix from 1 for every value takes quadratic time
    on the first; the run is stopped once it is clearly so. --O0 prints the program as
    written, so the passes cannot remove the values.
    """

    def compare(self, shape, n):
        self.write("distinct.kiln", "kernel k(p: *f32) {\n%s}\n" % "".join(shape("t%d" % i, i) for i in range(n)))
        self.write("same.kiln", "kernel k(p: *f32) {\n%s}\n" % "".join(shape("t", i) for i in range(n)))
        rc, baseline = clitest.run_tool_cpu("dslc", ["distinct.kiln", "--O0", "--emit=tir"], self.tmp)
        self.assertEqual(rc, 0)
        limit = int(2.5 * baseline + 1.5)
        rc, used = clitest.run_tool_cpu("dslc", ["same.kiln", "--O0", "--emit=tir"], self.tmp, cpu_limit_s=limit)
        self.assertEqual(rc, 0, "%d values named t: stopped after %.1fs of CPU (exit %d); with distinct names "
                                "they took %.1fs" % (n, used, rc, baseline))

    def test_one_name_in_many_blocks(self):
        self.compare(lambda name, i: "    { let %s = load(p) + %d.0; store(p, %s); }\n" % (name, i, name), 20000)

    def test_one_var_assigned_many_times(self):
        # `var t` assigned 20,000 times makes 20,000 values all named t.
        def assignment(name, i):
            if name == "t":
                return ("    var t = load(p);\n" if i == 0 else "    t = t + %d.0;\n" % i) + (
                    "    store(p, t);\n" if i == 19999 else "")
            return ("    let t0 = load(p);\n" if i == 0 else "    let %s = t%d + %d.0;\n" % (name, i - 1, i)) + (
                "    store(p, %s);\n" % name if i == 19999 else "")
        self.compare(assignment, 20000)

    def test_names_that_look_like_suffixes(self):
        # Values named t, t_1, t_2, ... in the source compete with the suffixes the
        # printer gives to repeated names.
        def shape(name, i):
            own = name if name != "t" else ("t" if i % 2 else "t_%d" % (i // 2 + 1))
            return "    { let %s = load(p) + %d.0; store(p, %s); }\n" % (own, i, own)
        self.compare(shape, 20000)

    def test_random_names_from_a_small_pool(self):
        # Names drawn at random (a fixed seed) from a few stems and their suffixed forms,
        # t, t_1, t_1_1, ...: the collisions between given names and printed suffixes
        # come in every order.
        rng = random.Random(20261202)
        stems = ["t", "u_2", "v_1_1"]
        pool = stems + ["%s_%d" % (s, k) for s in stems for k in (1, 2, 3, 10)]
        names = [rng.choice(pool) for _ in range(20000)]

        def shape(name, i):
            own = names[i] if name == "t" else name
            return "    { let %s = load(p) + %d.0; store(p, %s); }\n" % (own, i, own)
        self.compare(shape, 20000)


class TimingAndDumps(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("w.kiln", WORK)

    def pass_names(self):
        r = self.dslc_opt("--list-passes")
        return re.findall(r"^  ([a-z][\w-]*)\s{2,}\S", r.stdout, re.MULTILINE)

    def pipeline_names(self):
        """The default pipeline, in order (a pass may run more than once)."""
        r = self.dslc_opt("--list-passes")
        line = re.search(r"^Default pipeline: (.*)$", r.stdout, re.MULTILINE)
        self.assertIsNotNone(line, r.stdout)
        return line.group(1).split(", ")

    def test_time_passes_report(self):
        r = self.dslc("w.kiln", "--time-passes")
        self.assertOk(r)
        self.assertEqual(r.stdout, self.dslc("w.kiln").stdout, "the report goes to stderr only")
        self.assertIn("Kiln compile-time report", r.stderr)
        for name in self.pass_names():
            self.assertRegex(r.stderr, r"pass: %s\b" % re.escape(name))
        self.assertRegex(r.stderr, r"frontend")
        self.assertRegex(r.stderr, r"Total")

    def test_time_passes_in_run(self):
        self.npy("p.npy", np.zeros(16, np.float32))
        r = self.dslc("run", "w.kiln", "--grid", "1", "--arg", "p=p.npy", "--arg", "n=4", "--time-passes")
        self.assertOk(r)
        self.assertIn("run: interpreter", r.stderr)

    def test_print_after_all_one_header_per_pass(self):
        r = self.dslc("w.kiln", "--print-after-all")
        self.assertOk(r)
        headers = re.findall(r"^// -----// IR Dump After (\S+)(?: \(unchanged\))? //----- //$", r.stderr,
                             re.MULTILINE)
        self.assertEqual(headers, self.pipeline_names(), r.stderr)
        self.assertEqual(r.stdout, self.dslc("w.kiln").stdout)
        # The dump after the last pass is the final IR.
        last = r.stderr.rsplit("//----- //\n", 1)[1]
        self.assertEqual(last.strip(), r.stdout.strip())

    def test_print_after_all_skipped_with_O0(self):
        r = self.dslc("w.kiln", "--O0", "--print-after-all")
        self.assertOk(r)
        self.assertNotIn("IR Dump After", r.stderr)


if __name__ == "__main__":
    clitest.main()
