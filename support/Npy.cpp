//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
#include "support/Npy.h"
#include "support/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln {

namespace {
constexpr char kMagic[] = "\x93NUMPY";

/// Finds `'key': value` in the header dict and returns the raw value text.
std::optional<std::string> headerField(const std::string &header, const std::string &key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return std::nullopt;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return std::nullopt;
  size_t v = header.find_first_not_of(" \t", colon + 1);
  if (v == std::string::npos)
    return std::nullopt;
  size_t end;
  if (header[v] == '\'') {
    end = header.find('\'', v + 1);
    if (end == std::string::npos)
      return std::nullopt;
    return header.substr(v + 1, end - v - 1);
  }
  if (header[v] == '(') {
    end = header.find(')', v);
    if (end == std::string::npos)
      return std::nullopt;
    return header.substr(v, end - v + 1);
  }
  end = header.find_first_of(",}", v);
  if (end == std::string::npos)
    return std::nullopt;
  std::string value = header.substr(v, end - v);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
    value.pop_back();
  return value;
}

/// Element size in bytes of a descr Kiln understands, or 0.
size_t descrItemSize(const std::string &descr) {
  if (descr.size() < 3)
    return 0;
  char order = descr[0];
  if (order != '<' && order != '|' && order != '=')
    return 0;
  char kind = descr[1];
  if (std::strchr("fiubV", kind) == nullptr)
    return 0;
  std::string digits = descr.substr(2);
  if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos)
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

std::optional<NpyArray> readNpy(const std::string &path, std::string &error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = "cannot open '" + path + "': " + std::strerror(EISDIR);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  char magic[6];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0) {
    error = "'" + path + "' is not a .npy file (bad magic)";
    return std::nullopt;
  }
  unsigned char ver[2];
  if (!in.read(reinterpret_cast<char *>(ver), 2) || ver[0] < 1 || ver[0] > 3) {
    error = "'" + path + "': unsupported .npy format version";
    return std::nullopt;
  }
  uint32_t headerLen = 0;
  unsigned char lenBytes[4] = {0, 0, 0, 0};
  size_t lenSize = ver[0] == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char *>(lenBytes), static_cast<std::streamsize>(lenSize))) {
    error = "'" + path + "': truncated .npy header";
    return std::nullopt;
  }
  for (size_t i = 0; i < lenSize; ++i)
    headerLen |= static_cast<uint32_t>(lenBytes[i]) << (8 * i);
  if (headerLen > (1u << 20)) {
    error = "'" + path + "': .npy header too large";
    return std::nullopt;
  }
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen)) {
    error = "'" + path + "': truncated .npy header";
    return std::nullopt;
  }
  NpyArray arr;
  auto descr = headerField(header, "descr");
  auto fortran = headerField(header, "fortran_order");
  auto shape = headerField(header, "shape");
  if (!descr || !fortran || !shape) {
    error = "'" + path + "': malformed .npy header";
    return std::nullopt;
  }
  if (*fortran != "False") {
    error = "'" + path + "': Fortran-order arrays are not supported; save a C-contiguous array";
    return std::nullopt;
  }
  arr.descr = *descr;
  if (descr->size() >= 1 && (*descr)[0] == '>') {
    error = "'" + path + "': big-endian arrays are not supported";
    return std::nullopt;
  }
  size_t item = descrItemSize(arr.descr);
  if (item == 0) {
    error = "'" + path + "': unsupported dtype '" + arr.descr + "'";
    return std::nullopt;
  }
  // Shape: "(3, 4)" or "(5,)" or "()".
  if (shape->size() < 2 || shape->front() != '(' || shape->back() != ')') {
    error = "'" + path + "': malformed shape '" + *shape + "' (expected a tuple such as (3, 4))";
    return std::nullopt;
  }
  std::string dims = shape->substr(1, shape->size() - 2);
  std::stringstream ss(dims);
  std::string part;
  unsigned long long count = 1;
  while (std::getline(ss, part, ',')) {
    size_t b = part.find_first_not_of(" \t");
    if (b == std::string::npos)
      continue;
    size_t e = part.find_last_not_of(" \tL");
    std::string digits = part.substr(b, e - b + 1);
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos) {
      error = "'" + path + "': malformed shape " + *shape;
      return std::nullopt;
    }
    int64_t d = std::stoll(digits);
    arr.shape.push_back(d);
    if (__builtin_mul_overflow(count, static_cast<unsigned long long>(d), &count) || count > (1ull << 36)) {
      error = "'" + path + "': array too large";
      return std::nullopt;
    }
  }
  const size_t bytes = static_cast<size_t>(count) * item;
  auto shorter = [&] {
    error = "'" + path + "': file is shorter than its header says (" + std::to_string(bytes) +
            " data bytes expected)";
    return std::nullopt;
  };
  // A header can claim any size: compare it with what the file holds before allocating,
  // and read a stream that cannot tell its size in pieces, so that memory follows the
  // bytes that actually arrive.
  const std::streampos dataStart = in.tellg();
  if (dataStart != std::streampos(-1) && in.seekg(0, std::ios::end)) {
    const std::streampos end = in.tellg();
    in.seekg(dataStart);
    if (end < dataStart || static_cast<unsigned long long>(end - dataStart) < bytes)
      return shorter();
  } else {
    in.clear();
  }
  constexpr size_t kPiece = size_t(1) << 24;
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kPiece, bytes - done);
    arr.data.resize(done + n);
    if (!in.read(reinterpret_cast<char *>(arr.data.data() + done), static_cast<std::streamsize>(n)))
      return shorter();
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
