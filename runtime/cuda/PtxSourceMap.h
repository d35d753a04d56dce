//===- PtxSourceMap.h - From a PTX line back to the Kiln source --*- C++ -*-===//
//
// When the driver's JIT rejects PTX, its log names a line of the PTX text
// ("ptxas application ptx input, line 23; error : ..."), which means nothing to the
// user. The compiler emits `.file` / `.loc` directives, so the runtime can turn that
// line into the Kiln source position the instruction came from.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::rt {

struct SourcePosition {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;

  /// "softmax.kiln:14:5" (column left out when 0).
  std::string str() const;
};

/// The source position of PTX line `ptxLine` (1-based): the last `.loc` at or before it
/// within the same function, with its file from the `.file` table. nullopt when there
/// is none.
std::optional<SourcePosition> ptxLineToSource(std::string_view ptx, uint32_t ptxLine);

/// The PTX line a ptxas log line refers to ("..., line 23; error ..." -> 23).
std::optional<uint32_t> ptxLineInLog(std::string_view logLine);

/// The JIT log with "  (at <source position>)" appended to every line that names a PTX
/// line mapping back to the source.
std::string annotateJitLog(std::string_view log, std::string_view ptx);

} // namespace kiln::rt
