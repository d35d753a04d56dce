//===- Verify.cpp - Is a candidate program right? ----------------------------===//
#include "agent/Verify.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <tuple>
#include <sstream>

namespace kiln::agent {

namespace {

namespace fs = std::filesystem;

/// The JSON diagnostics dslc printed (one object per line; other lines ignored).
nlohmann::json diagnosticsOf(const std::string &err) {
  nlohmann::json out = nlohmann::json::array();
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json d = nlohmann::json::parse(line, nullptr, false);
    if (!d.is_discarded() && d.is_object() && d.contains("code"))
      out.push_back(d);
  }
  return out;
}

std::string describe(const nlohmann::json &d) {
  std::string where;
  if (d.value("line", 0) > 0)
    where = d.value("file", std::string()) + ":" + std::to_string(d.value("line", 0)) + ":" +
            std::to_string(d.value("col", 0)) + ": ";
  return where + d.value("code", std::string()) + " " + d.value("message", std::string());
}

bool hasCode(const nlohmann::json &diags, const std::string &code) {
  for (const auto &d : diags)
    if (d.value("code", std::string()) == code)
      return true;
  return false;
}

struct Inputs {
  std::vector<std::pair<std::string, NpyArray>> arrays; ///< by parameter name
  std::vector<std::pair<std::string, std::string>> scalars;
};

Inputs draw(const TaskCase &c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Inputs in;
  for (const auto &[name, s] : c.args) {
    if (s.kind == ArgSource::Kind::Scalar)
      in.scalars.emplace_back(name, s.scalar);
    else
      in.arrays.emplace_back(name, drawArray(s, rng));
  }
  return in;
}

DType dtypeOf(const TaskCase &c, const std::string &name) {
  for (const auto &[n, s] : c.args)
    if (n == name)
      return s.dtype;
  return DType::F32;
}

bool isChecked(const Task &t, const std::string &name) {
  return std::find(t.check.begin(), t.check.end(), name) != t.check.end();
}

/// Writes the case's files into `dir` (outputs poisoned) and returns dslc run's
/// arguments for them.
std::optional<std::vector<std::string>> stage(const Task &task, const TaskCase &c, const Inputs &in,
                                              const std::string &dir, std::string &error) {
  fs::create_directories(dir);
  std::vector<std::string> args;
  for (const auto &[name, array] : in.arrays) {
    NpyArray a = array;
    if (isChecked(task, name))
      poison(a, dtypeOf(c, name));
    const std::string path = (fs::path(dir) / (name + ".npy")).string();
    if (!writeNpyAtomic(path, a, error))
      return std::nullopt;
    args.push_back("--arg");
    args.push_back(name + "=" + path);
  }
  for (const auto &[name, literal] : in.scalars) {
    args.push_back("--arg");
    args.push_back(name + "=" + literal);
  }
  if (c.grid) {
    args.push_back("--grid");
    args.push_back(std::to_string((*c.grid)[0]) + "," + std::to_string((*c.grid)[1]) + "," +
                   std::to_string((*c.grid)[2]));
  }
  return args;
}

ChildResult runProgram(const VerifyOptions &o, const std::string &program, const std::string &entry,
                       const std::vector<std::string> &args, bool checked, const ChildLimits &limits) {
  std::vector<std::string> argv = {o.dslc, "run", program, "--kernel", entry, "--device", o.device,
                                   "--diagnostics=json"};
  if (checked)
    argv.push_back("--checked");
  argv.insert(argv.end(), args.begin(), args.end());
  ChildLimits bounded = limits;
  bounded.dataOnly = o.device != "interp"; // the driver's address-space reservation
  return runChild(argv, bounded);
}

/// The first difference between the candidate's output and the reference's, as evidence,
/// or null when they agree.
nlohmann::json compareOutput(const Task &task, const std::string &name, DType dtype, const NpyArray &want,
                             const NpyArray &got) {
  if (got.shape != want.shape || got.data.size() != want.data.size())
    return {{"output", name}, {"problem", "its shape or size changed"}};
  const size_t n = want.data.size() / elementBytes(dtype);
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = elementValue(want, dtype, i), g = elementValue(got, dtype, i);
    const bool same = (std::isnan(w) && std::isnan(g)) || std::fabs(g - w) <= task.atol + task.rtol * std::fabs(w) ||
                      (std::isinf(w) && g == w);
    if (same)
      continue;
    if (!bad++)
      first = i;
    worst = std::isnan(g) || std::isnan(w) ? INFINITY : std::max(worst, std::fabs(g - w));
  }
  if (!bad)
    return nullptr;
  return {{"output", name},
          {"mismatches", bad},
          {"elements", n},
          {"max_error", std::isinf(worst) ? std::string("nan") : std::to_string(worst)},
          {"first", {{"index", first},
                     {"expected", elementValue(want, dtype, first)},
                     {"got", std::isnan(elementValue(got, dtype, first)) ? nlohmann::json("nan (not written)")
                                                                         : nlohmann::json(elementValue(got, dtype, first))}}}};
}

