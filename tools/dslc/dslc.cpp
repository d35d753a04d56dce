//===- dslc.cpp - The Kiln compiler driver --------------------------------===//
//
//   dslc FILE [--kernel K] [-D N=V]... [--emit=ast|tir] [-o OUT]
//   dslc run FILE --kernel K --grid X[,Y[,Z]] [-D N=V]... [--arg NAME=VALUE]...
//
// The driver is a straight line: load the input into Tile IR (frontend or .tir parser),
// run the pipeline (ir/transforms/Pipeline.cpp), then emit or run. Every stage can be
// stopped at with --emit, and .tir input starts from the middle.
//
//===----------------------------------------------------------------------===//
#include "frontend/ASTPrinter.h"
#include "frontend/Parser.h"
#include "ir/Printer.h"
#include "ir/interp/Interpreter.h"
#include "ir/transforms/Pipeline.h"
#include "support/LargeStack.h"
#include "tools/driver/Driver.h"
#include "tools/driver/KernelArguments.h"
#include "tools/driver/VerifyDiagnostics.h"

#include "llvm/IR/PrintPasses.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <iostream>
#include <sstream>

using namespace kiln;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory KilnCategory("dslc options");
cl::SubCommand RunCommand("run", "Run a kernel on a device (the reference interpreter: --device interp)");

// Options of both `dslc FILE` and `dslc run FILE`.
cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input .kiln or .tir file>"), cl::Required,
                               cl::sub(cl::SubCommand::getTopLevel()), cl::sub(RunCommand),
                               cl::cat(KilnCategory));
cl::opt<std::string> KernelName("kernel", cl::desc("The kernel to compile or run (default: every kernel at its defaults)"),
                                cl::value_desc("name"), cl::sub(cl::SubCommand::getTopLevel()),
                                cl::sub(RunCommand), cl::cat(KilnCategory));
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
// --print-after-all and --time-passes are LLVM's own options (libLLVM registers them);
// dslc adopts them into its category (adoptLLVMOption) and reads their values.
bool PrintAfterAll = false;
bool TimePasses = false;

// Options of `dslc FILE`.
enum class EmitStage { AST, TIR };
cl::opt<EmitStage> Emit("emit", cl::desc("The stage to stop at and print"), cl::init(EmitStage::TIR),
                        cl::values(clEnumValN(EmitStage::AST, "ast", "the syntax tree of the input file"),
                                   clEnumValN(EmitStage::TIR, "tir", "Tile IR after the pipeline (default)")),
                        cl::cat(KilnCategory));
cl::opt<std::string> OutputFile("o", cl::desc("Write the output here instead of stdout"), cl::value_desc("file"),
                                cl::cat(KilnCategory));
cl::opt<bool> PrintLocations("print-locations", cl::desc("Print each Tile IR op's source location"),
                             cl::cat(KilnCategory));
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
cl::opt<std::string> DeviceName("device", cl::desc("Where to run: interp, the reference interpreter on the CPU (default)"),
                                cl::value_desc("interp"), cl::init("interp"), cl::sub(RunCommand), cl::cat(KilnCategory));
cl::opt<std::string> MaxStepsText("max-steps", cl::desc("Interpreter: stop after this many executed ops (0: no limit)"),
                                  cl::value_desc("N"), cl::init("4000000000"), cl::sub(RunCommand),
                                  cl::cat(KilnCategory));

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

SemaOptions semaOptions(DiagnosticEngine &diags, bool &ok) {
  SemaOptions options;
  options.includeDirs.assign(IncludeDirs.begin(), IncludeDirs.end());
  ok = driver::parseDefines(std::vector<std::string>(Defines.begin(), Defines.end()), options.defines, diags);
  if (!KernelName.empty())
    options.kernel = KernelName;
  return options;
}

ir::PipelineOptions pipelineOptions(TimingReport *timing) {
  ir::PipelineOptions options;
  options.printAfterAll = PrintAfterAll;
  options.timing = timing;
  return options;
}

