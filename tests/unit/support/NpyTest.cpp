//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
#include "support/Npy.h"
#include "support/NpyHeader.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace kiln;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("kiln-npy-" + std::to_string(::getpid()) + "-" + name)).string();
}

/// A .npy file of format `major`.0 holding `header` as it is (no padding added) and
/// then `data`.
std::string npyBytes(const std::string &header, int major = 1, const std::string &data = "") {
  std::string bytes = std::string("\x93NUMPY", 6) + char(major) + char(0);
  const size_t lengthBytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lengthBytes; ++i)
    bytes += char((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

/// readNpy of a file holding `bytes`; the error, or "" when it read the file.
std::string readError(const std::string &bytes, std::optional<NpyArray> *array = nullptr) {
  std::string path = tempPath("case.npy"), error;
  std::ofstream(path, std::ios::binary) << bytes;
  std::optional<NpyArray> read = readNpy(path, error);
  std::filesystem::remove(path);
  if (array)
    *array = read;
  return read ? "" : error;
}

/// parseNpyHeader of `header` in format `major`.0; the error, or "" when it parsed.
std::string headerError(const std::string &header, int major = 1, NpyHeader *parsed = nullptr) {
  std::string error;
  std::optional<NpyHeader> result = parseNpyHeader(header, major, error);
  if (parsed && result)
    *parsed = *result;
  return result ? "" : error;
}

/// A header with `shape` spelled as given and the other keys as NumPy writes them.
std::string withShape(const std::string &shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
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

TEST(NpyHeader, ARepeatedKeyTakesItsLastValue) {
  // As in a Python dict: NumPy reads this file as float64, and so must Kiln.
  std::optional<NpyArray> array;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'descr': '<f8', }\n";
  ASSERT_EQ(readError(npyBytes(header, 1, std::string(24, '\1')), &array), "");
  EXPECT_EQ(array->descr, "<f8");
  EXPECT_EQ(array->shape, (Shape{3}));
  EXPECT_EQ(array->data.size(), 24u);

  NpyHeader parsed;
  ASSERT_EQ(headerError("{'shape': (1,), 'fortran_order': True, 'descr': '<i4', 'shape': (2, 5), "
                        "'fortran_order': False}",
                        1, &parsed),
            "");
  EXPECT_EQ(parsed.shape, (Shape{2, 5}));
  EXPECT_FALSE(parsed.fortranOrder);
  // The value replaced may be any literal; Python evaluates it all the same.
  EXPECT_EQ(headerError("{'shape': 1.5e3, 'shape': {1, 2}, 'shape': -1+2j, 'shape': ..., 'shape': set(), "
                        "'shape': (2,), 'descr': '<f4', 'fortran_order': False}"),
            "");
  EXPECT_NE(headerError("{'shape': {[1]: 2}, 'shape': (2,), 'descr': '<f4', 'fortran_order': False}")
                .find("cannot be hashed"),
            std::string::npos);
  EXPECT_NE(headerError("{'shape': 1+2, 'shape': (2,), 'descr': '<f4', 'fortran_order': False}")
                .find("not followed by an imaginary number"),
            std::string::npos);
}

TEST(NpyHeader, TheKeysAreExactlyDescrFortranOrderAndShape) {
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': False}"), "malformed .npy header: missing key 'shape'");
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}"),
            "malformed .npy header: unexpected key 'extra' (a header has exactly 'descr', 'fortran_order' and "
            "'shape')");
  EXPECT_NE(headerError("{'descr': '<f4', 'fortran_order': False, 'shape': (), 1: 1}").find("unexpected key 1"),
            std::string::npos);
  EXPECT_NE(headerError("{}").find("missing key 'descr'"), std::string::npos);
  EXPECT_NE(headerError("{'descr ': '<f4', 'fortran_order': False, 'shape': ()}").find("unexpected key"),
            std::string::npos);
  // The reason reaches readNpy's message, after the file's name.
  EXPECT_NE(readError(npyBytes("{'descr': '<f4', 'shape': (1,)}\n"))
                .find("': malformed .npy header: missing key 'fortran_order'"),
            std::string::npos);
}

TEST(NpyHeader, AnUnfinishedOrExtendedDictIsRefused) {
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "),
            "malformed .npy header: unterminated dict (opened at offset 0)");
  EXPECT_NE(headerError("{'descr': '<f4', 'fortran_order': False, 'shape': (3,").find("unterminated tuple"),
            std::string::npos);
  EXPECT_NE(headerError("{'descr': '<f4").find("unterminated string"), std::string::npos);
  // Anything but blank lines and comments after the dict, non-ASCII text included.
  for (std::string tail : {"\xe9", " x", ",", "\n5", "\n\xc2\xa0", "}"}) {
    std::string error = headerError(withShape("(3,)") + tail);
    EXPECT_NE(error.find("unexpected text after the header dict"), std::string::npos) << tail << ": " << error;
    // Bytes that are not printable ASCII are shown escaped.
    for (char c : error)
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << error;
  }
  EXPECT_EQ(headerError(withShape("(3,)") + "  # written by hand\n\n  \n"), "");
  EXPECT_NE(readError(npyBytes(withShape("(3,)") + "\xe9", 1, std::string(12, '\0')))
                .find("unexpected text after the header dict"),
            std::string::npos);
  // A header that is a set, a list or nothing is not a dict.
  EXPECT_NE(headerError("{'descr', 'shape'}").find("not a dict"), std::string::npos);
  EXPECT_NE(headerError("['descr']").find("not a dict"), std::string::npos);
  EXPECT_NE(headerError("").find("ends where a value should begin"), std::string::npos);
}

