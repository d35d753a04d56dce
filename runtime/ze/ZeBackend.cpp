//===- ZeBackend.cpp - Running bundles through Level Zero -----------------===//
//
// SPIR-V sections are built with zeModuleCreate (ZE_MODULE_FORMAT_IL_SPIRV) and run on
// one immediate command list in synchronous mode: every launch, copy and timestamp has
// completed when its call returns. That costs overlap between host and device, but it
// keeps this backend small and obviously ordered — it has only been run against the
// no-driver paths, because no Intel GPU was available to measure a faster design on.
//
// Kernel ABI on Level Zero: the bundle's parameters are the kernel's arguments by
// index; when the bundle asks for shared memory, the kernel takes one more argument, a
// local-memory pointer of that many bytes (OpenCL's way of sizing local memory at
// launch), after the last parameter.
//
//===----------------------------------------------------------------------===//
#include "runtime/ze/ZeApi.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::rt {

static kiln_status classify(ze_result_t r, kiln_status otherwise) {
  if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    return KILN_ERROR_OUT_OF_MEMORY;
  if (r == ZE_RESULT_ERROR_DEVICE_LOST)
    return KILN_ERROR_LAUNCH;
  return otherwise;
}

namespace {

class ZeBackend;

class ZeKernel final : public DeviceKernel {
public:
  ZeKernel(ZeBackend &backend, const Bundle &bundle, ze_module_handle_t module, ze_kernel_handle_t kernel,
           std::string log)
      : backend_(backend), context_(kernelContext(bundle)), sharedBytes_(bundle.sharedBytes), module_(module),
        kernel_(kernel), jitLog_(std::move(log)) {}
  ~ZeKernel() override;
  Status launch(kiln_grid grid, PackedArgs &args) override;
  const std::string &jitLog() const override { return jitLog_; }

private:
  ZeBackend &backend_;
  std::string context_;
  uint32_t sharedBytes_;
  ze_module_handle_t module_;
  ze_kernel_handle_t kernel_;
  std::string jitLog_;
};

class ZeEvent final : public DeviceEvent {
public:
  ZeEvent(ZeBackend &backend, uint64_t *stamp) : backend_(backend), stamp_(stamp) {}
  ~ZeEvent() override;
  Status record() override;
  // The command list is synchronous: a recorded timestamp is already written.
  Status synchronize() override { return Status(); }
  Status elapsedMsUntil(DeviceEvent &end, float &ms) override;

private:
  ZeBackend &backend_;
  uint64_t *stamp_; // host memory the device writes the timestamp into
};

class ZeBackend final : public Backend {
public:
  ZeBackend(const ZeApi &api, ze_driver_handle_t driver, ze_device_handle_t device)
      : api(api), driver_(driver), device_(device) {}
  ~ZeBackend() override;

  Status init();

  kiln_backend kind() const override { return KILN_BACKEND_LEVEL_ZERO; }
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
  Status synchronize() override { return Status(); }
  Status createEvent(std::unique_ptr<DeviceEvent> &out) override;

  Status fail(ze_result_t r, const char *op, kiln_status otherwise, const std::string &context = "") const {
    std::string msg = std::string(op) + ": " + zeResultName(r);
    if (!context.empty())
      msg += " for " + context;
    return Status(classify(r, otherwise), msg);
  }

  const ZeApi &api;
  ze_context_handle_t context = nullptr;
  ze_command_list_handle_t list = nullptr;
  ze_device_properties_t properties{};

private:
  ze_driver_handle_t driver_;
  ze_device_handle_t device_;
  std::string name_;
  std::string target_ = "spirv64";
  kiln_grid maxGrid_{1, 1, 1};
  uint32_t maxGroupSize_ = 0;
  uint32_t maxShared_ = 0;
};

} // namespace

// ---- backend ---------------------------------------------------------------------------

