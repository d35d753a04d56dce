//===- ZeApi.cpp - Loading the Level Zero loader with dlopen ---------------===//
//
// Level Zero 1.4 (the headers on this image) has no call that names a result code, so
// the names of the codes the runtime can meet are listed here.
//
//===----------------------------------------------------------------------===//
#include "runtime/ze/ZeApi.h"
#include "runtime/DynamicLibrary.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace kiln::rt {

static constexpr const char *kSymbols[] = {
#define KILN_ZE_SYMBOL(fn) #fn,
    KILN_ZE_ENTRY_POINTS(KILN_ZE_SYMBOL)
#undef KILN_ZE_SYMBOL
};

std::span<const char *const> zeEntryPointSymbols() { return kSymbols; }

Status loadZeApi(const ZeApi *&out) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ZeApi>> loaded;

  std::string name = driverLibraryName("KILN_ZE_LIBRARY", "libze_loader.so.1");
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) {
    out = it->second.get();
    return Status::success();
  }
  std::string why;
  void *lib = openDriverLibrary(name, why);
  if (!lib)
    return Status(KILN_ERROR_NO_DRIVER, "no Level Zero driver: cannot load " + name + " (" + why + ")");

  auto api = std::make_unique<ZeApi>();
  api->libraryName = name;
  const char *missing = nullptr;
#define KILN_ZE_RESOLVE(fn)                                                              \
  if (!missing) {                                                                        \
    void *p = findDriverSymbol(lib, #fn);                                                \
    if (p)                                                                               \
      api->fn = reinterpret_cast<decltype(api->fn)>(p);                                  \
    else                                                                                 \
      missing = #fn;                                                                     \
  }
  KILN_ZE_ENTRY_POINTS(KILN_ZE_RESOLVE)
#undef KILN_ZE_RESOLVE
  if (missing)
    return Status(KILN_ERROR_NO_DRIVER,
                  "no usable Level Zero loader: " + name + " lacks " + missing + " (not a Level Zero loader?)");
  out = api.get();
  loaded.emplace(name, std::move(api));
  return Status::success();
}

std::string zeResultName(ze_result_t r) {
  static constexpr std::pair<ze_result_t, const char *> kNames[] = {
      {ZE_RESULT_SUCCESS, "ZE_RESULT_SUCCESS"},
      {ZE_RESULT_NOT_READY, "ZE_RESULT_NOT_READY"},
      {ZE_RESULT_ERROR_DEVICE_LOST, "ZE_RESULT_ERROR_DEVICE_LOST"},
      {ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"},
      {ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"},
      {ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"},
      {ZE_RESULT_ERROR_MODULE_LINK_FAILURE, "ZE_RESULT_ERROR_MODULE_LINK_FAILURE"},
      {ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET, "ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET"},
      {ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE, "ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE"},
      {ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS, "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS"},
      {ZE_RESULT_ERROR_NOT_AVAILABLE, "ZE_RESULT_ERROR_NOT_AVAILABLE"},
      {ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE, "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE"},
      {ZE_RESULT_ERROR_UNINITIALIZED, "ZE_RESULT_ERROR_UNINITIALIZED"},
      {ZE_RESULT_ERROR_UNSUPPORTED_VERSION, "ZE_RESULT_ERROR_UNSUPPORTED_VERSION"},
      {ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"},
      {ZE_RESULT_ERROR_INVALID_ARGUMENT, "ZE_RESULT_ERROR_INVALID_ARGUMENT"},
      {ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "ZE_RESULT_ERROR_INVALID_NULL_HANDLE"},
      {ZE_RESULT_ERROR_INVALID_NULL_POINTER, "ZE_RESULT_ERROR_INVALID_NULL_POINTER"},
      {ZE_RESULT_ERROR_INVALID_SIZE, "ZE_RESULT_ERROR_INVALID_SIZE"},
      {ZE_RESULT_ERROR_UNSUPPORTED_SIZE, "ZE_RESULT_ERROR_UNSUPPORTED_SIZE"},
      {ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT"},
      {ZE_RESULT_ERROR_INVALID_ENUMERATION, "ZE_RESULT_ERROR_INVALID_ENUMERATION"},
      {ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_NAME, "ZE_RESULT_ERROR_INVALID_KERNEL_NAME"},
      {ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION"},
      {ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION, "ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE"},
      {ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED, "ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED"},
      {ZE_RESULT_ERROR_UNKNOWN, "ZE_RESULT_ERROR_UNKNOWN"},
  };
  for (const auto &[code, name] : kNames)
    if (code == r)
      return name;
  char buf[32];
  std::snprintf(buf, sizeof buf, "ze_result_t 0x%x", static_cast<unsigned>(r));
  return buf;
}

} // namespace kiln::rt
