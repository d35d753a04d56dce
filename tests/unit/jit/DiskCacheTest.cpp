//===- DiskCacheTest.cpp - Cache entries: atomic, checked, degrading gently ===//

#include "JitTestUtil.h"
#include "RuntimeTestUtil.h"
#include "jit/DiskCache.h"

namespace kiln::jit {
namespace {

using rt::test::ScopedEnv;
using rt::test::vaddBundle;
using test::contains;
using test::filesEndingIn;
using test::TempDir;

/// Collects what the cache logs.
struct Captured {
  std::vector<std::pair<kiln_jit_severity, std::string>> messages;
  Log log() {
    return Log{[](void *self, kiln_jit_severity s, const char *m) {
                 static_cast<Captured *>(self)->messages.emplace_back(s, m);
               },
               this};
  }
};

const std::string kKey = "ab" + std::string(62, '0');

/// What the key of vaddBundle() asks for, for kernel `name` on `target`.
DiskCache::Expected expectedOf(const std::string &name, rt::Target target) {
  rt::Bundle b = vaddBundle();
  return DiskCache::Expected{name, target, b.sourceHash, b.consts, b.numWarps};
}

TEST(DiskCache, DirectoryFromTheEnvironment) {
  {
    ScopedEnv dir("KILN_CACHE_DIR", "/tmp/kiln-here");
    EXPECT_EQ(DiskCache::directoryFromEnvironment(), "/tmp/kiln-here");
  }
  {
    ScopedEnv dir("KILN_CACHE_DIR", "");
    EXPECT_EQ(DiskCache::directoryFromEnvironment(), "") << "set but empty turns the disk cache off";
  }
  ScopedEnv unset("KILN_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DiskCache::directoryFromEnvironment(), "/xdg/kiln");
  }
  ScopedEnv noXdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(DiskCache::directoryFromEnvironment(), "/home/someone/.cache/kiln");
  }
  ScopedEnv noHome("HOME", nullptr);
  EXPECT_EQ(DiskCache::directoryFromEnvironment(), "");
}

TEST(DiskCache, StoresWholeFilesUnderTheKeyAndLeavesNoTemporaries) {
  TempDir dir;
  Captured captured;
  Log log = captured.log();
  DiskCache cache(dir.path(), log);
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90))) << "empty cache: a miss";
  cache.storeBundle(kKey, vaddBundle());
  EXPECT_EQ(cache.pathOf(kKey, "kbin"), dir.path() + "/ab/" + kKey + ".kbin");
  EXPECT_EQ(filesEndingIn(dir.path(), ""), std::vector<std::string>{cache.pathOf(kKey, "kbin")});
  std::optional<rt::Bundle> back = cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, vaddBundle());
  cache.storeBundle(kKey, vaddBundle()); // replacing an entry is a rename over it
  EXPECT_EQ(filesEndingIn(dir.path(), "").size(), 1u);
  EXPECT_TRUE(captured.messages.empty());
}

TEST(DiskCache, DamagedEntriesAreNotedOnceAndMissed) {
  TempDir dir;
  Captured captured;
  Log log = captured.log();
  DiskCache cache(dir.path(), log);
  cache.storeBundle(kKey, vaddBundle());
  std::string path = cache.pathOf(kKey, "kbin");
  std::string bytes = test::readFile(path);

  test::writeFile(path, bytes.substr(0, bytes.size() / 2)); // a copy cut short
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  ASSERT_EQ(captured.messages.size(), 1u) << "reported once, not on every lookup";
  EXPECT_EQ(captured.messages[0].first, KILN_JIT_NOTE);
  EXPECT_TRUE(contains(captured.messages[0].second, "the cache entry '" + path + "' is damaged (truncated"))
      << captured.messages[0].second;
  EXPECT_TRUE(contains(captured.messages[0].second, "compiling it again"));

  cache.storeBundle(kKey, vaddBundle()); // the rebuild
  EXPECT_TRUE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));

  TempDir other;
  DiskCache flipped(other.path(), log);
  flipped.storeBundle(kKey, vaddBundle());
  std::string damaged = bytes;
  damaged[damaged.size() - 3] ^= 0x20; // one bit of the PTX
  test::writeFile(flipped.pathOf(kKey, "kbin"), damaged);
  EXPECT_FALSE(flipped.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  ASSERT_EQ(captured.messages.size(), 2u);
  EXPECT_TRUE(contains(captured.messages[1].second, "checksum mismatch")) << captured.messages[1].second;
}

