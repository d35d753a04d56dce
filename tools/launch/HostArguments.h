//===- HostArguments.h - `--grid` and `--arg NAME=VALUE` for any launcher -*- C++ -*-===//
//
// The command-line contract every Kiln launcher shares (`dslc run` on the interpreter
// or a GPU, and `kiln-run` from a bundle): a grid of 1 to 3 positive extents, and one
// `--arg NAME=VALUE` per runtime parameter — a .npy file for a pointer parameter (its
// dtype must equal the pointee type exactly), a literal for a scalar. Buffers are read
// into host memory here; after a successful run, `writeBack` writes the buffers the
// run changed back to their files, each atomically. A failed run writes nothing.
//
// A `block_mask<BM, BN>` parameter is one argument to the caller, `--arg NAME=MASK.npy`
// (a 2-D NumPy bool array of kept elements), and five to the kernel (support/BlockMask.h):
// the mask is compressed here into its two extents and three derived buffers. Those
// buffers belong to no file and are never written back. `--arg NAME=PRED(ROWS,COLS,...)`
// names an element predicate instead; the launcher that compiles it builds the arrays.
//
// The parameters come from a neutral signature (name, dtype, pointer), so this library
// depends on neither the Tile IR nor LLVM: kiln-run fills the signature from a bundle's
// metadata, dslc from the kernel's Tile IR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/BlockMask.h"
#include "support/Diagnostics.h"
#include "support/ElementType.h"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kiln::launch {

/// One runtime parameter of a kernel, in signature order.
struct ParamSpec {
  std::string name;
  DType dtype = DType::I32; ///< the scalar dtype, or the pointee when `pointer`
  bool pointer = false;
};

/// A `block_mask<BM, BN>` parameter: the kernel's parameters firstParam ..
/// firstParam + 4 are its rows, cols, row_start, blocks and bitmaps, in that order and
/// named NAME.rows ... NAME.bitmaps; the caller passes the mask as one argument, NAME.
struct MaskSpec {
  std::string name;
  int64_t blockRows = 0, blockCols = 0;
  unsigned firstParam = 0;
  /// The extents the kernel declares, checked once every argument is bound.
  std::optional<BlockMaskExtents> extents = std::nullopt;
  /// ", S, 45" for messages, when it declares them.
  std::string extentsSpelling = {};
};

/// ", S, 45": the extents as `block_mask<BM, BN, ROWS, COLS>` spells them, each a
/// parameter's name or a number; "" without extents.
std::string extentsSpelling(const std::optional<BlockMaskExtents> &extents, const std::vector<ParamSpec> &params);

/// A kernel's runtime parameters (const parameters are already baked in).
struct Signature {
  std::string kernel;
  std::vector<ParamSpec> params;
  /// The kernel's const parameters: fixed when it is compiled, so an --arg naming one
  /// is pointed at -D.
  std::vector<std::string> consts;
  /// The block masks among `params`, each covering five of them.
  std::vector<MaskSpec> masks;
  /// What `kernel` names, for messages: "kernel" or "graph".
  std::string kind = "kernel";
};

/// "x: *f32", "n: i32".
std::string paramSpelling(const ParamSpec &param);
/// "mask: block_mask<4, 8>".
std::string maskSpelling(const MaskSpec &mask);
/// The arguments a caller passes: "x: *f32, mask: block_mask<4, 8>, n: i32" (a mask in
/// place of its five parameters), or "(none)".
std::string paramList(const Signature &signature);

/// The dtype helpers this library needs, from ir/Type.h's KILN_DTYPES list.
std::string_view dtypeSpelling(DType t);
unsigned dtypeSizeBytes(DType t);
bool dtypeIsFloat(DType t);
bool dtypeIsInteger(DType t); ///< bool is not an integer
bool dtypeIsSigned(DType t);

/// Parses "X", "X,Y" or "X,Y,Z", each plain decimal digits from 1 to 2^31-1 (no sign,
/// base prefix or separators); reports E0606 otherwise.
std::optional<std::array<int64_t, 3>> parseGrid(const std::string &text, DiagnosticEngine &diags);

