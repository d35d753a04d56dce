//===- GpuRun.cpp - Runs prepared cases on a GPU through the Kiln runtime -===//
//
// kiln-gpu-run CASES...
// kiln-gpu-run --check-driver     only whether a CUDA device is there (exit 0 or 77)
//
// Each argument is a case folder written by kiln-gpu-prepare (GpuCase.h), or a folder
// of them. For every case and every bundle in it (one per target): loads the bundle
// through the Kiln runtime, uploads the case's inputs, launches, downloads every buffer
// and compares it with what the reference interpreter left in it (CaseCheck.h). Prints
// one PASS, FAIL or SKIP line per case and target, then a summary.
//
// Exit status: 0 when everything ran and passed, 1 when anything failed, 77 (what CTest
// counts as skipped) when there is no CUDA driver or device, 2 on a usage error. The
// runtime dlopens the driver, so this program starts anywhere; it is linked with a
// static libstdc++ so that a build from one machine runs on a GPU machine with only
// the driver installed.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/codegen/gpu/CaseCheck.h"
#include "tests/unit/codegen/gpu/GpuCase.h"

#include "runtime/Runtime.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

constexpr int kExitSkipped = 77;

enum class Outcome { Pass, Fail, Skip };

std::string readText(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The launch argument for scalar `a`, from its exact case.txt value; nullopt when the
/// value is not wholly a number of its kind.
std::optional<kiln_arg> scalarArg(const gputest::CaseArg &a) {
  const char *first = a.value.data(), *last = a.value.data() + a.value.size();
  kiln_arg k{};
  std::from_chars_result r{};
  if (a.dtype == DType::Bool) {
    if (a.value != "0" && a.value != "1")
      return std::nullopt;
    k.kind = KILN_ARG_BOOL;
    k.value.b = a.value == "1";
    return k;
  }
  if (isFloat(a.dtype)) {
    k.kind = KILN_ARG_FLOAT;
    r = std::from_chars(first, last, k.value.f);
  } else if (a.value.starts_with('-')) {
    k.kind = KILN_ARG_INT;
    r = std::from_chars(first, last, k.value.i);
  } else {
    k.kind = KILN_ARG_UINT;
    r = std::from_chars(first, last, k.value.u);
  }
  if (r.ec != std::errc() || r.ptr != last || first == last)
    return std::nullopt;
  return k;
}

/// Runs bundle `bundle` of case `c` in `dir`; `detail` says why when it does not pass.
Outcome runBundle(Runtime &rt, const fs::path &dir, const gputest::GpuCase &c,
                  const std::string &bundle, std::string &detail) {
  Kernel kernel;
  try {
    kernel = rt.load_bundle((dir / bundle).string());
  } catch (const RuntimeError &e) {
    detail = e.what();
    // sm_90a code runs on Hopper only: elsewhere that bundle is not this device's.
    return e.status() == KILN_ERROR_NO_COMPATIBLE_CODE ? Outcome::Skip : Outcome::Fail;
  }
  try {
    std::vector<Buffer> buffers(c.args.size());
    std::vector<kiln_arg> args;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const gputest::CaseArg &a = c.args[i];
      if (!a.isBuffer) {
        std::optional<kiln_arg> k = scalarArg(a);
        if (!k) {
          detail = "case.txt gives scalar '" + a.name + "' the value '" + a.value + "', which is no " +
                   std::string(dtypeName(a.dtype));
          return Outcome::Fail;
        }
        args.push_back(*k);
        continue;
      }
      auto input = a.zeroInput ? std::optional(std::vector<std::byte>(a.count * dtypeBytes(a.dtype)))
                               : gputest::readCaseArray(dir / gputest::inputFile(a.name), a, detail);
      if (!input)
        return Outcome::Fail;
      // Allocated untyped: the runtime's typed buffers cover only the dtypes C++ has.
      buffers[i] = rt.alloc(std::max<size_t>(input->size(), 1));
      if (!input->empty())
        buffers[i].write(input->data(), input->size());
      kiln_arg k{};
      k.kind = KILN_ARG_BUFFER;
      k.value.buffer.buffer = buffers[i].handle();
      args.push_back(k);
    }
    kernel.launch_args(Grid(c.grid[0], c.grid[1], c.grid[2]), args);
    rt.synchronize();
    for (size_t i = 0; i < c.args.size(); ++i) {
      const gputest::CaseArg &a = c.args[i];
      if (!a.isBuffer)
        continue;
      std::vector<std::byte> got(static_cast<size_t>(a.count) * dtypeBytes(a.dtype));
      if (!got.empty())
        buffers[i].read(got.data(), got.size());
      detail += gputest::checkBuffer(dir, a, got);
    }
  } catch (const RuntimeError &e) {
    detail = e.what();
    return Outcome::Fail;
  }
  return detail.empty() ? Outcome::Pass : Outcome::Fail;
}

