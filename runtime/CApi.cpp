//===- CApi.cpp - The C ABI of the runtime (kiln_runtime.h) ---------------===//
//
// Everything that needs no device happens here, before a backend is called: handle
// checks, bundle reading, launch-argument checking, bounds of copies. Each runtime
// serializes its driver calls with one mutex, so handles may be used from several
// threads. No C++ exception crosses the ABI: each entry point turns one into a status.
//
//===----------------------------------------------------------------------===//
#include "runtime/Backend.h"
#include "runtime/CheckReport.h"
#include "runtime/DTypes.h"
#include "runtime/GuardedCall.h"
#include "runtime/SplitLaunch.h"
#include "runtime/kiln_runtime.h"
#include "support/BlockMask.h"
#include "support/CheckRecord.h"

#include <mutex>
#include <new>
#include <set>
#include <tuple>
#include <variant>

namespace kiln::rt {
namespace {

struct RuntimeState {
  std::unique_ptr<Backend> backend;
  std::mutex mutex;
  std::set<const kiln_buffer *> buffers;   ///< live buffers, to refuse freed or foreign ones
  std::set<const kiln_block_mask *> masks; ///< live block masks, likewise
  std::string lastLaunch;                  ///< the last kernel launched, for asynchronous faults
  /// Checked kernels launched since the last synchronization, whose records it reads.
  std::set<kiln_kernel *> checkedLaunched;
  /// While a recording is made: the checked kernels it holds, which run (and so must
  /// have their records read) each time it is replayed.
  bool recording = false;
  std::set<kiln_kernel *> recordedChecked;
  std::set<kiln_recording *> recordings; ///< live, to forget a destroyed kernel
};

thread_local std::string lastError;

kiln_status fail(kiln_status code, std::string message) {
  lastError = std::move(message);
  return code;
}
kiln_status fail(const Status &s) { return fail(s.code(), s.message()); }

template <typename Body> kiln_status guarded(Body &&body) { return guardedCall(std::forward<Body>(body)); }

// A kernel fault is reported by whichever call synchronizes next; say which kernel ran.
kiln_status failAfterLaunch(RuntimeState &rt, const Status &s) {
  if (s.code() == KILN_ERROR_LAUNCH && !rt.lastLaunch.empty())
    return fail(s.code(), s.message() + "; the last kernel launched was " + rt.lastLaunch);
  return fail(s);
}

Status createBackend(kiln_backend which, int device, std::unique_ptr<Backend> &out) {
  switch (which) {
  case KILN_BACKEND_CUDA: return createCudaBackend(device, out);
  case KILN_BACKEND_LEVEL_ZERO: return createZeBackend(device, out);
  case KILN_BACKEND_AUTO: {
    Status cuda = createCudaBackend(device, out);
    if (cuda.ok())
      return cuda;
    Status ze = createZeBackend(device, out);
    if (ze.ok())
      return ze;
    auto isAbsence = [](const Status &s) {
      return s.code() == KILN_ERROR_NO_DRIVER || s.code() == KILN_ERROR_NO_DEVICE;
    };
    // A real failure of a present driver matters more than the absence of the other.
    kiln_status code = !isAbsence(cuda) ? cuda.code()
                       : !isAbsence(ze) ? ze.code()
                       : cuda.code() == KILN_ERROR_NO_DEVICE || ze.code() == KILN_ERROR_NO_DEVICE
                           ? KILN_ERROR_NO_DEVICE
                           : KILN_ERROR_NO_DRIVER;
    return Status(code, "no GPU backend is available:\n  CUDA: " + cuda.message() + "\n  Level Zero: " + ze.message());
  }
  case KILN_BACKEND_MAX_ENUM: break;
  }
  return Status(KILN_ERROR_INVALID_VALUE, "unknown backend " + std::to_string(static_cast<int>(which)));
}

std::string rangeText(size_t offset, size_t bytes) {
  return std::to_string(bytes) + " bytes at offset " + std::to_string(offset);
}

} // namespace
} // namespace kiln::rt

using namespace kiln::rt;

struct kiln_runtime {
  std::shared_ptr<RuntimeState> state;
};
struct kiln_buffer {
  std::shared_ptr<RuntimeState> state;
  uint64_t address = 0;
  size_t size = 0;
  kiln_dtype dtype = KILN_DTYPE_NONE;
  bool owned = true; ///< false: kiln_buffer_wrap's, the caller's memory
};
struct kiln_kernel {
  std::shared_ptr<RuntimeState> state; // first: destroyed last, after the device kernel
  kiln::rt::Bundle bundle;
  std::unique_ptr<DeviceKernel> device;
  kiln::rt::Workspace workspace; ///< of a kernel split over programs (SplitLaunch.h)
  uint64_t checkRecord = 0;      ///< a checked kernel's record (support/CheckRecord.h)
  std::string context;           ///< kernelContext(bundle), made on the first launch
  kiln::rt::PackedArgs packed;   ///< reused by each launch (under the runtime's lock)
};
struct kiln_event {
  std::shared_ptr<RuntimeState> state;
  std::unique_ptr<DeviceEvent> device;
  bool recorded = false;
};
struct kiln_recording {
  std::shared_ptr<RuntimeState> state;
  std::unique_ptr<kiln::rt::DeviceRecording> device;
  std::set<kiln_kernel *> checked; ///< checked kernels it launches
};
/// A block mask on the device: its three arrays are ordinary buffers of the runtime
/// (registered like any other, so a launch resolves them as it resolves the caller's),
/// owned by the mask and never handed out.
struct kiln_block_mask {
  std::shared_ptr<RuntimeState> state;
  int32_t rows = 0, cols = 0, blockRows = 0, blockCols = 0;
  int64_t full = 0, partial = 0, empty = 0;
  kiln_buffer *rowStart = nullptr, *blocks = nullptr, *bitmaps = nullptr;
  std::string digest; ///< blockMaskDigest of the layout
};