/// The median dslc run --time printed ("..., median 0.1895 ms, ..."), or nullopt.
std::optional<double> medianMs(const std::string &err) {
  const size_t at = err.find("median ");
  if (at == std::string::npos)
    return std::nullopt;
  char *end = nullptr;
  const double ms = std::strtod(err.c_str() + at + 7, &end);
  if (end == err.c_str() + at + 7 || std::string_view(end).substr(0, 3) != " ms")
    return std::nullopt;
  return ms;
}

} // namespace

std::optional<Speed> measureSpeed(const Task &task, const std::string &program, const VerifyOptions &o, int repeat,
                                  std::string &why, Cases which) {
  if (o.device == "interp") {
    why = "the interpreter's time says nothing of a GPU's";
    return std::nullopt;
  }
  const bool large = which == Cases::Large && !task.largeCases.empty();
  const bool hidden = !task.hiddenCases.empty();
  const TaskCase &c = large ? task.largeCases.back() : hidden ? task.hiddenCases.back() : task.cases.back();
  Speed speed;
  speed.caseLabel = large    ? "large case " + std::to_string(task.largeCases.size() - 1)
                    : hidden ? "hidden case " + std::to_string(task.hiddenCases.size() - 1)
                             : "case " + std::to_string(task.cases.size() - 1);
  const Inputs in = draw(c, o.seed + 104729);
  for (const auto &[name, array] : in.arrays)
    speed.bytes += array.data.size();
  const std::string dir = (fs::path(o.workDir) / "timing").string();
  std::optional<std::vector<std::string>> args = stage(task, c, in, dir, why);
  if (!args)
    return std::nullopt;
  args->insert(args->end(), {"--time", "--repeat", std::to_string(repeat)});
  ChildLimits limits = o.limits;
  limits.seconds = std::max(o.limits.seconds, 600.0);
  for (auto [path, ms, who] : {std::tuple{task.reference, &speed.referenceMs, "the reference"},
                               std::tuple{program, &speed.programMs, "the program"}}) {
    ChildResult run = runProgram(o, path, task.entry, *args, false, limits);
    std::optional<double> median = run.exitCode == 0 ? medianMs(run.err) : std::nullopt;
    if (!median) {
      why = std::string(who) + " could not be timed on " + speed.caseLabel + ": " +
            (run.timedOut ? "it took too long" : run.err.substr(0, 300) + run.error);
      return std::nullopt;
    }
    *ms = *median;
  }
  return speed;
}

