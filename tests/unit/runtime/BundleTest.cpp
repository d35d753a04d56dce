//===- BundleTest.cpp - The .kbin format: round trip and damage -----------===//
//
// A bundle must read back exactly as written, and every way a file can be damaged —
// any single byte changed, any truncation, a foreign file, a future version — must be
// refused with a message that says what is wrong, never accepted and never a crash.
// A block mask's record must match the five parameters it stands for exactly.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/BundleMetadata.h"
#include "runtime/Container.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace kiln;
using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

std::vector<uint8_t> serialize(const Bundle &b) {
  std::string error;
  std::vector<uint8_t> bytes = serializeBundle(b, error);
  EXPECT_EQ(error, "");
  return bytes;
}

std::string parseError(std::span<const uint8_t> bytes) {
  std::string error;
  std::optional<Bundle> b = parseBundle(bytes, error);
  EXPECT_FALSE(b.has_value());
  return b ? "<parsed>" : error;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// vaddBundle() with a `block_mask<4, 8>` named `name` after its parameters: the five
/// parameters it stands for, from index 4 on, and the record that says so.
Bundle maskBundle(const std::string &name = "mask") {
  Bundle b = vaddBundle();
  b.params.push_back({name + ".rows", DType::I32, false});
  b.params.push_back({name + ".cols", DType::I32, false, 4});
  b.params.push_back({name + ".row_start", DType::I32, true, 16});
  b.params.push_back({name + ".blocks", DType::I32, true, 16});
  b.params.push_back({name + ".bitmaps", DType::U32, true, 16});
  b.blockMasks.push_back({name, 4, 8, 4});
  return b;
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("kiln-bundle-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

} // namespace

TEST(Crc32, MatchesTheStandardCheckValue) {
  std::string s = "123456789";
  EXPECT_EQ(crc32(bytesOf(s)), 0xCBF43926u);
  EXPECT_EQ(crc32({}), 0u);
}

TEST(Bundle, RoundTripKeepsEveryField) {
  Bundle b = vaddBundle();
  b.consts.push_back({"NEG", int64_t(std::numeric_limits<int64_t>::min())});
  b.consts.push_back({"BIG", int64_t(std::numeric_limits<int64_t>::max())});
  b.consts.push_back({"TINY", 1e-300});
  b.consts.push_back({"THIRD", 1.0 / 3.0});
  b.consts.push_back({"INF", -std::numeric_limits<double>::infinity()});
  b.consts.push_back({"NAN_", std::numeric_limits<double>::quiet_NaN()});
  b.consts.push_back({"OFF", false});
  b.params.push_back({"flag", DType::Bool, false});
  b.params.push_back({"h", DType::BF16, true});
  b.params.push_back({"q", DType::F8E4M3, false});
  b.params.push_back({"stride", DType::I64, false, 16});
  b.params.push_back({"aligned", DType::F16, true, 16});
  b.sharedBytes = 98304;
  b.numWarps = 8;
  b.gridSplit = 7;
  b.workspaceBytes = 2192;
  b.sourceFile = "dir with space/k.kiln";
  b.sections.push_back(CodeSection{SectionKind::PTX, Target::SM80, bytesOf(".version 8.0\n.target sm_80\n")});
  b.sections.push_back(CodeSection{SectionKind::SPIRV, Target::SPIRV64, tinySpirv()});

  std::vector<uint8_t> bytes = serialize(b);
  std::string error;
  std::optional<Bundle> back = parseBundle(bytes, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, b);
  EXPECT_DOUBLE_EQ(std::get<double>(back->consts[6].value), 1.0 / 3.0);
  EXPECT_TRUE(std::isnan(std::get<double>(back->consts[8].value)));
  EXPECT_EQ(back->sourceLocation(), "dir with space/k.kiln:3:1");
  // Writing the parsed bundle again gives the same bytes: the format is canonical.
  EXPECT_EQ(serialize(*back), bytes);
}

TEST(Bundle, MetadataIsReadableText) {
  std::vector<uint8_t> bytes = serialize(vaddBundle());
  std::string text(bytes.begin(), bytes.end());
  EXPECT_EQ(text.substr(0, 8), "KILNBNDL");
  EXPECT_TRUE(contains(text, "kernel vadd\nentry kiln_vadd\nparam x *f32\n"));
  EXPECT_TRUE(contains(text, "param n i32\nconst BLOCK int 1024\nconst SCALE float 0.5\nconst CAUSAL bool true\n"));
  EXPECT_TRUE(contains(text, "num_warps 4\nshared_bytes 0\ntarget sm_90\ncompiler dslc 0.1.0\n"));
  EXPECT_TRUE(contains(text, "source_hash 9c1f0a\nsource 3 1 vadd.kiln\n"));
  Bundle b = vaddBundle();
  b.params[3].divisibility = 16;
  bytes = serialize(b);
  EXPECT_TRUE(contains(std::string(bytes.begin(), bytes.end()), "param n i32 div 16\nconst BLOCK"));
  // A kernel split over programs says so; the others keep their text as it was.
  EXPECT_FALSE(contains(text, "grid_split"));
  b.gridSplit = 4;
  b.workspaceBytes = 1168;
  bytes = serialize(b);
  EXPECT_TRUE(contains(std::string(bytes.begin(), bytes.end()),
                       "shared_bytes 0\ngrid_split 4\nworkspace_bytes 1168\ntarget sm_90\n"));
  // One split over thread-block clusters has no workspace.
  b.workspaceBytes = 0;
  b.clusterSplit = true;
  bytes = serialize(b);
  EXPECT_TRUE(contains(std::string(bytes.begin(), bytes.end()),
                       "shared_bytes 0\ngrid_split 4\ncluster_size 4\ntarget sm_90\n"));
  std::string error;
  std::optional<Bundle> back = parseBundle(bytes, error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->clusterSplit);
  EXPECT_EQ(back->gridSplit, 4u);
  EXPECT_EQ(back->workspaceBytes, 0u);
}

TEST(Bundle, BlockMasksRoundTripAsOneLineEach) {
  Bundle b = maskBundle();
  b.params.push_back({"tail", DType::F32, false});
  b.params.push_back({"causal.rows", DType::I32, false});
  b.params.push_back({"causal.cols", DType::I32, false});
  b.params.push_back({"causal.row_start", DType::I32, true});
  b.params.push_back({"causal.blocks", DType::I32, true});
  b.params.push_back({"causal.bitmaps", DType::U32, true});
  b.blockMasks.push_back({"causal", 256, 1, 10});
  std::vector<uint8_t> bytes = serialize(b);
  std::string text(bytes.begin(), bytes.end());
  EXPECT_TRUE(contains(text, "param mask.rows i32\nparam mask.cols i32 div 4\nparam mask.row_start *i32 div 16\n"
                             "param mask.blocks *i32 div 16\nparam mask.bitmaps *u32 div 16\nparam tail f32\n"))
      << text;
  EXPECT_TRUE(contains(text, "param causal.bitmaps *u32\nblock_mask mask 4 8 4\nblock_mask causal 256 1 10\n"
                             "const BLOCK int 1024\n"))
      << text;
  std::string error;
  std::optional<Bundle> back = parseBundle(bytes, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, b);
  ASSERT_EQ(back->blockMasks.size(), 2u);
  EXPECT_EQ(back->blockMasks[1], (BundleBlockMask{"causal", 256, 1, 10}));
  EXPECT_EQ(serialize(*back), bytes);
  // Declared extents follow the first parameter: `@P` for parameter P, `=N` for N.
  b.blockMasks[1].extents = BlockMaskExtents{BlockMaskExtent{0, 3}, BlockMaskExtent{4096, -1}};
  bytes = serialize(b);
  text.assign(bytes.begin(), bytes.end());
  EXPECT_TRUE(contains(text, "block_mask causal 256 1 10 @3 =4096\n")) << text;
  back = parseBundle(bytes, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, b);
  // A bundle without masks has no such line, and one written before masks existed reads
  // back with none.
  std::vector<uint8_t> plain = serialize(vaddBundle());
  EXPECT_FALSE(contains(std::string(plain.begin(), plain.end()), "block_mask"));
  back = parseBundle(plain, error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->blockMasks.empty());
}

TEST(Bundle, BlockMasksMustMatchTheirParameters) {
  auto invalid = [](auto edit) {
    Bundle b = maskBundle();
    edit(b);
    std::string error;
    EXPECT_TRUE(serializeBundle(b, error).empty());
    return error;
  };
  std::string error = invalid([](Bundle &b) { b.blockMasks[0].blockRows = 3; });
  EXPECT_EQ(error, "block mask 'mask' has blocks of 3 x 8; each side must be a power of two from 1 to 256");
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks[0].blockCols = 0; }), "blocks of 4 x 0"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks[0].blockCols = 512; }), "blocks of 4 x 512"));
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].firstParam = 5; }),
            "block mask 'mask' needs parameters 5..9, but there are 9");
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks[0].firstParam = 4000000000u; }),
                       "needs parameters 4000000000..4000000004"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.params.pop_back(); }), "needs parameters 4..8, but there are 8"));
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].firstParam = 3; }),
            "block mask 'mask' needs parameter 3 to be 'mask.rows', not 'n'");
  EXPECT_EQ(invalid([](Bundle &b) { b.params[6].name = "mask.rowstart"; }),
            "block mask 'mask' needs parameter 6 to be 'mask.row_start', not 'mask.rowstart'");
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].name = "m"; }),
            "block mask 'm' needs parameter 4 to be 'm.rows', not 'mask.rows'");
  EXPECT_EQ(invalid([](Bundle &b) { b.params[5].dtype = DType::I64; }),
            "block mask 'mask' needs parameter 'mask.cols' to be i32, not i64");
  EXPECT_EQ(invalid([](Bundle &b) { b.params[6].pointer = false; }),
            "block mask 'mask' needs parameter 'mask.row_start' to be *i32, not i32");
  EXPECT_EQ(invalid([](Bundle &b) { b.params[8].dtype = DType::I32; }),
            "block mask 'mask' needs parameter 'mask.bitmaps' to be *u32, not *i32");
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks.push_back(b.blockMasks[0]); }),
            "block mask 'mask' overlaps block mask 'mask' at parameter 4");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.params.push_back({"p", DType::I32, false});
              b.params.push_back({"q", DType::I32, false});
              b.blockMasks.push_back({"m", 1, 1, 6});
            }),
            "block mask 'm' overlaps block mask 'mask' at parameter 6");
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].extents = BlockMaskExtents{BlockMaskExtent{0, 0}, {}}; }),
            "block mask 'mask' declares an extent by parameter 0, which is not an integer parameter of the kernel");
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks[0].extents = BlockMaskExtents{BlockMaskExtent{0, 4}, {}}; }),
                       "by parameter 4, which is not an integer parameter"))
      << "a mask's own rows";
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks[0].extents = BlockMaskExtents{BlockMaskExtent{0, 99}, {}}; }),
                       "by parameter 99"));
  EXPECT_EQ(invalid([](Bundle &b) {
              b.blockMasks[0].extents = BlockMaskExtents{BlockMaskExtent{0, 3}, BlockMaskExtent{0, -1}};
            }),
            "block mask 'mask' declares an extent of 0, outside 1..2^30");
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].name = "9m"; }), "block mask name '9m' is not an identifier");
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks[0].name = "mask.rows"; }),
            "block mask name 'mask.rows' is not an identifier");
  // The mask is one argument to a launcher's caller, so its name is as unique as any.
  EXPECT_EQ(invalid([](Bundle &b) {
              Bundle other = maskBundle("x");
              b.params.insert(b.params.end(), other.params.begin() + 4, other.params.end());
              b.blockMasks.push_back({"x", 4, 8, 9});
            }),
            "block mask 'x' has the name of another parameter or block mask");
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.consts[0].name = "mask"; }), "const 'mask' has the name"));
  // Only a mask's own parameters may carry a dot.
  EXPECT_EQ(invalid([](Bundle &b) { b.blockMasks.clear(); }), "parameter name 'mask.rows' is not an identifier");
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.blockMasks.assign(100, b.blockMasks[0]); }),
                       "too many block masks (100)"));
  // Masks need not come in parameter order to be valid.
  Bundle two = maskBundle();
  Bundle first = maskBundle("a");
  two.params.insert(two.params.begin(), first.params.begin() + 4, first.params.end());
  two.blockMasks[0].firstParam = 9;
  two.blockMasks.push_back({"a", 16, 16, 0});
  EXPECT_EQ(validateBundle(two), "");
}

