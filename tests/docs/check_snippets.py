#!/usr/bin/python3
#===- check_snippets.py - The Kiln code of the docs compiles, and computes what it says ===#
#
# CTest runs this as `docs.snippets`. It reads every fenced block of docs/*.md and
# README.md (or of the pages named on the command line) and checks the Kiln ones:
#
#   ```kiln            a complete source file. `dslc FILE` must accept it (exit 0): an
#                      unmarked block is always compiled, so a page cannot show code the
#                      compiler refuses. A file without kernels (only fns and consts) is
#                      compiled too.
#   ```kiln-fragment   an excerpt that is not a program (a line of a kernel, `...` for
#                      the rest): shown, never compiled.
#   ```kiln-expr       statements compiled inside the template kernel of docs/builtins.md,
#                      the ```kiln block there marked `<!-- template: kiln-expr -->`; they
#                      replace its line `// example`, in a block of their own, so they may
#                      reuse the template's names. A last line without `;` gets one.
#
# Markers are HTML comments, which a rendered page does not show, on the lines right
# before a block (blank lines and other comments may come between). Each starts with a
# word and a colon:
#
#   <!-- not-checked: REASON -->       do not compile this ```kiln block (say why)
#   <!-- compile: FLAGS -->            compile with these dslc options too (-D, --kernel, ...)
#   <!-- expect-error: E0404 -->       the block must be refused (exit 1) with this code:
#                                      for pages that show what the compiler rejects
#   <!-- run: ... -->                  also run a kernel of the block (below); several run
#                                      markers make several runs
#   <!-- template: kiln-expr -->       the ```kiln-expr template (docs/builtins.md only)
#
# A marker followed by text, or by a block that is not Kiln, is an error, so a marker
# cannot silently stop applying.
#
# A run marker runs the block on the reference interpreter with NumPy inputs and
# compares what it wrote with NumPy expressions:
#
#   <!-- run: --kernel scale --grid 4 -D BLOCK=256
#   n = 1000
#   x = normal(n)
#   out = zeros(n)
#   s = 0.5
#   expect: out = x * s
#   -->
#
#   first line     `run:` and the options of `dslc run`: --grid (required), --kernel
#                  (required when the block has several kernels), -D, and any other
#                  option of `dslc run`. The checker adds `--device interp` and one
#                  `--arg` per argument. A word may hold Python in braces, evaluated
#                  once the arguments are known: `--grid {cdiv(n, 256)}`.
#   NAME = EXPR    an argument: a NumPy array for a pointer parameter (any shape, sent
#                  flat in C order; its dtype becomes the parameter's pointee type, floats
#                  rounded to nearest even, bf16 and f8 as `dslc run` expects them), a
#                  number for a scalar parameter. Lines run in order and may use the
#                  names before them; a name that is no parameter is a helper value.
#                  Every runtime parameter of the kernel needs a line.
#   expect: LHS = EXPR
#                  after the run, LHS (a buffer's name, or an expression starting with
#                  one, e.g. `y[:n]`) must equal EXPR, which sees every argument as it
#                  was BEFORE the run (the inputs, and outputs at their initial
#                  contents). Integers and bools must match exactly; floats within the
#                  tolerance of their dtype (f32: rtol 1e-5, atol 1e-6; f16 2e-3/1e-3;
#                  bf16 1e-2/1e-2; f64 1e-12), NaN where NaN, infinities equal. EXPR
#                  broadcasts to LHS's shape.
#   expect: EXPR   a condition on the values AFTER the run that must hold for every
#                  element, e.g. `expect: np.all((u >= 0) & (u < 1))`.
#   tol: RTOL [ATOL]
#                  the float tolerance of every comparison of this run, wherever the
#                  line stands (ATOL defaults to RTOL).
#   stdout: TEXT   the run must print TEXT (a `print` in the kernel).
#   # ...          a comment; a line ending in `\` continues on the next one.
#
# A pointer argument must come back byte for byte unchanged unless an expect line
# compares it (on the left of `=`) or a condition names it. Names available to the
# expressions:
#   np                         NumPy
#   normal(shape, mean=0, std=1), uniform(shape, lo=0, hi=1), integers(shape, lo, hi)
#                              random inputs (hi excluded), from the run's own stream
#   zeros(shape), ones(shape), full(shape, v), arange(...)
#   f32(x), f64(x)             NumPy arrays of that dtype
#   cdiv(a, b)                 -(-a // b), as Kiln's cdiv of positive numbers
#   c_div(a, b), c_rem(a, b)   C's truncating division and remainder (Kiln's / and %)
#   sigmoid(x), erf(x)
#   philox(seed, c0, c1, c2, c3, rounds=10)
#                              Philox 4x32's four words (Kiln's philox)
#   kiln_randint(seed, offs), kiln_rand(seed, offs), kiln_randn(seed, offs)
#                              what Kiln's randint, rand and randn (and Triton's
#                              tl.randint, tl.rand, tl.randn) return, computed in NumPy
#
# Random inputs come from KILN_SEED, else the clock; every failure prints the seed, and
# `KILN_SEED=<seed> check_snippets.py PAGE` replays it (each run has its own stream,
# derived from the seed, the page, the block's line and the run's place).
#
# Output: one line per Kiln block, PASS, SKIP or FAIL with its page and line; a failure
# shows dslc's diagnostics at the page's own lines. Exit 1 when anything failed.
#
#   /usr/bin/python3 tests/docs/check_snippets.py --dslc build/tools/dslc [PAGE.md ...]
#
# --verbose prints every run's command and output, --keep DIR keeps each block's source
# and .npy files in DIR, --seed N fixes the inputs, --jobs N runs N blocks at a time.
#
#===---------------------------------------------------------------------------===#
import argparse
import concurrent.futures
import glob
import math
import os
import re
import shlex
import sys
import tempfile
import time
import zlib

