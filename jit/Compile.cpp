//===- Compile.cpp - Kiln source to a bundle, in two halves ---------------===//

#include "jit/Compile.h"

#include "codegen/BundleBuilder.h"
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

std::unique_ptr<LoweredKernel> lowerKernel(const Source &source, const std::string &kernel,
                                           const SemaOptions &options, const FusionChoices &fusion,
                                           std::string &diagnostics) {
  auto lowered = std::make_unique<LoweredKernel>();
  lowered->fusion = fusion;
  lowered->module = std::make_unique<ir::Module>();
  ir::Module &module = *lowered->module;
  DiagnosticText diags(*module.sources);
  SemaOptions forKernel = options;
  forKernel.kernel = kernel;
  std::optional<uint32_t> file = registerSource(source, module, diags.engine);
  if (!file || !compileToTileIR(*file, module, diags.engine, forKernel) || !(lowered->kernel = module.findKernel(kernel))) {
    if (module.findGraph(kernel))
      diags.engine.error(module.findGraph(kernel)->loc, DiagCode::Unsupported)
          << "'" << kernel << "' is a graph, which the JIT does not compile yet (dslc run runs it on the interpreter)";
    diagnostics = diags.stream.str();
    return nullptr;
  }
  const ir::Kernel &k = *lowered->kernel;
  KeyText &key = lowered->key;
  key.add("kiln-jit-cache", 1).add("compiler", compilerFingerprint()).add("bundle-format", rt::kBundleFormatVersion);
  key.add("sources", codegen::sourceHash(module));
  for (uint32_t f = 0; f < module.sources->size(); ++f)
    key.add("file", module.sources->name(f)); // bundles and PTX debug lines name them
  key.add("kernel", k.name);
  for (const auto &[name, value] : k.constValues)
    key.add("const", name + " " + attrKeyText(value));
  key.add("num_warps", k.numWarps).add("num_stages", k.numStages).add("pipeline", "default");
  // Absent by default, so the keys of earlier entries still match.
  if (fusion.reductionSplit)
    key.add("reduction_split", fusion.reductionSplit);
  if (fusion.fuseQuantized)
    key.add("fuse_quantized", 1);
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

} // namespace kiln::jit
