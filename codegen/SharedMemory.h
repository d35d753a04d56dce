//===- SharedMemory.h - The per-kernel shared-memory arena ---------*- C++ -*-===//
//
// Ops that move elements between threads use scratch space in shared memory (NVPTX
// addrspace 3, SPIR-V Workgroup storage). Every such op runs between barriers and is
// finished with its scratch before the next one starts, so all of them share one arena
// that starts at offset 0; the arena is as large as the largest op needs.
//
// An op's scratch is a list of areas (each aligned to 16 bytes). The lowering of the op
// and the planner that sizes the arena both ask `scratchAreas`, so they cannot disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Layout.h"
#include "ir/IR.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

/// Bytes one element of dtype `t` (or a pointer) takes in shared memory. Elements are
/// kept in their register form there: bool as a byte, the narrow floats as f32.
int64_t sharedElementBytes(const Type &type);

/// Elements of padding after every row of a tensor-core dot's operands in shared
/// memory: 16 bytes, so that the eight 16-byte rows one ldmatrix reads start in
/// distinct banks whatever the row length.
inline constexpr int64_t kMmaRowPad = 8;

/// How a `dot` is lowered (LowerDot.cpp); its scratch follows from it.
enum class DotPath {
  Fma,     ///< both operands in their compute type, multiplies and adds per thread
  MmaSync, ///< mma.sync: 16-bit operands in padded rows (kMmaRowPad)
  Wgmma,   ///< wgmma (sm_90a): 16-bit operands in swizzled 1024-byte-aligned blocks
};

/// Bytes wgmma's swizzle patterns repeat after: an operand buffer starting at a multiple
/// of it lets the lowering compute the swizzle from offsets in the arena.
inline constexpr int64_t kWgmmaOperandAlign = 1024;
/// `bytes` rounded up to kWgmmaOperandAlign: the size of an operand buffer.
inline int64_t wgmmaAligned(int64_t bytes) {
  return (bytes + kWgmmaOperandAlign - 1) / kWgmmaOperandAlign * kWgmmaOperandAlign;
}

/// The scratch areas of a `dot` lowered along `path`.
std::vector<int64_t> dotScratchAreas(const ir::Op &dot, DotPath path);

/// What an op's scratch looks like; chosen once and used by planner and lowering alike.
struct ScratchPlan {
  std::vector<int64_t> offsets; ///< byte offset of each area in the arena
  int64_t totalBytes = 0;
};

/// Sizes of the scratch areas `op` needs in a program of `numThreads` threads (empty:
/// none). `warpShuffle` tells whether threads combine values with warp shuffles (NVPTX);
/// `maxVec` is the kernel's chunkLimit (Layout.h). A `dot` gets its FMA path's areas
/// here; the tensor-core paths' come from dotScratchAreas.
std::vector<int64_t> scratchAreas(const ir::Op &op, int64_t numThreads, bool warpShuffle,
                                  int64_t maxVec = kDefaultChunkLimit);

/// Bytes of one component's partials when the threads of a group combine them
/// (Lowering::combineGroup). With warp shuffles a warp combines in registers and
/// publishes one value, into one of two slots so that two combines in a row (a
/// softmax's max, then its sum) need one barrier each; without, the combine is a tree
/// through shared memory with a slot per thread. Each area is a multiple of 16 bytes.
int64_t partialAreaBytes(int64_t elementBytes, int64_t numThreads, bool warpShuffle);

/// True when a reduce (sum, prod, max, min), argmax or argmin along the last axis can
/// combine the operand in registers (every line's chunks sit in whole register rounds
/// of all threads, or in aligned groups of threads); it then needs no copy of the tile
/// in shared memory. Order-free kinds only: custom combiners keep index order instead.
bool reducesInRegisters(const ir::Op &op, int64_t numThreads,
                        int64_t maxVec = kDefaultChunkLimit);

/// The words a value of `type` takes in a slot of a cluster exchange (LowerCluster.cpp):
/// one for a scalar, which every thread holds; a tile's registers of every thread.
int64_t exchangeWords(const Type &type, int64_t numThreads, int64_t maxVec);
/// Bytes of one such word: 8 for a 64-bit value, 4 for the others.
int64_t exchangeWordBytes(const Type &type);

/// Lays areas out back to back, each aligned to 16 bytes.
ScratchPlan layoutAreas(const std::vector<int64_t> &sizes);

/// The most shared memory the cp.async ring of one loop may take (LowerDot.cpp): within
/// what two programs of an H100/H200 SM may use, so that a kernel of a warpgroup or two
/// can still run two programs per SM.
inline constexpr int64_t kMaxPipelineRingBytes = 112 * 1024;

/// Whether a ring of `stages` buffers of `stageBytes` each, streamed for `products`
/// wgmma dots of a loop, may publish its buffers by mbarriers (LowerDot.cpp,
/// MmaPipeline::published): three buffers or more of 32 KiB or more, for several
/// products. The planner reserves the mbarriers for such a ring; the lowering publishes
/// it only where a program has two warpgroups or more, which then need not step
/// together. Measured on the H200 (docs/codegen.md): attention at BM 128 on two
/// warpgroups +1% to +12% (dense and the six sparse masks); on one warpgroup 4-8% slower
/// (the copies run one iteration less far ahead); with 16 KiB buffers up to 14% slower;
/// a lone product (a matmul) 5-36% slower than with its copies issued inside its wgmma
/// window.
inline bool publishesRing(int64_t products, int64_t stages, int64_t stageBytes) {
  return products > 1 && stages >= 3 && stageBytes >= 32 * 1024;
}

/// The bytes after the ring (and its residents) that hold a published ring's mbarriers.
inline int64_t ringBarrierBytes(int64_t stages) { return 8 * stages; }

/// Shared memory for the ring of `forOp` if its loop streams its tensor-core dots'
/// operands: `stages` buffers (as many as fit kMaxPipelineRingBytes; 0 below two) of the
/// operands that come straight from loads of the body; 0 when a dot reads a load that
/// cannot be streamed (masked, .cv) or the body writes memory. A reservation: the
/// lowering streams only when the rest of the body allows it (mmaPipelineFor), and then
/// uses as many stages as the arena holds.
/// `residentBytes(dot)`, when given, is what a dot's A operand takes when the loop stages
/// it once, before its first iteration (an operand computed outside the loop that the
/// product does not read from registers: the queries of attention where they cannot stay
/// in registers); those areas follow the ring, which then gets fewer stages if need be.
int64_t pipelineRingBytes(const ir::Op &forOp, int64_t stages, DotPath (*dotPath)(const ir::Op &, const void *),
                          const void *ctx, int64_t (*residentBytes)(const ir::Op &, const void *) = nullptr);

/// The arena size of a whole kernel: the largest scratch of any op, over all regions,
/// and the rings of loops that may stream (pipelineRingBytes).
/// `dotPath(op)` says how each dot is lowered (null: the FMA path); `warpShuffle` as for
/// scratchAreas.
/// The exchanges of a cluster (cluster_exchange) get an area of their own after the
/// rest, at `*exchangeBase` when asked: the other programs of the cluster may read it
/// while this one goes on to ops that reuse the arena.
int64_t planArena(const ir::Kernel &kernel, int64_t numThreads, bool warpShuffle,
                  DotPath (*dotPath)(const ir::Op &, const void *), const void *ctx,
                  int64_t *exchangeBase = nullptr,
                  int64_t (*residentBytes)(const ir::Op &, const void *) = nullptr);

} // namespace kiln::codegen
