//===- Log.h - Where the JIT's notes and warnings go --------------*- C++ -*-===//
#pragma once

#include "jit/kiln_jit.h"

#include <string>

namespace kiln::jit {

/// The JIT's notes and warnings: to the user's callback, else to stderr.
struct Log {
  kiln_jit_log_fn fn = nullptr;
  void *userData = nullptr;

  void note(const std::string &message) const { emit(KILN_JIT_NOTE, message); }
  void warning(const std::string &message) const { emit(KILN_JIT_WARNING, message); }
  void emit(kiln_jit_severity severity, const std::string &message) const;
};

} // namespace kiln::jit
