#!/usr/bin/env python3
#===- agent_checks.py - kiln-agent on a CUDA GPU, against a scripted endpoint ------===#
#
# kiln-agent with --device cuda, end to end: every candidate in compiled checked mode and
# run on the GPU, and the programs timed there beside the task's reference.
#
#   verify      tests/agent/candidates against agent/tasks/softmax_rows: each verdict
#               (verified, compile-error, wrong-result, checked-violation — the store
#               past the end stopped on the GPU by checked mode — and rejected);
#   time        the correct program beside the reference;
#   solve       tests/agent/serial_softmax (a reference slow on purpose) with a scripted
#               endpoint replying first a program right only on the shapes it is shown,
#               which claims more than 10x and must be verified again on the larger
#               shapes and rejected there, then a correct one, kept as best;
#   bench       every task of agent/tasks, the endpoint replying each task's reference
#               (two of them replaced by a program that does not compile): fast_0 must
#               be 21 of 23; fast_1 and fast_2 are reported with each task's speedup.
#
# No model is reachable from the GPU machine: the replies are scripted
# (tests/agent/scripted_server.py). Called by tests/gpu/jit-on-device.sh; prints one line
# per check, "PASS name: detail" or "FAIL name: detail", and exits 1 if any failed.
#
# Usage: agent_checks.py --kiln-agent BIN --dslc BIN --repo REPO --work DIR [--dslc-library-path PATH]
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
from device_check import add_dslc_arguments, exit_status, record  # noqa: E402


def kiln_agent(*argv, timeout=1200):
    env = dict(os.environ)
    if ARGS.dslc_library_path:
        env["LD_LIBRARY_PATH"] = ARGS.dslc_library_path
    env.setdefault("OPENAI_API_KEY", "scripted")
    return subprocess.run([ARGS.kiln_agent] + list(argv) + ["--dslc", ARGS.dslc], capture_output=True, text=True,
                          env=env, cwd=ARGS.work, timeout=timeout)


def line(p, prefix="kiln-agent: "):
    """The verdict line of a run, for the table."""
    found = [l for l in p.stdout.splitlines() if l.startswith(prefix)]
    return found[-1] if found else (p.stdout + p.stderr).strip()[-300:]


def read_json(path):
    """What a run wrote to `path`, or {} when it wrote nothing."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def with_endpoint(server, command, target, option, value, written):
    """kiln-agent `command` (solve, bench) on `target` with --device cuda against `server`,
    closed after; returns the process and the JSON file `written` it left in --out."""
    try:
        p = kiln_agent(command, target, "--endpoint", server.url, "--model", "scripted", "--device", "cuda",
                       option, value, "--analyst", "off", "--out", command)
    finally:
        server.close()
    return p, read_json(os.path.join(ARGS.work, command, written))


def candidate(name):
    return os.path.join(ARGS.repo, "tests", "agent", "candidates", name + ".kiln")


def reply(program):
    return "Here is the program.\n\n```kiln\n" + program + "```\n"


def check_verdicts():
    task = os.path.join(ARGS.repo, "agent", "tasks", "softmax_rows", "task.json")
    expected = (("correct", 0, "verified: 2 cases and 1 hidden cases match the reference"),
                ("syntax_error", 1, "compile-error: "),
                ("wrong_result", 1, "wrong-result: case 0: y differs from the reference in 400 of 400 elements"),
                ("out_of_bounds", 1, "checked-violation: case 0: "),
                ("visible_only", 1, "rejected: hidden case 0: y differs from the reference"))
    for name, rc, text in expected:
        p = kiln_agent("verify", task, candidate(name), "--device", "cuda")
        ok = p.returncode == rc and ("softmax_rows: " + text) in p.stdout
        if name == "out_of_bounds":  # stopped by checked mode on the GPU, located
            ok = ok and re.search(r"E0602 .*store out of bounds at .*out_of_bounds\.kiln:7:5 .*element 400 of "
                                  r"parameter 'y'", p.stdout) is not None
        record(ok, "verify --device cuda, %s" % name, line(p))
    p = kiln_agent("time", task, candidate("correct"), "--device", "cuda", "--repeat", "20")
    record(p.returncode == 0 and re.search(r"takes [0-9.]+ ms, the reference [0-9.]+ ms", p.stdout) is not None,
           "time --device cuda, correct beside the reference", line(p))


def check_reverification():
    from scripted_server import ScriptedServer
    task = os.path.join(ARGS.repo, "tests", "agent", "serial_softmax", "task.json")
    with open(candidate("shown_shapes_only")) as f:
        fitted = f.read()
    with open(candidate("correct")) as f:
        correct = f.read()
    p, report = with_endpoint(ScriptedServer([("reply", reply(fitted)), ("reply", reply(correct))]), "solve", task,
                              "--iterations", "2", "report.json")
    attempts = report.get("attempts", [])
    outcomes = [a.get("outcome") for a in attempts]
    first = attempts[0] if attempts else {}
    claim = re.search(r"it claims ([0-9.]+)x over the reference, but on a larger shape", first.get("summary", ""))
    record(p.returncode == 0 and outcomes == ["rejected", "verified"] and claim is not None
           and float(claim.group(1)) > 10 and report.get("status") == "verified",
           "solve --device cuda: a program fitted to the shown shapes claims >10x and is rejected on larger ones",
           "; ".join(a.get("summary", "")[:220] for a in attempts) or line(p))


def check_bench():
    from scripted_server import ScriptedServer, suite_answers
    root = os.path.join(ARGS.repo, "agent", "tasks")
    answer = suite_answers(root)
    p, summary = with_endpoint(ScriptedServer([], answer), "bench", root, "--iterations", "1", "bench.json")
    n = answer.count
    unverified = {row["task"] for row in summary.get("tasks", []) if not row["verified"]}
    ok = (p.returncode == 0 and summary.get("verified") == n - 2 and unverified == {"relu", "matmul"}
          and "fast_1" in summary and summary.get("device") == "cuda")
    record(ok, "bench --device cuda over agent/tasks", line(p, "kiln-agent: bench: "))
    for row in summary.get("tasks", []):
        speedup = row.get("speedup")
        print("INFO %-22s %s" % (row["task"], "%.2fx" % speedup if isinstance(speedup, (int, float))
                                 else "not verified" if not row["verified"] else "not timed"))


def main():
    os.makedirs(ARGS.work, exist_ok=True)
    sys.path.insert(0, os.path.join(ARGS.repo, "tests", "agent"))
    check_verdicts()
    check_reverification()
    check_bench()
    return exit_status()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="kiln-agent on a CUDA GPU against a scripted endpoint.")
    parser.add_argument("--kiln-agent", required=True)
    add_dslc_arguments(parser)
    ARGS = parser.parse_args()
    for name in ("kiln_agent", "dslc", "repo", "work"):  # the runs start in --work
        setattr(ARGS, name, os.path.abspath(getattr(ARGS, name)))
    sys.exit(main())
