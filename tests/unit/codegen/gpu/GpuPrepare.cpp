//===- GpuPrepare.cpp - Prepares the GPU check of the test kernels --------===//
//
// kiln-gpu-prepare OUTDIR [INPUT...]
//
// Each INPUT is a `.tir` kernel file, a `.spec` program file (grammar in
// tests/spirv/KernelCase.h) or a folder of them; by default tests/spirv/kernels,
// tests/spirv/programs and tests/gpu/programs. For every kernel they hold: makes random
// inputs as the file's `// @` lines describe, runs the reference interpreter for the
// expected outputs, compiles the kernel for sm_80 and sm_90a into bundles (and, with
// $KILN_GPU_CUDA_SOURCE=1, its dslc --emit=cuda source built by nvcc into a third), and
// writes one case folder (GpuCase.h) that kiln-gpu-run executes on a GPU machine
// without the compiler. $KILN_SEED fixes the inputs.
//
// OUTDIR must be new, empty, or a folder this program wrote before (it then starts
// afresh), so that a mistyped path never loses anyone's files.
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/KernelCase.h"
#include "tests/unit/codegen/gpu/GpuCase.h"

#include "codegen/BundleBuilder.h"
#include "codegen/Codegen.h"
#include "codegen/SourceEmitter.h"
#include "ir/Parser.h"
#include "ir/transforms/Pipeline.h"
#include "ir/Verifier.h"
#include "support/FloatFormats.h"
#include "support/Npy.h"
#ifdef KILN_HAVE_SEMA
#include "frontend/Sema.h"
#endif

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/// Marks a folder as written by kiln-gpu-prepare, hence safe to empty.
constexpr const char *kMarker = ".kiln-gpu-cases";

constexpr codegen::Target kTargets[] = {codegen::Target::SM80, codegen::Target::SM90a};

std::string readText(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// nvcc for the printed CUDA C++ ($KILN_NVCC, else the CUDA toolkit's) when
/// $KILN_GPU_CUDA_SOURCE is 1, else "" (no such bundles). Opt-in while the printed code
/// still fails 12 of its 296 cases on the H200 (docs/source.md).
std::string findNvcc() {
  const char *wanted = std::getenv("KILN_GPU_CUDA_SOURCE");
  if (!wanted || std::string(wanted) != "1")
    return "";
  const char *env = std::getenv("KILN_NVCC");
  const std::string path = env && *env ? env : "/usr/local/cuda/bin/nvcc";
  return fs::exists(path) ? path : "";
}

/// PTX for sm_90a from CUDA C++ `source`, built by `nvcc -fmad=false` in folder `dir`.
std::optional<std::string> nvccPtx(const std::string &nvcc, const std::string &source, const fs::path &dir,
                                   std::string &error) {
  const fs::path cu = dir / "kernel.cu", ptx = dir / "kernel.ptx", log = dir / "nvcc.log";
  std::ofstream(cu) << source;
  const std::string command = "'" + nvcc + "' -arch=sm_90a -fmad=false -Werror all-warnings -ptx -o '" +
                              ptx.string() + "' '" + cu.string() + "' > '" + log.string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) {
    error = "nvcc failed on the printed CUDA C++: " + readText(log);
    return std::nullopt;
  }
  std::string text = readText(ptx);
  fs::remove(ptx);
  fs::remove(log);
  return text;
}

/// The .tir and .spec files named by `inputs` (files themselves, folders' contents).
std::vector<fs::path> caseFiles(const std::vector<fs::path> &inputs) {
  std::vector<fs::path> files;
  auto isCase = [](const fs::path &p) { return p.extension() == ".tir" || p.extension() == ".spec"; };
  for (const fs::path &in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<fs::path> inside;
      for (const auto &e : fs::directory_iterator(in))
        if (isCase(e.path()))
          inside.push_back(e.path());
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

/// Empties `out` for a new set of cases, or says why it will not.
bool startOutput(const fs::path &out, std::string &error) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_empty(out, ec)) {
    if (!fs::exists(out / kMarker)) {
      error = out.string() + " exists and was not written by kiln-gpu-prepare; name a new folder";
      return false;
    }
    fs::remove_all(out, ec);
  }
  fs::create_directories(out, ec);
  if (ec) {
    error = "cannot create " + out.string() + ": " + ec.message();
    return false;
  }
  std::ofstream(out / kMarker) << "cases written by kiln-gpu-prepare; the folder is replaced on the next run\n";
  return true;
}

