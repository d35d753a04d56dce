//===- CheckRecord.h - Where a checked kernel records a bad access -*- C++ -*-===//
//
// A kernel compiled in checked mode (`dslc --checked`, docs/checked.md) bounds-checks
// every load, store and atomic against the buffer passed for the pointer it goes
// through. An access that leaves its buffer does not happen (a load reads 0 or its
// `other`), and the first such access of a launch is written here: the runtime passes a
// zeroed record after the kernel's extents and reports it once the launch finished.
// Shared by the code generator (which writes it) and the runtime (which reads it).
//
// The record is kCheckRecordWords 32-bit words:
//   [kFlagWord]      0 until a thread records a violation (claimed with a CAS to 1)
//   [kKindWord]      CheckKind: what the access was
//   [kLineWord]      source line and [kColumnWord] column of the access
//   [kPidWord + a]   the program id along axis a
//   [kParamWord]     the kernel parameter it was checked against (the first it may
//                    point into)
//   [kOffsetWord]    the element offset from that parameter's pointer, as a signed
//                    64-bit value in two words (low first): negative below the buffer
//   [kTaskWord]      in a graph's persistent kernel, the task (support/TaskTable.h)
//   [kDoneWord]      1 once the fields above are written
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace kiln::check {

enum class CheckKind : uint32_t { Load = 1, Store = 2, Atomic = 3 };

inline constexpr unsigned kFlagWord = 0;
inline constexpr unsigned kKindWord = 1;
inline constexpr unsigned kLineWord = 2;
inline constexpr unsigned kColumnWord = 3;
inline constexpr unsigned kPidWord = 4; // three words
inline constexpr unsigned kParamWord = 7;
inline constexpr unsigned kOffsetWord = 8; // two words
inline constexpr unsigned kDoneWord = 10;
inline constexpr unsigned kTaskWord = 11;
inline constexpr unsigned kCheckRecordWords = 16;

inline const char *kindName(uint32_t kind) {
  switch (static_cast<CheckKind>(kind)) {
  case CheckKind::Load: return "load";
  case CheckKind::Store: return "store";
  case CheckKind::Atomic: return "atomic";
  }
  return "access";
}

} // namespace kiln::check
