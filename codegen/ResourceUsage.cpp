//===- ResourceUsage.cpp - What a kernel takes of an SM, and how many fit -------===//
#include "codegen/ResourceUsage.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace kiln::codegen {

namespace {

/// The number just before the first `suffix` in `text` (" 70 registers" -> 70);
/// nullopt when `suffix` is not there or no number precedes it.
std::optional<int64_t> numberBefore(const std::string &text, const std::string &suffix) {
  const size_t at = text.find(suffix);
  if (at == std::string::npos)
    return std::nullopt;
  size_t begin = at;
  while (begin > 0 && text[begin - 1] >= '0' && text[begin - 1] <= '9')
    --begin;
  if (begin == at)
    return std::nullopt;
  return std::strtoll(text.c_str() + begin, nullptr, 10);
}

/// A temporary file removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  TempFile(const char *suffix, std::string &why) {
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("kiln-usage", suffix, path)) {
      why = "cannot make a temporary file: " + ec.message();
      path.clear();
    }
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

} // namespace

std::optional<RegisterReport> parsePtxasReport(const std::string &text, const std::string &entry) {
  const std::string start = "Compiling entry function '" + entry + "'";
  const size_t at = text.find(start);
  if (at == std::string::npos)
    return std::nullopt;
  const size_t end = text.find("Compiling entry function", at + start.size());
  const std::string part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  std::optional<int64_t> registers = numberBefore(part, " registers");
  if (!registers)
    return std::nullopt;
  RegisterReport r;
  r.registers = *registers;
  r.stackBytes = numberBefore(part, " bytes stack frame").value_or(0);
  r.spillStoreBytes = numberBefore(part, " bytes spill stores").value_or(0);
  r.spillLoadBytes = numberBefore(part, " bytes spill loads").value_or(0);
  r.staticSharedBytes = numberBefore(part, " bytes smem").value_or(0);
  return r;
}

std::optional<RegisterReport> assembleForRegisters(const std::string &ptx, const std::string &entry, Target target,
                                                   std::string &why) {
  if (!isNvptxTarget(target)) {
    why = "registers are reported for NVIDIA targets only";
    return std::nullopt;
  }
  std::string ptxas;
  if (const char *env = std::getenv("KILN_PTXAS"); env && *env) {
    ptxas = env;
  } else if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas")) {
    ptxas = *found;
  } else if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas")) {
    ptxas = "/usr/local/cuda/bin/ptxas";
  } else {
    why = "ptxas was not found (set KILN_PTXAS, or put the CUDA toolkit's bin on PATH)";
    return std::nullopt;
  }
  TempFile input(".ptx", why), report(".txt", why);
  if (input.path.empty() || report.path.empty())
    return std::nullopt;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input.path, ec);
    if (ec) {
      why = "cannot write " + std::string(input.path) + ": " + ec.message();
      return std::nullopt;
    }
    os << ptx;
  }
  const std::string arch = "-arch=" + std::string(targetName(target));
  llvm::SmallVector<llvm::StringRef, 8> args = {ptxas, arch, "-v", input.path, "-o", "/dev/null"};
  const std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(report.path),
                                                      llvm::StringRef(report.path)};
  std::string error;
  const int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, /*SecondsToWait=*/120,
                                           /*MemoryLimit=*/0, &error);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text = llvm::MemoryBuffer::getFile(report.path);
  const std::string output = text ? (*text)->getBuffer().str() : "";
  if (rc != 0) {
    why = ptxas + " failed" + (error.empty() ? "" : ": " + error) +
          (output.empty() ? "" : ": " + output.substr(0, 300));
    return std::nullopt;
  }
  std::optional<RegisterReport> r = parsePtxasReport(output, entry);
  if (!r)
    why = "ptxas printed no register count for '" + entry + "'";
  return r;
}

