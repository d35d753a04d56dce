//===- Container.h - The checksummed file layout of bundles ------*- C++ -*-===//
//
// A kernel bundle (.kbin, Bundle.h) and a graph bundle (.kgraph, GraphBundle.h) are the
// same container around different contents: a header, a metadata text, and a table of
// payload sections. This is the container alone; what the metadata says and what the
// sections hold is each format's own.
//
// Layout (all integers little-endian; docs/runtime.md has the full table):
//   header (48 bytes): an 8-byte magic, version, sizes, the CRC-32 of the metadata and of
//                      the section table, the file size, and a CRC-32 of the header
//   metadata:          UTF-8 text
//   section table:     32 bytes per section: kind, target, offset, size, CRC-32
//   section payloads:  back to back, in table order
// Every byte of a valid file is covered by exactly one checksum or checked field, so any
// single damaged byte is detected.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

/// One payload: its kind and target are numbers the format gives meaning to.
struct ContainerSection {
  uint32_t kind = 0;
  uint32_t target = 0;
  std::vector<uint8_t> bytes;
};

/// What distinguishes one format from another in the same container.
struct ContainerFormat {
  char magic[8];
  uint32_t version;
  std::string_view noun;        ///< "Kiln bundle": in "not a Kiln bundle: bad magic"
  std::string_view sectionNoun; ///< "code section": in "code section 2 checksum mismatch"
  uint32_t maxSections;
  /// Whether a section's kind and target are ones the format knows ("" if so, else why).
  std::string (*checkSection)(uint32_t kind, uint32_t target);
};

/// The most bytes a container file may have.
inline constexpr uint64_t kMaxContainerBytes = uint64_t(4) << 30;

/// The file bytes; empty with `error` set when the parts are too large.
std::vector<uint8_t> writeContainer(const ContainerFormat &format, std::string_view metadata,
                                    const std::vector<ContainerSection> &sections, std::string &error);

/// The metadata text and sections of file bytes, after every check of the container
/// (magic, version, sizes, checksums, section places and kinds); nullopt with `error`
/// ("truncated: ...", "corrupt: ...") otherwise.
struct ContainerContents {
  std::string_view metadata; ///< a view into the bytes parsed
  std::vector<ContainerSection> sections;
};
std::optional<ContainerContents> readContainer(const ContainerFormat &format, std::span<const uint8_t> bytes,
                                               std::string &error);

/// The bytes of the file at `path`, read up to kMaxContainerBytes, stopping early once
/// the first bytes show it is not of `format`; nullopt with `error` naming the path.
std::optional<std::vector<uint8_t>> readContainerBytes(const ContainerFormat &format, const std::string &path,
                                                       std::string &error);

/// Whether `bytes` start with `format`'s magic.
bool hasMagic(const ContainerFormat &format, std::span<const uint8_t> bytes);

/// The CRC-32 (IEEE 802.3, the zlib one) of `bytes`.
uint32_t crc32(std::span<const uint8_t> bytes);

} // namespace kiln::rt
