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

ArgFacts factsOf(const std::vector<rt::BundleParam> &params, const rt::PackedArgs &packed) {
  ArgFacts facts;
  for (size_t i = 0; i < params.size(); ++i) {
    // Two's complement keeps divisibility by a power of two, and a slot holds the value
    // from its lowest byte up, so the slot's low bits decide either fact.
    const uint64_t bits = packed.slots[i];
    if (params[i].pointer)
      facts.pointersAligned &= bits % kDivisor == 0;
    else if (isIndexLike(params[i].dtype) && bits % kDivisor == 0)
      facts.multiplesOf16.push_back(static_cast<unsigned>(i));
  }
  return facts;
}

} // namespace kiln::jit
