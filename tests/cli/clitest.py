#===- clitest.py - Shared helpers of the dslc command-line tests ---------------===#
#
# Every cli test script imports this module. It finds the tools (`--dslc PATH`, and
# `--dslc-opt PATH` or the dslc-opt beside dslc; `--kiln-run PATH` or the kiln-run
# beside dslc; `--fake-cuda PATH` and `--fake-ze PATH`, the stand-in driver libraries of
# tests/unit/runtime, for runs "on a GPU" without one), runs them with a time limit, parses
# `--diagnostics=json` output strictly, snapshots folders so a test can prove that a
# failed run left every file byte-identical with its old mtime, and runs unittest with
# a result line of the form `N passed, M failed`.
#
# Each test gets its own temporary folder (self.tmp) and runs the tools there, so the
# tests are hermetic and may run in parallel with each other. The tools run with
# KILN_CUDA_LIBRARY and KILN_ZE_LIBRARY pointing nowhere unless a test passes `env`, so
# no real GPU driver changes what `dslc run` does.
#
#===---------------------------------------------------------------------------===#
import argparse
import concurrent.futures
import functools
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Filled in by main() from the command line.
TOOLS = {"dslc": None, "dslc-opt": None, "kiln-run": None, "kiln-agent": None}
# The stand-in driver libraries (None when not built): {"cuda": path, "ze": path}.
FAKE_DRIVERS = {"cuda": None, "ze": None}
# An environment in which neither GPU driver can be loaded.
NO_DRIVER_ENV = {"KILN_CUDA_LIBRARY": "/nonexistent/libcuda.so.1", "KILN_ZE_LIBRARY": "/nonexistent/libze_loader.so.1"}

# A time no run of the tests can produce: files are stamped with it before a run, so a
# rewrite shows up as a changed mtime even on filesystems with coarse timestamps.
OLD_MTIME_NS = 1_000_000_000 * 1_000_000_000  # 2001-09-09

# Every error must come back within this many seconds (the robustness contract).
TIME_LIMIT_S = 10.0

# How many tool runs a test may have in flight at once.
PARALLEL_RUNS = 4

DIAG_HEADER = re.compile(
    r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note)"
    r"(?:\[(?P<code>E\d{4})\])?: (?P<msg>.*)$")
# An error not tied to a place in a file: `dslc: error[E0600]: ...`.
TOOL_HEADER = re.compile(r"^(?P<tool>dslc|dslc-opt|kiln-run): (?P<sev>error|warning)\[(?P<code>E\d{4})\]: (?P<msg>.*)$")
JSON_KEYS = ("file", "line", "col", "code", "severity", "message")

# A tile op inside a custom combiner: it parses, verifies and runs on the interpreter,
# but code generation does not support it (E0109).
UNSUPPORTED_TIR = """\
kernel @k(%x: *f32) attributes {num_warps = 1} {
  %v = constant {value = 1.0} : tile<f32, [32]>
  %s = reduce %v {axis = 0, kind = "custom"} : f32 {
  ^(%a: f32, %b: f32):
    %t = splat %a : tile<f32, [4]>
    %u = reduce %t {axis = 0, kind = "sum"} : f32
    yield %u
  }
  store %x, %s
  return
}
"""


@functools.lru_cache(maxsize=None)
def documented_codes():
    """The error codes listed in docs/diagnostics.md's tables."""
    with open(os.path.join(REPO, "docs", "diagnostics.md"), encoding="utf-8") as f:
        return frozenset(re.findall(r"^\| (E\d{4}) \|", f.read(), re.MULTILINE))


class Result:
    """What one tool invocation did."""

    def __init__(self, argv, rc, stdout, stderr, seconds):
        self.argv = argv
        self.rc = rc
        self.stdout_bytes = stdout
        self.stderr_bytes = stderr
        self.stdout = stdout.decode("utf-8", "replace")
        self.stderr = stderr.decode("utf-8", "replace")
        self.seconds = seconds

    def describe(self):
        return "%s\n  exit %r after %.2fs\n  stdout: %s\n  stderr: %s" % (
            " ".join(self.argv), self.rc, self.seconds, self.stdout[:1500], self.stderr[:3000])


