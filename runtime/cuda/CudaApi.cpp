//===- CudaApi.cpp - Loading the CUDA driver with dlopen -------------------===//
//
// Fills the CudaApi table from the driver library. A library that opens but lacks an
// entry point is reported as "not a usable CUDA driver" with the missing symbol, which
// distinguishes a driver too old for the toolkit headers from a missing one.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaApi.h"
#include "runtime/DynamicLibrary.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace kiln::rt {

// Two levels so that the argument is macro-expanded (cuMemAlloc -> cuMemAlloc_v2)
// before it is turned into a string.
#define KILN_CUDA_STRINGIFY_EXPANDED(x) KILN_CUDA_STRINGIFY(x)
#define KILN_CUDA_STRINGIFY(x) #x

static constexpr const char *kSymbols[] = {
#define KILN_CUDA_SYMBOL(fn) KILN_CUDA_STRINGIFY_EXPANDED(fn),
    KILN_CUDA_ENTRY_POINTS(KILN_CUDA_SYMBOL)
#undef KILN_CUDA_SYMBOL
};

std::span<const char *const> cudaEntryPointSymbols() { return kSymbols; }

// Resolves one entry point; returns the symbol that was missing, or nullptr.
template <typename Fn> static const char *resolve(void *lib, Fn &slot, const char *symbol) {
  void *p = findDriverSymbol(lib, symbol);
  // cuEventElapsedTime_v2 arrived with CUDA 12.8 drivers; older drivers export only the
  // original entry point, which has the same signature and the same meaning for the
  // events this runtime creates (timing enabled, recorded on one stream).
  if (!p && std::strcmp(symbol, "cuEventElapsedTime_v2") == 0)
    p = findDriverSymbol(lib, "cuEventElapsedTime");
  if (!p)
    return symbol;
  slot = reinterpret_cast<Fn>(p);
  return nullptr;
}

Status loadCudaApi(const CudaApi *&out) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<CudaApi>> loaded;

  std::string name = driverLibraryName("KILN_CUDA_LIBRARY", "libcuda.so.1");
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) {
    out = it->second.get();
    return Status::success();
  }
  std::string why;
  void *lib = openDriverLibrary(name, why);
  if (!lib)
    return Status(KILN_ERROR_NO_DRIVER, "no CUDA driver: cannot load " + name + " (" + why + ")");

  auto api = std::make_unique<CudaApi>();
  api->libraryName = name;
  const char *missing = nullptr;
#define KILN_CUDA_RESOLVE(fn)                                                            \
  if (!missing)                                                                          \
    missing = resolve(lib, api->fn, KILN_CUDA_STRINGIFY_EXPANDED(fn));
  KILN_CUDA_ENTRY_POINTS(KILN_CUDA_RESOLVE)
#undef KILN_CUDA_RESOLVE
  if (missing)
    return Status(KILN_ERROR_NO_DRIVER, "no usable CUDA driver: " + name + " lacks " + missing +
                                            " (not a CUDA driver, or one older than the runtime needs)");
  out = api.get();
  loaded.emplace(name, std::move(api));
  return Status::success();
}

std::string cudaErrorName(const CudaApi &api, CUresult r) {
  const char *name = nullptr;
  if (api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
    return name;
  return "CUDA error " + std::to_string(static_cast<int>(r));
}

std::string cudaFailure(const CudaApi &api, const char *op, CUresult r) {
  std::string s = std::string(op) + ": " + cudaErrorName(api, r);
  const char *text = nullptr;
  if (api.cuGetErrorString(r, &text) == CUDA_SUCCESS && text)
    s += " (" + std::string(text) + ")";
  return s;
}

} // namespace kiln::rt
