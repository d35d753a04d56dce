//===- Specialization.cpp - Facts of launch arguments that code may assume ===//

#include "jit/Specialization.h"

namespace kiln::jit {

// The divisor Triton specializes on too: 16 bytes is one vector access of 4 f32s.
static constexpr int64_t kDivisor = 16;

std::string ArgFacts::text() const {
  std::string out = pointersAligned ? "aligned" : "unaligned";
  out += ", multiples of 16:";
  for (unsigned i : multiplesOf16)
    out += " " + std::to_string(i);
  return out;
}

codegen::CodegenOptions ArgFacts::applyTo(codegen::CodegenOptions options) const {
  options.assumeAlignedPointers = pointersAligned;
  options.paramDivisibility.clear();
  for (unsigned i : multiplesOf16)
    options.paramDivisibility.emplace_back(i, kDivisor);
  return options;
}

static bool isIndexLike(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::U32 || t == DType::U64; }

ArgFacts factsOf(const std::vector<rt::BundleParam> &params, std::span<const kiln_arg> args,
                 const std::vector<uint64_t> &pointerAddresses) {
  ArgFacts facts;
  for (uint64_t address : pointerAddresses)
    facts.pointersAligned &= address % kDivisor == 0;
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    if (params[i].pointer || !isIndexLike(params[i].dtype))
      continue;
    // Two's complement keeps divisibility by a power of two, so the raw bits decide.
    uint64_t bits = args[i].kind == KILN_ARG_INT ? static_cast<uint64_t>(args[i].value.i) : args[i].value.u;
    if ((args[i].kind == KILN_ARG_INT || args[i].kind == KILN_ARG_UINT) && bits % kDivisor == 0)
      facts.multiplesOf16.push_back(static_cast<unsigned>(i));
  }
  return facts;
}

} // namespace kiln::jit