/// `dslc FILE --emit=ast`: the syntax tree of the one file, no imports followed.
int emitAST(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags) {
  std::ifstream in(InputFile, std::ios::binary);
  if (!in) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable) << "cannot read '" << InputFile << "'";
    return driver::ExitUserError;
  }
  std::ostringstream text;
  text << in.rdbuf();
  uint32_t file = sources->addBuffer(InputFile, text.str());
  auto module = parseFile(*sources, file, diags);
  if (!module)
    return driver::ExitUserError;
  std::ostringstream os;
  printAST(*module, os);
  return driver::writeOutput(OutputFile, os.str(), diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `dslc FILE [--emit=tir]`; `emit` false only checks (for --verify-diagnostics).
int compile(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing,
            bool emit = true) {
  bool ok = true;
  SemaOptions options = semaOptions(diags, ok);
  if (!ok)
    return driver::ExitUserError;
  auto module = driver::loadModule(InputFile, options, sources, diags, timing);
  if (!module)
    return driver::ExitUserError;
  if (!NoOptimize)
    ir::runPipeline(*module, pipelineOptions(timing), diags);
  if (!emit)
    return driver::ExitSuccess;
  std::string text;
  {
    TimingReport::Scope timer(timing, "emit: tir");
    ir::PrintOptions printOptions;
    printOptions.locations = PrintLocations;
    text = ir::printModule(*module, printOptions);
  }
  return driver::writeOutput(OutputFile, text, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `dslc run FILE --kernel K --grid ... --arg ...`.
int run(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing) {
  bool ok = true;
  SemaOptions options = semaOptions(diags, ok);
  std::optional<std::array<int64_t, 3>> grid;
  if (Grid.empty())
    diags.error(Location::commandLine(), DiagCode::BadGrid).hint("e.g. --grid 128 or --grid 16,16")
        << "dslc run needs --grid";
  else
    grid = driver::parseGrid(Grid, diags);
  if (DeviceName != "interp") {
    diags.error(Location::commandLine(), DiagCode::RunArgument)
            .hint("this build of dslc runs kernels on the reference interpreter: --device interp")
        << "unknown device '" << DeviceName << "'";
    ok = false;
  }
  std::optional<uint64_t> steps = maxSteps(diags);
  if (!ok || !grid || !steps)
    return driver::ExitUserError;
  auto module = driver::loadModule(InputFile, options, sources, diags, timing);
  if (!module)
    return driver::ExitUserError;
  if (module->kernels.size() != 1) {
    std::string names;
    for (const auto &k : module->kernels)
      names += (names.empty() ? "" : ", ") + k->name;
    diags.error(Location::commandLine(), DiagCode::UnknownKernel).hint("choose one with --kernel NAME")
        << "'" << InputFile << "' has " << module->kernels.size() << " kernels (" << names
        << "); dslc run runs one";
    return driver::ExitUserError;
  }
  if (!NoOptimize)
    ir::runPipeline(*module, pipelineOptions(timing), diags);
  const ir::Kernel &kernel = *module->kernels.front();
  auto bound = driver::bindArguments(kernel, std::vector<std::string>(Args.begin(), Args.end()), diags);
  if (!bound)
    return driver::ExitUserError;
  interp::RunOptions runOptions;
  runOptions.grid = *grid;
  runOptions.maxSteps = *steps;
  bool ran;
  {
    TimingReport::Scope timer(timing, "run: interpreter");
    ran = interp::runKernel(kernel, bound->args, bound->buffers, runOptions, diags);
  }
  if (!ran)
    return driver::ExitUserError;
  return driver::writeBackBuffers(*bound, diags) ? driver::ExitSuccess : driver::ExitUserError;
}

/// `--verify-diagnostics`: compile, collecting diagnostics, and match them against the
/// input's expectations. Succeeds when they agree exactly.
int verify(std::shared_ptr<SourceManager> sources, DiagnosticEngine &diags, TimingReport *timing) {
  std::vector<Diagnostic> collected;
  diags.setHandler([&](const Diagnostic &d) { collected.push_back(d); });
  diags.setErrorLimit(0);
  if (Emit == EmitStage::AST) {
    std::string saved = OutputFile;
    OutputFile = "/dev/null";
    emitAST(sources, diags);
    OutputFile = saved;
  } else {
    compile(sources, diags, timing, /*emit=*/false);
  }
  diags.setHandler(nullptr);
  std::ifstream in(InputFile, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> malformed;
  auto expected = driver::parseExpectations(text.str(), malformed);
  for (const std::string &m : malformed)
    std::cerr << InputFile << ": malformed expectation: " << m << "\n";
  auto file = sources->find(InputFile);
  bool ok = malformed.empty() &&
            driver::checkExpectations(expected, collected, file ? *file : UINT32_MAX, *sources, std::cerr);
  return ok ? driver::ExitSuccess : driver::ExitUserError;
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
  adoptLLVMOption("time-passes", "Report the time of every compilation stage");
  cl::HideUnrelatedOptions(KilnCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "dslc (Kiln) " << KILN_VERSION << "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "dslc — the Kiln tile-language compiler\n\n"
      "  dslc FILE [--kernel K] [-D NAME=VALUE]... [--emit=ast|tir] [-o OUT]\n"
      "  dslc run FILE --kernel K --grid X[,Y[,Z]] [--arg NAME=VALUE]... [--device interp]\n\n"
      "FILE is Kiln source (.kiln) or Tile IR text (.tir).\n");

  PrintAfterAll = llvm::shouldPrintAfterAll();
  TimePasses = llvm::TimePassesIsEnabled;
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, std::cerr,
                         Diagnostics == DiagStyle::Json ? DiagFormat::Json : DiagFormat::Text);
  TimingReport timingReport;
  TimingReport *timing = TimePasses ? &timingReport : nullptr;
  try {
    int status = runOnLargeStack([&] {
      if (RunCommand)
        return run(sources, diags, timing);
      if (VerifyDiagnostics)
        return verify(sources, diags, timing);
      if (Emit == EmitStage::AST)
        return emitAST(sources, diags);
      return compile(sources, diags, timing);
    });
    if (timing)
      timingReport.print(std::cerr);
    return status;
  } catch (const InternalCompilerError &error) {
    return driver::reportInternalCompilerError(error, "dslc");
  }
}