/// Writes `buf` as an .npy file of `count` elements.
bool writeArray(const fs::path &p, const interp::Buffer &buf, std::string &error) {
  NpyArray a;
  a.descr = npyDescrFor(buf.dtype);
  a.shape = {buf.numElements()};
  a.data = buf.data;
  return writeNpyAtomic(p.string(), a, error);
}

/// Checks that the spec's @arg lines are the kernel's parameters, in order, and that
/// the values of @divisible arguments are multiples of their divisor (the runtime
/// would refuse the launch otherwise).
bool checkSpec(const spirvtest::CaseSpec &spec, const ir::Kernel &kernel, std::string &error) {
  // A split kernel's workspace is the runtime's to pass, not the spec's.
  const auto &params = kernel.params();
  const size_t given = kernel.numLaunchParams();
  if (spec.args.size() != given) {
    error = "the spec has " + std::to_string(spec.args.size()) + " @arg lines, kernel '" +
            kernel.name + "' " + std::to_string(given) + " parameters";
    return false;
  }
  if (spec.reductionSplit > 1 && !kernel.gridSplit.active()) {
    error = "@reduction-split " + std::to_string(spec.reductionSplit) + " does not apply to the kernel";
    return false;
  }
  for (size_t i = 0; i < given; ++i) {
    const std::string &want = params[i]->nameHint;
    if (!want.empty() && spec.args[i].name != want) {
      error = "@arg " + std::to_string(i + 1) + " is '" + spec.args[i].name +
              "', the kernel's parameter there is '" + want + "'";
      return false;
    }
  }
  for (const auto &[name, d] : spec.divisible) {
    auto it = std::find_if(spec.args.begin(), spec.args.end(),
                           [&](const spirvtest::ArgSpec &a) { return a.name == name; });
    if (it == spec.args.end() || it->isBuffer) {
      error = "@divisible names '" + name + "', which is no scalar argument";
      return false;
    }
    if (static_cast<int64_t>(it->value) % d != 0) {
      error = "@divisible " + name + " " + std::to_string(d) + ", but its value is " +
              gputest::scalarText(it->dtype, it->value);
      return false;
    }
  }
  return true;
}

