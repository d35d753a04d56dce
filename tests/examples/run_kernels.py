#!/usr/bin/python3
#===- run_kernels.py - Differential runner: Kiln kernels vs numpy ---------------===#
#
# For every case (the examples in example_cases.py and the corpus in
# tests/programs/cases.py) this builds fresh random inputs, writes them as `.npy` files,
# runs `dslc run` on the reference interpreter, reads the outputs back and compares
# them with a numpy reference at a tolerance that fits the dtype. It prints one line a
# case, `PASS name` or `FAIL name: ...`, then `N passed, M failed`, and exits 1 when any
# case failed.
#
# Inputs are random on every run; the seed comes from KILN_SEED (or the clock) and is
# printed with each failure, so `KILN_SEED=<seed> run_kernels.py --only <name>` replays
# it exactly (each case draws from its own stream, derived from the seed and its name).
#
#===---------------------------------------------------------------------------===#
import argparse
import fnmatch
import importlib.util
import io
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import kilncase as kc  # noqa: E402


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def all_cases():
    examples = load_module(os.path.join(HERE, "example_cases.py"), "example_cases").CASES
    corpus = load_module(os.path.join(REPO, "tests", "programs", "cases.py"), "program_cases").CASES
    stdlib = load_module(os.path.join(REPO, "tests", "stdlib", "cases.py"), "stdlib_cases").CASES
    cases = list(examples) + list(corpus) + list(stdlib)
    seen = set()
    for c in cases:
        if c.name in seen:
            raise SystemExit("run_kernels.py: two cases are named %r" % c.name)
        seen.add(c.name)
    return cases


def uncovered_files(cases):
    """Kiln files of examples/, stdlib/ and tests/programs/ that no case runs, directly or
    (a file of fns) through a file that imports it."""
    used = {os.path.normpath(c.file) for c in cases}
    missing = []
    for folder in ("examples", "stdlib", os.path.join("tests", "programs")):
        for f in sorted(os.listdir(os.path.join(REPO, folder))):
            rel = os.path.normpath(os.path.join(folder, f))
            if f.endswith(".kiln") and not kc.covered_by_cases(rel, used, REPO):
                missing.append(rel)
    return missing


def matches(name, pattern):
    """`--only` patterns: a glob (`reduce.*`), or dotted name parts that occur in the case
    name in order and adjacent (`softmax` selects `example.softmax` and
    `example.softmax.random`, not `kernel.softmax_2d`)."""
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    parts, want = name.split("."), pattern.split(".")
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def find_dslc(explicit):
    if explicit:
        # A build folder holding the binary is accepted too (build/tools/dslc).
        inner = os.path.join(explicit, "dslc")
        return inner if os.path.isdir(explicit) and os.path.isfile(inner) else explicit
    if os.environ.get("KILN_DSLC"):
        return os.environ["KILN_DSLC"]
    on_path = shutil.which("dslc")
    if on_path:
        return on_path
    for build in ("build", "build-examples"):
        for p in (os.path.join(REPO, build, "tools", "dslc"),
                  os.path.join(REPO, build, "tools", "dslc", "dslc")):
            if os.path.isfile(p):
                return p
    return "dslc"


def case_rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def fmt_scalar(value, dtype):
    if dtype == "bool":
        return "true" if value else "false"
    if kc.is_float(dtype):
        v = float(value)
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(int(value))