import numpy as np

import doccheck as dc
import kilncase as kc
from run_kernels import compare, fmt_scalar


# ---- pages --------------------------------------------------------------------------

def default_pages():
    pages = sorted(glob.glob(os.path.join(dc.REPO, "docs", "*.md")))
    readme = os.path.join(dc.REPO, "README.md")
    if os.path.isfile(readme):
        pages.append(readme)
    return pages


class Failure(Exception):
    """A block that did not pass; the message is one line, details follow it."""

    def __init__(self, message, details=""):
        super().__init__(message)
        self.details = details


# ---- run specs ----------------------------------------------------------------------

def split_flags(text):
    """Words as a shell splits them, except that a `{...}` group stays in one word."""
    protected = re.sub(r"\{[^{}]*\}", lambda m: m.group(0).replace(" ", "\0"), text)
    return [w.replace("\0", " ") for w in shlex.split(protected)]


class RunSpec:
    def __init__(self, marker):
        self.marker = marker
        lines = []
        for raw in marker.value.split("\n"):
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + raw.strip()
            else:
                lines.append(raw.strip())
        self.flags = split_flags(lines[0]) if lines else []
        self.args = []          # (name, expr)
        self.expects = []       # (lhs or None, expr, text)
        self.tol = None
        self.stdout = []
        for l in lines[1:]:
            if not l or l.startswith("#"):
                continue
            m = re.match(r"^(expect|tol|stdout)\s*:\s*(.*)$", l)
            if m:
                kind, rest = m.groups()
                if kind == "expect":
                    cmp = re.match(r"^([A-Za-z_]\w*(?:\[[^\]]*\])?)\s*=(?!=)\s*(.+)$", rest)
                    if cmp:
                        self.expects.append((cmp.group(1), cmp.group(2), rest))
                    else:
                        self.expects.append((None, rest, rest))
                elif kind == "tol":
                    nums = rest.split()
                    if not 1 <= len(nums) <= 2:
                        raise Failure("run marker at line %d: tol takes RTOL [ATOL], got %r" % (marker.line, rest))
                    self.tol = kc.Tol(float(nums[0]), float(nums[-1]))
                else:
                    self.stdout.append(rest)
                continue
            m = re.match(r"^([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$", l)
            if not m:
                raise Failure("run marker at line %d: cannot read %r (expected NAME = EXPR, expect:, tol: or "
                              "stdout:)" % (marker.line, l))
            self.args.append(m.groups())
        if "--grid" not in self.flags and not any(f.startswith("--grid=") for f in self.flags):
            raise Failure("run marker at line %d: the first line needs --grid" % marker.line)
        if not self.expects and not self.stdout:
            raise Failure("run marker at line %d: nothing to check (no expect: or stdout: line)" % marker.line)

    def flag_value(self, name):
        for k, f in enumerate(self.flags):
            if f == name and k + 1 < len(self.flags):
                return self.flags[k + 1]
            if f.startswith(name + "="):
                return f.split("=", 1)[1]
        return None

    def defines(self):
        out = []
        for k, f in enumerate(self.flags):
            if f == "-D" and k + 1 < len(self.flags):
                out += ["-D", self.flags[k + 1]]
            elif f.startswith("-D") and len(f) > 2:
                out += [f]
        return out