def run_tool(tool, args, cwd, timeout=TIME_LIMIT_S + 20, stdin=None, env=None, user=None):
    """Runs dslc, dslc-opt or kiln-run; a run killed by the timeout has rc None. `env`
    adds variables to the environment (KILN_CUDA_LIBRARY, ...); `user` (a uid, for a
    test running as root) runs the tool as that user and its group."""
    argv = [TOOLS[tool]] + [str(a) for a in args]
    # Hermetic by default: no real GPU driver is found, so `dslc run` without --device
    # runs on the interpreter on every machine; tests that want a (fake) driver say so.
    full_env = dict(os.environ, **NO_DRIVER_ENV)
    full_env.update(env or {})
    start = time.monotonic()
    # A rebuild may be relinking the tools: retry for a moment on "text file busy".
    for attempt in range(20):
        try:
            as_user = {} if user is None else {"user": user, "group": user, "extra_groups": []}
            p = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, timeout=timeout, env=full_env,
                               **as_user)
            return Result(argv, p.returncode, p.stdout, p.stderr, time.monotonic() - start)
        except subprocess.TimeoutExpired as e:
            return Result(argv, None, e.stdout or b"", e.stderr or b"", time.monotonic() - start)
        except OSError:
            if attempt == 19:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def run_tool_cpu(tool, args, cwd, cpu_limit_s=None):
    """Runs a tool with its output discarded; returns (exit status, CPU seconds it used).
    CPU time, unlike wall time, hardly depends on what else the machine is doing. With
    cpu_limit_s the kernel stops the tool (SIGXCPU) once it has used that much."""
    def limit():
        if cpu_limit_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit_s, cpu_limit_s + 1))
    argv = [TOOLS[tool]] + [str(a) for a in args]
    for attempt in range(20):
        try:
            p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=limit, env=dict(os.environ, **NO_DRIVER_ENV))
            break
        except OSError:
            if attempt == 19:
                raise
            time.sleep(0.5)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_utime + usage.ru_stime


def parse_json_lines(text):
    """Each non-empty line as a JSON object; raises ValueError naming the bad line."""
    diags = []
    for line in text.splitlines():
        if not line.strip():
            raise ValueError("empty line in --diagnostics=json output")
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError("not JSON: %r (%s)" % (line[:300], e))
        if not isinstance(d, dict):
            raise ValueError("not a JSON object: %r" % line[:300])
        diags.append(d)
    return diags


def snapshot(folder):
    """{relative path: (bytes, mtime_ns, mode)} of every file under folder."""
    snap = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            try:
                regular = stat.S_ISREG(os.stat(path).st_mode)
            except OSError:  # a dangling link
                regular = False
            if not regular:  # a FIFO would block the open
                snap[os.path.relpath(path, folder)] = (None, st.st_mtime_ns, st.st_mode)
                continue
            with open(path, "rb") as f:
                snap[os.path.relpath(path, folder)] = (f.read(), st.st_mtime_ns, st.st_mode)
    return snap


def write_npy(path, array):
    """np.save, then the old mtime, so that a rewrite is visible."""
    import numpy as np
    np.save(path, array, allow_pickle=False)
    os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))