def fmt_define(value):
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Prepared:
    """A case made concrete: sizes, values, files and the command line."""

    def __init__(self, case, seed, dslc, tmp, device, extra=()):
        self.case = case
        rng = case_rng(seed, case.name)
        self.sizes = case.sizes(rng) if callable(case.sizes) else dict(case.sizes)
        self.values = {}
        self.arrays = {}   # name -> Arr
        self.paths = {}    # name -> .npy path
        self.before = {}   # name -> bytes of the file before the run
        cmd = [dslc, "run", os.path.join(REPO, case.file), "--kernel", case.kernel]
        grid = kc.resolve(case.grid, self.sizes)
        if isinstance(grid, int):
            grid = (grid,)
        self.grid = tuple(int(g) for g in grid)
        cmd += ["--grid", ",".join(str(g) for g in self.grid)]
        defines = case.defines(self.sizes) if callable(case.defines) else case.defines
        for k, v in defines.items():
            cmd += ["-D", "%s=%s" % (k, fmt_define(v))]
        for a in case.args:
            if isinstance(a, kc.Arr):
                shape = kc.resolve(a.shape, self.sizes)
                if isinstance(shape, int):
                    shape = (shape,)
                vals = kc.to_values(np.asarray(a.gen(rng, shape)).reshape(shape), a.dtype)
                path = os.path.join(tmp, a.name + ".npy")
                np.save(path, kc.encode(vals, a.dtype))
                with open(path, "rb") as f:
                    self.before[a.name] = f.read()
                self.values[a.name] = vals
                self.arrays[a.name] = a
                self.paths[a.name] = path
                if isinstance(a, kc.BlockMask) and a.predicate:
                    name, params = a.predicate[0], a.predicate[1:]
                    cmd += ["--arg", "%s=%s(%s)" % (a.name, name, ",".join(str(int(x)) for x in
                                                                          (shape[0], shape[1]) + params))]
                else:
                    cmd += ["--arg", "%s=%s" % (a.name, path)]
            else:
                raw = kc.resolve(a.value, self.sizes)
                val = kc.to_values(np.asarray(raw), a.dtype)[()]
                self.values[a.name] = val
                cmd += ["--arg", "%s=%s" % (a.name, fmt_scalar(val, a.dtype))]
        if device:
            cmd += ["--device", device]
        self.cmd = cmd + list(extra)

    def shapes(self):
        return ", ".join("%s%s %s" % (n, list(self.values[n].shape), self.arrays[n].dtype)
                         for n in self.arrays)