def helpers(rng):
    def shape_of(shape):
        return tuple(int(d) for d in shape) if isinstance(shape, (tuple, list)) else (int(shape),)

    def kiln_randint(seed, offs, rounds=10):
        return kc.random_words(seed, np.asarray(offs), rounds)[0]

    def kiln_rand(seed, offs, rounds=10):
        return kc.random_uniform(kiln_randint(seed, offs, rounds))

    def kiln_randn(seed, offs, rounds=10):
        w = kc.random_words(seed, np.asarray(offs), rounds)
        u1 = np.maximum(kc.random_uniform(w[0]).astype(np.float64), 1e-7)
        u2 = kc.random_uniform(w[1]).astype(np.float64)
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)

    def philox(seed, c0, c1, c2, c3, rounds=10):
        seed = int(seed) & 0xffffffffffffffff
        shape = np.broadcast(*[np.asarray(c) for c in (c0, c1, c2, c3)]).shape
        words = [np.broadcast_to(np.asarray(c).astype(np.int64).astype(np.uint32), shape) for c in (c0, c1, c2, c3)]
        return kc.philox4x32(words, seed, seed >> 32, rounds)

    return {
        "np": np, "math": math,
        "normal": lambda shape, mean=0.0, std=1.0: rng.normal(mean, std, size=shape_of(shape)),
        "uniform": lambda shape, lo=0.0, hi=1.0: rng.uniform(lo, hi, size=shape_of(shape)),
        "integers": lambda shape, lo, hi: rng.integers(lo, hi, size=shape_of(shape)),
        "zeros": lambda shape: np.zeros(shape_of(shape)),
        "ones": lambda shape: np.ones(shape_of(shape)),
        "full": lambda shape, v: np.full(shape_of(shape), v),
        "arange": np.arange,
        "f32": lambda x: np.asarray(x, np.float32), "f64": lambda x: np.asarray(x, np.float64),
        "cdiv": lambda a, b: -(-a // b),
        "c_div": kc.c_div, "c_rem": kc.c_rem, "sigmoid": kc.sigmoid, "erf": kc.erf,
        "philox": philox, "kiln_randint": kiln_randint, "kiln_rand": kiln_rand, "kiln_randn": kiln_randn,
    }


_TIR_KERNEL = re.compile(r"^kernel @([A-Za-z_]\w*)\((.*)\) attributes", re.M)


def kernel_params(dslc, src, tmp, spec, page):
    """The runtime parameters (name, dtype, is_pointer) of the kernel the spec runs."""
    argv = [dslc, src, "--emit=tir"] + spec.defines() + dc.include_flags(page)
    kernel = spec.flag_value("--kernel")
    if kernel:
        argv += ["--kernel", kernel]
    r = dc.run(argv, tmp)
    if r.rc != 0:
        raise Failure("cannot read the kernel's parameters (dslc --emit=tir failed)", r.output())
    kernels = _TIR_KERNEL.findall(r.stdout)
    if kernel:
        kernels = [k for k in kernels if k[0] == kernel]
    if len(kernels) != 1:
        raise Failure("run marker at line %d: the block has %d kernels; name one with --kernel" % (
            spec.marker.line, len(kernels)))
    params = []
    for p in filter(None, (s.strip() for s in kernels[0][1].split(","))):
        m = re.match(r"^%([A-Za-z_]\w*)\s*:\s*(\*?)(\w+)$", p)
        if not m:
            raise Failure("cannot read the parameter %r of kernel %s" % (p, kernels[0][0]))
        params.append((m.group(1), m.group(3), bool(m.group(2))))
    return kernels[0][0], params


def mentioned(names, texts):
    used = set()
    for t in texts:
        used |= set(re.findall(r"[A-Za-z_]\w*", t))
    return [n for n in names if n in used]


def check_run(dslc, block, src, where, spec, tmp, seed, index):
    kernel, params = kernel_params(dslc, src, tmp, spec, block.path)
    rng = np.random.default_rng([seed, zlib.crc32(("%s:%d:%d" % (block.rel, block.line, index)).encode())])
    ns = helpers(rng)
    by_name = {p[0]: p for p in params}
    before, files, raw_before = {}, {}, {}
    for name, expr in spec.args:
        try:
            value = eval(expr, ns)
        except Exception as e:
            raise Failure("run marker at line %d: %s = %s: %s: %s" % (spec.marker.line, name, expr, type(e).__name__, e))
        if name not in by_name:
            ns[name] = value        # a helper value
            continue
        _, dtype, pointer = by_name[name]
        arr = np.asarray(value)
        if pointer:
            if arr.ndim == 0:
                raise Failure("run marker at line %d: %s is a pointer (*%s) and needs an array, got %r" % (
                    spec.marker.line, name, dtype, value))
            if not kc.is_float(dtype) and np.issubdtype(arr.dtype, np.floating):
                if not np.all(np.isfinite(arr) & (arr == np.round(arr))):
                    raise Failure("run marker at line %d: %s is *%s but its values are not integers" % (
                        spec.marker.line, name, dtype))
                arr = arr.astype(np.int64)
            vals = kc.to_values(arr, dtype)
            path = os.path.join(tmp, "%s.npy" % name)
            np.save(path, kc.encode(vals, dtype))
            with open(path, "rb") as f:
                raw_before[name] = f.read()
            files[name] = path
        else:
            if arr.ndim != 0:
                raise Failure("run marker at line %d: %s is a scalar (%s) and needs a number" % (
                    spec.marker.line, name, dtype))
            vals = kc.to_values(arr, dtype)[()]
            if dtype == "bool":
                vals = bool(vals)
            elif not kc.is_float(dtype):
                vals = int(vals)
        ns[name] = vals
        before[name] = vals
    missing = [p[0] for p in params if p[0] not in before]
    if missing:
        raise Failure("run marker at line %d: no value for %s (kernel %s takes %s)" % (
            spec.marker.line, ", ".join(missing), kernel,
            ", ".join("%s: %s%s" % (p[0], "*" if p[2] else "", p[1]) for p in params)))

    def expand(flag):
        try:
            return re.sub(r"\{([^{}]*)\}", lambda m: str(eval(m.group(1), dict(ns))), flag)
        except Exception as e:
            raise Failure("run marker at line %d: %s: %s: %s" % (spec.marker.line, flag, type(e).__name__, e))
    argv = [dslc, "run", src] + [expand(f) for f in spec.flags] + ["--device", "interp"] + dc.include_flags(block.path)
    for name, dtype, pointer in params:
        argv += ["--arg", "%s=%s" % (name, files[name] if pointer else fmt_scalar(before[name], dtype))]
    r = dc.run(argv, tmp)
    shown = " ".join(shlex.quote(str(a)) for a in argv)
    output = dc.relocate(r.output(), src, where)
    details = "command: %s%s" % (shown, "\n" + output if output else "")
    if r.rc != 0:
        first = next((l for l in dc.relocate(r.stderr or r.stdout, src, where).split("\n") if l.strip()), "")
        raise Failure("run marker at line %d: dslc run %s: %s" % (
            spec.marker.line, "timed out" if r.rc is None else "exited with %d" % r.rc, first), details)
    problems = ["the run did not print %r" % text for text in spec.stdout if text not in r.stdout + r.stderr]

    after = dict(ns)
    for name, path in files.items():
        dtype = by_name[name][1]
        got = np.load(path, allow_pickle=False)
        after[name] = kc.decode(got, dtype).reshape(np.shape(before[name]))
    for lhs, expr, text in spec.expects:
        try:
            if lhs is None:
                ok = np.all(np.asarray(eval(expr, dict(after))))
                if not ok:
                    problems.append("expect: %s does not hold" % text)
                continue
            got = np.asarray(eval(lhs, dict(after)))
            want = np.asarray(eval(expr, dict(ns)), dtype=None)
        except Exception as e:
            problems.append("expect: %s: %s: %s" % (text, type(e).__name__, e))
            continue
        base = re.match(r"[A-Za-z_]\w*", lhs).group(0)
        dtype = by_name[base][1] if base in by_name else (
            "f32" if np.issubdtype(got.dtype, np.floating) else "i64")
        tol = spec.tol or kc.default_tol(dtype)
        why = compare(lhs, got, want, dtype, tol)
        if why:
            problems.append("expect: %s: %s" % (text, why))
    # What the expect lines say may change: the buffers compared on their left side, and
    # every name a condition uses.
    described = {re.match(r"[A-Za-z_]\w*", lhs).group(0) for lhs, _, _ in spec.expects if lhs}
    described |= set(mentioned(list(files), [expr for lhs, expr, _ in spec.expects if lhs is None]))
    for name in files:
        if name in described:
            continue
        with open(files[name], "rb") as f:
            if f.read() != raw_before[name]:
                problems.append("%s was changed, but no expect line says what it holds" % name)
    if problems:
        raise Failure("run marker at line %d: %s" % (spec.marker.line, "; ".join(problems)), details)
    return details


# ---- one block ----------------------------------------------------------------------

class Outcome:
    def __init__(self, block, status, note="", details=""):
        self.block, self.status, self.note, self.details = block, status, note, details


NOT_A_PROGRAM_HINT = ("if this block is an excerpt rather than a complete program, fence it as ```kiln-fragment "
                      "or put <!-- not-checked: REASON --> before it")


def check_block(dslc, block, template, seed, keep):
    marks = {k: block.markers_of(k) for k in dc.MARKER_KINDS}
    skip = marks["not-checked"]
    if skip:
        if not skip[0].value:
            return Outcome(block, "FAIL", "not-checked needs a reason: <!-- not-checked: why -->")
        others = [m.kind for m in block.markers if m.kind != "not-checked"]
        if others:
            return Outcome(block, "FAIL", "a not-checked block cannot also carry %s markers" % ", ".join(others))
        return Outcome(block, "SKIP", "not checked: " + skip[0].value)
    if block.lang == dc.FRAGMENT:
        if block.markers:
            return Outcome(block, "FAIL", "a ```kiln-fragment is never compiled; its %s marker does nothing" %
                           block.markers[0].kind)
        return Outcome(block, "SKIP", "fragment")
    if block.lang == dc.EXPR and (marks["run"] or marks["template"]):
        return Outcome(block, "FAIL", "a ```kiln-expr block cannot be run; write a complete ```kiln block instead")
    if len(marks["expect-error"]) > 1 or len(marks["compile"]) > 1:
        return Outcome(block, "FAIL", "at most one compile and one expect-error marker per block")
    if marks["expect-error"] and marks["run"]:
        return Outcome(block, "FAIL", "a block that must be refused cannot also be run")

    tmp_ctx = None
    if keep:
        tmp = os.path.join(keep, "%s.L%d" % (block.rel.replace(os.sep, "_"), block.line))
        os.makedirs(tmp, exist_ok=True)
    else:
        tmp_ctx = tempfile.TemporaryDirectory(prefix="kiln-doc-")
        tmp = tmp_ctx.name
    try:
        if block.lang == dc.EXPR:
            if template is None:
                return Outcome(block, "FAIL", "no kiln-expr template (docs/builtins.md)")
            source, where = dc.wrap_example(template, block.text, block)
        else:
            source, where = block.text, dc.block_lines(block)
        src = os.path.join(tmp, "snippet.kiln")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        flags = split_flags(marks["compile"][0].value) if marks["compile"] else []
        r = dc.run([dslc, src] + flags + dc.include_flags(block.path), tmp)
        diag = dc.relocate(r.output(), src, where)
        if marks["expect-error"]:
            code = marks["expect-error"][0].value
            if not re.fullmatch(r"E\d{4}", code):
                return Outcome(block, "FAIL", "expect-error takes one code like E0404, got %r" % code)
            if r.rc != 1 or code not in dc.error_codes(r.output()):
                got = sorted(dc.error_codes(r.output()))
                return Outcome(block, "FAIL", "expected dslc to refuse the block with %s, got exit %s%s" % (
                    code, r.rc, " and " + ", ".join(got) if got else " and no error"), diag)
            return Outcome(block, "PASS", "refused with %s" % code)
        if r.rc != 0:
            first = next((l for l in diag.split("\n") if "error" in l), diag.split("\n")[0] if diag else "")
            hint = "\n" + NOT_A_PROGRAM_HINT if block.lang == dc.KILN else ""
            return Outcome(block, "FAIL", "dslc %s: %s" % (
                "timed out" if r.rc is None else "exited with %d" % r.rc, first), diag + hint)
        runs = []
        for k, m in enumerate(marks["run"]):
            run_tmp = os.path.join(tmp, "run%d" % k)
            os.makedirs(run_tmp, exist_ok=True)
            try:
                runs.append(check_run(dslc, block, src, where, RunSpec(m), run_tmp, seed, k))
            except Failure as e:
                return Outcome(block, "FAIL", "%s [KILN_SEED=%d]" % (e, seed), e.details)
        what = "compiled" if block.lang == dc.KILN else "compiled in the template"
        return Outcome(block, "PASS", what + (", ran %d" % len(runs) if runs else ""), "\n".join(runs))
    except Failure as e:
        return Outcome(block, "FAIL", str(e), e.details)
    finally:
        if tmp_ctx:
            tmp_ctx.cleanup()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compile (and run) the Kiln blocks of the docs.")
    ap.add_argument("pages", nargs="*", help="Markdown pages (default: docs/*.md and README.md)")
    ap.add_argument("--dslc", help="the compiler (default: $KILN_DSLC, build/tools/dslc, dslc on PATH)")
    ap.add_argument("--seed", type=int, help="the seed of the random inputs (default: $KILN_SEED, else the clock)")
    ap.add_argument("--keep", metavar="DIR", help="keep each block's source and .npy files in DIR")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--verbose", action="store_true", help="print the details of passing blocks too")
    args = ap.parse_args(argv)
    dslc = dc.find_dslc(args.dslc)
    seed = args.seed if args.seed is not None else int(os.environ.get("KILN_SEED", int(time.time() * 1000) % 2**31))
    pages = args.pages or default_pages()

    failed = 0
    template = None
    try:
        template = dc.find_template(dc.read_page(dc.BUILTINS_MD))
    except (OSError, ValueError) as e:
        template_error = str(e)
    else:
        template_error = None

    blocks = []
    for p in pages:
        page = dc.read_page(p)
        for e in page.errors:
            failed += 1
            print("FAIL %s" % e)
        blocks += [b for b in page.blocks if b.lang in dc.KILN_LANGS]
    if template_error and any(b.lang == dc.EXPR for b in blocks):
        failed += 1
        print("FAIL %s" % template_error)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda b: check_block(dslc, b, template, seed, args.keep), blocks))
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for o in outcomes:
        counts[o.status] += 1
        print("%s %s (%s)" % (o.status, o.block.where, o.note) if o.status != "FAIL"
              else "FAIL %s: %s" % (o.block.where, o.note))
        if o.details and (o.status == "FAIL" or args.verbose):
            print(dc.indent(o.details))
    failed += counts["FAIL"]
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], failed, counts["SKIP"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
