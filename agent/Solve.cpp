//===- Solve.cpp - The agent loop: a model writes, the verifier decides ------===//
#include "agent/Solve.h"

#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

namespace kiln::agent {

namespace fs = std::filesystem;

std::optional<std::string> firstKilnBlock(const std::string &reply) {
  size_t at = 0;
  while ((at = reply.find("```", at)) != std::string::npos) {
    const size_t lineEnd = reply.find('\n', at);
    if (lineEnd == std::string::npos)
      return std::nullopt;
    std::string tag = reply.substr(at + 3, lineEnd - at - 3);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\r'))
      tag.pop_back();
    const size_t close = reply.find("```", lineEnd + 1);
    if (tag == "kiln")
      return reply.substr(lineEnd + 1, close == std::string::npos ? std::string::npos : close - lineEnd - 1);
    if (close == std::string::npos)
      return std::nullopt;
    at = close + 3;
  }
  return std::nullopt;
}

namespace {

std::string readOr(const std::string &path, const std::string &fallback) {
  std::string why;
  std::optional<std::string> text = readWholeFile(path, why, 4u << 20);
  return text ? *text : fallback;
}

bool writeText(const std::string &path, const std::string &text) {
  return writeFileAtomically(path, std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size())).empty();
}

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

/// What the generator is told about a verdict (and, for a verified program, the
/// analyst's advice). A hidden case's details stay hidden.
std::string feedback(const std::string &templateText, const Verdict &v, bool firstVerified,
                     const std::string &advice) {
  std::string verdict, details;
  if (v.outcome == "verified") {
    verdict = firstVerified ? "The program is correct: " + v.summary + "."
                            : "This version is correct too: " + v.summary + ".";
    details = "Now write a faster version that stays correct for every shape.\n";
    if (!advice.empty())
      details += "\nA performance analyst read its profile and advises:\n\n" + advice + "\n";
  } else if (v.outcome == "compile-error") {
    verdict = "The program does not compile: " + v.summary;
    if (v.evidence.contains("diagnostics"))
      for (const auto &d : v.evidence["diagnostics"])
        details += d.dump() + "\n";
  } else if (v.outcome == "rejected") {
    verdict = "The program is right on the cases you were shown but wrong on others: it must not depend on "
              "those shapes.";
  } else if (v.outcome == "checked-violation") {
    verdict = "An access left its buffer: " + v.summary;
  } else if (v.outcome == "timeout") {
    verdict = "The program did not finish in time: " + v.summary;
  } else {
    verdict = "The program gives wrong results: " + v.summary;
    if (v.evidence.contains("difference"))
      details = v.evidence["difference"].dump() + "\n";
  }
  return replaceAll(replaceAll(templateText, "{verdict}", verdict), "{details}", details);
}

} // namespace

