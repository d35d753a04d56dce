//===- Codegen.cpp - The code generator's entry point ---------------------===//
//
// generate(): checks what the lowering cannot do, lowers the kernel into a fresh LLVM
// module (Lowering.h), optimizes it and emits PTX or SPIR-V (Emit.h). Each call has its
// own LLVMContext, so kernels can be compiled from several threads at once.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"

#include "codegen/Emit.h"
#include "codegen/Layout.h"
#include "codegen/Lowering.h"

#include <llvm/IR/LLVMContext.h>

#include <algorithm>
#include <cctype>

namespace kiln::codegen {

std::optional<Target> parseTarget(std::string_view name) {
  if (name == "sm_80")
    return Target::SM80;
  if (name == "sm_90")
    return Target::SM90;
  if (name == "sm_90a")
    return Target::SM90a;
  if (name == "spirv64")
    return Target::SPIRV64;
  return std::nullopt;
}

std::string_view targetName(Target target) {
  switch (target) {
  case Target::SM80:
    return "sm_80";
  case Target::SM90:
    return "sm_90";
  case Target::SM90a:
    return "sm_90a";
  case Target::SPIRV64:
    return "spirv64";
  }
  return "?";
}

bool isNvptxTarget(Target target) { return target != Target::SPIRV64; }

std::string entrySymbol(const std::string &name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "k_" + s;
  return s;
}
bool hasClusters(Target target) { return target == Target::SM90 || target == Target::SM90a; }

/// Largest dynamic shared memory per program (bytes), 0 when the runtime decides.
int64_t detail::sharedLimit(Target target) {
  switch (target) {
  case Target::SM80:
    return 163 * 1024; // A100: 164 KiB per SM, 163 KiB per block with opt-in
  case Target::SM90:
  case Target::SM90a:
    return 227 * 1024; // H100 / H200
  case Target::SPIRV64:
    return 0;
  }
  return 0;
}

/// Ops a reduce/scan combiner may contain: scalar arithmetic and control flow.
static bool combinerOpAllowed(const ir::Op &op) {
  for (const auto &r : op.results())
    if (!r->type.isScalar())
      return false;
  switch (op.kind()) {
  case ir::OpKind::Constant:
  case ir::OpKind::Add:
  case ir::OpKind::Sub:
  case ir::OpKind::Mul:
  case ir::OpKind::Div:
  case ir::OpKind::Rem:
  case ir::OpKind::And:
  case ir::OpKind::Or:
  case ir::OpKind::Xor:
  case ir::OpKind::Shl:
  case ir::OpKind::Shr:
  case ir::OpKind::Minimum:
  case ir::OpKind::Maximum:
  case ir::OpKind::Pow:
  case ir::OpKind::Cmp:
  case ir::OpKind::Select:
  case ir::OpKind::Fma:
  case ir::OpKind::Neg:
  case ir::OpKind::Not:
  case ir::OpKind::Abs:
  case ir::OpKind::Exp:
  case ir::OpKind::Exp2:
  case ir::OpKind::Log:
  case ir::OpKind::Log2:
  case ir::OpKind::Sqrt:
  case ir::OpKind::Rsqrt:
  case ir::OpKind::Sin:
  case ir::OpKind::Cos:
  case ir::OpKind::Tanh:
  case ir::OpKind::Erf:
  case ir::OpKind::Sigmoid:
  case ir::OpKind::Floor:
  case ir::OpKind::Ceil:
  case ir::OpKind::Cast:
  case ir::OpKind::Bitcast:
  case ir::OpKind::For:
  case ir::OpKind::If:
  case ir::OpKind::While:
  case ir::OpKind::Yield:
  case ir::OpKind::Condition:
    return true;
  case ir::OpKind::Fence:
  case ir::OpKind::ClusterExchange:
  case ir::OpKind::ProgramId:
  case ir::OpKind::NumPrograms:
  case ir::OpKind::Arange:
  case ir::OpKind::Splat:
  case ir::OpKind::Broadcast:
  case ir::OpKind::ExpandDims:
  case ir::OpKind::Reshape:
  case ir::OpKind::Permute:
  case ir::OpKind::Join:
  case ir::OpKind::Split:
  case ir::OpKind::Cat:
  case ir::OpKind::Gather:
  case ir::OpKind::BlockElements:
  case ir::OpKind::PtrAdd:
  case ir::OpKind::Load:
  case ir::OpKind::Store:
  case ir::OpKind::AtomicRMW:
  case ir::OpKind::AtomicCas:
  case ir::OpKind::Reduce:
  case ir::OpKind::Argmax:
  case ir::OpKind::Argmin:
  case ir::OpKind::Scan:
  case ir::OpKind::Sort:
  case ir::OpKind::TopK:
  case ir::OpKind::ArgTopK:
  case ir::OpKind::Dot:
  case ir::OpKind::Return:
  case ir::OpKind::Assert:
  case ir::OpKind::Print:
  case ir::OpKind::Launch:
    return false;
  }
  return false;
}

/// Elements of one tile a thread may hold. Every op is unrolled over them, so beyond
/// this the compile time and the register spills grow out of proportion.
static constexpr int64_t kMaxElementsPerThread = 1024;

/// Reports what the lowering does not handle; true when the kernel is fine.
bool detail::checkSupported(const ir::Kernel &kernel, Target target, DiagnosticEngine &diags) {
  bool ok = true;
  if (kernel.numWarps < 1 || kernel.numWarps > 32 || (kernel.numWarps & (kernel.numWarps - 1))) {
    diags.error(kernel.loc, DiagCode::Unsupported)
        << "num_warps must be a power of two between 1 and 32, not " << kernel.numWarps;
    return false;
  }
  if (kernel.gridSplit.cluster && !hasClusters(target)) {
    diags.error(kernel.loc, DiagCode::Unsupported)
            .hint("compile for sm_90, or with --reduction-split=1")
        << "kernel '" << kernel.name << "' runs its split reduction in thread-block clusters, which "
        << targetName(target) << " does not have";
    return false;
  }
  const int64_t threads = kernel.numWarps * 32;
  const int64_t maxVec = chunkLimit(kernel);
  ir::walk(*kernel.body, [&](ir::Op &op) {
    for (const auto &r : op.results()) {
      const int64_t perThread = Layout::forType(r->type, threads, maxVec).numRegs();
      if (ok && perThread > kMaxElementsPerThread) {
        diags.error(op.loc(), DiagCode::Unsupported)
                .hint("use smaller tiles or more warps (num_warps)")
            << "a " << r->type.str() << " gives each of the " << threads << " threads "
            << perThread << " elements; at most " << kMaxElementsPerThread << " are supported";
        ok = false;
      }
    }
    if ((op.kind() != ir::OpKind::Reduce && op.kind() != ir::OpKind::Scan) || !op.numRegions())
      return;
    ir::walk(*op.region(0), [&](ir::Op &inner) {
      if (ok && !combinerOpAllowed(inner)) {
        bool tiles = false;
        for (const auto &r : inner.results())
          tiles |= !r->type.isScalar();
        for (const ir::Value *v : inner.operands())
          tiles |= !v->type.isScalar();
        diags.error(inner.loc(), DiagCode::Unsupported)
                .hint(tiles ? "" : "a combiner may use scalar arithmetic, comparisons, select and math functions")
            << "code generation for " << targetName(target) << " does not support '" << inner.mnemonic() << "'"
            << (tiles ? " with tile operands or results" : "") << " inside a combiner";
        ok = false;
      }
    });
  });
  return ok;
}

std::vector<std::pair<unsigned, int64_t>> effectiveDivisibility(const ir::Kernel &kernel,
                                                                const CodegenOptions &options) {
  std::vector<std::pair<unsigned, int64_t>> out = options.paramDivisibility;
  for (const auto &[index, multiple] : kernel.paramMultiples) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto &p) { return p.first == index; });
    if (it == out.end())
      out.emplace_back(index, multiple);
    else
      it->second = std::max(it->second, multiple);
  }
  return out;
}

