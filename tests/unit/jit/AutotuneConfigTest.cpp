//===- AutotuneConfigTest.cpp - @autotune configs handed out by the frontend ===//
//
// The JIT compiles one specialization per config; these tests check what the frontend
// lists (values as -D text that reads back exactly, launch settings, the key) and that
// a config applied to SemaOptions specializes the kernel as written.
//
//===----------------------------------------------------------------------===//
#include "frontend/Autotune.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln {
namespace {

struct Listed {
  bool ok = false;
  std::optional<KernelAutotune> autotune;
  std::string errors;
};

Listed list(const std::string &source, const std::string &kernel, SemaOptions options = {}) {
  Listed out;
  ir::Module module;
  uint32_t file = module.sources->addBuffer("tuned.kiln", source);
  std::ostringstream errors;
  DiagnosticEngine diags(*module.sources, errors);
  out.ok = listAutotuneConfigs(file, module, diags, options, kernel, out.autotune);
  out.errors = errors.str();
  return out;
}

const char *kTuned = R"(const TILE = 32;
@autotune(configs = [{BLOCK: 64, num_warps: 2}, {BLOCK: 2 * TILE, SCALE: 1.0, num_stages: 3}, {SCALE: 0.1}],
          key = [n, x])
kernel tuned(x: *f32, n: i32, const BLOCK: i32 = 128, const SCALE: f32 = 2.0) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, mask = offs < n) * SCALE, mask = offs < n);
}
kernel plain(x: *f32) {
    store(x, 1.0);
}
)";

TEST(AutotuneConfigs, ListsValuesLaunchSettingsAndKey) {
  Listed l = list(kTuned, "tuned");
  ASSERT_TRUE(l.ok) << l.errors;
  ASSERT_TRUE(l.autotune);
  const auto &configs = l.autotune->configs;
  ASSERT_EQ(configs.size(), 3u);
  EXPECT_EQ(configs[0].text(), "{BLOCK: 64, num_warps: 2}");
  EXPECT_EQ(configs[1].text(), "{BLOCK: 64, SCALE: 1.0, num_stages: 3}") << "evaluated, and a float stays a float";
  EXPECT_EQ(configs[2].text(), "{SCALE: 0.1}") << "the shortest text that reads back exactly";
  EXPECT_EQ(configs[0].numWarps, 2);
  EXPECT_FALSE(configs[0].numStages);
  EXPECT_EQ(configs[1].numStages, 3);
  EXPECT_EQ(l.autotune->key, (std::vector<std::string>{"n", "x"}));
  EXPECT_EQ(l.autotune->loc.line, 2u);
}

TEST(AutotuneConfigs, NoneForAPlainOrUnknownKernel) {
  Listed plain = list(kTuned, "plain");
  EXPECT_TRUE(plain.ok) << plain.errors;
  EXPECT_FALSE(plain.autotune);
  Listed unknown = list(kTuned, "nope");
  EXPECT_TRUE(unknown.ok) << "compiling it reports the unknown name";
  EXPECT_FALSE(unknown.autotune);
}

TEST(AutotuneConfigs, ErrorsInTheProgramAreReported) {
  Listed l = list("@autotune(configs = [{BLOCK: 64, num_warps: 3}], key = [n])\n"
                  "kernel k(n: i32, const BLOCK: i32 = 1) {}\n",
                  "k");
  EXPECT_FALSE(l.ok);
  EXPECT_FALSE(l.autotune);
  EXPECT_NE(l.errors.find("tuned.kiln:1:45: error[E0104]: num_warps must be a power of two in 1..32"),
            std::string::npos)
      << l.errors;
}

TEST(AutotuneConfigs, AppliedConfigSpecializesTheKernel) {
  Listed l = list(kTuned, "tuned");
  ASSERT_TRUE(l.autotune);
  SemaOptions base;
  base.kernel = "tuned";
  for (size_t i = 0; i < 2; ++i) {
    ir::Module module;
    uint32_t file = module.sources->addBuffer("tuned.kiln", kTuned);
    std::ostringstream errors;
    DiagnosticEngine diags(*module.sources, errors);
    ASSERT_TRUE(compileToTileIR(file, module, diags, l.autotune->configs[i].apply(base))) << errors.str();
    const ir::Kernel &k = *module.findKernel("tuned");
    EXPECT_EQ(k.numWarps, i == 0 ? 2 : 4);
    EXPECT_EQ(k.numStages, i == 0 ? 1 : 3);
    ASSERT_EQ(k.constValues.size(), 2u);
    EXPECT_EQ(std::get<int64_t>(k.constValues[0].second), 64);
    EXPECT_EQ(std::get<double>(k.constValues[1].second), i == 0 ? 2.0 : 1.0);
  }
}

TEST(AutotuneConfigs, LaunchSettingOverridesAreChecked) {
  ir::Module module;
  uint32_t file = module.sources->addBuffer("k.kiln", "kernel k(x: *f32) { store(x, 1.0); }\n");
  std::ostringstream errors;
  DiagnosticEngine diags(*module.sources, errors);
  SemaOptions options;
  options.numWarps = 6;
  EXPECT_FALSE(compileToTileIR(file, module, diags, options));
  EXPECT_NE(errors.str().find("error[E0104]: num_warps must be a power of two in 1..32, got 6"), std::string::npos)
      << errors.str();
}

} // namespace
} // namespace kiln
