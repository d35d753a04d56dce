//===- CudaBackend.cpp - Running bundles through the CUDA Driver API ------===//
//
// One backend object owns the device's primary context (shared with any CUDA runtime
// code in the same process, as cudart does) and one stream. Launches go to that stream;
// the blocking copies use the legacy default stream, which waits for it, so a read
// after a launch always sees the launch's results. A caller's stream
// (kiln_runtime_set_stream: torch's current one, say) takes the launches, events and
// replays instead while it is set; a copy waits for it only if it is a blocking stream.
//
// The PTX is JIT-compiled by the driver for the GPU present, with the error and info
// logs captured; an error log's PTX line numbers are mapped back to Kiln source lines.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaApi.h"
#include "runtime/cuda/PtxSourceMap.h"

#include <vector>

namespace kiln::rt {

// kiln_status for a failed driver call, given what the call was doing. Faults of a
// running kernel surface at the next synchronizing call and are launch errors there.
static kiln_status classify(CUresult r, kiln_status otherwise) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: return KILN_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE: return KILN_ERROR_NO_DEVICE;
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT: return KILN_ERROR_LAUNCH;
  default: // CUresult is the driver's open-ended list, not a Kiln enum.
    return otherwise;
  }
}

namespace {

class CudaBackend;

class CudaKernel final : public DeviceKernel {
public:
  CudaKernel(CudaBackend &backend, const Bundle &bundle, CUmodule module, CUfunction function, std::string log)
      : backend_(backend), context_(kernelContext(bundle)), blockSize_(bundle.numWarps * 32),
        sharedBytes_(bundle.sharedBytes), module_(module), function_(function), jitLog_(std::move(log)) {}
  ~CudaKernel() override;

  Status launch(kiln_grid grid, PackedArgs &args) override;
  const std::string &jitLog() const override { return jitLog_; }
  Status residentPrograms(uint32_t &out) override;

private:
  CudaBackend &backend_;
  std::string context_;
  unsigned blockSize_;
  unsigned sharedBytes_;
  CUmodule module_;
  CUfunction function_;
  std::string jitLog_;
};

class CudaEvent final : public DeviceEvent {
public:
  CudaEvent(CudaBackend &backend, CUevent event) : backend_(backend), event_(event) {}
  ~CudaEvent() override;
  Status record() override;
  Status synchronize() override;
  Status elapsedMsUntil(DeviceEvent &end, float &ms) override;

private:
  CudaBackend &backend_;
  CUevent event_;
};

class CudaBackend final : public Backend {
public:
  CudaBackend(const CudaApi &api, CUdevice device, CUcontext context) : api(api), device_(device), context_(context) {}
  ~CudaBackend() override;

  Status init();

  kiln_backend kind() const override { return KILN_BACKEND_CUDA; }
  const std::string &deviceName() const override { return name_; }
  const std::string &targetName() const override { return target_; }
  kiln_grid maxGrid() const override { return maxGrid_; }

  Status loadKernel(const Bundle &bundle, std::unique_ptr<DeviceKernel> &out) override;
  Status alloc(size_t bytes, uint64_t &address) override;
  Status checkForeign(uint64_t address, size_t bytes) override;
  void release(uint64_t address) override;
  Status write(uint64_t dst, const void *src, size_t bytes) override;
  Status read(void *dst, uint64_t src, size_t bytes) override;
  Status fill(uint64_t dst, uint8_t byte, size_t bytes) override;
  Status copy(uint64_t dst, uint64_t src, size_t bytes) override;
  Status synchronize() override;
  Status createEvent(std::unique_ptr<DeviceEvent> &out) override;
  Status setStream(void *stream) override;
  void *currentStream() const override { return foreign; }
  /// Where launches, events and replays go: the caller's stream, else the own one.
  CUstream launchStream() const { return foreign ? foreign : stream; }
  Status beginRecording() override;
  Status endRecording(std::unique_ptr<DeviceRecording> &out) override;

  /// Makes the context current on the calling thread (the driver tracks it per thread).
  Status enter() {
    CUresult r = api.cuCtxSetCurrent(context_);
    return r == CUDA_SUCCESS ? Status() : fail(r, "cuCtxSetCurrent", KILN_ERROR_DRIVER);
  }
  Status fail(CUresult r, const char *op, kiln_status otherwise, const std::string &context = "") const {
    std::string msg = cudaFailure(api, op, r);
    if (!context.empty())
      msg += " for " + context;
    return Status(classify(r, otherwise), msg);
  }

