//===- TaskTable.h - The persistent kernel's launch table and sync words -*- C++ -*-===//
//
// A graph compiled to one persistent kernel (docs/graphs.md) runs its launches as tasks:
// each program of each launch is one task, numbered in launch order. What the kernel
// needs to know of one run — which launches ran, on which grid, with which arguments,
// and which event each task waits on and triggers (runtime/TaskEvents.h) — is a table
// the host writes before the launch; what the workers share — the next task to claim,
// each event's count of finished tasks, the watchdog's error record — is an array of
// 32-bit words in global memory that persists from run to run. The code generator
// (codegen/Megakernel.cpp) reads both; the host (runtime/GraphLaunch.cpp) writes the
// table and reads the error record. This header is the contract between them, so it
// sits below both.
//
// Counters are never reset between runs of one table: they only grow, and the host
// passes where this run starts (the claim base, and how many runs the table has
// served), so repeated runs need no memset and a repeated call writes nothing before
// its launch. Writing a new table zeroes them. Comparisons are modulo 2^32.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace kiln::tasks {

/// One record per launch that runs, of kRecordHeaderWords + the widest kernel's
/// argument count 64-bit words (the same for every record of a table).
///   word 0: kernel kind (bits 0-31), index of the launch's first task (bits 32-63)
///   word 1: grid x (bits 0-31), grid y (bits 32-63)
///   word 2: grid z (bits 0-31)
///   word 3...: the arguments: a pointer's device address, or a scalar's bits in the
///              low bits of the word (f32 as its 32 bits, bool as 0 / 1)
/// The task words, a buffer of their own (the parameter task_events; a separate pointer
/// because an offset into the table would be a value the optimiser keeps in registers
/// across every task's code), kTaskWords 64-bit words per task:
///   word 0: the event it waits on, or kNoEvent (bits 0-31); the event it triggers,
///           or kNoEvent (bits 32-63)
///   word 1: the count the waited event's counter must reach in the table's first run
///           (bits 0-31) and how much that grows per run (bits 32-63): both the event's
///           size, so run r (from 0) waits for size * (r + 1). Two fields, so that the
///           kernel computes first + r * growth from two loaded values, in the loop; the
///           product (r + 1) * size would be hoisted out of it and hold a register
///           across every task's code.
inline constexpr unsigned kRecordHeaderWords = 3;
inline constexpr unsigned kTaskWords = 2;
inline constexpr uint32_t kNoEvent = 0xffffffffu;

/// The sync words (uint32_t each).
inline constexpr unsigned kClaimWord = 0;     ///< tasks claimed so far, over all runs
inline constexpr unsigned kAbortWord = 1;     ///< nonzero: the run was stopped
inline constexpr unsigned kErrorCodeWord = 2; ///< the first error's code (0: none)
inline constexpr unsigned kErrorTaskWord = 3; ///< the task that saw it
inline constexpr unsigned kErrorEventWord = 4; ///< the event it waited on
inline constexpr unsigned kErrorSeenWord = 5; ///< the counter's value when it gave up
inline constexpr unsigned kErrorTargetWord = 6; ///< the value it waited for
/// Then one finished-task counter per event of the table.
inline constexpr unsigned kFirstCounterWord = 8;

/// Error codes of kErrorCodeWord.
inline constexpr uint32_t kErrorWaitTimeout = 1;

/// The megakernel's parameters, in order (docs/graphs.md has the table):
///   table: *u64, launches: i32, tasks: i32, sync: *u32, claim_base: u32, timeout_ns: i64,
///   trace: *u64 (null: no trace), table_runs: u32 (the runs of this table before this one),
///   task_events: *u64
inline constexpr unsigned kNumParams = 9;
/// A checked persistent kernel (dslc --checked, docs/checked.md) takes a tenth,
/// check_record: *u32 (support/CheckRecord.h), says so with the const CHECKED = 1, and
/// its launch records hold, after the arguments, each argument's extent: for a pointer,
/// the bytes from it to the end of its buffer (the same number of words again).
inline constexpr unsigned kCheckedNumParams = 10;

/// With a trace buffer, each task's thread 0 writes kTraceWords 64-bit words at
/// trace[task * kTraceWords]: when it claimed the task, when its wait ended and when
/// the task was done (%globaltimer, ns), and the worker (bits 0-31) and the SM it ran on
/// (bits 32-63).
inline constexpr unsigned kTraceWords = 4;

} // namespace kiln::tasks
