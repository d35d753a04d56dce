//===- kiln-agent.cpp - Verifying the Kiln programs a model writes ---------===//
//
//   kiln-agent verify TASK.json CANDIDATE.kiln [--device interp|cuda|ze] [--out DIR]
//                     [--seed N] [--time-limit S] [--dslc PATH]
//
// The verifier of the agent loop (docs/agent.md): the candidate is compiled, then run
// case by case beside the task's reference on fresh random inputs (outputs poisoned,
// inputs checked unchanged, hidden cases last), each run a child process with limits.
// Prints the verdict; with --out, writes DIR/report.json.
//
// Exit status: 0 verified, 1 not, 2 a bad task or command line (or a broken reference).
//
//===----------------------------------------------------------------------===//
#include "agent/Verify.h"
#include "support/AtomicFile.h"

#include <chrono>
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
    "kiln-agent — check the Kiln programs a model writes against a task\n"
    "\n"
    "  kiln-agent verify TASK.json CANDIDATE.kiln [--device interp|cuda|ze] [--out DIR]\n"
    "                    [--seed N] [--time-limit S] [--dslc PATH]\n"
    "\n"
    "verify compiles the candidate and runs it beside the task's reference, case by case,\n"
    "on fresh random inputs: outputs are poisoned with NaN before each run, every input\n"
    "must come back unchanged, the candidate runs in checked mode in a child process with\n"
    "a time and memory limit, and the hidden cases come last. It prints the verdict:\n"
    "verified, compile-error, wrong-result, checked-violation, timeout or rejected.\n"
    "\n"
    "OPTIONS:\n"
    "  --device D      where the programs run (dslc run --device; default interp)\n"
    "  --out DIR       keep the runs' files under DIR and write DIR/report.json\n"
    "  --seed N        the inputs' seed (default: from the clock)\n"
    "  --time-limit S  seconds a run of the candidate may take (default 60)\n"
    "  --dslc PATH     the dslc that runs programs (default: beside kiln-agent, else PATH)\n"
    "  --help, -h      show this help\n"
    "  --version       show the version\n"
    "\n"
    "EXIT STATUS: 0 verified, 1 not verified, 2 a bad task or command line\n"
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

int verify(const std::vector<std::string> &positional, const std::map<std::string, std::string> &opts) {
  if (positional.size() != 2)
    return usage("verify takes a task file and a candidate program");
  std::string error;
  std::optional<agent::Task> task = agent::readTask(positional[0], error);
  if (!task)
    return usage(error);
  agent::VerifyOptions o;
  o.dslc = opts.count("--dslc") ? opts.at("--dslc") : findDslc();
  if (o.dslc.empty() || ::access(o.dslc.c_str(), X_OK) != 0)
    return usage("no dslc to run programs with" + (o.dslc.empty() ? std::string() : " ('" + o.dslc + "')") +
                 "; give it with --dslc PATH");
  if (opts.count("--device"))
    o.device = opts.at("--device");
  try {
    o.seed = opts.count("--seed") ? std::stoull(opts.at("--seed"))
                                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (opts.count("--time-limit"))
      o.limits.seconds = std::stod(opts.at("--time-limit"));
  } catch (const std::exception &) {
    return usage("--seed takes a number and --time-limit seconds");
  }
  const bool keep = opts.count("--out") != 0;
  o.workDir = keep ? opts.at("--out") : (fs::temp_directory_path() / ("kiln-agent-" + std::to_string(::getpid()))).string();
  agent::Verdict v = agent::verifyCandidate(*task, positional[1], o);
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
    return usage("no command; the command is verify");
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
    if (a != "--device" && a != "--out" && a != "--seed" && a != "--time-limit" && a != "--dslc")
      return usage("unknown option '" + a + "'");
    if (opts.count(a))
      return usage("option '" + a + "' is given more than once");
    opts[a] = value;
  }
  if (command != "verify")
    return usage("unknown command '" + command + "'; the command is verify");
  try {
    return verify(positional, opts);
  } catch (const std::exception &e) {
    std::cerr << "kiln-agent: internal error: " << e.what() << "\n";
    return 70;
  }
}
