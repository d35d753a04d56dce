//===- ZeApi.h - The Level Zero entry points the runtime uses ---*- C++ -*-===//
//
// Like cuda/CudaApi.h: one X-macro list of loader functions, typed by the prototypes
// in <level_zero/ze_api.h> (libze-dev) and resolved with dlsym from the loader library,
// which is never linked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"

#include <level_zero/ze_api.h>

#include <span>
#include <string>

namespace kiln::rt {

#define KILN_ZE_ENTRY_POINTS(X)                                                          \
  X(zeInit)                                                                              \
  X(zeDriverGet)                                                                         \
  X(zeDeviceGet)                                                                         \
  X(zeDeviceGetProperties)                                                               \
  X(zeDeviceGetComputeProperties)                                                        \
  X(zeDeviceGetCommandQueueGroupProperties)                                              \
  X(zeContextCreate)                                                                     \
  X(zeContextDestroy)                                                                    \
  X(zeCommandListCreateImmediate)                                                        \
  X(zeCommandListDestroy)                                                                \
  X(zeCommandListAppendLaunchKernel)                                                     \
  X(zeCommandListAppendMemoryCopy)                                                       \
  X(zeCommandListAppendMemoryFill)                                                       \
  X(zeCommandListAppendWriteGlobalTimestamp)                                             \
  X(zeModuleCreate)                                                                      \
  X(zeModuleDestroy)                                                                     \
  X(zeModuleBuildLogGetString)                                                           \
  X(zeModuleBuildLogDestroy)                                                             \
  X(zeKernelCreate)                                                                      \
  X(zeKernelDestroy)                                                                     \
  X(zeKernelSetGroupSize)                                                                \
  X(zeKernelSetArgumentValue)                                                            \
  X(zeMemAllocDevice)                                                                    \
  X(zeMemAllocHost)                                                                      \
  X(zeMemFree)                                                                           \
  X(zeMemGetAddressRange)

struct ZeApi {
#define KILN_ZE_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KILN_ZE_ENTRY_POINTS(KILN_ZE_MEMBER)
#undef KILN_ZE_MEMBER
  std::string libraryName;
};

/// The loader symbol names the table resolves, in list order.
std::span<const char *const> zeEntryPointSymbols();

/// Loads the Level Zero loader (KILN_ZE_LIBRARY, else libze_loader.so.1) and resolves
/// every entry point, once per library name. Fails with KILN_ERROR_NO_DRIVER.
Status loadZeApi(const ZeApi *&out);

/// "ZE_RESULT_ERROR_UNINITIALIZED" etc. (the hex value for codes it does not know).
std::string zeResultName(ze_result_t r);

} // namespace kiln::rt