TEST(DiskCache, AnotherKernelUnderTheKeyIsDamage) {
  TempDir dir;
  Captured captured;
  Log log = captured.log();
  DiskCache cache(dir.path(), log);
  cache.storeBundle(kKey, vaddBundle());
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("softmax", rt::Target::SM90)));
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM80)));
  ASSERT_EQ(captured.messages.size(), 1u);
  EXPECT_TRUE(contains(captured.messages[0].second, "it holds kernel 'vadd', not 'softmax'"))
      << captured.messages[0].second;

  // The same kernel and target, compiled from other text or with other consts.
  DiskCache::Expected otherText = expectedOf("vadd", rt::Target::SM90);
  otherText.sourceHash = std::string(64, 'f');
  DiskCache::Expected otherConsts = expectedOf("vadd", rt::Target::SM90);
  otherConsts.consts.push_back(rt::ConstValue{"BLOCK", int64_t(128)});
  for (const auto &[expected, why] : {std::pair{otherText, "it holds code compiled from another program text"},
                                      std::pair{otherConsts, "it holds code compiled with other const values"}}) {
    TempDir otherDir;
    DiskCache other(otherDir.path(), log);
    other.storeBundle(kKey, vaddBundle());
    const size_t before = captured.messages.size();
    EXPECT_FALSE(other.loadBundle(kKey, expected));
    ASSERT_EQ(captured.messages.size(), before + 1);
    EXPECT_TRUE(contains(captured.messages.back().second, why)) << captured.messages.back().second;
    EXPECT_TRUE(other.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  }
}

TEST(DiskCache, UnwritableDirectoryWarnsOnceAndCarriesOn) {
  TempDir dir;
  test::writeFile(dir.file("file"), "not a directory");
  Captured captured;
  Log log = captured.log();
  DiskCache cache(dir.file("file") + "/cache", log); // even root cannot create this
  cache.storeBundle(kKey, vaddBundle());
  cache.storeText(kKey, "tune", "x");
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  ASSERT_EQ(captured.messages.size(), 1u);
  EXPECT_EQ(captured.messages[0].first, KILN_JIT_WARNING);
  EXPECT_TRUE(contains(captured.messages[0].second, "the kernel cache in '" + dir.file("file") +
                                                        "/cache' cannot be written (cannot create"))
      << captured.messages[0].second;
  EXPECT_TRUE(contains(captured.messages[0].second, "compiled in memory only"));
}

TEST(DiskCache, DisabledCacheNeitherReadsNorWrites) {
  Captured captured;
  Log log = captured.log();
  DiskCache cache("", log);
  EXPECT_FALSE(cache.enabled());
  cache.storeBundle(kKey, vaddBundle());
  EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  EXPECT_TRUE(captured.messages.empty());
}

TEST(DiskCache, TextEntriesAreCheckedBeforeUse) {
  TempDir dir;
  Captured captured;
  Log log = captured.log();
  DiskCache cache(dir.path(), log);
  auto sound = [](const std::string &t) { return t.rfind("good", 0) == 0; };
  cache.storeText(kKey, "tune", "good record\n");
  EXPECT_EQ(cache.loadText(kKey, "tune", sound), "good record\n");
  test::writeFile(cache.pathOf(kKey, "tune"), "garbage");
  EXPECT_FALSE(cache.loadText(kKey, "tune", sound));
  ASSERT_EQ(captured.messages.size(), 1u);
  EXPECT_TRUE(contains(captured.messages[0].second, "is damaged")) << captured.messages[0].second;
}

} // namespace
} // namespace kiln::jit
