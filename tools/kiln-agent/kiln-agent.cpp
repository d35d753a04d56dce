//===- kiln-agent.cpp - Models write Kiln; the verifier decides -------------===//
//
//   kiln-agent solve TASK.json --endpoint URL --model NAME [--iterations N] [--out DIR]
//                    [--device D] [--request-timeout S] [--api-key-env VAR] ...
//   kiln-agent verify TASK.json CANDIDATE.kiln [--device D] [--out DIR] ...
//   kiln-agent time TASK.json PROGRAM.kiln --device D [--repeat N] ...
//
// solve runs the loop of agent/Solve.h against an OpenAI-compatible endpoint; verify
// runs the verifier (agent/Verify.h) on one program: compiled, then run case by case
// beside the task's reference on fresh random inputs (outputs poisoned, inputs checked
// unchanged, hidden cases last), each run a child process with limits; time runs a
// program and the task's reference on the device, the largest case, and prints both.
//
// Exit status: 0 verified, 1 not, 2 a bad task or command line (or a broken reference),
// 3 (solve) the endpoint failed.
//
//===----------------------------------------------------------------------===//
#include "agent/Solve.h"
#include "agent/Verify.h"
#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

using namespace kiln;
namespace fs = std::filesystem;

namespace {

enum Exit { Verified = 0, NotVerified = 1, BadInput = 2 };

const char *const kHelp =
    "kiln-agent — a model writes Kiln for a task; the verifier decides whether it is right\n"
    "\n"
    "  kiln-agent solve TASK.json --endpoint URL --model NAME [--iterations N] [--out DIR]\n"
    "                   [--device D] [--request-timeout S] [--retries N] [--api-key-env VAR]\n"
    "                   [--seed N] [--time-limit S] [--repeat N] [--dslc PATH]\n"
    "                   [--analyst on|off] [--analyst-model NAME]\n"
    "  kiln-agent bench SUITE_DIR --endpoint URL --model NAME [the options of solve]\n"
    "  kiln-agent verify TASK.json CANDIDATE.kiln [--device D] [--out DIR] [--seed N]\n"
    "                    [--time-limit S] [--dslc PATH] [--cases shown|large]\n"
    "  kiln-agent time TASK.json PROGRAM.kiln --device cuda|ze [--repeat N] [--seed N]\n"
    "                  [--time-limit S] [--dslc PATH]\n"
    "\n"
    "solve asks the model behind an OpenAI-compatible endpoint (POST URL/chat/completions)\n"
    "for a program, verifies each reply's first ```kiln block and sends the verdict back\n"
    "(the compiler's diagnostics, the output that differed, the access that left its\n"
    "buffer), up to N replies (default 5). Before the model tries to make a verified program\n"
    "faster, a performance analyst (the model again, or NAME) reads its profile: time and\n"
    "GB/s on a GPU, each kernel's registers, spills, shared memory and occupancy, the\n"
    "fusion remarks; its advice goes back with the verdict. DIR (default kiln-agent-TASK)\n"
    "receives each attempt, best.kiln, report.json and transcript.jsonl. The key is read\n"
    "from the environment variable VAR (default OPENAI_API_KEY) and never written anywhere.\n"
    "\n"
    "bench runs solve for every task of SUITE_DIR (each folder with a task.json; the repo's\n"
    "agent/tasks is one) into DIR/TASK (default kiln-agent-bench) and writes DIR/bench.json\n"
    "with KernelBench's fast_p: the share of tasks verified (fast_0) and, on a GPU, the\n"
    "shares whose best program beats the reference (fast_1) or doubles it (fast_2).\n"
    "\n"
    "verify compiles the candidate and runs it beside the task's reference, case by case,\n"
    "on fresh random inputs: outputs are poisoned with NaN before each run, every input\n"
    "must come back unchanged, the candidate runs in checked mode in a child process with\n"
    "a time and memory limit, and the hidden cases come last. It prints the verdict:\n"
    "verified, compile-error, wrong-result, checked-violation, timeout or rejected.\n"
    "With --cases large it runs the task's large cases instead: where solve verifies again a\n"
    "program that claims more than 10x over the reference.\n"
    "\n"
    "time runs the program and the task's reference on a GPU, unchecked, on the task's\n"
    "last hidden case (its largest), N launches each (default 20), and prints both medians\n"
    "and the speedup; it does not check the results (verify does).\n"
    "\n"
    "OPTIONS:\n"
    "  --endpoint URL  (solve) the API's base URL, e.g. https://api.openai.com/v1 or\n"
    "                  http://127.0.0.1:8000/v1 for a local server\n"
    "  --model NAME    (solve) the model to ask\n"
    "  --iterations N  (solve) replies of the model at most (default 5)\n"
    "  --analyst on|off  (solve) ask the performance analyst after each verified program\n"
    "                  (default on; its replies do not count as iterations)\n"
    "  --analyst-model NAME  (solve) the analyst's model (default: --model)\n"
    "  --request-timeout S  (solve) seconds per request (default 300)\n"
    "  --retries N     (solve) how often a failed request (HTTP 429, 5xx, no connection, a\n"
    "                  timeout) is tried again, waiting twice as long each time (default 3)\n"
    "  --api-key-env VAR  (solve) where the key is (default OPENAI_API_KEY; unset: none sent)\n"
    "  --device D      where the programs run (dslc run --device; default interp)\n"
    "  --out DIR       keep the runs' files under DIR and write DIR/report.json\n"
    "  --seed N        the inputs' seed (default: from the clock)\n"
    "  --time-limit S  seconds a run of the candidate may take (default 60)\n"
    "  --repeat N      (time, and solve on a GPU) launches per timing (default 20)\n"
    "  --dslc PATH     the dslc that runs programs (default: beside kiln-agent, else PATH)\n"
    "  --help, -h      show this help\n"
    "  --version       show the version\n"
    "\n"
    "EXIT STATUS: 0 verified, 1 not verified, 2 a bad task or command line, 3 the endpoint\n"
    "failed (solve)\n"
    "\n"
    "docs/agent.md has the task format.\n";

int usage(const std::string &message) {
  std::cerr << "kiln-agent: error: " << message << "\n  help: kiln-agent --help shows the usage\n";
  return BadInput;
}

/// dslc beside this executable, else on PATH.
std::string findDslc() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path &p : {self.parent_path() / "dslc", self.parent_path().parent_path() / "tools" / "dslc"})
      if (::access(p.c_str(), X_OK) == 0)
        return p.string();
  }
  if (const char *path = std::getenv("PATH")) {
    std::string dirs = path;
    for (size_t at = 0; at <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', at), dirs.size());
      const fs::path p = fs::path(dirs.substr(at, end - at)) / "dslc";
      if (::access(p.c_str(), X_OK) == 0)
        return p.string();
      at = end + 1;
    }
  }
  return "";
}

