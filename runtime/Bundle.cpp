//===- Bundle.cpp - Reading and writing .kbin files ------------------------===//
//
// The binary container around the metadata text and the code sections. The reader
// checks the container from the outside in — magic, header checksum, version, sizes,
// metadata and table checksums, each section's place and checksum — so that the first
// failed check names the actual damage ("truncated", "checksum mismatch") rather than a
// symptom further in.
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"

#include "runtime/BundleMetadata.h"
#include "runtime/Container.h"
#include "support/AtomicFile.h"
#include "support/ReadFile.h"

#include <array>
#include <cstring>

namespace kiln::rt {

namespace {

std::string checkCodeSection(uint32_t kind, uint32_t target) {
  if (kind != uint32_t(SectionKind::PTX) && kind != uint32_t(SectionKind::SPIRV))
    return "unknown kind " + std::to_string(kind);
  if (target < uint32_t(Target::SM80) || target > uint32_t(Target::SPIRV64))
    return "unknown target " + std::to_string(target);
  return "";
}

// The widest kernel bundle holds one section per target.
constexpr ContainerFormat kKernelBundle{{'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'}, kBundleFormatVersion, "Kiln bundle",
                                        "code section", 16, checkCodeSection};

} // namespace

std::string_view targetName(Target t) {
  switch (t) {
  case Target::SM80: return "sm_80";
  case Target::SM90: return "sm_90";
  case Target::SM90a: return "sm_90a";
  case Target::SPIRV64: return "spirv64";
  }
  return "unknown";
}

std::optional<Target> parseTarget(std::string_view name) {
  for (Target t : {Target::SM80, Target::SM90, Target::SM90a, Target::SPIRV64})
    if (targetName(t) == name)
      return t;
  return std::nullopt;
}

bool isPtxTarget(Target t) { return t != Target::SPIRV64; }

std::string_view sectionKindName(SectionKind k) {
  switch (k) {
  case SectionKind::PTX: return "PTX";
  case SectionKind::SPIRV: return "SPIR-V";
  }
  return "unknown code";
}

std::string Bundle::sourceLocation() const {
  if (sourceFile.empty())
    return "";
  std::string s = sourceFile;
  if (sourceLine) {
    s += ":" + std::to_string(sourceLine);
    if (sourceColumn)
      s += ":" + std::to_string(sourceColumn);
  }
  return s;
}

std::vector<uint8_t> serializeBundle(const Bundle &bundle, std::string &error) {
  error = validateBundle(bundle);
  if (!error.empty())
    return {};
  std::vector<ContainerSection> sections;
  for (const CodeSection &s : bundle.sections)
    sections.push_back(ContainerSection{uint32_t(s.kind), uint32_t(s.target), s.bytes});
  return writeContainer(kKernelBundle, encodeBundleMetadata(bundle), sections, error);
}

bool writeBundleAtomic(const std::string &path, const Bundle &bundle, std::string &error) {
  std::vector<uint8_t> bytes = serializeBundle(bundle, error);
  if (bytes.empty()) {
    error = "cannot write '" + path + "': invalid bundle: " + error;
    return false;
  }
  std::string why = writeFileAtomically(path, bytes);
  if (!why.empty()) {
    error = why;
    return false;
  }
  return true;
}

// ---- reading ---------------------------------------------------------------------------

std::optional<Bundle> parseBundle(std::span<const uint8_t> in, std::string &error) {
  std::optional<ContainerContents> contents = readContainer(kKernelBundle, in, error);
  if (!contents)
    return std::nullopt;
  Bundle bundle;
  for (ContainerSection &s : contents->sections)
    bundle.sections.push_back(CodeSection{SectionKind(s.kind), Target(s.target), std::move(s.bytes)});
  std::string why;
  if (!decodeBundleMetadata(contents->metadata, bundle, why)) {
    error = "invalid metadata: " + why;
    return std::nullopt;
  }
  why = validateBundle(bundle);
  if (!why.empty()) {
    error = "invalid bundle: " + why;
    return std::nullopt;
  }
  return bundle;
}

std::optional<std::vector<uint8_t>> readBundleBytes(const std::string &path, std::string &error) {
  return readContainerBytes(kKernelBundle, path, error);
}

bool isKernelBundle(std::span<const uint8_t> bytes) { return hasMagic(kKernelBundle, bytes); }

std::optional<Bundle> readBundle(const std::string &path, std::string &error, bool *ioError) {
  if (ioError)
    *ioError = true;
  std::optional<std::vector<uint8_t>> bytes = readBundleBytes(path, error);
  if (!bytes)
    return std::nullopt;
  if (ioError)
    *ioError = false;
  auto bundle = parseBundle(*bytes, error);
  if (!bundle)
    error = "'" + path + "': " + error;
  return bundle;
}

} // namespace kiln::rt
