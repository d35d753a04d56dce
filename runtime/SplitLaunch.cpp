//===- SplitLaunch.cpp - Launching a kernel split over programs -----------===//
#include "runtime/SplitLaunch.h"

#include <cstdint>

namespace kiln::rt {

std::string planSplitLaunch(const Bundle &b, kiln_grid grid, kiln_grid maxGrid, SplitGrid &out) {
  const uint64_t x = uint64_t(grid.x) * b.gridSplit;
  // Program ids are i32 in the kernel.
  const uint64_t limit = std::min<uint64_t>(maxGrid.x, INT32_MAX);
  if (x > limit)
    return "kernel '" + b.kernelName + "' runs " + std::to_string(b.gridSplit) +
           " programs for each program asked for (its reduction is split over them): a grid x of " +
           std::to_string(grid.x) + " becomes " + std::to_string(x) + ", above the limit of " + std::to_string(limit);
  uint64_t bytes = b.clusterSplit ? 0 : b.workspaceBytes;
  for (uint32_t g : {grid.x, grid.y, grid.z})
    if (__builtin_mul_overflow(bytes, uint64_t(g), &bytes) || bytes > uint64_t(INT64_MAX))
      return "kernel '" + b.kernelName + "' needs a workspace of " + std::to_string(b.workspaceBytes) +
             " bytes for each of the grid's programs, more than can be allocated";
  out.grid = kiln_grid{static_cast<uint32_t>(x), grid.y, grid.z};
  out.workspaceBytes = bytes;
  return "";
}

Status Workspace::reserve(Backend &backend, uint64_t bytes) {
  if (bytes <= bytes_)
    return Status::success();
  if (address_) {
    if (Status s = backend.synchronize(); !s.ok())
      return s;
    release(backend);
  }
  uint64_t address = 0;
  if (Status s = backend.alloc(bytes, address); !s.ok())
    return s;
  if (Status s = backend.fill(address, 0, bytes); !s.ok()) {
    backend.release(address);
    return s;
  }
  address_ = address;
  bytes_ = bytes;
  return Status::success();
}

void Workspace::release(Backend &backend) {
  if (address_)
    backend.release(address_);
  address_ = 0;
  bytes_ = 0;
}

} // namespace kiln::rt
