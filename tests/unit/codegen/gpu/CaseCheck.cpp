//===- CaseCheck.cpp - A GPU run's buffers against the interpreter's -------===//
#include "tests/unit/codegen/gpu/CaseCheck.h"

#include "support/Npy.h"
#include "tests/spirv/KernelCase.h"

namespace kiln::gputest {

std::optional<std::vector<std::byte>> readCaseArray(const std::filesystem::path &file,
                                                    const CaseArg &arg, std::string &error) {
  std::optional<NpyArray> a = readNpy(file.string(), error);
  if (!a) {
    error = file.filename().string() + ": " + error;
    return std::nullopt;
  }
  if (!npyDescrMatches(a->descr, arg.dtype)) {
    error = file.filename().string() + " holds " + npyDescrDescription(a->descr) + ", not " +
            std::string(dtypeName(arg.dtype));
    return std::nullopt;
  }
  if (a->data.size() != static_cast<size_t>(arg.count) * dtypeBytes(arg.dtype)) {
    error = file.filename().string() + " holds " +
            std::to_string(a->data.size() / dtypeBytes(arg.dtype)) + " elements, case.txt says " +
            std::to_string(arg.count);
    return std::nullopt;
  }
  return std::move(a->data);
}

std::string checkBuffer(const std::filesystem::path &caseDir, const CaseArg &arg,
                        const std::vector<std::byte> &got) {
  std::string error;
  // A buffer the kernel leaves as it found it has no expected file: its input is what
  // the interpreter left in it.
  // An all-zero input has no file either: then zeros are expected.
  std::filesystem::path file = caseDir / expectedFile(arg.name);
  const bool unchanged = !std::filesystem::exists(file);
  if (unchanged && std::filesystem::exists(caseDir / inputFile(arg.name)))
    file = caseDir / inputFile(arg.name);
  std::optional<std::vector<std::byte>> want =
      unchanged && arg.zeroInput ? std::optional(std::vector<std::byte>(arg.count * dtypeBytes(arg.dtype)))
                                 : readCaseArray(file, arg, error);
  if (!want)
    return "  " + error + "\n";
  interp::Buffer expected;
  expected.name = arg.name;
  expected.dtype = arg.dtype;
  expected.data = std::move(*want);
  return spirvtest::compareBuffers(expected, got, arg.rtol, arg.atol);
}

} // namespace kiln::gputest
