//===- CodegenErrorsTest.cpp - What the code generator reports to users ---===//
//
// Constructs the lowering does not support are located, coded diagnostics (E0109),
// never a crash; supported kernels report their launch needs.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln::codegen {
namespace {

struct Outcome {
  std::optional<CodegenResult> result;
  std::vector<Diagnostic> diags;
};

Outcome compile(const std::string &text, Target target) {
  auto sources = std::make_shared<SourceManager>();
  uint32_t f = sources->addBuffer("test.tir", text);
  std::ostringstream os;
  DiagnosticEngine diags(*sources, os);
  Outcome out;
  diags.setHandler([&](const Diagnostic &d) { out.diags.push_back(d); });
  auto module = ir::parseTir(sources, f, diags);
  EXPECT_TRUE(module && ir::verifyModule(*module, diags));
  if (!module)
    return out;
  out.result = generate(*module, *module->kernels.at(0), target, diags);
  return out;
}

TEST(CodegenErrors, TileOpsInsideACombinerAreE0109AtTheOp) {
  const char *text = R"(kernel @k(%x: *f32) attributes {num_warps = 1} {
  %v = constant {value = 1.0} : tile<f32, [32]>
  %s = reduce %v {axis = 0, kind = "custom"} : f32 {
  ^(%a: f32, %b: f32):
    %t = splat %a : tile<f32, [4]>
    %u = reduce %t {axis = 0, kind = "sum"} : f32
    yield %u
  }
  store %x, %s
  return
}
)";
  for (Target t : {Target::SM80, Target::SPIRV64}) {
    Outcome o = compile(text, t);
    EXPECT_FALSE(o.result);
    ASSERT_EQ(o.diags.size(), 1u);
    EXPECT_EQ(o.diags[0].code, DiagCode::Unsupported);
    EXPECT_EQ(o.diags[0].loc.line, 5u); // the splat
    EXPECT_NE(o.diags[0].message.find("'splat'"), std::string::npos) << o.diags[0].message;
  }
}

TEST(CodegenErrors, TooMuchSharedMemoryForTheTarget) {
  // A transpose of a [256, 256] f32 tile stages 256 KiB.
  const char *text = R"(kernel @big(%x: *f32) attributes {num_warps = 8} {
  %i = arange {end = 65536, start = 0} : tile<i32, [65536]>
  %xs = splat %x : tile<*f32, [65536]>
  %p = ptr_add %xs, %i : tile<*f32, [65536]>
  %v = load %p : tile<f32, [65536]>
  %t = reshape %v : tile<f32, [256, 256]>
  %u = permute %t {perm = [1, 0]} : tile<f32, [256, 256]>
  %w = reshape %u : tile<f32, [65536]>
  store %p, %w
  return
}
)";
  Outcome o = compile(text, Target::SM90a);
  EXPECT_FALSE(o.result);
  ASSERT_EQ(o.diags.size(), 1u);
  EXPECT_EQ(o.diags[0].code, DiagCode::Unsupported);
  EXPECT_NE(o.diags[0].message.find("262144 bytes of shared memory"), std::string::npos)
      << o.diags[0].message;
  // SPIR-V leaves the limit to the device (the runtime checks it at load time).
  Outcome s = compile(text, Target::SPIRV64);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->sharedBytes, 262144);
}

TEST(CodegenErrors, TilesTooLargeForTheThreads) {
  // 65536 elements over 32 threads: 2048 registers each.
  Outcome o = compile(R"(kernel @k(%x: *f32) attributes {num_warps = 1} {
  %v = constant {value = 1.0} : tile<f32, [65536]>
  %s = reduce %v {axis = 0, kind = "sum"} : f32
  store %x, %s
  return
}
)",
                      Target::SM80);
  EXPECT_FALSE(o.result);
  ASSERT_EQ(o.diags.size(), 1u);
  EXPECT_EQ(o.diags[0].code, DiagCode::Unsupported);
  EXPECT_EQ(o.diags[0].loc.line, 2u);
  EXPECT_NE(o.diags[0].message.find("2048 elements"), std::string::npos) << o.diags[0].message;
  EXPECT_NE(o.diags[0].hint.find("num_warps"), std::string::npos);
}

TEST(CodegenErrors, LaunchShapeAndEntry) {
  const char *text = R"(kernel @"my kernel"(%x: *f32) attributes {num_warps = 2} {
  %c = constant {value = 2.0} : f32
  store %x, %c
  return
}
)";
  for (Target t : {Target::SM80, Target::SM90, Target::SM90a, Target::SPIRV64}) {
    Outcome o = compile(text, t);
    ASSERT_TRUE(o.result) << targetName(t);
    EXPECT_EQ(o.result->entry, "my_kernel");
    EXPECT_EQ(o.result->numThreads, 64);
    EXPECT_EQ(o.result->sharedBytes, 0);
    EXPECT_NE(o.result->llvmIR.find("my_kernel"), std::string::npos);
    if (isNvptxTarget(t)) {
      EXPECT_NE(o.result->ptx.find(".target " + std::string(targetName(t))), std::string::npos);
      EXPECT_TRUE(o.result->spirv.empty());
    } else {
      EXPECT_TRUE(o.result->ptx.empty());
      EXPECT_FALSE(o.result->spirv.empty());
      EXPECT_NE(o.result->spirvAsm.find("LocalSize 64 1 1"), std::string::npos);
    }
  }
}

TEST(CodegenErrors, TargetNames) {
  for (Target t : {Target::SM80, Target::SM90, Target::SM90a, Target::SPIRV64})
    EXPECT_EQ(parseTarget(targetName(t)), t);
  EXPECT_EQ(parseTarget("sm_75"), std::nullopt);
  EXPECT_EQ(parseTarget("spirv"), std::nullopt);
  EXPECT_TRUE(isNvptxTarget(Target::SM90a));
  EXPECT_FALSE(isNvptxTarget(Target::SPIRV64));
}

} // namespace
} // namespace kiln::codegen
