//===- BundleBuilderTest.cpp - Code generation results packed as bundles ---===//
//
// A bundle must carry everything the runtime needs to launch the kernel without the
// compiler; these tests build one from a real kernel and check each field, that it
// survives the file format, and that the source hash follows the program text.
//
//===----------------------------------------------------------------------===//
#include "codegen/BundleBuilder.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

namespace kiln::codegen {
namespace {

const char *kScaledCopy = R"(// A scaled copy with a stride.
kernel @scale(%x: *f32, %y: *f32, %stride: i32, %s: f32) attributes {consts = {BLOCK = 128, EXACT = true}, num_stages = 1, num_warps = 2} {
  %pid = program_id {axis = 0} : i32
  %row = mul %pid, %stride : i32
  %0 = arange {end = 128, start = 0} : tile<i32, [128]>
  %1 = splat %row : tile<i32, [128]>
  %offs = add %1, %0 : tile<i32, [128]>
  %2 = splat %x : tile<*f32, [128]>
  %3 = ptr_add %2, %offs : tile<*f32, [128]>
  %v = load %3 : tile<f32, [128]>
  %4 = splat %s : tile<f32, [128]>
  %5 = mul %v, %4 : tile<f32, [128]>
  %6 = splat %y : tile<*f32, [128]>
  %7 = ptr_add %6, %offs : tile<*f32, [128]>
  store %7, %5
  return
}
)";

std::unique_ptr<ir::Module> parse(const std::string &text) {
  auto sources = std::make_shared<SourceManager>();
  uint32_t file = sources->addBuffer("scale.tir", text);
  std::ostringstream errors;
  DiagnosticEngine diags(*sources, errors);
  auto module = ir::parseTir(sources, file, diags);
  EXPECT_TRUE(module) << errors.str();
  return module;
}

TEST(BundleBuilder, CarriesTheSignatureLaunchShapeAndAssumptions) {
  auto module = parse(kScaledCopy);
  ASSERT_TRUE(module);
  const ir::Kernel &kernel = *module->kernels.front();
  std::ostringstream errors;
  DiagnosticEngine diags(*module->sources, errors);
  CodegenOptions options;
  options.paramDivisibility = {{2, 16}};
  auto result = generate(*module, kernel, Target::SM90a, diags, options);
  ASSERT_TRUE(result) << errors.str();

  rt::Bundle b = makeBundle(*module, kernel, Target::SM90a, options, *result);
  EXPECT_EQ(b.kernelName, "scale");
  EXPECT_EQ(b.entry, result->entry);
  ASSERT_EQ(b.params.size(), 4u);
  EXPECT_EQ(b.params[0], (rt::BundleParam{"x", DType::F32, true, 16}));
  EXPECT_EQ(b.params[1], (rt::BundleParam{"y", DType::F32, true, 16}));
  EXPECT_EQ(b.params[2], (rt::BundleParam{"stride", DType::I32, false, 16}));
  EXPECT_EQ(b.params[3], (rt::BundleParam{"s", DType::F32, false, 1}));
  ASSERT_EQ(b.consts.size(), 2u);
  EXPECT_EQ(b.consts[0], (rt::ConstValue{"BLOCK", int64_t(128)}));
  EXPECT_EQ(b.consts[1], (rt::ConstValue{"EXACT", true}));
  EXPECT_EQ(b.numWarps, 2u);
  EXPECT_EQ(b.sharedBytes, static_cast<uint32_t>(result->sharedBytes));
  EXPECT_EQ(b.target, rt::Target::SM90a);
  EXPECT_EQ(b.compilerVersion, compilerVersion());
  EXPECT_EQ(b.sourceHash.size(), 64u);
  EXPECT_EQ(b.sourceLocation(), "scale.tir:2:1");
  ASSERT_EQ(b.sections.size(), 1u);
  EXPECT_EQ(b.sections[0].kind, rt::SectionKind::PTX);
  EXPECT_EQ(std::string(b.sections[0].bytes.begin(), b.sections[0].bytes.end()), result->ptx);

  // The bundle is valid and survives the file format unchanged.
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeBundle(b, error);
  ASSERT_FALSE(bytes.empty()) << error;
  auto back = rt::parseBundle(bytes, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, b);

  // Without the aligned-pointer assumption nothing is recorded for pointers.
  options.assumeAlignedPointers = false;
  options.paramDivisibility.clear();
  result = generate(*module, kernel, Target::SM80, diags, options);
  ASSERT_TRUE(result) << errors.str();
  b = makeBundle(*module, kernel, Target::SM80, options, *result);
  for (const rt::BundleParam &p : b.params)
    EXPECT_EQ(p.divisibility, 1u) << p.name;
  EXPECT_EQ(b.target, rt::Target::SM80);
}

TEST(BundleBuilder, SpirvGoesInASpirvSection) {
  auto module = parse(kScaledCopy);
  ASSERT_TRUE(module);
  std::ostringstream errors;
  DiagnosticEngine diags(*module->sources, errors);
  CodegenOptions options;
  options.emitSpirvAsm = false;
  auto result = generate(*module, *module->kernels.front(), Target::SPIRV64, diags, options);
  ASSERT_TRUE(result) << errors.str();
  rt::Bundle b = makeBundle(*module, *module->kernels.front(), Target::SPIRV64, options, *result);
  ASSERT_EQ(b.sections.size(), 1u);
  EXPECT_EQ(b.sections[0].kind, rt::SectionKind::SPIRV);
  EXPECT_EQ(b.sections[0].target, rt::Target::SPIRV64);
  EXPECT_EQ(b.sections[0].bytes, result->spirv);
  std::string error;
  EXPECT_FALSE(rt::serializeBundle(b, error).empty()) << error;
}

TEST(BundleBuilder, SourceHashFollowsTheText) {
  auto a = parse(kScaledCopy);
  auto same = parse(kScaledCopy);
  auto edited = parse(std::string(kScaledCopy) + "// a trailing comment\n");
  ASSERT_TRUE(a && same && edited);
  EXPECT_EQ(sourceHash(*a), sourceHash(*same));
  EXPECT_NE(sourceHash(*a), sourceHash(*edited));
  // SHA-256 of "0:" (one empty file) pins the construction: length-prefixed texts.
  ir::Module empty;
  empty.sources->addBuffer("e.kiln", "");
  EXPECT_EQ(sourceHash(empty), "ba768b331fd86cec803be04e56ab2b3d4c0e98ef4ee4fcd4e72ad7cce61a1d1f");
}

TEST(BundleBuilder, TargetForTheDeviceTheRuntimeReports) {
  EXPECT_EQ(targetForDevice("sm_90"), Target::SM90a);
  EXPECT_EQ(targetForDevice("sm_100"), Target::SM90);
  EXPECT_EQ(targetForDevice("sm_120"), Target::SM90);
  EXPECT_EQ(targetForDevice("sm_86"), Target::SM80);
  EXPECT_EQ(targetForDevice("sm_80"), Target::SM80);
  EXPECT_EQ(targetForDevice("spirv64"), Target::SPIRV64);
  EXPECT_EQ(targetForDevice("sm_75"), std::nullopt);
  EXPECT_EQ(targetForDevice("sm_"), std::nullopt);
  EXPECT_EQ(targetForDevice("sm_9x"), std::nullopt);
  EXPECT_EQ(targetForDevice("gfx90a"), std::nullopt);
  EXPECT_EQ(targetForDevice("sm_99999999999999999999"), Target::SM90); // saturates, no overflow
}

// Tile IR text has no dots in value names: a mask's parameters read back as mask_rows
// and so on, and the bundle still names them as the launchers and the runtime expect.
TEST(BundleBuilder, NamesABlockMasksParametersAfterTheMask) {
  auto module = parse(R"(kernel @rows(%out: *i32, %mask_rows: i32, %mask_cols: i32, %mask_row_start: *i32, %mask_blocks: *i32, %mask_bitmaps: *u32) attributes {block_masks = {mask = [1, 16, 32]}, consts = {}, num_stages = 1, num_warps = 4} {
  store %out, %mask_rows
  return
}
)");
  ASSERT_TRUE(module);
  const ir::Kernel &kernel = *module->kernels.front();
  std::ostringstream errors;
  DiagnosticEngine diags(*module->sources, errors);
  CodegenOptions options;
  auto result = generate(*module, kernel, Target::SM90, diags, options);
  ASSERT_TRUE(result) << errors.str();
  rt::Bundle b = makeBundle(*module, kernel, Target::SM90, options, *result);
  ASSERT_EQ(b.params.size(), 6u);
  const char *names[] = {"out", "mask.rows", "mask.cols", "mask.row_start", "mask.blocks", "mask.bitmaps"};
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(b.params[i].name, names[i]);
  ASSERT_EQ(b.blockMasks.size(), 1u);
  EXPECT_EQ(b.blockMasks[0], (rt::BundleBlockMask{"mask", 16, 32, 1}));
  EXPECT_EQ(rt::validateBundle(b), "");
}

} // namespace
} // namespace kiln::codegen
