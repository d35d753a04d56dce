//===- Emit.cpp - From an LLVM module to PTX or SPIR-V --------------------===//
//
// NVPTX: triple nvptx64-nvidia-cuda, CPU sm_80 / sm_90 / sm_90a, PTX ISA 8.0 (8.1 for a
// kernel split over thread-block clusters).
// libdevice supplies the math functions (`__nv_expf`, ...); it is linked with only the
// functions the kernel needs, internalized and optimized together with the kernel. The
// module flag nvvm-reflect-ftz = 0 keeps subnormals (IEEE results, as the interpreter).
//
// SPIR-V: triple spirv64v1.0 (the version OpenCL 1.2 consumers and Level Zero accept),
// OpenCL kernel environment. Floating-point contraction is off for both targets, so a
// multiply and an add stay two roundings as in the interpreter.
//
//===----------------------------------------------------------------------===//
#include "codegen/Emit.h"

#include "support/Diagnostics.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
void LLVMInitializeSPIRVTargetInfo();
void LLVMInitializeSPIRVTarget();
void LLVMInitializeSPIRVTargetMC();
void LLVMInitializeSPIRVAsmPrinter();
}

namespace kiln::codegen::detail {

static void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeSPIRVTargetInfo();
    LLVMInitializeSPIRVTarget();
    LLVMInitializeSPIRVTargetMC();
    LLVMInitializeSPIRVAsmPrinter();
  });
}

std::string targetTriple(Target target) {
  return isNvptxTarget(target) ? "nvptx64-nvidia-cuda" : "spirv64v1.0-unknown-unknown";
}

static const char *targetCpu(Target target) {
  switch (target) {
  case Target::SM80:
    return "sm_80";
  case Target::SM90:
    return "sm_90";
  case Target::SM90a:
    return "sm_90a";
  case Target::SPIRV64:
    return "";
  }
  return "";
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(Target target, int optLevel,
                                                       std::string &error, bool clusterStores) {
  initializeTargets();
  const llvm::Triple triple(targetTriple(target));
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  llvm::TargetOptions to;
  to.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  llvm::CodeGenOptLevel level = optLevel <= 0   ? llvm::CodeGenOptLevel::None
                                : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                                : llvm::CodeGenOptLevel::Aggressive;
  // SPIR-V is optimized again by the driver's compiler; the IR pipeline has already run
  // at the requested level. The backend's own IR passes (loop strength reduction with
  // CodeGenPrepare) would only turn loop counters into OpIAddCarry, which is valid
  // SPIR-V but not understood by older consumers (the SPIR 1.2 route of the tests).
  if (!isNvptxTarget(target))
    level = llvm::CodeGenOptLevel::None;
  // PTX ISA 8.1 (CUDA 12.1 drivers) only for what needs it: the st.async of cluster
  // exchanges (LowerCluster.cpp).
  const char *features = !isNvptxTarget(target) ? "" : clusterStores ? "+ptx81" : "+ptx80";
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      triple, targetCpu(target), features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    error = "LLVM could not create a target machine for " + triple.str();
  return tm;
}

/// Links the libdevice functions `module` calls, then leaves only `entry` visible.
static bool linkLibdevice(llvm::Module &module, const std::string &path, std::string &error) {
  bool needed = false;
  for (const llvm::Function &f : module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_"))
      needed = true;
  if (!needed)
    return true;
  // Lazily: only the bodies the linker pulls in are read, not all of libdevice's
  // functions, which would otherwise dominate the compile time of a small kernel.
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::getLazyIRFileModule(path, diag, module.getContext());
  if (!lib) {
    error = "cannot read libdevice '" + path + "': " + diag.getMessage().str();
    return false;
  }
  lib->setTargetTriple(module.getTargetTriple());
  lib->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(lib), llvm::Linker::LinkOnlyNeeded)) {
    error = "linking libdevice failed";
    return false;
  }
  return true;
}

/// Compiles `module` to `type` output with a fresh legacy pass manager.
static bool emitFile(llvm::Module &module, llvm::TargetMachine &tm, llvm::CodeGenFileType type,
                     llvm::SmallVectorImpl<char> &out, std::string &error) {
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type)) {
    error = "the LLVM target cannot emit this kind of file";
    return false;
  }
  pm.run(module);
  return true;
}