  const CudaApi &api;
  CUstream stream = nullptr;
  CUstream foreign = nullptr; ///< kiln_runtime_set_stream's, not owned
  CUdevice device() const { return device_; }

private:
  Status attribute(CUdevice_attribute a, int &value);

  CUdevice device_;
  CUcontext context_;
  std::string name_;
  std::string target_;
  int ccMajor_ = 0, ccMinor_ = 0;
  int maxSharedOptin_ = 48 * 1024;
  kiln_grid maxGrid_{1, 1, 1};
  CUstream checkedStream_ = nullptr; ///< the last caller stream the driver vouched for
};

} // namespace

// ---- backend ---------------------------------------------------------------------------

Status CudaBackend::attribute(CUdevice_attribute a, int &value) {
  CUresult r = api.cuDeviceGetAttribute(&value, a, device_);
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuDeviceGetAttribute", KILN_ERROR_DRIVER);
}

Status CudaBackend::init() {
  if (Status s = enter(); !s.ok())
    return s;
  char name[256] = {};
  if (CUresult r = api.cuDeviceGetName(name, sizeof name - 1, device_); r != CUDA_SUCCESS)
    return fail(r, "cuDeviceGetName", KILN_ERROR_DRIVER);
  name_ = name;
  int gx = 0, gy = 0, gz = 0;
  for (auto [attr, slot] :
       {std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &ccMajor_},
        std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &ccMinor_},
        std::pair{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &maxSharedOptin_},
        std::pair{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &gx}, std::pair{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &gy},
        std::pair{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &gz}})
    if (Status s = attribute(attr, *slot); !s.ok())
      return s;
  maxGrid_ = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(gz)};
  // sm_90a code is for Hopper itself; report the plain target for every device and
  // let section choice (pickCudaSection) decide about the 'a' variant.
  target_ = cudaArchName(ccMajor_, ccMinor_);
  if (CUresult r = api.cuStreamCreate(&stream, CU_STREAM_DEFAULT); r != CUDA_SUCCESS)
    return fail(r, "cuStreamCreate", KILN_ERROR_DRIVER);
  return Status();
}

CudaBackend::~CudaBackend() {
  if (enter().ok() && stream) {
    (void)api.cuStreamSynchronize(stream);
    (void)api.cuStreamDestroy(stream);
  }
  (void)api.cuDevicePrimaryCtxRelease(device_);
}

Status CudaBackend::loadKernel(const Bundle &bundle, std::unique_ptr<DeviceKernel> &out) {
  std::string why;
  const CodeSection *section = pickCudaSection(bundle, ccMajor_, ccMinor_, why);
  if (!section)
    return Status(KILN_ERROR_NO_COMPATIBLE_CODE, why + " (" + name_ + ")");
  std::string context = kernelContext(bundle);
  if (bundle.sharedBytes > static_cast<uint32_t>(maxSharedOptin_))
    return Status(KILN_ERROR_MODULE_LOAD, context + " needs " + std::to_string(bundle.sharedBytes) +
                                              " bytes of shared memory per program; " + name_ + " allows " +
                                              std::to_string(maxSharedOptin_));
  if (Status s = enter(); !s.ok())
    return s;

  // The driver wants a NUL-terminated string; bundle sections hold the text without it.
  std::string ptx(section->bytes.begin(), section->bytes.end());
  std::vector<char> errorLog(1 << 16, '\0'), infoLog(1 << 16, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  // The JIT API passes sizes and flags in pointer-sized slots.
  void *values[] = {errorLog.data(), reinterpret_cast<void *>(uintptr_t(errorLog.size() - 1)), infoLog.data(),
                    reinterpret_cast<void *>(uintptr_t(infoLog.size() - 1)), reinterpret_cast<void *>(uintptr_t(1))};
  CUmodule module = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&module, ptx.c_str(), 5, options, values);
  if (r != CUDA_SUCCESS) {
    Status s = fail(r, "cuModuleLoadDataEx", KILN_ERROR_MODULE_LOAD,
                    context + " (" + std::string(kiln::rt::targetName(section->target)) + " PTX on " + target_ + ")");
    std::string log = annotateJitLog(errorLog.data(), ptx);
    // A failure to JIT is a module-load error whatever code the driver chose for it.
    return Status(s.code() == KILN_ERROR_OUT_OF_MEMORY ? s.code() : KILN_ERROR_MODULE_LOAD,
                  s.message() + (log.empty() ? "" : "\nJIT log:\n" + log));
  }
  CUfunction function = nullptr;
  r = api.cuModuleGetFunction(&function, module, bundle.entry.c_str());
  if (r != CUDA_SUCCESS) {
    (void)api.cuModuleUnload(module);
    Status s = fail(r, "cuModuleGetFunction", KILN_ERROR_MODULE_LOAD, context);
    return Status(KILN_ERROR_MODULE_LOAD, s.message() + ": the PTX has no entry point '" + bundle.entry + "'");
  }
  // Register pressure can lower how many threads a kernel may run per block below what
  // the bundle asks for; say so now instead of failing every launch.
  int maxThreads = 0;
  r = api.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
  if (r == CUDA_SUCCESS && maxThreads > 0 && bundle.numWarps * 32 > static_cast<unsigned>(maxThreads)) {
    (void)api.cuModuleUnload(module);
    return Status(KILN_ERROR_MODULE_LOAD, context + " asks for " + std::to_string(bundle.numWarps) + " warps (" +
                                              std::to_string(bundle.numWarps * 32) + " threads) but " + target_ +
                                              " can run at most " + std::to_string(maxThreads) +
                                              " threads of it per program (register use)");
  }
  // Above 48 KiB, dynamic shared memory must be opted into per function.
  if (bundle.sharedBytes > 48 * 1024) {
    r = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(bundle.sharedBytes));
    if (r != CUDA_SUCCESS) {
      (void)api.cuModuleUnload(module);
      return fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", KILN_ERROR_MODULE_LOAD, context);
    }
  }
  out = std::make_unique<CudaKernel>(*this, bundle, module, function, std::string(infoLog.data()));
  return Status();
}

