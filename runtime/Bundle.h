//===- Bundle.h - The .kbin file: one compiled kernel and its metadata -*- C++ -*-===//
//
// A bundle is what `dslc` hands to the runtime: the kernel's signature, the const values
// it was specialized for, launch shape (num_warps, shared memory) and one or more code
// sections (PTX text for an sm_* target, SPIR-V for spirv64). The runtime trusts nothing
// in a file: parseBundle() checks the magic, version, sizes and checksums of every part
// and then the meaning of every field, and says which check failed.
//
// The file is the container of Container.h with the magic "KILNBNDL": the metadata is
// one `key value` line per field (BundleMetadata.h), each section one target's code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/BlockMask.h"
#include "support/ElementType.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln::rt {

/// The code targets a bundle section can be compiled for.
enum class Target : uint32_t { SM80 = 1, SM90 = 2, SM90a = 3, SPIRV64 = 4 };

/// "sm_80", "sm_90", "sm_90a", "spirv64".
std::string_view targetName(Target t);
std::optional<Target> parseTarget(std::string_view name);
/// Whether the target's code is PTX (all sm_* targets) rather than SPIR-V.
bool isPtxTarget(Target t);

enum class SectionKind : uint32_t { PTX = 1, SPIRV = 2 };
std::string_view sectionKindName(SectionKind k);

/// One kernel parameter, in signature order (the order of launch arguments).
struct BundleParam {
  std::string name;
  DType dtype = DType::I32; ///< the scalar dtype, or the pointee when `pointer`
  bool pointer = false;
  /// What the code was compiled assuming of the argument: a pointer's byte address, or
  /// an integer scalar's value, is a multiple of this power of two (1: nothing assumed).
  /// Specializing on it is what lets `x + row * stride + cols` become 16-byte vector
  /// accesses; the runtime refuses a launch that breaks the assumption.
  uint32_t divisibility = 1;

  bool operator==(const BundleParam &) const = default;
};

/// A `block_mask<BM, BN>` parameter of the source (support/BlockMask.h). The kernel takes
/// it as five parameters from `firstParam` on — NAME.rows (i32), NAME.cols (i32),
/// NAME.row_start (*i32), NAME.blocks (*i32), NAME.bitmaps (*u32) — which a launcher
/// builds from the one mask its caller gives; the runtime passes them as any others.
struct BundleBlockMask {
  std::string name;
  uint32_t blockRows = 0, blockCols = 0; ///< BM and BN: powers of two from 1 to 256
  uint32_t firstParam = 0;               ///< the index of NAME.rows in `params`
  /// The extents the kernel declares (block_mask<BM, BN, ROWS, COLS>), checked at launch.
  std::optional<BlockMaskExtents> extents = std::nullopt;

  bool operator==(const BundleBlockMask &) const = default;
};

/// A `const` parameter's value baked into this specialization.
struct ConstValue {
  std::string name;
  std::variant<int64_t, double, bool> value;

  bool operator==(const ConstValue &o) const;
};

struct CodeSection {
  SectionKind kind = SectionKind::PTX;
  Target target = Target::SM90;
  std::vector<uint8_t> bytes; ///< PTX text (no trailing NUL) or a SPIR-V module

  bool operator==(const CodeSection &) const = default;
};

struct Bundle {
  std::string kernelName; ///< the Kiln kernel's name
  std::string entry;      ///< the symbol of the entry point in the code sections
  std::vector<BundleParam> params;
  /// The block masks among `params`, none sharing a parameter (empty for bundles written
  /// before masks existed).
  std::vector<BundleBlockMask> blockMasks;
  std::vector<ConstValue> consts;
  uint32_t numWarps = 4;
  uint32_t sharedBytes = 0;     ///< dynamic shared (local) memory per program
  /// A kernel whose reduction runs over several programs (ir::GridSplit, SplitLaunch.h):
  /// every launcher runs `gridSplit` programs along x for each program asked for and
  /// passes, after the arguments, a workspace of `workspaceBytes` per program asked for
  /// that is zero before its first use. 1 and 0 for every other kernel (and for bundles
  /// written before the fields existed).
  uint32_t gridSplit = 1;
  uint64_t workspaceBytes = 0;
  /// The `gridSplit` programs of each program asked for run as one thread-block cluster
  /// (sm_90) and need no workspace. The code itself fixes the cluster's size
  /// (.reqnctapercluster), so an ordinary launch of the split grid runs it.
  bool clusterSplit = false;
  /// Checked mode (docs/checked.md): the kernel takes, after its parameters (and the
  /// workspace), one u64 per pointer parameter, the bytes from the pointer passed to the
  /// end of its buffer, then a zeroed check record (support/CheckRecord.h) that every
  /// launcher passes and reads back after the launch.
  bool checked = false;
  Target target = Target::SM90; ///< the target the kernel was compiled for
  std::string compilerVersion;
  std::string sourceHash; ///< lowercase hex digest of the Kiln source
  /// Where the kernel is defined, when known (for messages); line 0 = unknown.
  std::string sourceFile;
  uint32_t sourceLine = 0;
  uint32_t sourceColumn = 0;
  std::vector<CodeSection> sections;

  bool operator==(const Bundle &) const = default;

  /// "softmax.kiln:12:1", or "" when the location is unknown.
  std::string sourceLocation() const;
};

/// Format version written by this runtime and the only one it reads.
inline constexpr uint32_t kBundleFormatVersion = 1;

/// Checks the meaning of every field (names, ranges, block masks against the parameters
/// they stand for, section kinds vs targets, that a section for `target` exists).
/// Returns "" when valid, else the first problem.
std::string validateBundle(const Bundle &bundle);

/// The file bytes of a valid bundle. On an invalid bundle returns an empty vector and
/// sets `error`.
std::vector<uint8_t> serializeBundle(const Bundle &bundle, std::string &error);

/// Parses and validates bundle file bytes. On failure returns nullopt and sets `error`
/// to a reason such as "truncated: ..." or "metadata checksum mismatch".
std::optional<Bundle> parseBundle(std::span<const uint8_t> bytes, std::string &error);

/// The bytes of the file at `path`, read up to the largest size a bundle may have; on
/// failure nullopt with `error` naming the path. Nothing is parsed.
std::optional<std::vector<uint8_t>> readBundleBytes(const std::string &path, std::string &error);

/// Reads and parses `path` (errors are prefixed with the path). When `ioError` is given
/// it is set to whether the failure was in reading the file rather than in its content.
std::optional<Bundle> readBundle(const std::string &path, std::string &error, bool *ioError = nullptr);

/// Writes `bundle` to `path` atomically: a temporary file beside it, flushed to disk,
/// then renamed over `path`. Returns false and sets `error` on failure.
bool writeBundleAtomic(const std::string &path, const Bundle &bundle, std::string &error);

/// Whether `bytes` start as a kernel bundle does (nothing else is checked).
bool isKernelBundle(std::span<const uint8_t> bytes);

} // namespace kiln::rt
