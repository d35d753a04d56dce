//===- SemaTestUtil.h - Compiling Kiln snippets in semantic-analysis tests -*- C++ -*-===//
//
// compile() runs the whole frontend on a source string and captures the diagnostics;
// the expect* helpers check an error's code, position and message text together, and
// run() executes a compiled kernel on the reference interpreter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/Sema.h"
#include "ir/Printer.h"
#include "ir/interp/Interpreter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

struct Compiled {
  bool ok = false;
  std::unique_ptr<ir::Module> module;
  std::vector<Diagnostic> diags;
  std::string ir; ///< printModule text (empty when compilation failed)

  /// All diagnostics rendered one per line, for failure messages.
  std::string diagText() const {
    std::string s;
    for (const auto &d : diags)
      s += diagCodeString(d.code) + " " + std::to_string(d.loc.line) + ":" +
           std::to_string(d.loc.col) + " " + d.message +
           (d.hint.empty() ? "" : " [" + d.hint + "]") + "\n";
    return s;
  }
  const ir::Kernel &kernel(const std::string &name) const {
    const ir::Kernel *k = module->findKernel(name);
    if (!k)
      throw std::runtime_error("no kernel " + name);
    return *k;
  }
};

inline Compiled compile(const std::string &source, SemaOptions options = {},
                        const std::string &name = "test.kiln") {
  Compiled c;
  c.module = std::make_unique<ir::Module>();
  uint32_t file = c.module->sources->addBuffer(name, source);
  std::ostringstream sink;
  DiagnosticEngine engine(*c.module->sources, sink);
  engine.setHandler([&](const Diagnostic &d) { c.diags.push_back(d); });
  c.ok = compileToTileIR(file, *c.module, engine, options);
  if (c.ok)
    c.ir = ir::printModule(*c.module);
  return c;
}

/// Compiles `source` and expects success; returns the IR text.
#define EXPECT_COMPILES(c) EXPECT_TRUE((c).ok) << (c).diagText()

/// Expects exactly one error with `code` at line:col whose message contains `text`.
inline void expectError(const Compiled &c, const char *code, unsigned line, unsigned col,
                        const std::string &text) {
  EXPECT_FALSE(c.ok);
  bool found = false;
  for (const auto &d : c.diags)
    if (diagCodeString(d.code) == code && d.loc.line == line && d.loc.col == col &&
        d.message.find(text) != std::string::npos)
      found = true;
  EXPECT_TRUE(found) << "expected " << code << " at " << line << ":" << col << " containing '"
                     << text << "'; got:\n"
                     << c.diagText();
}

/// Counts diagnostics with `code`.
inline size_t countCode(const Compiled &c, const char *code) {
  size_t n = 0;
  for (const auto &d : c.diags)
    n += diagCodeString(d.code) == code;
  return n;
}

//===--------------------------------------------------------------------===//
// Running on the interpreter
//===--------------------------------------------------------------------===//

template <typename T> interp::Buffer makeBuffer(DType dtype, const std::vector<T> &values) {
  interp::Buffer b;
  b.dtype = dtype;
  b.data.resize(values.size() * sizeof(T));
  std::memcpy(b.data.data(), values.data(), b.data.size());
  return b;
}

template <typename T> std::vector<T> readBuffer(const interp::Buffer &b) {
  std::vector<T> out(b.data.size() / sizeof(T));
  std::memcpy(out.data(), b.data.data(), b.data.size());
  return out;
}

/// Runs `kernel` over `grid`; returns false (and records the messages) on a run error.
inline bool run(const ir::Kernel &kernel, const std::vector<interp::KernelArg> &args,
                std::vector<interp::Buffer> &buffers, std::array<int64_t, 3> grid = {1, 1, 1},
                std::string *printed = nullptr, std::string *errors = nullptr) {
  SourceManager sm;
  std::ostringstream sink, out;
  DiagnosticEngine engine(sm, sink);
  std::string msgs;
  engine.setHandler([&](const Diagnostic &d) { msgs += d.message + "\n"; });
  interp::RunOptions opts;
  opts.grid = grid;
  opts.printStream = &out;
  bool ok = interp::runKernel(kernel, args, buffers, opts, engine);
  if (printed)
    *printed = out.str();
  if (errors)
    *errors = msgs;
  return ok;
}

} // namespace kiln::test