TEST(Bundle, EveryChangedByteIsDetected) {
  std::vector<uint8_t> good = serialize(vaddBundle());
  ASSERT_GT(good.size(), 100u);
  // Two different changes per byte: the lowest bit, and all bits.
  for (uint8_t mask : {uint8_t(0x01), uint8_t(0xFF)}) {
    for (size_t i = 0; i < good.size(); ++i) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= mask;
      std::string error;
      EXPECT_FALSE(parseBundle(bad, error).has_value()) << "byte " << i << " ^ " << int(mask) << " accepted";
      EXPECT_FALSE(error.empty());
    }
  }
}

TEST(Bundle, EveryTruncationIsDetected) {
  std::vector<uint8_t> good = serialize(vaddBundle());
  for (size_t n = 0; n < good.size(); ++n) {
    std::string error = parseError(std::span<const uint8_t>(good.data(), n));
    const char *expected = n == 0 ? "empty" : "truncated";
    EXPECT_TRUE(contains(error, expected)) << "at " << n << ": " << error;
  }
}

TEST(Bundle, TrailingBytesAreRefused) {
  std::vector<uint8_t> bytes = serialize(vaddBundle());
  bytes.push_back(0);
  EXPECT_TRUE(contains(parseError(bytes), "trailing data"));
}