TEST(NpyHeader, ShapesHaveAtMostNumPysDimensions) {
  auto dims = [](size_t n) {
    std::string shape = "(";
    for (size_t i = 0; i < n; ++i)
      shape += "1, ";
    return shape + ")";
  };
  NpyHeader parsed;
  ASSERT_EQ(headerError(withShape(dims(32)), 1, &parsed), "");
  EXPECT_EQ(parsed.shape, Shape(32, 1));
  EXPECT_EQ(headerError(withShape(dims(33))), "malformed .npy header: shape has 33 dimensions; NumPy allows at most 32");
  EXPECT_EQ(headerError(withShape(dims(101))),
            "malformed .npy header: shape has 101 dimensions; NumPy allows at most 32");
  EXPECT_NE(readError(npyBytes(withShape(dims(101)), 1, std::string(4, '\0'))).find("101 dimensions"),
            std::string::npos);
}

TEST(NpyHeader, ShapesAreTuplesOfNonNegativeIntegers) {
  NpyHeader parsed;
  for (auto [shape, want] : {std::pair<std::string, Shape>{"(3,)", {3}},
                             {"()", {}},
                             {"(2, 3)", {2, 3}},
                             {"(2,3,)", {2, 3}},
                             {"( 2 ,\n  3 # rows\n )", {2, 3}},
                             {"((2), 3)", {2, 3}},
                             {"(0x10, 1_000, 0o7, 0b11)", {16, 1000, 7, 3}},
                             {"(-0, +4)", {0, 4}},
                             {"(00,)", {0}}}) {
    ASSERT_EQ(headerError(withShape(shape), 1, &parsed), "") << shape;
    EXPECT_EQ(parsed.shape, want) << shape;
  }
  for (auto [shape, why] : {std::pair<std::string, std::string>{"[3]", "is not a tuple"},
                            {"(3)", "is not a tuple"},
                            {"(-1,)", "negative dimension"},
                            {"(3.0,)", "not an integer"},
                            {"(True, 2)", "not an integer"},
                            {"('3',)", "not an integer"},
                            {"(03,)", "malformed number '03'"},
                            {"(1__0,)", "malformed number"},
                            {"(--3,)", "not followed by a number"},
                            {"(3 4)", "expected ',' or ')' in a tuple"},
                            {"(,)", "expected a value"},
                            {"(99999999999999999999,)", "too large"}}) {
    std::string error = headerError(withShape(shape));
    EXPECT_NE(error.find(why), std::string::npos) << shape << ": " << error;
  }
}

TEST(NpyHeader, ThePython2LongSuffixIsDroppedBeforeFormat3) {
  // NumPy drops an 'L' after a number in formats 1.0 and 2.0 only.
  NpyHeader parsed;
  ASSERT_EQ(headerError(withShape("(3L, 4 L)"), 2, &parsed), "");
  EXPECT_EQ(parsed.shape, (Shape{3, 4}));
  EXPECT_NE(headerError(withShape("(3L,)"), 3).find("malformed number '3L'"), std::string::npos);
  EXPECT_NE(headerError(withShape("(3Lx,)"), 1).find("malformed number"), std::string::npos);
}

TEST(NpyHeader, StringsAndLiteralsAsPythonWritesThem) {
  NpyHeader parsed;
  ASSERT_EQ(headerError("{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (3,)}", 1, &parsed), "");
  EXPECT_EQ(parsed.descr, "<i2");
  // Strings side by side are one, parentheses group, and the dict may be wrapped.
  ASSERT_EQ(headerError("({'des' \"cr\": ('<u' '8'), 'fortran_order': (False), 'shape': (3,)})", 1, &parsed), "");
  EXPECT_EQ(parsed.descr, "<u8");
  // What Python reads but no writer produces is refused, each with its reason.
  for (auto [header, why] : {std::pair<std::string, std::string>{"{'descr': '\\x3cf4', 'fortran_order': False, "
                                                                 "'shape': ()}",
                                                                 "escape sequence"},
                             {"{'descr': u'<f4', 'fortran_order': False, 'shape': ()}", "string prefix 'u'"},
                             {"{'descr': '''<f4''', 'fortran_order': False, 'shape': ()}", "triple-quoted"},
                             {"  \n {'descr': '<f4', 'fortran_order': False, 'shape': ()}", "indented"},
                             {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} \\\n", "line continuation"},
                             {"{'descr': '<f4', 'fortran_order': 1, 'shape': ()}", "not True or False"},
                             {"{'descr': '<f4', 'fortran_order': false, 'shape': ()}", "unexpected name 'false'"},
                             {"{'descr': '<f4', 'fortran_order': False, 'shape': ()}\n ", "indented line"},
                             {"{'descr': '<f4\n', 'fortran_order': False, 'shape': ()}", "unterminated string"},
                             {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ()\0}", 53), "NUL"},
                             {"{'descr': ['<f4'], 'fortran_order': False, 'shape': ()}", "unsupported dtype"},
                             {std::string(120, '(') + std::string(120, ')'), "nested more than 100 deep"}}) {
    std::string error = headerError(header);
    EXPECT_NE(error.find(why), std::string::npos) << header << ": " << error;
  }
}

