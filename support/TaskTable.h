//===- TaskTable.h - The persistent kernel's launch table and sync words -*- C++ -*-===//
//
// A graph compiled to one persistent kernel (docs/graphs.md) runs its launches as tasks:
// each program of each launch is one task, numbered in launch order. What the kernel
// needs to know of one run — which launches ran, on which grid, with which arguments,
// and what each must wait for — is a table the host writes before the launch; what the
// workers share — the next task to claim, each launch's count of finished tasks, the
// watchdog's error record — is an array of 32-bit words in global memory that persists
// from run to run. The code generator (codegen/Megakernel.cpp) reads both; the host
// (tools/launch/GraphRun.cpp) writes the table and reads the error record. This header
// is the contract between them, so it sits below both.
//
// Counters are never reset between runs: they only grow, and the host passes where this
// run starts (the claim base, and how many runs the table has served), so repeated runs
// need no memset; a table stays valid for as long as the same launches run with the same
// arguments, so a repeated call writes nothing before its launch. Comparisons are
// modulo 2^32.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::tasks {

/// One record per launch that runs, of kRecordHeaderWords + the widest kernel's
/// argument count 64-bit words (the same for every record of a table).
///   word 0: kernel kind (bits 0-31), index of the launch's first task (bits 32-63)
///   word 1: grid x (bits 0-31), grid y (bits 32-63)
///   word 2: grid z (bits 0-31), the slot whose counter the launch waits on, or -1
///   word 3: the count that counter must reach in the table's first run (bits 0-31),
///           the launch's own slot (bits 32-63)
///   word 4: how much that count grows per run (bits 0-31: the tasks of the launch
///           waited on), so run r of the table waits for word3 + r * word4
///   word 5...: the arguments: a pointer's device address, or a scalar's bits in the
///              low bits of the word (f32 as its 32 bits, bool as 0 / 1)
inline constexpr unsigned kRecordHeaderWords = 5;

/// The sync words (uint32_t each).
inline constexpr unsigned kClaimWord = 0;     ///< tasks claimed so far, over all runs
inline constexpr unsigned kAbortWord = 1;     ///< nonzero: the run was stopped
inline constexpr unsigned kErrorCodeWord = 2; ///< the first error's code (0: none)
inline constexpr unsigned kErrorTaskWord = 3; ///< the task that saw it
inline constexpr unsigned kErrorSlotWord = 4; ///< the slot it waited on
inline constexpr unsigned kErrorSeenWord = 5; ///< the counter's value when it gave up
inline constexpr unsigned kErrorTargetWord = 6; ///< the value it waited for
/// Then one finished-task counter per slot (a slot is one `launch` of the graph's body).
inline constexpr unsigned kFirstCounterWord = 8;

/// Error codes of kErrorCodeWord.
inline constexpr uint32_t kErrorWaitTimeout = 1;

/// The megakernel's parameters, in order (docs/graphs.md has the table):
///   table: *u64, launches: i32, tasks: i32, sync: *u32, claim_base: u32, timeout_ns: i64,
///   trace: *u64 (null: no trace), table_runs: u32 (the runs of this table before this one)
inline constexpr unsigned kNumParams = 8;

/// With a trace buffer, each task's thread 0 writes kTraceWords 64-bit words at
/// trace[task * kTraceWords]: when it claimed the task, when its wait ended and when
/// the task was done (%globaltimer, ns), and the worker (bits 0-31) and the SM it ran on
/// (bits 32-63).
inline constexpr unsigned kTraceWords = 4;

/// Events, normalised (MPK): every task waits on at most one counter. `after[i]` lists
/// the earlier launches (indices into one run's launches, all < i) that launch i must
/// follow. Returns, per launch, the one launch whose counter it waits on, or -1. A
/// launch with several predecessors waits on the latest of them, which takes the others
/// over as its own; that one comes earlier, so no cycle can form, and finishing it
/// still implies that every original predecessor finished.
std::vector<int> singleWaits(std::vector<std::vector<unsigned>> after);

} // namespace kiln::tasks
