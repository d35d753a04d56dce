//===- ResourceUsage.h - What a kernel takes of an SM, and how many fit -*- C++ -*-===//
//
// `dslc --resource-usage` (docs/dslc.md), what nvcc's --resource-usage and ptxas -v tell
// a CUDA programmer: a kernel's threads per program and shared memory (known from code
// generation), its registers per thread and the bytes it spills (known only once the PTX
// is assembled: ptxas allocates registers, so it is asked), and from those its occupancy
// on the target: how many programs fit on one SM at once, and which resource stops one
// more. The performance analyst of kiln-agent reads the same figures (docs/agent.md).
//
// The occupancy follows the CUDA occupancy calculator's rules for the target's limits
// (sm_80: A100, sm_90: H100 / H200): registers are allocated per warp in units of 256,
// shared memory per program with 1 KiB reserved by the system, and at most 32
// programs, 64 warps and 2048 threads per SM. SPIR-V has no such report here: its
// registers are the Level Zero driver's to allocate.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Codegen.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::codegen {

/// What ptxas reports of one entry.
struct RegisterReport {
  int64_t registers = 0;         ///< per thread
  int64_t spillStoreBytes = 0;   ///< bytes stored to local memory for spills, per thread
  int64_t spillLoadBytes = 0;
  int64_t stackBytes = 0;        ///< the stack frame
  int64_t staticSharedBytes = 0; ///< .shared arrays of the PTX (the arena is dynamic)
};

/// Programs of one kernel resident on one SM.
struct Occupancy {
  int64_t programsPerSM = 0;
  int64_t warpsPerSM = 0;
  int64_t maxWarpsPerSM = 0;
  /// What stops one more program: "threads", "registers", "shared memory" or "programs".
  std::string limiter;
};

struct ResourceUsage {
  std::string kernel;
  Target target = Target::SM90;
  int64_t threads = 0;     ///< per program
  int64_t sharedBytes = 0; ///< the dynamic arena, per program
  std::optional<RegisterReport> registers;
  std::string registersUnknown; ///< why `registers` is empty
  std::optional<Occupancy> occupancy; ///< needs the registers
};

/// Assembles `ptx` for `target` with ptxas -v and reads the report of `entry`. ptxas is
/// $KILN_PTXAS, else the one on PATH, else /usr/local/cuda/bin/ptxas. Nullopt with `why`
/// when there is none or it fails.
std::optional<RegisterReport> assembleForRegisters(const std::string &ptx, const std::string &entry, Target target,
                                                   std::string &why);

/// Parses ptxas -v output (its standard error) for `entry`; nullopt when it has no
/// "Used N registers" line for it.
std::optional<RegisterReport> parsePtxasReport(const std::string &text, const std::string &entry);

/// The occupancy of a kernel of `threads` threads, `registers` registers per thread and
/// `sharedBytes` of shared memory per program on an NVIDIA target.
Occupancy occupancyOf(Target target, int64_t threads, int64_t registers, int64_t sharedBytes);

/// Everything above for a kernel code generation produced (`result`).
ResourceUsage resourceUsage(const std::string &kernel, Target target, const CodegenResult &result);

/// One line for people: "256 threads, 2048 bytes of shared memory; 70 registers, no
/// spills; occupancy: 3 programs (24 of 64 warps) per SM, limited by registers".
std::string describe(const ResourceUsage &usage);

/// The same as one JSON object (no trailing newline).
std::string toJson(const ResourceUsage &usage);

} // namespace kiln::codegen
