//===- PredicateMask.h - `--arg mask=keep(ROWS,COLS)`: a mask built on the device -*- C++ -*-===//
//
// A block mask named by an element predicate, `fn keep(r: i32, c: i32) -> bool` of the
// program being run (or of a file it imports), is built where the kernel runs: the
// three passes of stdlib/block_mask_build.kiln are compiled with the predicate as three
// small kernels and launched in turn, on the same device and through the same pipeline
// as the kernel itself (the interpreter or a GPU). The host reads back the number of
// partial blocks between the second and third pass, to size the bitmaps, and the arrays
// at the end, which the launcher passes to the kernel as it passes a mask read from a
// .npy file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/Sema.h"
#include "tools/launch/HostArguments.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>

namespace kiln {
struct BlockMaskLayout;
}

namespace kiln::dslc {

/// Runs `module`'s one kernel as written (the runner applies the pipeline) on `grid`
/// with `host`'s arguments, leaving the results in `host`'s buffers. False after
/// diagnostics.
using KernelRunner =
    std::function<bool(ir::Module &module, launch::HostArguments &host, const std::array<int64_t, 3> &grid)>;

/// Builds the mask `request` names. `program` is the file being run, `options` its Sema
/// options (the kernel name is replaced), `stdlibDir` the folder of the standard
/// library (block_mask_build.kiln, block_masks.kiln). Reports a located error and
/// returns nullopt when the predicate is missing or does not compile as an element
/// predicate, or a pass fails.
std::optional<BlockMaskLayout> buildPredicateMask(const launch::PredicateMask &request, const std::string &program,
                                                  const SemaOptions &options, const std::string &stdlibDir,
                                                  std::shared_ptr<SourceManager> sources, const KernelRunner &run,
                                                  DiagnosticEngine &diags);

} // namespace kiln::dslc