Status ZeBackend::init() {
  properties.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  if (ze_result_t r = api.zeDeviceGetProperties(device_, &properties); r != ZE_RESULT_SUCCESS)
    return fail(r, "zeDeviceGetProperties", KILN_ERROR_DRIVER);
  name_ = std::string(properties.name, strnlen(properties.name, sizeof properties.name));
  ze_device_compute_properties_t compute{};
  compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  if (ze_result_t r = api.zeDeviceGetComputeProperties(device_, &compute); r != ZE_RESULT_SUCCESS)
    return fail(r, "zeDeviceGetComputeProperties", KILN_ERROR_DRIVER);
  maxGrid_ = {compute.maxGroupCountX, compute.maxGroupCountY, compute.maxGroupCountZ};
  maxGroupSize_ = compute.maxTotalGroupSize;
  maxShared_ = compute.maxSharedLocalMemory;

  ze_context_desc_t contextDesc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  if (ze_result_t r = api.zeContextCreate(driver_, &contextDesc, &context); r != ZE_RESULT_SUCCESS)
    return fail(r, "zeContextCreate", KILN_ERROR_DRIVER);

  // Launches need a queue group that takes compute work.
  uint32_t groups = 0;
  if (ze_result_t r = api.zeDeviceGetCommandQueueGroupProperties(device_, &groups, nullptr); r != ZE_RESULT_SUCCESS)
    return fail(r, "zeDeviceGetCommandQueueGroupProperties", KILN_ERROR_DRIVER);
  std::vector<ze_command_queue_group_properties_t> groupProps(groups);
  for (auto &g : groupProps)
    g = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, nullptr, 0, 0, 0};
  if (ze_result_t r = api.zeDeviceGetCommandQueueGroupProperties(device_, &groups, groupProps.data());
      r != ZE_RESULT_SUCCESS)
    return fail(r, "zeDeviceGetCommandQueueGroupProperties", KILN_ERROR_DRIVER);
  uint32_t ordinal = groups;
  for (uint32_t i = 0; i < groups && i < groupProps.size(); ++i)
    if (groupProps[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      ordinal = i;
      break;
    }
  if (ordinal == groups)
    return Status(KILN_ERROR_NO_DEVICE, "Level Zero device '" + name_ + "' has no compute command queue");
  ze_command_queue_desc_t queueDesc{
      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal, 0, 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
      ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  if (ze_result_t r = api.zeCommandListCreateImmediate(context, device_, &queueDesc, &list); r != ZE_RESULT_SUCCESS)
    return fail(r, "zeCommandListCreateImmediate", KILN_ERROR_DRIVER);
  return Status();
}

ZeBackend::~ZeBackend() {
  if (list)
    (void)api.zeCommandListDestroy(list);
  if (context)
    (void)api.zeContextDestroy(context);
}

// The text of a module build log (and the log released).
static std::string takeBuildLog(const ZeApi &api, ze_module_build_log_handle_t log) {
  if (!log)
    return "";
  std::string text;
  size_t size = 0;
  if (api.zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size > 0 && size < (64u << 20)) {
    std::vector<char> buf(size + 1, '\0');
    if (api.zeModuleBuildLogGetString(log, &size, buf.data()) == ZE_RESULT_SUCCESS)
      text = buf.data();
  }
  (void)api.zeModuleBuildLogDestroy(log);
  return text;
}

Status ZeBackend::loadKernel(const Bundle &bundle, std::unique_ptr<DeviceKernel> &out) {
  std::string why;
  const CodeSection *section = pickSpirvSection(bundle, why);
  if (!section)
    return Status(KILN_ERROR_NO_COMPATIBLE_CODE, why + " (" + name_ + ")");
  std::string ctx = kernelContext(bundle);
  uint32_t groupSize = bundle.numWarps * 32;
  if (maxGroupSize_ && groupSize > maxGroupSize_)
    return Status(KILN_ERROR_MODULE_LOAD, ctx + " asks for work-groups of " + std::to_string(groupSize) + "; " + name_ +
                                              " allows " + std::to_string(maxGroupSize_));
  if (bundle.sharedBytes > maxShared_)
    return Status(KILN_ERROR_MODULE_LOAD, ctx + " needs " + std::to_string(bundle.sharedBytes) +
                                              " bytes of local memory; " + name_ + " allows " +
                                              std::to_string(maxShared_));

  ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC,
                        nullptr,
                        ZE_MODULE_FORMAT_IL_SPIRV,
                        section->bytes.size(),
                        section->bytes.data(),
                        "",
                        nullptr};
  ze_module_handle_t module = nullptr;
  ze_module_build_log_handle_t buildLog = nullptr;
  ze_result_t r = api.zeModuleCreate(context, device_, &desc, &module, &buildLog);
  std::string log = takeBuildLog(api, buildLog);
  if (r != ZE_RESULT_SUCCESS) {
    Status s = fail(r, "zeModuleCreate", KILN_ERROR_MODULE_LOAD, ctx);
    return Status(s.code() == KILN_ERROR_OUT_OF_MEMORY ? s.code() : KILN_ERROR_MODULE_LOAD,
                  s.message() + (log.empty() ? "" : "\nbuild log:\n" + log));
  }
  ze_kernel_desc_t kernelDesc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, bundle.entry.c_str()};
  ze_kernel_handle_t kernel = nullptr;
  r = api.zeKernelCreate(module, &kernelDesc, &kernel);
  if (r != ZE_RESULT_SUCCESS) {
    (void)api.zeModuleDestroy(module);
    Status s = fail(r, "zeKernelCreate", KILN_ERROR_MODULE_LOAD, ctx);
    return Status(KILN_ERROR_MODULE_LOAD, s.message() + ": the SPIR-V has no entry point '" + bundle.entry + "'");
  }
  r = api.zeKernelSetGroupSize(kernel, groupSize, 1, 1);
  if (r != ZE_RESULT_SUCCESS) {
    (void)api.zeKernelDestroy(kernel);
    (void)api.zeModuleDestroy(module);
    return fail(r, "zeKernelSetGroupSize", KILN_ERROR_MODULE_LOAD, ctx);
  }
  out = std::make_unique<ZeKernel>(*this, bundle, module, kernel, log);
  return Status();
}

