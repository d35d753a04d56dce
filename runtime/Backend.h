//===- Backend.h - What a GPU driver backend provides ------------*- C++ -*-===//
//
// Internal interface between the C API (CApi.cpp) and the two driver backends
// (cuda/, ze/). The C API does everything that does not need a device — handle
// bookkeeping, bundle reading, argument checking — so a backend only translates
// requests into driver calls and driver failures into Status messages.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Args.h"
#include "runtime/Bundle.h"
#include "runtime/kiln_runtime.h"

#include <charconv>
#include <memory>
#include <string>

namespace kiln::rt {

/// "0x7f12a0000000", for messages.
inline std::string hexAddress(uint64_t address) {
  char digits[16];
  return "0x" + std::string(digits, std::to_chars(digits, digits + sizeof digits, address, 16).ptr);
}

/// The outcome of a runtime operation: success, or a kiln_status and a message.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(kiln_status code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status success() { return Status(); }

  bool ok() const { return code_ == KILN_SUCCESS; }
  kiln_status code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  kiln_status code_ = KILN_SUCCESS;
  std::string message_;
};

/// A kernel loaded on a device, ready to launch.
class DeviceKernel {
public:
  virtual ~DeviceKernel() = default;
  /// Launches with `grid` programs of the bundle's block size. The grid is non-empty
  /// and within the device's limits; the arguments were already checked.
  virtual Status launch(kiln_grid grid, PackedArgs &args) = 0;
  /// The driver's informational JIT/build log (may be empty).
  virtual const std::string &jitLog() const = 0;
  /// How many programs of this kernel the whole device runs at once (the occupancy per
  /// multiprocessor times their count): the grid a persistent kernel is sized to.
  virtual Status residentPrograms(uint32_t &out) {
    (void)out;
    return Status(KILN_ERROR_UNSUPPORTED, "this device cannot say how many programs of a kernel run at once");
  }
};

/// A point in a device's work queue, for timing.
class DeviceEvent {
public:
  virtual ~DeviceEvent() = default;
  virtual Status record() = 0;
  virtual Status synchronize() = 0;
  /// Device milliseconds from this (recorded) event to `end` (recorded later).
  virtual Status elapsedMsUntil(DeviceEvent &end, float &ms) = 0;
};

/// Launches recorded once and replayed as a whole (a CUDA graph).
class DeviceRecording {
public:
  virtual ~DeviceRecording() = default;
  /// Runs the recorded launches again, in order, on the device's queue.
  virtual Status replay() = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual kiln_backend kind() const = 0;
  virtual const std::string &deviceName() const = 0;
  /// The code target the device runs ("sm_90", "spirv64").
  virtual const std::string &targetName() const = 0;
  /// Largest grid per axis the device accepts.
  virtual kiln_grid maxGrid() const = 0;

  /// Picks the bundle's code section for this device and loads it.
  virtual Status loadKernel(const Bundle &bundle, std::unique_ptr<DeviceKernel> &out) = 0;

  virtual Status alloc(size_t bytes, uint64_t &address) = 0;
  virtual void release(uint64_t address) = 0;
  /// Whether [address, address + bytes) lies inside one allocation of device memory
  /// this backend's device can use (memory a caller allocated elsewhere, for
  /// kiln_buffer_wrap); KILN_ERROR_INVALID_VALUE saying why not.
  virtual Status checkForeign(uint64_t address, size_t bytes) = 0;
  /// Blocking copies and fill, ordered after all earlier launches.
  virtual Status write(uint64_t dst, const void *src, size_t bytes) = 0;
  virtual Status read(void *dst, uint64_t src, size_t bytes) = 0;
  virtual Status fill(uint64_t dst, uint8_t byte, size_t bytes) = 0;
  /// Blocking device-to-device copy, ordered after all earlier launches.
  virtual Status copy(uint64_t dst, uint64_t src, size_t bytes) = 0;
  virtual Status synchronize() = 0;
  virtual Status createEvent(std::unique_ptr<DeviceEvent> &out) = 0;
  /// The caller's stream (a CUstream) that launches, events and replays go on from now
  /// on; nullptr: the backend's own.
  /// The stream setStream set, or nullptr.
  virtual void *currentStream() const { return nullptr; }
  virtual Status setStream(void *stream) {
    (void)stream;
    return Status(KILN_ERROR_UNSUPPORTED, "this backend launches on its own queue only; a stream is CUDA's");
  }
  /// From beginRecording to endRecording, launches are recorded instead of run.
  virtual Status beginRecording() {
    return Status(KILN_ERROR_UNSUPPORTED, "this device cannot record launches");
  }
  virtual Status endRecording(std::unique_ptr<DeviceRecording> &out) {
    (void)out;
    return Status(KILN_ERROR_UNSUPPORTED, "this device cannot record launches");
  }
};

/// Creates a backend on device `deviceIndex`. Failures: KILN_ERROR_NO_DRIVER when the
/// driver library is missing or has no driver, KILN_ERROR_NO_DEVICE when it has no
/// such device, with a message that says which.
Status createCudaBackend(int deviceIndex, std::unique_ptr<Backend> &out);
Status createZeBackend(int deviceIndex, std::unique_ptr<Backend> &out);

/// "sm_90" for compute capability 9.0.
std::string cudaArchName(int major, int minor);

/// The PTX section a device of compute capability major.minor should load: the most
/// specific target it can run (sm_90a only on 9.0 exactly; sm_80 and sm_90 PTX JIT
/// forward to newer devices). nullptr, with `why` set, when there is none.
const CodeSection *pickCudaSection(const Bundle &bundle, int major, int minor, std::string &why);

/// The SPIR-V section, or nullptr with `why` set.
const CodeSection *pickSpirvSection(const Bundle &bundle, std::string &why);

/// "kernel 'softmax' (softmax.kiln:3:1)" or "kernel 'softmax'", for messages.
std::string kernelContext(const Bundle &bundle);

} // namespace kiln::rt
