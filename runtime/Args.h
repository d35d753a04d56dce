//===- Args.h - Checking and packing launch arguments ------------*- C++ -*-===//
//
// Before a launch reaches any driver, its arguments are checked against the kernel's
// signature from the bundle and packed into the kernel ABI both backends share:
// parameters in signature order, pointers as 8-byte device addresses, scalars at their
// dtype's natural size (bool as one byte 0/1, f16/bf16/f8 as their raw bits).
//
// This is pure logic — buffer handles are resolved through a callback — so every rule
// here is unit-tested without a device.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"
#include "runtime/kiln_runtime.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::rt {

/// What a launch needs to know about a buffer handle.
struct BufferRef {
  uint64_t address = 0;       ///< device address of the buffer's first byte
  uint64_t size = 0;          ///< bytes
  std::optional<DType> dtype; ///< element dtype, when the buffer is typed
};

/// Looks up a buffer handle. Returns nullopt and sets `why` when the handle cannot be
/// used here (null, or it belongs to another runtime).
using BufferResolver = std::function<std::optional<BufferRef>(const kiln_buffer *, std::string &why)>;

/// Arguments in the kernel ABI: one 8-byte slot per parameter, the value at its start.
struct PackedArgs {
  std::vector<uint64_t> slots;
  std::vector<uint32_t> sizes; ///< bytes each parameter occupies

  /// Pointers to each slot, as cuLaunchKernel's kernelParams wants them. Valid while
  /// this object is alive and unchanged.
  std::vector<void *> pointers();
};

/// Checks `args` against `params` and packs them into `out`. Returns "" on success,
/// else a message naming the kernel, the parameter and what is wrong.
std::string packLaunchArgs(const std::string &kernelName, const std::vector<BundleParam> &params,
                           std::span<const kiln_arg> args, const BufferResolver &resolve, PackedArgs &out);

/// "add(x: *f32, n: i32)", for messages.
std::string signatureString(const std::string &kernelName, const std::vector<BundleParam> &params);

} // namespace kiln::rt