namespace {

/// A checked kernel's arguments after its own (and its workspace): each pointer
/// parameter's extent, the bytes from the address passed to the end of the buffer that
/// holds it, then its check record (support/CheckRecord.h). The driver places buffers
/// back to back, so an address may be both one buffer's start and the previous one's
/// end: the buffer it lies inside wins; only an address inside none (the end of the
/// last, a pointer one past everything) gets 0.
void appendCheckArguments(const RuntimeState &rt, const kiln_kernel &kernel, PackedArgs &packed) {
  const kiln::rt::Bundle &b = kernel.bundle;
  for (size_t i = 0; i < b.params.size(); ++i) {
    if (!b.params[i].pointer)
      continue;
    const uint64_t address = packed.slots[i];
    uint64_t extent = 0;
    for (const kiln_buffer *buffer : rt.buffers)
      if (address >= buffer->address && address < buffer->address + buffer->size) {
        extent = buffer->address + buffer->size - address;
        break;
      }
    packed.slots.push_back(extent);
    packed.sizes.push_back(8);
  }
  packed.slots.push_back(kernel.checkRecord);
  packed.sizes.push_back(8);
}

/// After a synchronization: the first recorded bad access of the checked kernels
/// launched since the last one, as KILN_ERROR_OUT_OF_BOUNDS; every record is cleared.
kiln_status reportCheckedViolations(RuntimeState &rt) {
  std::string message;
  for (kiln_kernel *kernel : rt.checkedLaunched) {
    uint32_t record[kiln::check::kCheckRecordWords] = {};
    if (Status s = rt.backend->read(record, kernel->checkRecord, sizeof record); !s.ok())
      return failAfterLaunch(rt, s);
    if (record[kiln::check::kFlagWord] == 0 || !message.empty())
      continue;
    (void)rt.backend->fill(kernel->checkRecord, 0, sizeof record);
    message = kiln::rt::describeCheckRecord(record, kernel->bundle);
  }
  rt.checkedLaunched.clear();
  return message.empty() ? KILN_SUCCESS : fail(KILN_ERROR_OUT_OF_BOUNDS, message);
}

} // namespace

extern "C" {

const char *kiln_status_name(kiln_status status) {
  switch (status) {
  case KILN_SUCCESS: return "KILN_SUCCESS";
  case KILN_ERROR_INVALID_VALUE: return "KILN_ERROR_INVALID_VALUE";
  case KILN_ERROR_NO_DRIVER: return "KILN_ERROR_NO_DRIVER";
  case KILN_ERROR_NO_DEVICE: return "KILN_ERROR_NO_DEVICE";
  case KILN_ERROR_IO: return "KILN_ERROR_IO";
  case KILN_ERROR_INVALID_BUNDLE: return "KILN_ERROR_INVALID_BUNDLE";
  case KILN_ERROR_NO_COMPATIBLE_CODE: return "KILN_ERROR_NO_COMPATIBLE_CODE";
  case KILN_ERROR_MODULE_LOAD: return "KILN_ERROR_MODULE_LOAD";
  case KILN_ERROR_ARGUMENT_MISMATCH: return "KILN_ERROR_ARGUMENT_MISMATCH";
  case KILN_ERROR_OUT_OF_MEMORY: return "KILN_ERROR_OUT_OF_MEMORY";
  case KILN_ERROR_LAUNCH: return "KILN_ERROR_LAUNCH";
  case KILN_ERROR_DRIVER: return "KILN_ERROR_DRIVER";
  case KILN_ERROR_UNSUPPORTED: return "KILN_ERROR_UNSUPPORTED";
  case KILN_ERROR_COMPILE: return "KILN_ERROR_COMPILE";
  case KILN_ERROR_OUT_OF_BOUNDS: return "KILN_ERROR_OUT_OF_BOUNDS";
  case KILN_STATUS_MAX_ENUM: break;
  }
  return "KILN_STATUS_UNKNOWN";
}

const char *kiln_last_error(void) { return lastError.c_str(); }

kiln_status kiln_set_last_error(kiln_status status, const char *message) {
  // Not guardedCall, which reports through here: out of memory keeps the old message.
  try {
    return fail(status, message ? message : "");
  } catch (...) {
    return status;
  }
}

// ---- runtime ---------------------------------------------------------------------------

kiln_status kiln_runtime_create(const kiln_runtime_options *options, kiln_runtime **out) {
  return guarded([&] {
    if (!out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_create: `out` is null");
    *out = nullptr;
    kiln_runtime_options o = options ? *options : kiln_runtime_options{KILN_BACKEND_AUTO, 0};
    auto state = std::make_shared<RuntimeState>();
    if (Status s = createBackend(o.backend, o.device_index, state->backend); !s.ok())
      return fail(s);
    *out = new kiln_runtime{std::move(state)};
    return KILN_SUCCESS;
  });
}

void kiln_runtime_destroy(kiln_runtime *runtime) { delete runtime; }

kiln_status kiln_runtime_share(kiln_runtime *runtime, kiln_runtime **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_share: null runtime or `out`");
    *out = new kiln_runtime{runtime->state};
    return KILN_SUCCESS;
  });
}

kiln_backend kiln_runtime_backend(const kiln_runtime *runtime) {
  return runtime ? runtime->state->backend->kind() : KILN_BACKEND_AUTO;
}

const char *kiln_runtime_device_name(const kiln_runtime *runtime) {
  return runtime ? runtime->state->backend->deviceName().c_str() : "";
}

const char *kiln_runtime_target(const kiln_runtime *runtime) {
  return runtime ? runtime->state->backend->targetName().c_str() : "";
}

kiln_status kiln_runtime_synchronize(kiln_runtime *runtime) {
  return guarded([&] {
    if (!runtime)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_synchronize: null runtime");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = rt.backend->synchronize();
    if (!s.ok())
      return failAfterLaunch(rt, s);
    return reportCheckedViolations(rt);
  });
}

// ---- buffers ---------------------------------------------------------------------------

namespace {

/// Why `bytes` of `element`s cannot make a buffer, or "" (`what` names the call).
std::string badBufferShape(const char *what, size_t bytes, kiln_dtype element) {
  std::optional<kiln::DType> dt = fromCDType(element);
  if (element != KILN_DTYPE_NONE && !dt)
    return std::string(what) + ": unknown element dtype " + std::to_string(static_cast<int>(element));
  if (dt && bytes % dtypeSizeBytes(*dt) != 0)
    return std::string(what) + ": " + std::to_string(bytes) + " bytes is not a whole number of " +
           std::string(dtypeSpelling(*dt)) + " elements";
  return "";
}

} // namespace

