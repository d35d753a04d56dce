//===- JitLibrary.cpp - libkiln.so: the JIT and the runtime as one library ---===//
//
// The shared library's own translation unit: what it exports comes from the JIT's and
// the runtime's C APIs (jit/CApi.cpp, runtime/CApi.cpp), linked in whole
// (jit/CMakeLists.txt). Including the header checks that it compiles as the library's
// public interface, C++ aside.
//
//===----------------------------------------------------------------------===//
#include "jit/kiln_jit.h"
