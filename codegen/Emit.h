//===- Emit.h - From an LLVM module to PTX or SPIR-V --------------*- C++ -*-===//
//
// Private to codegen/. Target machines, libdevice linking, the optimization pipeline
// and the final emission; everything LLVM-specific that is not the lowering itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::codegen::detail {

/// The LLVM triple, CPU and features used for `target`.
std::string targetTriple(Target target);

/// A target machine for `target` (the NVPTX and SPIR-V targets are initialized on
/// first use); `clusterStores` asks for the PTX ISA of st.async (8.1 instead of 8.0).
/// Null, with `error` set, when LLVM cannot create it.
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(Target target, int optLevel, std::string &error,
                                                       bool clusterStores = false);

struct Emitted {
  std::string llvmIR;
  std::string ptx;
  std::vector<uint8_t> spirv;
  std::string spirvAsm;
};

/// Links libdevice into `module` when it calls `__nv_*` functions (NVPTX), keeps only
/// `entry` externally visible, runs the optimization pipeline and emits the target
/// code. Returns false with `error` set when a step fails for a reason outside the
/// compiler (e.g. libdevice missing).
bool optimizeAndEmit(llvm::Module &module, llvm::TargetMachine &tm, Target target,
                     const std::string &entry, const CodegenOptions &options, Emitted &out,
                     std::string &error);

} // namespace kiln::codegen::detail
