//===- Container.cpp - Reading and writing the bundle container ------------===//
//
// The reader checks the container from the outside in — magic, header checksum,
// version, sizes, metadata and table checksums, each section's place and checksum — so
// that the first failed check names the actual damage ("truncated", "checksum
// mismatch") rather than a symptom further in.
//
//===----------------------------------------------------------------------===//
#include "runtime/Container.h"

#include "support/ReadFile.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace kiln::rt {

static constexpr size_t kHeaderSize = 48;
static constexpr size_t kSectionEntrySize = 32;
static constexpr uint32_t kMaxMetadataBytes = 1u << 20;

// Header field offsets (see docs/runtime.md).
enum : size_t {
  kOffVersion = 8,
  kOffFlags = 12,
  kOffMetadataSize = 16,
  kOffSectionCount = 20,
  kOffMetadataCrc = 24,
  kOffTableCrc = 28,
  kOffFileSize = 32,
  kOffReserved = 40,
  kOffHeaderCrc = 44,
};

// ---- CRC-32 ---------------------------------------------------------------------------

static constexpr std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
static constexpr std::array<uint32_t, 256> kCrcTable = makeCrcTable();

uint32_t crc32(std::span<const uint8_t> bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes)
    c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// ---- little-endian fields ---------------------------------------------------------------

static void put32(std::vector<uint8_t> &out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + i] = uint8_t(v >> (8 * i));
}
static void put64(std::vector<uint8_t> &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[at + i] = uint8_t(v >> (8 * i));
}
static uint32_t get32(std::span<const uint8_t> in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(in[at + i]) << (8 * i);
  return v;
}
static uint64_t get64(std::span<const uint8_t> in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(in[at + i]) << (8 * i);
  return v;
}

bool hasMagic(const ContainerFormat &format, std::span<const uint8_t> bytes) {
  return bytes.size() >= sizeof format.magic && std::memcmp(bytes.data(), format.magic, sizeof format.magic) == 0;
}

// ---- writing ---------------------------------------------------------------------------

std::vector<uint8_t> writeContainer(const ContainerFormat &format, std::string_view meta,
                                    const std::vector<ContainerSection> &sections, std::string &error) {
  const size_t count = sections.size();
  const uint64_t tableAt = kHeaderSize + meta.size();
  const uint64_t payloadAt = tableAt + kSectionEntrySize * count;
  uint64_t total = payloadAt;
  for (const ContainerSection &s : sections)
    total += s.bytes.size();
  if (meta.size() > kMaxMetadataBytes || total > kMaxContainerBytes || count > format.maxSections) {
    error = std::string(format.noun) + " too large";
    return {};
  }
  std::vector<uint8_t> out(total, 0);
  std::memcpy(out.data(), format.magic, sizeof format.magic);
  std::memcpy(out.data() + kHeaderSize, meta.data(), meta.size());
  uint64_t at = payloadAt;
  for (size_t i = 0; i < count; ++i) {
    const ContainerSection &s = sections[i];
    const size_t e = tableAt + kSectionEntrySize * i;
    put32(out, e + 0, s.kind);
    put32(out, e + 4, s.target);
    put64(out, e + 8, at);
    put64(out, e + 16, s.bytes.size());
    put32(out, e + 24, crc32(s.bytes));
    std::memcpy(out.data() + at, s.bytes.data(), s.bytes.size());
    at += s.bytes.size();
  }
  std::span<const uint8_t> all(out);
  put32(out, kOffVersion, format.version);
  put32(out, kOffMetadataSize, static_cast<uint32_t>(meta.size()));
  put32(out, kOffSectionCount, static_cast<uint32_t>(count));
  put32(out, kOffMetadataCrc, crc32(all.subspan(kHeaderSize, meta.size())));
  put32(out, kOffTableCrc, crc32(all.subspan(tableAt, kSectionEntrySize * count)));
  put64(out, kOffFileSize, total);
  put32(out, kOffHeaderCrc, crc32(all.first(kOffHeaderCrc)));
  return out;
}

// ---- reading ---------------------------------------------------------------------------

// For a file that is not of the format, a hint at what it is instead.
static std::string describeForeign(std::span<const uint8_t> b) {
  auto startsWith = [&](std::string_view p) {
    return b.size() >= p.size() && std::memcmp(b.data(), p.data(), p.size()) == 0;
  };
  if (startsWith("KILNGRPH"))
    return " (it is a graph bundle: kiln-run runs it, kiln_graph_load loads it)";
  if (startsWith("KILNBNDL"))
    return " (it is a kernel bundle, not a graph's)";
  if (startsWith("\x7f"
                 "ELF"))
    return " (it is an ELF file: a cubin or shared library?)";
  if (b.size() >= 4 && get32(b, 0) == 0x07230203u)
    return " (it is a bare SPIR-V module; wrap it in a bundle)";
  std::string_view text(reinterpret_cast<const char *>(b.data()), std::min<size_t>(b.size(), 4096));
  if (text.find(".version") != std::string_view::npos && text.find(".target") != std::string_view::npos)
    return " (it looks like bare PTX text; wrap it in a bundle)";
  return "";
}

