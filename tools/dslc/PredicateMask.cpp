//===- PredicateMask.cpp - `--arg mask=keep(ROWS,COLS)`: a mask built on the device ===//
//
// See PredicateMask.h. The three kernels are written out as Kiln source that imports the
// program, stdlib/block_mask_build.kiln and stdlib/block_masks.kiln's predicates, so the
// predicate is resolved, type-checked and inlined by the frontend exactly as in any other
// kernel, and an error in it is reported where it is written.
//
//===----------------------------------------------------------------------===//
#include "tools/dslc/PredicateMask.h"

#include "support/BlockMask.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace kiln::dslc {

namespace {

/// The builder's kernels for `request`, as Kiln source. With `predicates`, it imports
/// stdlib/block_masks.kiln too, for a predicate the program takes from there.
std::string builderSource(const launch::PredicateMask &request, const std::string &program,
                          const std::string &stdlibDir, bool predicates) {
  const std::string bm = std::to_string(request.mask.blockRows), bn = std::to_string(request.mask.blockCols);
  const std::string lanes = std::to_string(std::min<int64_t>(32, request.mask.blockRows * request.mask.blockCols));
  const std::string &keep = request.predicate;
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string programPath = fs::absolute(program, ec).lexically_normal().string();
  if (ec)
    programPath = program;
  std::string call = keep + "(r, c";
  for (int64_t p : request.params)
    call += ", " + std::to_string(p);
  call += ")";
  auto stdlibFile = [&](const char *name) { return (fs::path(stdlibDir) / name).lexically_normal().string(); };
  return "// The builder of --arg " + request.mask.name + "=" + keep + "(ROWS,COLS,...): the three passes of\n"
         "// stdlib/block_mask_build.kiln with the predicate '" + keep + "', for block_mask<" + bm + ", " + bn +
         ">.\n"
         "import \"" + programPath + "\";\n"
         "import \"" + stdlibFile("block_mask_build.kiln") + "\";\n" +
         (predicates ? "import \"" + stdlibFile("block_masks.kiln") + "\";\n" : std::string()) +
         "fn kiln_mask_keep(r, c) { return " + call + "; }\n"
         "kernel kiln_mask_classify(status: *i32, rows: i32, cols: i32) {\n"
         "    block_mask_classify(kiln_mask_keep, status, rows, cols, " + bm + ", " + bn + ");\n"
         "}\n"
         "kernel kiln_mask_index(status: *i32, row_start: *i32, blocks: *i32, slot_of: *i32, totals: *i32,\n"
         "                       rows: i32, cols: i32) {\n"
         "    block_mask_index(status, row_start, blocks, slot_of, totals, rows, cols, " + bm + ", " + bn + ", 256);\n"
         "}\n"
         "kernel kiln_mask_bitmaps(slot_of: *i32, bitmaps: *u32, rows: i32, cols: i32) {\n"
         "    block_mask_bitmaps(kiln_mask_keep, slot_of, bitmaps, rows, cols, " + bm + ", " + bn + ", " + lanes +
         ");\n"
         "}\n";
}

/// A pass's arguments: buffers of `counts[i]` zeroed elements (or the given contents),
/// then the extents.
struct PassArgs {
  launch::HostArguments host;

  size_t buffer(DType dtype, std::vector<int32_t> contents) {
    launch::HostBuffer b;
    b.path = "mask builder buffer " + std::to_string(host.buffers.size());
    b.dtype = dtype;
    b.data.resize(std::max<size_t>(contents.size(), 1) * sizeof(int32_t));
    std::memcpy(b.data.data(), contents.data(), contents.size() * sizeof(int32_t));
    launch::HostArg a;
    a.kind = launch::HostArg::Kind::Buffer;
    a.buffer = host.buffers.size();
    host.args.push_back(a);
    host.buffers.push_back(std::move(b));
    return a.buffer;
  }
  void extents(int64_t rows, int64_t cols) {
    for (int64_t v : {rows, cols}) {
      launch::HostArg a;
      a.kind = launch::HostArg::Kind::Int;
      a.i = v;
      host.args.push_back(a);
    }
  }
  std::vector<int32_t> words(size_t buffer) const {
    const std::vector<std::byte> &bytes = host.buffers[buffer].data;
    std::vector<int32_t> out(bytes.size() / sizeof(int32_t));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(int32_t));
    return out;
  }
};

} // namespace