/// The options both commands share, into `o`; a message when one is malformed.
std::string commonOptions(const std::map<std::string, std::string> &opts, agent::VerifyOptions &o) {
  o.dslc = opts.count("--dslc") ? opts.at("--dslc") : findDslc();
  if (o.dslc.empty() || ::access(o.dslc.c_str(), X_OK) != 0)
    return "no dslc to run programs with" + (o.dslc.empty() ? std::string() : " ('" + o.dslc + "')") +
           "; give it with --dslc PATH";
  if (opts.count("--device"))
    o.device = opts.at("--device");
  try {
    o.seed = opts.count("--seed") ? std::stoull(opts.at("--seed"))
                                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (opts.count("--time-limit"))
      o.limits.seconds = std::stod(opts.at("--time-limit"));
  } catch (const std::exception &) {
    return "--seed takes a number and --time-limit seconds";
  }
  return "";
}

/// --repeat: launches per timing (1 to 100000, default 20); a message when malformed.
std::string repeatOption(const std::map<std::string, std::string> &opts, int &repeat) {
  repeat = 20;
  try {
    if (opts.count("--repeat"))
      repeat = std::stoi(opts.at("--repeat"));
  } catch (const std::exception &) {
    repeat = 0;
  }
  return repeat < 1 || repeat > 100000 ? "--repeat takes 1 to 100000 launches" : "";
}

