#!/usr/bin/python3
#===- test_agent.py - kiln-agent: the verifier and the loop ---------------------===#
#
# agent/tasks/softmax_rows and tests/agent/candidates: five candidates, one for each verdict a model's
# program can get: a correct one (verified), a syntax error (compile-error, with the
# diagnostic's code and place), a wrong formula (wrong-result, with the output and the
# error), a store past the end (checked-violation: stopped, with the line and program)
# and one right only on the visible shapes (rejected by a hidden case). Also: the report
# --out writes, inputs a candidate modifies, and tasks that are malformed (exit 2).
# Then `solve` against a scripted OpenAI-compatible server on 127.0.0.1 that replies
# with those candidates in turn: each verdict, the diagnostics fed back, the correct
# program kept as best and the "faster" one rejected; HTTP 500s then success; an
# endpoint that never answers (exit 3). No model is reachable here. And the suite:
# every task's reference against NumPy.
#
# Usage: test_agent.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import json
import os
import shutil
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

TASKS = os.path.join(clitest.REPO, "tests", "agent")
sys.path.insert(0, TASKS)
from scripted_server import ScriptedServer, suite_answers  # noqa: E402
TASK = os.path.join(clitest.REPO, "agent", "tasks", "softmax_rows", "task.json")


def candidate(name):
    return os.path.join(TASKS, "candidates", name + ".kiln")


