//===- Autotune.cpp - A kernel's @autotune configs, for the JIT -----------===//
//
// The attribute itself is checked with the kernel's other attributes (SemaKernel.cpp,
// checkAutotune), which also records the configs; this file hands them out.
//
//===----------------------------------------------------------------------===//
#include "frontend/Autotune.h"

#include "frontend/SemaInternal.h"

namespace kiln {

std::string AutotuneConfig::text() const {
  std::string out;
  auto add = [&](const std::string &name, const std::string &value) {
    out += (out.empty() ? "" : ", ") + name + ": " + value;
  };
  for (const auto &[name, value] : defines)
    add(name, value);
  if (numWarps)
    add("num_warps", std::to_string(*numWarps));
  if (numStages)
    add("num_stages", std::to_string(*numStages));
  return "{" + out + "}";
}

SemaOptions AutotuneConfig::apply(SemaOptions base) const {
  // Appended after the caller's: the last -D of a name wins.
  base.defines.insert(base.defines.end(), defines.begin(), defines.end());
  if (numWarps)
    base.numWarps = numWarps;
  if (numStages)
    base.numStages = numStages;
  return base;
}

bool listAutotuneConfigs(uint32_t file, ir::Module &module, DiagnosticEngine &diags, const SemaOptions &options,
                         const std::string &kernel, std::optional<KernelAutotune> &out) {
  out.reset();
  sema::Sema s(module, diags, options);
  bool ok = s.run(file, /*specialize=*/false);
  auto it = s.globals.find(kernel);
  if (it == s.globals.end() || it->second.kind != ast::ItemKind::Kernel)
    return ok;
  auto attrs = s.kernelAttrs.find(ast::cast<ast::FunctionItem>(it->second.item));
  if (attrs != s.kernelAttrs.end())
    out = attrs->second.autotune;
  return ok;
}

} // namespace kiln
