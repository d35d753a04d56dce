//===- GuardedCall.h - No C++ exception crosses the C ABI ---------*- C++ -*-===//
//
// Every entry point of kiln_runtime.h runs its body through guardedCall, which turns
// anything the body throws into a status and the thread's last error message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/kiln_runtime.h"

#include <exception>
#include <new>
#include <string>

namespace kiln::rt {

template <typename Body> kiln_status guardedCall(Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return kiln_set_last_error(KILN_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return kiln_set_last_error(KILN_ERROR_DRIVER,
                               (std::string("internal error in the Kiln runtime: ") + e.what()).c_str());
  } catch (...) {
    return kiln_set_last_error(KILN_ERROR_DRIVER, "internal error in the Kiln runtime");
  }
}

} // namespace kiln::rt