class Agent(clitest.CliTestCase):
    def verify(self, name, *extra, task=TASK):
        return self.kiln_agent("verify", task, candidate(name) if not os.path.isabs(name) else name, *extra)

    def test_each_verdict(self):
        cases = (("correct", 0, "verified: 2 cases and 1 hidden cases match the reference"),
                 ("syntax_error", 1, "compile-error: " + candidate("syntax_error") + ":2:30: E0006"),
                 ("wrong_result", 1, "wrong-result: case 0: y differs from the reference in 400 of 400 elements"),
                 ("out_of_bounds", 1, "checked-violation: case 0: " + candidate("out_of_bounds") +
                  ":7:5: E0602 store out of bounds: element 400"),
                 ("visible_only", 1, "rejected: hidden case 0: y differs from the reference"))
        for name, rc, text in cases:
            with self.subTest(candidate=name):
                r = self.verify(name)
                self.assertEqual(r.rc, rc, r.describe())
                self.assertIn("kiln-agent: softmax_rows: " + text, r.stdout)

    def test_large_cases(self):
        # Right on every visible and hidden case, wrong on the larger shape that a program
        # claiming more than 10x is verified on again.
        r = self.verify("shown_shapes_only")
        self.assertEqual(r.rc, 0, r.describe())
        r = self.verify("shown_shapes_only", "--cases", "large")
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("rejected: large case 0: y differs from the reference", r.stdout)
        r = self.verify("correct", "--cases", "large")
        self.assertEqual(r.rc, 0, r.describe())
        self.assertIn("verified: 1 large cases match the reference", r.stdout)
        # tests/agent/serial_softmax: the same task over a reference slow on purpose, which
        # the GPU check uses to make a program claim more than 10x (tests/gpu/agent_checks.py).
        serial = os.path.join(TASKS, "serial_softmax", "task.json")
        r = self.verify("correct", task=serial)
        self.assertEqual(r.rc, 0, r.describe())
        r = self.verify("shown_shapes_only", "--cases", "large", task=serial)
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("rejected: large case 0: y differs from the reference", r.stdout)
        r = self.verify("correct", "--cases", "all")
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("--cases takes shown", r.stderr)
        r = self.kiln_agent("time", TASK, candidate("correct"), "--cases", "large")
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("--cases is an option of verify", r.stderr)
        r = self.verify("correct", "--analyst", "off")
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("--analyst and --analyst-model are options of solve and bench", r.stderr)
        with open(TASK) as f:
            task = json.load(f)
        del task["large_cases"]
        task["reference"] = os.path.join(os.path.dirname(TASK), task["reference"])
        self.write("small.json", json.dumps(task))
        r = self.verify("correct", "--cases", "large", task=self.path("small.json"))
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("the task has no \"large_cases\"", r.stderr)

    def test_the_report(self):
        r = self.verify("out_of_bounds", "--out", "attempt", "--seed", "5")
        self.assertEqual(r.rc, 1, r.describe())
        with open(self.path("attempt/report.json")) as f:
            report = json.load(f)
        self.assertEqual(report["outcome"], "checked-violation")
        self.assertEqual(report["seed"], 5)
        codes = [d["code"] for d in report["evidence"]["diagnostics"]]
        self.assertIn("E0602", codes)
        # The runs' files stay for a look: the candidate's output, poisoned where it
        # did not write.
        self.assertTrue(os.path.exists(self.path("attempt/case0/candidate/y.npy")))

    def test_a_modified_input_is_wrong(self):
        self.write("sneaky.kiln", """
kernel row(x: *f32, y: *f32, cols: i32, const B: i32 = 2048) {
    let c = arange(0, B);
    let at = program_id(0) * cols + c;
    let inside = c < cols;
    let v = load(x + at, mask = inside, other = -inf);
    let e = exp(v - max(v));
    store(y + at, e / sum(e), mask = inside);
    store(x + at, 0.0, mask = inside);
}
graph entry(x: *f32, y: *f32, rows: i32, cols: i32) {
    launch row[(rows,)](x, y, cols);
}
""")
        r = self.verify(self.path("sneaky.kiln"))
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("wrong-result: case 0: x an input was modified", r.stdout)

    def test_a_missing_entry_or_other_arguments(self):
        self.write("other.kiln", "kernel k(p: *f32) { store(p, 1.0); }\ngraph entry(p: *f32) { launch k[(1,)](p); }\n")
        r = self.verify(self.path("other.kiln"))
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("compile-error: case 0: the entry does not take the task's arguments", r.stdout)
        self.write("none.kiln", "kernel k(p: *f32) { store(p, 1.0); }\n")
        r = self.verify(self.path("none.kiln"))
        self.assertIn("compile-error: ", r.stdout)
        self.assertIn("E0106", r.stdout)

    def test_time_against_the_reference(self):
        # On the interpreter nothing is timed; on the stand-in CUDA driver each graph run is
        # one persistent launch of a quarter millisecond of stand-in time, for the program
        # and the reference alike.
        r = self.kiln_agent("time", TASK, candidate("correct"))
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("not timed: the interpreter's time says nothing of a GPU's", r.stdout)
        r = self.kiln_agent("time", TASK, candidate("correct"), "--device", "cuda", "--repeat", "0")
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("--repeat takes 1 to 100000 launches", r.stderr)
        if not clitest.FAKE_DRIVERS.get("cuda"):
            self.skipTest("the stand-in CUDA driver was not given (--fake-cuda)")
        env = {"KILN_CUDA_LIBRARY": clitest.FAKE_DRIVERS["cuda"]}
        r = self.kiln_agent("time", TASK, candidate("correct"), "--device", "cuda", "--repeat", "5", env=env)
        self.assertEqual(r.rc, 0, r.describe())
        self.assertIn("takes 0.2500 ms, the reference 0.2500 ms (hidden case 0, median of 5 on cuda): 1.00x; "
                      "0.1 MB at least", r.stdout)  # x and y, 5 x 2049 floats each
        # A program that does not compile cannot be timed.
        r = self.kiln_agent("time", TASK, candidate("syntax_error"), "--device", "cuda", env=env)
        self.assertEqual(r.rc, 1, r.describe())
        self.assertIn("the program could not be timed on hidden case 0", r.stdout)

    def test_bad_tasks_and_command_lines(self):
        self.write("t.json", json.dumps({"name": "t", "prompt": "p", "entry": "entry", "reference": "r.kiln"}))
        r = self.kiln_agent("verify", "t.json", candidate("correct"))
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("the task needs \"check\"", r.stderr)
        self.write("u.json", "{not json")
        self.assertEqual(self.kiln_agent("verify", "u.json", candidate("correct")).rc, 2)
        self.write("v.json", json.dumps({"name": "t", "prompt": "p", "entry": "entry", "reference": "r.kiln",
                                         "check": ["y"], "cases": [{"args": {"y": {"gamma": [3]}}}]}))
        r = self.kiln_agent("verify", "v.json", candidate("correct"))
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("cases[0].args.y: an argument object needs one of", r.stderr)
        # A reference that fails is the task's fault, not the candidate's.
        self.write("r.kiln", "kernel k(p: *f32) { store(p + 1000000, 1.0); }\n"
                             "graph entry(x: *f32, y: *f32, rows: i32, cols: i32) { launch k[(1,)](y); }\n")
        self.write("w.json", json.dumps({"name": "t", "prompt": "p", "entry": "entry", "reference": "r.kiln",
                                         "check": ["y"], "cases": [{"args": {"x": {"zeros": [4]}, "y": {"zeros": [4]},
                                                                             "rows": 1, "cols": 4}}]}))
        r = self.kiln_agent("verify", "w.json", candidate("correct"))
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("task-error: the reference fails on case 0", r.stdout)
        for args, text in ((("fix",), "unknown command 'fix'"), (("verify", TASK), "verify takes a task file and a program"),
                           (("verify", TASK, candidate("correct"), "--speed", "9"), "unknown option '--speed'")):
            r = self.kiln_agent(*args)
            self.assertEqual(r.rc, 2, r.describe())
            self.assertIn(text, r.stderr)
        r = self.kiln_agent("--help")
        self.assertEqual(r.rc, 0)
        self.assertIn("kiln-agent verify TASK.json CANDIDATE.kiln", r.stdout)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# What each task of agent/tasks computes, in NumPy (float64), from its arrays and
