//===- SplitLaunch.h - Launching a kernel split over programs ------*- C++ -*-===//
//
// A kernel whose reduction runs over several programs (a bundle with grid_split S > 1)
// is launched with S programs along x for each program asked for, and a workspace of
// workspace_bytes per program asked for as a hidden last argument, zero before its
// first use: the kernel's last segment of every program puts its counter back to 0, so
// a workspace zeroed once serves every later launch. The C API (CApi.cpp) does this for
// both backends, so kiln-run, dslc run, the JIT and every C or C++ caller launch split
// kernels exactly as they launch the others.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"

#include <cstdint>
#include <string>

namespace kiln::rt {

struct SplitGrid {
  kiln_grid grid{0, 0, 0};     ///< what the device runs
  uint64_t workspaceBytes = 0; ///< the workspace this launch needs
};

/// The device grid and workspace of a launch of `bundle` with `grid` (non-empty). ""
/// on success, else why not (the split grid exceeds `maxGrid` or the kernel's i32
/// program ids, or the workspace would exceed 2^63 bytes).
std::string planSplitLaunch(const Bundle &bundle, kiln_grid grid, kiln_grid maxGrid, SplitGrid &out);

/// The device workspace of one loaded kernel, kept across launches (they run in order on
/// the runtime's one queue) and grown when a launch needs more.
class Workspace {
public:
  /// Makes it at least `bytes` long; a new allocation is zeroed before any launch that
  /// follows. Growing waits for the earlier launches, which may still use the old one.
  Status reserve(Backend &backend, uint64_t bytes);
  /// Frees the allocation (the runtime must be idle or the kernel's launches finished).
  void release(Backend &backend);
  uint64_t address() const { return address_; }

private:
  uint64_t address_ = 0;
  uint64_t bytes_ = 0;
};

} // namespace kiln::rt
