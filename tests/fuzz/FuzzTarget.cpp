//===- FuzzTarget.cpp - One fuzz input through the frontend ---------------===//
#include "tests/fuzz/FuzzTarget.h"

#include "frontend/Sema.h"
#include "ir/GraphDependencies.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/transforms/Pipeline.h"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

namespace kiln::fuzz {

namespace {
[[noreturn]] void fail(const char *what, const std::string &detail, const uint8_t *data, size_t size) {
  std::fprintf(stderr, "\n*** fuzz failure: %s\n%s\n--- input (%zu bytes) ---\n", what, detail.c_str(), size);
  std::fwrite(data, 1, size, stderr);
  std::fprintf(stderr, "\n--- end of input ---\n");
  std::abort();
}

/// Parses `printed` back as Tile IR and verifies it; fails the run with `what` if it
/// does not. Returns the parsed module.
std::unique_ptr<ir::Module> parseBack(const std::shared_ptr<SourceManager> &sources, const std::string &printed,
                                      const char *name, const char *what, const uint8_t *data, size_t size) {
  std::ostringstream errors;
  DiagnosticEngine diags(*sources, errors);
  auto parsed = ir::parseTir(sources, sources->addBuffer(name, printed), diags);
  if (!parsed || !ir::verifyModule(*parsed, diags))
    fail(what, errors.str() + "\n" + printed, data, size);
  return parsed;
}
/// Each graph the input names (at most a few): lowered with the kernels it launches,
/// printed and parsed back, through the pipeline, and its dependencies analysed.
void compileGraphs(const std::string &text, uint32_t file, const std::shared_ptr<SourceManager> &sources,
                   const uint8_t *data, size_t size) {
  static const std::regex graphItem(R"(\bgraph\s+([A-Za-z_][A-Za-z0-9_]*))");
  unsigned seen = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), graphItem); it != std::sregex_iterator() && seen < 4;
       ++it, ++seen) {
    std::ostringstream sink;
    DiagnosticEngine diags(*sources, sink);
    ir::Module module;
    module.sources = sources;
    SemaOptions options;
    options.kernel = (*it)[1].str();
    if (!compileToTileIR(file, module, diags, options) || module.graphs.empty())
      continue;
    std::string printed = ir::printModule(module);
    auto reparsed = parseBack(sources, printed, "fuzz-graph.tir", "a printed graph does not parse back", data, size);
    if (ir::printModule(*reparsed) != printed)
      fail("a graph's Tile IR round trip is not stable", printed, data, size);
    std::ostringstream report;
    ir::printGraphDependencies(module, *module.graphs.front(),
                               ir::analyzeGraphDependencies(module, *module.graphs.front()), report);
    if (!ir::runPipeline(module, ir::PipelineOptions{}, diags))
      continue;
    parseBack(sources, ir::printModule(module), "fuzz-graph-optimized.tir",
              "an optimized graph does not parse back", data, size);
  }
}
} // namespace

void compileOneInput(const uint8_t *data, size_t size, const Backend &backend) {
  auto sources = std::make_shared<SourceManager>();
  std::ostringstream sink;
  DiagnosticEngine diags(*sources, sink);
  std::string text(reinterpret_cast<const char *>(data), size);
  // The fuzzer's file lives in the current directory; imports it names are looked up
  // relative to it and fail cleanly.
  uint32_t file = sources->addBuffer("fuzz-input.kiln", text);
  ir::Module module;
  module.sources = sources;
  try {
    compileGraphs(text, file, sources, data, size);
    SemaOptions options;
    if (!compileToTileIR(file, module, diags, options))
      return;
    std::string printed = ir::printModule(module);
    // Round trip: the printed IR must parse, verify and print identically.
    auto reparsed = parseBack(sources, printed, "fuzz-roundtrip.tir", "printed Tile IR does not parse back", data,
                              size);
    if (ir::printModule(*reparsed) != printed)
      fail("Tile IR round trip is not stable", printed, data, size);
    ir::PipelineOptions pipeline;
    pipeline.fusionRemarks = &diags; // the --explain-fusion reports are fuzzed too
    if (!ir::runPipeline(module, pipeline, diags))
      return;
    // The optimized IR must print, parse back and verify as well.
    parseBack(sources, ir::printModule(module), "fuzz-optimized.tir", "optimized Tile IR does not parse back", data,
              size);
    if (backend)
      backend(module, "sm_80", diags);
    // The same program compiled for a target with thread-block clusters, its reduction
    // chains forced into 2 to 8 segments (by the input's size): the multi-segment,
    // cluster and held-share rewrites the default run leaves alone.
    ir::PipelineOptions split;
    ir::setPipelineTarget(split, "sm_90a");
    split.reductionSplit.forced = 2 + static_cast<int64_t>(size % 7);
    split.fusionRemarks = &diags;
    if (!ir::runPipeline(*reparsed, split, diags))
      return;
    parseBack(sources, ir::printModule(*reparsed), "fuzz-split.tir", "split Tile IR does not parse back", data,
              size);
    if (backend)
      backend(*reparsed, "sm_90a", diags);
  } catch (const InternalCompilerError &e) {
    fail("internal compiler error", std::string(e.what()) + " at " + e.file + ":" + std::to_string(e.line), data,
         size);
  } catch (const std::exception &e) {
    fail("uncaught exception", e.what(), data, size);
  }
}

} // namespace kiln::fuzz