# scalars: the truth its reference program is held to.
SUITE = {
    "relu": lambda a, s: {"y": np.maximum(a["x"], 0)},
    "gelu_tanh": lambda a, s: {"y": 0.5 * a["x"] * (1 + np.tanh(np.sqrt(2 / np.pi) * (a["x"] + 0.044715 * a["x"] ** 3)))},
    "silu": lambda a, s: {"y": a["x"] / (1 + np.exp(-a["x"]))},
    "leaky_relu": lambda a, s: {"y": np.where(a["x"] > 0, a["x"], 0.01 * a["x"])},
    "hardsigmoid": lambda a, s: {"y": np.clip(a["x"] / 6 + 0.5, 0, 1)},
    "softplus": lambda a, s: {"y": np.logaddexp(0, a["x"])},
    "softmax_rows": lambda a, s: {"y": _softmax(a["x"])},
    "log_softmax_rows": lambda a, s: {"y": np.log(_softmax(a["x"]))},
    "rmsnorm_rows": lambda a, s: {"y": a["x"] / np.sqrt((a["x"] ** 2).mean(axis=1, keepdims=True) + 1e-5)},
    "layernorm_rows": lambda a, s: {"y": (a["x"] - a["x"].mean(axis=1, keepdims=True)) /
                                          np.sqrt(a["x"].var(axis=1, keepdims=True) + 1e-5)},
    "l2_normalize_rows": lambda a, s: {"y": a["x"] / (np.linalg.norm(a["x"], axis=1, keepdims=True) + 1e-12)},
    "cumsum_rows": lambda a, s: {"y": np.cumsum(a["x"], axis=1)},
    "row_max": lambda a, s: {"y": a["x"].max(axis=1)},
    "row_mean": lambda a, s: {"y": a["x"].mean(axis=1)},
    "sum_middle_axis": lambda a, s: {"y": a["x"].sum(axis=1)},
    "matmul": lambda a, s: {"y": a["a"] @ a["w"]},
    "matmul_bias_relu": lambda a, s: {"y": np.maximum(a["a"] @ a["w"] + a["b"], 0)},
    "conv1d_valid": lambda a, s: {"y": np.correlate(a["x"], a["w"], mode="valid")},
    "maxpool1d": lambda a, s: {"y": a["x"].reshape(-1, 4).max(axis=1)},
    "mse_loss": lambda a, s: {"loss": np.array([((a["p"] - a["t"]) ** 2).mean()])},
    "cross_entropy_rows": lambda a, s: {"loss": np.log(np.exp(a["x"] - a["x"].max(axis=1, keepdims=True)).sum(axis=1))
                                        + a["x"].max(axis=1) - a["x"][np.arange(a["x"].shape[0]), a["target"]]},
    "translate_saxpy_cuda": lambda a, s: {"y": s["a"] * a["x"] + a["y"]},
    "translate_torch_gated": lambda a, s: {"y": a["g"] / (1 + np.exp(-a["g"])) * a["x"]},
}


