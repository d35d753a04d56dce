//===- dslc.cpp - The Kiln compiler driver --------------------------------===//
//
//   dslc FILE [--kernel K] [-D N=V]... [--emit=ast|tir|llvm|ptx|spirv|spirv-asm|bundle|opencl|cuda]
//        [--target=sm_80|sm_90|sm_90a|spirv64] [--assume-multiple NAME=N]... [--reduction-split=S]
//        [-o OUT]
//   dslc run FILE --kernel K --grid X[,Y[,Z]] [-D N=V]... [--arg NAME=VALUE]...
//        [--device cuda|ze|interp]
//
// The driver is a straight line: load the input into Tile IR (frontend or .tir parser),
// run the pipeline (ir/transforms/Pipeline.cpp), then emit, generate code (codegen/) or
// run — on the reference interpreter, or on a GPU through the runtime (runtime/) from a
// bundle made in memory. Every stage can be stopped at with --emit, and .tir input
// starts from the middle. docs/dslc.md describes every option.
//
//===----------------------------------------------------------------------===//
#include "codegen/BundleBuilder.h"
#include "codegen/GraphBundleBuilder.h"
#include "codegen/Codegen.h"
#include "codegen/ResourceUsage.h"
#include "codegen/SourceEmitter.h"
#include "frontend/ASTPrinter.h"
#include "frontend/Parser.h"
#include "ir/Printer.h"
#include "ir/GraphDependencies.h"
#include "ir/interp/Interpreter.h"
#include "ir/transforms/Pipeline.h"
#include "runtime/Bundle.h"
#include "runtime/GraphBundle.h"
#include "support/LargeStack.h"
#include "support/ToolOutput.h"
#include "tools/driver/Driver.h"
#include "tools/driver/KernelArguments.h"
#include "tools/driver/VerifyDiagnostics.h"
#include "tools/dslc/PredicateMask.h"
#include "tools/dslc/RunGraph.h"
#include "tools/launch/DeviceLaunch.h"
#include "tools/launch/GraphRun.h"
#include "support/BlockMask.h"
#include "tools/launch/HostArguments.h"

#include "llvm/IR/PrintPasses.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace kiln;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory KilnCategory("dslc options");
cl::SubCommand RunCommand("run", "Run a kernel on a GPU (CUDA, Level Zero) or the reference interpreter, or a graph "
                                 "on the interpreter");

// Options of both `dslc FILE` and `dslc run FILE`.
// Not cl::Required: a missing file is reported like every other error (coded, and JSON
// under --diagnostics=json), not by the option parser.
cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input .kiln or .tir file>"),
                               cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
                               cl::cat(KilnCategory));
