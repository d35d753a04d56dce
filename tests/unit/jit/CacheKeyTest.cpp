//===- CacheKeyTest.cpp - Every input of a compiled kernel changes its key ===//
//
// The key of a cached kernel is the lowered kernel's key text (sources, names, consts,
// launch settings, compiler build) plus the code-generation options and target. Each
// test changes one input and checks the key changes — and that recompiling the same
// input gives the same key, so the cache is ever hit.
//
//===----------------------------------------------------------------------===//
#include "JitTestUtil.h"
#include "jit/Compile.h"

#include "llvm/Config/llvm-config.h"

#include <set>

namespace kiln::jit {
namespace {

using test::TempDir;
using test::writeFile;

const char *kScale = R"(kernel scale(x: *f32, y: *f32, n: i32, const BLOCK: i32 = 128, const S: f32 = 2.0) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(y + offs, load(x + offs, mask = offs < n) * S, mask = offs < n);
}
kernel other(x: *f32) {
    store(x, 1.0);
}
)";

std::string keyOf(const Source &source, const std::string &kernel = "scale", SemaOptions options = {},
                  codegen::Target target = codegen::Target::SM90a, codegen::CodegenOptions codegen = {},
                  FusionChoices fusion = {}) {
  std::string diagnostics;
  auto lowered = lowerKernel(source, kernel, options, fusion, diagnostics);
  EXPECT_TRUE(lowered) << diagnostics;
  if (!lowered)
    return "";
  return KeyText(lowered->key).append(codegenKey(target, codegen)).digest();
}

Source text(const std::string &source, const std::string &name = "scale.kiln") { return Source{name, source}; }

SemaOptions defines(std::vector<std::pair<std::string, std::string>> d) {
  SemaOptions o;
  o.defines = std::move(d);
  return o;
}

TEST(CacheKey, SameInputsSameKey) {
  std::string key = keyOf(text(kScale));
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, keyOf(text(kScale)));
  EXPECT_EQ(key, keyOf(text(kScale), "scale", defines({{"BLOCK", "128"}})))
      << "a define equal to the default compiles the same code";
  EXPECT_EQ(keyOf(text(kScale), "scale", defines({{"S", "2.0"}})), keyOf(text(kScale), "scale", defines({{"S", "2"}})))
      << "consts are keyed by their value as the kernel sees it";
}

TEST(CacheKey, EachInputChangesTheKey) {
  std::string base = keyOf(text(kScale));
  std::string changedText = kScale;
  changedText.replace(changedText.find("* S"), 3, "+ S");
  codegen::CodegenOptions o0;
  o0.optLevel = 0;
  codegen::CodegenOptions unaligned;
  unaligned.assumeAlignedPointers = false;
  codegen::CodegenOptions divisible;
  divisible.paramDivisibility = {{2, 16}};
  codegen::CodegenOptions noTensorCores;
  noTensorCores.useTensorCores = false;
  SemaOptions warps;
  warps.numWarps = 8;
  SemaOptions stages;
  stages.numStages = 2;
  const std::vector<std::pair<const char *, std::string>> variants = {
      {"source text", keyOf(text(changedText))},
      {"a comment", keyOf(text(std::string("// v2\n") + kScale))},
      {"file name", keyOf(text(kScale, "elsewhere/scale.kiln"))},
      {"kernel", keyOf(text(kScale), "other")},
      {"int const", keyOf(text(kScale), "scale", defines({{"BLOCK", "256"}}))},
      {"float const", keyOf(text(kScale), "scale", defines({{"S", "0.5"}}))},
      {"num_warps", keyOf(text(kScale), "scale", warps)},
      {"num_stages", keyOf(text(kScale), "scale", stages)},
      {"target sm_80", keyOf(text(kScale), "scale", {}, codegen::Target::SM80)},
      {"target spirv64", keyOf(text(kScale), "scale", {}, codegen::Target::SPIRV64)},
      {"opt level", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, o0)},
      {"pointer alignment", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, unaligned)},
      {"divisibility", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, divisible)},
      {"tensor cores", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, noTensorCores)},
      {"reduction split", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, {}, {4, false})},
      {"no reduction split", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, {}, {1, false})},
      {"quantized fusion", keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, {}, {0, true})},
  };
  std::set<std::string> seen = {base};
  for (const auto &[what, key] : variants) {
    EXPECT_NE(key, base) << what;
    EXPECT_TRUE(seen.insert(key).second) << what << " collides with another variant";
  }
}

