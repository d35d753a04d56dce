#!/usr/bin/python3
#===- test_agent.py - kiln-agent verify on known candidates ---------------------===#
#
# tests/agent/softmax_rows: a task and five candidates, one for each verdict a model's
# program can get: a correct one (verified), a syntax error (compile-error, with the
# diagnostic's code and place), a wrong formula (wrong-result, with the output and the
# error), a store past the end (checked-violation: stopped, with the line and program)
# and one right only on the visible shapes (rejected by a hidden case). Also: the report
# --out writes, inputs a candidate modifies, and tasks that are malformed (exit 2).
#
# Usage: test_agent.py --dslc build/tools/dslc [unittest options]
#
#===---------------------------------------------------------------------------===#
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

TASKS = os.path.join(clitest.REPO, "tests", "agent")
TASK = os.path.join(TASKS, "softmax_rows", "task.json")


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
        for args, text in ((("solve",), "unknown command 'solve'"), (("verify", TASK), "takes a task file and a candidate"),
                           (("verify", TASK, candidate("correct"), "--speed", "9"), "unknown option '--speed'")):
            r = self.kiln_agent(*args)
            self.assertEqual(r.rc, 2, r.describe())
            self.assertIn(text, r.stderr)
        r = self.kiln_agent("--help")
        self.assertEqual(r.rc, 0)
        self.assertIn("kiln-agent verify TASK.json CANDIDATE.kiln", r.stdout)


if __name__ == "__main__":
    clitest.main()
