//===- Graph.cpp - One JIT-compiled graph ---------------------------------===//

#include "jit/Graph.h"

#include "codegen/BundleBuilder.h"
#include "jit/Specialization.h"

#include <chrono>
#include <cstdio>

namespace kiln::jit {

/// How long a graph's compile must take before a note says so: a decode step with
/// dozens of kernels takes seconds, which a caller should not wait through unexplained.
static constexpr std::chrono::milliseconds kSlowCompileNote{1000};

kiln_graph *compileGraph(JitState &jit, const Source &source, const std::string &graph, const SemaOptions &options,
                         const FusionChoices &fusion) {
  // No lock, as for a kernel's compile: what the JIT's state holds for compiling does not
  // change after its creation and the disk cache is safe to share, so launches on other
  // threads go on while a graph compiles, and the log callback may call the JIT.
  std::string diagnostics;
  std::unique_ptr<LoweredGraph> lowered = lowerGraph(source, graph, options, fusion, diagnostics);
  if (!lowered)
    throw compileFailure(std::move(diagnostics));
  // A graph's kernels assume what dslc's do: aligned pointers, where no launch passes a
  // view that is not (codegen/GraphBundleBuilder.h); the runtime refuses a call that
  // breaks it.
  const codegen::CodegenOptions codegen = genericFacts().applyTo(jit.codegen);
  // The persistent kernel's own options (its workers per SM also bound the registers of
  // the graph's kernels without a dot, codegen/GraphBundleBuilder.cpp).
  const std::string key = KeyText(lowered->key)
                              .append(codegenKey(jit.target, codegen))
                              .add("workers_per_sm", codegen.workersPerSM)
                              .add("task_prefetch", codegen.taskPrefetch ? 1 : 0)
                              .digest();
  DiskCache::ExpectedGraph expected{graph, codegen::bundleTarget(jit.target), codegen::sourceHash(*lowered->module),
                                    {}, codegen.checked};
  for (const auto &p : lowered->graph->params())
    expected.params.push_back(rt::BundleParam{p->nameHint, p->type.dtype, p->type.pointer, 1});
  std::optional<rt::GraphBundle> bundle = jit.cache.loadGraph(key, expected);
  if (!bundle) {
    const auto start = std::chrono::steady_clock::now();
    bundle = generateGraphBundle(*lowered, jit.target, codegen, diagnostics);
    if (!bundle)
      throw compileFailure(std::move(diagnostics));
    jit.cache.storeGraph(key, *bundle);
    const auto took = std::chrono::steady_clock::now() - start;
    if (took >= kSlowCompileNote) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f", std::chrono::duration<double>(took).count());
      jit.log.note("graph '" + graph + "' compiled in " + seconds + " s (" + std::to_string(bundle->kernels.size()) +
                   " kernels" + (bundle->persistent ? " and its persistent kernel" : "") + ")" +
                   (jit.cache.enabled() ? "; cached for later runs" : ""));
    }
  }
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeGraphBundle(*bundle, error);
  if (bytes.empty())
    throw Failure{KILN_ERROR_INVALID_BUNDLE, "graph '" + graph + "': " + error};
  kiln_graph *loaded = nullptr;
  if (kiln_status s = kiln_graph_load_memory(jit.runtime, bytes.data(), bytes.size(), &loaded); s != KILN_SUCCESS)
    throw Failure{s, kiln_last_error()};
  return loaded;
}

} // namespace kiln::jit
