//===- FuzzTarget.h - One fuzz input through the compiler ---------*- C++ -*-===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace kiln {
class DiagnosticEngine;
namespace ir {
struct Module;
}
} // namespace kiln

namespace kiln::fuzz {

/// What runs after the Tile IR pipeline on a module it optimized for `target` ("sm_80"
/// for the default run, "sm_90a" for the split one): the code generator, in
/// kiln-fuzz-codegen. User errors go to `diags`; a compiler bug throws.
using Backend = std::function<void(const ir::Module &module, std::string_view target, DiagnosticEngine &diags)>;

/// Compiles `data` as a Kiln file through every frontend stage (parse, sema, lowering,
/// verification, the pass pipeline twice, printing and re-parsing the Tile IR), then
/// `backend` when given. Any internal compiler error or round-trip mismatch aborts the
/// process with the input printed; user errors are the expected outcome for most inputs.
void compileOneInput(const uint8_t *data, size_t size, const Backend &backend = {});

} // namespace kiln::fuzz