Verdict verifyCandidate(const Task &task, const std::string &candidate, const VerifyOptions &o, Cases which) {
  // 1. It compiles, with the entry the task asks for.
  ChildResult compiled = runChild({o.dslc, candidate, "--kernel", task.entry, "--diagnostics=json", "-o", "/dev/null"},
                                  o.limits);
  if (!compiled.started)
    return {"task-error", "cannot run dslc: " + compiled.error, nullptr};
  if (compiled.timedOut)
    return {"timeout", "compiling took longer than " + std::to_string(o.limits.seconds) + " s", nullptr};
  if (compiled.exitCode != 0) {
    nlohmann::json diags = diagnosticsOf(compiled.err);
    return {"compile-error", diags.empty() ? compiled.err.substr(0, 400) : describe(diags.front()),
            {{"diagnostics", diags}}};
  }

  // 2. Case by case beside the reference: the visible cases, then the hidden ones (or
  // the large ones, which count as hidden).
  std::vector<std::pair<const TaskCase *, bool>> cases;
  const bool large = which == Cases::Large;
  for (const TaskCase &c : large ? task.largeCases : task.cases)
    cases.push_back({&c, large});
  if (!large)
    for (const TaskCase &c : task.hiddenCases)
      cases.push_back({&c, true});
  ChildLimits referenceLimits = o.limits;
  referenceLimits.seconds = std::max(o.limits.seconds, 600.0);
  for (size_t k = 0; k < cases.size(); ++k) {
    const TaskCase &c = *cases[k].first;
    const bool hidden = cases[k].second;
    const std::string label = large    ? "large case " + std::to_string(k)
                              : hidden ? "hidden case " + std::to_string(k - task.cases.size())
                                       : "case " + std::to_string(k);
    const Inputs in = draw(c, o.seed + 7919 * k);
    const std::string refDir = (fs::path(o.workDir) / ("case" + std::to_string(k)) / "reference").string();
    const std::string candDir = (fs::path(o.workDir) / ("case" + std::to_string(k)) / "candidate").string();
    std::string error;
    std::optional<std::vector<std::string>> refArgs = stage(task, c, in, refDir, error);
    std::optional<std::vector<std::string>> candArgs = refArgs ? stage(task, c, in, candDir, error) : std::nullopt;
    if (!candArgs)
      return {"task-error", "cannot write the inputs: " + error, nullptr};
    ChildResult ref = runProgram(o, task.reference, task.entry, *refArgs, false, referenceLimits);
    if (!ref.started || ref.exitCode != 0) {
      nlohmann::json diags = diagnosticsOf(ref.err);
      return {"task-error", "the reference fails on " + label + ": " +
                                (diags.empty() ? ref.err.substr(0, 400) + ref.error : describe(diags.front())),
              {{"diagnostics", diags}}};
    }
    ChildResult run = runProgram(o, candidate, task.entry, *candArgs, true, o.limits);
    nlohmann::json where = {{"case", label}, {"hidden", hidden}};
    if (run.timedOut)
      return {hidden ? "rejected" : "timeout",
              label + ": the run took longer than " + std::to_string(static_cast<int>(o.limits.seconds)) + " s",
              where};
    if (run.exitCode != 0) {
      nlohmann::json diags = diagnosticsOf(run.err);
      where["diagnostics"] = diags;
      const std::string first = diags.empty() ? run.err.substr(0, 400) : describe(diags.front());
      if (hasCode(diags, "E0602"))
        return {"checked-violation", label + ": " + first, where};
      if (hasCode(diags, "E0605"))
        return {"timeout", label + ": " + first, where};
      if (hasCode(diags, "E0600") || hasCode(diags, "E0606") || hasCode(diags, "E0601"))
        return {"compile-error", label + ": the entry does not take the task's arguments: " + first, where};
      return {hidden ? "rejected" : "wrong-result", label + ": the run failed: " + first, where};
    }
    // Outputs against the reference's; every other buffer as it was given.
    for (const auto &[name, original] : in.arrays) {
      const std::string candPath = (fs::path(candDir) / (name + ".npy")).string();
      std::optional<NpyArray> got = readNpy(candPath, error);
      if (!got)
        return {"task-error", "cannot read " + candPath + ": " + error, nullptr};
      nlohmann::json problem;
      if (isChecked(task, name)) {
        std::optional<NpyArray> want = readNpy((fs::path(refDir) / (name + ".npy")).string(), error);
        if (!want)
          return {"task-error", "cannot read the reference's " + name + ": " + error, nullptr};
        problem = compareOutput(task, name, dtypeOf(c, name), *want, *got);
      } else if (got->data != original.data) {
        problem = {{"output", name}, {"problem", "an input was modified"}};
      }
      if (!problem.is_null()) {
        where["difference"] = problem;
        std::string text = label + ": " + name + " ";
        if (problem.contains("problem"))
          text += problem["problem"].get<std::string>();
        else
          text += "differs from the reference in " + std::to_string(problem["mismatches"].get<size_t>()) + " of " +
                  std::to_string(problem["elements"].get<size_t>()) + " elements (max error " +
                  problem["max_error"].get<std::string>() + ", first at element " +
                  std::to_string(problem["first"]["index"].get<size_t>()) + ")";
        return {hidden ? "rejected" : "wrong-result", text, where};
      }
    }
  }
  if (large)
    return {"verified", std::to_string(task.largeCases.size()) + " large cases match the reference",
            {{"large_cases", task.largeCases.size()}}};
  return {"verified",
          std::to_string(task.cases.size()) + " cases and " + std::to_string(task.hiddenCases.size()) +
              " hidden cases match the reference",
          {{"cases", task.cases.size()}, {"hidden_cases", task.hiddenCases.size()}}};
}

} // namespace kiln::agent