class Suite(clitest.CliTestCase):
    """Every task of agent/tasks: its reference against NumPy on its first case's shapes
    (fresh inputs), and itself verified by kiln-agent (the task file is consistent)."""

    def test_every_reference_computes_what_its_task_says(self):
        root = os.path.join(clitest.REPO, "agent", "tasks")
        names = sorted(os.listdir(root))
        self.assertGreaterEqual(len(names), 20)
        self.assertEqual(set(names), set(SUITE), "a task without its NumPy truth here, or the other way round")
        rng = np.random.default_rng()
        for name in names:
            with self.subTest(task=name):
                with open(os.path.join(root, name, "task.json")) as f:
                    task = json.load(f)
                self.assertTrue(task.get("large_cases"), name + ": no large case")
                arrays, scalars, args = {}, {}, []
                for param, spec in task["cases"][0]["args"].items():
                    if not isinstance(spec, dict):
                        scalars[param] = spec
                        args += ["--arg", "%s=%s" % (param, spec)]
                        continue
                    dtype = {"i32": np.int32}.get(spec.get("dtype", "f32"), np.float32)
                    shape = next(spec[k] for k in ("normal", "uniform", "zeros", "randint") if k in spec)
                    if "normal" in spec:
                        v = rng.standard_normal(shape)
                    elif "uniform" in spec:
                        v = rng.uniform(spec["low"], spec["high"], shape)
                    elif "randint" in spec:
                        v = rng.integers(spec["low"], spec["high"], shape)
                    else:
                        v = np.zeros(shape)
                    arrays[param] = v.astype(dtype)
                    self.npy(name + "." + param + ".npy", arrays[param])
                    args += ["--arg", "%s=%s.%s.npy" % (param, name, param)]
                r = self.dslc("run", os.path.join(root, name, "reference.kiln"), "--kernel", "entry", *args)
                self.assertOk(r)
                want = SUITE[name]({k: v.astype(np.float64) if v.dtype != np.int32 else v for k, v in arrays.items()},
                                   scalars)
                for out, value in want.items():
                    got = self.load(name + "." + out + ".npy")
                    np.testing.assert_allclose(got, value, rtol=1e-4, atol=1e-4, err_msg=name + ": " + out)
                r = self.kiln_agent("verify", os.path.join(root, name, "task.json"),
                                    os.path.join(root, name, "reference.kiln"))
                self.assertEqual(r.rc, 0, r.describe())


def reply_with(name):
    with open(candidate(name)) as f:
        return "Here is the program.\n\n```kiln\n" + f.read() + "```\n"


