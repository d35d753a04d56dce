//===- BundleBuilder.cpp - Generated code into a launchable bundle --------===//

#include "codegen/BundleBuilder.h"
#include "support/BlockMask.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>

namespace kiln::codegen {

rt::Target bundleTarget(Target target) {
  switch (target) {
  case Target::SM80: return rt::Target::SM80;
  case Target::SM90: return rt::Target::SM90;
  case Target::SM90a: return rt::Target::SM90a;
  case Target::SPIRV64: return rt::Target::SPIRV64;
  }
  return rt::Target::SM90;
}

std::optional<Target> targetForDevice(std::string_view runtimeTarget) {
  if (runtimeTarget == "spirv64")
    return Target::SPIRV64;
  if (!runtimeTarget.starts_with("sm_") || runtimeTarget.size() == 3)
    return std::nullopt;
  int capability = 0;
  for (char c : runtimeTarget.substr(3)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    capability = std::min(capability * 10 + (c - '0'), 100000);
  }
  if (capability == 90)
    return Target::SM90a;
  if (capability > 90)
    return Target::SM90;
  if (capability >= 80)
    return Target::SM80;
  return std::nullopt;
}

std::string compilerVersion() { return "kiln " KILN_VERSION; }

std::string sourceHash(const ir::Module &module) {
  llvm::SHA256 hash;
  SourceManager &sources = *module.sources;
  for (uint32_t file = 0; file < sources.size(); ++file) {
    const std::string *text = sources.text(file);
    // Length-prefixed, so that moving text from one file to the next changes the hash.
    std::string length = std::to_string(text ? text->size() : 0) + ":";
    hash.update(llvm::StringRef(length));
    if (text)
      hash.update(llvm::StringRef(*text));
  }
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::vector<rt::ConstValue> bundleConsts(const ir::Kernel &kernel) {
  std::vector<rt::ConstValue> out;
  for (const auto &[name, value] : kernel.constValues) {
    rt::ConstValue c{name, int64_t(0)};
    if (auto *i = std::get_if<int64_t>(&value))
      c.value = *i;
    else if (auto *d = std::get_if<double>(&value))
      c.value = *d;
    else if (auto *flag = std::get_if<bool>(&value))
      c.value = *flag;
    else
      continue; // const parameters are numbers or bools; the verifier keeps them so
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<rt::BundleBlockMask> bundleBlockMasks(const ir::Kernel &kernel, std::vector<rt::BundleParam> &params) {
  // A mask's five parameters are among `params`; the bundle says which, so that a
  // launcher can build them from the one mask its caller passes. Their names are the
  // mask's (NAME.rows, ...) whatever the IR calls them: Tile IR text has no dots in
  // value names.
  std::vector<rt::BundleBlockMask> out;
  for (const ir::BlockMaskParam &m : kernel.blockMasks) {
    out.push_back(rt::BundleBlockMask{m.name, static_cast<uint32_t>(m.blockRows), static_cast<uint32_t>(m.blockCols),
                                      m.firstParam, m.extents});
    for (unsigned i = 0; i < kBlockMaskParams && m.firstParam + i < params.size(); ++i)
      params[m.firstParam + i].name = m.name + kBlockMaskParamSuffixes[i];
  }
  return out;
}

rt::Bundle makeBundle(const ir::Module &module, const ir::Kernel &kernel, Target target,
                      const CodegenOptions &options, const CodegenResult &result) {
  rt::Bundle b;
  b.kernelName = kernel.name;
  b.entry = result.entry;
  // The workspace of a split kernel is the launcher's to pass: the bundle says how.
  const auto &params = kernel.params();
  for (size_t i = 0; i < kernel.numLaunchParams(); ++i) {
    const ir::Value &p = *params[i];
    b.params.push_back(rt::BundleParam{p.nameHint, p.type.dtype, p.type.pointer,
                                       p.type.pointer && options.assumeAlignedPointers ? 16u : 1u});
  }
  b.blockMasks = bundleBlockMasks(kernel, b.params);
  b.gridSplit = static_cast<uint32_t>(kernel.gridSplit.segments);
  b.workspaceBytes = kernel.gridSplit.usesWorkspace() ? static_cast<uint64_t>(kernel.gridSplit.workspaceBytes) : 0;
  b.clusterSplit = kernel.gridSplit.cluster;
  b.checked = options.checked;
  for (const auto &[index, divisor] : effectiveDivisibility(kernel, options))
    if (index < b.params.size() && !b.params[index].pointer && divisor > 1)
      b.params[index].divisibility = static_cast<uint32_t>(divisor);
  b.consts = bundleConsts(kernel);
  b.numWarps = static_cast<uint32_t>(kernel.numWarps);
  b.sharedBytes = static_cast<uint32_t>(result.sharedBytes);
  b.target = bundleTarget(target);
  b.compilerVersion = compilerVersion();
  b.sourceHash = sourceHash(module);
  if (kernel.loc.valid() && !kernel.loc.isCommandLine() && kernel.loc.file < module.sources->size()) {
    b.sourceFile = std::string(module.sources->name(kernel.loc.file));
    b.sourceLine = kernel.loc.line;
    b.sourceColumn = kernel.loc.col;
  }
  rt::CodeSection section;
  section.target = b.target;
  if (isNvptxTarget(target)) {
    section.kind = rt::SectionKind::PTX;
    section.bytes.assign(result.ptx.begin(), result.ptx.end());
  } else {
    section.kind = rt::SectionKind::SPIRV;
    section.bytes = result.spirv;
  }
  b.sections.push_back(std::move(section));
  return b;
}

} // namespace kiln::codegen