cl::opt<std::string> KernelName("kernel", cl::desc("The kernel to compile or run (default: every kernel at its defaults)"),
                                cl::value_desc("name"), cl::sub(cl::SubCommand::getTopLevel()),
                                cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> NumWarpsText("num-warps",
                                  cl::desc("Warps per program, overriding the kernel's @num_warps (a power of two "
                                           "from 1 to 32)"),
                                  cl::value_desc("N"), cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
                                  cl::cat(KilnCategory));
cl::opt<std::string> NumStagesText("num-stages",
                                   cl::desc("Buffers of the loops' streamed operands, overriding the kernel's "
                                            "@num_stages (1 to 8; 1: no streaming)"),
                                   cl::value_desc("N"), cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
                                   cl::cat(KilnCategory));
cl::list<std::string> Defines("D", cl::desc("Set a const parameter: -D NAME=VALUE (overrides its default)"),
                              cl::value_desc("NAME=VALUE"), cl::Prefix, cl::sub(cl::SubCommand::getTopLevel()),
                              cl::sub(RunCommand), cl::cat(KilnCategory));
cl::list<std::string> IncludeDirs("I", cl::desc("Add a directory to search for imports (after the importing file's)"),
                                  cl::value_desc("dir"), cl::Prefix, cl::sub(cl::SubCommand::getTopLevel()),
                                  cl::sub(RunCommand), cl::cat(KilnCategory));
enum class DiagStyle { Text, Json };
cl::opt<DiagStyle> Diagnostics("diagnostics", cl::desc("How to print errors"), cl::init(DiagStyle::Text),
                               cl::values(clEnumValN(DiagStyle::Text, "text", "file:line:col, source line and caret (default)"),
                                          clEnumValN(DiagStyle::Json, "json", "one JSON object per line")),
                               cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> NoOptimize("O0", cl::desc("Skip the Tile IR pass pipeline"), cl::sub(cl::SubCommand::getTopLevel()),
                         cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> Checked("checked",
                      cl::desc("Checked mode: bounds-check every load, store and atomic against the buffer passed "
                               "for its pointer; the first bad access is reported with its line and program, and "
                               "none leaves its buffer (docs/checked.md)"),
                      cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> TaskPrefetch("task-prefetch",
                           cl::desc("Graphs' persistent kernel: a task that must wait for the launch before it "
                                    "first prefetches into L2 what it will read (docs/graphs.md)"),
                             cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> WorkersPerSMText(
    "workers-per-sm",
    cl::desc("Graphs' persistent kernel: compile it so that N workers (programs) fit on one SM, capping its "
             "registers (1 to 8; default 2; docs/graphs.md)"),
    cl::value_desc("N"), cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> NoFuseReductions("no-fuse-reductions",
                                cl::desc("Keep cascaded reduction loops as written (no reduction-chain fusion)"),
                                cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> FuseQuantized(
    "fuse-quantized",
    cl::desc("Also fuse reductions through a rounding to f16 or f8 (dynamic-scale quantization inside a GEMM): "
             "each block is rounded at the scale known when it is read, so results differ from the program as "
             "written within the format's precision"),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> ExplainFusion("explain-fusion",
                            cl::desc("Report, as remarks on stderr, which reduction loops were fused into one pass "
                                     "and why the others were not"),
                            cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> ExplainSparsity("explain-sparsity",
                              cl::desc("Report, as remarks on stderr, how each blocks(mask, rb) loop is mapped onto "
                                       "programs (row-wise or block-wise) and why"),
                              cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> ResourceUsageOpt(
    "resource-usage",
    cl::desc("After code generation, print on stderr the kernel's threads and shared memory per program, its registers "
             "and spills (from ptxas: $KILN_PTXAS, PATH or /usr/local/cuda/bin) and its occupancy on the target; alone it "
             "compiles for sm_90 and writes no code unless -o is given"),
    cl::sub(cl::SubCommand::getTopLevel()), cl::cat(KilnCategory));
cl::opt<bool> ExplainGraph("explain-graph",
                           cl::desc("With --kernel GRAPH: print on stderr each launch of the graph, what it reads "
                                    "and writes, and what it must wait for and why"),
                           cl::sub(cl::SubCommand::getTopLevel()), cl::cat(KilnCategory));
cl::opt<std::string> SparseMappingText(
    "sparse-mapping",
    cl::desc("Map each fused chain over a blocks() loop row-wise (one program walks its block row) or block-wise "
             "(the row's blocks shared among programs whose partial states merge; --reduction-split=S sets the "
             "programs per row); default auto: a cost model decides from the mask when it is known"),
    cl::value_desc("row|block|auto"), cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
    cl::cat(KilnCategory));
// Read as text and checked here, so that a bad value is a coded diagnostic.
cl::opt<std::string> ReductionSplitText(
    "reduction-split",
    cl::desc("Split the range of each fused reduction chain over S programs per program of the grid, their "
             "partial states merged by the last to finish, or on sm_90, where a later loop walks the range "
             "again and S <= 8, by every program of a thread-block cluster (1: never split; default: a cost "
             "model decides)"),
    cl::value_desc("S"), cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> LibdevicePath("libdevice",
                                   cl::desc("libdevice bitcode, linked for math functions on NVIDIA targets "
                                            "(default: the CUDA toolkit's)"),
                                   cl::value_desc("file"), cl::init(codegen::CodegenOptions{}.libdevicePath),
                                   cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
                                   cl::cat(KilnCategory));
// --print-after-all and --time-passes are LLVM's own options (libLLVM registers them);
// dslc adopts them into its category (adoptLLVMOption) and reads their values.
bool PrintAfterAll = false;
bool TimePasses = false;

// Options of `dslc FILE`. --emit, --target and --assume-multiple are read as text and
// checked here, so that a bad value or a bad combination is a coded diagnostic (and
// JSON under --diagnostics=json) like every other error.
cl::opt<std::string> EmitText("emit",
                              cl::desc("What to produce: ast, tir (the default), llvm, ptx, spirv, spirv-asm, "
                                       "bundle (a .kbin for the runtime; needs -o or a redirected stdout) or "
                                       "opencl or cuda (the kernel as OpenCL C or CUDA C++ source)"),
                              cl::value_desc("kind"), cl::cat(KilnCategory));
cl::opt<std::string> TargetText("target",
                                cl::desc("Code-generation target: sm_80, sm_90, sm_90a (PTX) or spirv64 (SPIR-V); "
                                         "default sm_90, spirv64 for --emit=spirv|spirv-asm; alone it means "
                                         "--emit=ptx or --emit=spirv"),
                                cl::value_desc("name"), cl::cat(KilnCategory));
cl::list<std::string> AssumeMultiple("assume-multiple",
                                     cl::desc("Compile assuming integer parameter NAME is always a multiple of N "
                                              "(a power of two) — vectorizes strided accesses; recorded in the "
                                              "bundle, and launches that break it are refused"),
                                     cl::value_desc("NAME=N"), cl::cat(KilnCategory));
cl::opt<std::string> OutputFile("o", cl::desc("Write the output here instead of stdout"), cl::value_desc("file"),
                                cl::cat(KilnCategory));
cl::opt<bool> PrintLocations("print-locations", cl::desc("Print each Tile IR op's source location"),
                             cl::cat(KilnCategory));
cl::opt<bool> ListBuiltins("list-builtins",
                           cl::desc("Print every builtin function with its parameters (optional ones end in ?; "
                                    "docs/builtins.md describes each) and exit"),
                           cl::cat(KilnCategory));
cl::opt<std::string> MaskText("mask",
                              cl::desc("The block mask the kernel will be launched with, for the sparse mapping's "
                                       "cost model (and --explain-sparsity): a 2-D bool .npy file or "
                                       "PRED(ROWS,COLS,...), built on the interpreter"),
                              cl::value_desc("NAME=VALUE"), cl::cat(KilnCategory));
cl::opt<bool> VerifyDiagnostics("verify-diagnostics",
                                cl::desc("Check the diagnostics against the input's expected-error comments"),
                                cl::cat(KilnCategory));

// Options of `dslc run FILE`.
cl::opt<std::string> Grid("grid", cl::desc("Grid of programs: X[,Y[,Z]]"), cl::value_desc("X,Y,Z"),
                          cl::sub(RunCommand), cl::cat(KilnCategory));
cl::list<std::string> Args("arg", cl::desc("A kernel argument: a .npy file for a pointer, a literal for a scalar"),
                           cl::value_desc("NAME=VALUE"), cl::sub(RunCommand), cl::cat(KilnCategory));
// --device and --max-steps are read as text and checked here, so that a bad value is a
// coded diagnostic (and JSON under --diagnostics=json) like every other error.
cl::opt<std::string> DeviceName("device",
                                cl::desc("Where to run: cuda, ze (Level Zero) or interp (the reference interpreter); "
                                         "default: CUDA, else Level Zero, else the interpreter, saying which"),
                                cl::value_desc("cuda|ze|interp"), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> MaxStepsText("max-steps", cl::desc("Interpreter: stop after this many steps of work (an op's elements, a dot's multiply-adds; 0: no limit)"),
                                  cl::value_desc("N"), cl::init("4000000000"), cl::sub(RunCommand),
                                  cl::cat(KilnCategory));

cl::opt<std::string> RepeatText("repeat",
                                cl::desc("On a GPU: run N times on the same device buffers (default 1); a kernel's files "
                                         "get the first launch's results, a graph's the last run's"),
                                cl::value_desc("N"), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<bool> TimeRuns("time", cl::desc("On a GPU: time each launch (each run of a graph) with device events"),
                       cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> GraphModeText("graph-mode",
                                   cl::desc("How a GPU runs a graph: persistent (one megakernel whose workers run "
                                            "the launches' programs as tasks; the default on CUDA), cuda-graph (the "
                                            "launches recorded once as a CUDA graph) or launches (one launch after "
                                            "another; the only mode on Level Zero)"),
                                   cl::value_desc("persistent|cuda-graph|launches"), cl::sub(RunCommand),
                                   cl::cat(KilnCategory));
cl::opt<std::string> GraphWaitTimeoutText(
    "graph-wait-timeout",
    cl::desc("The persistent kernel's watchdog: a task that waits longer than this for the tasks it depends on "
             "stops the run with an error (milliseconds, default 10000)"),
    cl::value_desc("MS"), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> TracePath("trace",
                               cl::desc("A graph run as one persistent kernel: write its last run's tasks as a "
                                        "Chrome / Perfetto trace (a row per worker, a slice per task) and print "
                                        "how the workers spent their time"),
                               cl::value_desc("trace.json"), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> GraphWorkersText("graph-workers",
                                      cl::desc("Programs of the persistent kernel (default: as many as the GPU "
                                               "runs at once)"),
                                      cl::value_desc("N"), cl::sub(RunCommand), cl::cat(KilnCategory));

/// Parses --max-steps; reports E0600 on a malformed value.
std::optional<uint64_t> maxSteps(DiagnosticEngine &diags) {
  const std::string &text = MaxStepsText;
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text)
    ok &= c >= '0' && c <= '9';
  if (ok)
    value = std::stoull(text);
  else
    diags.error(Location::commandLine(), DiagCode::RunArgument) << "--max-steps needs a non-negative integer, got '"
                                                                << text << "'";
  return ok ? std::optional<uint64_t>(value) : std::nullopt;
}

/// The folder of Kiln's standard library: $KILN_STDLIB_DIR, else an installed tree's
/// (share/kiln/stdlib beside the bin/ holding dslc, as cmake --install lays it out),
/// else the source tree's.
std::string stdlibDir() {
  const char *dir = std::getenv("KILN_STDLIB_DIR");
  if (dir && *dir)
    return dir;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = self.parent_path().parent_path() / "share" / "kiln" / "stdlib";
    if (std::filesystem::is_directory(installed, ec))
      return installed.string();
  }
  return KILN_STDLIB_DIR;
}

/// `text` as an integer from 1 to `most` (at most 9 digits, nothing else), or 0.
int64_t countOption(const std::string &text, int64_t most) {
  const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t value = digits ? std::stoll(text) : 0;
  return value <= most ? value : 0;
}

/// The code-generation settings of the command line: libdevice, checked mode, and how
/// a graph's persistent kernel is built (--task-prefetch, --workers-per-sm, checked by
/// semaOptions).
codegen::CodegenOptions commandLineCodegenOptions() {
  codegen::CodegenOptions cg;
  cg.libdevicePath = LibdevicePath;
  cg.checked = Checked;
  cg.taskPrefetch = TaskPrefetch;
  if (WorkersPerSMText.getNumOccurrences())
    cg.workersPerSM = countOption(WorkersPerSMText, 8);
  return cg;
}

SemaOptions semaOptions(DiagnosticEngine &diags, bool &ok) {
  SemaOptions options;
  options.includeDirs.assign(IncludeDirs.begin(), IncludeDirs.end());
  // Last, the folder that holds stdlib/, so `import "stdlib/softmax.kiln";` works from
  // anywhere (LANGUAGE.md, Items).
  std::filesystem::path stdlib = std::filesystem::path(stdlibDir()).lexically_normal();
  if (!stdlib.has_filename()) // "lib/stdlib/"
    stdlib = stdlib.parent_path();
  options.includeDirs.push_back(stdlib.parent_path().string());
  ok = driver::parseDefines(std::vector<std::string>(Defines.begin(), Defines.end()), options.defines, diags);
  // --num-warps and --num-stages: what an @autotune config's num_warps/num_stages set.
  auto launchSetting = [&](const cl::opt<std::string> &opt, const char *name, int64_t most, bool powerOfTwo,
                           std::optional<int64_t> &out) {
    if (!opt.getNumOccurrences())
      return;
    const std::string &text = opt;
    const int64_t value = countOption(text, most);
    if (value >= 1 && (!powerOfTwo || (value & (value - 1)) == 0)) {
      out = value;
      return;
    }
    diags.error(Location::commandLine(), DiagCode::BadOption)
        << "--" << name << " needs " << (powerOfTwo ? "a power of two" : "a number") << " from 1 to " << most
        << ", got '" << text << "'";
    ok = false;
  };
  launchSetting(NumWarpsText, "num-warps", 32, true, options.numWarps);
  launchSetting(NumStagesText, "num-stages", 8, false, options.numStages);
  if (WorkersPerSMText.getNumOccurrences() && countOption(WorkersPerSMText, 8) < 1) {
    diags.error(Location::commandLine(), DiagCode::BadOption)
        << "--workers-per-sm needs a number from 1 to 8, got '" << std::string(WorkersPerSMText) << "'";
    ok = false;
  }
  if (!KernelName.empty())
    options.kernel = KernelName;
  return options;
}

/// --reduction-split: 0 when absent (the cost model decides); nullopt, after E0900, when
/// it is not an integer from 1 to the most segments there may be.
std::optional<int64_t> forcedSplit(DiagnosticEngine &diags) {
  if (!ReductionSplitText.getNumOccurrences())
    return 0;
  const std::string &text = ReductionSplitText;
  if (int64_t value = countOption(text, ir::kMaxSegments))
    return value;
  auto d = diags.error(Location::commandLine(), DiagCode::BadOption);
  d << "--reduction-split needs a number of segments from 1 to " << ir::kMaxSegments << ", got '" << text << "'";
  d.hint("--reduction-split=1 keeps every reduction in one program; leave it out to let the cost model decide");
  return std::nullopt;
}

/// The statistics of the first block mask of `kernel`, which the sparse mapping's cost
/// model reads, from the arrays the launcher built for it; none without a mask.
std::optional<BlockMaskStats> maskStats(const ir::Kernel &kernel, const launch::HostArguments &host) {
  if (kernel.blockMasks.empty())
    return std::nullopt;
  const launch::Signature signature = driver::signatureOf(kernel);
  return launch::maskArgumentStats(host, kernel.blockMasks.front().firstParam, signature.masks.front());
}

/// --sparse-mapping: auto when absent; nullopt, after E0900, when it is none of the three.
std::optional<ir::SparseMapping> sparseMapping(DiagnosticEngine &diags) {
  if (!SparseMappingText.getNumOccurrences())
    return ir::SparseMapping::Auto;
  if (auto m = ir::parseSparseMapping(SparseMappingText))
    return m;
  diags.error(Location::commandLine(), DiagCode::BadOption)
          .hint("row: one program walks each block row; block: the row's blocks are shared among programs")
      << "--sparse-mapping takes row, block or auto, got '" << SparseMappingText << "'";
  return std::nullopt;
}

/// `programs`: the size of the grid the kernel will run on, when known (dslc run);
/// `target`: the code-generation target the passes make their choices for.
/// `mask`: the statistics of the kernel's block mask, when the caller has it (dslc run).
ir::PipelineOptions pipelineOptions(TimingReport *timing, DiagnosticEngine &diags, int64_t forcedSegments,
                                    std::optional<int64_t> programs, codegen::Target target,
                                    std::optional<BlockMaskStats> mask = std::nullopt) {
  ir::PipelineOptions options;
  options.printAfterAll = PrintAfterAll;
  options.timing = timing;
  options.fuseReductions = !NoFuseReductions;
  options.fusionPolicy.quantized = FuseQuantized;
  options.reductionSplit.forced = forcedSegments;
  options.reductionSplit.programs = programs;
  options.reductionSplit.sparse.mapping = sparseMapping(diags).value_or(ir::SparseMapping::Auto);
  if (options.reductionSplit.sparse.mapping == ir::SparseMapping::Block)
    options.reductionSplit.sparse.segments = forcedSegments;
  options.reductionSplit.sparse.mask = mask;
  ir::setPipelineTarget(options, codegen::targetName(target));
  if (ExplainFusion)
    options.fusionRemarks = &diags;
  if (ExplainSparsity)
    options.sparsityRemarks = &diags;
  return options;
}

//===--------------------------------------------------------------------===//
// --emit and --target
//===--------------------------------------------------------------------===//

enum class EmitKind { AST, TIR, LLVM, PTX, SPIRV, SPIRVAsm, Bundle, OpenCL, Cuda };

constexpr std::pair<EmitKind, const char *> kEmitNames[] = {
    {EmitKind::AST, "ast"},     {EmitKind::TIR, "tir"},         {EmitKind::LLVM, "llvm"},
    {EmitKind::PTX, "ptx"},     {EmitKind::SPIRV, "spirv"},     {EmitKind::SPIRVAsm, "spirv-asm"},
    {EmitKind::Bundle, "bundle"},  {EmitKind::OpenCL, "opencl"},   {EmitKind::Cuda, "cuda"},
};

std::string emitName(EmitKind k) {
  for (auto [kind, name] : kEmitNames)
    if (kind == k)
      return name;
  return "?";
}

/// --emit=opencl|cuda: the Tile IR printed as source (codegen/SourceEmitter.h).
bool printsSource(EmitKind k) { return k == EmitKind::OpenCL || k == EmitKind::Cuda; }
/// Code generation through LLVM.
bool generatesCode(EmitKind k) { return k != EmitKind::AST && k != EmitKind::TIR && !printsSource(k); }
bool isBinary(EmitKind k) { return k == EmitKind::SPIRV || k == EmitKind::Bundle; }

/// What `dslc FILE` produces, after --emit and --target are checked against each other.
struct EmitPlan {
  EmitKind kind = EmitKind::TIR;
  codegen::Target target = codegen::Target::SM90; ///< when generatesCode(kind)
  bool discardCode = false; ///< generate it, write nothing (--resource-usage alone)
};

/// --resource-usage: the figures of the generated kernel on stderr, as a line of text or,
/// with --diagnostics=json, a JSON object {"resource_usage": {...}}.
void printResourceUsage(const std::string &kernel, codegen::Target target, const codegen::CodegenResult &result) {
  const codegen::ResourceUsage usage = codegen::resourceUsage(kernel, target, result);
  if (Diagnostics == DiagStyle::Json)
    std::cerr << "{\"resource_usage\":" << codegen::toJson(usage) << "}\n";
  else
    std::cerr << "dslc: resource usage of '" << kernel << "' on " << codegen::targetName(target) << ": "
              << codegen::describe(usage) << "\n";
}

void optionError(DiagnosticEngine &diags, const std::string &message, const std::string &hint) {
  auto d = diags.error(Location::commandLine(), DiagCode::BadOption);
  d << message;
  if (!hint.empty())
    d.hint(hint);
}

/// Resolves --emit and --target: defaults (--emit=ptx alone means sm_90, --emit=spirv
/// spirv64, --target alone its target's code) and mismatches (E0900).
std::optional<EmitPlan> planEmit(DiagnosticEngine &diags) {
  bool ok = true;
  std::optional<EmitKind> kind;
  if (EmitText.getNumOccurrences()) {
    for (auto [k, name] : kEmitNames)
      if (EmitText == name)
        kind = k;
    if (!kind) {
      optionError(diags, "unknown --emit kind '" + EmitText + "'",
                  "write --emit=ast, tir, llvm, ptx, spirv, spirv-asm, bundle, opencl or cuda");
      ok = false;
    }
  }
  std::optional<codegen::Target> target;
  if (TargetText.getNumOccurrences()) {
    target = codegen::parseTarget(TargetText);
    if (!target) {
      optionError(diags, "unknown target '" + TargetText + "'",
                  "write --target=sm_80, sm_90 or sm_90a (NVIDIA PTX), or --target=spirv64 (SPIR-V, Level Zero)");
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;

  EmitPlan plan;
  if (kind && printsSource(*kind)) {
    // The passes choose as for the devices that take the source: SPIR-V's for OpenCL C,
    // sm_80's for CUDA C++ (which must also build for sm_80).
    plan.kind = *kind;
    const codegen::Target natural = *kind == EmitKind::OpenCL ? codegen::Target::SPIRV64 : codegen::Target::SM80;
    plan.target = natural;
    const std::string flag = "--emit=" + emitName(plan.kind);
    if (target && *target != natural) {
      optionError(diags,
                  flag + " writes " + (*kind == EmitKind::OpenCL ? "OpenCL C" : "CUDA C++") +
                      ", compiled as for --target=" + std::string(codegen::targetName(natural)) + ", not " + TargetText,
                  "leave --target out");
      ok = false;
    }
    if (ResourceUsageOpt) {
      optionError(diags, "--resource-usage reports on generated code, not on " + flag,
                  "use it with --emit=ptx, spirv or bundle");
      ok = false;
    }
    if (Checked || !AssumeMultiple.empty()) {
      optionError(diags, std::string(Checked ? "--checked" : "--assume-multiple") + " is not printed by " + flag,
                  "use it with --emit=ptx, spirv or bundle");
      ok = false;
    }
    return ok ? std::optional<EmitPlan>(plan) : std::nullopt;
  }
  plan.kind = kind ? *kind
              : target ? (codegen::isNvptxTarget(*target) ? EmitKind::PTX : EmitKind::SPIRV)
              : ResourceUsageOpt ? EmitKind::PTX
                                 : EmitKind::TIR;
  // --resource-usage alone compiles to learn the figures; the code goes only to -o.
  plan.discardCode = ResourceUsageOpt && !kind && !target && !OutputFile.getNumOccurrences();
  if (ResourceUsageOpt && !generatesCode(plan.kind)) {
    optionError(diags, "--resource-usage reports on generated code, not on --emit=" + emitName(plan.kind),
                "use it alone, or with --emit=ptx, llvm, spirv, spirv-asm or bundle");
    return std::nullopt;
  }
  if (!generatesCode(plan.kind)) {
    // The passes make the target's choices (its SMs, clusters, rows held on chip), so
    // --emit=tir shows the Tile IR compiled for a target; the AST has none.
    if (target && plan.kind == EmitKind::TIR) {
      plan.target = *target;
    } else if (target) {
      optionError(diags, "--target applies to code generation and the Tile IR, not to --emit=" + emitName(plan.kind),
                  "use --emit=tir, llvm, ptx, spirv, spirv-asm or bundle with --target, or leave --target out");
      ok = false;
    }
    if (!AssumeMultiple.empty()) {
      optionError(diags, "--assume-multiple applies to code generation, not to --emit=" + emitName(plan.kind),
                  "use it with --emit=llvm, ptx, spirv, spirv-asm or bundle");
      ok = false;
    }
    return ok ? std::optional<EmitPlan>(plan) : std::nullopt;
  }
  bool wantsSpirv = plan.kind == EmitKind::SPIRV || plan.kind == EmitKind::SPIRVAsm;
  plan.target = target ? *target : wantsSpirv ? codegen::Target::SPIRV64 : codegen::Target::SM90;
  std::string targetText(codegen::targetName(plan.target));
  if (plan.kind == EmitKind::PTX && !codegen::isNvptxTarget(plan.target)) {
    optionError(diags, "--emit=ptx needs an NVIDIA target (sm_80, sm_90, sm_90a), but --target=" + targetText +
                           " produces SPIR-V",
                "use --emit=spirv or --emit=spirv-asm for spirv64, or --target=sm_90 for PTX");
    ok = false;
  }
  if (wantsSpirv && codegen::isNvptxTarget(plan.target)) {
    optionError(diags, "--emit=" + emitName(plan.kind) + " needs --target=spirv64, but --target=" + targetText +
                           " produces PTX",
                "use --emit=ptx for " + targetText + ", or --target=spirv64 (the default for --emit=" +
                    emitName(plan.kind) + ")");
    ok = false;
  }
  return ok ? std::optional<EmitPlan>(plan) : std::nullopt;
}

/// --assume-multiple NAME=N before the kernel is known: the form and N.
struct Assumption {
  std::string name;
  int64_t multiple;
  std::string raw;
};

std::optional<std::vector<Assumption>> parseAssumptions(DiagnosticEngine &diags) {
  std::vector<Assumption> out;
  bool ok = true;
  for (const std::string &raw : AssumeMultiple) {
    size_t eq = raw.find('=');
    std::string name = raw.substr(0, eq);
    if (eq == std::string::npos || name.empty() || eq + 1 == raw.size()) {
      optionError(diags, "malformed --assume-multiple '" + raw + "'",
                  "write --assume-multiple NAME=N with an integer parameter and a power of two, e.g. "
                  "--assume-multiple n_cols=16");
      ok = false;
      continue;
    }
    std::string text = raw.substr(eq + 1);
    bool overflow = false;
    std::optional<int64_t> n = launch::parseIntLiteral(text, overflow);
    if (!n || *n < 1 || *n > (int64_t{1} << 30) || (*n & (*n - 1)) != 0) {
      optionError(diags, "--assume-multiple " + raw + ": '" + text + "' is not a power of two from 1 to 1073741824",
                  "the runtime checks divisibility by powers of two: 2, 4, 8, 16, ...");
      ok = false;
      continue;
    }
    bool repeated = false;
    for (const Assumption &a : out)
      repeated |= a.name == name;
    if (repeated) {
      optionError(diags, "--assume-multiple names parameter '" + name + "' more than once", "");
      ok = false;
      continue;
    }
    out.push_back(Assumption{name, *n, raw});
  }
  return ok ? std::optional<std::vector<Assumption>>(out) : std::nullopt;
}

/// Turns the assumptions into CodegenOptions::paramDivisibility for `kernel`; each must
/// name one of its integer runtime parameters (E0900 otherwise).
bool applyAssumptions(const std::vector<Assumption> &assumptions, const ir::Kernel &kernel,
                      codegen::CodegenOptions &options, DiagnosticEngine &diags) {
  bool ok = true;
  launch::Signature signature = driver::signatureOf(kernel);
  std::string integers;
  for (const launch::ParamSpec &p : signature.params)
    if (!p.pointer && launch::dtypeIsInteger(p.dtype))
      integers += (integers.empty() ? "" : ", ") + launch::paramSpelling(p);
  for (const Assumption &a : assumptions) {
    std::optional<unsigned> index;
    for (unsigned i = 0; i < signature.params.size(); ++i)
      if (signature.params[i].name == a.name)
        index = i;
    if (!index) {
      bool isConst = false;
      for (const auto &c : kernel.constValues)
        isConst |= c.first == a.name;
      optionError(diags,
                  isConst ? "--assume-multiple " + a.raw + ": '" + a.name + "' is a const parameter of kernel '" +
                                kernel.name + "'; its value is compiled in already"
                          : "--assume-multiple " + a.raw + ": kernel '" + kernel.name + "' has no parameter '" +
                                a.name + "'",
                  integers.empty() ? "kernel '" + kernel.name + "' has no integer parameters"
                                   : "its integer parameters are " + integers);
      ok = false;
      continue;
    }
    const launch::ParamSpec &p = signature.params[*index];
    if (p.pointer || !launch::dtypeIsInteger(p.dtype)) {
      optionError(diags,
                  "--assume-multiple " + a.raw + ": parameter '" + launch::paramSpelling(p) + "' is " +
                      (p.pointer ? "a pointer (pointers are always assumed 16-byte aligned)"
                                 : "not an integer"),
                  integers.empty() ? "kernel '" + kernel.name + "' has no integer parameters"
                                   : "its integer parameters are " + integers);
      ok = false;
      continue;
    }
    if (a.multiple > 1)
      options.paramDivisibility.emplace_back(*index, a.multiple);
  }
  return ok;
}

/// The one kernel of `module` that a code-generation or run command works on; E0106
/// listing them when there are several.
const ir::Kernel *singleKernel(const ir::Module &module, const std::string &what, DiagnosticEngine &diags) {
  if (module.kernels.size() == 1)
    return module.kernels.front().get();
  if (module.kernels.empty()) {
    diags.error(Location::commandLine(), DiagCode::UnknownKernel) << "'" << InputFile << "' defines no kernel; " << what;
    return nullptr;
  }
  std::string names;
  for (const auto &k : module.kernels)
    names += (names.empty() ? "" : ", ") + k->name;
  diags.error(Location::commandLine(), DiagCode::UnknownKernel).hint("choose one with --kernel NAME")
      << "'" << InputFile << "' has " << module.kernels.size() << " kernels (" << names << "); " << what;
  return nullptr;
}

/// `dslc FILE --emit=ast`: the syntax tree of the one file, no imports followed.
int emitAST(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags) {
  std::string why;
  std::optional<std::string> text = readWholeFile(InputFile, why);
  if (!text) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable) << "cannot read '" << InputFile << "': " << why;
    return driver::ExitUserError;
  }
  uint32_t file = sources->addBuffer(InputFile, std::move(*text));
  auto module = parseFile(*sources, file, diags);
  if (!module)
    return driver::ExitUserError;
  std::ostringstream os;
  printAST(*module, os);
  return writeOutput(OutputFile, os.str(), diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// Builds every mask of `host` named by a predicate (`option` spells the command line's
/// way of naming it): the passes of stdlib/block_mask_build.kiln through the pipeline for
/// `target`, then `execute` (the interpreter or a GPU). False after diagnostics.
bool buildPredicateMasks(launch::HostArguments &host, const char *option, const SemaOptions &options,
                         std::shared_ptr<SourceManager> sources, codegen::Target target,
                         const dslc::KernelRunner &execute, DiagnosticEngine &diags, TimingReport *timing) {
  for (const launch::PredicateMask &request : host.predicateMasks) {
    if (driver::isTirFile(InputFile)) {
      diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
              .hint("pass the mask as a 2-D bool .npy file, or give the Kiln source")
          << option << " " << request.mask.name << "=" << request.predicate
          << "(...): a mask is built from a predicate of a Kiln program, and " << InputFile << " is Tile IR";
      return false;
    }
    TimingReport::Scope timer(timing, "mask: build '" + request.mask.name + "' from " + request.predicate);
    auto runPass = [&](ir::Module &m, launch::HostArguments &h, const std::array<int64_t, 3> &g) {
      if (!NoOptimize) {
        // The passes are the mask's, not the user's: nothing of theirs is printed.
        ir::PipelineOptions passPipeline = pipelineOptions(timing, diags, 0, g[0] * g[1] * g[2], target);
        passPipeline.printAfterAll = false;
        passPipeline.fusionRemarks = passPipeline.sparsityRemarks = nullptr;
        ir::runPipeline(m, passPipeline, diags);
      }
      return execute(m, h, g);
    };
    std::optional<BlockMaskLayout> layout =
        dslc::buildPredicateMask(request, InputFile, options, stdlibDir(), sources, runPass, diags);
    if (!layout)
      return false;
    launch::fillPredicateMask(host, request, *layout);
  }
  return true;
}

/// `--mask NAME=VALUE` for `kernel`: the mask built (a predicate's on the interpreter)
/// and its statistics; nullopt after an error.
std::optional<BlockMaskStats> knownMask(const ir::Kernel &kernel, const SemaOptions &options,
                                        std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags,
                                        TimingReport *timing) {
  const std::string text = MaskText;
  const size_t eq = text.find('=');
  const launch::Signature signature = driver::signatureOf(kernel);
  const std::string name = text.substr(0, eq);
  auto spec = std::find_if(signature.masks.begin(), signature.masks.end(),
                           [&](const launch::MaskSpec &m) { return m.name == name; });
  if (eq == std::string::npos || spec == signature.masks.end()) {
    std::string masks;
    for (const launch::MaskSpec &m : signature.masks)
      masks += (masks.empty() ? "" : ", ") + launch::maskSpelling(m);
    diags.error(Location::commandLine(), DiagCode::BadOption)
            .hint("write --mask NAME=FILE.npy or --mask NAME=PRED(ROWS,COLS,...)")
        << "--mask " << text << ": kernel '" << kernel.name << "' "
        << (masks.empty() ? "has no block_mask parameter" : "takes " + masks);
    return std::nullopt;
  }
  launch::HostArguments host;
  if (!launch::bindMaskArgument(*spec, text.substr(eq + 1), host, diags))
    return std::nullopt;
  auto onInterpreter = [&](ir::Module &m, launch::HostArguments &h, const std::array<int64_t, 3> &g) {
    interp::RunOptions runOptions;
    runOptions.grid = g;
    return driver::runOnInterpreter(*m.kernels.front(), h, runOptions, diags);
  };
  if (!buildPredicateMasks(host, "--mask", options, sources, codegen::Target::SM90, onInterpreter, diags, timing))
    return std::nullopt;
  return launch::maskArgumentStats(host, 0, *spec);
}

/// `--emit=llvm|ptx` of a graph: its persistent kernel (codegen/Megakernel.cpp);
/// `--emit=bundle`: its graph bundle (runtime/GraphBundle.h).
int emitGraph(const ir::Module &module, const ir::Kernel &graph, const EmitPlan &plan, DiagnosticEngine &diags,
              TimingReport *timing) {
  codegen::CodegenOptions cg = commandLineCodegenOptions();
  if (plan.kind == EmitKind::Bundle) {
    // SPIR-V gives no forward-progress guarantee between work-groups: there the bundle
    // holds the kernels alone, which run launch by launch.
    std::optional<rt::GraphBundle> bundle = codegen::buildGraphBundle(
        module, graph, plan.target, cg, codegen::isNvptxTarget(plan.target), diags, timing);
    if (!bundle)
      return driver::ExitUserError;
    // --resource-usage: each kernel the bundle holds, then its persistent kernel, from
    // the code it carries.
    if (ResourceUsageOpt && codegen::isNvptxTarget(plan.target)) {
      auto report = [&](const std::string &name, const rt::Bundle &b) {
        codegen::CodegenResult r;
        r.entry = b.entry;
        for (const rt::CodeSection &section : b.sections)
          if (section.kind == rt::SectionKind::PTX)
            r.ptx.assign(section.bytes.begin(), section.bytes.end());
        r.sharedBytes = b.sharedBytes;
        r.numThreads = int64_t(b.numWarps) * 32;
        printResourceUsage(name, plan.target, r);
      };
      for (const rt::Bundle &k : bundle->kernels)
        report(k.kernelName, k);
      if (bundle->persistent)
        report(graph.name, *bundle->persistent);
    }
    TimingReport::Scope timer(timing, "emit: write the graph bundle");
    std::string error;
    std::vector<uint8_t> bytes = rt::serializeGraphBundle(*bundle, error);
    if (bytes.empty())
      KILN_ICE("code generation made an invalid graph bundle: " + error);
    std::string_view text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return writeOutput(OutputFile, text, diags) ? driver::ExitSuccess : driver::ExitUserError;
  }
  if (plan.kind != EmitKind::LLVM && plan.kind != EmitKind::PTX) {
    diags.error(graph.loc, DiagCode::Unsupported)
            .hint("--emit=ptx prints its persistent kernel, --emit=bundle writes the graph bundle; dslc run --kernel " +
                  graph.name + " runs it")
        << "graph '" << graph.name << "' has no " << emitName(plan.kind) << " yet";
    return driver::ExitUserError;
  }
  std::vector<const ir::Kernel *> kinds;
  for (const auto &k : module.kernels)
    kinds.push_back(k.get());
  if (kinds.empty()) {
    diags.error(graph.loc, DiagCode::Unsupported) << "graph '" << graph.name << "' launches no kernel";
    return driver::ExitUserError;
  }
  // Each kernel the graph launches, as it runs launch by launch, then the persistent
  // kernel that runs them all.
  if (ResourceUsageOpt)
    for (const ir::Kernel *k : kinds)
      if (std::optional<codegen::CodegenResult> r = codegen::generate(module, *k, plan.target, diags, cg))
        printResourceUsage(k->name, plan.target, *r);
  std::optional<codegen::CodegenResult> result;
  {
    TimingReport::Scope timer(timing, "codegen: the persistent kernel of graph '" + graph.name + "'");
    result = codegen::generateMegakernel(module, graph, kinds, plan.target, diags, cg);
  }
  if (!result)
    return driver::ExitUserError;
  if (ResourceUsageOpt)
    printResourceUsage(graph.name, plan.target, *result);
  if (plan.discardCode)
    return driver::ExitSuccess;
  const std::string &out = plan.kind == EmitKind::LLVM ? result->llvmIR : result->ptx;
  return writeOutput(OutputFile, out, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `dslc FILE [--emit=tir|llvm|ptx|spirv|spirv-asm|bundle]`; `emit` false only checks
/// (for --verify-diagnostics), code generation included.
int compile(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing,
            const EmitPlan &plan, bool emit = true) {
  bool ok = true;
  SemaOptions options = semaOptions(diags, ok);
  std::optional<std::vector<Assumption>> assumptions = parseAssumptions(diags);
  std::optional<int64_t> split = forcedSplit(diags);
  if (!ok || !assumptions || !split || !sparseMapping(diags))
    return driver::ExitUserError;
  auto module = driver::loadModule(InputFile, options, sources, diags, timing);
  if (!module)
    return driver::ExitUserError;
  if (ExplainGraph) {
    if (module->graphs.empty()) {
      diags.error(Location::commandLine(), DiagCode::UnknownKernel)
              .hint("name the graph with --kernel GRAPH")
          << "--explain-graph explains a graph, and none was compiled";
      return driver::ExitUserError;
    }
    for (const auto &g : module->graphs)
      ir::printGraphDependencies(*module, *g, ir::analyzeGraphDependencies(*module, *g), std::cerr);
  }
  std::optional<BlockMaskStats> mask;
  if (MaskText.getNumOccurrences()) {
    const ir::Kernel *kernel = singleKernel(*module, "--mask describes the mask of one", diags);
    if (!kernel)
      return driver::ExitUserError;
    mask = knownMask(*kernel, options, sources, diags, timing);
    if (!mask)
      return driver::ExitUserError;
  }
  // A graph's code is its persistent kernel: its kernels share one num_warps and keep
  // each reduction in one program (RunGraph.h).
  const bool graphCode = !module->graphs.empty() && generatesCode(plan.kind);
  if (graphCode)
    codegen::unifyNumWarps(*module);
  if (!NoOptimize) {
    ir::runPipeline(*module,
                    pipelineOptions(timing, diags, graphCode && *split == 0 ? 1 : *split, std::nullopt, plan.target,
                                    mask),
                    diags);
  }

  if (printsSource(plan.kind)) {
    const std::string flag = "--emit=" + emitName(plan.kind);
    if (!module->graphs.empty()) {
      diags.error(module->graphs.front()->loc, DiagCode::Unsupported)
              .hint(flag + " prints one kernel; name it with --kernel")
          << "graph '" << module->graphs.front()->name << "' has no " << emitName(plan.kind) << " source yet";
      return driver::ExitUserError;
    }
    const ir::Kernel *kernel = singleKernel(*module, flag + " prints one", diags);
    if (!kernel)
      return driver::ExitUserError;
    std::optional<std::string> source;
    {
      TimingReport::Scope timer(timing, "emit: " + emitName(plan.kind));
      source = plan.kind == EmitKind::OpenCL ? codegen::emitOpenCL(*kernel, diags) : codegen::emitCuda(*kernel, diags);
    }
    if (!source)
      return driver::ExitUserError;
    if (!emit)
      return driver::ExitSuccess;
    return writeOutput(OutputFile, *source, diags) ? driver::ExitSuccess : driver::ExitUserError;
  }
  if (!generatesCode(plan.kind)) {
    if (!emit)
      return driver::ExitSuccess;
    std::string text;
    {
      TimingReport::Scope timer(timing, "emit: tir");
      ir::PrintOptions printOptions;
      printOptions.locations = PrintLocations;
      text = ir::printModule(*module, printOptions);
    }
    return writeOutput(OutputFile, text, diags) ? driver::ExitSuccess : driver::ExitUserError;
  }

  if (!module->graphs.empty())
    return emitGraph(*module, *module->graphs.front(), plan, diags, timing);
  const ir::Kernel *kernel = singleKernel(*module, "code generation compiles one", diags);
  if (!kernel)
    return driver::ExitUserError;
  codegen::CodegenOptions cg = commandLineCodegenOptions();
  cg.emitSpirvAsm = plan.kind == EmitKind::SPIRVAsm;
  if (!applyAssumptions(*assumptions, *kernel, cg, diags))
    return driver::ExitUserError;
  std::optional<codegen::CodegenResult> result;
  {
    TimingReport::Scope timer(timing, "codegen: " + std::string(codegen::targetName(plan.target)) +
                                          " (lowering, LLVM optimization, " +
                                          (codegen::isNvptxTarget(plan.target) ? "PTX" : "SPIR-V") + ")");
    result = codegen::generate(*module, *kernel, plan.target, diags, cg);
  }
  if (!result)
    return driver::ExitUserError;
  if (ResourceUsageOpt)
    printResourceUsage(kernel->name, plan.target, *result);
  if (!emit || plan.discardCode)
    return driver::ExitSuccess;

  if (plan.kind == EmitKind::Bundle) {
    rt::Bundle bundle;
    {
      TimingReport::Scope timer(timing, "emit: bundle");
      bundle = codegen::makeBundle(*module, *kernel, plan.target, cg, *result);
      // The runtime will check every field; one it would refuse is a compiler bug.
      if (std::string why = rt::validateBundle(bundle); !why.empty())
        KILN_ICE("code generation made an invalid bundle: " + why);
    }
    TimingReport::Scope timer(timing, "emit: write the bundle");
    std::string error;
    std::vector<uint8_t> bytes = rt::serializeBundle(bundle, error);
    if (bytes.empty())
      KILN_ICE("code generation made an invalid bundle: " + error);
    std::string_view text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return writeOutput(OutputFile, text, diags) ? driver::ExitSuccess : driver::ExitUserError;
  }
  std::string out;
  switch (plan.kind) {
  case EmitKind::LLVM: out = std::move(result->llvmIR); break;
  case EmitKind::PTX: out = std::move(result->ptx); break;
  case EmitKind::SPIRV: out.assign(result->spirv.begin(), result->spirv.end()); break;
  case EmitKind::SPIRVAsm: out = std::move(result->spirvAsm); break;
  default: KILN_ICE("unhandled --emit kind");
  }
  TimingReport::Scope timer(timing, "emit: " + emitName(plan.kind));
  return writeOutput(OutputFile, out, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

//===--------------------------------------------------------------------===//
// dslc run
//===--------------------------------------------------------------------===//

enum class RunDevice { Auto, Interp, Cuda, LevelZero };

/// The GPU `dslc run` was asked for (or, with Auto, the best present, saying which and
/// why unless stderr holds only JSON diagnostics). False, after a diagnostic, when one
/// was asked for and cannot be opened; `gpu` stays null for the interpreter.
bool openDevice(RunDevice device, std::unique_ptr<kiln::Runtime> &gpu, DiagnosticEngine &diags,
                TimingReport *timing, const char *what) {
  std::string choice;
  if (device == RunDevice::Cuda || device == RunDevice::LevelZero) {
    TimingReport::Scope timer(timing, "run: open the device");
    launch::OpenedRuntime opened =
        launch::openRuntime(device == RunDevice::Cuda ? launch::GpuKind::Cuda : launch::GpuKind::LevelZero);
    if (!opened.runtime) {
      launch::reportRuntimeError(diags, opened.status, opened.error,
                                 std::string("--device interp runs the ") + what + " on the reference interpreter");
      return false;
    }
    gpu = std::move(opened.runtime);
  } else if (device == RunDevice::Auto) {
    TimingReport::Scope timer(timing, "run: find a device");
    launch::OpenedRuntime cuda = launch::openRuntime(launch::GpuKind::Cuda);
    if (cuda.runtime) {
      gpu = std::move(cuda.runtime);
      choice = "running on " + launch::describeDevice(*gpu) + ": a CUDA device is present (the order is CUDA, Level Zero, the interpreter)";
    } else {
      launch::OpenedRuntime ze = launch::openRuntime(launch::GpuKind::LevelZero);
      if (ze.runtime) {
        gpu = std::move(ze.runtime);
        choice = "running on " + launch::describeDevice(*gpu) + ": " + launch::joinLines(cuda.error);
      } else {
        choice = "running on the reference interpreter: " + launch::joinLines(cuda.error) + "; " + launch::joinLines(ze.error);
      }
    }
  }
  if (!choice.empty() && Diagnostics != DiagStyle::Json)
    std::cerr << "dslc: " << choice << "\n";
  return true;
}

/// --repeat, --time and the --graph-* options. Reports E0900 and returns nullopt when a
/// value is malformed.
std::optional<launch::GraphRunOptions> gpuRunOptions(DiagnosticEngine &diags) {
  launch::GraphRunOptions o;
  bool ok = true;
  auto count = [&](const cl::opt<std::string> &opt, const char *name, int64_t most, int64_t &out) {
    if (!opt.getNumOccurrences())
      return;
    out = countOption(opt, most);
    if (out < 1) {
      diags.error(Location::commandLine(), DiagCode::BadOption)
          << "--" << name << " needs a number from 1 to " << most << ", got '" << std::string(opt) << "'";
      ok = false;
    }
  };
  int64_t repeat = 1, timeoutMs = 10000, workers = 0;
  count(RepeatText, "repeat", 1'000'000, repeat);
  count(GraphWaitTimeoutText, "graph-wait-timeout", 3'600'000, timeoutMs);
  count(GraphWorkersText, "graph-workers", 1'000'000, workers);
  o.runs = static_cast<uint64_t>(repeat);
  o.waitTimeoutNs = static_cast<uint64_t>(timeoutMs) * 1'000'000;
  o.workers = static_cast<uint32_t>(workers);
  o.time = TimeRuns;
  o.timeOut = &std::cerr;
  o.tracePath = TracePath;
  if (GraphModeText.getNumOccurrences()) {
    if (auto mode = launch::parseGraphMode(GraphModeText)) {
      o.mode = *mode;
    } else {
      diags.error(Location::commandLine(), DiagCode::BadOption)
              .hint("persistent: one megakernel; cuda-graph: its launches in a CUDA graph; launches: one by one")
          << "--graph-mode takes persistent, cuda-graph or launches, got '" << std::string(GraphModeText) << "'";
      ok = false;
    }
  }
  return ok ? std::optional(o) : std::nullopt;
}

/// Runs the one kernel of `m`, whose pipeline has run, on the interpreter (no `gpu`) or
/// on the GPU, whose code is for `target`. `timed` repeats and times the launch.
bool runKernel(kiln::Runtime *gpu, codegen::Target target, ir::Module &m, launch::HostArguments &h,
               const std::array<int64_t, 3> &g, uint64_t steps, const launch::GraphRunOptions *timed,
               DiagnosticEngine &diags, TimingReport *timing) {
  const ir::Kernel &k = *m.kernels.front();
  if (!gpu) {
    interp::RunOptions runOptions;
    runOptions.grid = g;
    runOptions.maxSteps = steps;
    TimingReport::Scope timer(timing, "run: interpreter");
    return driver::runOnInterpreter(k, h, runOptions, diags);
  }
  // On a GPU: code for the device's target, a bundle in memory, the runtime.
  codegen::CodegenOptions cg = commandLineCodegenOptions();
  cg.emitSpirvAsm = false;
  std::optional<codegen::CodegenResult> result;
  {
    TimingReport::Scope timer(timing, "codegen: " + std::string(codegen::targetName(target)) +
                                          " (lowering, LLVM optimization, " +
                                          (codegen::isNvptxTarget(target) ? "PTX" : "SPIR-V") + ")");
    result = codegen::generate(m, k, target, diags, cg);
  }
  if (!result)
    return false;
  std::vector<uint8_t> bytes;
  {
    TimingReport::Scope timer(timing, "emit: bundle");
    std::string error;
    bytes = rt::serializeBundle(codegen::makeBundle(m, k, target, cg, *result), error);
    if (bytes.empty())
      KILN_ICE("code generation made an invalid bundle: " + error);
  }
  launch::GpuLaunchOptions launchOptions;
  launchOptions.grid = g;
  launchOptions.tool = "dslc";
  if (timed) {
    launchOptions.repeat = timed->runs;
    launchOptions.time = timed->time;
    launchOptions.timeOut = timed->timeOut;
  }
  return launch::runBundle(*gpu, bytes, h, launchOptions, diags, timing);
}

/// `dslc run FILE --kernel GRAPH --arg ...`: the graph on a GPU (one persistent kernel,
/// or launch by launch), or launch by launch on the interpreter.
int runGraph(ir::Module &module, const SemaOptions &options, std::shared_ptr<SourceManager> sources,
             RunDevice device, uint64_t steps, int64_t split, DiagnosticEngine &diags, TimingReport *timing) {
  const ir::Kernel &graph = *module.graphs.front();
  if (Grid.getNumOccurrences()) {
    diags.error(Location::commandLine(), DiagCode::BadGrid).hint("leave out --grid")
        << "graph '" << graph.name << "' launches its kernels on the grids it computes; --grid is for kernels";
    return driver::ExitUserError;
  }
  std::optional<launch::GraphRunOptions> gpuOptions = gpuRunOptions(diags);
  if (!gpuOptions)
    return driver::ExitUserError;
  launch::Signature signature = driver::signatureOf(graph);
  signature.kind = "graph";
  auto host = launch::bindArguments(signature, std::vector<std::string>(Args.begin(), Args.end()), diags);
  if (!host)
    return driver::ExitUserError;
  std::unique_ptr<kiln::Runtime> gpu;
  if (!openDevice(device, gpu, diags, timing, "graph"))
    return driver::ExitUserError;

  // Masks named by a predicate are built first, where the graph runs (the interpreter
  // runs what sm_90 would).
  const codegen::Target maskTarget =
      gpu ? codegen::targetForDevice(gpu->target()).value_or(codegen::Target::SM90) : codegen::Target::SM90;
  auto buildMask = [&](ir::Module &m, launch::HostArguments &h, const std::array<int64_t, 3> &g) {
    return runKernel(gpu.get(), maskTarget, m, h, g, steps, nullptr, diags, timing);
  };
  if (!buildPredicateMasks(*host, "--arg", options, sources, maskTarget, buildMask, diags, timing))
    return driver::ExitUserError;

  if (!gpu && TracePath.getNumOccurrences()) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("run it with --device cuda")
        << "--trace records the tasks of a persistent kernel on a GPU; graph '" << graph.name
        << "' runs on the interpreter";
    return driver::ExitUserError;
  }
  if (!gpu) {
    // The launched kernels get the pipeline they would on the GPU (sm_90's options).
    if (!NoOptimize)
      ir::runPipeline(module, pipelineOptions(timing, diags, split, std::nullopt, codegen::Target::SM90, std::nullopt),
                      diags);
    interp::RunOptions runOptions;
    runOptions.maxSteps = steps;
    bool ran;
    {
      TimingReport::Scope timer(timing, "run: interpreter");
      ran = driver::runGraphOnInterpreter(module, graph, *host, runOptions, diags);
    }
    if (!ran)
      return driver::ExitUserError;
    return launch::writeBack(*host, diags) ? driver::ExitSuccess : driver::ExitUserError;
  }

  std::optional<codegen::Target> target = codegen::targetForDevice(gpu->target());
  if (!target) {
    diags.error(Location::commandLine(), DiagCode::DeviceError)
            .hint("--device interp runs the graph on the reference interpreter")
        << launch::describeDevice(*gpu) << " runs " << gpu->target()
        << " code, and Kiln generates code for sm_80 and newer NVIDIA GPUs and for spirv64";
    return driver::ExitUserError;
  }
  if (!codegen::isNvptxTarget(*target)) {
    if (GraphModeText.getNumOccurrences() && gpuOptions->mode == launch::GraphMode::Persistent) {
      diags.error(Location::commandLine(), DiagCode::Unsupported).hint("--graph-mode=launches runs it launch by launch")
          << "graph '" << graph.name << "' cannot run as one persistent kernel on " << launch::describeDevice(*gpu)
          << ": SPIR-V gives no forward-progress guarantee between work-groups";
      return driver::ExitUserError;
    }
    if (gpuOptions->mode == launch::GraphMode::CudaGraph) {
      diags.error(Location::commandLine(), DiagCode::Unsupported).hint("--graph-mode=launches runs it launch by launch")
          << "CUDA graphs need a CUDA device, and " << launch::describeDevice(*gpu) << " is not one";
      return driver::ExitUserError;
    }
    gpuOptions->mode = launch::GraphMode::Launches;
  }
  const bool persistent = gpuOptions->mode == launch::GraphMode::Persistent;
  if (!persistent && !gpuOptions->tracePath.empty()) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("leave out --graph-mode=launches")
        << "--trace records the tasks of a persistent kernel, and graph '" << graph.name << "' runs launch by launch";
    return driver::ExitUserError;
  }
  // A worker runs every kind of task, so the persistent kernel's kernels share one
  // num_warps, and none may split its reduction over extra programs.
  if (persistent)
    codegen::unifyNumWarps(module);
  // A split kernel's launch zeroes its workspace, which a CUDA graph's recording cannot
  // hold: there too every reduction stays in one program.
  const bool oneProgramReductions = persistent || gpuOptions->mode == launch::GraphMode::CudaGraph;
  if (!NoOptimize)
    ir::runPipeline(module,
                    pipelineOptions(timing, diags, oneProgramReductions && split == 0 ? 1 : split, std::nullopt,
                                    *target, std::nullopt),
                    diags);
  codegen::CodegenOptions cg = commandLineCodegenOptions();
  cg.emitSpirvAsm = false;
  if (!dslc::runGraphOnDevice(module, graph, *host, *gpu, *target, cg, *gpuOptions, diags, timing))
    return driver::ExitUserError;
  return launch::writeBack(*host, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `dslc run FILE --kernel K --grid ... --arg ...`.
int run(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing) {
  bool ok = true;
  SemaOptions options = semaOptions(diags, ok);
  // A kernel needs --grid; a graph launches its own grids (checked once it is loaded).
  std::optional<std::array<int64_t, 3>> grid;
  if (Grid.getNumOccurrences() != 0) {
    grid = launch::parseGrid(Grid, diags);
    ok = ok && grid;
  }
  RunDevice device = RunDevice::Auto;
  if (DeviceName.getNumOccurrences()) {
    if (DeviceName == "interp")
      device = RunDevice::Interp;
    else if (DeviceName == "cuda")
      device = RunDevice::Cuda;
    else if (DeviceName == "ze")
      device = RunDevice::LevelZero;
    else if (DeviceName != "auto") {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint("write --device cuda, --device ze or --device interp; without --device dslc picks the best "
                    "one present")
          << "unknown device '" << DeviceName << "'";
      ok = false;
    }
  }
  if (MaxStepsText.getNumOccurrences() && (device == RunDevice::Cuda || device == RunDevice::LevelZero)) {
    diags.error(Location::commandLine(), DiagCode::RunArgument).hint("leave it out, or run with --device interp")
        << "--max-steps limits the interpreter; it does not apply to --device " << DeviceName;
    ok = false;
  }
  std::optional<uint64_t> steps = maxSteps(diags);
  std::optional<int64_t> split = forcedSplit(diags);
  if (!ok || !steps || !split || !sparseMapping(diags))
    return driver::ExitUserError;
  auto module = driver::loadModule(InputFile, options, sources, diags, timing);
  if (!module)
    return driver::ExitUserError;
  if (!module->graphs.empty())
    return runGraph(*module, options, sources, device, *steps, *split, diags, timing);
  if (!grid) {
    diags.error(Location::commandLine(), DiagCode::BadGrid).hint("e.g. --grid 128 or --grid 16,16")
        << "dslc run needs --grid";
    return driver::ExitUserError;
  }
  if (!singleKernel(*module, "dslc run runs one", diags))
    return driver::ExitUserError;
  // The passes do not change what the caller passes: the arguments bind to the kernel
  // as written, and the passes run once the device, hence the target, is known.
  const ir::Kernel &kernel = *module->kernels.front();
  auto host = launch::bindArguments(driver::signatureOf(kernel), std::vector<std::string>(Args.begin(), Args.end()),
                                    diags);
  if (!host)
    return driver::ExitUserError;

  std::unique_ptr<kiln::Runtime> gpu;
  if (!openDevice(device, gpu, diags, timing, "kernel"))
    return driver::ExitUserError;

  // The device's target; the interpreter runs what sm_90 would (its SMs and clusters).
  std::optional<codegen::Target> target = gpu ? codegen::targetForDevice(gpu->target()) : codegen::Target::SM90;
  if (!target) {
    diags.error(Location::commandLine(), DiagCode::DeviceError)
            .hint("--device interp runs the kernel on the reference interpreter")
        << launch::describeDevice(*gpu) << " runs " << gpu->target()
        << " code, and Kiln generates code for sm_80 and newer NVIDIA GPUs and for spirv64";
    return driver::ExitUserError;
  }
  // --repeat and --time apply to the kernel the user named, not to the mask builders.
  const launch::GraphRunOptions *timed = nullptr;
  auto execute = [&](ir::Module &m, launch::HostArguments &h, const std::array<int64_t, 3> &g) {
    return runKernel(gpu.get(), *target, m, h, g, *steps, timed, diags, timing);
  };

  // Masks named by a predicate are built first, where the kernel runs.
  if (!buildPredicateMasks(*host, "--arg", options, sources, *target, execute, diags, timing))
    return driver::ExitUserError;

  if (!NoOptimize) {
    int64_t programs = (*grid)[0] * (*grid)[1] * (*grid)[2];
    ir::runPipeline(*module, pipelineOptions(timing, diags, *split, programs, *target, maskStats(kernel, *host)),
                    diags);
  }
  std::optional<launch::GraphRunOptions> gpuOptions = gpuRunOptions(diags);
  if (!gpuOptions)
    return driver::ExitUserError;
  if (TracePath.getNumOccurrences()) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("--time times a kernel's launches")
        << "--trace records the tasks of a graph's persistent kernel; '" << kernel.name << "' is a kernel";
    return driver::ExitUserError;
  }
  timed = &*gpuOptions;
  if (!execute(*module, *host, *grid))
    return driver::ExitUserError;
  return launch::writeBack(*host, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `--verify-diagnostics`: compile, collecting diagnostics, and match them against the
/// input's expectations. Succeeds when they agree exactly.
int verify(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing,
           const EmitPlan &plan) {
  std::vector<Diagnostic> collected;
  diags.setHandler([&](const Diagnostic &d) { collected.push_back(d); });
  diags.setErrorLimit(0);
  if (plan.kind == EmitKind::AST) {
    std::string saved = OutputFile;
    OutputFile = "/dev/null";
    emitAST(sources, diags);
    OutputFile = saved;
  } else {
    compile(sources, diags, timing, plan, /*emit=*/false);
  }
  diags.setHandler(nullptr);
  // The expectations are read from the text the compilation read.
  auto file = sources->find(InputFile);
  const std::string *text = file ? sources->text(*file) : nullptr;
  std::vector<std::string> malformed;
  auto expected = driver::parseExpectations(text ? *text : std::string(), malformed);
  for (const std::string &m : malformed)
    std::cerr << InputFile << ": malformed expectation: " << m << "\n";
  bool ok = malformed.empty() &&
            driver::checkExpectations(expected, collected, file ? *file : UINT32_MAX, *sources, std::cerr);
  return ok ? driver::ExitSuccess : driver::ExitUserError;
}

/// `dslc FILE ...`: checks the options, then emits.
int compileCommand(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing) {
  std::optional<EmitPlan> plan = planEmit(diags);
  if (!plan)
    return driver::ExitUserError;
  if (OutputFile.getNumOccurrences() && OutputFile.empty()) {
    diags.error(Location::commandLine(), DiagCode::FileNotWritable).hint("write -o - for standard output")
        << "-o needs a file name";
    return driver::ExitUserError;
  }
  if (VerifyDiagnostics)
    return verify(sources, diags, timing, *plan);
  // Like clang, refuse to put binary data on a terminal before doing any work.
  if (isBinary(plan->kind) && (OutputFile.empty() || OutputFile == "-") && ::isatty(STDOUT_FILENO)) {
    optionError(diags, "--emit=" + emitName(plan->kind) + " produces binary data; not writing it to a terminal",
                "write it to a file with -o FILE, e.g. -o " +
                    std::string(plan->kind == EmitKind::Bundle ? "kernel.kbin" : "kernel.spv") +
                    ", or redirect stdout");
    return driver::ExitUserError;
  }
  if (plan->kind == EmitKind::AST)
    return emitAST(sources, diags);
  return compile(sources, diags, timing, *plan);
}

/// llvm::cl lets a later occurrence of a single-valued option replace an earlier one;
/// dslc refuses a repeat instead, as kiln-run does: `--max-steps 5 --max-steps 0` would
/// otherwise turn the limit off without a word. Lists (-D, -I, --arg,
/// --assume-multiple) may repeat.
bool refuseRepeatedOptions(DiagnosticEngine &diags) {
  bool ok = true;
  std::set<const cl::Option *> seen;
  for (cl::SubCommand *sub : {&cl::SubCommand::getTopLevel(), &RunCommand}) {
    for (const auto &entry : cl::getRegisteredOptions(*sub)) {
      const cl::Option *option = entry.second;
      const bool ours = llvm::is_contained(option->Categories, &KilnCategory);
      if (!ours || option->getNumOccurrencesFlag() != cl::Optional || option->isPositional() ||
          option->getNumOccurrences() < 2 || !seen.insert(option).second)
        continue;
      std::string name = (option->ArgStr.size() == 1 ? "-" : "--") + option->ArgStr.str();
      diags.error(Location::commandLine(), DiagCode::BadOption).hint("give " + name + " once")
          << "option '" << name << "' is given more than once";
      ok = false;
    }
  }
  return ok;
}

/// Shows one of libLLVM's options in dslc's --help, with dslc's wording.
void adoptLLVMOption(const char *name, const char *description) {
  auto &options = cl::getRegisteredOptions();
  auto it = options.find(name);
  if (it == options.end())
    return;
  it->second->addCategory(KilnCategory);
  it->second->setDescription(description);
  it->second->setHiddenFlag(cl::NotHidden);
}

} // namespace

int main(int argc, char **argv) {
  adoptLLVMOption("print-after-all", "Print the Tile IR after every pass");
  adoptLLVMOption("time-passes", "Report the time of every compilation stage, code generation included");
  cl::HideUnrelatedOptions(KilnCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "dslc (Kiln) " << KILN_VERSION << "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "dslc — the Kiln tile-language compiler\n\n"
      "  dslc FILE [--kernel K] [-D NAME=VALUE]... [--emit=ast|tir|opencl|cuda] [-o OUT]\n"
      "  dslc FILE [--kernel K] --emit=llvm|ptx|spirv|spirv-asm|bundle [--target=sm_80|sm_90|sm_90a|spirv64]\n"
      "       [--assume-multiple NAME=N]... [-o OUT]\n"
      "  dslc run FILE --kernel K --grid X[,Y[,Z]] [--arg NAME=VALUE]... [--device cuda|ze|interp]\n"
      "  dslc run FILE --kernel GRAPH [--arg NAME=VALUE]... [--graph-mode=persistent|cuda-graph|launches]\n"
      "       (a graph: one persistent kernel on CUDA, its launches in order elsewhere)\n\n"
      "FILE is Kiln source (.kiln) or Tile IR text (.tir). Exit status: 0 success, 1 an error\n"
      "in the input, the options or the run (reported with a code, see docs/diagnostics.md),\n"
      "70 a compiler bug. docs/dslc.md describes every option with examples.\n");

  PrintAfterAll = llvm::shouldPrintAfterAll();
  TimePasses = llvm::TimePassesIsEnabled;
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, std::cerr,
                         Diagnostics == DiagStyle::Json ? DiagFormat::Json : DiagFormat::Text);
  TimingReport timingReport;
  TimingReport *timing = TimePasses ? &timingReport : nullptr;
  if (!refuseRepeatedOptions(diags))
    return driver::ExitUserError;
  if (ListBuiltins) {
    for (const BuiltinSignature &b : builtinSignatures()) {
      std::string line = b.name + "(";
      for (size_t i = 0; i < b.params.size(); ++i)
        line += (i ? ", " : "") + b.params[i] + (b.variadic ? "..." : i >= b.required ? "?" : "");
      llvm::outs() << line << ")\n";
    }
    return finishStdout(diags) ? driver::ExitSuccess : driver::ExitUserError;
  }
  if (InputFile.getNumOccurrences() == 0) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable).hint("see dslc --help")
        << "no input file";
    return driver::ExitUserError;
  }
  try {
    int status = runOnLargeStack([&] {
      if (RunCommand)
        return run(sources, diags, timing);
      return compileCommand(sources, diags, timing);
    });
    if (timing)
      timingReport.print(std::cerr);
    if (!finishStdout(diags) && status == driver::ExitSuccess)
      status = driver::ExitUserError;
    return status;
  } catch (const InternalCompilerError &error) {
    return driver::reportInternalCompilerError(error, "dslc");
  }
}