kiln_status kiln_buffer_alloc(kiln_runtime *runtime, size_t bytes, kiln_dtype element, kiln_buffer **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_alloc: null runtime or `out`");
    *out = nullptr;
    if (std::string bad = badBufferShape("kiln_buffer_alloc", bytes, element); !bad.empty())
      return fail(KILN_ERROR_INVALID_VALUE, bad);
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    auto buf = std::make_unique<kiln_buffer>();
    buf->state = runtime->state;
    buf->size = bytes;
    buf->dtype = element;
    // An empty buffer needs no device memory; kernels see a null pointer, as they
    // would for an empty tensor elsewhere.
    if (bytes > 0)
      if (Status s = rt.backend->alloc(bytes, buf->address); !s.ok())
        return failAfterLaunch(rt, s);
    rt.buffers.insert(buf.get());
    *out = buf.release();
    return KILN_SUCCESS;
  });
}

kiln_status kiln_buffer_wrap(kiln_runtime *runtime, uint64_t device_address, size_t bytes, kiln_dtype element,
                             kiln_buffer **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_wrap: null runtime or `out`");
    *out = nullptr;
    if (device_address == 0 || bytes == 0)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_wrap: a null address or zero bytes wraps nothing");
    if (std::string bad = badBufferShape("kiln_buffer_wrap", bytes, element); !bad.empty())
      return fail(KILN_ERROR_INVALID_VALUE, bad);
    if (device_address + bytes < device_address)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_wrap: the range wraps around the address space");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (Status s = rt.backend->checkForeign(device_address, bytes); !s.ok())
      return fail(s.code(), "kiln_buffer_wrap: " + s.message());
    auto buf = std::make_unique<kiln_buffer>();
    buf->state = runtime->state;
    buf->address = device_address;
    buf->size = bytes;
    buf->dtype = element;
    buf->owned = false;
    rt.buffers.insert(buf.get());
    *out = buf.release();
    return KILN_SUCCESS;
  });
}

void kiln_buffer_free(kiln_buffer *buffer) {
  if (!buffer)
    return;
  {
    RuntimeState &rt = *buffer->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.buffers.erase(buffer);
    if (buffer->owned && buffer->size > 0)
      rt.backend->release(buffer->address);
  }
  delete buffer;
}

size_t kiln_buffer_size(const kiln_buffer *buffer) { return buffer ? buffer->size : 0; }
kiln_dtype kiln_buffer_dtype(const kiln_buffer *buffer) { return buffer ? buffer->dtype : KILN_DTYPE_NONE; }
uint64_t kiln_buffer_device_address(const kiln_buffer *buffer) { return buffer ? buffer->address : 0; }

kiln_status kiln_buffer_query(const kiln_runtime *runtime, const kiln_buffer *buffer, uint64_t *address, size_t *size,
                              kiln_dtype *dtype) {
  return guarded([&] {
    if (!runtime)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_query: null runtime");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    // Only a handle known to be live in this runtime is dereferenced.
    if (!buffer || !rt.buffers.count(buffer))
      return fail(KILN_ERROR_INVALID_VALUE, buffer ? "the buffer was freed or belongs to another runtime"
                                                   : "the buffer is null");
    if (address)
      *address = buffer->address;
    if (size)
      *size = buffer->size;
    if (dtype)
      *dtype = buffer->dtype;
    return KILN_SUCCESS;
  });
}

// Checks a host<->device copy's arguments; "" when fine.
static std::string checkCopy(const char *fn, const kiln_buffer *buffer, size_t offset, const void *host, size_t bytes) {
  if (!buffer)
    return std::string(fn) + ": null buffer";
  if (!host && bytes > 0)
    return std::string(fn) + ": null host pointer";
  if (offset > buffer->size || bytes > buffer->size - offset)
    return std::string(fn) + ": " + rangeText(offset, bytes) + " exceeds the " + std::to_string(buffer->size) +
           "-byte buffer";
  return "";
}

