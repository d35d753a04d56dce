//===- Choice.h - The fastest of several ways to compute one result -*- C++ -*-===//
//
// The first stage of the two-stage search (docs/jit.md, "Choosing between fusion
// scopes"). One result can often be computed by different sequences of launches:
// attention with the residual add and layernorm fused into the output projection, or
// attention, a plain projection and a separate residual-and-layernorm kernel. Which one
// is faster depends on the shapes, the mask and the device, so it is measured: each
// candidate runs untimed first (its kernels compile, and their own @autotune configs are
// timed on their first launch: the second stage, tile parameters for that scope), then
// is timed with device events, the median of several runs. The fastest is kept in
// memory and in the disk cache, keyed by the search's name, the candidates' names, the
// caller's key (the shapes, the mask's digest), the device and the compiler build; a
// later call with the same key, in this process or another, runs nothing. A candidate
// that fails is skipped, its reason noted (and in the error when none runs); a choice
// made without it is kept in memory only, so that another process measures again.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "jit/Kernel.h"

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jit {

struct ChoiceRequest {
  std::string search;                  ///< what is decided ("encoder-layer-scope")
  std::string key;                     ///< what the answer depends on ("T=4096, mask=<digest>")
  std::vector<std::string> candidates; ///< their names, in order
};

/// Runs candidate `index` once (launches on the runtime's stream; need not wait for
/// them). Returns "" or why it could not run.
using RunCandidate = std::function<std::string(size_t index)>;

/// The index of the fastest candidate, from memory, the disk cache or a measurement.
/// The buffers of `preserve` (KILN_ARG_BUFFER entries; others are ignored) are copied
/// before the first run and restored after the last, so candidates that update a buffer
/// in place leave the caller's data as it was. Must be called without holding
/// jit.mutex: the candidates launch through the same JIT. Throws Failure when the
/// request is malformed or no candidate runs.
size_t chooseFastest(JitState &jit, const ChoiceRequest &request, const RunCandidate &run,
                     std::span<const kiln_arg> preserve);

} // namespace kiln::jit
