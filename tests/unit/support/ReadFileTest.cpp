//===- ReadFileTest.cpp - Whole input files -------------------------------===//
#include "support/ReadFile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
  // A device that never ends stops at the limit instead of filling memory.
  EXPECT_FALSE(readWholeFile("/dev/zero", error, 1 << 20));
  EXPECT_EQ(error, "more than 1048576 bytes");
}

} // namespace
} // namespace kiln
