//===- FakeLevelZero.cpp - A stand-in Level Zero loader for runtime tests -===//
//
// No Intel GPU is available, so this library is the only way the Level Zero backend's
// success paths run at all. It exports the loader functions the runtime resolves;
// "device memory" is host memory, modules are checked to be SPIR-V and their kernel
// names are read from OpEntryPoint instructions, and each launch records its group
// size, group count and argument values for the tests to inspect. Timestamps come from
// a fake 32-bit device timer that starts just below its wrap-around point.
//
//===----------------------------------------------------------------------===//
#include <level_zero/ze_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

struct _ze_driver_handle_t {
  int index;
};
struct _ze_device_handle_t {
  int index;
  ze_device_type_t type;
};
struct _ze_context_handle_t {
  int dummy;
};
struct _ze_command_list_handle_t {
  int dummy;
};
struct _ze_module_handle_t {
  std::set<std::string> entries;
};
struct _ze_module_build_log_handle_t {
  std::string text;
};
struct _ze_kernel_handle_t {
  std::string name;
  uint32_t groupSize[3] = {1, 1, 1};
  std::map<uint32_t, std::pair<size_t, std::vector<unsigned char>>> args; ///< index -> (size, bytes; empty if null)
};

namespace {

struct Launch {
  std::string kernel;
  uint32_t groupSize[3] = {0, 0, 0};
  uint32_t groupCount[3] = {0, 0, 0};
  std::map<uint32_t, std::pair<size_t, std::vector<unsigned char>>> args;
};

struct State {
  ze_result_t initResult = ZE_RESULT_SUCCESS;
  int driverCount = 1;
  int gpuCount = 1;
  std::map<std::string, ze_result_t> failNext;
  std::vector<_ze_driver_handle_t> drivers{{0}, {1}};
  std::vector<_ze_device_handle_t> devices{{0, ZE_DEVICE_TYPE_CPU}, {1, ZE_DEVICE_TYPE_GPU}, {2, ZE_DEVICE_TYPE_GPU}};
  std::map<uintptr_t, std::vector<unsigned char>> memory;
  std::set<_ze_context_handle_t *> contexts;
  std::set<_ze_command_list_handle_t *> lists;
  std::set<_ze_module_handle_t *> modules;
  std::set<_ze_module_build_log_handle_t *> logs;
  std::set<_ze_kernel_handle_t *> kernels;
  uint64_t ticks = 0xFFFFFFFFull - 2500; // wraps during a test's launches
  int launches = 0;
  Launch last;
};

std::mutex mutex;
State state;

ze_result_t injected(const char *fn) {
  auto it = state.failNext.find(fn);
  if (it == state.failNext.end())
    return ZE_RESULT_SUCCESS;
  ze_result_t r = it->second;
  state.failNext.erase(it);
  return r;
}

unsigned char *range(const void *p, size_t n) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = state.memory.upper_bound(a);
  if (it == state.memory.begin())
    return nullptr;
  --it;
  if (a - it->first > it->second.size() || n > it->second.size() - (a - it->first))
    return nullptr;
  return it->second.data() + (a - it->first);
}

// Host memory the fake device may also write (timestamp targets, copy sources): any
// pointer that is not fake device memory.
unsigned char *hostOrDevice(void *p, size_t n) {
  unsigned char *d = range(p, n);
  return d ? d : static_cast<unsigned char *>(p);
}

// The kernel names of the OpEntryPoint instructions of a SPIR-V module.
bool readEntryPoints(const uint8_t *bytes, size_t size, std::set<std::string> &names) {
  if (size % 4 || size < 20)
    return false;
  std::vector<uint32_t> words(size / 4);
  std::memcpy(words.data(), bytes, size);
  if (words[0] != 0x07230203u)
    return false;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
    if (count == 0 || i + count > words.size())
      return false;
    if (opcode == 15 && count > 3) { // OpEntryPoint model id name...
      const char *name = reinterpret_cast<const char *>(&words[i + 3]);
      names.insert(std::string(name, strnlen(name, 4 * (count - 3))));
    }
    i += count;
  }
  return true;
}

} // namespace