Status ZeBackend::alloc(size_t bytes, uint64_t &address) {
  ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void *p = nullptr;
  ze_result_t r = api.zeMemAllocDevice(context, &desc, bytes, 256, device_, &p);
  if (r != ZE_RESULT_SUCCESS)
    return fail(r, "zeMemAllocDevice", KILN_ERROR_DRIVER, std::to_string(bytes) + " bytes");
  address = reinterpret_cast<uintptr_t>(p);
  return Status();
}

Status ZeBackend::checkForeign(uint64_t address, size_t bytes) {
  void *base = nullptr;
  size_t size = 0;
  if (api.zeMemGetAddressRange(context, reinterpret_cast<void *>(static_cast<uintptr_t>(address)), &base, &size) !=
          ZE_RESULT_SUCCESS ||
      !base)
    return Status(KILN_ERROR_INVALID_VALUE, "address " + hexAddress(address) +
                                                " is not memory of this runtime's Level Zero context");
  const uint64_t start = reinterpret_cast<uintptr_t>(base);
  if (address - start > size || bytes > size - (address - start))
    return Status(KILN_ERROR_INVALID_VALUE, std::to_string(bytes) + " bytes from " + hexAddress(address) +
                                                " run past the end of its allocation (" + std::to_string(size) +
                                                " bytes from " + hexAddress(start) + ")");
  return Status();
}

void ZeBackend::release(uint64_t address) {
  (void)api.zeMemFree(context, reinterpret_cast<void *>(static_cast<uintptr_t>(address)));
}

Status ZeBackend::write(uint64_t dst, const void *src, size_t bytes) {
  ze_result_t r = api.zeCommandListAppendMemoryCopy(list, reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), src,
                                                    bytes, nullptr, 0, nullptr);
  return r == ZE_RESULT_SUCCESS ? Status() : fail(r, "zeCommandListAppendMemoryCopy", KILN_ERROR_DRIVER);
}