TEST(Bundle, SpecificDamageHasSpecificMessages) {
  std::vector<uint8_t> good = serialize(vaddBundle());
  auto damaged = [&](size_t at) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x20;
    return parseError(bad);
  };
  EXPECT_TRUE(contains(damaged(0), "bad magic"));
  EXPECT_TRUE(contains(damaged(20), "header checksum mismatch")); // section count
  EXPECT_TRUE(contains(damaged(48 + 2), "metadata checksum mismatch"));
  EXPECT_TRUE(contains(damaged(good.size() - 3), "code section 0 checksum mismatch"));
}

TEST(Bundle, NewerVersionIsNamed) {
  Bundle b = vaddBundle();
  std::vector<uint8_t> bytes = serialize(b);
  bytes[8] = 2; // version field, header checksum now wrong as well
  std::string error = parseError(bytes);
  EXPECT_TRUE(contains(error, "format version 2 is not supported")) << error;
  EXPECT_TRUE(contains(error, "reads version 1")) << error;
}

TEST(Bundle, ForeignFilesAreNamed) {
  EXPECT_TRUE(contains(parseError(bytesOf("\x7f"
                                          "ELF\x02\x01\x01 and more")),
                       "ELF file"));
  EXPECT_TRUE(contains(parseError(tinySpirv()), "bare SPIR-V module"));
  EXPECT_TRUE(contains(parseError(bytesOf(kVaddPtx)), "bare PTX text"));
  EXPECT_TRUE(contains(parseError(bytesOf("hello world")), "not a Kiln bundle: bad magic"));
}

