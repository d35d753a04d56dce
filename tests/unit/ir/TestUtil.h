//===- TestUtil.h - Shared helpers of the Tile IR unit tests -----*- C++ -*-===//
#pragma once

#include "ir/IR.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::ir::test {

/// A module parsed from text, with every diagnostic the parser reported.
struct Parsed {
  std::shared_ptr<SourceManager> sources = std::make_shared<SourceManager>();
  std::unique_ptr<Module> module;
  std::vector<Diagnostic> diags;
  uint32_t file = 0;

  /// "line:col: message" of the first diagnostic, or "" when there was none.
  std::string first() const {
    if (diags.empty())
      return "";
    const Diagnostic &d = diags.front();
    return std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message;
  }
};

inline Parsed parseText(const std::string &text, const std::string &name = "test.tir") {
  Parsed p;
  p.file = p.sources->addBuffer(name, text);
  std::ostringstream sink;
  DiagnosticEngine diags(*p.sources, sink);
  diags.setHandler([&](const Diagnostic &d) { p.diags.push_back(d); });
  p.module = parseTir(p.sources, p.file, diags);
  return p;
}

/// Runs verifyModule and returns the messages it reported.
inline std::vector<Diagnostic> verify(const Module &m) {
  std::vector<Diagnostic> out;
  std::ostringstream sink;
  DiagnosticEngine diags(*m.sources, sink);
  diags.setErrorLimit(0);
  diags.setHandler([&](const Diagnostic &d) { out.push_back(d); });
  bool ok = verifyModule(m, diags);
  if (ok != out.empty())
    out.push_back(Diagnostic{Severity::Error, DiagCode::TirVerify, {}, "verifyModule's result "
                             "disagrees with its diagnostics", "", {}});
  return out;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string inputPath(const std::string &name) {
  return std::string(KILN_SOURCE_DIR) + "/tests/unit/ir/inputs/" + name;
}

/// The text without its leading `//` comment lines (the printer writes none).
inline std::string withoutHeaderComments(const std::string &text) {
  size_t pos = 0;
  while (text.compare(pos, 2, "//") == 0)
    pos = text.find('\n', pos) + 1;
  return text.substr(pos);
}

} // namespace kiln::ir::test
