//===- CheckReport.cpp - A checked kernel's record as the error people read ---===//
#include "runtime/CheckReport.h"

#include "support/CheckRecord.h"

namespace kiln::rt {

std::string describeCheckRecord(const uint32_t *record, const Bundle &kernel, const std::string &inProgram) {
  using namespace kiln::check;
  const uint32_t param = record[kParamWord];
  const int64_t offset =
      static_cast<int64_t>(uint64_t(record[kOffsetWord]) | (uint64_t(record[kOffsetWord + 1]) << 32));
  const std::string file = kernel.sourceFile.empty() ? "line " : kernel.sourceFile + ":";
  return "kernel '" + kernel.kernelName + "': " + kindName(record[kKindWord]) + " out of bounds at " + file +
         std::to_string(record[kLineWord]) + ":" + std::to_string(record[kColumnWord]) + " in program (" +
         std::to_string(record[kPidWord]) + ", " + std::to_string(record[kPidWord + 1]) + ", " +
         std::to_string(record[kPidWord + 2]) + ")" + inProgram + ": element " + std::to_string(offset) +
         " of parameter '" + (param < kernel.params.size() ? kernel.params[param].name : "?") +
         "', outside the buffer passed for it (checked mode stopped the access)";
}

} // namespace kiln::rt