TEST(Bundle, WriteIsAtomicAndReadsBack) {
  std::string path = tempPath("rt.kbin");
  std::string error;
  ASSERT_TRUE(writeBundleAtomic(path, vaddBundle(), error)) << error;
  // Overwrite with a different bundle: the old file is replaced whole.
  Bundle second = vaddBundle();
  second.kernelName = "vadd2";
  ASSERT_TRUE(writeBundleAtomic(path, second, error)) << error;
  bool ioError = true;
  std::optional<Bundle> back = readBundle(path, error, &ioError);
  ASSERT_TRUE(back) << error;
  EXPECT_FALSE(ioError);
  EXPECT_EQ(*back, second);
  // No temporary file is left beside it.
  size_t entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    entries += e.path().filename().string().rfind(std::filesystem::path(path).filename().string(), 0) == 0;
  EXPECT_EQ(entries, 1u);
  std::filesystem::remove(path);
}

TEST(Bundle, ReadErrorsNameTheFile) {
  std::string error;
  bool ioError = false;
  EXPECT_FALSE(readBundle("/nonexistent/dir/k.kbin", error, &ioError));
  EXPECT_TRUE(ioError);
  EXPECT_TRUE(contains(error, "cannot read '/nonexistent/dir/k.kbin'")) << error;

  std::string path = tempPath("junk.kbin");
  std::ofstream(path) << "KILNBNDL but short";
  EXPECT_FALSE(readBundle(path, error, &ioError));
  EXPECT_FALSE(ioError);
  EXPECT_TRUE(contains(error, "'" + path + "': truncated")) << error;
  std::filesystem::remove(path);

  EXPECT_FALSE(writeBundleAtomic("/nonexistent/dir/k.kbin", vaddBundle(), error));
  EXPECT_TRUE(contains(error, "cannot write '/nonexistent/dir/k.kbin'")) << error;

  // A device (/dev/zero never ends) is refused before a byte is read: an I/O error,
  // like a missing file, not a damaged bundle.
  ioError = false;
  EXPECT_FALSE(readBundle("/dev/zero", error, &ioError));
  EXPECT_TRUE(ioError);
  EXPECT_TRUE(contains(error, "cannot read '/dev/zero': not a regular file (a character device)")) << error;

  // A file that is no bundle is known from its first bytes, however long it is.
  path = tempPath("long.kbin");
  std::ofstream(path) << std::string(1 << 20, 'x');
  EXPECT_FALSE(readBundle(path, error, &ioError));
  EXPECT_FALSE(ioError);
  EXPECT_TRUE(contains(error, "bad magic")) << error;
  std::filesystem::remove(path);
}