Status CudaBackend::alloc(size_t bytes, uint64_t &address) {
  if (Status s = enter(); !s.ok())
    return s;
  CUdeviceptr p = 0;
  CUresult r = api.cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS)
    return fail(r, "cuMemAlloc", KILN_ERROR_DRIVER, std::to_string(bytes) + " bytes");
  address = p;
  return Status();
}

Status CudaBackend::checkForeign(uint64_t address, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (api.cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS)
    return Status(KILN_ERROR_INVALID_VALUE, "address " + hexAddress(address) + " is not CUDA device memory of " +
                                                name_ + "'s context");
  if (address - base > size || bytes > size - (address - base))
    return Status(KILN_ERROR_INVALID_VALUE, std::to_string(bytes) + " bytes from " + hexAddress(address) +
                                                " run past the end of its allocation (" + std::to_string(size) +
                                                " bytes from " + hexAddress(base) + ")");
  return Status();
}

void CudaBackend::release(uint64_t address) {
  if (enter().ok())
    (void)api.cuMemFree(static_cast<CUdeviceptr>(address));
}

Status CudaBackend::write(uint64_t dst, const void *src, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUresult r = api.cuMemcpyHtoD(static_cast<CUdeviceptr>(dst), src, bytes);
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuMemcpyHtoD", KILN_ERROR_DRIVER);
}

Status CudaBackend::read(void *dst, uint64_t src, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUresult r = api.cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(src), bytes);
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuMemcpyDtoH", KILN_ERROR_DRIVER);
}

Status CudaBackend::fill(uint64_t dst, uint8_t byte, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUresult r = api.cuMemsetD8(static_cast<CUdeviceptr>(dst), byte, bytes);
  if (r == CUDA_SUCCESS)
    r = api.cuCtxSynchronize(); // memset is asynchronous to the host; the API promises blocking
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuMemsetD8", KILN_ERROR_DRIVER);
}

Status CudaBackend::copy(uint64_t dst, uint64_t src, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUresult r = api.cuMemcpyDtoD(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes);
  if (r == CUDA_SUCCESS)
    r = api.cuCtxSynchronize(); // device-to-device copies do not block the host; the API promises it
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuMemcpyDtoD", KILN_ERROR_DRIVER);
}

Status CudaBackend::synchronize() {
  if (Status s = enter(); !s.ok())
    return s;
  CUresult r = api.cuCtxSynchronize();
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuCtxSynchronize", KILN_ERROR_DRIVER);
}