TEST(CacheKey, ImportedSourcesAreKeyed) {
  TempDir dir;
  writeFile(dir.file("lib.kiln"), "fn twice(v) {\n    return v * 2.0;\n}\n");
  const std::string main = "import \"lib.kiln\";\nkernel k(x: *f32) {\n    let offs = arange(0, 16);\n"
                           "    store(x + offs, twice(load(x + offs)));\n}\n";
  writeFile(dir.file("main.kiln"), main);
  Source file{dir.file("main.kiln"), std::nullopt};
  std::string before = keyOf(file, "k");
  EXPECT_EQ(before, keyOf(file, "k"));
  writeFile(dir.file("lib.kiln"), "fn twice(v) {\n    return v + v;\n}\n");
  EXPECT_NE(keyOf(file, "k"), before) << "the main file is unchanged; only its import differs";
}

TEST(CacheKey, CompilerBuildIsPartOfTheKey) {
  std::string diagnostics;
  auto lowered = lowerKernel(text(kScale), "scale", {}, FusionChoices{}, diagnostics);
  ASSERT_TRUE(lowered) << diagnostics;
  const std::string &t = lowered->key.text();
  const std::string fingerprint = compilerFingerprint();
  EXPECT_TRUE(test::contains(t, "compiler " + fingerprint + "\n")) << t;
  // "kiln 0.1.0+<16 hex digits of the sources>, LLVM <version>, <C++ compiler> (flags <16 hex>)"
  ASSERT_EQ(fingerprint.rfind("kiln 0.1.0+", 0), 0u) << fingerprint;
  const std::string sources = fingerprint.substr(std::string("kiln 0.1.0+").size(), 16);
  EXPECT_EQ(sources.find_first_not_of("0123456789abcdef"), std::string::npos) << fingerprint;
  EXPECT_TRUE(test::contains(fingerprint, sources + ", LLVM " LLVM_VERSION_STRING ", ")) << fingerprint;
  EXPECT_TRUE(test::contains(fingerprint, " (flags ")) << fingerprint;
  EXPECT_EQ(fingerprint.back(), ')') << fingerprint;
}

TEST(CacheKey, LibdeviceContentIsPartOfTheKey) {
  TempDir dir;
  codegen::CodegenOptions options;
  options.libdevicePath = dir.file("libdevice.10.bc");
  auto key = [&] { return keyOf(text(kScale), "scale", {}, codegen::Target::SM90a, options); };
  auto fingerprint = [&] { return libdeviceFingerprint(options.libdevicePath); };

  EXPECT_EQ(fingerprint(), "missing (No such file or directory)") << "a missing file is said, not an error";
  const std::string missing = key();
  writeFile(options.libdevicePath, "bitcode of one toolkit");
  EXPECT_EQ(fingerprint(), "sha256 " + sha256Hex("bitcode of one toolkit"));
  const std::string first = key();
  EXPECT_EQ(first, key()) << "the same file, the same key";
  // Another toolkit installed over the same path: other bytes (of another size, so that
  // the change shows even within one tick of the file system's clock).
  writeFile(options.libdevicePath, "bitcode of a newer toolkit");
  EXPECT_EQ(fingerprint(), "sha256 " + sha256Hex("bitcode of a newer toolkit"));
  const std::string second = key();
  EXPECT_NE(second, first);
  EXPECT_NE(second, missing);
  EXPECT_NE(first, missing);

  std::string t = codegenKey(codegen::Target::SM90a, options).text();
  EXPECT_TRUE(test::contains(t, "libdevice_content sha256 " + sha256Hex("bitcode of a newer toolkit") + "\n")) << t;
  EXPECT_FALSE(test::contains(codegenKey(codegen::Target::SPIRV64, options).text(), "libdevice"))
      << "SPIR-V links no libdevice";
}

TEST(CacheKey, ValuesCannotForgeLines) {
  KeyText a, b;
  a.add("file", "x\nkernel y");
  b.add("file", "x").add("kernel", "y");
  EXPECT_NE(a.digest(), b.digest());
  EXPECT_EQ(a.text(), "file x\\nkernel y\n");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
} // namespace kiln::jit