/// Parses an integer literal as Kiln writes them: an optional sign, then decimal or 0x
/// hex digits with `_` only between two digits (`1_000`, not `_1`, `1_` or `1__0`). u64 values above INT64_MAX keep their bit pattern. `overflow` is set
/// when the digits do not fit 64 bits.
std::optional<int64_t> parseIntLiteral(std::string text, bool &overflow);

/// One bound argument: a host buffer (pointer parameters) or a scalar value.
struct HostArg {
  enum class Kind { Buffer, Int, Float } kind = Kind::Int;
  size_t buffer = 0; ///< index into HostArguments::buffers
  int64_t i = 0;     ///< integers (u64 as its bit pattern) and bool (0/1)
  double f = 0;
};

/// A .npy file's contents, as a kernel buffer.
struct HostBuffer {
  std::string path;            ///< the file, as given on the command line
  DType dtype = DType::F32;    ///< the element dtype (the pointee of its parameters)
  std::vector<std::byte> data; ///< C-order element bytes
  std::string descr;           ///< the .npy descr, written back unchanged
  Shape shape;                 ///< the .npy shape, written back unchanged
  bool written = false;        ///< set by the launcher: write this buffer back
  /// Built here from an argument (a block mask's arrays) rather than read from a file:
  /// `path` only names it in messages ("m.npy[row_start]"), and it is never written back.
  bool derived = false;
};

/// A block mask given as `--arg NAME=PRED(ROWS,COLS[,P]...)`: built from the element
/// predicate `PRED` (a Kiln fn, called as PRED(r, c, P...)) over a [ROWS, COLS] grid,
/// which only a launcher that compiles can do (dslc run, with stdlib/block_mask_build.kiln).
/// Its five arguments are bound, rows and cols with their values and the three buffers
/// empty, until fillPredicateMask puts the built arrays in.
struct PredicateMask {
  MaskSpec mask;
  std::string predicate;
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> params; ///< the predicate's arguments after r and c
  size_t firstArg = 0; ///< its first argument in HostArguments::args
};

/// The most blocks a predicate mask may have (2^24: at 64 x 64, up to 8 GiB of bitmaps,
/// which the limit of 2^31 words of arrays cuts further).
inline constexpr int64_t kMaxPredicateMaskBlocks = int64_t(1) << 24;

/// Everything a launcher needs from the command line.
struct HostArguments {
  std::vector<HostArg> args;       ///< one per parameter, in order
  std::vector<HostBuffer> buffers; ///< one per distinct file (a file passed twice aliases), three per block mask
  std::vector<PredicateMask> predicateMasks; ///< masks still to build, in signature order
};

/// Puts a built mask's three arrays into the buffers `request` bound.
void fillPredicateMask(HostArguments &host, const PredicateMask &request, const BlockMaskLayout &layout);

/// Binds `value` (a 2-D bool .npy file, or PRED(ROWS,COLS,...)) for `mask` alone,
/// appending its five arguments to `host` as bindArguments does; reports E0608/E0601 and
/// returns false otherwise. For a compiler told the mask ahead of a launch.
bool bindMaskArgument(const MaskSpec &mask, const std::string &value, HostArguments &host, DiagnosticEngine &diags);

/// The statistics of the mask whose five arguments start at `first` in `host`, with its
/// arrays filled (what the sparse mapping's cost model reads).
BlockMaskStats maskArgumentStats(const HostArguments &host, size_t first, const MaskSpec &mask);

/// Reads every `--arg NAME=VALUE` against `signature`. Unknown, missing, repeated or
/// malformed arguments and dtype mismatches are reported (E0600/E0601), and so is a
/// block mask that is not a 2-D bool array or whose extents do not fit (E0608);
/// returns nullopt then. A block mask yields five args: two Int, then three Buffers
/// marked `derived`; one spelled PRED(ROWS,COLS,...) is also listed in `predicateMasks`.
std::optional<HostArguments> bindArguments(const Signature &signature, const std::vector<std::string> &rawArgs,
                                           DiagnosticEngine &diags);

/// Writes the buffers marked `written` back to their files, all or none: each is
/// staged beside its file (support/AtomicFile.h; mode and symlinks are kept), and
/// they replace the old files only once every one is written whole. A `derived`
/// buffer has no file and is never written, whatever its mark.
bool writeBack(const HostArguments &host, DiagnosticEngine &diags);

} // namespace kiln::launch
