#!/usr/bin/python3
#===- test_diagnostics.py - The format of dslc's errors on malformed programs -===#
#
# Runs every program of tests/cli/malformed/ (listed with its first expected error in
# malformed/EXPECTED) through dslc twice, as text and as --diagnostics=json, and checks:
#  * exit status 1, quickly, nothing on stdout, no internal error or crash;
#  * the first error has the expected code, file, line and column;
#  * text: every diagnostic is `file:line:col: error[E0xxx]: message`, then the quoted
#    source line and a caret under the column;
#  * JSON: every line is an object with file/line/col/code/severity/message, codes are
#    listed in docs/diagnostics.md, errors in a file have line and col >= 1;
#  * the text and JSON forms report the same diagnostics in the same order.
# Generated inputs (deep nesting, 100k-term expressions, huge files and literals) check
# the documented limits, and a few small programs check multi-error reporting and the
# details of the text form (tabs, UTF-8, byte order marks, CRLF, control characters).
#
# Usage: test_diagnostics.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import re
import shutil
import tempfile
import sys
import unicodedata

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

CORPUS = os.path.join(clitest.HERE, "malformed")
INTERNALS = ("internal compiler error", "Assertion", "Stack dump", "PLEASE submit", "terminate called",
             "Segmentation", "std::", "kiln::")