TEST(NpyHeader, EncodingAndLengthAsNumPyReadsThem) {
  // Format 3.0 is UTF-8, strictly; 1.0 and 2.0 are latin-1, where any byte is a character.
  const std::string accented = "{'descr': '<f4', 'fortran_order': False, 'shape': (), } # caf\xc3\xa9\n";
  EXPECT_EQ(headerError(accented, 3), "");
  EXPECT_EQ(headerError(accented, 1), "");
  for (std::string bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3"})
    EXPECT_EQ(headerError(withShape("()") + "#" + bad, 3), "malformed .npy header: a format 3.0 header must be UTF-8")
        << bad;
  EXPECT_EQ(headerError(withShape("()") + "#\xff", 1), "");
  // numpy.load reads at most 10000 characters of header (in 3.0, not bytes).
  std::string header = withShape("()");
  header.insert(header.size() - 1, kNpyMaxHeaderChars - header.size(), ' ');
  EXPECT_EQ(headerError(header), "");
  EXPECT_EQ(headerError(header + " "), ".npy header too long: 10001 characters; NumPy reads at most 10000");
  std::string wide = header;
  wide.replace(wide.size() - 3, 2, "#\xc3\xa9");
  EXPECT_EQ(headerError(wide, 3), "");
  EXPECT_NE(readError(npyBytes(header + " ", 2)).find("header too long"), std::string::npos);
}

TEST(Npy, FormatVersionsAreThoseNumPyWrites) {
  for (int major : {1, 2, 3})
    EXPECT_EQ(readError(npyBytes(withShape("(2,)"), major, std::string(8, '\0'))), "") << major;
  for (auto [major, minor] : {std::pair{0, 0}, {4, 0}, {1, 1}, {3, 1}}) {
    std::string bytes = npyBytes(withShape("(2,)"), 2, std::string(8, '\0'));
    bytes[6] = char(major);
    bytes[7] = char(minor);
    EXPECT_NE(readError(bytes).find("unsupported .npy format version " + std::to_string(major) + "." +
                                    std::to_string(minor)),
              std::string::npos);
  }
  // A header length past the end of the file, and a file that ends in the preamble.
  std::string bytes = npyBytes(withShape("(2,)"));
  bytes[9] = char(0x7f);
  EXPECT_NE(readError(bytes).find("truncated .npy header"), std::string::npos);
  EXPECT_NE(readError(std::string("\x93NUMPY\x01", 7)).find("truncated .npy header"), std::string::npos);
}

TEST(Npy, OnlySupportedDescrsAreRead) {
  for (std::string descr : {"<f4", "|f4", "=f4", "|b1", "<u8", "|V2", "|V16"})
    EXPECT_EQ(readError(npyBytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (0,)}")), "") << descr;
  for (std::string descr : {"<f3", "<i3", "f4", "<f04", "<c8", "|O", "|V0", "<f16", "float32", "<f4 "})
    EXPECT_NE(readError(npyBytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (0,)}"))
                  .find("unsupported dtype"),
              std::string::npos)
        << descr;
  EXPECT_NE(readError(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (0,)}")).find("big-endian"),
            std::string::npos);
}

TEST(Npy, AFifoIsRefusedWithoutBlocking) {
  // Opening a FIFO with no writer for reading would wait forever. Should readNpy block,
  // a writer comes after a while so that the test ends, failing.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln-npy-fifo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path fifo = dir / "x.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::promise<std::string> done;
  std::future<std::string> result = done.get_future();
  std::thread reader([&] {
    std::string error;
    std::optional<NpyArray> array = readNpy(fifo.string(), error);
    done.set_value(array ? "read" : error);
  });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "readNpy blocked on a FIFO";
    ::close(::open(fifo.c_str(), O_RDWR | O_NONBLOCK));
  }
  reader.join();
  EXPECT_EQ(result.get(), "cannot open '" + fifo.string() + "': not a regular file (a FIFO)");
  fs::remove_all(dir);
}

TEST(Npy, ADirectoryIsRefused) {
  std::string error;
  std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_FALSE(readNpy(dir, error));
  EXPECT_EQ(error, "cannot open '" + dir + "': " + std::strerror(EISDIR));
}

} // namespace
