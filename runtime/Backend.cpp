//===- Backend.cpp - Backend-neutral helpers: code section choice ---------===//
//
// Which section of a bundle a device runs is decided here, without a device, so the
// rules are unit-tested: a bundle may carry PTX for several sm_* targets, and the
// device should JIT the most specific one it can run.
//
//===----------------------------------------------------------------------===//
#include "runtime/Backend.h"

namespace kiln::rt {

std::string cudaArchName(int major, int minor) { return "sm_" + std::to_string(major) + std::to_string(minor); }

// Compute capability (as major*10 + minor) a PTX target needs; sm_90a also needs
// exactly 9.0 because its architecture-specific instructions (wgmma, setmaxnreg) do
// not exist on later generations.
static int requiredCapability(Target t) {
  switch (t) {
  case Target::SM80: return 80;
  case Target::SM90: return 90;
  case Target::SM90a: return 90;
  case Target::SPIRV64: return -1;
  }
  return -1;
}

// Preference among runnable sections: the newer the target, the better the code.
static int preference(Target t) {
  switch (t) {
  case Target::SM80: return 1;
  case Target::SM90: return 2;
  case Target::SM90a: return 3;
  case Target::SPIRV64: return 0;
  }
  return 0;
}

static std::string targetList(const Bundle &bundle) {
  std::string s;
  for (size_t i = 0; i < bundle.sections.size(); ++i)
    s += (i ? ", " : "") + std::string(targetName(bundle.sections[i].target));
  return s;
}

const CodeSection *pickCudaSection(const Bundle &bundle, int major, int minor, std::string &why) {
  int cc = major * 10 + minor;
  const CodeSection *best = nullptr;
  for (const CodeSection &s : bundle.sections) {
    if (s.kind != SectionKind::PTX)
      continue;
    int need = requiredCapability(s.target);
    bool runs = s.target == Target::SM90a ? cc == 90 : need >= 0 && cc >= need;
    if (runs && (!best || preference(s.target) > preference(best->target)))
      best = &s;
  }
  if (!best)
    why = kernelContext(bundle) + " has code for " + targetList(bundle) + " only; the device is " +
          cudaArchName(major, minor);
  return best;
}

const CodeSection *pickSpirvSection(const Bundle &bundle, std::string &why) {
  for (const CodeSection &s : bundle.sections)
    if (s.kind == SectionKind::SPIRV)
      return &s;
  why = kernelContext(bundle) + " has code for " + targetList(bundle) + " only; Level Zero needs spirv64";
  return nullptr;
}

std::string kernelContext(const Bundle &bundle) {
  std::string s = "kernel '" + bundle.kernelName + "'";
  std::string loc = bundle.sourceLocation();
  if (!loc.empty())
    s += " (" + loc + ")";
  return s;
}

} // namespace kiln::rt