/// The case folders named by the arguments: each one itself, or its subfolders that
/// hold a case.txt, in name order.
std::vector<fs::path> caseFolders(int argc, char **argv) {
  std::vector<fs::path> out;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::exists(p / "case.txt")) {
      out.push_back(p);
      continue;
    }
    std::vector<fs::path> inside;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(p, ec))
      if (fs::exists(e.path() / "case.txt"))
        inside.push_back(e.path());
    if (inside.empty()) {
      std::cerr << "kiln-gpu-run: " << p.string() << " is no case folder and holds none\n";
      std::exit(2);
    }
    std::sort(inside.begin(), inside.end());
    out.insert(out.end(), inside.begin(), inside.end());
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cerr << "usage: kiln-gpu-run CASES...\n"
                 "       kiln-gpu-run --check-driver\n"
                 "Runs the cases written by kiln-gpu-prepare (a case folder, or a folder of "
                 "them) on the\nfirst CUDA GPU and compares every buffer with the reference "
                 "interpreter's.\nExit status: 0 all passed, 1 a case failed, 77 no CUDA "
                 "driver or device.\n";
    return argc < 2 ? 2 : 0;
  }
  std::optional<Runtime> rt;
  try {
    rt.emplace(Runtime::Options{Backend::Cuda, 0});
  } catch (const RuntimeError &e) {
    // The runtime's message says which: "no CUDA driver: cannot load libcuda.so.1 (...)".
    const bool absent = e.status() == KILN_ERROR_NO_DRIVER || e.status() == KILN_ERROR_NO_DEVICE;
    std::cout << (absent ? "kiln-gpu-run: skipped, " : "kiln-gpu-run: cannot start the CUDA runtime: ")
              << e.what() << "\n";
    return absent ? kExitSkipped : 1;
  }
  std::cout << "device: " << rt->device_name() << " (" << rt->target() << ")\n";
  if (std::string(argv[1]) == "--check-driver")
    return 0;

  // Per target: passed, failed, skipped.
  std::map<std::string, std::array<int, 3>> counts;
  for (const fs::path &dir : caseFolders(argc, argv)) {
    std::string error;
    std::optional<gputest::GpuCase> c = gputest::readCase(readText(dir / "case.txt"), error);
    const std::string name = dir.filename().string();
    if (!c) {
      std::cout << "FAIL " << name << ": " << error << "\n";
      ++counts["(unreadable)"][1];
      continue;
    }
    for (const std::string &bundle : c->bundles) {
      const std::string target = fs::path(bundle).stem().string();
      std::string detail;
      Outcome o = runBundle(*rt, dir, *c, bundle, detail);
      ++counts[target][static_cast<int>(o)];
      if (o == Outcome::Pass) {
        std::cout << "PASS " << name << " " << target << "\n";
      } else {
        std::cout << (o == Outcome::Fail ? "FAIL " : "SKIP ") << name << " " << target << ":";
        // Mismatch reports are indented lines of their own; a runtime message is one line.
        std::cout << (detail.starts_with("  ") ? "\n" + detail : " " + detail + "\n");
        if (o == Outcome::Fail)
          std::cout << "  (inputs from " << c->source << ", KILN_SEED=" << c->seed << ")\n";
      }
      std::cout.flush();
    }
  }

  int passed = 0, failed = 0, skipped = 0;
  std::cout << "\nsummary (" << rt->device_name() << "):\n";
  for (const auto &[target, n] : counts) {
    std::cout << "  " << target << ": " << n[0] << " passed, " << n[1] << " failed, " << n[2]
              << " skipped\n";
    passed += n[0];
    failed += n[1];
    skipped += n[2];
  }
  std::cout << "  total: " << passed << " passed, " << failed << " failed, " << skipped
            << " skipped\n";
  return failed ? 1 : 0;
}