/// solve's and bench's options (all but the task) into `o`; a message when one is wrong.
std::string solveOptions(const std::map<std::string, std::string> &opts, agent::SolveOptions &o) {
  if (!opts.count("--endpoint") || !opts.count("--model"))
    return "solve and bench need --endpoint URL and --model NAME";
  if (std::string why = commonOptions(opts, o.verify); !why.empty())
    return why;
  if (std::string why = repeatOption(opts, o.timingRepeat); !why.empty())
    return why;
  o.chat.endpoint = opts.at("--endpoint");
  o.chat.model = opts.at("--model");
  if (opts.count("--analyst")) {
    const std::string &a = opts.at("--analyst");
    if (a != "on" && a != "off")
      return "--analyst takes on or off";
    o.analyst = a == "on";
  }
  if (opts.count("--analyst-model"))
    o.analystModel = opts.at("--analyst-model");
  const std::string keyVar = opts.count("--api-key-env") ? opts.at("--api-key-env") : "OPENAI_API_KEY";
  if (const char *key = std::getenv(keyVar.c_str()))
    o.chat.apiKey = key;
  try {
    if (opts.count("--iterations"))
      o.iterations = std::stoi(opts.at("--iterations"));
    if (opts.count("--request-timeout"))
      o.chat.requestTimeout = std::stod(opts.at("--request-timeout"));
    if (opts.count("--retries"))
      o.chat.maxAttempts = 1 + std::stoi(opts.at("--retries"));
  } catch (const std::exception &) {
    return "--iterations and --retries take counts and --request-timeout seconds";
  }
  // The first retry waits a second, or the request timeout where that is shorter.
  o.chat.backoffSeconds = std::min(1.0, o.chat.requestTimeout);
  if (o.chat.maxAttempts < 1 || o.chat.maxAttempts > 101)
    return "--retries takes 0 to 100";
  if (o.iterations < 1 || o.iterations > 1000 || o.chat.requestTimeout <= 0)
    return "--iterations takes 1 to 1000 and --request-timeout a positive number of seconds";
  o.promptsDir = KILN_AGENT_PROMPTS_DIR;
  const std::string repo = KILN_SOURCE_DIR;
  o.documents = {{"The Kiln language reference", repo + "/docs/language.md"},
                 {"The builtin functions", repo + "/docs/builtins.md"},
                 {"A worked example: vector add (examples/vector_add.kiln)", repo + "/examples/vector_add.kiln"},
                 {"A worked example: softmax over rows (examples/softmax.kiln)", repo + "/examples/softmax.kiln"},
                 {"A worked example: a graph of launches (examples/graph.kiln)", repo + "/examples/graph.kiln"},
                 {"The GPU's ceilings", o.promptsDir + "/ceilings.md"}};
  return "";
}

int solveCommand(const std::vector<std::string> &positional, const std::map<std::string, std::string> &opts) {
  if (positional.size() != 1)
    return usage("solve takes one task file");
  agent::SolveOptions o;
  if (std::string why = solveOptions(opts, o); !why.empty())
    return usage(why);
  std::string error;
  std::optional<agent::Task> task = agent::readTask(positional[0], error);
  if (!task)
    return usage(error);
  o.outDir = opts.count("--out") ? opts.at("--out") : "kiln-agent-" + task->name;
  return agent::solve(*task, o, std::cout);
}

