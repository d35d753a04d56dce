//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// The file around the header (support/NpyHeader.cpp reads the header itself): the
// magic, the version, the header's length, and the data, whose size is checked against
// the file's before anything is allocated.
//
//===----------------------------------------------------------------------===//
#include "support/Npy.h"
#include "support/NpyHeader.h"
#include "support/TerminalText.h"
#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

namespace {
constexpr char kMagic[] = "\x93NUMPY";

/// Element size in bytes of a descr Kiln reads, or 0: a byte order NumPy treats as
/// little-endian here ('<', '|' or '=') and one of the codes npyDescrFor writes, or raw
/// void elements of 1 to 99 bytes.
size_t descrItemSize(const std::string &descr) {
  static const char *const codes[] = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"};
  if (descr.size() < 3 || std::strchr("<|=", descr[0]) == nullptr || descr[0] == '\0')
    return 0;
  const std::string code = descr.substr(1);
  for (const char *known : codes)
    if (code == known)
      return static_cast<size_t>(code[1] - '0');
  const std::string digits = code.substr(1);
  if (code[0] != 'V' || digits.size() > 2 || digits[0] == '0' ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoul(digits);
}
} // namespace

std::string npyDescrFor(DType t) {
  switch (t) {
  case DType::Bool: return "|b1";
  case DType::I8: return "|i1";
  case DType::I16: return "<i2";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::U16: return "<u2";
  case DType::U32: return "<u4";
  case DType::U64: return "<u8";
  case DType::F8E4M3:
  case DType::F8E5M2: return "|V1";
  case DType::F16: return "<f2";
  case DType::BF16: return "|V2";
  case DType::F32: return "<f4";
  case DType::F64: return "<f8";
  }
  return "?";
}

bool npyDescrMatches(const std::string &descr, DType dtype) {
  if (descr.size() < 3)
    return false;
  std::string want = npyDescrFor(dtype);
  // '<', '|' and '=' all mean little-endian/none on the machines Kiln supports.
  return descr.substr(1) == want.substr(1) && descrItemSize(descr) != 0;
}

std::string npyDescrDescription(const std::string &descr) {
  static const std::pair<const char *, const char *> names[] = {
      {"b1", "bool"},    {"i1", "int8"},    {"i2", "int16"},   {"i4", "int32"},
      {"i8", "int64"},   {"u1", "uint8"},   {"u2", "uint16"},  {"u4", "uint32"},
      {"u8", "uint64"},  {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"},
      {"V1", "raw 1-byte (f8e4m3/f8e5m2)"}, {"V2", "raw 2-byte (bf16)"}};
  std::string body = descr.size() > 1 ? descr.substr(1) : descr;
  for (auto &[code, name] : names)
    if (body == code)
      return std::string(name) + " ('" + descr + "')";
  return "'" + descr + "'";
}

namespace {
/// Reads up to `size` bytes, fewer only at the end of the file. Returns how many, or -1
/// with errno set.
ssize_t readFully(int fd, void *buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, static_cast<char *>(buffer) + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

/// Closes a descriptor on every way out of readNpy.
struct FileCloser {
  int fd;
  ~FileCloser() { ::close(fd); }
};
} // namespace

std::optional<NpyArray> readNpy(const std::string &path, std::string &error) {
  auto refuse = [&](const std::string &why) {
    error = "'" + path + "': " + why;
    return std::nullopt;
  };
  std::string why;
  const int fd = openRegularFile(path, why);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + why;
    return std::nullopt;
  }
  FileCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  // Fills `buffer` from the file; false, with `error` set, when it cannot.
  auto readExactly = [&](void *buffer, size_t size, const char *shortWhy) {
    ssize_t n = readFully(fd, buffer, size);
    if (n < 0) {
      error = "cannot read '" + path + "': " + std::strerror(errno);
      return false;
    }
    if (static_cast<size_t>(n) < size) {
      error = "'" + path + "': " + shortWhy;
      return false;
    }
    return true;
  };

  unsigned char preamble[12];
  ssize_t got = readFully(fd, preamble, 8);
  if (got < 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  if (got < 6 || std::memcmp(preamble, kMagic, 6) != 0)
    return refuse("not a .npy file (bad magic)");
  if (got < 8)
    return refuse("truncated .npy header");
  const int major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    return refuse("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " (NumPy writes 1.0, 2.0 and 3.0)");
  const size_t lengthSize = major == 1 ? 2 : 4;
  if (!readExactly(preamble + 8, lengthSize, "truncated .npy header"))
    return std::nullopt;
  uint64_t headerLength = 0;
  for (size_t i = 0; i < lengthSize; ++i)
    headerLength |= static_cast<uint64_t>(preamble[8 + i]) << (8 * i);
  const uint64_t headerStart = 8 + lengthSize;
  if (headerLength > fileSize - std::min(fileSize, headerStart))
    return refuse("truncated .npy header (" + std::to_string(headerLength) + " bytes claimed, " +
                  std::to_string(fileSize - std::min(fileSize, headerStart)) + " in the file)");
  // A character is one byte in formats 1.0 and 2.0 (latin-1), at most four in 3.0.
  const uint64_t maxHeaderBytes = kNpyMaxHeaderChars * (major == 3 ? 4 : 1);
  if (headerLength > maxHeaderBytes)
    return refuse(".npy header too long: " + std::to_string(headerLength) + " bytes; NumPy reads at most " +
                  std::to_string(kNpyMaxHeaderChars) + " characters");
  std::string text(headerLength, '\0');
  if (!readExactly(text.data(), text.size(), "truncated .npy header"))
    return std::nullopt;
  std::optional<NpyHeader> header = parseNpyHeader(text, major, why);
  if (!header)
    return refuse(why);
  if (header->fortranOrder)
    return refuse("Fortran-order arrays are not supported; save a C-contiguous array");
  if (!header->descr.empty() && header->descr[0] == '>')
    return refuse("big-endian arrays are not supported");
  const size_t item = descrItemSize(header->descr);
  if (item == 0)
    return refuse("unsupported dtype '" + escapeForTerminal(header->descr) + "'");
  NpyArray arr;
  arr.descr = header->descr;
  arr.shape = header->shape;
  unsigned long long count = 1;
  for (int64_t d : arr.shape)
    if (__builtin_mul_overflow(count, static_cast<unsigned long long>(d), &count) || count > (1ull << 36))
      return refuse("array too large");
  const size_t bytes = static_cast<size_t>(count) * item;
  const char *shorter = "file is shorter than its header says";
  // A header can claim any size: compare it with what the file holds before allocating.
  // The file may still shrink while it is read, so memory follows the bytes that arrive.
  if (fileSize - headerStart - headerLength < bytes)
    return refuse(std::string(shorter) + " (" + std::to_string(bytes) + " data bytes expected)");
  constexpr size_t kPiece = size_t(1) << 24;
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kPiece, bytes - done);
    arr.data.resize(done + n);
    if (!readExactly(arr.data.data() + done, n, shorter))
      return std::nullopt;
    done += n;
  }
  return arr;
}

std::optional<StagedFile> stageNpy(const std::string &path, const NpyArray &array, std::string &error) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += std::to_string(array.shape[i]) + (array.shape.size() == 1 ? "," : i + 1 < array.shape.size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64 bytes, ending the header with '\n'.
  size_t total = 6 + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) {
    error = "header too long for '" + path + "'";
    return std::nullopt;
  }
  const char preamble[10] = {kMagic[0], kMagic[1], kMagic[2], kMagic[3], kMagic[4], kMagic[5], 1, 0,
                             static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  auto bytes = [](const void *p, size_t n) { return std::span<const uint8_t>(static_cast<const uint8_t *>(p), n); };
  // The user's file is updated, not replaced by another: through a symlink to its
  // target, with its permissions kept.
  AtomicWriteOptions options;
  options.updateInPlace = true;
  return StagedFile::stage(
      path, {bytes(preamble, sizeof preamble), bytes(header.data(), header.size()), bytes(array.data.data(), array.data.size())},
      options, error);
}

bool writeNpyAtomic(const std::string &path, const NpyArray &array, std::string &error) {
  std::optional<StagedFile> staged = stageNpy(path, array, error);
  if (!staged)
    return false;
  error = staged->commit();
  return error.empty();
}

} // namespace kiln
