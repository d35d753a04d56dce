//===- DiskCacheTest.cpp - Cache entries: atomic, checked, degrading gently ===//

#include "JitTestUtil.h"
#include "RuntimeTestUtil.h"
#include "jit/DiskCache.h"

namespace kiln::jit {
namespace {

using rt::test::ScopedEnv;
using rt::test::vaddBundle;
using test::contains;
using test::FifoInPlace;
using test::filesEndingIn;
using test::isRegularFile;
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
  return DiskCache::Expected{name, target, b.sourceHash, b.consts, b.numWarps, b.params};
}

/// A cache in a fresh temporary directory, logging into `captured`.
class DiskCacheInTempDir : public ::testing::Test {
protected:
  TempDir dir;
  Captured captured;
  Log log = captured.log();
  DiskCache cache{dir.path(), log};
};

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

TEST_F(DiskCacheInTempDir, StoresWholeFilesUnderTheKeyAndLeavesNoTemporaries) {
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

TEST_F(DiskCacheInTempDir, DamagedEntriesAreNotedOnceAndMissed) {
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

TEST_F(DiskCacheInTempDir, AnotherKernelUnderTheKeyIsDamage) {
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

TEST(DiskCache, AnotherSignatureOrOtherAssumptionsUnderTheKeyIsDamage) {
  // A variant compiled for other arguments: every launch would be refused against its
  // signature or its assumptions, so it must be rebuilt, not loaded.
  DiskCache::Expected otherType = expectedOf("vadd", rt::Target::SM90);
  otherType.params[3].dtype = DType::I64;
  DiskCache::Expected otherName = expectedOf("vadd", rt::Target::SM90);
  otherName.params[0].name = "a";
  DiskCache::Expected notPointer = expectedOf("vadd", rt::Target::SM90);
  notPointer.params[2].pointer = false;
  DiskCache::Expected fewer = expectedOf("vadd", rt::Target::SM90);
  fewer.params.pop_back();
  DiskCache::Expected multipleOf16 = expectedOf("vadd", rt::Target::SM90);
  multipleOf16.params[3].divisibility = 16;
  DiskCache::Expected aligned = expectedOf("vadd", rt::Target::SM90);
  aligned.params[0].divisibility = 16;
  const std::string signature = "it holds the signature vadd(x: *f32, y: *f32, out: *f32, n: i32), not ";
  const std::vector<std::pair<DiskCache::Expected, std::string>> cases = {
      {otherType, signature + "vadd(x: *f32, y: *f32, out: *f32, n: i64)"},
      {otherName, signature + "vadd(a: *f32,"},
      {notPointer, signature + "vadd(x: *f32, y: *f32, out: f32, n: i32)"},
      {fewer, signature + "vadd(x: *f32, y: *f32, out: *f32)"},
      {multipleOf16, "it holds code compiled with other parameter assumptions (multiples of 1 1 1 1, not 1 1 1 16)"},
      {aligned, "it holds code compiled with other parameter assumptions (multiples of 1 1 1 1, not 16 1 1 1)"},
  };
  Captured captured;
  Log log = captured.log();
  for (const auto &[expected, why] : cases) {
    TempDir dir;
    DiskCache cache(dir.path(), log);
    cache.storeBundle(kKey, vaddBundle());
    const size_t before = captured.messages.size();
    EXPECT_FALSE(cache.loadBundle(kKey, expected)) << why;
    ASSERT_EQ(captured.messages.size(), before + 1);
    EXPECT_EQ(captured.messages.back().first, KILN_JIT_NOTE);
    EXPECT_TRUE(contains(captured.messages.back().second, why)) << captured.messages.back().second;
    EXPECT_TRUE(contains(captured.messages.back().second, "compiling it again"));
    EXPECT_TRUE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90))) << "what the key asks for still loads";
  }
}

TEST_F(DiskCacheInTempDir, AFifoInPlaceOfAnEntryIsAMissNotAHang) {
  cache.storeBundle(kKey, vaddBundle()); // creates the subdirectory
  for (const char *ext : {"kbin", "tune"}) {
    std::string path = cache.pathOf(kKey, ext);
    std::filesystem::remove(path);
    FifoInPlace fifo(path);
    if (std::string(ext) == "kbin") {
      EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
      EXPECT_FALSE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
    } else {
      auto any = [](const std::string &) { return true; };
      EXPECT_FALSE(cache.loadText(kKey, "tune", any));
      EXPECT_FALSE(cache.loadText(kKey, "tune", any));
    }
    EXPECT_FALSE(fifo.fired()) << "a read of the " << ext << " entry blocked on the FIFO";
    ASSERT_FALSE(captured.messages.empty());
    EXPECT_EQ(captured.messages.back().first, KILN_JIT_NOTE);
    EXPECT_EQ(captured.messages.back().second, "the cache entry '" + path +
                                                   "' cannot be read (not a regular file (a FIFO)); compiling it again");

    // The rebuild's store replaces the FIFO with the entry.
    if (std::string(ext) == "kbin")
      cache.storeBundle(kKey, vaddBundle());
    else
      cache.storeText(kKey, "tune", "record\n");
    EXPECT_TRUE(isRegularFile(path)) << path;
  }
  ASSERT_EQ(captured.messages.size(), 2u) << "noted once per entry, never warned";
  EXPECT_TRUE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  EXPECT_EQ(cache.loadText(kKey, "tune", [](const std::string &) { return true; }), "record\n");
  EXPECT_EQ(filesEndingIn(dir.path(), "").size(), 2u) << "no temporary file left";
}

TEST_F(DiskCacheInTempDir, StaleTemporaryFilesAreRemovedWhenTheirSubdirectoryIsWritten) {
  namespace fs = std::filesystem;
  fs::create_directories(dir.file("ab"));
  fs::create_directories(dir.file("cd"));
  const auto old = fs::file_time_type::clock::now() - DiskCache::kStaleTemporaryAge - std::chrono::minutes(5);
  const auto recent = fs::file_time_type::clock::now() - DiskCache::kStaleTemporaryAge + std::chrono::minutes(5);
  auto make = [&](const std::string &path, fs::file_time_type when) {
    test::writeFile(path, "partial");
    fs::last_write_time(path, when);
    return path;
  };
  // A killed writer's leftovers, a writer still at work, an old entry, and a stale
  // temporary file in a subdirectory this store does not touch.
  std::string stale = make(cache.pathOf(kKey, "kbin") + ".tmp-4242-0", old);
  std::string staleTune = make(dir.file("ab/" + std::string(64, 'a') + ".tune.tmp-4242-7"), old);
  std::string fresh = make(cache.pathOf(kKey, "kbin") + ".tmp-4243-0", recent);
  std::string oldEntry = make(dir.file("ab/" + std::string(64, 'b') + ".kbin"), old);
  std::string elsewhere = make(dir.file("cd/" + std::string(64, 'c') + ".kbin.tmp-4242-1"), old);

  cache.storeBundle(kKey, vaddBundle());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(staleTune));
  EXPECT_TRUE(fs::exists(fresh)) << "younger than kStaleTemporaryAge: perhaps still being written";
  EXPECT_TRUE(fs::exists(oldEntry)) << "entries are never evicted";
  EXPECT_TRUE(fs::exists(elsewhere)) << "only the subdirectory being written is looked at";
  EXPECT_TRUE(cache.loadBundle(kKey, expectedOf("vadd", rt::Target::SM90)));
  EXPECT_TRUE(captured.messages.empty());
}

TEST_F(DiskCacheInTempDir, AnEntryThatCannotBeReplacedIsWarnedAboutAlone) {
  // A directory where the entry belongs: this entry cannot be written, every other can.
  std::string path = cache.pathOf(kKey, "kbin");
  std::filesystem::create_directories(path + "/inside");
  cache.storeBundle(kKey, vaddBundle());
  cache.storeBundle(kKey, vaddBundle());
  ASSERT_EQ(captured.messages.size(), 1u) << "warned once";
  EXPECT_EQ(captured.messages[0].first, KILN_JIT_WARNING);
  EXPECT_TRUE(contains(captured.messages[0].second, "the cache entry '" + path + "' cannot be written (Is a directory"))
      << captured.messages[0].second;
  EXPECT_FALSE(contains(captured.messages[0].second, "the kernel cache in")) << "the cache itself is writable";

  const std::string otherKey = "ab" + std::string(62, '1');
  cache.storeBundle(otherKey, vaddBundle());
  EXPECT_TRUE(cache.loadBundle(otherKey, expectedOf("vadd", rt::Target::SM90)));
  EXPECT_EQ(captured.messages.size(), 1u);
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

TEST_F(DiskCacheInTempDir, TextEntriesAreCheckedBeforeUse) {
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