class CliTestCase(unittest.TestCase):
    """A test with a private temporary folder and assertion helpers for the tools."""

    maxDiff = 4000

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kiln-cli-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- files -------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write(self, name, text):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        data = text.encode("utf-8") if isinstance(text, str) else text
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
        return p

    def npy(self, name, array):
        write_npy(self.path(name), array)
        return name

    def load(self, name):
        import numpy as np
        return np.load(self.path(name), allow_pickle=False)

    def mtime_ns(self, name):
        return os.stat(self.path(name)).st_mtime_ns

    # ---- running -----------------------------------------------------------------

    def dslc(self, *args, **kw):
        return run_tool("dslc", args, kw.pop("cwd", self.tmp), **kw)

    def dslc_opt(self, *args, **kw):
        return run_tool("dslc-opt", args, kw.pop("cwd", self.tmp), **kw)

    def kiln_run(self, *args, **kw):
        return run_tool("kiln-run", args, kw.pop("cwd", self.tmp), **kw)

    def kiln_agent(self, *args, **kw):
        return run_tool("kiln-agent", args, kw.pop("cwd", self.tmp), **kw)

    def dslc_many(self, argvs, cwd=None, env=None, tool="dslc"):
        """Runs dslc (or `tool`) once per argument list, a few at a time (each run is
        mostly process start-up), and returns the results in order."""
        cwd = cwd or self.tmp
        with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
            return list(pool.map(lambda a: run_tool(tool, a, cwd, env=env), argvs))

    def assertExit(self, result, rc):
        self.assertIsNotNone(result.rc, "timed out:\n" + result.describe())
        self.assertGreaterEqual(result.rc, 0, "killed by a signal:\n" + result.describe())
        self.assertNotEqual(result.rc, 70, "internal compiler error:\n" + result.describe())
        self.assertEqual(result.rc, rc, result.describe())

    def assertOk(self, result):
        self.assertExit(result, 0)

    def json_diags(self, result):
        try:
            return parse_json_lines(result.stderr)
        except ValueError as e:
            self.fail("%s\n%s" % (e, result.describe()))

    def assertUserError(self, result, code, message=None, all_code=True):
        """Exit 1 with well-formed JSON diagnostics that include `code`; with
        all_code, every error has that code. Returns the diagnostics."""
        self.assertExit(result, 1)
        self.assertLess(result.seconds, TIME_LIMIT_S, result.describe())
        diags = self.json_diags(result)
        errors = [d for d in diags if d.get("severity") == "error"]
        self.assertTrue(errors, "no error reported:\n" + result.describe())
        codes = [d.get("code") for d in errors]
        self.assertIn(code, codes, result.describe())
        if all_code:
            self.assertEqual(set(codes), {code}, result.describe())
        if message is not None:
            self.assertTrue(any(re.search(message, d.get("message", "")) for d in errors),
                            "no %s error matching %r:\n%s" % (code, message, result.describe()))
        for d in diags:
            self.assertWellFormedJson(d, result)
        return errors

    def assertWellFormedJson(self, d, result=None, codes=None):
        where = result.describe() if result else repr(d)
        for key in JSON_KEYS:
            self.assertIn(key, d, where)
        self.assertIsInstance(d["file"], str, where)
        self.assertIsInstance(d["line"], int, where)
        self.assertIsInstance(d["col"], int, where)
        self.assertIsInstance(d["message"], str, where)
        self.assertTrue(d["message"], where)
        self.assertIn(d["severity"], ("error", "warning"), where)
        self.assertRegex(d["code"], r"^E\d{4}$", where)
        self.assertIn(d["code"], codes or documented_codes(), where)
        if d["line"] == 0:
            self.assertEqual(d["col"], 0, where)
        else:
            self.assertGreaterEqual(d["col"], 1, where)
            self.assertTrue(d["file"], where)
        for note in d.get("notes", []):
            for key in ("file", "line", "col", "message"):
                self.assertIn(key, note, where)
        if "hint" in d:
            self.assertIsInstance(d["hint"], str, where)


def main(argv=None):
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--dslc-opt", dest="dslc_opt")
    parser.add_argument("--kiln-run", dest="kiln_run")
    parser.add_argument("--fake-cuda", dest="fake_cuda")
    parser.add_argument("--fake-ze", dest="fake_ze")
    args, rest = parser.parse_known_args(argv if argv is not None else sys.argv[1:])
    TOOLS["dslc"] = os.path.abspath(args.dslc)
    TOOLS["dslc-opt"] = os.path.abspath(args.dslc_opt) if args.dslc_opt else os.path.join(
        os.path.dirname(TOOLS["dslc"]), "dslc-opt")
    TOOLS["kiln-run"] = os.path.abspath(args.kiln_run) if args.kiln_run else os.path.join(
        os.path.dirname(TOOLS["dslc"]), "kiln-run")
    TOOLS["kiln-agent"] = os.path.join(os.path.dirname(TOOLS["dslc"]), "kiln-agent")
    FAKE_DRIVERS["cuda"] = os.path.abspath(args.fake_cuda) if args.fake_cuda else None
    FAKE_DRIVERS["ze"] = os.path.abspath(args.fake_ze) if args.fake_ze else None
    program = unittest.main(module="__main__", argv=[sys.argv[0]] + rest, exit=False,
                            testRunner=unittest.TextTestRunner(stream=sys.stdout, verbosity=2))
    result = program.result
    # A test with failing subtests appears once per subtest in failures: count tests.
    failed_ids = {getattr(t, "test_case", t).id()
                  for t, _ in result.failures + result.errors}
    failed_ids |= {t.id() for t in result.unexpectedSuccesses}
    failed = len(failed_ids)
    passed = result.testsRun - failed - len(result.skipped)
    print("%d passed, %d failed" % (passed, failed))
    sys.stdout.flush()
    sys.exit(1 if failed or result.testsRun == 0 else 0)
