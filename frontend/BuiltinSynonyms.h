//===- BuiltinSynonyms.h - The Kiln builtin for a name from elsewhere -*- C++ -*-===//
//
// Names NumPy, PyTorch, Triton and CUDA users reach for, mapped to the Kiln builtin that
// does the same, for E0400's "did you mean" (see BuiltinSynonyms.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln::sema {

struct BuiltinSynonym {
  std::string builtin; ///< the Kiln builtin; empty when `how` is an expression
  std::string how;     ///< how to write the call when not a plain rename; may be empty
};

/// The builtin that does what `name` does in NumPy, PyTorch, Triton or CUDA, if any.
std::optional<BuiltinSynonym> builtinByMeaning(std::string_view name);

/// E0400's help for an unknown `name`: the builtin by meaning, else `closeBySpelling`
/// ("did you mean 'log1p'?", "write 1.0 / x"); empty when there is neither.
std::string unknownFunctionHint(std::string_view name, const std::string &closeBySpelling);

/// Whether `name` is a module prefix from elsewhere (`tl`, `np`, `torch`, ...): Kiln's
/// builtins are called by their bare names, so `tl.exp(x)` is `exp(x)`.
bool isForeignModuleName(std::string_view name);

/// The help for `x.shape(...)`, `x.size(...)`: shapes are compile-time values.
std::string shapeMethodHint();

} // namespace kiln::sema