TEST(Bundle, ValidationRefusesMeaninglessBundles) {
  auto invalid = [](auto edit) {
    Bundle b = vaddBundle();
    edit(b);
    std::string error;
    EXPECT_TRUE(serializeBundle(b, error).empty());
    return error;
  };
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.kernelName = "9lives"; }), "not an identifier"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.entry = "has space"; }), "entry symbol"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.params[1].name = "x"; }), "parameter 'x' appears twice"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.consts[0].name = "n"; }), "const 'n' has the name"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.params[3].divisibility = 12; }), "invalid divisibility 12"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.params[3].divisibility = 0; }), "invalid divisibility 0"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.params[3].dtype = DType::F32;
                         b.params[3].divisibility = 4;
                       }),
                       "parameter 'n' has an invalid divisibility 4"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.numWarps = 0; }), "num_warps 0"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.numWarps = 64; }), "num_warps 64"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.compilerVersion = "a\nb"; }), "compiler version"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.sourceHash = "ABC"; }), "lowercase hex"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.sourceHash = ""; }), "lowercase hex"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.sections.clear(); }), "no code sections"));
  EXPECT_TRUE(
      contains(invalid([](Bundle &b) { b.target = Target::SM80; }), "no code section for the bundle's target sm_80"));
  EXPECT_TRUE(
      contains(invalid([](Bundle &b) { b.sections[0].kind = SectionKind::SPIRV; }), "not code for that target"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.sections[0].bytes.push_back(0); }), "NUL byte"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.sections.push_back(b.sections[0]); }), "repeats a target"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.sections.push_back(CodeSection{SectionKind::SPIRV, Target::SPIRV64, {1, 2, 3, 4}});
                       }),
                       "not a little-endian SPIR-V module"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.sourceFile.clear();
                         b.sourceLine = 3;
                       }),
                       "without a source file"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.gridSplit = 0; }), "grid_split 0 is outside 1..1024"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.gridSplit = 2000; }), "grid_split 2000"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.workspaceBytes = 64; }), "workspace_bytes without grid_split"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) { b.gridSplit = 2; }), "workspace_bytes 0 is not a multiple of 4"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.gridSplit = 2;
                         b.workspaceBytes = 6;
                       }),
                       "workspace_bytes 6"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.gridSplit = 16;
                         b.clusterSplit = true;
                       }),
                       "cluster_size 16 is outside 2..8"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.gridSplit = 2;
                         b.workspaceBytes = 16;
                         b.clusterSplit = true;
                       }),
                       "workspace_bytes with cluster_size"));
  EXPECT_TRUE(contains(invalid([](Bundle &b) {
                         b.gridSplit = 2;
                         b.clusterSplit = true;
                         b.target = Target::SM80;
                       }),
                       "cluster_size on sm_80, which has no thread-block clusters"));
}

