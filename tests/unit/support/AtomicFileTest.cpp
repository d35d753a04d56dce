//===- AtomicFileTest.cpp - Replacing files all at once -------------------===//

#include "support/AtomicFile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-atomic-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::span<const uint8_t> bytesOf(const std::string &s) {
  return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

TEST(AtomicFile, WritesTheConcatenationAndReplacesWhole) {
  TempDir dir;
  std::string path = (dir.path / "f").string();
  std::string a = "head:", b = "body";
  EXPECT_EQ(writeFileAtomically(path, {bytesOf(a), bytesOf(b)}), "");
  EXPECT_EQ(readFile(path), "head:body");
  EXPECT_EQ(writeFileAtomically(path, bytesOf("x")), "");
  EXPECT_EQ(readFile(path), "x");
  EXPECT_EQ(dir.entries(), 1u) << "no temporary file is left behind";
}

TEST(AtomicFile, FailuresNameTheFileAndLeaveNothing) {
  TempDir dir;
  std::string missing = (dir.path / "no/such/dir/f").string();
  std::string why = writeFileAtomically(missing, bytesOf("x"));
  EXPECT_EQ(why, "cannot write '" + missing + "': No such file or directory");
  // A directory in the way: the temporary file is written, the rename fails.
  fs::create_directory(dir.path / "d");
  why = writeFileAtomically((dir.path / "d").string(), bytesOf("x"));
  EXPECT_EQ(why.rfind("cannot replace '" + (dir.path / "d").string() + "'", 0), 0u) << why;
  EXPECT_EQ(dir.entries(), 1u) << "no temporary file is left behind";
}

TEST(AtomicFile, StagedFilesReplaceOnlyWhenCommitted) {
  TempDir dir;
  std::string a = (dir.path / "a").string(), b = (dir.path / "b").string(), error;
  ASSERT_EQ(writeFileAtomically(a, bytesOf("old a")), "");
  ASSERT_EQ(writeFileAtomically(b, bytesOf("old b")), "");
  {
    std::optional<StagedFile> sa = StagedFile::stage(a, {bytesOf("new a")}, {}, error);
    ASSERT_TRUE(sa) << error;
    EXPECT_EQ(readFile(a), "old a") << "staging leaves the file as it was";
    // A second file that cannot be written: the first is dropped, not committed.
    EXPECT_FALSE(StagedFile::stage((dir.path / "no/such/dir/c").string(), {bytesOf("c")}, {}, error));
    EXPECT_EQ(error, "cannot write '" + (dir.path / "no/such/dir/c").string() + "': No such file or directory");
  }
  EXPECT_EQ(readFile(a), "old a");
  EXPECT_EQ(dir.entries(), 2u) << "a staged file never committed leaves no temporary file";
  std::optional<StagedFile> sa = StagedFile::stage(a, {bytesOf("new a")}, {}, error);
  std::optional<StagedFile> sb = StagedFile::stage(b, {bytesOf("new b")}, {}, error);
  ASSERT_TRUE(sa && sb) << error;
  EXPECT_EQ(sa->commit(), "");
  EXPECT_EQ(sb->commit(), "");
  EXPECT_EQ(readFile(a), "new a");
  EXPECT_EQ(readFile(b), "new b");
  EXPECT_EQ(sa->commit(), "cannot replace '" + a + "': nothing staged");
  EXPECT_EQ(dir.entries(), 2u);
}

/// The temporary files beside `dir`'s files (names with ".tmp-").
std::vector<fs::path> temporaries(const TempDir &dir) {
  std::vector<fs::path> found;
  for (const auto &e : fs::directory_iterator(dir.path))
    if (e.path().filename().string().find(".tmp-") != std::string::npos)
      found.push_back(e.path());
  return found;
}

TEST(AtomicFile, CommitAllPutsBackWhatWasReplacedWhenALaterFileFails) {
  TempDir dir;
  fs::create_directory(dir.path / "sub");
  std::string a = (dir.path / "a").string(), b = (dir.path / "sub/b").string(), error;
  ASSERT_EQ(writeFileAtomically(a, bytesOf("old a")), "");
  std::vector<StagedFile> staged;
  staged.push_back(*StagedFile::stage(a, {bytesOf("new a")}, {}, error));
  staged.push_back(*StagedFile::stage(b, {bytesOf("new b")}, {}, error));
  // b's folder goes away after staging: nothing checkable stands in the way, so a is
  // replaced first, then b's rename fails and a must be put back.
  fs::remove_all(dir.path / "sub");
  std::string why = commitAll(staged);
  EXPECT_EQ(why.rfind("cannot replace '" + b + "'", 0), 0u) << why;
  EXPECT_EQ(readFile(a), "old a");
  staged.clear();
  EXPECT_EQ(dir.entries(), 1u) << "no temporary file is left behind";
}

