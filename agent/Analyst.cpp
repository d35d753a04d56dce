//===- Analyst.cpp - The performance analyst: a profile read, advice written ----===//
#include "agent/Analyst.h"

#include <cstdio>
#include <sstream>

namespace kiln::agent {

namespace {

/// The lines of `text` that parse as JSON objects (dslc --diagnostics=json writes one
/// per line; anything else is skipped).
std::vector<nlohmann::json> jsonLines(const std::string &text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{')
      continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object())
      out.push_back(std::move(j));
  }
  return out;
}

std::string figure(const nlohmann::json &k, const char *key) {
  return k.contains(key) ? k[key].dump() : "?";
}

} // namespace

Profile profileProgram(const Task &task, const std::string &program, const VerifyOptions &o,
                       const std::optional<Speed> &speed, const std::string &target) {
  Profile p;
  p.speed = speed;
  // One compile: every kernel's resources (each kernel a graph launches, then the graph's
  // persistent kernel) and the fusion remarks. The code itself is not kept.
  ChildResult run = runChild({o.dslc, program, "--kernel", task.entry, "--target=" + target, "--resource-usage",
                              "--explain-fusion", "--diagnostics=json", "-o", "/dev/null"},
                             o.limits);
  if (!run.started || run.timedOut || run.exitCode != 0) {
    p.problem = "the program could not be compiled for " + target + ": " +
                (run.timedOut ? "it took too long" : run.error + run.err.substr(0, 300));
    return p;
  }
  for (const nlohmann::json &j : jsonLines(run.err)) {
    if (j.contains("resource_usage")) {
      p.kernels.push_back(j["resource_usage"]);
    } else if (j.value("severity", "") == "remark" && j.contains("message")) {
      std::string line = "line " + std::to_string(j.value("line", 0)) + ": " + j["message"].get<std::string>();
      for (const nlohmann::json &n : j.value("notes", nlohmann::json::array()))
        if (n.contains("message"))
          line += "; " + n["message"].get<std::string>();
      p.remarks.push_back(line);
    }
  }
  if (!speed)
    p.problem = "not timed: it ran on the interpreter, whose time says nothing of a GPU's";
  return p;
}

nlohmann::json toJson(const Profile &p) {
  nlohmann::json j = {{"kernels", p.kernels}, {"fusion_remarks", p.remarks}};
  if (p.speed)
    j["time"] = {{"ms", p.speed->programMs},
                 {"reference_ms", p.speed->referenceMs},
                 {"speedup", p.speed->speedup()},
                 {"bytes", p.speed->bytes},
                 {"gb_per_s", p.speed->gbPerSecond()},
                 {"case", p.speed->caseLabel}};
  if (!p.problem.empty())
    j["problem"] = p.problem;
  return j;
}

std::string analystRequest(const Task &task, const std::string &programText, const Profile &p) {
  std::ostringstream os;
  os << "# The task\n\n" << task.prompt << "\n\n# The program (verified correct)\n\n```kiln\n" << programText;
  if (!programText.empty() && programText.back() != '\n')
    os << "\n";
  os << "```\n\n# Its profile\n\n";
  if (p.speed) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "Time on the GPU (%s): %.4f ms, the reference %.4f ms (%.2fx). It moves at least %.1f MB: %.0f GB/s.\n",
                  p.speed->caseLabel.c_str(), p.speed->programMs, p.speed->referenceMs, p.speed->speedup(),
                  static_cast<double>(p.speed->bytes) / 1e6, p.speed->gbPerSecond());
    os << line;
  }
  if (!p.problem.empty())
    os << "Not measured: " << p.problem << "\n";
  if (!p.kernels.empty())
    os << "\nEach kernel as compiled (registers and spills from ptxas; occupancy per SM of the target):\n";
  for (const nlohmann::json &k : p.kernels) {
    os << "- " << k.value("kernel", std::string("?")) << " on " << k.value("target", std::string("?")) << ": "
       << figure(k, "threads") << " threads, " << figure(k, "shared_bytes") << " bytes of shared memory";
    if (k.contains("registers"))
      os << ", " << figure(k, "registers") << " registers, spills " << figure(k, "spill_store_bytes") << " B stored / "
         << figure(k, "spill_load_bytes") << " B loaded, " << figure(k, "programs_per_sm") << " programs ("
         << figure(k, "warps_per_sm") << " of " << figure(k, "max_warps_per_sm") << " warps) per SM, limited by "
         << k.value("limited_by", std::string("?"));
    else
      os << "; registers unknown: " << k.value("registers_unknown", std::string("?"));
    os << "\n";
  }
  os << "\nThe compiler's fusion remarks:\n";
  if (p.remarks.empty())
    os << "- none (no reduction loops to fuse)\n";
  for (const std::string &r : p.remarks)
    os << "- " << r << "\n";
  return os.str();
}

} // namespace kiln::agent
