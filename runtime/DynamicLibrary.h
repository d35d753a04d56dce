//===- DynamicLibrary.h - Finding and opening driver libraries ---*- C++ -*-===//
//
// The runtime never links a GPU driver: it dlopens the driver's library when a runtime
// is created, so programs start everywhere and a missing driver is an ordinary error.
// An environment variable may name a different library (a specific driver install, or
// a nonexistent name so tests see the "no driver" path even where a driver exists).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace kiln::rt {

/// The value of `envVar` when it is set and non-empty, else `defaultName`.
std::string driverLibraryName(const char *envVar, const char *defaultName);

/// dlopens `name` (RTLD_NOW | RTLD_LOCAL). Returns nullptr and sets `error` to the
/// loader's reason on failure. Libraries are never closed: a GPU driver may own threads
/// and atexit handlers that must not outlive its code.
void *openDriverLibrary(const std::string &name, std::string &error);

/// The address of `symbol` in `library`, or nullptr.
void *findDriverSymbol(void *library, const char *symbol);

} // namespace kiln::rt