kiln_status kiln_buffer_write(kiln_buffer *buffer, size_t offset, const void *src, size_t bytes) {
  return guarded([&] {
    if (std::string why = checkCopy("kiln_buffer_write", buffer, offset, src, bytes); !why.empty())
      return fail(KILN_ERROR_INVALID_VALUE, why);
    if (bytes == 0)
      return KILN_SUCCESS;
    RuntimeState &rt = *buffer->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = rt.backend->write(buffer->address + offset, src, bytes);
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

kiln_status kiln_buffer_read(const kiln_buffer *buffer, size_t offset, void *dst, size_t bytes) {
  return guarded([&] {
    if (std::string why = checkCopy("kiln_buffer_read", buffer, offset, dst, bytes); !why.empty())
      return fail(KILN_ERROR_INVALID_VALUE, why);
    if (bytes == 0)
      return KILN_SUCCESS;
    RuntimeState &rt = *buffer->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = rt.backend->read(dst, buffer->address + offset, bytes);
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

kiln_status kiln_buffer_fill(kiln_buffer *buffer, uint8_t byte) {
  return guarded([&] {
    if (!buffer)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_fill: null buffer");
    if (buffer->size == 0)
      return KILN_SUCCESS;
    RuntimeState &rt = *buffer->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = rt.backend->fill(buffer->address, byte, buffer->size);
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

kiln_status kiln_buffer_copy(kiln_buffer *dst, size_t dst_offset, const kiln_buffer *src, size_t src_offset,
                             size_t bytes) {
  return guarded([&] {
    if (!dst || !src)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_copy: null buffer");
    if (dst->state != src->state)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_copy: the buffers belong to different runtimes");
    for (auto [what, buffer, offset] : {std::tuple{"destination", static_cast<const kiln_buffer *>(dst), dst_offset},
                                        std::tuple{"source", src, src_offset}})
      if (offset > buffer->size || bytes > buffer->size - offset)
        return fail(KILN_ERROR_INVALID_VALUE, std::string("kiln_buffer_copy: ") + rangeText(offset, bytes) +
                                                  " exceeds the " + std::to_string(buffer->size) + "-byte " + what +
                                                  " buffer");
    bool sameRange = dst == src && dst_offset == src_offset;
    if (dst == src && !sameRange && dst_offset < src_offset + bytes && src_offset < dst_offset + bytes)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_buffer_copy: the source and destination ranges overlap");
    if (bytes == 0 || sameRange)
      return KILN_SUCCESS;
    RuntimeState &rt = *dst->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = rt.backend->copy(dst->address + dst_offset, src->address + src_offset, bytes);
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

// ---- kernels ---------------------------------------------------------------------------

static kiln_status loadKernel(kiln_runtime *runtime, kiln::rt::Bundle bundle, kiln_kernel **out) {
  RuntimeState &rt = *runtime->state;
  auto kernel = std::make_unique<kiln_kernel>();
  kernel->state = runtime->state;
  kernel->bundle = std::move(bundle);
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (Status s = rt.backend->loadKernel(kernel->bundle, kernel->device); !s.ok())
    return failAfterLaunch(rt, s);
  if (kernel->bundle.checked) {
    const size_t bytes = kiln::check::kCheckRecordWords * 4;
    if (Status s = rt.backend->alloc(bytes, kernel->checkRecord); !s.ok())
      return failAfterLaunch(rt, s);
    if (Status s = rt.backend->fill(kernel->checkRecord, 0, bytes); !s.ok()) {
      rt.backend->release(kernel->checkRecord);
      return failAfterLaunch(rt, s);
    }
  }
  *out = kernel.release();
  return KILN_SUCCESS;
}

kiln_status kiln_kernel_load_file(kiln_runtime *runtime, const char *path, kiln_kernel **out) {
  return guarded([&] {
    if (!runtime || !path || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_load_file: null runtime, path or `out`");
    *out = nullptr;
    std::string error;
    bool ioError = false;
    std::optional<kiln::rt::Bundle> bundle = readBundle(path, error, &ioError);
    if (!bundle)
      return fail(ioError ? KILN_ERROR_IO : KILN_ERROR_INVALID_BUNDLE, error);
    return loadKernel(runtime, std::move(*bundle), out);
  });
}

kiln_status kiln_kernel_load_memory(kiln_runtime *runtime, const void *data, size_t size, kiln_kernel **out) {
  return guarded([&] {
    if (!runtime || (!data && size) || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_load_memory: null runtime, data or `out`");
    *out = nullptr;
    std::string error;
    std::optional<kiln::rt::Bundle> bundle =
        parseBundle(std::span<const uint8_t>(static_cast<const uint8_t *>(data), size), error);
    if (!bundle)
      return fail(KILN_ERROR_INVALID_BUNDLE, "bundle in memory: " + error);
    return loadKernel(runtime, std::move(*bundle), out);
  });
}

void kiln_kernel_destroy(kiln_kernel *kernel) {
  if (!kernel)
    return;
  std::shared_ptr<RuntimeState> state = kernel->state;
  std::lock_guard<std::mutex> lock(state->mutex);
  if (kernel->workspace.address() || kernel->checkRecord) {
    // The kernel's launches may still be running; a failure here was a fault of one of
    // them, which the next call that synchronizes reports again.
    (void)state->backend->synchronize();
    kernel->workspace.release(*state->backend);
    if (kernel->checkRecord)
      state->backend->release(kernel->checkRecord);
  }
  state->checkedLaunched.erase(kernel);
  state->recordedChecked.erase(kernel);
  for (kiln_recording *r : state->recordings)
    r->checked.erase(kernel);
  delete kernel;
}

const char *kiln_kernel_name(const kiln_kernel *kernel) { return kernel ? kernel->bundle.kernelName.c_str() : ""; }
size_t kiln_kernel_num_params(const kiln_kernel *kernel) { return kernel ? kernel->bundle.params.size() : 0; }

kiln_status kiln_kernel_param(const kiln_kernel *kernel, size_t index, const char **name, kiln_dtype *dtype,
                              int *is_pointer) {
  return guarded([&] {
    if (!kernel || index >= kernel->bundle.params.size())
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_param: null kernel or index out of range");
    const BundleParam &p = kernel->bundle.params[index];
    if (name)
      *name = p.name.c_str();
    if (dtype)
      *dtype = toCDType(p.dtype);
    if (is_pointer)
      *is_pointer = p.pointer ? 1 : 0;
    return KILN_SUCCESS;
  });
}

size_t kiln_kernel_num_block_masks(const kiln_kernel *kernel) {
  return kernel ? kernel->bundle.blockMasks.size() : 0;
}

kiln_status kiln_kernel_block_mask(const kiln_kernel *kernel, size_t index, const char **name, int64_t *block_rows,
                                   int64_t *block_cols, size_t *first_param) {
  return guarded([&] {
    if (!kernel || index >= kernel->bundle.blockMasks.size())
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_block_mask: null kernel or index out of range");
    const BundleBlockMask &m = kernel->bundle.blockMasks[index];
    if (name)
      *name = m.name.c_str();
    if (block_rows)
      *block_rows = m.blockRows;
    if (block_cols)
      *block_cols = m.blockCols;
    if (first_param)
      *first_param = m.firstParam;
    return KILN_SUCCESS;
  });
}

uint32_t kiln_kernel_block_size(const kiln_kernel *kernel) { return kernel ? kernel->bundle.numWarps * 32 : 0; }
uint32_t kiln_kernel_shared_bytes(const kiln_kernel *kernel) { return kernel ? kernel->bundle.sharedBytes : 0; }
kiln_status kiln_kernel_resident_programs(const kiln_kernel *kernel, uint32_t *programs) {
  return guarded([&] {
    if (!kernel || !kernel->device || !programs)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_resident_programs: null kernel or output");
    std::lock_guard<std::mutex> lock(kernel->state->mutex);
    uint32_t n = 0;
    if (Status s = kernel->device->residentPrograms(n); !s.ok())
      return fail(s);
    *programs = n;
    return KILN_SUCCESS;
  });
}
const char *kiln_kernel_jit_log(const kiln_kernel *kernel) {
  return kernel && kernel->device ? kernel->device->jitLog().c_str() : "";
}

size_t kiln_kernel_num_consts(const kiln_kernel *kernel) { return kernel ? kernel->bundle.consts.size() : 0; }

// A const's value as the scalar kiln_arg of the same kind.
static kiln_arg constArg(const kiln::rt::ConstValue &c) {
  kiln_arg a{};
  if (const int64_t *i = std::get_if<int64_t>(&c.value)) {
    a.kind = KILN_ARG_INT;
    a.value.i = *i;
  } else if (const double *f = std::get_if<double>(&c.value)) {
    a.kind = KILN_ARG_FLOAT;
    a.value.f = *f;
  } else {
    a.kind = KILN_ARG_BOOL;
    a.value.b = std::get<bool>(c.value) ? 1 : 0;
  }
  return a;
}

kiln_status kiln_kernel_const(const kiln_kernel *kernel, size_t index, const char **name, kiln_arg *value) {
  return guarded([&] {
    if (!kernel || index >= kernel->bundle.consts.size())
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_const: null kernel or index out of range");
    const ConstValue &c = kernel->bundle.consts[index];
    if (name)
      *name = c.name.c_str();
    if (value)
      *value = constArg(c);
    return KILN_SUCCESS;
  });
}

kiln_status kiln_kernel_const_int(const kiln_kernel *kernel, const char *name, int64_t *value) {
  return guarded([&] {
    if (!kernel || !name || !value)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_kernel_const_int: null kernel, name or `value`");
    const kiln::rt::Bundle &b = kernel->bundle;
    for (const ConstValue &c : b.consts) {
      if (c.name != name)
        continue;
      if (const int64_t *i = std::get_if<int64_t>(&c.value)) {
        *value = *i;
        return KILN_SUCCESS;
      }
      return fail(KILN_ERROR_INVALID_VALUE, "kernel '" + b.kernelName + "': const " + c.name + " is a " +
                                                (std::holds_alternative<double>(c.value) ? "float" : "bool") +
                                                ", not an integer");
    }
    // Listing what there is turns a typo into an obvious fix.
    std::string known;
    for (const ConstValue &c : b.consts)
      known += (known.empty() ? "" : ", ") + c.name;
    return fail(KILN_ERROR_INVALID_VALUE, "kernel '" + b.kernelName + "' has no const '" + name + "' (" +
                                              (known.empty() ? "it has no const parameters" : "its consts: " + known) +
                                              ")");
  });
}

namespace {

/// kiln_launch's work, with the runtime's lock held.
kiln_status launchLocked(RuntimeState &rt, kiln_kernel *kernel, kiln_grid grid, const kiln_arg *args,
                         size_t num_args) {
  const kiln::rt::Bundle &b = kernel->bundle;
  BufferResolver resolve = [&](const kiln_buffer *buf, std::string &why) -> std::optional<BufferRef> {
    // Only handles known to be live in this runtime are dereferenced.
    if (!buf) {
      why = "the buffer is null";
      return std::nullopt;
    }
    if (!rt.buffers.count(buf)) {
      why = "the buffer was freed or belongs to another runtime";
      return std::nullopt;
    }
    return BufferRef{buf->address, buf->size, fromCDType(buf->dtype)};
  };
  MaskResolver resolveMask = [&](const kiln_block_mask *mask, std::string &why) -> std::optional<MaskRef> {
    if (!mask) {
      why = "the block mask is null";
      return std::nullopt;
    }
    if (!rt.masks.count(mask)) {
      why = "the block mask was destroyed or belongs to another runtime";
      return std::nullopt;
    }
    return MaskRef{mask->rows,     mask->cols,   mask->blockRows, mask->blockCols,
                   mask->rowStart, mask->blocks, mask->bitmaps};
  };
  PackedArgs &packed = kernel->packed; // its vectors keep their capacity between launches
  if (std::optional<ArgsError> error = packLaunchArgs(b.kernelName, b.params, b.blockMasks,
                                                      std::span<const kiln_arg>(args, num_args), resolve,
                                                      resolveMask, packed))
    return fail(error->status, error->message);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return KILN_SUCCESS; // an empty grid runs no program, like an empty loop
  kiln_grid max = rt.backend->maxGrid();
  if (grid.x > max.x || grid.y > max.y || grid.z > max.z)
    return fail(KILN_ERROR_INVALID_VALUE, "kernel '" + b.kernelName + "': grid (" + std::to_string(grid.x) + ", " +
                                              std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                                              ") exceeds the device's limit (" + std::to_string(max.x) + ", " +
                                              std::to_string(max.y) + ", " + std::to_string(max.z) + ")");
  // A kernel split over programs gets its segments and its workspace (SplitLaunch.h).
  SplitGrid split{grid, 0};
  if (b.gridSplit > 1) {
    if (std::string bad = planSplitLaunch(b, grid, max, split); !bad.empty())
      return fail(KILN_ERROR_INVALID_VALUE, bad);
    if (!b.clusterSplit) {
      if (Status s = kernel->workspace.reserve(*rt.backend, split.workspaceBytes); !s.ok())
        return failAfterLaunch(rt, s);
      packed.slots.push_back(kernel->workspace.address());
      packed.sizes.push_back(8);
    }
  }
  if (b.checked) {
    appendCheckArguments(rt, *kernel, packed);
    (rt.recording ? rt.recordedChecked : rt.checkedLaunched).insert(kernel);
  }
  Status s = kernel->device->launch(split.grid, packed);
  if (!s.ok())
    return failAfterLaunch(rt, s);
  // Copied into a string that keeps its capacity: no allocation on every launch.
  if (kernel->context.empty())
    kernel->context = kernelContext(b);
  rt.lastLaunch = kernel->context;
  return KILN_SUCCESS;
}

} // namespace

kiln_status kiln_launch(kiln_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args) {
  return guarded([&] {
    if (!kernel || (!args && num_args))
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_launch: null kernel or argument array");
    RuntimeState &rt = *kernel->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    return launchLocked(rt, kernel, grid, args, num_args);
  });
}

kiln_status kiln_launch_on_stream(kiln_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                  void *stream) {
  return guarded([&] {
    if (!kernel || (!args && num_args))
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_launch_on_stream: null kernel or argument array");
    RuntimeState &rt = *kernel->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (rt.recording)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_launch_on_stream: a recording is being made");
    // The runtime's stream for this one launch, as one step under the lock.
    void *previous = rt.backend->currentStream();
    if (Status s = rt.backend->setStream(stream); !s.ok())
      return fail(s.code(), "kiln_launch_on_stream: " + s.message());
    const kiln_status launched = launchLocked(rt, kernel, grid, args, num_args);
    const std::string message = launched == KILN_SUCCESS ? "" : kiln_last_error();
    (void)rt.backend->setStream(previous);
    return launched == KILN_SUCCESS ? KILN_SUCCESS : fail(launched, message);
  });
}

// ---- block masks -----------------------------------------------------------------------

// Frees a mask's buffers and the mask, which is no longer registered in its runtime.
static void freeMask(kiln_block_mask *mask) {
  kiln_buffer_free(mask->rowStart);
  kiln_buffer_free(mask->blocks);
  kiln_buffer_free(mask->bitmaps);
  delete mask;
}

// Uploads `layout` (nullopt: the builder refused its input, saying why in `error`) as a
// mask of `runtime`. `fn` names the entry point in messages.
static kiln_status uploadMask(const char *fn, kiln_runtime *runtime, const std::optional<kiln::BlockMaskLayout> &layout,
                              const std::string &error, kiln_block_mask **out) {
  if (!layout)
    return fail(KILN_ERROR_INVALID_VALUE, std::string(fn) + ": " + error);
  auto mask = std::make_unique<kiln_block_mask>();
  mask->state = runtime->state;
  mask->rows = layout->rows;
  mask->cols = layout->cols;
  mask->blockRows = layout->blockRows;
  mask->blockCols = layout->blockCols;
  mask->digest = kiln::blockMaskDigest(*layout);
  kiln::BlockMaskStats stats = kiln::blockMaskStats(*layout);
  mask->full = stats.full;
  mask->partial = stats.partial;
  mask->empty = stats.empty;
  // Every array holds at least one word (BlockMask.h), so no buffer is empty.
  struct Array {
    kiln_buffer **buffer;
    kiln_dtype dtype;
    const void *words;
    size_t count;
  };
  const Array arrays[] = {{&mask->rowStart, KILN_DTYPE_I32, layout->rowStart.data(), layout->rowStart.size()},
                          {&mask->blocks, KILN_DTYPE_I32, layout->blocks.data(), layout->blocks.size()},
                          {&mask->bitmaps, KILN_DTYPE_U32, layout->bitmaps.data(), layout->bitmaps.size()}};
  for (const Array &a : arrays) {
    const size_t bytes = a.count * sizeof(uint32_t);
    kiln_status s = kiln_buffer_alloc(runtime, bytes, a.dtype, a.buffer);
    if (s == KILN_SUCCESS)
      s = kiln_buffer_write(*a.buffer, 0, a.words, bytes);
    if (s != KILN_SUCCESS) {
      freeMask(mask.release()); // kiln_last_error() still holds the failing call's message
      return s;
    }
  }
  RuntimeState &rt = *runtime->state;
  std::lock_guard<std::mutex> lock(rt.mutex);
  rt.masks.insert(mask.get());
  *out = mask.release();
  return KILN_SUCCESS;
}

// Whether rows x cols lies in the range the builders accept (checked before the product
// is formed from caller-given extents).
static bool gridInRange(int64_t rows, int64_t cols) {
  constexpr int64_t kMaxExtent = int64_t(1) << 30;
  return rows >= 1 && rows <= kMaxExtent && cols >= 1 && cols <= kMaxExtent;
}

kiln_status kiln_block_mask_from_dense(kiln_runtime *runtime, const uint8_t *kept, int64_t rows, int64_t cols,
                                       int64_t block_rows, int64_t block_cols, kiln_block_mask **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_block_mask_from_dense: null runtime or `out`");
    *out = nullptr;
    // Out-of-range extents get an empty view: the builder refuses them before reading.
    const bool inRange = gridInRange(rows, cols);
    if (inRange && !kept)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_block_mask_from_dense: null `kept` array");
    std::span<const uint8_t> view(kept, inRange ? size_t(rows * cols) : 0);
    std::string error;
    std::optional<kiln::BlockMaskLayout> layout =
        kiln::blockMaskFromDense(view, rows, cols, block_rows, block_cols, error);
    return uploadMask("kiln_block_mask_from_dense", runtime, layout, error, out);
  });
}

kiln_status kiln_block_mask_from_bsr(kiln_runtime *runtime, const int64_t *row_ptr, size_t row_ptr_len,
                                     const int64_t *col_indices, size_t num_blocks, const uint8_t *block_data,
                                     int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols,
                                     kiln_block_mask **out) {
  return guarded([&] {
    const char *fn = "kiln_block_mask_from_bsr";
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, std::string(fn) + ": null runtime or `out`");
    *out = nullptr;
    if ((!row_ptr && row_ptr_len) || (!col_indices && num_blocks))
      return fail(KILN_ERROR_INVALID_VALUE, std::string(fn) + ": null `row_ptr` or `col_indices` array");
    std::optional<std::span<const uint8_t>> data;
    if (block_data) {
      // Block sizes the builder refuses get an empty view: it refuses them before reading.
      size_t count = 0;
      if (kiln::isValidMaskBlockSize(block_rows) && kiln::isValidMaskBlockSize(block_cols)) {
        const size_t perBlock = size_t(block_rows * block_cols);
        if (num_blocks > SIZE_MAX / perBlock)
          return fail(KILN_ERROR_INVALID_VALUE, std::string(fn) + ": " + std::to_string(num_blocks) +
                                                    " blocks of block_data exceed the address space");
        count = num_blocks * perBlock;
      }
      data = std::span<const uint8_t>(block_data, count);
    }
    std::string error;
    std::optional<kiln::BlockMaskLayout> layout =
        kiln::blockMaskFromBsr(std::span<const int64_t>(row_ptr, row_ptr_len),
                               std::span<const int64_t>(col_indices, num_blocks), data, rows, cols, block_rows,
                               block_cols, error);
    return uploadMask(fn, runtime, layout, error, out);
  });
}

kiln_status kiln_block_mask_from_buffers(kiln_runtime *runtime, int64_t rows, int64_t cols, int64_t block_rows,
                                         int64_t block_cols, const kiln_buffer *row_start, const kiln_buffer *blocks,
                                         const kiln_buffer *bitmaps, kiln_block_mask **out) {
  return guarded([&] {
    const std::string fn = "kiln_block_mask_from_buffers";
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": null runtime or `out`");
    *out = nullptr;
    for (auto [buffer, name] : {std::pair{row_start, "row_start"}, std::pair{blocks, "blocks"},
                                std::pair{bitmaps, "bitmaps"}})
      if (kiln_buffer_query(runtime, buffer, nullptr, nullptr, nullptr) != KILN_SUCCESS)
        return fail(KILN_ERROR_INVALID_VALUE, fn + ": `" + name + "`: " + kiln_last_error());
    std::string error;
    if (!gridInRange(rows, cols) || !kiln::isValidMaskBlockSize(block_rows) ||
        !kiln::isValidMaskBlockSize(block_cols))
      return fail(KILN_ERROR_INVALID_VALUE,
                  fn + ": a " + std::to_string(rows) + " x " + std::to_string(cols) + " grid of " +
                      std::to_string(block_rows) + " x " + std::to_string(block_cols) +
                      " blocks; the extents must be from 1 to 2^30 and the block sizes powers of two from 1 to 256");
    // The block level comes back to be checked (a kernel trusts it to index memory)
    // and counted; the bitmaps stay on the device, only their size matters here.
    kiln::BlockMaskLayout index;
    index.rows = static_cast<int32_t>(rows);
    index.cols = static_cast<int32_t>(cols);
    index.blockRows = static_cast<int32_t>(block_rows);
    index.blockCols = static_cast<int32_t>(block_cols);
    auto readWords = [&](const kiln_buffer *buffer, size_t words, std::vector<int32_t> &to, const char *name) {
      if (buffer->size < words * sizeof(int32_t)) {
        error = std::string("`") + name + "` holds " + std::to_string(buffer->size) + " bytes; it needs " +
                std::to_string(words * sizeof(int32_t));
        return false;
      }
      to.resize(words);
      return kiln_buffer_read(buffer, 0, to.data(), words * sizeof(int32_t)) == KILN_SUCCESS ||
             (error = kiln_last_error(), false);
    };
    if (!readWords(row_start, size_t(index.numBlockRows()) + 1, index.rowStart, "row_start"))
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": " + error);
    const int32_t entries = index.rowStart.back();
    if (entries < 0 || int64_t(entries) > int64_t(index.numBlockRows()) * index.numBlockCols())
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": row_start ends at " + std::to_string(entries) +
                                                ", which is not a number of blocks of the grid");
    if (!readWords(blocks, 2 * size_t(std::max(entries, 1)), index.blocks, "blocks") ||
        !kiln::checkBlockMaskIndex(index, int64_t(bitmaps->size / sizeof(uint32_t)), error))
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": " + error);
    auto mask = std::make_unique<kiln_block_mask>();
    mask->state = runtime->state;
    mask->rows = index.rows;
    mask->cols = index.cols;
    mask->blockRows = index.blockRows;
    mask->blockCols = index.blockCols;
    for (int32_t e = 0; e < entries; ++e)
      ++(index.blocks[2 * e + 1] < 0 ? mask->full : mask->partial);
    // The bitmaps the entries name come back too: the blocks at the grid's edge must keep
    // nothing past it, and the digest (what tuning results are keyed by) covers them, as
    // far as the slots reach, so the same pattern has the same digest whatever built it.
    index.blocks.resize(2 * size_t(std::max(entries, 1)));
    int64_t slots = 0;
    for (int32_t e = 0; e < entries; ++e)
      slots = std::max<int64_t>(slots, int64_t(index.blocks[2 * e + 1]) + 1);
    index.bitmaps.assign(size_t(slots * index.wordsPerBlock()), 0);
    if (slots > 0 &&
        kiln_buffer_read(bitmaps, 0, index.bitmaps.data(), index.bitmaps.size() * sizeof(uint32_t)) != KILN_SUCCESS)
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": " + kiln_last_error());
    if (!kiln::checkBlockMaskBitmaps(index, error))
      return fail(KILN_ERROR_INVALID_VALUE, fn + ": " + error);
    if (slots == 0)
      index.bitmaps = {0}; // the builders' padding word
    mask->digest = kiln::blockMaskDigest(index);
    mask->empty = int64_t(index.numBlockRows()) * index.numBlockCols() - entries;
    // The mask owns copies, so the caller's buffers stay the caller's.
    const std::tuple<kiln_buffer **, kiln_dtype, const kiln_buffer *> parts[] = {
        {&mask->rowStart, KILN_DTYPE_I32, row_start},
        {&mask->blocks, KILN_DTYPE_I32, blocks},
        {&mask->bitmaps, KILN_DTYPE_U32, bitmaps}};
    for (auto [to, dtype, from] : parts) {
      const size_t bytes = std::max<size_t>(from->size, sizeof(uint32_t));
      kiln_status st = kiln_buffer_alloc(runtime, bytes, dtype, to);
      if (st == KILN_SUCCESS && from->size)
        st = kiln_buffer_copy(*to, 0, from, 0, from->size);
      if (st != KILN_SUCCESS) {
        freeMask(mask.release());
        return st;
      }
    }
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.masks.insert(mask.get());
    *out = mask.release();
    return KILN_SUCCESS;
  });
}

kiln_status kiln_block_mask_query(const kiln_runtime *runtime, const kiln_block_mask *mask, int64_t *rows,
                                  int64_t *cols, int64_t *block_rows, int64_t *block_cols,
                                  const kiln_buffer **row_start, const kiln_buffer **blocks,
                                  const kiln_buffer **bitmaps) {
  return guarded([&] {
    if (!runtime)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_block_mask_query: null runtime");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    // Only a handle known to be live in this runtime is dereferenced.
    if (!mask || !rt.masks.count(mask))
      return fail(KILN_ERROR_INVALID_VALUE, mask ? "the block mask was destroyed or belongs to another runtime"
                                                 : "the block mask is null");
    for (auto [out, value] : {std::pair{rows, mask->rows}, std::pair{cols, mask->cols},
                              std::pair{block_rows, mask->blockRows}, std::pair{block_cols, mask->blockCols}})
      if (out)
        *out = value;
    for (auto [out, value] : {std::pair{row_start, mask->rowStart}, std::pair{blocks, mask->blocks},
                              std::pair{bitmaps, mask->bitmaps}})
      if (out)
        *out = value;
    return KILN_SUCCESS;
  });
}

void kiln_block_mask_destroy(kiln_block_mask *mask) {
  if (!mask)
    return;
  {
    RuntimeState &rt = *mask->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.masks.erase(mask);
  }
  freeMask(mask);
}

kiln_status kiln_block_mask_shape(const kiln_block_mask *mask, int64_t *rows, int64_t *cols, int64_t *block_rows,
                                  int64_t *block_cols) {
  return guarded([&] {
    if (!mask)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_block_mask_shape: null mask");
    for (auto [out, value] : {std::pair{rows, mask->rows}, std::pair{cols, mask->cols},
                              std::pair{block_rows, mask->blockRows}, std::pair{block_cols, mask->blockCols}})
      if (out)
        *out = value;
    return KILN_SUCCESS;
  });
}

const char *kiln_block_mask_digest(const kiln_block_mask *mask) { return mask ? mask->digest.c_str() : ""; }

kiln_status kiln_block_mask_counts(const kiln_block_mask *mask, int64_t *full, int64_t *partial, int64_t *empty) {
  return guarded([&] {
    if (!mask)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_block_mask_counts: null mask");
    for (auto [out, value] :
         {std::pair{full, mask->full}, std::pair{partial, mask->partial}, std::pair{empty, mask->empty}})
      if (out)
        *out = value;
    return KILN_SUCCESS;
  });
}

// ---- events ----------------------------------------------------------------------------

kiln_status kiln_event_create(kiln_runtime *runtime, kiln_event **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_create: null runtime or `out`");
    *out = nullptr;
    RuntimeState &rt = *runtime->state;
    auto event = std::make_unique<kiln_event>();
    event->state = runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (Status s = rt.backend->createEvent(event->device); !s.ok())
      return fail(s);
    *out = event.release();
    return KILN_SUCCESS;
  });
}

kiln_status kiln_runtime_set_stream(kiln_runtime *runtime, void *stream) {
  return guarded([&] {
    if (!runtime)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_set_stream: null runtime");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (rt.recording)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_set_stream: a recording is being made");
    Status s = rt.backend->setStream(stream);
    return s.ok() ? KILN_SUCCESS : fail(s.code(), "kiln_runtime_set_stream: " + s.message());
  });
}

kiln_status kiln_runtime_begin_recording(kiln_runtime *runtime) {
  return guarded([&] {
    if (!runtime)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_begin_recording: null runtime");
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (Status s = rt.backend->beginRecording(); !s.ok())
      return fail(s);
    rt.recording = true;
    rt.recordedChecked.clear();
    return KILN_SUCCESS;
  });
}

kiln_status kiln_runtime_end_recording(kiln_runtime *runtime, kiln_recording **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_runtime_end_recording: null runtime or `out`");
    *out = nullptr;
    auto recording = std::make_unique<kiln_recording>();
    recording->state = runtime->state;
    RuntimeState &rt = *runtime->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.recording = false;
    recording->checked = std::move(rt.recordedChecked);
    rt.recordedChecked.clear();
    if (Status s = rt.backend->endRecording(recording->device); !s.ok())
      return fail(s);
    rt.recordings.insert(recording.get());
    *out = recording.release();
    return KILN_SUCCESS;
  });
}

kiln_status kiln_recording_replay(kiln_recording *recording) {
  return guarded([&] {
    if (!recording)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_recording_replay: null recording");
    RuntimeState &rt = *recording->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (Status s = recording->device->replay(); !s.ok())
      return failAfterLaunch(rt, s);
    rt.checkedLaunched.insert(recording->checked.begin(), recording->checked.end());
    return KILN_SUCCESS;
  });
}

void kiln_recording_destroy(kiln_recording *recording) {
  if (!recording)
    return;
  std::shared_ptr<RuntimeState> state = recording->state;
  std::lock_guard<std::mutex> lock(state->mutex);
  state->recordings.erase(recording);
  delete recording;
}

void kiln_event_destroy(kiln_event *event) {
  if (!event)
    return;
  std::shared_ptr<RuntimeState> state = event->state;
  std::lock_guard<std::mutex> lock(state->mutex);
  delete event;
}

kiln_status kiln_event_record(kiln_event *event) {
  return guarded([&] {
    if (!event)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_record: null event");
    RuntimeState &rt = *event->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (Status s = event->device->record(); !s.ok())
      return failAfterLaunch(rt, s);
    event->recorded = true;
    return KILN_SUCCESS;
  });
}

kiln_status kiln_event_synchronize(kiln_event *event) {
  return guarded([&] {
    if (!event || !event->recorded)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_synchronize: null or never recorded event");
    RuntimeState &rt = *event->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = event->device->synchronize();
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

kiln_status kiln_event_elapsed_ms(const kiln_event *start, const kiln_event *end, float *ms) {
  return guarded([&] {
    if (!start || !end || !ms)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_elapsed_ms: null event or `ms`");
    if (start->state != end->state)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_elapsed_ms: the events belong to different runtimes");
    if (!start->recorded || !end->recorded)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_event_elapsed_ms: both events must be recorded first");
    RuntimeState &rt = *start->state;
    std::lock_guard<std::mutex> lock(rt.mutex);
    Status s = start->device->elapsedMsUntil(*end->device, *ms);
    return s.ok() ? KILN_SUCCESS : failAfterLaunch(rt, s);
  });
}

} // extern "C"