def compare(name, got, want, dtype, tol):
    """Returns None when `got` matches, else a one-line reason."""
    want = np.asarray(want)
    if want.shape != got.shape:
        try:
            want = np.broadcast_to(want, got.shape)
        except ValueError:
            return "%s: shape %s, reference %s" % (name, got.shape, want.shape)
    if not kc.is_float(dtype):
        # u64 needs its own exact type; everything else fits int64 (bool as 0/1).
        exact = np.uint64 if dtype == "u64" else np.int64
        g = got.astype(exact)
        w = want.astype(exact)
        bad = g != w
        if not bad.any():
            return None
        idx = np.unravel_index(np.argmax(bad), got.shape)
        err = np.abs(g.astype(np.float64) - w.astype(np.float64)).max()
        return "max abs err %g in %s (%d of %d differ; at %s got %s, expected %s)" % (
            err, name, int(bad.sum()), bad.size, list(idx), g[idx], w[idx])
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_bad = np.isnan(g) != np.isnan(w)
    inf_bad = (np.isinf(g) | np.isinf(w)) & ~(np.isnan(g) | np.isnan(w)) & (g != w)
    fin = np.isfinite(g) & np.isfinite(w)
    diff = np.where(fin, np.abs(g - w), 0.0)
    tol_bad = fin & (diff > tol.atol + tol.rtol * np.abs(w))
    bad = nan_bad | inf_bad | tol_bad
    if tol.atol == 0 and tol.rtol == 0:
        # Exact means bit for bit up to the NaN payload: zeros keep their sign.
        bad |= fin & (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    err = float(diff.max()) if diff.size else 0.0
    if not bad.any():
        return None
    idx = np.unravel_index(np.argmax(bad), got.shape)
    return ("max abs err %.3g in %s (%d of %d outside rtol %g atol %g; "
            "at %s got %r, expected %r)") % (
        err, name, int(bad.sum()), bad.size, tol.rtol, tol.atol, list(idx),
        float(g[idx]), float(w[idx]))


def run_case(case, seed, dslc, args):
    """Runs one case; returns (ok, message, details)."""
    if args.keep:
        # Keep the inputs and outputs for a look after the run.
        tmp = os.path.join(args.keep, case.name)
        os.makedirs(tmp, exist_ok=True)
        return run_case_in(case, seed, dslc, args, tmp)
    with tempfile.TemporaryDirectory(prefix="kiln-") as tmp:
        return run_case_in(case, seed, dslc, args, tmp)


def effective_flags(case, args):
    """The case's own dslc options, then the run's; a --reduction-split of the run
    replaces the case's."""
    split = any(f.startswith("--reduction-split") for f in args.dslc_flag)
    own = [f for f in case.flags if not (split and f.startswith("--reduction-split"))]
    return own + args.dslc_flag


def forced_segments(flags):
    """The S of a --reduction-split=S among `flags`, else None (the cost model decides)."""
    for f in flags:
        if f.startswith("--reduction-split="):
            return int(f.split("=", 1)[1])
    return None


def run_case_in(case, seed, dslc, args, tmp):
    try:
        p = Prepared(case, seed, dslc, tmp, args.device, effective_flags(case, args))
    except Exception as e:  # a broken spec is a failure of that case, not of the run
        return False, "cannot prepare the case: %s: %s" % (type(e).__name__, e), ""
    details = "  command: %s\n  sizes: %s\n  arrays: %s" % (
        " ".join(shlex.quote(c) for c in p.cmd), p.sizes, p.shapes())
    try:
        proc = subprocess.run(p.cmd, capture_output=True, text=True, timeout=args.timeout)
    except FileNotFoundError:
        return False, "dslc not found at %s (use --dslc PATH)" % p.cmd[0], details
    except subprocess.TimeoutExpired:
        return False, "timed out after %ds" % args.timeout, details
    details += "\n  exit code: %d" % proc.returncode
    if proc.stdout.strip():
        details += "\n  stdout:\n" + indent(proc.stdout)
    if proc.stderr.strip():
        details += "\n  stderr:\n" + indent(proc.stderr)
    first_err = first_line(proc.stderr) or first_line(proc.stdout)

    if case.expect_error:
        if proc.returncode != 1:
            return False, "expected failure %s, got exit code %d" % (
                case.expect_error, proc.returncode), details
        if case.expect_error not in proc.stderr:
            return False, "expected %s, got: %s" % (case.expect_error, first_err), details
        for name in p.arrays:
            with open(p.paths[name], "rb") as f:
                if f.read() != p.before[name]:
                    return False, "a failed run changed %s.npy" % name, details
        return True, "", details

    if proc.returncode != 0:
        return False, "dslc exited with %d: %s" % (proc.returncode, first_err), details
    # Device prints go to stdout; stderr is accepted too, the point is that it printed.
    if case.expect_stdout is not None and \
            case.expect_stdout not in proc.stdout + proc.stderr:
        return False, "the output lacks %r" % case.expect_stdout, details

    try:
        values = kc.Values(p.values)
        values.fusion = "--no-fuse-reductions" not in args.dslc_flag
        values.segments = forced_segments(effective_flags(case, args))
        expected = case.ref(values, p.sizes)
    except Exception as e:
        return False, "reference failed: %s: %s" % (type(e).__name__, e), details
    worst = []
    for name, arr in p.arrays.items():
        try:
            got_file = np.load(p.paths[name], allow_pickle=False)
        except Exception as e:
            return False, "cannot read %s.npy back: %s" % (name, e), details
        if got_file.dtype.str != kc.file_descr(arr.dtype):
            return False, "%s.npy came back as %s" % (name, got_file.dtype.str), details
        got = kc.decode(got_file, arr.dtype).reshape(p.values[name].shape)
        if name not in expected:
            before = np.load(io.BytesIO(p.before[name]), allow_pickle=False)
            if before.tobytes() != got_file.tobytes():
                width = before.dtype.itemsize
                changed = (before.reshape(-1).view(np.uint8).reshape(-1, width) !=
                           got_file.reshape(-1).view(np.uint8).reshape(-1, width)).any(axis=1)
                worst.append("input %s was modified (%d elements)" % (name, int(changed.sum())))
            continue
        why = compare(name, got, expected[name], arr.dtype, case.tol_for(name, arr.dtype))
        if why:
            worst.append(why)
    for name in expected:
        if name not in p.arrays:
            worst.append("reference names %s, which is no array argument" % name)
    if worst:
        return False, "; ".join(worst), details
    return True, "", details


def indent(text):
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def demo(cases, seed, dslc, args):
    """The softmax example on a larger input, reported for a reader."""
    case = next(c for c in cases if c.name == "example.softmax")
    big = kc.Case(
        name="demo.softmax", file=case.file, kernel=case.kernel,
        sizes={"rows": 64, "n": 1000}, grid=("rows",), defines={"BLOCK": 1024},
        args=case.args, ref=case.ref)
    with tempfile.TemporaryDirectory(prefix="kiln-demo-") as tmp:
        p = Prepared(big, seed, dslc, tmp, args.device)
        shown = ["dslc"] + [c.replace(REPO + os.sep, "").replace(tmp, "<tmp>")
                            for c in p.cmd[1:]]
        print("Kiln demo: row softmax")
        print("  command: %s" % " ".join(shown))
        print("  shape:   x [%d, %d] f32 -> y [%d, %d] f32, one program per row, BLOCK = 1024"
              % (64, 1000, 64, 1000))
        print("  input:   random normal values; row 0 starts with 100.0 and 95.0, whose exp")
        print("           overflows f32 unless the row max is subtracted first")
        start = time.time()
        try:
            proc = subprocess.run(p.cmd, capture_output=True, text=True, timeout=args.timeout)
        except (FileNotFoundError, subprocess.TimeoutExpired) as e:
            print("  FAILED: %s" % e)
            return 1
        secs = time.time() - start
        # `dslc run --device auto` says on stderr where it ran and why.
        where = [l for l in proc.stderr.splitlines() if l.startswith("dslc: running on")]
        if where:
            print("  device:  %s" % where[0][len("dslc: running on "):])
        if proc.returncode != 0:
            print("  FAILED: dslc exited with %d" % proc.returncode)
            print(indent(proc.stderr))
            return 1
        got = np.load(p.paths["y"])
        want = kc.softmax_rows(p.values["x"])
        err = float(np.abs(got.astype(np.float64) - want).max())
        rows_ok = float(np.abs(got.astype(np.float64).sum(axis=1) - 1.0).max())
        print("  time:    %.2f s (compile + run)" % secs)
        print("  max abs error vs numpy: %.3g" % err)
        print("  rows sum to 1 within:   %.3g" % rows_ok)
        why = compare("y", got, want, "f32", big.tol_for("y", "f32"))
        if why:
            print("  MISMATCH: %s (seed %d)" % (why, seed))
            return 1
        print("  OK")
        return 0


def main():
    # Inputs and references hold NaN, inf and wrapping integers on purpose.
    np.seterr(all="ignore")
    ap = argparse.ArgumentParser(
        description="Run Kiln kernels on the interpreter and compare them with numpy.")
    ap.add_argument("--dslc", help="path of the dslc binary (default: KILN_DSLC, PATH, build/)")
    ap.add_argument("--only", action="append", default=[],
                    help="run only matching cases (repeatable): a name, part of a dotted "
                         "name (softmax), or a glob (reduce.*)")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the command, sizes and dslc output of every case")
    ap.add_argument("--demo", action="store_true",
                    help="run the softmax example on a larger input and explain the result")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--seed", type=int, help="seed (default: KILN_SEED, else the clock)")
    ap.add_argument("--device", default="interp", help="dslc run --device (default interp)")
    ap.add_argument("--dslc-flag", action="append", default=[], metavar="FLAG",
                    help="pass FLAG to every dslc run (repeatable), e.g. --dslc-flag=--no-fuse-reductions")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per dslc run")
    ap.add_argument("--keep", metavar="DIR",
                    help="write each case's .npy files under DIR/<case> and keep them")
    args = ap.parse_args()

    if args.seed is not None:
        seed = args.seed
    elif os.environ.get("KILN_SEED"):
        seed = int(os.environ["KILN_SEED"])
    else:
        seed = int(time.time() * 1000) % (2 ** 31)
    dslc = find_dslc(args.dslc)
    cases = all_cases()

    if args.list:
        for c in cases:
            print("%-40s %s --kernel %s" % (c.name, c.file, c.kernel))
        return 0
    if args.demo:
        return demo(cases, seed, dslc, args)

    selected = cases
    if args.only:
        def wanted(name):
            return any(matches(name, o) for o in args.only)
        selected = [c for c in cases if wanted(c.name)]
        if not selected:
            print("no case matches %s" % ", ".join(args.only))
            print("0 passed, 1 failed")
            return 1

    if args.verbose:
        print("seed %d, dslc %s" % (seed, dslc))
    passed = failed = 0
    for case in selected:
        ok, why, details = run_case(case, seed, dslc, args)
        if ok:
            passed += 1
            print("PASS %s" % case.name)
        else:
            failed += 1
            # One line per case: details (command, dslc output) come with --verbose.
            print("FAIL %s: %s [KILN_SEED=%d]" % (case.name, " ".join(why.split()), seed))
        if args.verbose:
            print(details)
        sys.stdout.flush()
    if not args.only:
        for f in uncovered_files(cases):
            failed += 1
            print("FAIL coverage: %s is run by no case" % f)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