class Solve(clitest.CliTestCase):
    def solve(self, server, *extra, env=None):
        return self.kiln_agent("solve", TASK, "--endpoint", server.url, "--model", "scripted", "--out", "out",
                               *extra, env=env)

    def test_the_loop_classifies_feeds_back_and_keeps_the_best(self):
        names = ("syntax_error", "wrong_result", "out_of_bounds", "correct", "visible_only")
        replies = [("reply", reply_with(n)) for n in names]
        # After the correct program, the performance analyst's reply.
        advice = "- softmax_rows: read each row once; use 8 warps for rows of 4096."
        replies.insert(4, ("reply", advice))
        server = ScriptedServer(replies)
        try:
            r = self.solve(server, "--iterations", "5", env={"OPENAI_API_KEY": "sk-secret-key"})
        finally:
            server.close()
        self.assertEqual(r.rc, 0, r.describe())
        with open(self.path("out/report.json")) as f:
            report = json.load(f)
        self.assertEqual([a["outcome"] for a in report["attempts"]],
                         ["compile-error", "wrong-result", "checked-violation", "verified", "rejected"])
        self.assertEqual(report["status"], "verified")
        self.assertEqual(report["tokens"], {"prompt": 600, "completion": 60})
        with open(self.path("out/best.kiln")) as f, open(candidate("correct")) as g:
            self.assertEqual(f.read(), g.read())
        # Each request after the first carries the verdict of the one before: the
        # compiler's code, the output that differed, the access that left its buffer.
        generator = [req for i, req in enumerate(server.requests) if i != 4]
        feedback = [req[1]["messages"][-1]["content"] for req in generator[1:]]
        self.assertIn("E0006", feedback[0])
        self.assertIn("wrong results", feedback[1])
        self.assertIn("E0602", feedback[2])
        self.assertIn("faster version", feedback[3])
        # The analyst read the verified program's profile (its kernels' registers and
        # occupancy from ptxas, the fusion remarks) and its advice reached the generator.
        analyst = server.requests[4][1]["messages"]
        self.assertIn("performance analyst", analyst[0]["content"])
        self.assertIn("# The GPU's ceilings", analyst[0]["content"])
        self.assertIn("# The program (verified correct)", analyst[1]["content"])
        self.assertIn("threads", analyst[1]["content"])
        self.assertIn("fusion remarks", analyst[1]["content"])
        self.assertIn(advice, feedback[3])
        self.assertEqual(report["attempts"][3]["advice"], advice)
        kernels = report["attempts"][3]["profile"]["kernels"]
        self.assertTrue(kernels and all(k["threads"] > 0 for k in kernels), kernels)
        if os.path.exists("/usr/local/cuda/bin/ptxas") or shutil.which("ptxas"):
            self.assertIn("registers", analyst[1]["content"])
            self.assertTrue(all(k["registers"] > 0 and k["programs_per_sm"] > 0 for k in kernels), kernels)
        self.assertTrue(all(req[2] == "/v1/chat/completions" for req in server.requests))
        self.assertEqual(server.requests[0][0].get("Authorization"), "Bearer sk-secret-key")
        self.assertEqual(server.requests[0][1]["model"], "scripted")
        # What the model reads first: its instructions, the references, the examples.
        system = server.requests[0][1]["messages"][0]["content"]
        for part in ("starts with ```kiln", "# The Kiln language reference", "# The builtin functions",
                     "kernel vector_add(", "# The GPU's ceilings", "device-to-device copy"):
            self.assertIn(part, system)
        # The key is in no file the run wrote.
        for name in os.listdir(self.path("out")):
            path = self.path("out/" + name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    self.assertNotIn(b"sk-secret-key", f.read(), name)
        with open(self.path("out/transcript.jsonl")) as f:
            roles = [json.loads(line)["role"] for line in f.read().splitlines()]
        self.assertEqual(roles, ["generator"] * 4 + ["analyst", "generator"])

    def test_server_errors_are_retried(self):
        server = ScriptedServer([("status", 500), ("status", 503), ("reply", reply_with("correct"))])
        try:
            r = self.solve(server, "--iterations", "1")
        finally:
            server.close()
        self.assertEqual(r.rc, 0, r.describe())
        self.assertEqual(len(server.requests), 3)
        with open(self.path("out/report.json")) as f:
            self.assertEqual(json.load(f)["requests"], 3)

    def test_an_endpoint_that_never_answers_ends_the_run(self):
        server = ScriptedServer([("hang", 5), ("hang", 5)])
        try:
            start = time.monotonic()
            r = self.solve(server, "--request-timeout", "0.5", "--retries", "1")
            seconds = time.monotonic() - start
        finally:
            server.close()
        self.assertEqual(r.rc, 3, r.describe())
        self.assertIn("the endpoint failed", r.stdout)
        self.assertIn("Timeout", r.stdout)
        self.assertLess(seconds, 30)
        with open(self.path("out/report.json")) as f:
            report = json.load(f)
        self.assertEqual(report["status"], "failed")
        self.assertIn("Timeout", report["endpoint_error"])
        # Nothing listens: a refused connection, also exit 3.
        r = self.kiln_agent("solve", TASK, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", "o2",
                            "--retries", "0")
        self.assertEqual(r.rc, 3, r.describe())

    def test_solve_needs_an_endpoint_and_a_model(self):
        r = self.kiln_agent("solve", TASK)
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("solve and bench need --endpoint URL and --model NAME", r.stderr)
        r = self.kiln_agent("solve", TASK, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--repeat", "x")
        self.assertEqual(r.rc, 2, r.describe())
        self.assertIn("--repeat takes 1 to 100000 launches", r.stderr)

    def test_bench_over_the_suite(self):
        # A server that knows the answers: each task's prompt gets the task's reference,
        # except two tasks, which get a program that does not compile.
        root = os.path.join(clitest.REPO, "agent", "tasks")
        answer = suite_answers(root)
        server = ScriptedServer([], answer)
        try:
            r = self.kiln_agent("bench", root, "--endpoint", server.url, "--model", "m", "--iterations", "1",
                                "--out", "bench")
        finally:
            server.close()
        self.assertEqual(r.rc, 0, r.describe())
        n = answer.count
        self.assertIn("kiln-agent: bench: %d of %d tasks verified" % (n - 2, n), r.stdout)
        self.assertIn("speed is measured on a GPU only", r.stdout)
        with open(self.path("bench/bench.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["verified"], n - 2)
        self.assertEqual({row["task"] for row in summary["tasks"] if not row["verified"]}, {"relu", "matmul"})


if __name__ == "__main__":
    clitest.main()