/// Prepares every kernel of one .tir or .spec file. Returns the number of failures and
/// adds to `cases`.
int prepareFile(const fs::path &file, const fs::path &out, uint64_t seed, int &cases) {
  const std::string text = readText(file);
  auto sources = std::make_shared<SourceManager>();
  DiagnosticEngine diags(*sources, std::cerr);
  std::string error;
  std::optional<spirvtest::CaseSpec> spec = spirvtest::parseCaseSpec(text, error);
  if (!spec) {
    std::cerr << file.string() << ": " << error << "\n";
    return 1;
  }
  std::unique_ptr<ir::Module> module;
  if (file.extension() == ".tir") {
    module = ir::parseTir(sources, sources->addBuffer(file.string(), text), diags);
  } else {
#ifdef KILN_HAVE_SEMA
    SemaOptions opts;
    opts.kernel = spec->kernel;
    opts.defines = spec->defines;
    opts.numStages = spec->numStages;
    module = compileFileToTileIR(std::string(KILN_SOURCE_DIR) + "/" + spec->source, diags, opts,
                                 sources);
#else
    std::cerr << file.string() << ": cannot prepare a program without the frontend\n";
    return 1;
#endif
  }
  if (!module || !ir::verifyModule(*module, diags) || module->kernels.empty()) {
    std::cerr << file.string() << ": cannot compile\n";
    return 1;
  }
  // A Kiln program is compiled as dslc compiles it, through the pass pipeline (fusion
  // included), while the interpreter runs it as written: the check covers the passes
  // and code generation together. Hand-written .tir kernels test code generation alone.
  // The passes run for each target, as dslc runs them: a split row of sm_90 runs in
  // thread-block clusters, sm_80's through a workspace.
  std::unique_ptr<ir::Module> written = ir::cloneModule(*module);
  std::vector<std::unique_ptr<ir::Module>> compiled; // per kTargets
  for (codegen::Target t : kTargets) {
    compiled.push_back(ir::cloneModule(*module));
    if (file.extension() == ".tir")
      continue;
    ir::PipelineOptions pipeline;
    pipeline.reductionSplit.forced = spec->reductionSplit; // a split the runtime launches
    pipeline.fusionPolicy.quantized = spec->fuseQuantized;
    ir::setPipelineTarget(pipeline, codegen::targetName(t));
    // Quantized fusion computes differently on purpose, and the interpreter runs what
    // was compiled: one form (no clusters) for every target.
    if (spec->fuseQuantized)
      pipeline.reductionSplit.maxClusterSize = 0;
    ir::runPipeline(*compiled.back(), pipeline, diags);
  }
  if (spec->fuseQuantized) // fused on purpose to compute differently: compare like with like
    written = ir::cloneModule(*compiled.front());
  int failures = 0;
  const std::string nvcc = findNvcc();
  for (const auto &kernel : module->kernels) {
    const ir::Kernel &asWritten = *written->findKernel(kernel->name);
    const std::string name = file.stem().string() + "." + kernel->name;
    auto failed = [&](const std::string &why) {
      std::cerr << file.string() << ": kernel " << kernel->name << ": " << why << "\n";
      ++failures;
    };
    bool specOk = true;
    for (const auto &forTarget : compiled)
      specOk = specOk && checkSpec(*spec, *forTarget->findKernel(kernel->name), error);
    if (!specOk) {
      failed(error);
      continue;
    }
    std::vector<interp::Buffer> inputs;
    std::vector<interp::KernelArg> args;
    spirvtest::makeInputs(*spec, seed, inputs, args);
    std::vector<interp::Buffer> expected = inputs;
    interp::RunOptions opts;
    opts.grid = spec->grid;
    std::ostringstream printed; // the GPU check compares buffers, not printed text
    opts.printStream = &printed;
    if (!interp::runKernel(asWritten, args, expected, opts, diags)) {
      failed("the interpreter run failed");
      continue;
    }

    const fs::path dir = out / name;
    fs::create_directories(dir);
    gputest::GpuCase c;
    c.source = fs::relative(file, KILN_SOURCE_DIR).string();
    c.seed = seed;
    c.grid = spec->grid;
    bool ok = true;
    for (size_t i = 0; i < args.size() && ok; ++i) {
      const spirvtest::ArgSpec &s = spec->args[i];
      gputest::CaseArg a;
      a.name = s.name;
      a.dtype = kernel->params()[i]->type.dtype;
      a.isBuffer = args[i].kind == interp::KernelArg::Kind::Buffer;
      if (a.isBuffer) {
        const size_t b = args[i].buffer;
        a.count = inputs[b].numElements();
        std::tie(a.rtol, a.atol) = spirvtest::toleranceFor(*spec, a.dtype);
        // An all-zero input (an output's initial contents) is a flag, not a file, and an
        // input the kernel does not change needs no second copy (checkBuffer): the folder
        // must travel to the GPU machine.
        a.zeroInput = std::all_of(inputs[b].data.begin(), inputs[b].data.end(),
                                  [](std::byte x) { return x == std::byte{0}; });
        ok = (a.zeroInput || writeArray(dir / gputest::inputFile(a.name), inputs[b], error)) &&
             (expected[b].data == inputs[b].data ||
              writeArray(dir / gputest::expectedFile(a.name), expected[b], error));
      } else {
        // The value the interpreter saw, as the parameter's dtype holds it.
        a.value = isFloat(a.dtype) ? gputest::scalarText(a.dtype, roundToFloatDType(a.dtype, s.value))
                                   : gputest::integerText(a.dtype, s.intValue);
      }
      c.args.push_back(a);
    }
    for (size_t ti = 0; ti < std::size(kTargets) && ok; ++ti) {
      const codegen::Target t = kTargets[ti];
      const ir::Module &forTarget = *compiled[ti];
      const ir::Kernel &compiledKernel = *forTarget.findKernel(kernel->name);
      codegen::CodegenOptions cgOptions;
      cgOptions.paramDivisibility = spirvtest::paramDivisibility(*spec);
      std::optional<codegen::CodegenResult> gen = codegen::generate(forTarget, compiledKernel, t, diags, cgOptions);
      if (!gen) {
        error = "no code for " + std::string(codegen::targetName(t));
        ok = false;
        break;
      }
      rt::Bundle bundle = codegen::makeBundle(forTarget, compiledKernel, t, cgOptions, *gen);
      const std::string bundleName = std::string(codegen::targetName(t)) + ".kbin";
      ok = rt::writeBundleAtomic((dir / bundleName).string(), bundle, error);
      c.bundles.push_back(bundleName);
    }
    // The kernel as dslc --emit=cuda prints it (compiled as for sm_80), built by nvcc,
    // in a copy of the sm_90a bundle: the GPU runs the printed CUDA C++ on the same
    // inputs against the same expected outputs. Where the printer does not cover the
    // kernel, or there is no nvcc here, the case has no such bundle.
    if (ok && !nvcc.empty()) {
      const ir::Kernel &forSource = *compiled.front()->findKernel(kernel->name);
      std::ostringstream quiet;
      DiagnosticEngine sourceDiags(*sources, quiet);
      if (std::optional<std::string> cuda = forSource.gridSplit.active() ? std::nullopt
                                                                          : codegen::emitCuda(forSource, sourceDiags)) {
        std::optional<std::string> ptx = nvccPtx(nvcc, *cuda, dir, error);
        if (!ptx) {
          ok = false;
        } else {
          rt::Bundle bundle;
          std::string readError;
          std::optional<rt::Bundle> base = rt::readBundle((dir / "sm_90a.kbin").string(), readError);
          if (!base) {
            error = readError;
            ok = false;
          } else {
            bundle = *base;
            bundle.entry = codegen::sourceEntryName(kernel->name);
            bundle.sharedBytes = 0; // the printed kernel's exchange buffer is static
            for (rt::CodeSection &section : bundle.sections) // sm_90a's PTX, from nvcc
              section.bytes.assign(ptx->begin(), ptx->end());
            ok = rt::writeBundleAtomic((dir / "cuda-sm_90a.kbin").string(), bundle, error);
            c.bundles.push_back("cuda-sm_90a.kbin");
          }
        }
      }
    }
    if (!ok) {
      failed(error);
      fs::remove_all(dir);
      continue;
    }
    std::ofstream(dir / "case.txt") << gputest::writeCase(c);
    ++cases;
  }
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]).starts_with("-")) {
    std::cerr << "usage: kiln-gpu-prepare OUTDIR [INPUT...]\n"
                 "Compiles every kernel of the .tir and .spec INPUTs (files or folders; by default\n"
                 "tests/spirv/kernels, tests/spirv/programs, tests/gpu/programs) for sm_80 and "
                 "sm_90a,\nruns the interpreter on random inputs ($KILN_SEED fixes them) and writes "
                 "one case\nfolder per kernel into OUTDIR for kiln-gpu-run.\n";
    return 2;
  }
  const fs::path out = argv[1];
  std::vector<fs::path> inputs(argv + 2, argv + argc);
  if (inputs.empty())
    for (const char *d : {"tests/spirv/kernels", "tests/spirv/programs", "tests/gpu/programs"})
      inputs.push_back(fs::path(KILN_SOURCE_DIR) / d);
  std::string error;
  if (!startOutput(out, error)) {
    std::cerr << "kiln-gpu-prepare: " << error << "\n";
    return 2;
  }
  const uint64_t seed = spirvtest::testSeed();
  std::cout << "KILN_SEED=" << seed << "\n";
  int failures = 0, cases = 0;
  for (const fs::path &file : caseFiles(inputs))
    failures += prepareFile(fs::absolute(file), out, seed, cases);
  std::cout << cases << " cases prepared (" << cases * std::size(kTargets) << " bundles), "
            << failures << " failures\n";
  return failures ? 1 : 0;
}
