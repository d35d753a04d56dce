//===- CudaApi.h - The CUDA Driver API entry points the runtime uses -*- C++ -*-===//
//
// One X-macro list names every driver function the runtime calls. From it come the
// table of function pointers (typed by the prototypes in the toolkit's cuda.h) and the
// dlsym loop that fills it, so adding a call touches this list only.
//
// cuda.h #defines versioned names (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime ->
// cuEventElapsedTime_v2, ...). The list is written with the plain names and both the
// member type and the looked-up symbol are taken after macro expansion, so the symbol
// the driver is asked for is always the one whose prototype cuda.h declares. cuda.h is
// used for types only; libcuda is never linked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"

#include <cuda.h>

#include <span>
#include <string>

namespace kiln::rt {

#define KILN_CUDA_ENTRY_POINTS(X)                                                        \
  X(cuInit)                                                                              \
  X(cuDriverGetVersion)                                                                  \
  X(cuGetErrorName)                                                                      \
  X(cuGetErrorString)                                                                    \
  X(cuDeviceGetCount)                                                                    \
  X(cuDeviceGet)                                                                         \
  X(cuDeviceGetName)                                                                     \
  X(cuDeviceGetAttribute)                                                                \
  X(cuDevicePrimaryCtxRetain)                                                            \
  X(cuDevicePrimaryCtxRelease)                                                           \
  X(cuCtxSetCurrent)                                                                     \
  X(cuCtxSynchronize)                                                                    \
  X(cuModuleLoadDataEx)                                                                  \
  X(cuModuleGetFunction)                                                                 \
  X(cuModuleUnload)                                                                      \
  X(cuFuncGetAttribute)                                                                  \
  X(cuFuncSetAttribute)                                                                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                         \
  X(cuLaunchKernel)                                                                      \
  X(cuMemAlloc)                                                                          \
  X(cuMemFree)                                                                           \
  X(cuMemGetAddressRange)                                                                \
  X(cuMemcpyHtoD)                                                                        \
  X(cuMemcpyDtoH)                                                                        \
  X(cuMemcpyDtoD)                                                                        \
  X(cuMemsetD8)                                                                          \
  X(cuStreamCreate)                                                                      \
  X(cuStreamSynchronize)                                                                 \
  X(cuStreamIsCapturing)                                                                 \
  X(cuStreamDestroy)                                                                     \
  X(cuEventCreate)                                                                       \
  X(cuEventRecord)                                                                       \
  X(cuStreamBeginCapture)                                                                \
  X(cuStreamEndCapture)                                                                  \
  X(cuGraphInstantiate)                                                                  \
  X(cuGraphLaunch)                                                                       \
  X(cuGraphExecDestroy)                                                                  \
  X(cuGraphDestroy)                                                                      \
  X(cuEventSynchronize)                                                                  \
  X(cuEventElapsedTime)                                                                  \
  X(cuEventDestroy)

/// The resolved driver entry points. Members carry the expanded (versioned) names, and
/// code calls them by the plain names, which cuda.h's macros map the same way.
struct CudaApi {
#define KILN_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KILN_CUDA_ENTRY_POINTS(KILN_CUDA_MEMBER)
#undef KILN_CUDA_MEMBER
  std::string libraryName; ///< what was dlopened, for messages
};

/// The driver symbol names the table resolves, in list order (for tests and docs).
std::span<const char *const> cudaEntryPointSymbols();

/// Loads the CUDA driver library (KILN_CUDA_LIBRARY, else libcuda.so.1) and resolves
/// every entry point. The table is loaded once per library name and kept for the life
/// of the process. Fails with KILN_ERROR_NO_DRIVER and a message saying why.
Status loadCudaApi(const CudaApi *&out);

/// "CUDA_ERROR_INVALID_PTX" for a driver result, via cuGetErrorName when it knows it.
std::string cudaErrorName(const CudaApi &api, CUresult r);

/// "<op>: CUDA_ERROR_X (<driver's description>)".
std::string cudaFailure(const CudaApi &api, const char *op, CUresult r);

} // namespace kiln::rt