Status ZeBackend::read(void *dst, uint64_t src, size_t bytes) {
  ze_result_t r = api.zeCommandListAppendMemoryCopy(
      list, dst, reinterpret_cast<const void *>(static_cast<uintptr_t>(src)), bytes, nullptr, 0, nullptr);
  return r == ZE_RESULT_SUCCESS ? Status() : fail(r, "zeCommandListAppendMemoryCopy", KILN_ERROR_DRIVER);
}

Status ZeBackend::fill(uint64_t dst, uint8_t byte, size_t bytes) {
  ze_result_t r = api.zeCommandListAppendMemoryFill(list, reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), &byte,
                                                    1, bytes, nullptr, 0, nullptr);
  return r == ZE_RESULT_SUCCESS ? Status() : fail(r, "zeCommandListAppendMemoryFill", KILN_ERROR_DRIVER);
}

Status ZeBackend::copy(uint64_t dst, uint64_t src, size_t bytes) {
  ze_result_t r = api.zeCommandListAppendMemoryCopy(list, reinterpret_cast<void *>(static_cast<uintptr_t>(dst)),
                                                    reinterpret_cast<const void *>(static_cast<uintptr_t>(src)), bytes,
                                                    nullptr, 0, nullptr);
  return r == ZE_RESULT_SUCCESS ? Status() : fail(r, "zeCommandListAppendMemoryCopy", KILN_ERROR_DRIVER);
}

Status ZeBackend::createEvent(std::unique_ptr<DeviceEvent> &out) {
  ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void *p = nullptr;
  ze_result_t r = api.zeMemAllocHost(context, &desc, sizeof(uint64_t), sizeof(uint64_t), &p);
  if (r != ZE_RESULT_SUCCESS)
    return fail(r, "zeMemAllocHost", KILN_ERROR_DRIVER);
  *static_cast<uint64_t *>(p) = 0;
  out = std::make_unique<ZeEvent>(*this, static_cast<uint64_t *>(p));
  return Status();
}

// ---- kernels ---------------------------------------------------------------------------

ZeKernel::~ZeKernel() {
  (void)backend_.api.zeKernelDestroy(kernel_);
  (void)backend_.api.zeModuleDestroy(module_);
}

Status ZeKernel::launch(kiln_grid grid, PackedArgs &args) {
  const ZeApi &api = backend_.api;
  for (uint32_t i = 0; i < args.slots.size(); ++i) {
    ze_result_t r = api.zeKernelSetArgumentValue(kernel_, i, args.sizes[i], &args.slots[i]);
    if (r != ZE_RESULT_SUCCESS)
      return backend_.fail(r, "zeKernelSetArgumentValue", KILN_ERROR_LAUNCH,
                           context_ + ", argument " + std::to_string(i + 1));
  }
  if (sharedBytes_) {
    // A null value with a size allocates local memory for a `local` pointer argument.
    uint32_t index = static_cast<uint32_t>(args.slots.size());
    ze_result_t r = api.zeKernelSetArgumentValue(kernel_, index, sharedBytes_, nullptr);
    if (r != ZE_RESULT_SUCCESS)
      return backend_.fail(r, "zeKernelSetArgumentValue(local memory)", KILN_ERROR_LAUNCH, context_);
  }
  ze_group_count_t groups{grid.x, grid.y, grid.z};
  ze_result_t r = api.zeCommandListAppendLaunchKernel(backend_.list, kernel_, &groups, nullptr, 0, nullptr);
  if (r != ZE_RESULT_SUCCESS)
    return backend_.fail(r, "zeCommandListAppendLaunchKernel", KILN_ERROR_LAUNCH,
                         context_ + " with grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                             std::to_string(grid.z) + ")");
  return Status();
}

// ---- events ----------------------------------------------------------------------------

ZeEvent::~ZeEvent() { (void)backend_.api.zeMemFree(backend_.context, stamp_); }

