//===- CodegenBackend.cpp - The code generator as the fuzzer's last stage --===//
//
// kiln-fuzz-codegen sends every mutant that the frontend and the pipeline accept on to
// the code generator: PTX for the module the pipeline optimized for sm_80 and for the
// one it split for sm_90a (clusters), SPIR-V for the first, and the first's PTX again in
// checked mode (every access bounds-checked, LowerChecks.cpp). A construct the code
// generator does not support is a located error (E0109) and fine; an LLVM module that
// fails verification is an internal compiler error and fails the run, as does a crash.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/CodegenBackend.h"

#include "codegen/Codegen.h"

namespace kiln::fuzz {

Backend codegenBackend() {
  return [](const ir::Module &module, std::string_view target, DiagnosticEngine &diags) {
    std::vector<codegen::Target> targets{*codegen::parseTarget(target)};
    if (target == "sm_80")
      targets.push_back(codegen::Target::SPIRV64);
    codegen::CodegenOptions options;
    options.emitSpirvAsm = false;
    for (const auto &kernel : module.kernels)
      for (codegen::Target t : targets)
        codegen::generate(module, *kernel, t, diags, options);
    if (target == "sm_80") {
      codegen::CodegenOptions checked = options;
      checked.checked = true;
      for (const auto &kernel : module.kernels)
        codegen::generate(module, *kernel, codegen::Target::SM80, diags, checked);
    }
  };
}

} // namespace kiln::fuzz
