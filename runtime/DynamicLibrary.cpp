//===- DynamicLibrary.cpp - Finding and opening driver libraries ----------===//
//
// dlerror() reports the last failure of the calling thread only in some C libraries, so
// the open and the read of its message happen under one lock.
//
//===----------------------------------------------------------------------===//
#include "runtime/DynamicLibrary.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace kiln::rt {

static std::mutex &dlMutex() {
  static std::mutex m;
  return m;
}

std::string driverLibraryName(const char *envVar, const char *defaultName) {
  const char *v = std::getenv(envVar);
  return v && *v ? std::string(v) : std::string(defaultName);
}

void *openDriverLibrary(const std::string &name, std::string &error) {
  std::lock_guard<std::mutex> lock(dlMutex());
  ::dlerror();
  void *handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    error = why ? why : "dlopen failed";
  }
  return handle;
}

void *findDriverSymbol(void *library, const char *symbol) {
  std::lock_guard<std::mutex> lock(dlMutex());
  return ::dlsym(library, symbol);
}

} // namespace kiln::rt
