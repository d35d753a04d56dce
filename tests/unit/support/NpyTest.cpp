//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
#include "support/Npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace kiln;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("kiln-npy-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(Npy, WriteThenReadRoundTrips) {
  NpyArray a{"<f4", {2, 3}, {}};
  float values[6] = {1, -2, 3.5f, 0, 1e30f, -0.0f};
  a.data.resize(sizeof values);
  std::memcpy(a.data.data(), values, sizeof values);
  std::string path = tempPath("rt.npy"), error;
  ASSERT_TRUE(writeNpyAtomic(path, a, error)) << error;
  auto b = readNpy(path, error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->descr, "<f4");
  EXPECT_EQ(b->shape, (Shape{2, 3}));
  EXPECT_EQ(b->data, a.data);
  // The header is padded so the data starts at a multiple of 64 bytes.
  EXPECT_EQ(std::filesystem::file_size(path) - a.data.size(), 64u * ((std::filesystem::file_size(path) - a.data.size()) / 64));
  std::filesystem::remove(path);
}

TEST(Npy, ReadsWhatNumPyWrites) {
  // np.save of np.arange(3, dtype=np.int32), format 1.0.
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header;
  int32_t v[3] = {0, 1, 2};
  bytes.append(reinterpret_cast<char *>(v), sizeof v);
  std::string path = tempPath("np.npy"), error;
  std::ofstream(path, std::ios::binary) << bytes;
  auto a = readNpy(path, error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->shape, (Shape{3}));
  EXPECT_TRUE(npyDescrMatches(a->descr, DType::I32));
  EXPECT_FALSE(npyDescrMatches(a->descr, DType::U32));
  std::filesystem::remove(path);
}

TEST(Npy, RejectsMalformedFilesWithReasons) {
  std::string path = tempPath("bad.npy"), error;
  std::ofstream(path, std::ios::binary) << "not numpy at all";
  EXPECT_FALSE(readNpy(path, error));
  EXPECT_NE(error.find("not a .npy file"), std::string::npos);

  std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n";
  std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << char(0)
                                        << header << std::string(16, '\0');
  EXPECT_FALSE(readNpy(path, error));
  EXPECT_NE(error.find("Fortran"), std::string::npos);

  header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }\n";
  std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << char(0)
                                        << header << std::string(16, '\0');
  EXPECT_FALSE(readNpy(path, error));
  EXPECT_NE(error.find("shorter"), std::string::npos);

  EXPECT_FALSE(readNpy(tempPath("does-not-exist.npy"), error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Npy, ShapesMustBeTuples) {
  std::string path = tempPath("shape.npy"), error;
  for (std::string shape : {"''", "5", "'x'", "(3,"}) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
    std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << char(0)
                                          << header << std::string(16, '\0');
    EXPECT_FALSE(readNpy(path, error)) << shape;
    EXPECT_NE(error.find("malformed"), std::string::npos) << shape << ": " << error;
  }
  std::filesystem::remove(path);
}

TEST(Npy, AClaimedSizeIsCheckedBeforeItIsAllocated) {
  // 2^36 float32 elements claimed (256 GiB), 16 bytes present: refused at once, not
  // after allocating what the header says.
  std::string path = tempPath("huge.npy"), error;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 1048576), }\n";
  std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8) << char(header.size()) << char(0)
                                        << header << std::string(16, '\0');
  EXPECT_FALSE(readNpy(path, error));
  EXPECT_NE(error.find("shorter than its header says"), std::string::npos) << error;
  std::filesystem::remove(path);
}

TEST(Npy, DescrsOfEveryDType) {
  EXPECT_TRUE(npyDescrMatches("|V2", DType::BF16));
  EXPECT_FALSE(npyDescrMatches("<f2", DType::BF16));
  EXPECT_TRUE(npyDescrMatches("<f2", DType::F16));
  EXPECT_TRUE(npyDescrMatches("|V1", DType::F8E4M3));
  EXPECT_TRUE(npyDescrMatches("|b1", DType::Bool));
  EXPECT_TRUE(npyDescrMatches("<f8", DType::F64));
  EXPECT_FALSE(npyDescrMatches("<f8", DType::F32));
  EXPECT_EQ(npyDescrDescription("<f8"), "float64 ('<f8')");
}

} // namespace
