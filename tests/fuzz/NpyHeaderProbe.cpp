//===- NpyHeaderProbe.cpp - What Kiln makes of .npy files, for the fuzz test ---===//
//
// kiln-npy-probe FILE... reads each file with readNpy and prints one JSON object a line,
// in the order given:
//   {"ok": true, "descr": "<f4", "shape": [3, 4], "bytes": 48, "fnv": "..."}
//   {"ok": false, "error": "..."}
// "fnv" is the 64-bit FNV-1a hash of the data bytes, in decimal, so that the caller can
// tell that Kiln found the data where NumPy did. tests/fuzz/npy_header_fuzz.py compares
// these lines with what NumPy makes of the same files.
//
//===----------------------------------------------------------------------===//
#include "support/Npy.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

/// `text` as a JSON string: bytes beyond ASCII become the latin-1 character of their
/// value, which keeps every message valid JSON whatever bytes a header held.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

uint64_t fnv1a(const std::vector<std::byte> &data) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (std::byte b : data)
    hash = (hash ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
  return hash;
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string error;
    std::optional<kiln::NpyArray> array = kiln::readNpy(argv[i], error);
    std::string line;
    if (!array) {
      line = "{\"ok\": false, \"error\": " + jsonString(error) + "}";
    } else {
      std::string shape;
      for (int64_t d : array->shape)
        shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      line = "{\"ok\": true, \"descr\": " + jsonString(array->descr) + ", \"shape\": [" + shape +
             "], \"bytes\": " + std::to_string(array->data.size()) + ", \"fnv\": \"" +
             std::to_string(fnv1a(array->data)) + "\"}";
    }
    std::puts(line.c_str());
  }
  return 0;
}