Status CudaBackend::createEvent(std::unique_ptr<DeviceEvent> &out) {
  if (Status s = enter(); !s.ok())
    return s;
  CUevent e = nullptr;
  CUresult r = api.cuEventCreate(&e, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS)
    return fail(r, "cuEventCreate", KILN_ERROR_DRIVER);
  out = std::make_unique<CudaEvent>(*this, e);
  return Status();
}

// ---- recordings (CUDA graphs) ------------------------------------------------------------

namespace {

class CudaRecording final : public DeviceRecording {
public:
  CudaRecording(CudaBackend &backend, CUgraph graph, CUgraphExec exec)
      : backend_(backend), graph_(graph), exec_(exec) {}
  ~CudaRecording() override {
    if (backend_.enter().ok()) {
      (void)backend_.api.cuGraphExecDestroy(exec_);
      (void)backend_.api.cuGraphDestroy(graph_);
    }
  }
  Status replay() override {
    if (Status s = backend_.enter(); !s.ok())
      return s;
    CUresult r = backend_.api.cuGraphLaunch(exec_, backend_.launchStream());
    return r == CUDA_SUCCESS ? Status() : backend_.fail(r, "cuGraphLaunch", KILN_ERROR_LAUNCH);
  }

private:
  CudaBackend &backend_;
  CUgraph graph_;
  CUgraphExec exec_;
};

} // namespace

Status CudaBackend::setStream(void *s) {
  auto *candidate = static_cast<CUstream>(s);
  // A stream is asked about once: launches that pass the caller's stream every time
  // (kiln_launch_on_stream, the Python package) then cost no driver call for it. The
  // question is whether it is being captured, the one the driver allows on a stream in
  // the middle of a CUDA graph capture (torch.cuda.graph): cuStreamQuery or
  // cuStreamGetFlags there would break the capture.
  // Only that question needs the context current; setting a stream seen before, or
  // the runtime's own, is a store.
  if (candidate && candidate != checkedStream_) {
    if (Status st = enter(); !st.ok())
      return st;
    CUstreamCaptureStatus capturing;
    const CUresult r = api.cuStreamIsCapturing(candidate, &capturing);
    if (r != CUDA_SUCCESS)
      return fail(r, "cuStreamIsCapturing", KILN_ERROR_INVALID_VALUE, "the stream given to kiln_runtime_set_stream");
    checkedStream_ = candidate;
  }
  foreign = candidate;
  return Status();
}

Status CudaBackend::beginRecording() {
  if (foreign)
    return Status(KILN_ERROR_UNSUPPORTED, "a recording captures the runtime's own stream; set the stream back "
                                          "to NULL first (or capture the caller's stream as a CUDA graph of "
                                          "its own: Kiln's launches on it are captured too)");
  if (Status s = enter(); !s.ok())
    return s;
  // Thread-local: another thread's unrelated driver calls do not break the capture.
  CUresult r = api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  return r == CUDA_SUCCESS ? Status() : fail(r, "cuStreamBeginCapture", KILN_ERROR_DRIVER);
}

Status CudaBackend::endRecording(std::unique_ptr<DeviceRecording> &out) {
  if (Status s = enter(); !s.ok())
    return s;
  CUgraph graph = nullptr;
  CUresult r = api.cuStreamEndCapture(stream, &graph);
  if (r != CUDA_SUCCESS)
    return fail(r, "cuStreamEndCapture", KILN_ERROR_DRIVER);
  CUgraphExec exec = nullptr;
  r = api.cuGraphInstantiate(&exec, graph, 0);
  if (r != CUDA_SUCCESS) {
    (void)api.cuGraphDestroy(graph);
    return fail(r, "cuGraphInstantiate", KILN_ERROR_DRIVER);
  }
  out = std::make_unique<CudaRecording>(*this, graph, exec);
  return Status();
}

// ---- kernels ---------------------------------------------------------------------------

CudaKernel::~CudaKernel() {
  if (backend_.enter().ok())
    (void)backend_.api.cuModuleUnload(module_);
}

Status CudaKernel::launch(kiln_grid grid, PackedArgs &args) {
  if (Status s = backend_.enter(); !s.ok())
    return s;
  std::span<void *const> params = args.pointers();
  CUresult r = backend_.api.cuLaunchKernel(function_, grid.x, grid.y, grid.z, blockSize_, 1, 1, sharedBytes_,
                                           backend_.launchStream(),
                                           params.empty() ? nullptr : const_cast<void **>(params.data()),
                                           nullptr);
  if (r != CUDA_SUCCESS)
    return backend_.fail(r, "cuLaunchKernel", KILN_ERROR_LAUNCH,
                         context_ + " with grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                             std::to_string(grid.z) + "), " + std::to_string(blockSize_) + " threads per program, " +
                             std::to_string(sharedBytes_) + " bytes of shared memory");
  return Status();
}