#define FAKE_ENTER(name)                                                                                               \
  std::lock_guard<std::mutex> lock(mutex);                                                                             \
  if (ze_result_t injectedResult = injected(name))                                                                     \
    return injectedResult;

extern "C" {

// ---- test controls -----------------------------------------------------------------------

void fake_ze_reset() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto *p : state.contexts)
    delete p;
  for (auto *p : state.lists)
    delete p;
  for (auto *p : state.modules)
    delete p;
  for (auto *p : state.logs)
    delete p;
  for (auto *p : state.kernels)
    delete p;
  state = State();
}

void fake_ze_configure(int initResult, int driverCount, int gpuCount) {
  std::lock_guard<std::mutex> lock(mutex);
  state.initResult = static_cast<ze_result_t>(initResult);
  state.driverCount = driverCount;
  state.gpuCount = gpuCount;
}

void fake_ze_fail_next(const char *fn, int result) {
  std::lock_guard<std::mutex> lock(mutex);
  state.failNext[fn] = static_cast<ze_result_t>(result);
}

int fake_ze_launch_count() {
  std::lock_guard<std::mutex> lock(mutex);
  return state.launches;
}

int fake_ze_last_launch(uint32_t groupSize[3], uint32_t groupCount[3]) {
  std::lock_guard<std::mutex> lock(mutex);
  std::memcpy(groupSize, state.last.groupSize, sizeof state.last.groupSize);
  std::memcpy(groupCount, state.last.groupCount, sizeof state.last.groupCount);
  return state.launches;
}

/// Argument `index` of the last launch: its size (0 if unset), bytes into `out`, and
/// whether it was set with a null value (local memory).
size_t fake_ze_last_arg(uint32_t index, void *out, size_t capacity, int *isNull) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = state.last.args.find(index);
  if (it == state.last.args.end())
    return 0;
  *isNull = it->second.second.empty();
  if (!it->second.second.empty())
    std::memcpy(out, it->second.second.data(), std::min(capacity, it->second.second.size()));
  return it->second.first;
}

int fake_ze_live(const char *what) {
  std::lock_guard<std::mutex> lock(mutex);
  std::string w = what;
  if (w == "memory")
    return static_cast<int>(state.memory.size());
  if (w == "contexts")
    return static_cast<int>(state.contexts.size());
  if (w == "lists")
    return static_cast<int>(state.lists.size());
  if (w == "modules")
    return static_cast<int>(state.modules.size());
  if (w == "logs")
    return static_cast<int>(state.logs.size());
  if (w == "kernels")
    return static_cast<int>(state.kernels.size());
  return -1;
}

// ---- loader entry points -----------------------------------------------------------------

ze_result_t zeInit(ze_init_flags_t) {
  FAKE_ENTER("zeInit");
  return state.initResult;
}