def read_manifest():
    entries = []
    with open(os.path.join(CORPUS, "EXPECTED"), encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, code, where, anchor = line.split(None, 3)
            file, _, lineno = where.rpartition(":")
            entries.append({"name": name, "code": code, "file": file or name, "line": int(lineno),
                            "anchor": anchor.strip()})
    return entries


def display_width(text):
    """Terminal columns of text (combining marks take none, wide characters two)."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def source_line(path, line):
    """Line `line` (1-based) of a file as bytes, without its line ending; None past the end."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if line > len(lines):
        return None
    return lines[line - 1].rstrip(b"\r")


def printable_utf8(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in text if c != "\t"):
        return None
    return text


class DiagnosticsCase(clitest.CliTestCase):

    def check_text_form(self, result, cwd):
        """Checks the layout of text diagnostics; returns their (file, line, col, sev, code)."""
        # Split on '\n' only: a quoted line of a binary file may hold other line breaks.
        lines = result.stderr.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        headers = []
        i = 0
        while i < len(lines):
            m = clitest.DIAG_HEADER.match(lines[i])
            tool = clitest.TOOL_HEADER.match(lines[i])
            if tool:
                headers.append(("", 0, 0, tool.group("sev"), tool.group("code")))
                i += 1
                continue
            self.assertTrue(m or lines[i].startswith("  help: "),
                            "unexpected stderr line %r:\n%s" % (lines[i], result.describe()))
            if not m:
                i += 1
                continue
            f, ln, col = m.group("file"), int(m.group("line")), int(m.group("col"))
            sev, code = m.group("sev"), m.group("code")
            if sev != "note":
                self.assertIsNotNone(code, "an %s without a code: %r" % (sev, lines[i]))
            headers.append((f, ln, col, sev, code))
            self.assertGreaterEqual(ln, 1, lines[i])
            self.assertGreaterEqual(col, 1, lines[i])
            self.assertLess(i + 2, len(lines), "no quoted line and caret after %r" % lines[i])
            quote, caret = lines[i + 1], lines[i + 2]
            self.assertTrue(quote.startswith("  ") or quote == "", "quote %r" % quote)
            self.assertRegex(caret, r"^  *\^$", "caret line after %r" % lines[i])
            src = source_line(os.path.join(cwd, f), ln)
            text = printable_utf8(src) if src is not None else None
            if text is not None:
                self.assertEqual(quote.rstrip(), ("  " + text.expandtabs(8)).rstrip(),
                                 "the quoted line of %s:%d" % (f, ln))
                prefix = src[:col - 1].decode("utf-8", "replace").expandtabs(8)
                self.assertEqual(caret.index("^"), 2 + display_width(prefix),
                                 "caret of %r under\n%s" % (lines[i], quote))
            i += 3
        return headers

    def json_sequence(self, diags):
        seq = []
        for d in diags:
            seq.append((d["file"], d["line"], d["col"], d["severity"], d["code"]))
            for n in d.get("notes", []):
                seq.append((n["file"], n["line"], n["col"], "note", None))
        return seq

    def assertNoInternals(self, result):
        for word in INTERNALS:
            self.assertNotIn(word, result.stderr, result.describe())


class MalformedCorpus(DiagnosticsCase):
    """One test per program of malformed/; the runs happen once, concurrently."""

    results = {}

    @classmethod
    def setUpClass(cls):
        cls.corpus_dir = tempfile.mkdtemp(prefix="kiln-corpus-")
        shutil.copytree(CORPUS, cls.corpus_dir, dirs_exist_ok=True)
        argvs = []
        for e in read_manifest():
            argvs.append((e["name"], "text", [e["name"]]))
            argvs.append((e["name"], "json", [e["name"], "--diagnostics=json"]))
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(max_workers=clitest.PARALLEL_RUNS) as pool:
            runs = pool.map(lambda a: (a[0], a[1], clitest.run_tool("dslc", a[2], cls.corpus_dir)), argvs)
            for name, form, result in runs:
                cls.results[(name, form)] = result

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.corpus_dir, ignore_errors=True)

    def test_corpus_is_complete(self):
        listed = {e["name"] for e in read_manifest()}
        present = {f for f in os.listdir(CORPUS) if f.endswith(".kiln")}
        self.assertEqual(sorted(present - listed), [], "programs without an EXPECTED line")
        self.assertEqual(sorted(listed - present), [], "EXPECTED lines without a program")
        self.assertGreaterEqual(len(present), 60)

    def check_entry(self, e):
        text, js = self.results[(e["name"], "text")], self.results[(e["name"], "json")]
        for r in (text, js):
            self.assertExit(r, 1)
            self.assertLess(r.seconds, clitest.TIME_LIMIT_S, r.describe())
            self.assertEqual(r.stdout, "", r.describe())
            self.assertNoInternals(r)
        diags = self.json_diags(js)
        self.assertTrue(diags, js.describe())
        codes = clitest.documented_codes()
        for d in diags:
            self.assertWellFormedJson(d, js, codes)
            if d["severity"] == "error":
                self.assertTrue(d["file"], js.describe())
                self.assertGreaterEqual(d["line"], 1, js.describe())
                self.assertGreaterEqual(d["col"], 1, js.describe())
        first = diags[0]
        path = os.path.join(self.corpus_dir, e["file"])
        if re.fullmatch(r"@\d+", e["anchor"]):
            col = int(e["anchor"][1:])
        else:
            src = source_line(path, e["line"])
            self.assertIsNotNone(src, "EXPECTED names line %d of %s" % (e["line"], e["file"]))
            at = src.find(e["anchor"].encode("utf-8"))
            self.assertGreaterEqual(at, 0, "anchor %r not on line %d" % (e["anchor"], e["line"]))
            col = at + 1
        got = (first["code"], first["file"], first["line"], first["col"])
        self.assertEqual(got, (e["code"], e["file"], e["line"], col), js.describe())
        headers = self.check_text_form(text, self.corpus_dir)
        self.assertEqual(headers, self.json_sequence(diags),
                         "text and JSON disagree:\n%s\n%s" % (text.describe(), js.describe()))


def _add_corpus_tests():
    for entry in read_manifest():
        name = "test_" + re.sub(r"\W", "_", entry["name"][:-len(".kiln")])
        setattr(MalformedCorpus, name, lambda self, e=entry: self.check_entry(e))


_add_corpus_tests()


def kernel(body):
    return "kernel k(p: *f32) {\n    %s\n}\n" % body