/// `kiln-agent bench SUITE_DIR`: solve for every task of the suite (each folder with a
/// task.json), then KernelBench's fast_p: the share of tasks with a verified program
/// more than p times as fast as the reference (fast_0: verified at all). Speed is
/// measured on a GPU only; on the interpreter only fast_0 is reported.
int benchCommand(const std::vector<std::string> &positional, const std::map<std::string, std::string> &opts) {
  if (positional.size() != 1)
    return usage("bench takes one suite folder");
  agent::SolveOptions o;
  if (std::string why = solveOptions(opts, o); !why.empty())
    return usage(why);
  std::vector<fs::path> tasks;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(positional[0], ec))
    if (fs::exists(e.path() / "task.json"))
      tasks.push_back(e.path() / "task.json");
  if (ec || tasks.empty())
    return usage("'" + positional[0] + "' holds no folder with a task.json");
  std::sort(tasks.begin(), tasks.end());
  const std::string out = opts.count("--out") ? opts.at("--out") : "kiln-agent-bench";
  nlohmann::json rows = nlohmann::json::array();
  size_t verified = 0, faster = 0, twice = 0;
  for (const fs::path &path : tasks) {
    std::string error;
    std::optional<agent::Task> task = agent::readTask(path.string(), error);
    if (!task)
      return usage(path.string() + ": " + error);
    o.outDir = (fs::path(out) / task->name).string();
    const agent::SolveStatus status = agent::solve(*task, o, std::cout);
    if (status == agent::SolveEndpointFailed || status == agent::SolveBadInput)
      return status;
    verified += status == agent::SolveVerified;
    // The kept program's speedup, from the task's report (null when not timed).
    nlohmann::json speedup;
    std::string why;
    if (std::optional<std::string> text = readWholeFile((fs::path(o.outDir) / "report.json").string(), why, 1u << 24))
      speedup = nlohmann::json::parse(*text, nullptr, false).value("speedup", nlohmann::json());
    const double s = speedup.is_number() ? speedup.get<double>() : 0;
    faster += s > 1;
    twice += s > 2;
    rows.push_back({{"task", task->name}, {"verified", status == agent::SolveVerified}, {"speedup", speedup}});
  }
  const double n = static_cast<double>(tasks.size());
  const bool timed = o.verify.device != "interp";
  nlohmann::json summary = {{"tasks", rows}, {"verified", verified}, {"of", tasks.size()},
                            {"fast_0", static_cast<double>(verified) / n}, {"device", o.verify.device}};
  if (timed) {
    summary["fast_1"] = static_cast<double>(faster) / n;
    summary["fast_2"] = static_cast<double>(twice) / n;
  }
  const std::string text = summary.dump(2) + "\n";
  const std::string why = writeFileAtomically((fs::path(out) / "bench.json").string(),
                                              std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  if (!why.empty())
    return usage(why);
  if (timed)
    std::printf("kiln-agent: bench: %zu of %zu tasks verified (fast_0 %.2f), fast_1 %.2f, fast_2 %.2f on %s\n",
                verified, tasks.size(), static_cast<double>(verified) / n, static_cast<double>(faster) / n,
                static_cast<double>(twice) / n, o.verify.device.c_str());
  else
    std::printf("kiln-agent: bench: %zu of %zu tasks verified (fast_0 %.2f); speed is measured on a GPU only\n",
                verified, tasks.size(), static_cast<double>(verified) / n);
  return 0;
}

/// The task and options of `verify` and `time`, which take a task file and a program;
/// nullopt after usage() when they are bad.
std::optional<agent::Task> taskAndOptions(const std::vector<std::string> &positional,
                                          const std::map<std::string, std::string> &opts, const std::string &command,
                                          agent::VerifyOptions &o) {
  if (positional.size() != 2) {
    usage(command + " takes a task file and a program");
    return std::nullopt;
  }
  std::string error;
  std::optional<agent::Task> task = agent::readTask(positional[0], error);
  if (!task) {
    usage(error);
    return std::nullopt;
  }
  if (std::string why = commonOptions(opts, o); !why.empty()) {
    usage(why);
    return std::nullopt;
  }
  return task;
}

