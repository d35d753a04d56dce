//===- CApiLibrary.cpp - libkiln_runtime.so ---------------------------------===//
//
// The shared library's own translation unit: everything it exports comes from CApi.cpp,
// linked in whole from kiln_runtime (runtime/CMakeLists.txt). Including the header here
// checks that it compiles as the library's public interface.
//
//===----------------------------------------------------------------------===//
#include "runtime/kiln_runtime.h"
