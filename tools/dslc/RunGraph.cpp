//===- RunGraph.cpp - dslc run of a graph on a GPU -----------------------------===//
#include "tools/dslc/RunGraph.h"

#include "codegen/BundleBuilder.h"
#include "ir/GraphDependencies.h"
#include "support/TaskTable.h"
#include "tools/driver/KernelArguments.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

namespace kiln::dslc {

void unifyNumWarps(ir::Module &module) {
  int64_t widest = 1;
  for (const auto &k : module.kernels)
    widest = std::max(widest, k->numWarps);
  for (const auto &k : module.kernels)
    k->numWarps = widest;
}

namespace {

/// "g.kiln:8:5", or "" where the launch has no location.
std::string whereIs(const ir::Module &module, const ir::Op &op) {
  const Location &loc = op.loc();
  if (!loc.valid() || loc.isCommandLine() || loc.file >= module.sources->size())
    return "";
  return std::string(module.sources->name(loc.file)) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

/// The bundle of the megakernel: its ABI (support/TaskTable.h) as parameters, and the
/// size of a launch record as the const RECORD_WORDS.
rt::Bundle megakernelBundle(const ir::Module &module, const ir::Kernel &graph, codegen::Target target,
                            const codegen::CodegenResult &result, unsigned recordWords, int64_t numWarps) {
  rt::Bundle b;
  b.kernelName = graph.name;
  b.entry = result.entry;
  b.params = {{"table", DType::U64, true, 1},     {"launches", DType::I32, false, 1},
              {"tasks", DType::I32, false, 1},    {"sync", DType::U32, true, 1},
              {"claim_base", DType::U32, false, 1}, {"timeout_ns", DType::I64, false, 1},
              {"trace", DType::U64, true, 1}};
  b.consts = {rt::ConstValue{"RECORD_WORDS", static_cast<int64_t>(recordWords)}};
  b.numWarps = static_cast<uint32_t>(numWarps);
  b.sharedBytes = static_cast<uint32_t>(result.sharedBytes);
  b.target = codegen::bundleTarget(target);
  b.compilerVersion = codegen::compilerVersion();
  b.sourceHash = codegen::sourceHash(module);
  if (graph.loc.valid() && !graph.loc.isCommandLine() && graph.loc.file < module.sources->size()) {
    b.sourceFile = std::string(module.sources->name(graph.loc.file));
    b.sourceLine = graph.loc.line;
    b.sourceColumn = graph.loc.col;
  }
  rt::CodeSection section;
  section.kind = rt::SectionKind::PTX;
  section.target = b.target;
  section.bytes.assign(result.ptx.begin(), result.ptx.end());
  b.sections.push_back(std::move(section));
  return b;
}

} // namespace

bool runGraphOnDevice(ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host, kiln::Runtime &gpu,
                      codegen::Target target, const codegen::CodegenOptions &codegenOptions,
                      const launch::GraphRunOptions &options, DiagnosticEngine &diags, TimingReport *timing) {
  // What one run launches, and what each launch must follow.
  std::vector<interp::GraphLaunchCall> calls;
  {
    TimingReport::Scope timer(timing, "run: the graph's launches");
    if (!driver::planGraphLaunches(module, graph, host, diags, calls))
      return false;
  }
  const ir::GraphDependencies deps = ir::analyzeGraphDependencies(module, graph);
  std::map<const ir::Op *, unsigned> slotOf;
  for (size_t i = 0; i < deps.launches.size(); ++i)
    slotOf[deps.launches[i].op] = static_cast<unsigned>(i);
  // The kernels, each once, in the module's order (the kinds of the megakernel).
  std::vector<const ir::Kernel *> kinds;
  std::map<const ir::Kernel *, unsigned> kindOf;
  for (const auto &k : module.kernels) {
    kindOf[k.get()] = static_cast<unsigned>(kinds.size());
    kinds.push_back(k.get());
  }
  std::map<unsigned, unsigned> runIndexOfSlot;
  std::vector<launch::PlannedLaunch> launches;
  for (const interp::GraphLaunchCall &call : calls) {
    // The interpreter refuses such a grid when it runs the launch; here nothing runs yet.
    for (unsigned d = 0; d < 3; ++d)
      if (call.grid[d] < 1 || call.grid[d] > std::numeric_limits<int32_t>::max()) {
        diags.error(call.op->loc(), DiagCode::BadGrid)
            << "graph '" << graph.name << "' launches kernel '" << call.kernel->name << "' on grid (" << call.grid[0]
            << ", " << call.grid[1] << ", " << call.grid[2] << "); every dimension must be between 1 and 2147483647";
        return false;
      }
    launch::PlannedLaunch l;
    auto slot = slotOf.find(call.op);
    if (slot == slotOf.end())
      KILN_ICE("a launch of graph '" + graph.name + "' is missing from its dependencies");
    l.slot = slot->second;
    auto kind = kindOf.find(call.kernel);
    if (kind == kindOf.end())
      KILN_ICE("graph '" + graph.name + "' launches a kernel the module lacks");
    l.kernel = kind->second;
    l.grid = call.grid;
    for (const interp::KernelArg &a : call.args) {
      launch::GraphArgument g;
      switch (a.kind) {
      case interp::KernelArg::Kind::Buffer:
        g.value.kind = launch::HostArg::Kind::Buffer;
        g.value.buffer = a.buffer;
        g.byteOffset = static_cast<uint64_t>(a.i) * dtypeBytes(host.buffers[a.buffer].dtype);
        break;
      case interp::KernelArg::Kind::Int:
        g.value.kind = launch::HostArg::Kind::Int;
        g.value.i = a.i;
        break;
      case interp::KernelArg::Kind::Float:
        g.value.kind = launch::HostArg::Kind::Float;
        g.value.f = a.f;
        break;
      }
      l.args.push_back(g);
    }
    const std::string where = whereIs(module, *call.op);
    l.what = "the launch of kernel '" + call.kernel->name + "'" + (where.empty() ? "" : " at " + where);
    l.label = call.kernel->name + (where.empty() ? "" : " (" + std::string(std::filesystem::path(where).filename()) + ")");
    runIndexOfSlot[l.slot] = static_cast<unsigned>(launches.size());
    launches.push_back(std::move(l));
  }
  // A dependency between two launches that both ran; one that holds only if two graph
  // parameters are one buffer counts when the host arguments make them one.
  auto rootOf = [&](unsigned slot, unsigned arg) -> std::optional<unsigned> {
    for (const ir::LaunchAccess &a : deps.launches[slot].accesses)
      if (a.arg == arg)
        return a.root;
    return std::nullopt;
  };
  for (const ir::GraphDependency &d : deps.dependencies) {
    auto from = runIndexOfSlot.find(d.from), to = runIndexOfSlot.find(d.to);
    if (from == runIndexOfSlot.end() || to == runIndexOfSlot.end())
      continue;
    if (d.mayAlias) {
      std::optional<unsigned> a = rootOf(d.from, d.fromArg), b = rootOf(d.to, d.toArg);
      if (a && b && *a < host.args.size() && *b < host.args.size() &&
          host.args[*a].kind == launch::HostArg::Kind::Buffer && host.args[*b].kind == launch::HostArg::Kind::Buffer &&
          host.args[*a].buffer != host.args[*b].buffer)
        continue;
    }
    launches[to->second].after.push_back(from->second);
  }

  // A kind some launch passes a view off a 16-byte boundary (`out + i * n`, n odd) is
  // compiled without assuming aligned pointers, as the runtime would refuse it.
  std::vector<bool> unaligned(kinds.size(), false);
  for (const launch::PlannedLaunch &l : launches)
    for (const launch::GraphArgument &a : l.args)
      if (a.value.kind == launch::HostArg::Kind::Buffer && a.byteOffset % 16)
        unaligned[l.kernel] = true;
  codegen::CodegenOptions unalignedOptions = codegenOptions;
  unalignedOptions.assumeAlignedPointers = false;

  // The code: each kernel on its own (the persistent mode needs only their signatures,
  // as its megakernel holds their code), and the megakernel over all of them.
  const bool persistent = options.mode == launch::GraphMode::Persistent;
  launch::CompiledGraph compiled;
  compiled.name = graph.name;
  compiled.slots = static_cast<unsigned>(deps.launches.size());
  {
    TimingReport::Scope timer(timing, "codegen: the graph's " + std::to_string(kinds.size()) + " kernel" +
                                          (kinds.size() == 1 ? "" : "s") + " for " +
                                          std::string(codegen::targetName(target)));
    for (size_t i = 0; i < kinds.size(); ++i) {
      const ir::Kernel *k = kinds[i];
      const codegen::CodegenOptions &cg = unaligned[i] ? unalignedOptions : codegenOptions;
      std::optional<codegen::CodegenResult> result = codegen::CodegenResult{};
      if (!persistent)
        result = codegen::generate(module, *k, target, diags, cg);
      if (!result)
        return false;
      rt::Bundle bundle = codegen::makeBundle(module, *k, target, cg, *result);
      // An instance's name (`scale[BLOCK=128]`) is no identifier.
      bundle.kernelName = codegen::entrySymbol(k->name);
      compiled.kernels.push_back(std::move(bundle));
    }
  }
  if (persistent && !kinds.empty()) {
    TimingReport::Scope timer(timing, "codegen: the persistent kernel");
    std::optional<codegen::CodegenResult> mega =
        codegen::generateMegakernel(module, graph, kinds, target, diags, codegenOptions, unaligned);
    if (!mega)
      return false;
    std::string error;
    compiled.megakernel = rt::serializeBundle(
        megakernelBundle(module, graph, target, *mega, codegen::taskRecordWords(kinds), kinds.front()->numWarps),
        error);
    if (compiled.megakernel.empty())
      KILN_ICE("the persistent kernel's bundle is invalid: " + error);
  }
  if (launches.empty())
    return true; // nothing runs: every launch sat under an `if` that was false
  return launch::runGraphOnGpu(gpu, compiled, launches, host, options, diags, timing);
}

} // namespace kiln::dslc