TEST(AtomicFile, CommitAllChecksEveryFileBeforeReplacingAny) {
  TempDir dir;
  fs::create_directory(dir.path / "d");
  std::string a = (dir.path / "a").string(), d = (dir.path / "d").string(), error;
  ASSERT_EQ(writeFileAtomically(a, bytesOf("old a")), "");
  std::vector<StagedFile> staged;
  staged.push_back(*StagedFile::stage(a, {bytesOf("new a")}, {}, error));
  staged.push_back(*StagedFile::stage(d, {bytesOf("new d")}, {}, error));
  EXPECT_EQ(staged[1].checkReplaceable(), "cannot replace '" + d + "': Is a directory");
  EXPECT_EQ(commitAll(staged), "cannot replace '" + d + "': Is a directory");
  EXPECT_EQ(readFile(a), "old a");
  staged.clear();
  EXPECT_EQ(dir.entries(), 2u) << "no temporary file is left behind";
}

TEST(AtomicFile, CommitAllReplacesEveryFile) {
  TempDir dir;
  std::string a = (dir.path / "a").string(), b = (dir.path / "b").string(), error;
  ASSERT_EQ(writeFileAtomically(a, bytesOf("old a")), "");
  std::vector<StagedFile> staged;
  staged.push_back(*StagedFile::stage(a, {bytesOf("new a")}, {}, error));
  staged.push_back(*StagedFile::stage(b, {bytesOf("new b")}, {}, error)); // a new name
  EXPECT_EQ(commitAll(staged), "");
  EXPECT_EQ(readFile(a), "new a");
  EXPECT_EQ(readFile(b), "new b");
  staged.clear();
  EXPECT_EQ(dir.entries(), 2u) << "the old contents are not left behind";
}

TEST(AtomicFile, AStaleTemporaryFileIsSkipped) {
  // A writer killed between creating its temporary file and renaming it leaves the
  // file; in a container the next process may have the same id and counter. Its
  // name is skipped, not reported as an unwritable folder.
  TempDir dir;
  std::string path = (dir.path / "entry").string(), error;
  std::optional<StagedFile> first = StagedFile::stage(path, {bytesOf("1")}, {}, error);
  ASSERT_TRUE(first) << error;
  std::vector<fs::path> tmp = temporaries(dir);
  ASSERT_EQ(tmp.size(), 1u);
  // The name ends in "-<counter>": occupy the next ten names the way a killed writer would.
  std::string name = tmp[0].string();
  size_t dash = name.rfind('-');
  unsigned next = static_cast<unsigned>(std::stoul(name.substr(dash + 1))) + 1;
  for (unsigned n = next; n < next + 10; ++n)
    std::ofstream(name.substr(0, dash + 1) + std::to_string(n)) << "stale";
  EXPECT_EQ(writeFileAtomically(path, bytesOf("2")), "");
  EXPECT_EQ(readFile(path), "2");
}

TEST(AtomicFile, UpdateInPlaceFollowsSymlinksAndKeepsTheMode) {
  TempDir dir;
  fs::path target = dir.path / "data.npy", link = dir.path / "link.npy";
  std::ofstream(target) << "old";
  ::chmod(target.c_str(), 0600);
  fs::create_symlink(target, link);
  AtomicWriteOptions inPlace;
  inPlace.updateInPlace = true;
  EXPECT_EQ(writeFileAtomically(link.string(), bytesOf("new"), inPlace), "");
  EXPECT_TRUE(fs::is_symlink(link)) << "the link stays a link";
  EXPECT_EQ(readFile(target), "new");
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Without the option the name itself is replaced by a fresh file.
  EXPECT_EQ(writeFileAtomically(link.string(), bytesOf("plain")), "");
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(readFile(target), "new");
}

TEST(AtomicFile, ConcurrentWritersNeverInterleave) {
  TempDir dir;
  std::string path = (dir.path / "shared").string();
  const int writers = 6;
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string text(1 << 20, static_cast<char>('a' + w));
      for (int i = 0; i < 5; ++i)
        if (!writeFileAtomically(path, bytesOf(text)).empty())
          _exit(1);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::string result = readFile(path);
  ASSERT_EQ(result.size(), size_t(1) << 20);
  EXPECT_EQ(result.find_first_not_of(result[0]), std::string::npos) << "one writer's file, whole";
  EXPECT_EQ(dir.entries(), 1u);
}

} // namespace
} // namespace kiln
