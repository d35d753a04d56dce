//===- L2Flush.h - The cache flush between timed launches ---------*- C++ -*-===//
//
// Before every timed launch kiln-bench overwrites a 256 MiB buffer, so that the L2
// cache holds none of the workload's inputs, as triton.testing.do_bench does for the
// peers. The overwrite is a kernel launch (bench/kernels/l2_flush.kiln), not the
// runtime's blocking fill: the GPU is still writing the buffer while the host records
// the start event and enqueues the timed kernel, so the host's launch latency stays
// out of the measured interval, exactly as it does for do_bench's cache.zero_().
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/Workloads.h"

namespace kiln::bench {

inline constexpr int64_t kL2FlushBytes = int64_t(256) << 20;
inline constexpr int64_t kL2FlushBlock = 4096; ///< i32 elements per program

/// The flush kernel, compiled by kiln-bench-prepare like a workload.
inline Workload l2FlushKernel() {
  Workload w;
  w.name = "l2_flush";
  w.label = "L2 flush";
  w.kind = WorkloadKind::VectorAdd; // unused: the flush has no Problem
  w.source = "bench/kernels/l2_flush.kiln";
  w.kernel = "l2_flush";
  w.defines = {{"BLOCK", std::to_string(kL2FlushBlock)}};
  w.numWarps = 4;
  w.divisibility = {{"n", 16}};
  return w;
}

} // namespace kiln::bench