Occupancy occupancyOf(Target target, int64_t threads, int64_t registers, int64_t sharedBytes) {
  // Per SM: 64 Ki registers, 2048 threads (64 warps), 32 programs on both targets;
  // shared memory 164 KiB (sm_80) or 228 KiB (sm_90), 1 KiB of it reserved per program.
  constexpr int64_t kRegisters = 64 * 1024, kThreads = 2048, kPrograms = 32, kReservedShared = 1024;
  const int64_t smShared = target == Target::SM80 ? 164 * 1024 : 228 * 1024;
  const int64_t warps = std::max<int64_t>((threads + 31) / 32, 1);
  Occupancy o;
  o.maxWarpsPerSM = kThreads / 32;
  struct Limit {
    int64_t programs;
    const char *name;
  };
  // Registers go to warps in units of 256.
  const int64_t perWarp = (std::max<int64_t>(registers, 1) * 32 + 255) / 256 * 256;
  const Limit limits[] = {
      {kThreads / (warps * 32), "threads"},
      {(kRegisters / perWarp) / warps, "registers"},
      {smShared / (sharedBytes + kReservedShared), "shared memory"},
      {kPrograms, "programs"},
  };
  const Limit *least = &limits[0];
  for (const Limit &l : limits)
    if (l.programs < least->programs)
      least = &l;
  o.programsPerSM = std::max<int64_t>(least->programs, 0);
  o.warpsPerSM = o.programsPerSM * warps;
  o.limiter = least->name;
  return o;
}

ResourceUsage resourceUsage(const std::string &kernel, Target target, const CodegenResult &result) {
  ResourceUsage u;
  u.kernel = kernel;
  u.target = target;
  u.threads = result.numThreads;
  u.sharedBytes = result.sharedBytes;
  u.registers = assembleForRegisters(result.ptx, result.entry, target, u.registersUnknown);
  if (u.registers)
    u.occupancy = occupancyOf(target, u.threads, u.registers->registers,
                              u.sharedBytes + u.registers->staticSharedBytes);
  return u;
}

std::string describe(const ResourceUsage &u) {
  std::ostringstream os;
  os << u.threads << " threads, " << u.sharedBytes << " bytes of shared memory";
  if (!u.registers) {
    os << "; registers unknown: " << u.registersUnknown;
    return os.str();
  }
  const RegisterReport &r = *u.registers;
  if (r.staticSharedBytes)
    os << " (and " << r.staticSharedBytes << " static)";
  os << "; " << r.registers << " registers, ";
  if (r.spillStoreBytes || r.spillLoadBytes)
    os << r.spillStoreBytes << " bytes of spill stores and " << r.spillLoadBytes << " of spill loads";
  else
    os << "no spills";
  if (r.stackBytes)
    os << ", a " << r.stackBytes << "-byte stack frame";
  const Occupancy &o = *u.occupancy;
  os << "; occupancy: " << o.programsPerSM << (o.programsPerSM == 1 ? " program (" : " programs (") << o.warpsPerSM
     << " of " << o.maxWarpsPerSM << " warps) per SM, limited by " << o.limiter;
  return os.str();
}

/// `text` inside a JSON string literal (control characters dropped).
static std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  return out + "\"";
}

std::string toJson(const ResourceUsage &u) {
  std::ostringstream os;
  os << "{\"kernel\":" << jsonString(u.kernel) << ",\"target\":\"" << targetName(u.target) << "\",\"threads\":" << u.threads
     << ",\"shared_bytes\":" << u.sharedBytes;
  if (u.registers) {
    const RegisterReport &r = *u.registers;
    const Occupancy &o = *u.occupancy;
    os << ",\"registers\":" << r.registers << ",\"spill_store_bytes\":" << r.spillStoreBytes
       << ",\"spill_load_bytes\":" << r.spillLoadBytes << ",\"stack_bytes\":" << r.stackBytes
       << ",\"static_shared_bytes\":" << r.staticSharedBytes << ",\"programs_per_sm\":" << o.programsPerSM
       << ",\"warps_per_sm\":" << o.warpsPerSM << ",\"max_warps_per_sm\":" << o.maxWarpsPerSM << ",\"limited_by\":\""
       << o.limiter << "\"";
  } else {
    os << ",\"registers_unknown\":" << jsonString(u.registersUnknown);
  }
  os << "}";
  return os.str();
}

} // namespace kiln::codegen
