#===- scripted_server.py - An OpenAI-compatible endpoint that answers from a script -===#
#
# What kiln-agent talks to where no model is reachable: POST /v1/chat/completions on
# 127.0.0.1, answered from a list of scripted replies or by a function of the request.
# Used by tests/cli/test_agent.py and, on the GPU, tests/gpu/agent_checks.py.
#
#===---------------------------------------------------------------------------===#
import http.server
import json
import os
import threading
import time


class ScriptedServer:
    """An OpenAI-compatible /v1/chat/completions that answers from a script: ("reply",
    text), ("status", code) or ("hang", seconds), one entry per request; or, with
    `answer`, whatever answer(request body) returns."""

    def __init__(self, script, answer=None):
        self.script = list(script)
        self.answer = answer
        self.requests = []  # (headers, body) of each request
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((dict(self.headers), body, self.path))
                if outer.answer:
                    kind, value = "reply", outer.answer(body)
                else:
                    kind, value = outer.script.pop(0) if outer.script else ("status", 500)
                if kind == "hang":
                    time.sleep(value)
                    return
                if kind == "status":
                    payload = json.dumps({"error": {"message": "scripted failure"}}).encode()
                    self.send_response(value)
                else:
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": value}}],
                                          "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def suite_answers(root, broken=("relu", "matmul")):
    """An answer(request) for ScriptedServer over the task suite in `root`: each task's
    prompt gets the task's reference, except the tasks in `broken`, which get a program
    that does not compile."""
    answers = {}
    for name in sorted(os.listdir(root)):
        with open(os.path.join(root, name, "task.json")) as f:
            prompt = json.load(f)["prompt"]
        with open(os.path.join(root, name, "reference.kiln")) as f:
            program = f.read()
        if name in broken:
            program = "graph entry( {"
        answers[prompt] = "```kiln\n" + program + "```\n"

    def answer(body):
        user = body["messages"][1]["content"]
        return next(a for p, a in answers.items() if user.startswith(p))

    answer.count = len(answers)
    return answer
