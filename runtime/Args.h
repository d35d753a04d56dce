//===- Args.h - Checking and packing launch arguments ------------*- C++ -*-===//
//
// Before a launch reaches any driver, its arguments are checked against the kernel's
// signature from the bundle and packed into the kernel ABI both backends share:
// parameters in signature order, pointers as 8-byte device addresses, scalars at their
// dtype's natural size (bool as one byte 0/1, f16/bf16/f8 as their raw bits). A
// block_mask parameter is five parameters of the bundle; it takes one mask argument,
// which becomes those five, or its five parts one by one.
//
// This is pure logic — buffer and mask handles are resolved through callbacks — so every
// rule here is unit-tested without a device.
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

/// What a launch needs to know about a block mask handle: its extents and block sizes,
/// and the device buffers holding its three arrays (support/BlockMask.h), which are
/// resolved and checked like buffers passed by the caller.
struct MaskRef {
  int32_t rows = 0, cols = 0;
  int32_t blockRows = 0, blockCols = 0;
  const kiln_buffer *rowStart = nullptr, *blocks = nullptr, *bitmaps = nullptr;
};

/// Looks up a block mask handle. Returns nullopt and sets `why` when the handle cannot
/// be used here (null, destroyed, or of another runtime).
using MaskResolver = std::function<std::optional<MaskRef>(const kiln_block_mask *, std::string &why)>;

/// Arguments in the kernel ABI: one 8-byte slot per parameter, the value at its start.
struct PackedArgs {
  std::vector<uint64_t> slots;
  std::vector<uint32_t> sizes; ///< bytes each parameter occupies

  /// Pointers to each slot, as cuLaunchKernel's kernelParams wants them. Valid while
  /// this object is alive and unchanged.
  std::span<void *const> pointers();

private:
  std::vector<void *> pointers_; ///< kept, so that a reused PackedArgs allocates nothing
};

/// Why a launch's arguments were refused: the status to report and a message naming the
/// kernel, the parameter and what is wrong. KILN_ERROR_INVALID_VALUE for a block mask
/// handle that cannot be used, whose block sizes are not the parameter's or whose
/// extents are not those the kernel declares, KILN_ERROR_ARGUMENT_MISMATCH for
/// everything else.
struct ArgsError {
  kiln_status status = KILN_ERROR_ARGUMENT_MISMATCH;
  std::string message;
};

/// Checks `args` against `params` and packs them into `out`, one slot per parameter.
/// `masks` are the kernel's block masks (Bundle::blockMasks): at a mask's first
/// parameter, a KILN_ARG_BLOCK_MASK argument, resolved through `resolveMask`, fills all
/// five of its slots; any other argument starts its five parts. Either way a mask with
/// declared extents must have them. A caller without masks passes none and may leave
/// `resolveMask` empty. Returns nullopt on success.
std::optional<ArgsError> packLaunchArgs(const std::string &kernelName, const std::vector<BundleParam> &params,
                                        std::span<const BundleBlockMask> masks, std::span<const kiln_arg> args,
                                        const BufferResolver &resolve, const MaskResolver &resolveMask,
                                        PackedArgs &out);

/// The arguments of a call of graph `graphName` as one per parameter of `params`: a
/// KILN_ARG_BLOCK_MASK at a mask's first parameter becomes its five parts (its extents
/// as integers, its arrays as buffers) after its block sizes are checked; anything else
/// is copied, to be checked as the graph reads it. Counts and declared extents are
/// checked as packLaunchArgs checks them. Returns nullopt on success.
std::optional<ArgsError> expandMaskArgs(const std::string &graphName, const std::vector<BundleParam> &params,
                                        std::span<const BundleBlockMask> masks, std::span<const kiln_arg> args,
                                        const MaskResolver &resolveMask, std::vector<kiln_arg> &out);

/// "add(x: *f32, n: i32)", for messages; with `masks`, each mask is spelled once as
/// "mask: block_mask<BM, BN>" in place of its five parameters.
std::string signatureString(const std::string &kernelName, const std::vector<BundleParam> &params,
                            std::span<const BundleBlockMask> masks = {});

} // namespace kiln::rt
