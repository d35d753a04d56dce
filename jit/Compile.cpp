//===- Compile.cpp - Kiln source to a bundle, in two halves ---------------===//

#include "jit/Compile.h"

#include "codegen/BundleBuilder.h"
#include "codegen/GraphBundleBuilder.h"
#include "ir/transforms/Pipeline.h"

#include <cstdio>
#include <sstream>

namespace kiln::jit {
namespace {

/// Renders diagnostics as dslc prints them (file:line:col, code, source line, caret).
struct DiagnosticText {
  explicit DiagnosticText(SourceManager &sources) : engine(sources, stream) { engine.setToolName("kiln"); }
  std::ostringstream stream;
  DiagnosticEngine engine;
};

/// Registers `source` in `module`'s source manager; nullopt (E0001) when unreadable.
std::optional<uint32_t> registerSource(const Source &source, ir::Module &module, DiagnosticEngine &diags) {
  if (source.text)
    return module.sources->addBuffer(source.name, *source.text);
  uint32_t file = module.sources->addName(source.name);
  if (module.sources->text(file))
    return file;
  diags.error(Location::commandLine(), DiagCode::FileNotReadable) << "cannot read '" << source.name << "'";
  return std::nullopt;
}

/// An IR attribute as key text that tells the kinds apart and keeps doubles exact.
std::string attrKeyText(const ir::Attr &value) {
  if (const auto *i = std::get_if<int64_t>(&value))
    return "int " + std::to_string(*i);
  if (const auto *d = std::get_if<double>(&value)) {
    char hex[64];
    std::snprintf(hex, sizeof hex, "%a", *d);
    return std::string("float ") + hex;
  }
  if (const auto *b = std::get_if<bool>(&value))
    return *b ? "bool true" : "bool false";
  return "other"; // const parameters are numbers or bools
}

} // namespace

/// The frontend for entry point `name` of `source` into `module`; false, with the
/// errors in `diags`, when it fails.
static bool compileEntry(const Source &source, const std::string &name, const SemaOptions &options,
                         ir::Module &module, DiagnosticEngine &diags) {
  SemaOptions forEntry = options;
  forEntry.kernel = name;
  std::optional<uint32_t> file = registerSource(source, module, diags);
  return file && compileToTileIR(*file, module, diags, forEntry);
}

/// The key lines every input of an entry point's Tile IR gives: the compiler, the
/// program text and file names, the entry and its const values, the pipeline that runs
/// on it and the caller's fusion choices.
static void addEntryKey(KeyText &key, const ir::Module &module, const ir::Kernel &entry, const char *pipeline,
                        const FusionChoices &fusion) {
  key.add("compiler", compilerFingerprint()).add("bundle-format", rt::kBundleFormatVersion);
  key.add("sources", codegen::sourceHash(module));
  for (uint32_t f = 0; f < module.sources->size(); ++f)
    key.add("file", module.sources->name(f)); // bundles and PTX debug lines name them
  key.add("kernel", entry.name);
  for (const auto &[name, value] : entry.constValues)
    key.add("const", name + " " + attrKeyText(value));
  key.add("num_warps", entry.numWarps).add("num_stages", entry.numStages).add("pipeline", pipeline);
  // Absent by default, so the keys of earlier entries still match.
  if (fusion.reductionSplit)
    key.add("reduction_split", fusion.reductionSplit);
  if (fusion.fuseQuantized)
    key.add("fuse_quantized", 1);
}

std::unique_ptr<LoweredKernel> lowerKernel(const Source &source, const std::string &kernel,
                                           const SemaOptions &options, const FusionChoices &fusion,
                                           std::string &diagnostics) {
  auto lowered = std::make_unique<LoweredKernel>();
  lowered->fusion = fusion;
  lowered->module = std::make_unique<ir::Module>();
  ir::Module &module = *lowered->module;
  DiagnosticText diags(*module.sources);
  if (!compileEntry(source, kernel, options, module, diags.engine) || !(lowered->kernel = module.findKernel(kernel))) {
    if (const ir::Kernel *graph = module.findGraph(kernel))
      diags.engine.error(graph->loc, DiagCode::Unsupported)
              .hint("compile it with kiln_jit_compile_graph_file (Jit::compile_graph_file in C++; kiln.compile "
                    "returns a graph in Python)")
          << "'" << kernel << "' is a graph, not a kernel";
    diagnostics = diags.stream.str();
    return nullptr;
  }
  KeyText &key = lowered->key;
  key.add("kiln-jit-cache", 1);
  addEntryKey(key, module, *lowered->kernel, "default", fusion);
  return lowered;
}

std::unique_ptr<LoweredGraph> lowerGraph(const Source &source, const std::string &graph, const SemaOptions &options,
                                         const FusionChoices &fusion, std::string &diagnostics) {
  auto lowered = std::make_unique<LoweredGraph>();
  lowered->fusion = fusion;
  // A task is one program: no split is a split over one, so both share one key.
  if (!lowered->fusion.reductionSplit)
    lowered->fusion.reductionSplit = 1;
  lowered->module = std::make_unique<ir::Module>();
  ir::Module &module = *lowered->module;
  DiagnosticText diags(*module.sources);
  if (!compileEntry(source, graph, options, module, diags.engine) || !(lowered->graph = module.findGraph(graph))) {
    if (const ir::Kernel *kernel = module.findKernel(graph))
      diags.engine.error(kernel->loc, DiagCode::Unsupported)
              .hint("compile it with kiln_jit_compile_file (Jit::compile_file in C++)")
          << "'" << graph << "' is a kernel, not a graph";
    diagnostics = diags.stream.str();
    return nullptr;
  }
  KeyText &key = lowered->key;
  key.add("kiln-jit-graph", 1).add("graph-bundle-format", rt::kGraphBundleFormatVersion);
  addEntryKey(key, module, *lowered->graph, "graph", lowered->fusion);
  return lowered;
}

bool listConfigs(const Source &source, const std::string &kernel, const SemaOptions &options,
                 std::optional<KernelAutotune> &out, std::string &diagnostics) {
  ir::Module module;
  DiagnosticText diags(*module.sources);
  std::optional<uint32_t> file = registerSource(source, module, diags.engine);
  if (file && listAutotuneConfigs(*file, module, diags.engine, options, kernel, out))
    return true;
  diagnostics = diags.stream.str();
  return false;
}

KeyText codegenKey(codegen::Target target, const codegen::CodegenOptions &options) {
  KeyText key;
  key.add("target", codegen::targetName(target)).add("opt", options.optLevel);
  key.add("aligned_pointers", options.assumeAlignedPointers).add("tensor_cores", options.useTensorCores);
  key.add("checked", options.checked);
  if (codegen::isNvptxTarget(target))
    key.add("libdevice", options.libdevicePath).add("libdevice_content", libdeviceFingerprint(options.libdevicePath));
  std::string divisibility;
  for (const auto &[index, divisor] : options.paramDivisibility)
    divisibility += std::to_string(index) + ":" + std::to_string(divisor) + " ";
  key.add("divisibility", divisibility);
  return key;
}

std::optional<rt::Bundle> generateBundle(LoweredKernel &lowered, codegen::Target target,
                                         const codegen::CodegenOptions &options, std::string &diagnostics) {
  ir::Module &module = *lowered.module;
  DiagnosticText diags(*module.sources);
  if (!lowered.optimized) {
    ir::PipelineOptions pipeline;
    pipeline.reductionSplit.forced = lowered.fusion.reductionSplit;
    pipeline.fusionPolicy.quantized = lowered.fusion.fuseQuantized;
    ir::setPipelineTarget(pipeline, codegen::targetName(target));
    if (!ir::runPipeline(module, pipeline, diags.engine)) {
      diagnostics = diags.stream.str();
      return std::nullopt;
    }
    lowered.optimized = true;
  }
  std::optional<codegen::CodegenResult> result = codegen::generate(module, *lowered.kernel, target, diags.engine, options);
  if (!result) {
    diagnostics = diags.stream.str();
    return std::nullopt;
  }
  return codegen::makeBundle(module, *lowered.kernel, target, options, *result);
}

std::optional<rt::GraphBundle> generateGraphBundle(LoweredGraph &lowered, codegen::Target target,
                                                   const codegen::CodegenOptions &options, std::string &diagnostics) {
  ir::Module &module = *lowered.module;
  DiagnosticText diags(*module.sources);
  // As dslc --emit=bundle builds a graph: a persistent worker runs every kind of task, so
  // the kernels share one num_warps, and a task is one program, so a reduction stays in
  // one unless the caller split it.
  codegen::unifyNumWarps(module);
  ir::PipelineOptions pipeline;
  pipeline.reductionSplit.forced = lowered.fusion.reductionSplit;
  pipeline.fusionPolicy.quantized = lowered.fusion.fuseQuantized;
  ir::setPipelineTarget(pipeline, codegen::targetName(target));
  std::optional<rt::GraphBundle> bundle;
  // SPIR-V gives no forward-progress guarantee between work-groups: there the bundle
  // holds the kernels alone, which run launch by launch.
  if (ir::runPipeline(module, pipeline, diags.engine))
    bundle = codegen::buildGraphBundle(module, *lowered.graph, target, options, codegen::isNvptxTarget(target),
                                       diags.engine);
  if (!bundle)
    diagnostics = diags.stream.str();
  return bundle;
}

} // namespace kiln::jit