Status ZeEvent::record() {
  ze_result_t r = backend_.api.zeCommandListAppendWriteGlobalTimestamp(backend_.list, stamp_, nullptr, 0, nullptr);
  return r == ZE_RESULT_SUCCESS ? Status()
                                : backend_.fail(r, "zeCommandListAppendWriteGlobalTimestamp", KILN_ERROR_DRIVER);
}

Status ZeEvent::elapsedMsUntil(DeviceEvent &end, float &ms) {
  // Timestamps count device timer ticks in their low `timestampValidBits` bits and wrap;
  // the masked difference is right across one wrap.
  uint32_t bits = backend_.properties.timestampValidBits;
  uint64_t mask = bits == 0 || bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  uint64_t ticks = (*static_cast<ZeEvent &>(end).stamp_ - *stamp_) & mask;
  double ns = static_cast<double>(ticks) * static_cast<double>(backend_.properties.timerResolution);
  ms = static_cast<float>(ns / 1e6);
  return Status();
}

// ---- creation --------------------------------------------------------------------------

Status createZeBackend(int deviceIndex, std::unique_ptr<Backend> &out) {
  const ZeApi *api = nullptr;
  if (Status s = loadZeApi(api); !s.ok())
    return s;
  ze_result_t r = api->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r == ZE_RESULT_ERROR_UNINITIALIZED)
    return Status(KILN_ERROR_NO_DRIVER, "no Level Zero driver: zeInit returned ZE_RESULT_ERROR_UNINITIALIZED (" +
                                            api->libraryName + " found no GPU driver)");
  if (r != ZE_RESULT_SUCCESS)
    return Status(KILN_ERROR_NO_DRIVER, "no usable Level Zero driver: zeInit returned " + zeResultName(r));
  uint32_t driverCount = 0;
  r = api->zeDriverGet(&driverCount, nullptr);
  if (r != ZE_RESULT_SUCCESS || driverCount == 0)
    return Status(KILN_ERROR_NO_DRIVER, "no Level Zero driver: zeDriverGet found 0 drivers" +
                                            (r == ZE_RESULT_SUCCESS ? std::string() : " (" + zeResultName(r) + ")"));
  std::vector<ze_driver_handle_t> drivers(driverCount);
  if (r = api->zeDriverGet(&driverCount, drivers.data()); r != ZE_RESULT_SUCCESS)
    return Status(KILN_ERROR_NO_DRIVER, "no usable Level Zero driver: zeDriverGet returned " + zeResultName(r));
  drivers.resize(std::min<size_t>(driverCount, drivers.size()));

  // GPUs of all drivers, in driver order, then device order.
  std::vector<std::pair<ze_driver_handle_t, ze_device_handle_t>> gpus;
  for (ze_driver_handle_t d : drivers) {
    uint32_t n = 0;
    if (api->zeDeviceGet(d, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0)
      continue;
    std::vector<ze_device_handle_t> devices(n);
    if (api->zeDeviceGet(d, &n, devices.data()) != ZE_RESULT_SUCCESS)
      continue;
    devices.resize(std::min<size_t>(n, devices.size()));
    for (ze_device_handle_t dev : devices) {
      ze_device_properties_t p{};
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      if (api->zeDeviceGetProperties(dev, &p) == ZE_RESULT_SUCCESS && p.type == ZE_DEVICE_TYPE_GPU)
        gpus.emplace_back(d, dev);
    }
  }
  if (gpus.empty())
    return Status(KILN_ERROR_NO_DEVICE, "no Level Zero GPU: " + std::to_string(drivers.size()) +
                                            " driver(s) found, none offers a GPU device");
  if (deviceIndex < 0 || static_cast<size_t>(deviceIndex) >= gpus.size())
    return Status(KILN_ERROR_NO_DEVICE,
                  "no Level Zero GPU " + std::to_string(deviceIndex) + ": there are " + std::to_string(gpus.size()));
  auto backend = std::make_unique<ZeBackend>(*api, gpus[deviceIndex].first, gpus[deviceIndex].second);
  if (Status s = backend->init(); !s.ok())
    return s;
  out = std::move(backend);
  return Status();
}

} // namespace kiln::rt