ze_result_t zeDriverGet(uint32_t *count, ze_driver_handle_t *drivers) {
  FAKE_ENTER("zeDriverGet");
  if (!drivers) {
    *count = static_cast<uint32_t>(state.driverCount);
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min<uint32_t>(*count, static_cast<uint32_t>(state.driverCount));
  for (uint32_t i = 0; i < *count; ++i)
    drivers[i] = &state.drivers[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGet(ze_driver_handle_t driver, uint32_t *count, ze_device_handle_t *devices) {
  FAKE_ENTER("zeDeviceGet");
  // Driver 0 has a CPU device and then the GPUs; other drivers have nothing.
  uint32_t n = driver->index == 0 ? 1 + static_cast<uint32_t>(state.gpuCount) : 0;
  if (!devices) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, n);
  for (uint32_t i = 0; i < *count; ++i)
    devices[i] = &state.devices[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t *p) {
  FAKE_ENTER("zeDeviceGetProperties");
  if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  p->type = device->type;
  p->timerResolution = 250; // ns per tick
  p->timestampValidBits = 32;
  std::string name = device->type == ZE_DEVICE_TYPE_GPU ? "Fake Arc " + std::to_string(device->index) : "Fake CPU";
  std::snprintf(p->name, sizeof p->name, "%s", name.c_str());
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t, ze_device_compute_properties_t *p) {
  FAKE_ENTER("zeDeviceGetComputeProperties");
  p->maxTotalGroupSize = 1024;
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 0xffffffffu;
  p->maxSharedLocalMemory = 64 * 1024;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t, uint32_t *count,
                                                   ze_command_queue_group_properties_t *props) {
  FAKE_ENTER("zeDeviceGetCommandQueueGroupProperties");
  // Group 0 copies only; group 1 computes.
  if (!props) {
    *count = 2;
    return ZE_RESULT_SUCCESS;
  }
  for (uint32_t i = 0; i < std::min<uint32_t>(*count, 2); ++i)
    props[i].flags = i == 0 ? ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY : ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextCreate(ze_driver_handle_t, const ze_context_desc_t *, ze_context_handle_t *out) {
  FAKE_ENTER("zeContextCreate");
  *out = new _ze_context_handle_t{};
  state.contexts.insert(*out);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextDestroy(ze_context_handle_t c) {
  FAKE_ENTER("zeContextDestroy");
  if (!state.contexts.erase(c))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListCreateImmediate(ze_context_handle_t c, ze_device_handle_t, const ze_command_queue_desc_t *d,
                                         ze_command_list_handle_t *out) {
  FAKE_ENTER("zeCommandListCreateImmediate");
  if (!state.contexts.count(c) || d->ordinal != 1 || d->mode != ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = new _ze_command_list_handle_t{};
  state.lists.insert(*out);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListDestroy(ze_command_list_handle_t l) {
  FAKE_ENTER("zeCommandListDestroy");
  if (!state.lists.erase(l))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t l, ze_kernel_handle_t k,
                                            const ze_group_count_t *groups, ze_event_handle_t, uint32_t,
                                            ze_event_handle_t *) {
  FAKE_ENTER("zeCommandListAppendLaunchKernel");
  if (!state.lists.count(l) || !state.kernels.count(k))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Launch launch;
  launch.kernel = k->name;
  std::memcpy(launch.groupSize, k->groupSize, sizeof k->groupSize);
  launch.groupCount[0] = groups->groupCountX;
  launch.groupCount[1] = groups->groupCountY;
  launch.groupCount[2] = groups->groupCountZ;
  launch.args = k->args;
  state.last = std::move(launch);
  ++state.launches;
  state.ticks += 1000; // 1000 ticks of 250 ns: a quarter millisecond per launch
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
                                          ze_event_handle_t, uint32_t, ze_event_handle_t *) {
  FAKE_ENTER("zeCommandListAppendMemoryCopy");
  if (!state.lists.count(l))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  // One side must be fake device memory, fully inside one allocation.
  if (!range(dst, size) && !range(src, size))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::memcpy(hostOrDevice(dst, size), hostOrDevice(const_cast<void *>(src), size), size);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t l, void *ptr, const void *pattern,
                                          size_t patternSize, size_t size, ze_event_handle_t, uint32_t,
                                          ze_event_handle_t *) {
  FAKE_ENTER("zeCommandListAppendMemoryFill");
  unsigned char *d = range(ptr, size);
  if (!state.lists.count(l) || !d || patternSize != 1)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::memset(d, *static_cast<const unsigned char *>(pattern), size);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t l, uint64_t *dst, ze_event_handle_t,
                                                    uint32_t, ze_event_handle_t *) {
  FAKE_ENTER("zeCommandListAppendWriteGlobalTimestamp");
  if (!state.lists.count(l) || !range(dst, 8))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  // Only the low timestampValidBits (32) bits of the counter are meaningful; the upper
  // ones hold junk, as hardware is allowed to.
  uint64_t value = (state.ticks & 0xFFFFFFFFull) | 0xABCD000000000000ull;
  std::memcpy(range(dst, 8), &value, 8);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleCreate(ze_context_handle_t c, ze_device_handle_t, const ze_module_desc_t *desc,
                           ze_module_handle_t *out, ze_module_build_log_handle_t *log) {
  FAKE_ENTER("zeModuleCreate");
  auto *l = new _ze_module_build_log_handle_t{};
  state.logs.insert(l);
  if (log)
    *log = l;
  std::set<std::string> entries;
  if (!state.contexts.count(c) || desc->format != ZE_MODULE_FORMAT_IL_SPIRV ||
      !readEntryPoints(desc->pInputModule, desc->inputSize, entries)) {
    l->text = "error: fake compiler: input is not a SPIR-V module";
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  if (entries.count("fake_build_error")) {
    l->text = "error: fake compiler: undefined function 'fake_build_error'";
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  l->text = "fake compiler: built " + std::to_string(entries.size()) + " kernel(s)";
  *out = new _ze_module_handle_t{entries};
  state.modules.insert(*out);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleDestroy(ze_module_handle_t m) {
  FAKE_ENTER("zeModuleDestroy");
  if (!state.modules.erase(m))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t l, size_t *size, char *text) {
  FAKE_ENTER("zeModuleBuildLogGetString");
  if (!state.logs.count(l))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!text) {
    *size = l->text.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  std::snprintf(text, *size, "%s", l->text.c_str());
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t l) {
  FAKE_ENTER("zeModuleBuildLogDestroy");
  if (!state.logs.erase(l))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelCreate(ze_module_handle_t m, const ze_kernel_desc_t *desc, ze_kernel_handle_t *out) {
  FAKE_ENTER("zeKernelCreate");
  if (!state.modules.count(m))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!m->entries.count(desc->pKernelName))
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  *out = new _ze_kernel_handle_t{};
  (*out)->name = desc->pKernelName;
  state.kernels.insert(*out);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelDestroy(ze_kernel_handle_t k) {
  FAKE_ENTER("zeKernelDestroy");
  if (!state.kernels.erase(k))
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
  FAKE_ENTER("zeKernelSetGroupSize");
  if (!state.kernels.count(k) || x * y * z > 1024 || x * y * z == 0)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  k->groupSize[0] = x;
  k->groupSize[1] = y;
  k->groupSize[2] = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t k, uint32_t index, size_t size, const void *value) {
  FAKE_ENTER("zeKernelSetArgumentValue");
  if (!state.kernels.count(k) || size == 0 || size > 64 * 1024)
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  std::vector<unsigned char> bytes;
  if (value) {
    if (size > 8)
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    bytes.assign(static_cast<const unsigned char *>(value), static_cast<const unsigned char *>(value) + size);
  }
  k->args[index] = {size, bytes};
  return ZE_RESULT_SUCCESS;
}

static ze_result_t allocate(size_t size, void **out) {
  if (size == 0)
    return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  std::vector<unsigned char> block(size, 0xcd);
  *out = block.data();
  state.memory.emplace(reinterpret_cast<uintptr_t>(*out), std::move(block));
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemAllocDevice(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *, size_t size, size_t,
                             ze_device_handle_t, void **out) {
  FAKE_ENTER("zeMemAllocDevice");
  return state.contexts.count(c) ? allocate(size, out) : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t zeMemAllocHost(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *, size_t size, size_t, void **out) {
  FAKE_ENTER("zeMemAllocHost");
  return state.contexts.count(c) ? allocate(size, out) : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t zeMemGetAddressRange(ze_context_handle_t, const void *p, void **base, size_t *size) {
  FAKE_ENTER("zeMemGetAddressRange");
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = state.memory.upper_bound(at);
  if (it == state.memory.begin())
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  --it;
  if (at - it->first >= it->second.size())
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *base = it->second.data();
  *size = it->second.size();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemFree(ze_context_handle_t, void *p) {
  FAKE_ENTER("zeMemFree");
  return state.memory.erase(reinterpret_cast<uintptr_t>(p)) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

} // extern "C"
