//===- BundleBuilder.h - Generated code into a launchable bundle --*- C++ -*-===//
//
// A bundle (runtime/Bundle.h) is what the runtime loads without the compiler: the code
// plus the signature, the `const` values baked in, the launch shape and where the kernel
// came from. This file packs one code-generation result into one, so that every
// producer of bundles (dslc --emit=bundle, the JIT, the test and benchmark tools) fills
// the fields the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"
#include "runtime/Bundle.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen {

/// The runtime's name for a code-generation target.
rt::Target bundleTarget(Target target);

/// The target to compile for on a device whose runtime reports `runtimeTarget`
/// ("sm_90", "sm_86", "spirv64"; kiln_runtime_target): the most specific one whose code
/// runs there. sm_90a code runs on compute capability 9.0 alone; sm_80 and sm_90 PTX is
/// compiled forward by the driver for newer GPUs. nullopt when no target runs there.
std::optional<Target> targetForDevice(std::string_view runtimeTarget);

/// The compiler version recorded in bundles and cache keys: "kiln 0.1.0".
std::string compilerVersion();

/// Lowercase hex SHA-256 of every source text `module` was built from (the main file
/// and its imports, in the order they were loaded). Two modules with the same hash were
/// compiled from the same program text.
std::string sourceHash(const ir::Module &module);

/// The const values of `kernel` as a bundle records them.
std::vector<rt::ConstValue> bundleConsts(const ir::Kernel &kernel);

/// `kernel`'s block masks (a kernel's or a graph's) as a bundle lists them; the names
/// of their parameters in `params` become NAME.rows ... NAME.bitmaps.
std::vector<rt::BundleBlockMask> bundleBlockMasks(const ir::Kernel &kernel, std::vector<rt::BundleParam> &params);

/// Packs `result`, generated from `kernel` of `module` for `target` with `options`, into
/// a bundle with one code section. The divisibility the code assumes (16-byte aligned
/// pointers, CodegenOptions::paramDivisibility) is recorded per parameter, so the
/// runtime refuses a launch that breaks it instead of faulting.
rt::Bundle makeBundle(const ir::Module &module, const ir::Kernel &kernel, Target target,
                      const CodegenOptions &options, const CodegenResult &result);

} // namespace kiln::codegen
