//===- LibFuzzerMain.cpp - The frontend as a libFuzzer target -------------===//
//
// Built only with clang (-fsanitize=fuzzer); CI uses MutationFuzzer.cpp with g++.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::fuzz::compileOneInput(data, size);
  return 0;
}