TEST(BundleMetadata, SyntaxErrorsNameTheLine) {
  auto decode = [](const std::string &text) {
    Bundle b;
    std::string error;
    EXPECT_FALSE(decodeBundleMetadata(text, b, error));
    return error;
  };
  std::string base = "kernel k\nentry k\nnum_warps 4\nshared_bytes 0\ntarget sm_90\ncompiler c\nsource_hash ab\n";
  Bundle ok;
  std::string error;
  EXPECT_TRUE(decodeBundleMetadata(base, ok, error)) << error;
  EXPECT_EQ(ok.kernelName, "k");
  EXPECT_EQ(ok.target, Target::SM90);

  EXPECT_TRUE(contains(decode(base + "kernel again\n"), "line 8: key 'kernel' appears twice"));
  EXPECT_TRUE(contains(decode(base + "colour blue\n"), "line 8: unknown key 'colour'"));
  EXPECT_TRUE(contains(decode(base + "param x *f33\n"), "malformed value for 'param'"));
  EXPECT_TRUE(contains(decode(base + "const C int 1.5\n"), "malformed value for 'const'"));
  EXPECT_TRUE(contains(decode(base + "const C float x\n"), "malformed value for 'const'"));
  EXPECT_TRUE(contains(decode(base + "const C bool yes\n"), "malformed value for 'const'"));
  EXPECT_TRUE(contains(decode(base + "source 1 2\n"), "malformed value for 'source'"));
  EXPECT_TRUE(contains(decode("kernel k\r\n"), "control character"));
  EXPECT_TRUE(contains(decode("kernel k"), "does not end with a newline"));
  EXPECT_TRUE(contains(decode("kernel k\n"), "lacks the required key 'entry'"));
  EXPECT_TRUE(contains(decode(std::string("num_warps 99999999999\n")), "malformed value for 'num_warps'"));
  EXPECT_TRUE(contains(decode(base + "grid_split four\n"), "malformed value for 'grid_split'"));
  EXPECT_TRUE(contains(decode(base + "workspace_bytes -4\n"), "malformed value for 'workspace_bytes'"));
  EXPECT_TRUE(contains(decode(base + "grid_split 2\ngrid_split 3\n"), "key 'grid_split' appears twice"));
  // The format writes grid_split only for a split kernel: 1 or 0 written out is damage.
  EXPECT_TRUE(contains(decode(base + "grid_split 1\n"), "grid_split 1 is outside 2..1024"));
  EXPECT_TRUE(contains(decode(base + "grid_split 0\n"), "grid_split 0 is outside 2..1024"));
  EXPECT_TRUE(contains(decode(base + "grid_split 2\ncluster_size 4\n"), "cluster_size 4 differs from grid_split 2"));
  for (const char *bad : {"block_mask m 4 8\n", "block_mask m 4 8 2 9\n", "block_mask m -4 8 2\n",
                          "block_mask m four 8 2\n", "block_mask\n", "block_mask m 4 8 99999999999\n"})
    EXPECT_TRUE(contains(decode(base + bad), "line 8: malformed value for 'block_mask'")) << bad;
  // block_mask repeats, one line per mask; the meaning is validateBundle's to check.
  Bundle masks;
  EXPECT_TRUE(decodeBundleMetadata(base + "block_mask a 4 8 0\nblock_mask b 1 256 5\n", masks, error)) << error;
  EXPECT_EQ(masks.blockMasks, (std::vector<BundleBlockMask>{{"a", 4, 8, 0}, {"b", 1, 256, 5}}));
}

TEST(BundleMetadata, RandomlyDamagedTextNeverCrashesAndReencodesFaithfully) {
  // Deterministic mutations of valid metadata: the decoder must refuse or accept each
  // without crashing, and whatever it accepts (and validates) must encode back to text
  // that decodes to the same bundle.
  Bundle valid = maskBundle();
  valid.params.push_back({"h", DType::F16, true});
  valid.gridSplit = 4;
  valid.workspaceBytes = 1168;
  const std::string base = encodeBundleMetadata(valid);
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&seed] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  const std::string alphabet = "abcxyz_019 *\n-.:";
  size_t accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text = base;
    for (uint64_t edits = 1 + next() % 3; edits > 0; --edits) {
      size_t at = next() % (text.size() + 1);
      char c = (next() % 4 == 0) ? char(next() % 256) : alphabet[next() % alphabet.size()];
      switch (next() % 3) {
      case 0:
        if (at < text.size())
          text[at] = c;
        break;
      case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
      default:
        if (at < text.size())
          text.erase(at, 1);
        break;
      }
    }
    Bundle b;
    b.sections = valid.sections;
    std::string error;
    if (!decodeBundleMetadata(text, b, error) || !validateBundle(b).empty())
      continue;
    ++accepted;
    Bundle again;
    again.sections = valid.sections;
    ASSERT_TRUE(decodeBundleMetadata(encodeBundleMetadata(b), again, error)) << error << "\n" << text;
    EXPECT_EQ(again, b) << text;
  }
  // Some mutations (inside names, numbers) keep the text valid; the check above ran.
  EXPECT_GT(accepted, 100u);
}
