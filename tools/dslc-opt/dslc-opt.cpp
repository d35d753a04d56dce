//===- dslc-opt.cpp - Run Tile IR passes one at a time --------------------===//
//
//   dslc-opt FILE.tir --pass=canonicalize --pass=dce [-o OUT]
//
// Reads Tile IR text (or Kiln source, lowered without the pipeline), runs exactly the
// passes named, in order, verifying after each, and prints the result. Per-pass
// FileCheck tests are written against this tool.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "ir/transforms/Pipeline.h"
#include "support/LargeStack.h"
#include "support/ToolOutput.h"
#include "tools/driver/Driver.h"

#include "llvm/IR/PrintPasses.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

using namespace kiln;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory OptCategory("dslc-opt options");

cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input .tir or .kiln file>"), cl::cat(OptCategory));
cl::list<std::string> Passes("pass", cl::desc("Run this pass (repeatable; see --list-passes)"),
                             cl::value_desc("name"), cl::cat(OptCategory));
cl::opt<bool> ListPasses("list-passes", cl::desc("List the registered passes and exit"), cl::cat(OptCategory));
cl::opt<std::string> OutputFile("o", cl::desc("Write the output here instead of stdout"), cl::value_desc("file"),
                                cl::cat(OptCategory));
cl::opt<bool> PrintLocations("print-locations", cl::desc("Print each op's source location"), cl::cat(OptCategory));
cl::opt<std::string> KernelName("kernel", cl::desc("Keep only this kernel"), cl::value_desc("name"),
                                cl::cat(OptCategory));

std::string passListText() {
  std::string text = "\nPasses:\n";
  for (const ir::PassInfo &p : ir::passRegistry())
    text += "  " + std::string(p.name) + std::string(18 - std::min<size_t>(16, std::string(p.name).size()), ' ') +
            p.summary + "\n";
  text += "\nDefault pipeline: ";
  for (size_t i = 0; i < ir::defaultPipeline().size(); ++i)
    text += (i ? ", " : "") + ir::defaultPipeline()[i];
  return text + "\n";
}

} // namespace

int main(int argc, char **argv) {
  // --print-after-all is libLLVM's own option; show it among ours.
  if (auto it = cl::getRegisteredOptions().find("print-after-all"); it != cl::getRegisteredOptions().end()) {
    it->second->addCategory(OptCategory);
    it->second->setHiddenFlag(cl::NotHidden);
  }
  cl::HideUnrelatedOptions(OptCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "dslc-opt (Kiln) " << KILN_VERSION << "\n"; });
  static const std::string overview =
      "dslc-opt — run Tile IR passes one at a time\n\n  dslc-opt FILE --pass=NAME [--pass=NAME]... [-o OUT]\n" +
      passListText();
  cl::ParseCommandLineOptions(argc, argv, overview);
  if (ListPasses) {
    std::cout << passListText();
    return driver::ExitSuccess;
  }
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, std::cerr);
  diags.setToolName("dslc-opt");
  if (InputFile.empty()) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable) << "no input file (see --help)";
    return driver::ExitUserError;
  }
  for (const std::string &name : Passes) {
    if (!ir::findPass(name)) {
      diags.error(Location::commandLine(), DiagCode::RunArgument).hint("see dslc-opt --list-passes")
          << "unknown pass '" << name << "'";
      return driver::ExitUserError;
    }
  }
  try {
    return runOnLargeStack([&] {
      SemaOptions options;
      if (!KernelName.empty())
        options.kernel = KernelName;
      auto module = driver::loadModule(InputFile, options, sources, diags, nullptr);
      if (!module)
        return int(driver::ExitUserError);
      ir::PipelineOptions pipeline;
      pipeline.printAfterAll = llvm::shouldPrintAfterAll();
      pipeline.passes.assign(Passes.begin(), Passes.end());
      if (!pipeline.passes.empty())
        ir::runPipeline(*module, pipeline, diags);
      ir::PrintOptions printOptions;
      printOptions.locations = PrintLocations;
      return writeOutput(OutputFile, ir::printModule(*module, printOptions), diags)
                 ? int(driver::ExitSuccess)
                 : int(driver::ExitUserError);
    });
  } catch (const InternalCompilerError &error) {
    return driver::reportInternalCompilerError(error, "dslc-opt");
  }
}