class Limits(DiagnosticsCase):
    """Generated inputs at and past the documented limits of docs/grammar.md."""

    def compile(self, source, *args):
        self.write("gen.kiln", source)
        return self.dslc("gen.kiln", "--diagnostics=json", *args)

    def rejected(self, source, code, line=None, col=None):
        r = self.compile(source)
        errors = self.assertUserError(r, code, all_code=False)
        self.assertEqual(errors[0]["code"], code, r.describe())
        if line is not None:
            self.assertEqual(errors[0]["line"], line, r.describe())
        if col is not None:
            self.assertEqual(errors[0]["col"], col, r.describe())
        self.assertEqual(r.stdout, "")
        return errors

    def accepted(self, source):
        self.write("gen.kiln", source)
        r = self.dslc("gen.kiln", "--diagnostics=json", timeout=clitest.TIME_LIMIT_S)
        self.assertOk(r)
        self.assertLess(r.seconds, clitest.TIME_LIMIT_S, r.describe())

    def test_deep_parentheses(self):
        # The kernel's '{' and store's '(' are levels 1 and 2: the 199th '(' is level 201,
        # at column 14 + 198.
        self.rejected(kernel("store(p, " + "(" * 300 + "1.0" + ")" * 300 + ");"), "E0004", 2, 212)

    def test_nesting_just_over_the_limit(self):
        self.rejected(kernel("store(p, " + "(" * 199 + "1.0" + ")" * 199 + ");"), "E0004", 2, 212)

    def test_nesting_at_the_limit_compiles(self):
        self.accepted(kernel("store(p, " + "(" * 198 + "1.0" + ")" * 198 + ");"))

    def test_deep_blocks(self):
        self.rejected(kernel("{" * 300 + "}" * 300), "E0004", 2)

    def test_deep_lists_and_calls(self):
        self.rejected(kernel("let z = " + "[" * 300 + "1" + "]" * 300 + ";"), "E0004", 2)
        self.rejected(kernel("store(p, " + "abs(" * 300 + "1.0" + ")" * 300 + ");"), "E0004", 2)

    def test_long_prefix_operator_runs(self):
        for op in ("-", "- ", "!", "~", "+"):
            with self.subTest(op=op):
                self.rejected(kernel("store(p, " + op * 300 + "1.0);"), "E0004", 2)

    def test_deep_pointer_type(self):
        self.rejected("kernel k(p: " + "*" * 300 + "f32) { }\n", "E0004", 1)

    def test_unclosed_parentheses_100k(self):
        self.rejected(kernel("store(p, " + "(" * 100000), "E0004", 2)

    def test_100k_term_sum(self):
        self.rejected(kernel("store(p, " + " + ".join(["1.0"] * 100000) + ");"), "E0004", 2)

    def test_100k_term_product_of_a_tile(self):
        body = "let x = load(p + arange(0, 16));\n    store(p, " + " * ".join(["x"] * 100000) + ");"
        self.rejected(kernel(body), "E0004", 3)

    def test_100k_term_comparison_and_logic_chains(self):
        self.rejected(kernel("let b = " + " && ".join(["true"] * 100000) + ";"), "E0004", 2)
        self.rejected(kernel("let b = " + " < ".join(["1"] * 100000) + ";"), "E0004", 2)

    def test_long_method_chain(self):
        self.rejected(kernel("let x = load(p);\n    store(p, x" + ".to(f32)" * 2000 + ");"), "E0004", 3)

    def test_long_else_if_chain(self):
        chain = "".join(" else if x > %d.0 { store(p, 1.0); }" % i for i in range(2000))
        self.rejected(kernel("let x = load(p);\n    if x > 0.0 { store(p, 0.0); }" + chain), "E0004", 3)

    def test_long_expressions_below_the_limit_compile(self):
        self.accepted(kernel("store(p, " + " + ".join(["1.0"] * 500) + ");"))
        self.accepted(kernel("let x = load(p);\n    store(p, x" + ".to(f32)" * 500 + ");"))

    def test_huge_literals(self):
        self.rejected(kernel("store(p, " + "9" * 100000 + ");"), "E0007", 2, 14)
        self.rejected(kernel("store(p, 1e" + "9" * 1000 + ");"), "E0007", 2, 14)
        self.rejected(kernel("store(p, 0x" + "F" * 17 + ");"), "E0007", 2, 14)

    def test_file_over_16_mib(self):
        self.rejected("// " + "x" * (16 * 1024 * 1024) + "\n" + kernel("store(p, 1.0);"), "E0003")

    def test_over_two_million_tokens(self):
        self.rejected(kernel("let x = load(p);\n" + "x;" * 1000001), "E0003")

    def test_many_bindings_in_one_scope_compile_in_linear_time(self):
        # 80,000 `let`s in one block (1.6 MiB) against the same `let`s each in its own
        # block: the work is the same, so the CPU time must be too (the ratio does not
        # depend on the machine). A scope searched linearly per binding makes the first
        # quadratic; the run is stopped once it is clearly so.
        n = 80000
        self.write("blocks.kiln", kernel("".join("{ let v%d = %d.0; }\n    " % (i, i) for i in range(n))
                                         + "store(p, 1.0);"))
        self.write("flat.kiln", kernel("".join("let v%d = %d.0;\n    " % (i, i) for i in range(n))
                                       + "store(p, v0);"))
        rc, baseline = clitest.run_tool_cpu("dslc", ["blocks.kiln"], self.tmp)
        self.assertEqual(rc, 0)
        limit = int(2.5 * baseline + 1.5)
        rc, used = clitest.run_tool_cpu("dslc", ["flat.kiln"], self.tmp, cpu_limit_s=limit)
        self.assertEqual(rc, 0, "one scope of %d bindings: stopped after %.1fs of CPU (exit %d); "
                                "%d separate scopes took %.1fs" % (n, used, rc, n, baseline))

    def test_many_parameters_compile_in_linear_time(self):
        # One kernel of 80,000 parameters against eight kernels of 10,000: the same
        # parameters, so the same CPU time unless some check compares every pair.
        n, parts = 80000, 8

        def kernels(count, size):
            return "".join("kernel k%d(%s) {}\n" % (k, ", ".join("p%d: i32" % i for i in range(size)))
                           for k in range(count))
        self.write("split.kiln", kernels(parts, n // parts))
        self.write("one.kiln", kernels(1, n))
        rc, baseline = clitest.run_tool_cpu("dslc", ["split.kiln"], self.tmp)
        self.assertEqual(rc, 0)
        limit = int(2.5 * baseline + 1.5)
        rc, used = clitest.run_tool_cpu("dslc", ["one.kiln"], self.tmp, cpu_limit_s=limit)
        self.assertEqual(rc, 0, "one kernel of %d parameters: stopped after %.1fs of CPU (exit %d); "
                                "%d kernels of %d took %.1fs" % (n, used, rc, parts, n // parts, baseline))

    def test_error_limit_is_50(self):
        body = "\n".join("    store(p, missing_%d);" % i for i in range(80))
        r = self.compile("kernel k(p: *f32) {\n%s\n}\n" % body)
        errors = self.assertUserError(r, "E0200")
        self.assertEqual(len(errors), 50, r.describe())
        self.assertEqual([e["line"] for e in errors], list(range(2, 52)))


MULTI = """\
@num_wraps(4)
kernel a(p: *f32) {
    store(p, undefined_thing);
}

kernel b(p: *f32, q: *i32) {
    let i = load(q);
    store(p, exp(i));
    store(p, frobnicate(1.0));
}

fn f(x) {
    return x;
    let y = 1;
}

kernel c(p: *f32, const B: i32 = 48) {
    static_assert(B % 32 == 0, "B must be a multiple of 32");
    let z = zeros([0], f32);
}
"""


class Reporting(DiagnosticsCase):
    """Several errors per file and the details of the text and JSON forms."""

    def test_several_independent_errors_are_all_reported(self):
        self.write("multi.kiln", MULTI)
        r = self.dslc("multi.kiln", "--diagnostics=json")
        errors = self.assertUserError(r, "E0200", all_code=False)
        got = sorted((e["line"], e["code"]) for e in errors)
        self.assertEqual(got, [(1, "E0104"), (3, "E0200"), (8, "E0300"), (9, "E0400"),
                               (13, "E0501"), (18, "E0502"), (19, "E0304")])
        text = self.dslc("multi.kiln")
        self.assertExit(text, 1)
        self.assertEqual(sorted(self.check_text_form(text, self.tmp)), sorted(self.json_sequence(errors)))

    def test_json_escapes_message_text(self):
        msg = 'tab\\there \\"quoted\\" back\\\\slash caf\u00e9 \u4e2d'
        self.write("s.kiln", 'kernel k(p: *f32) {\n    static_assert(false, "%s");\n}\n' % msg)
        r = self.dslc("s.kiln", "--diagnostics=json")
        errors = self.assertUserError(r, "E0502")
        self.assertIn('tab\there "quoted" back\\slash caf\u00e9 \u4e2d', errors[0]["message"])
        for line in r.stderr_bytes.split(b"\n"):
            self.assertNotIn(b"\t", line, "a raw tab inside a JSON string")

    def test_json_file_names_are_escaped(self):
        self.write('we"ird\\name.kiln', kernel("store(p, nope);"))
        r = self.dslc('we"ird\\name.kiln', "--diagnostics=json")
        errors = self.assertUserError(r, "E0200")
        self.assertEqual(errors[0]["file"], 'we"ird\\name.kiln')

    def test_duplicate_parameter_is_reported_once(self):
        self.write("d.kiln", "kernel k(p: *f32, n: i32, n: i32) {\n    store(p, 1.0);\n}\n")
        r = self.dslc("d.kiln", "--diagnostics=json")
        errors = self.assertUserError(r, "E0103")
        self.assertEqual(len(errors), 1, r.describe())

    def test_unterminated_string_is_one_error(self):
        self.write("s.kiln", 'kernel k(p: *f32, n: i32) {\n    assert(n > 0, "n must be positive);\n'
                             '    store(p, 1.0);\n}\n')
        r = self.dslc("s.kiln", "--diagnostics=json")
        errors = self.assertUserError(r, "E0005")
        self.assertEqual(len(errors), 1, r.describe())

    def test_tab_expansion_keeps_the_caret_aligned(self):
        self.write("t.kiln", "kernel k(p: *f32) {\n\tstore(p,\tnope);\n}\n")
        r = self.dslc("t.kiln")
        self.assertExit(r, 1)
        self.assertTrue(r.stderr.startswith("t.kiln:2:11: error[E0200]"), r.describe())
        self.check_text_form(r, self.tmp)

    def test_utf8_before_the_column_keeps_the_caret_aligned(self):
        self.write("u.kiln", "kernel k(p: *f32) {\n    /* caf\u00e9 \u4e2d */ store(p, nope);\n}\n")
        r = self.dslc("u.kiln")
        self.assertExit(r, 1)
        # Columns count bytes (e-acute is two, the CJK character three); the caret
        # is placed by display width.
        self.assertTrue(r.stderr.startswith("u.kiln:2:30: error[E0200]"), r.describe())
        self.check_text_form(r, self.tmp)

    def test_byte_order_mark_is_ignored(self):
        # The error is on line 1, where the three bytes of the mark would shift columns.
        src = "kernel k(p: *f32) { store(p, nope); }\n"
        self.write("plain.kiln", src)
        self.write("bom.kiln", b"\xef\xbb\xbf" + src.encode())
        plain = self.assertUserError(self.dslc("plain.kiln", "--diagnostics=json"), "E0200")
        bom = self.assertUserError(self.dslc("bom.kiln", "--diagnostics=json"), "E0200")
        self.assertEqual((bom[0]["line"], bom[0]["col"]), (plain[0]["line"], plain[0]["col"]))
        self.write("ok.kiln", b"\xef\xbb\xbf" + kernel("store(p, 1.0);").encode())
        self.assertOk(self.dslc("ok.kiln"))

    def test_crlf_line_endings(self):
        self.write("lf.kiln", kernel("store(p, nope);"))
        self.write("crlf.kiln", kernel("store(p, nope);").replace("\n", "\r\n"))
        lf, crlf = self.dslc("lf.kiln"), self.dslc("crlf.kiln")
        self.assertExit(crlf, 1)
        self.assertEqual(crlf.stderr.replace("crlf.kiln", "lf.kiln"), lf.stderr)
        self.assertNotIn("\r", crlf.stderr)

    def test_control_characters_are_not_echoed(self):
        # A source line is quoted back to a terminal: escape sequences in it must not be.
        self.write("esc.kiln", b"kernel k(p: *f32) {\n    store(p, nope); // \x1b[2J\x07\x08\n}\n")
        r = self.dslc("esc.kiln")
        self.assertExit(r, 1)
        for ch in (b"\x1b", b"\x07", b"\x08"):
            self.assertNotIn(ch, r.stderr_bytes)

    def test_binary_file_is_not_echoed_raw(self):
        with open(os.path.join(CORPUS, "enc-binary-garbage.kiln"), "rb") as f:
            self.write("bin.kiln", f.read())
        r = self.dslc("bin.kiln")
        self.assertExit(r, 1)
        bad = sorted({c for c in r.stderr_bytes if (c < 32 and c != 10) or c == 127})
        self.assertEqual(bad, [], "control bytes written to stderr")

    def test_graph_selected_as_kernel(self):
        self.write("g.kiln", "kernel a(p: *f32) { store(p, 1.0); }\n"
                             "graph g(p: *f32) { launch a[(1,)](p); }\n")
        # A graph prints as Tile IR, its PTX is its persistent kernel and its bundle a
        # graph bundle; it is no single SPIR-V module.
        self.assertOk(self.dslc("g.kiln", "--kernel", "g", "--emit=tir"))
        ptx = self.dslc("g.kiln", "--kernel", "g", "--emit=ptx")
        self.assertOk(ptx)
        self.assertIn(".entry g_persistent(", ptx.stdout)
        self.assertOk(self.dslc("g.kiln", "--kernel", "g", "--emit=bundle", "-o", "g.kgraph"))
        with open(os.path.join(self.tmp, "g.kgraph"), "rb") as f:
            self.assertEqual(f.read(8), b"KILNGRPH")
        errors = self.assertUserError(self.dslc("g.kiln", "--kernel", "g", "--emit=spirv", "--target=spirv64",
                                                "--diagnostics=json"), "E0109")
        self.assertEqual((errors[0]["line"], errors[0]["col"]), (2, 7))
        # Compiling every kernel skips the graph.
        self.assertOk(self.dslc("g.kiln"))

    def test_unknown_kernel_when_compiling(self):
        self.write("a.kiln", kernel("store(p, 1.0);"))
        errors = self.assertUserError(self.dslc("a.kiln", "--kernel", "b", "--diagnostics=json"), "E0106")
        self.assertIn("'b'", errors[0]["message"])

    def test_empty_and_comment_only_files_compile_to_nothing(self):
        for name, text in (("empty.kiln", ""), ("comments.kiln", "// nothing\n/* at all */\n")):
            with self.subTest(file=name):
                self.write(name, text)
                r = self.dslc(name)
                self.assertOk(r)
                self.assertEqual(r.stdout.strip(), "")
                self.assertUserError(self.dslc("run", name, "--grid", "1", "--diagnostics=json"), "E0106")


if __name__ == "__main__":
    clitest.main()
