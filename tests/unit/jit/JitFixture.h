//===- JitFixture.h - A JIT on the stand-in CUDA driver -----------*- C++ -*-===//
//
// Each test gets a runtime on FakeCuda.cpp (through KILN_CUDA_LIBRARY), an empty cache
// directory, and a JIT whose notes and warnings are collected.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "JitTestUtil.h"
#include "RuntimeTestUtil.h"
#include "jit/Jit.h"

#include <memory>

namespace kiln::jit::test {

class JitOnFakeCuda : public ::testing::Test {
protected:
  void SetUp() override {
    fake.reset();
    runtime = std::make_unique<Runtime>(Runtime::Options{Backend::Cuda, 0});
  }

  /// A fresh JIT, as a new process would have: nothing compiled in memory.
  std::unique_ptr<Jit> makeJit(Jit::Options options = {}) {
    if (!options.cache_dir)
      options.cache_dir = cache.path();
    options.log = [this](kiln_jit_severity s, const std::string &m) { messages.emplace_back(s, m); };
    return std::make_unique<Jit>(*runtime, options);
  }

  std::vector<std::string> logged(kiln_jit_severity severity) const {
    std::vector<std::string> out;
    for (const auto &[s, m] : messages)
      if (s == severity)
        out.push_back(m);
    return out;
  }

  std::vector<std::string> bundles() const { return filesEndingIn(cache.path(), ".kbin"); }

  rt::test::ScopedEnv driver{"KILN_CUDA_LIBRARY", KILN_FAKE_CUDA_PATH};
  rt::test::FakeCuda fake;
  TempDir cache;
  std::unique_ptr<Runtime> runtime;
  std::vector<std::pair<kiln_jit_severity, std::string>> messages;
};

/// For kernels with three @autotune configs tagged by a const TAG of 7001, 7002 and 7003
/// (the value appears in the PTX): the stand-in driver times their launches at 0.5,
/// 0.125 and 0.75 ms, so the config tagged 7002 is the fastest.
class ThreeTimedConfigs : public JitOnFakeCuda {
protected:
  void SetUp() override {
    JitOnFakeCuda::SetUp();
    fake.setLaunchMs("7001", 0.5);
    fake.setLaunchMs("7002", 0.125);
    fake.setLaunchMs("7003", 0.75);
  }
};

} // namespace kiln::jit::test