std::optional<CodegenResult> generate(const ir::Module &module, const ir::Kernel &kernel,
                                      Target target, DiagnosticEngine &diags,
                                      const CodegenOptions &options) {
  (void)module; // sources are reached through the diagnostics engine
  if (!detail::checkSupported(kernel, target, diags))
    return std::nullopt;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> tm =
      detail::makeTargetMachine(target, options.optLevel, error, /*clusterStores=*/kernel.gridSplit.cluster);
  if (!tm) {
    diags.error(kernel.loc, DiagCode::Unsupported) << error;
    return std::nullopt;
  }
  llvm::LLVMContext ctx;
  llvm::Module mod(kernel.name, ctx);
  mod.setTargetTriple(tm->getTargetTriple());
  mod.setDataLayout(tm->createDataLayout());

  detail::Lowering lowering(target, kernel, mod, diags, options);
  if (!lowering.run())
    return std::nullopt;
  const int64_t limit = detail::sharedLimit(target);
  if (limit && lowering.arenaBytes > limit) {
    diags.error(kernel.loc, DiagCode::Unsupported)
        << "kernel '" << kernel.name << "' needs " << lowering.arenaBytes
        << " bytes of shared memory per program; " << targetName(target) << " allows at most "
        << limit;
    return std::nullopt;
  }

  detail::Emitted emitted;
  if (!detail::optimizeAndEmit(mod, *tm, target, lowering.entryName, options, emitted, error)) {
    diags.error(kernel.loc, DiagCode::FileNotReadable) << error;
    return std::nullopt;
  }
  CodegenResult r;
  r.entry = lowering.entryName;
  r.llvmIR = std::move(emitted.llvmIR);
  r.ptx = std::move(emitted.ptx);
  r.spirv = std::move(emitted.spirv);
  r.spirvAsm = std::move(emitted.spirvAsm);
  r.sharedBytes = lowering.arenaBytes;
  r.numThreads = kernel.numWarps * 32;
  return r;
}

} // namespace kiln::codegen