int verify(const std::vector<std::string> &positional, const std::map<std::string, std::string> &opts) {
  agent::VerifyOptions o;
  std::optional<agent::Task> task = taskAndOptions(positional, opts, "verify", o);
  if (!task)
    return BadInput;
  agent::Cases which = agent::Cases::Shown;
  if (opts.count("--cases")) {
    if (opts.at("--cases") != "shown" && opts.at("--cases") != "large")
      return usage("--cases takes shown (the cases, then the hidden ones) or large");
    which = opts.at("--cases") == "large" ? agent::Cases::Large : agent::Cases::Shown;
    if (which == agent::Cases::Large && task->largeCases.empty())
      return usage("the task has no \"large_cases\"");
  }
  const bool keep = opts.count("--out") != 0;
  o.workDir = keep ? opts.at("--out") : (fs::temp_directory_path() / ("kiln-agent-" + std::to_string(::getpid()))).string();
  agent::Verdict v = agent::verifyCandidate(*task, positional[1], o, which);
  if (!keep)
    fs::remove_all(o.workDir);
  std::cout << "kiln-agent: " << task->name << ": " << v.outcome << ": " << v.summary << " (seed " << o.seed << ")\n";
  if (keep) {
    const nlohmann::json report = {{"task", task->name},     {"candidate", positional[1]}, {"outcome", v.outcome},
                                   {"summary", v.summary},   {"evidence", v.evidence},     {"seed", o.seed},
                                   {"device", o.device}};
    const std::string text = report.dump(2) + "\n";
    const std::string why = writeFileAtomically(
        (fs::path(o.workDir) / "report.json").string(),
        std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
    if (!why.empty())
      return usage(why);
  }
  if (v.outcome == "task-error")
    return BadInput;
  return v.outcome == "verified" ? Verified : NotVerified;
}

int timeCommand(const std::vector<std::string> &positional, const std::map<std::string, std::string> &opts) {
  agent::VerifyOptions o;
  std::optional<agent::Task> task = taskAndOptions(positional, opts, "time", o);
  if (!task)
    return BadInput;
  std::string error;
  int repeat = 0;
  if (std::string why = repeatOption(opts, repeat); !why.empty())
    return usage(why);
  o.workDir = (fs::temp_directory_path() / ("kiln-agent-" + std::to_string(::getpid()))).string();
  std::optional<agent::Speed> speed = agent::measureSpeed(*task, positional[1], o, repeat, error);
  fs::remove_all(o.workDir);
  if (!speed) {
    std::cout << "kiln-agent: " << task->name << ": not timed: " << error << "\n";
    return NotVerified;
  }
  std::printf("kiln-agent: %s: %s takes %.4f ms, the reference %.4f ms (%s, median of %d on %s): %.2fx; "
              "%.1f MB at least, %.0f GB/s\n",
              task->name.c_str(), positional[1].c_str(), speed->programMs, speed->referenceMs,
              speed->caseLabel.c_str(), repeat, o.device.c_str(), speed->speedup(),
              static_cast<double>(speed->bytes) / 1e6, speed->gbPerSecond());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string &a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kHelp;
      return 0;
    }
    if (a == "--version") {
      std::cout << "kiln-agent (Kiln) " << KILN_VERSION << "\n";
      return 0;
    }
  }
  if (args.empty())
    return usage("no command; the commands are solve, bench, verify and time");
  const std::string command = args.front();
  std::vector<std::string> positional;
  std::map<std::string, std::string> opts;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i], value;
    if (a.rfind("--", 0) != 0) {
      positional.push_back(a);
      continue;
    }
    if (size_t eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return usage("option '" + a + "' needs a value");
    }
    static const char *const known[] = {"--device",     "--out",        "--seed",          "--time-limit",
                                        "--dslc",       "--endpoint",   "--model",         "--iterations",
                                        "--request-timeout", "--api-key-env", "--retries", "--repeat",
                                        "--analyst",    "--analyst-model", "--cases"};
    if (std::find(std::begin(known), std::end(known), a) == std::end(known))
      return usage("unknown option '" + a + "'");
    if (opts.count(a))
      return usage("option '" + a + "' is given more than once");
    opts[a] = value;
  }
  if (command != "verify" && command != "solve" && command != "bench" && command != "time")
    return usage("unknown command '" + command + "'; the commands are solve, bench, verify and time");
  if (opts.count("--cases") && command != "verify")
    return usage("--cases is an option of verify");
  if ((opts.count("--analyst") || opts.count("--analyst-model")) && command != "solve" && command != "bench")
    return usage("--analyst and --analyst-model are options of solve and bench");
  try {
    return command == "solve"   ? solveCommand(positional, opts)
           : command == "bench" ? benchCommand(positional, opts)
           : command == "time"  ? timeCommand(positional, opts)
                                : verify(positional, opts);
  } catch (const std::exception &e) {
    std::cerr << "kiln-agent: internal error: " << e.what() << "\n";
    return 70;
  }
}