Status CudaKernel::residentPrograms(uint32_t &out) {
  if (Status s = backend_.enter(); !s.ok())
    return s;
  int perSM = 0, sms = 0;
  CUresult r = backend_.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, function_, static_cast<int>(blockSize_),
                                                                        sharedBytes_);
  if (r != CUDA_SUCCESS)
    return backend_.fail(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", KILN_ERROR_DRIVER, context_);
  r = backend_.api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, backend_.device());
  if (r != CUDA_SUCCESS)
    return backend_.fail(r, "cuDeviceGetAttribute", KILN_ERROR_DRIVER, context_);
  out = static_cast<uint32_t>(std::max(perSM, 0)) * static_cast<uint32_t>(std::max(sms, 0));
  return Status();
}

// ---- events ----------------------------------------------------------------------------

CudaEvent::~CudaEvent() {
  if (backend_.enter().ok())
    (void)backend_.api.cuEventDestroy(event_);
}

Status CudaEvent::record() {
  if (Status s = backend_.enter(); !s.ok())
    return s;
  CUresult r = backend_.api.cuEventRecord(event_, backend_.launchStream());
  return r == CUDA_SUCCESS ? Status() : backend_.fail(r, "cuEventRecord", KILN_ERROR_DRIVER);
}

Status CudaEvent::synchronize() {
  if (Status s = backend_.enter(); !s.ok())
    return s;
  CUresult r = backend_.api.cuEventSynchronize(event_);
  return r == CUDA_SUCCESS ? Status() : backend_.fail(r, "cuEventSynchronize", KILN_ERROR_DRIVER);
}

Status CudaEvent::elapsedMsUntil(DeviceEvent &end, float &ms) {
  if (Status s = backend_.enter(); !s.ok())
    return s;
  // Both events come from this backend (the C API checks they share a runtime).
  CUresult r = backend_.api.cuEventElapsedTime(&ms, event_, static_cast<CudaEvent &>(end).event_);
  return r == CUDA_SUCCESS ? Status() : backend_.fail(r, "cuEventElapsedTime", KILN_ERROR_DRIVER);
}

// ---- creation --------------------------------------------------------------------------

Status createCudaBackend(int deviceIndex, std::unique_ptr<Backend> &out) {
  const CudaApi *api = nullptr;
  if (Status s = loadCudaApi(api); !s.ok())
    return s;
  CUresult r = api->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return Status(KILN_ERROR_NO_DEVICE, "no CUDA device: the driver (" + api->libraryName + ") found no GPU");
  if (r != CUDA_SUCCESS)
    return Status(KILN_ERROR_NO_DRIVER, "no usable CUDA driver: " + cudaFailure(*api, "cuInit", r));
  int count = 0;
  r = api->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return Status(KILN_ERROR_NO_DRIVER, "no usable CUDA driver: " + cudaFailure(*api, "cuDeviceGetCount", r));
  if (count == 0)
    return Status(KILN_ERROR_NO_DEVICE, "no CUDA device: the driver reports 0 devices");
  if (deviceIndex < 0 || deviceIndex >= count)
    return Status(KILN_ERROR_NO_DEVICE, "no CUDA device " + std::to_string(deviceIndex) + ": the driver reports " +
                                            std::to_string(count) + " device" + (count == 1 ? "" : "s"));
  CUdevice device = 0;
  r = api->cuDeviceGet(&device, deviceIndex);
  if (r != CUDA_SUCCESS)
    return Status(KILN_ERROR_DRIVER, cudaFailure(*api, "cuDeviceGet", r));
  CUcontext context = nullptr;
  r = api->cuDevicePrimaryCtxRetain(&context, device);
  if (r != CUDA_SUCCESS)
    return Status(classify(r, KILN_ERROR_DRIVER), cudaFailure(*api, "cuDevicePrimaryCtxRetain", r));
  auto backend = std::make_unique<CudaBackend>(*api, device, context);
  if (Status s = backend->init(); !s.ok())
    return s;
  out = std::move(backend);
  return Status();
}

} // namespace kiln::rt