SolveStatus solve(const Task &task, const SolveOptions &o, std::ostream &progress) {
  std::error_code ec;
  fs::create_directories(o.outDir, ec);
  if (ec) {
    progress << "kiln-agent: cannot make '" << o.outDir << "': " << ec.message() << "\n";
    return SolveBadInput;
  }
  std::string system = readOr((fs::path(o.promptsDir) / "generator.md").string(), "");
  for (const auto &[title, path] : o.documents)
    system += "\n\n# " + title + "\n\n" + readOr(path, "");
  const std::string feedbackTemplate =
      readOr((fs::path(o.promptsDir) / "feedback.md").string(), "{verdict}\n\n{details}\n");
  std::vector<ChatMessage> messages = {{"system", system},
                                       {"user", task.prompt + "\n\nThe entry is `" + task.entry + "`."}};
  std::ofstream transcript(fs::path(o.outDir) / "transcript.jsonl", std::ios::trunc);
  nlohmann::json attempts = nlohmann::json::array();
  int64_t promptTokens = 0, completionTokens = 0, requests = 0;
  std::string best, endpointError;
  double bestSpeedup = 0; ///< the kept program's, 0 when not timed
  SolveStatus status = SolveFailed;

  auto writeReport = [&](const std::string &state) {
    const nlohmann::json report = {{"task", task.name},
                                   {"status", state},
                                   {"best", best.empty() ? nlohmann::json() : nlohmann::json(best)},
                                   {"speedup", bestSpeedup > 0 ? nlohmann::json(bestSpeedup) : nlohmann::json()},
                                   {"attempts", attempts},
                                   {"tokens", {{"prompt", promptTokens}, {"completion", completionTokens}}},
                                   {"requests", requests},
                                   {"endpoint_error", endpointError.empty() ? nlohmann::json() : nlohmann::json(endpointError)}};
    writeText((fs::path(o.outDir) / "report.json").string(), report.dump(2) + "\n");
  };

  // One exchange with the endpoint, written to the transcript and counted; nullopt
  // (the run then ends) when the endpoint failed.
  int exchanges = 0;
  auto ask = [&](const ChatOptions &chatOptions, const std::vector<ChatMessage> &sent,
                 const char *role) -> std::optional<ChatReply> {
    std::string error;
    std::optional<ChatReply> reply = chat(chatOptions, sent, error);
    ++exchanges;
    if (!reply) {
      endpointError = error;
      progress << "kiln-agent: the endpoint failed: " << error << "\n";
      transcript << nlohmann::json({{"request", exchanges}, {"role", role}, {"error", error}}).dump() << "\n";
      return std::nullopt;
    }
    requests += reply->attempts;
    promptTokens += reply->promptTokens;
    completionTokens += reply->completionTokens;
    nlohmann::json messagesSent = nlohmann::json::array();
    for (const ChatMessage &m : sent)
      messagesSent.push_back({{"role", m.role}, {"content", m.content}});
    transcript << nlohmann::json({{"request", exchanges}, {"role", role}, {"messages", messagesSent},
                                  {"reply", reply->content}})
                      .dump()
               << "\n";
    transcript.flush();
    return reply;
  };
  auto endpointFailed = [&] {
    writeReport(best.empty() ? "failed" : "verified");
    return best.empty() ? SolveEndpointFailed : SolveVerified;
  };
  std::string analystSystem = readOr((fs::path(o.promptsDir) / "analyst.md").string(), "");
  for (const auto &[title, path] : o.documents)
    if (fs::path(path).filename() == "ceilings.md")
      analystSystem += "\n\n# " + title + "\n\n" + readOr(path, "");
  ChatOptions analystChat = o.chat;
  if (!o.analystModel.empty())
    analystChat.model = o.analystModel;

  for (int i = 1; i <= o.iterations; ++i) {
    std::optional<ChatReply> reply = ask(o.chat, messages, "generator");
    if (!reply)
      return endpointFailed();
    messages.push_back({"assistant", reply->content});

    Verdict v;
    const std::string file = (fs::path(o.outDir) / ("attempt-" + std::to_string(i) + ".kiln")).string();
    // The attempt's runs (verification, then timing) share its folder and seed.
    VerifyOptions vo = o.verify;
    vo.workDir = (fs::path(o.outDir) / ("attempt-" + std::to_string(i))).string();
    vo.seed = o.verify.seed + static_cast<uint64_t>(i) * 1000003u;
    std::optional<std::string> program = firstKilnBlock(reply->content);
    if (!program) {
      v = {"compile-error", "the reply has no ```kiln block", nullptr};
    } else if (!writeText(file, *program)) {
      progress << "kiln-agent: cannot write '" << file << "'\n";
      return SolveBadInput;
    } else {
      v = verifyCandidate(task, file, vo);
    }
    if (v.outcome == "task-error") {
      progress << "kiln-agent: the task is broken: " << v.summary << "\n";
      writeReport("failed");
      return SolveBadInput;
    }
    const bool firstVerified = v.outcome == "verified" && best.empty();
    // A verified program is timed beside the reference on the device (not on the
    // interpreter); the fastest is kept, or the first where nothing is timed.
    std::optional<Speed> speed;
    if (v.outcome == "verified" && o.verify.device != "interp") {
      std::string why;
      speed = measureSpeed(task, file, vo, o.timingRepeat, why);
      if (speed) {
        v.evidence["time_ms"] = speed->programMs;
        v.evidence["reference_ms"] = speed->referenceMs;
        v.evidence["speedup"] = speed->speedup();
        v.evidence["gb_per_s"] = speed->gbPerSecond();
        char text[256];
        std::snprintf(text, sizeof text,
                      "; on %s it takes %.4f ms against the reference's %.4f ms (%.2fx), moving at least %.1f MB: "
                      "%.0f GB/s",
                      speed->caseLabel.c_str(), speed->programMs, speed->referenceMs, speed->speedup(),
                      static_cast<double>(speed->bytes) / 1e6, speed->gbPerSecond());
        v.summary += text;
      } else {
        v.evidence["not_timed"] = why;
      }
    }
    // A speedup too good to be true is checked again on shapes never shown (KernelBench's
    // known hacks fit a program to the shapes it is tested on).
    if (speed && speed->speedup() > kReverifyAbove) {
      char claim[64];
      std::snprintf(claim, sizeof claim, "%.1fx", speed->speedup());
      if (task.largeCases.empty()) {
        v.evidence["reverified"] = "no: the task has no large cases";
      } else {
        VerifyOptions large = vo;
        large.workDir = (fs::path(vo.workDir) / "large").string();
        const Verdict again = verifyCandidate(task, file, large, Cases::Large);
        if (again.outcome == "task-error") {
          progress << "kiln-agent: the task's large cases are broken: " << again.summary << "\n";
          writeReport("failed");
          return SolveBadInput;
        }
        if (again.outcome != "verified") {
          v = {"rejected", "it claims " + std::string(claim) + " over the reference, but on a larger shape: " +
                               again.summary,
               again.evidence};
          speed.reset();
        } else {
          std::string why;
          std::optional<Speed> big = measureSpeed(task, file, large, o.timingRepeat, why, Cases::Large);
          v.evidence["reverified"] = {{"large_cases", task.largeCases.size()},
                                      {"speedup", big ? nlohmann::json(big->speedup()) : nlohmann::json(why)}};
          char text[160];
          std::snprintf(text, sizeof text, "; its %s was verified again on %zu large cases", claim,
                        task.largeCases.size());
          v.summary += text;
          if (big) {
            std::snprintf(text, sizeof text, " (%.2fx on %s)", big->speedup(), big->caseLabel.c_str());
            v.summary += text;
          }
        }
      }
    }
    if (v.outcome == "verified" && (firstVerified || (speed && speed->speedup() > bestSpeedup))) {
      best = (fs::path(o.outDir) / "best.kiln").string();
      writeText(best, *program);
      status = SolveVerified;
      bestSpeedup = speed ? speed->speedup() : 0;
    }
    progress << "kiln-agent: attempt " << i << ": " << v.outcome << ": " << v.summary << "\n";
    nlohmann::json entry = {{"attempt", i},
                            {"outcome", v.outcome},
                            {"summary", v.summary},
                            {"file", program ? nlohmann::json(file) : nlohmann::json()},
                            {"tokens", {{"prompt", reply->promptTokens}, {"completion", reply->completionTokens}}}};
    if (!v.evidence.is_null())
      entry["evidence"] = v.evidence;
    // The analyst reads a verified program's profile before the generator tries again.
    std::string advice;
    if (v.outcome == "verified" && o.analyst && i < o.iterations) {
      const Profile p = profileProgram(task, file, vo, speed);
      entry["profile"] = toJson(p);
      std::optional<ChatReply> analysis =
          ask(analystChat, {{"system", analystSystem}, {"user", analystRequest(task, *program, p)}}, "analyst");
      if (!analysis) {
        attempts.push_back(entry);
        return endpointFailed();
      }
      advice = analysis->content;
      if (!advice.empty())
        entry["advice"] = advice;
      progress << "kiln-agent: attempt " << i << ": the analyst advises (" << advice.size() << " characters)\n";
    }
    attempts.push_back(entry);
    if (i < o.iterations)
      messages.push_back({"user", feedback(feedbackTemplate, v, firstVerified, advice)});
  }
  writeReport(status == SolveVerified ? "verified" : "failed");
  progress << "kiln-agent: " << task.name << ": "
           << (status == SolveVerified ? "verified; the best program is " + best : std::string("no verified program"))
           << " (" << requests << " requests, " << promptTokens << " + " << completionTokens << " tokens)\n";
  return status;
}

} // namespace kiln::agent
