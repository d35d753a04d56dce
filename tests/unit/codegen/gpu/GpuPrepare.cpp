//===- GpuPrepare.cpp - Prepares the CUDA check of the test kernels -------===//
//
// kiln-gpu-prepare OUTDIR [DIR...]
//
// For every kernel of every .tir file in the DIRs (default tests/spirv/kernels), every
// Kiln program named by a .spec file there (when built with the frontend), and for
// sm_80 and sm_90a: compiles it to PTX, makes random inputs as the file's `// @` lines
// describe, runs the reference interpreter, and writes one case folder (see GpuCase.h)
// for kiln-gpu-run. $KILN_SEED fixes the inputs.
//
// kiln-gpu-prepare --bench OUTDIR DIR...: the same without inputs and interpreter runs
// (for sizes too large to ship); the case folder keeps the `// @` lines as spec.txt and
// kiln-gpu-run makes the inputs there and only times the kernel.
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/KernelCase.h"
#include "tests/unit/codegen/gpu/GpuCase.h"

#include "codegen/Codegen.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

static void writeBytes(const fs::path &p, const void *data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: kiln-gpu-prepare OUTDIR [DIR...]\n";
    return 2;
  }
  int first = 1;
  const bool benchOnly = std::string(argv[1]) == "--bench";
  if (benchOnly)
    ++first;
  if (first >= argc) {
    std::cerr << "usage: kiln-gpu-prepare [--bench] OUTDIR [DIR...]\n";
    return 2;
  }
  const fs::path out = argv[first];
  std::vector<fs::path> dirs;
  for (int i = first + 1; i < argc; ++i)
    dirs.push_back(argv[i]);
  if (dirs.empty())
    dirs.push_back(fs::path(KILN_SOURCE_DIR) / "tests/spirv/kernels");
  std::vector<fs::path> files;
  for (const fs::path &dir : dirs)
    for (const auto &e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tir" || e.path().extension() == ".spec")
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const uint64_t seed = spirvtest::testSeed();
  std::cout << "KILN_SEED=" << seed << "\n";
  int failures = 0, cases = 0;
  for (const fs::path &file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    auto sources = std::make_shared<SourceManager>();
    uint32_t id = sources->addBuffer(file.string(), text.str());
    DiagnosticEngine diags(*sources, std::cerr);
    std::string error;
    auto spec = spirvtest::parseCaseSpec(text.str(), error);
    std::unique_ptr<ir::Module> module;
    if (file.extension() == ".tir") {
      module = ir::parseTir(sources, id, diags);
    } else if (spec) {
#ifdef KILN_HAVE_SEMA
      SemaOptions opts;
      opts.kernel = spec->kernel;
      opts.defines = spec->defines;
      module = compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/" + spec->source, diags, opts,
                                   sources);
#else
      std::cout << file.string() << ": skipped (built without the frontend)\n";
      continue;
#endif
    }
    if (!module || !ir::verifyModule(*module, diags) || !spec) {
      std::cerr << file << ": cannot prepare: " << error << "\n";
      ++failures;
      continue;
    }
    for (const auto &kernel : module->kernels) {
      std::vector<interp::Buffer> buffers;
      std::vector<interp::KernelArg> args;
      spirvtest::makeInputs(*spec, seed, buffers, args);
      std::vector<interp::Buffer> expected = buffers;
      interp::RunOptions opts;
      opts.grid = spec->grid;
      std::ostringstream printed;
      opts.printStream = &printed;
      if (!benchOnly && !interp::runKernel(*kernel, args, expected, opts, diags)) {
        ++failures;
        continue;
      }
      for (codegen::Target t : {codegen::Target::SM80, codegen::Target::SM90a}) {
        codegen::CodegenOptions cgOptions;
        cgOptions.paramDivisibility = spirvtest::paramDivisibility(*spec);
        auto gen = codegen::generate(*module, *kernel, t, diags, cgOptions);
        if (!gen) {
          ++failures;
          continue;
        }
        const fs::path dir = out / (file.stem().string() + "." + kernel->name + "." +
                                    std::string(codegen::targetName(t)));
        fs::create_directories(dir);
        std::ofstream(dir / "kernel.ptx") << gen->ptx;
        gputest::GpuCase c;
        c.entry = gen->entry;
        c.threads = gen->numThreads;
        c.sharedBytes = gen->sharedBytes;
        c.grid = spec->grid;
        c.rtol = spec->rtol;
        c.atol = spec->atol;
        for (size_t i = 0; i < args.size(); ++i) {
          gputest::CaseArg a;
          if (args[i].kind == interp::KernelArg::Kind::Buffer) {
            const interp::Buffer &b = buffers[args[i].buffer];
            a.isBuffer = true;
            a.dtype = b.dtype;
            a.count = b.numElements();
            if (benchOnly) {
              c.args.push_back(a);
              continue;
            }
            writeBytes(dir / ("in" + std::to_string(i) + ".bin"), b.data.data(), b.data.size());
            const interp::Buffer &e = expected[args[i].buffer];
            writeBytes(dir / ("out" + std::to_string(i) + ".bin"), e.data.data(), e.data.size());
          } else {
            a.scalar = spirvtest::scalarBytes(kernel->params()[i]->type.dtype, spec->args[i].value);
          }
          c.args.push_back(a);
        }
        std::ofstream(dir / "case.txt") << gputest::writeCase(c);
        if (benchOnly)
          std::ofstream(dir / "spec.txt") << text.str();
        ++cases;
      }
    }
  }
  std::cout << cases << " cases prepared, " << failures << " failures\n";
  return failures ? 1 : 0;
}