std::optional<BlockMaskLayout> buildPredicateMask(const launch::PredicateMask &request, const std::string &program,
                                                  const SemaOptions &options, const std::string &stdlibDir,
                                                  std::shared_ptr<SourceManager> sources, const KernelRunner &run,
                                                  DiagnosticEngine &diags) {
  std::string arg = "--arg " + request.mask.name + "=" + request.predicate + "(" + std::to_string(request.rows) +
                    "," + std::to_string(request.cols);
  for (int64_t p : request.params)
    arg += "," + std::to_string(p);
  arg += ")";
  const std::string bufferName = program + " (mask builder for " + request.predicate + ")";
  SemaOptions passOptions = options;
  passOptions.defines.clear(); // they are the kernel's; the passes have no const parameters
  passOptions.numWarps.reset();
  passOptions.numStages.reset();
  auto compileWith = [&](uint32_t file, const char *kernel, DiagnosticEngine &to) -> std::unique_ptr<ir::Module> {
    passOptions.kernel = kernel;
    auto module = std::make_unique<ir::Module>();
    module->sources = sources;
    if (!compileToTileIR(file, *module, to, passOptions) || module->kernels.size() != 1)
      return nullptr;
    return module;
  };
  // The stdlib's predicates are imported unless the program defines items of the same
  // names (its own `causal`, say): then the program's are the ones meant.
  uint32_t file = sources->addBuffer(bufferName, builderSource(request, program, stdlibDir, true));
  {
    std::ostringstream quiet;
    DiagnosticEngine probe(*sources, quiet);
    bool clash = false;
    probe.setHandler([&](const Diagnostic &d) { clash |= d.code == DiagCode::DuplicateItem; });
    if (!compileWith(file, "kiln_mask_classify", probe) && clash)
      file = sources->addBuffer(bufferName, builderSource(request, program, stdlibDir, false));
  }
  auto compile = [&](const char *kernel) -> std::unique_ptr<ir::Module> {
    std::unique_ptr<ir::Module> module = compileWith(file, kernel, diags);
    if (!module) {
      diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
              .hint("the predicate is a fn of the program, of a file it imports or of stdlib/block_masks.kiln "
                    "that returns bool; it is called with tiles of row and column indices (so r and c take no "
                    "scalar type) and then the integers given after the extents: " + request.predicate + "(r, c" +
                    std::string(request.params.empty() ? "" : ", ...") + ")")
          << arg << ": '" << request.predicate << "' does not compile as the mask's element predicate (above)";
      return nullptr;
    }
    return module;
  };

  const int64_t rows = request.rows, cols = request.cols;
  const int64_t bm = request.mask.blockRows, bn = request.mask.blockCols;
  const int64_t blockRows = (rows + bm - 1) / bm, blockCols = (cols + bn - 1) / bn;
  const size_t blocks = static_cast<size_t>(blockRows * blockCols);
  const std::array<int64_t, 3> perBlock{blockRows, blockCols, 1}, one{1, 1, 1};

  // 1. Each block's state.
  auto classify = compile("kiln_mask_classify");
  if (!classify)
    return std::nullopt;
  PassArgs first;
  size_t status = first.buffer(DType::I32, std::vector<int32_t>(blocks, 0));
  first.extents(rows, cols);
  if (!run(*classify, first.host, perBlock))
    return std::nullopt;

  // 2. The block level, and how many bitmaps there are.
  auto index = compile("kiln_mask_index");
  if (!index)
    return std::nullopt;
  PassArgs second;
  second.buffer(DType::I32, first.words(status));
  size_t rowStart = second.buffer(DType::I32, std::vector<int32_t>(static_cast<size_t>(blockRows) + 1, 0));
  size_t entries = second.buffer(DType::I32, std::vector<int32_t>(2 * std::max<size_t>(blocks, 1), 0));
  size_t slotOf = second.buffer(DType::I32, std::vector<int32_t>(blocks, 0));
  size_t totals = second.buffer(DType::I32, std::vector<int32_t>(2, 0));
  second.extents(rows, cols);
  if (!run(*index, second.host, one))
    return std::nullopt;
  const std::vector<int32_t> counts = second.words(totals);

  // 3. The bitmaps of the partial blocks.
  auto bitmaps = compile("kiln_mask_bitmaps");
  if (!bitmaps)
    return std::nullopt;
  BlockMaskLayout layout;
  layout.rows = static_cast<int32_t>(rows);
  layout.cols = static_cast<int32_t>(cols);
  layout.blockRows = static_cast<int32_t>(bm);
  layout.blockCols = static_cast<int32_t>(bn);
  const size_t words = static_cast<size_t>(layout.wordsPerBlock());
  PassArgs third;
  third.buffer(DType::I32, second.words(slotOf));
  size_t maps = third.buffer(DType::U32, std::vector<int32_t>(words * std::max<int32_t>(counts[1], 1), 0));
  third.extents(rows, cols);
  if (!run(*bitmaps, third.host, perBlock))
    return std::nullopt;

  layout.rowStart = second.words(rowStart);
  layout.blocks = second.words(entries);
  layout.blocks.resize(2 * std::max<size_t>(static_cast<size_t>(counts[0]), 1));
  std::vector<int32_t> bits = third.words(maps);
  layout.bitmaps.assign(bits.begin(), bits.end());
  // The passes are the compiler's own: arrays a kernel could not trust are its bug.
  std::string error;
  if (layout.rowStart.back() != counts[0] ||
      !checkBlockMaskIndex(layout, static_cast<int64_t>(layout.bitmaps.size()), error) ||
      !checkBlockMaskBitmaps(layout, error))
    KILN_ICE("the mask builder made a malformed mask (" + std::to_string(counts[0]) + " entries): " + error);
  return layout;
}

} // namespace kiln::dslc
