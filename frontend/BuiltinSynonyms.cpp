//===- BuiltinSynonyms.cpp - The Kiln builtin for a name from elsewhere ---===//
//
// People and agents arrive with NumPy, PyTorch, Triton and CUDA names in their hands:
// `clip`, `amax`, `tl.exp`, `torch.relu`, `x.shape(0)`. Spelling distance alone offers
// `log` for `log1` and nothing for `clip`, so an unknown name is first looked up here,
// by meaning, and only then by spelling (Sema::closestName).
//
//===----------------------------------------------------------------------===//
#include "frontend/BuiltinSynonyms.h"

#include <array>

namespace kiln::sema {

namespace {

struct Synonym {
  std::string_view name;    ///< as written elsewhere
  std::string_view builtin; ///< the Kiln builtin that does it; empty for an expression
  std::string_view how;     ///< how to write it, when not a plain rename; may be empty
};

// Sorted by nothing in particular; looked up linearly (an error path).
constexpr std::array kSynonyms = {
    Synonym{"clip", "clamp", ""},
    Synonym{"clamp_min", "maximum", "maximum(x, lo)"},
    Synonym{"clamp_max", "minimum", "minimum(x, hi)"},
    Synonym{"fmax", "maximum", ""},
    Synonym{"fmin", "minimum", ""},
    Synonym{"amax", "max", "max(x, axis)"},
    Synonym{"amin", "min", "min(x, axis)"},
    Synonym{"average", "mean", ""},
    Synonym{"log1", "log1p", ""},
    Synonym{"logp1", "log1p", ""},
    Synonym{"expm", "expm1", ""},
    Synonym{"power", "pow", "pow(x, y) or x ** y"},
    Synonym{"square", "", "x * x or x ** 2"},
    Synonym{"rint", "round", "round(x) (halves to even)"},
    Synonym{"nearbyint", "round", "round(x) (halves to even)"},
    Synonym{"fix", "trunc", ""},
    Synonym{"fabs", "abs", ""},
    Synonym{"absolute", "abs", ""},
    Synonym{"signbit", "", "x < 0.0"},
    Synonym{"reciprocal", "", "1.0 / x"},
    Synonym{"rcp", "", "1.0 / x"},
    Synonym{"swish", "silu", ""},
    Synonym{"expit", "sigmoid", ""},
    Synonym{"logistic", "sigmoid", ""},
    Synonym{"isneginf", "", "isinf(x) && x < 0.0"},
    Synonym{"isposinf", "", "isinf(x) && x > 0.0"},
    Synonym{"astype", "to", "x.to(f32)"},
    Synonym{"cast", "to", "x.to(f32)"},
    Synonym{"type", "to", "x.to(f32)"},
    Synonym{"view", "reshape", ""},
    Synonym{"transpose", "trans", "trans(x) for a 2-D tile, permute(x, dims) otherwise"},
    Synonym{"t", "trans", ""},
    Synonym{"matmul", "dot", ""},
    Synonym{"mm", "dot", ""},
    Synonym{"bmm", "dot", ""},
    Synonym{"einsum", "dot", "dot(a, b) of [M, K] and [K, N] tiles"},
    Synonym{"ones", "full", "full(shape, 1.0, f32)"},
    Synonym{"ones_like", "full", "full(shape, 1.0, f32)"},
    Synonym{"zeros_like", "zeros", "zeros(shape, dtype)"},
    Synonym{"full_like", "full", "full(shape, value, dtype)"},
    Synonym{"empty", "zeros", "zeros(shape, dtype)"},
    Synonym{"select", "where", "where(cond, x, y)"},
    Synonym{"masked_fill", "where", "where(mask, value, x)"},
    Synonym{"cumulative_sum", "cumsum", ""},
    Synonym{"argsort", "sort", "sort(x, axis) for the values; argtopk(x, k, axis) for indices"},
    Synonym{"unsqueeze", "expand_dims", ""},
    Synonym{"broadcast", "broadcast_to", ""},
    Synonym{"expand", "broadcast_to", ""},
    Synonym{"concatenate", "cat", ""},
    Synonym{"concat", "cat", ""},
    Synonym{"take_along_axis", "gather", ""},
    Synonym{"pid", "program_id", "program_id(0)"},
    Synonym{"multinomial", "rand", "rand(seed, offsets)"},
    Synonym{"rand_like", "rand", "rand(seed, offsets)"},
    Synonym{"randn_like", "randn", "randn(seed, offsets)"},
    Synonym{"ceil_div", "cdiv", ""},
    Synonym{"div_up", "cdiv", ""},
    Synonym{"atomicAdd", "atomic_add", ""},
    Synonym{"atomicMax", "atomic_max", ""},
    Synonym{"atomicMin", "atomic_min", ""},
    Synonym{"atomicCAS", "atomic_cas", ""},
    Synonym{"atomicExch", "atomic_xchg", ""},
    Synonym{"atomicAnd", "atomic_and", ""},
    Synonym{"atomicOr", "atomic_or", ""},
    Synonym{"atomicXor", "atomic_xor", ""},
    Synonym{"device_assert", "assert", ""},
    Synonym{"static_print", "print", ""},
    Synonym{"device_print", "print", ""},
};

} // namespace

std::optional<BuiltinSynonym> builtinByMeaning(std::string_view name) {
  for (const Synonym &s : kSynonyms)
    if (s.name == name)
      return BuiltinSynonym{std::string(s.builtin), std::string(s.how)};
  return std::nullopt;
}

std::string unknownFunctionHint(std::string_view name, const std::string &closeBySpelling) {
  if (auto s = builtinByMeaning(name)) {
    if (s->builtin.empty())
      return "write " + s->how;
    return "did you mean '" + s->builtin + "'?" + (s->how.empty() ? "" : " (" + s->how + ")");
  }
  return closeBySpelling.empty() ? std::string() : "did you mean '" + closeBySpelling + "'?";
}

bool isForeignModuleName(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kModules = {
      "tl", "triton", "np", "numpy", "torch", "F", "nn", "math", "libdevice", "cuda"};
  for (std::string_view m : kModules)
    if (m == name)
      return true;
  return false;
}

std::string shapeMethodHint() {
  return "a tile's shape is fixed when the kernel is compiled: use the const that sized it "
         "(e.g. BLOCK), or pass the size as a const parameter";
}

} // namespace kiln::sema