std::optional<ContainerContents> readContainer(const ContainerFormat &format, std::span<const uint8_t> in,
                                               std::string &error) {
  auto fail = [&](std::string why) -> std::optional<ContainerContents> {
    error = std::move(why);
    return std::nullopt;
  };
  const std::string noun(format.noun);
  if (in.empty())
    return fail("not a " + noun + ": the file is empty");
  // A short prefix of the magic is a truncated file, not a foreign one.
  if (std::memcmp(in.data(), format.magic, std::min(in.size(), sizeof format.magic)) != 0)
    return fail("not a " + noun + ": bad magic" + describeForeign(in));
  if (in.size() < kHeaderSize)
    return fail("truncated: " + std::to_string(in.size()) + " bytes, shorter than the " + std::to_string(kHeaderSize) +
                "-byte header");
  const uint32_t version = get32(in, kOffVersion);
  const bool headerOk = crc32(in.first(kOffHeaderCrc)) == get32(in, kOffHeaderCrc);
  if (version != format.version)
    return fail(noun.substr(noun.find(' ') + 1) + " format version " + std::to_string(version) +
                " is not supported (this runtime reads version " + std::to_string(format.version) + ")" +
                (headerOk ? "; rebuild it with a matching dslc" : " or the header is corrupt"));
  if (!headerOk)
    return fail("corrupt: header checksum mismatch");
  if (get32(in, kOffFlags) != 0 || get32(in, kOffReserved) != 0)
    return fail("corrupt: reserved header fields are not zero");
  const uint64_t fileSize = get64(in, kOffFileSize);
  if (in.size() < fileSize)
    return fail("truncated: the header says " + std::to_string(fileSize) + " bytes, the file has " +
                std::to_string(in.size()));
  if (in.size() > fileSize)
    return fail("corrupt: " + std::to_string(in.size() - fileSize) + " bytes of trailing data");
  const uint32_t metaSize = get32(in, kOffMetadataSize);
  const uint32_t count = get32(in, kOffSectionCount);
  if (metaSize == 0 || metaSize > kMaxMetadataBytes)
    return fail("corrupt: metadata size " + std::to_string(metaSize) + " out of range");
  if (count == 0 || count > format.maxSections)
    return fail("corrupt: section count " + std::to_string(count) + " out of range");
  const uint64_t tableAt = kHeaderSize + uint64_t(metaSize);
  const uint64_t payloadAt = tableAt + kSectionEntrySize * uint64_t(count);
  if (payloadAt > fileSize)
    return fail("corrupt: metadata and section table run past the end of the file");
  if (crc32(in.subspan(kHeaderSize, metaSize)) != get32(in, kOffMetadataCrc))
    return fail("corrupt: metadata checksum mismatch");
  if (crc32(in.subspan(tableAt, kSectionEntrySize * count)) != get32(in, kOffTableCrc))
    return fail("corrupt: section table checksum mismatch");

  ContainerContents out;
  uint64_t expectAt = payloadAt;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = tableAt + kSectionEntrySize * i;
    const std::string what = std::string(format.sectionNoun) + " " + std::to_string(i);
    const uint32_t kind = get32(in, e + 0), target = get32(in, e + 4);
    const uint64_t at = get64(in, e + 8), size = get64(in, e + 16);
    if (std::string why = format.checkSection(kind, target); !why.empty())
      return fail("corrupt: " + what + " has " + why);
    if (get32(in, e + 28) != 0)
      return fail("corrupt: " + what + " has a non-zero reserved field");
    // Sections lie back to back in table order, so there is no byte outside a checksum.
    if (at != expectAt || size == 0 || size > fileSize - at)
      return fail("corrupt: " + what + " is not where the section table says");
    std::span<const uint8_t> payload = in.subspan(at, size);
    if (crc32(payload) != get32(in, e + 24))
      return fail("corrupt: " + what + " checksum mismatch");
    out.sections.push_back(ContainerSection{kind, target, std::vector<uint8_t>(payload.begin(), payload.end())});
    expectAt = at + size;
  }
  if (expectAt != fileSize)
    return fail("corrupt: the sections do not end where the file ends");
  out.metadata = std::string_view(reinterpret_cast<const char *>(in.data() + kHeaderSize), metaSize);
  return out;
}

std::optional<std::vector<uint8_t>> readContainerBytes(const ContainerFormat &format, const std::string &path,
                                                       std::string &error) {
  // Bounded, so that a wrong path (a device, a huge file) cannot fill memory; and a file
  // of another kind is known from its first bytes, which are enough for readContainer to
  // say what it is instead.
  auto foreign = [&](std::string_view soFar) {
    return soFar.size() >= sizeof format.magic && std::memcmp(soFar.data(), format.magic, sizeof format.magic) != 0;
  };
  std::string why;
  std::optional<std::string> text = readWholeFile(path, why, kMaxContainerBytes, foreign);
  if (!text) {
    error = "cannot read '" + path + "': " + why;
    return std::nullopt;
  }
  return std::vector<uint8_t>(text->begin(), text->end());
}

} // namespace kiln::rt
