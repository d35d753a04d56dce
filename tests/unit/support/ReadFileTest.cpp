//===- ReadFileTest.cpp - Whole input files -------------------------------===//
#include "support/ReadFile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(ReadFile, ReadsAWholeFile) {
  fs::path path = fs::temp_directory_path() / ("kiln-read-" + std::to_string(::getpid()));
  std::string text(200000, 'k');
  std::ofstream(path, std::ios::binary) << text;
  std::string error;
  std::optional<std::string> read = readWholeFile(path.string(), error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(*read, text);
  EXPECT_FALSE(readWholeFile(path.string(), error, 199999));
  EXPECT_EQ(error, "more than 199999 bytes");
  fs::remove(path);
}

TEST(ReadFile, RefusesWhatIsNotAFile) {
  std::string error;
  EXPECT_FALSE(readWholeFile(fs::temp_directory_path().string(), error));
  EXPECT_EQ(error, "Is a directory");
  EXPECT_FALSE(readWholeFile("/nonexistent/kiln/file.kiln", error));
  EXPECT_EQ(error, "No such file or directory");
  // A device that never ends is refused before a byte is read.
  EXPECT_FALSE(readWholeFile("/dev/zero", error, 1 << 20));
  EXPECT_EQ(error, "not a regular file (a character device)");
}

TEST(ReadFile, RefusesAFifoWithoutBlocking) {
  // With no writer, opening a FIFO for reading would wait forever; a hang here fails
  // the test by its CTest timeout.
  fs::path path = fs::temp_directory_path() / ("kiln-fifo-" + std::to_string(::getpid()));
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::string error;
  EXPECT_FALSE(readWholeFile(path.string(), error));
  EXPECT_EQ(error, "not a regular file (a FIFO)");
  EXPECT_EQ(openRegularFile(path.string(), error), -1);
  fs::remove(path);
}

TEST(ReadFile, FollowsASymbolicLinkToAFile) {
  fs::path dir = fs::temp_directory_path() / ("kiln-link-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "target", std::ios::binary) << "kernel";
  fs::create_symlink("target", dir / "link");
  std::string error;
  std::optional<std::string> read = readWholeFile((dir / "link").string(), error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(*read, "kernel");
  fs::remove_all(dir);
}

} // namespace
} // namespace kiln