/// Runs the target code generator on `module` in a forked child and returns its output.
///
/// LLVM 22's SPIR-V backend keeps module-analysis results in a static object and does
/// not clear all of it between modules: a map keyed by (MachineFunction address, block
/// number) survives, and when a later compilation's MachineFunction is allocated at a
/// reused address its blocks get stale ids (invalid SPIR-V, "Id used twice"). A child
/// process starts from the parent's pristine state every time and its changes vanish
/// with it; a crash of the backend becomes an error message instead of ending the
/// compiler.
static bool emitInChildProcess(llvm::Module &module, Target target, llvm::CodeGenFileType type,
                               llvm::SmallVectorImpl<char> &out, std::string &error) {
  int fds[2];
  if (pipe(fds) != 0) {
    error = "cannot create a pipe for the SPIR-V code generator";
    return false;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    error = "cannot start the SPIR-V code generator process";
    return false;
  }
  if (pid == 0) {
    // Child: compile, send [status byte][payload], leave without running destructors.
    close(fds[0]);
    std::string childError;
    llvm::SmallVector<char, 0> bytes;
    std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(target, 0, childError);
    bool ok = tm && emitFile(module, *tm, type, bytes, childError);
    const char status = ok ? 1 : 0;
    const llvm::SmallVector<char, 0> &payload = bytes;
    auto writeAll = [&](const char *p, size_t n) {
      while (n > 0) {
        ssize_t w = write(fds[1], p, n);
        if (w <= 0)
          _exit(3);
        p += w;
        n -= static_cast<size_t>(w);
      }
    };
    writeAll(&status, 1);
    if (ok)
      writeAll(payload.data(), payload.size());
    else
      writeAll(childError.data(), childError.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string received;
  char chunk[1 << 16];
  for (;;) {
    ssize_t r = read(fds[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    received.append(chunk, static_cast<size_t>(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || received.empty()) {
    error = "the SPIR-V code generator failed (LLVM's SPIR-V backend ";
    error += WIFSIGNALED(status) ? "crashed)" : "stopped)";
    return false;
  }
  if (received[0] != 1) {
    error = received.substr(1);
    return false;
  }
  out.assign(received.begin() + 1, received.end());
  return true;
}

bool optimizeAndEmit(llvm::Module &module, llvm::TargetMachine &tm, Target target,
                     const std::string &entry, const CodegenOptions &options, Emitted &out,
                     std::string &error) {
  const bool nvptx = isNvptxTarget(target);
  if (nvptx) {
    module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
    if (!linkLibdevice(module, options.libdevicePath, error))
      return false;
  }
  // Everything but the entry point is internal (libdevice's functions included), so
  // the optimizer may inline and drop it.
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &gv) {
    return gv.getName() == entry || gv.isDeclaration();
  });

  std::string verifyMessage;
  llvm::raw_string_ostream vs(verifyMessage);
  if (llvm::verifyModule(module, &vs))
    KILN_ICE("codegen produced an invalid LLVM module: " + verifyMessage);

  if (options.optLevel > 0) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = options.optLevel == 1   ? llvm::OptimizationLevel::O1
                                    : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                            : llvm::OptimizationLevel::O3;
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
    mpm.run(module, mam);
  }
  if (llvm::verifyModule(module, &vs))
    KILN_ICE("the optimized LLVM module is invalid: " + verifyMessage);

  {
    llvm::raw_string_ostream os(out.llvmIR);
    module.print(os, nullptr);
  }
  llvm::SmallVector<char, 0> buf;
  if (nvptx) {
    if (!emitFile(module, tm, llvm::CodeGenFileType::AssemblyFile, buf, error))
      return false;
    out.ptx.assign(buf.begin(), buf.end());
    return true;
  }
  if (options.emitSpirvAsm &&
      !emitInChildProcess(module, target, llvm::CodeGenFileType::AssemblyFile, buf, error))
    return false;
  out.spirvAsm.assign(buf.begin(), buf.end());
  buf.clear();
  if (!emitInChildProcess(module, target, llvm::CodeGenFileType::ObjectFile, buf, error))
    return false;
  out.spirv.assign(buf.begin(), buf.end());
  return true;
}

} // namespace kiln::codegen::detail
