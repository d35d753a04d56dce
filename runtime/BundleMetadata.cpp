//===- BundleMetadata.cpp - Bundle fields: text form and validation -------===//
//
// The writer and the reader share one notion of a valid bundle (validateBundle), so a
// file this runtime writes always reads back, and a file it reads was checked as
// strictly as one it would write.
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleMetadata.h"
#include "runtime/DTypes.h"
#include "support/BlockMask.h"

#include <charconv>
#include <cmath>
#include <set>

namespace kiln::rt {

// Limits well above anything real; they keep a hostile file from asking for absurd
// amounts of work or memory and keep messages short.
static constexpr size_t kMaxNameLength = 256;
static constexpr size_t kMaxSymbolLength = 1024;
static constexpr size_t kMaxTextLength = 4096;
static constexpr size_t kMaxParams = 256;
static constexpr size_t kMaxConsts = 256;
static constexpr size_t kMaxSections = 16;
static constexpr uint32_t kMaxNumWarps = 32;           // 1024 threads per program
static constexpr uint32_t kMaxSharedBytes = 16u << 20; // far above any GPU today
static constexpr uint32_t kMaxGridSplit = 1024;        // what dslc produces at most
static constexpr uint64_t kMaxWorkspaceBytes = 1ull << 30; // per program asked for
static constexpr uint32_t kMaxClusterSize = 8;             // CUDA's portable cluster size
static constexpr size_t kMaxSectionBytes = size_t(1) << 30;

static bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool isIdentifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength || !isIdentStart(s[0]))
    return false;
  for (char c : s)
    if (!isIdentStart(c) && !isDigit(c))
      return false;
  return true;
}

// PTX identifiers may also hold '$'; SPIR-V entry names are arbitrary, but the compiler
// names entry points after Kiln identifiers, so this is the set both backends accept.
static bool isSymbol(std::string_view s) {
  if (s.empty() || s.size() > kMaxSymbolLength || !(isIdentStart(s[0]) || s[0] == '$'))
    return false;
  for (char c : s)
    if (!isIdentStart(c) && !isDigit(c) && c != '$' && c != '.')
      return false;
  return true;
}

// Free text (compiler version, source path): no control characters, so one field is
// always exactly one metadata line.
bool isPlainText(std::string_view s) {
  if (s.size() > kMaxTextLength)
    return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f)
      return false;
  return true;
}

bool isLowerHex(std::string_view s) {
  if (s.empty() || s.size() > 128)
    return false;
  for (char c : s)
    if (!isDigit(c) && !(c >= 'a' && c <= 'f'))
      return false;
  return true;
}

std::string validateBlockMasks(const std::vector<BundleParam> &params, std::span<const BundleBlockMask> masks,
                               std::string_view owner, std::vector<const BundleBlockMask *> &maskOf) {
  if (masks.size() > kMaxParams / kBlockMaskParams)
    return "too many block masks (" + std::to_string(masks.size()) + ")";
  // Each mask stands for five parameters of fixed types, named after it: the launchers
  // build exactly those from the caller's mask, so any other shape is a damaged file.
  maskOf.assign(params.size(), nullptr);
  for (const BundleBlockMask &m : masks) {
    if (!isIdentifier(m.name))
      return "block mask name '" + m.name.substr(0, 64) + "' is not an identifier";
    std::string what = "block mask '" + m.name + "'";
    if (!isValidMaskBlockSize(m.blockRows) || !isValidMaskBlockSize(m.blockCols))
      return what + " has blocks of " + std::to_string(m.blockRows) + " x " + std::to_string(m.blockCols) +
             "; each side must be a power of two from 1 to 256";
    if (m.firstParam > params.size() || params.size() - m.firstParam < kBlockMaskParams)
      return what + " needs parameters " + std::to_string(m.firstParam) + ".." +
             std::to_string(uint64_t(m.firstParam) + kBlockMaskParams - 1) + ", but there are " +
             std::to_string(params.size());
    static constexpr struct {
      DType dtype;
      bool pointer;
    } kTypes[kBlockMaskParams] = {{DType::I32, false}, {DType::I32, false}, {DType::I32, true},
                                  {DType::I32, true},  {DType::U32, true}};
    for (unsigned i = 0; i < kBlockMaskParams; ++i) {
      size_t index = m.firstParam + i;
      const BundleParam &p = params[index];
      if (maskOf[index])
        return what + " overlaps block mask '" + maskOf[index]->name + "' at parameter " + std::to_string(index);
      maskOf[index] = &m;
      std::string expected = m.name + kBlockMaskParamSuffixes[i];
      if (p.name != expected)
        return what + " needs parameter " + std::to_string(index) + " to be '" + expected + "', not '" +
               p.name.substr(0, 64) + "'";
      if (p.dtype != kTypes[i].dtype || p.pointer != kTypes[i].pointer)
        return what + " needs parameter '" + expected + "' to be " +
               paramTypeSpelling(kTypes[i].dtype, kTypes[i].pointer) + ", not " +
               paramTypeSpelling(p.dtype, p.pointer);
    }
    if (m.extents)
      for (const BlockMaskExtent &e : *m.extents) {
        if (e.param < 0 && (e.value < 1 || e.value > (int64_t{1} << 30)))
          return what + " declares an extent of " + std::to_string(e.value) + ", outside 1..2^30";
        if (e.param < 0)
          continue;
        const size_t index = size_t(e.param);
        if (index >= params.size() || params[index].pointer || dtypeIsFloat(params[index].dtype) ||
            params[index].dtype == DType::Bool ||
            (index >= m.firstParam && index < m.firstParam + kBlockMaskParams))
          return what + " declares an extent by parameter " + std::to_string(e.param) +
                 ", which is not an integer parameter of the " + std::string(owner);
      }
  }
  return "";
}

std::string validateBundle(const Bundle &b) {
  if (!isIdentifier(b.kernelName))
    return "kernel name '" + b.kernelName.substr(0, 64) + "' is not an identifier";
  if (!isSymbol(b.entry))
    return "entry symbol '" + b.entry.substr(0, 64) + "' is not a valid symbol";
  if (b.params.size() > kMaxParams)
    return "too many parameters (" + std::to_string(b.params.size()) + ")";
  if (b.consts.size() > kMaxConsts)
    return "too many const values (" + std::to_string(b.consts.size()) + ")";
  std::vector<const BundleBlockMask *> maskOf;
  if (std::string why = validateBlockMasks(b.params, b.blockMasks, "kernel", maskOf); !why.empty())
    return why;
  std::set<std::string> names;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const BundleParam &p = b.params[i];
    // A mask's parameters are named NAME.rows etc., checked above; the others are identifiers.
    if (!maskOf[i] && !isIdentifier(p.name))
      return "parameter name '" + p.name.substr(0, 64) + "' is not an identifier";
    if (!names.insert(p.name).second)
      return "parameter '" + p.name + "' appears twice";
    if (static_cast<size_t>(p.dtype) > static_cast<size_t>(DType::F64))
      return "parameter '" + p.name + "' has an unknown dtype";
    // Only addresses and integers can be assumed divisible; 2^30 is far past any use.
    bool divisible = p.pointer || (p.dtype != DType::Bool && !dtypeIsFloat(p.dtype));
    if (p.divisibility == 0 || (p.divisibility & (p.divisibility - 1)) || p.divisibility > (1u << 30) ||
        (!divisible && p.divisibility != 1))
      return "parameter '" + p.name + "' has an invalid divisibility " + std::to_string(p.divisibility);
  }
  // A mask is one argument to a launcher's caller, under its own name.
  for (const BundleBlockMask &m : b.blockMasks)
    if (!names.insert(m.name).second)
      return "block mask '" + m.name + "' has the name of another parameter or block mask";
  for (const ConstValue &c : b.consts) {
    if (!isIdentifier(c.name))
      return "const name '" + c.name.substr(0, 64) + "' is not an identifier";
    if (!names.insert(c.name).second)
      return "const '" + c.name + "' has the name of another parameter, block mask or const";
  }
  if (b.numWarps < 1 || b.numWarps > kMaxNumWarps)
    return "num_warps " + std::to_string(b.numWarps) + " is outside 1.." + std::to_string(kMaxNumWarps);
  if (b.sharedBytes > kMaxSharedBytes)
    return "shared_bytes " + std::to_string(b.sharedBytes) + " is larger than " + std::to_string(kMaxSharedBytes);
  if (b.gridSplit < 1 || b.gridSplit > kMaxGridSplit)
    return "grid_split " + std::to_string(b.gridSplit) + " is outside 1.." + std::to_string(kMaxGridSplit);
  if (b.gridSplit == 1 && b.workspaceBytes != 0)
    return "workspace_bytes without grid_split";
  if (b.clusterSplit && (b.gridSplit < 2 || b.gridSplit > kMaxClusterSize))
    return "cluster_size " + std::to_string(b.gridSplit) + " is outside 2.." + std::to_string(kMaxClusterSize);
  if (b.clusterSplit && b.workspaceBytes != 0)
    return "workspace_bytes with cluster_size";
  if (b.clusterSplit && b.target != Target::SM90 && b.target != Target::SM90a)
    return "cluster_size on " + std::string(targetName(b.target)) + ", which has no thread-block clusters";
  if (b.gridSplit > 1 && !b.clusterSplit && (b.workspaceBytes == 0 || b.workspaceBytes % 4 != 0 || b.workspaceBytes > kMaxWorkspaceBytes))
    return "workspace_bytes " + std::to_string(b.workspaceBytes) + " is not a multiple of 4 in 4.." +
           std::to_string(kMaxWorkspaceBytes);
  if (!parseTarget(targetName(b.target)))
    return "unknown target";
  if (b.compilerVersion.empty() || !isPlainText(b.compilerVersion) || b.compilerVersion.size() > kMaxNameLength)
    return "compiler version must be a non-empty single line of text";
  if (!isLowerHex(b.sourceHash))
    return "source hash must be 1-128 lowercase hex digits";
  if (!isPlainText(b.sourceFile))
    return "source file name holds control characters";
  if (b.sourceFile.empty() && (b.sourceLine || b.sourceColumn))
    return "source line given without a source file";

  if (b.sections.empty())
    return "no code sections";
  if (b.sections.size() > kMaxSections)
    return "too many code sections (" + std::to_string(b.sections.size()) + ")";
  std::set<Target> targets;
  bool hasMain = false;
  for (size_t i = 0; i < b.sections.size(); ++i) {
    const CodeSection &s = b.sections[i];
    std::string what = "code section " + std::to_string(i);
    if (!parseTarget(targetName(s.target)))
      return what + " has an unknown target";
    what += " (" + std::string(targetName(s.target)) + ")";
    if (!targets.insert(s.target).second)
      return what + " repeats a target";
    if (s.kind != (isPtxTarget(s.target) ? SectionKind::PTX : SectionKind::SPIRV))
      return what + " holds " + std::string(sectionKindName(s.kind)) + ", which is not code for that target";
    if (s.bytes.empty())
      return what + " is empty";
    if (s.bytes.size() > kMaxSectionBytes)
      return what + " is larger than 1 GiB";
    if (s.kind == SectionKind::PTX) {
      // The driver takes PTX as a NUL-terminated string: an embedded NUL would cut it.
      for (uint8_t c : s.bytes)
        if (c == 0)
          return what + " is PTX text with a NUL byte";
    } else {
      // A SPIR-V module is a stream of 32-bit words starting with a 5-word header.
      if (s.bytes.size() % 4 != 0 || s.bytes.size() < 20 ||
          (uint32_t(s.bytes[0]) | uint32_t(s.bytes[1]) << 8 | uint32_t(s.bytes[2]) << 16 |
           uint32_t(s.bytes[3]) << 24) != 0x07230203u)
        return what + " is not a little-endian SPIR-V module";
    }
    hasMain |= s.target == b.target;
  }
  if (!hasMain)
    return "no code section for the bundle's target " + std::string(targetName(b.target));
  return "";
}

std::string formatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string encodeBundleMetadata(const Bundle &b) {
  std::string out;
  auto line = [&](std::string_view key, std::string_view value) {
    out.append(key).append(" ").append(value).append("\n");
  };
  line("kernel", b.kernelName);
  line("entry", b.entry);
  for (const BundleParam &p : b.params)
    line("param", p.name + " " + paramTypeSpelling(p.dtype, p.pointer) +
                      (p.divisibility > 1 ? " div " + std::to_string(p.divisibility) : ""));
  // Only kernels with masks carry these, so every other bundle reads as it always did.
  // A declared extent is `=N` (a constant) or `@P` (parameter P's value).
  for (const BundleBlockMask &m : b.blockMasks)
    line("block_mask", blockMaskText(m));
  for (const ConstValue &c : b.consts) {
    std::string value;
    if (auto *i = std::get_if<int64_t>(&c.value))
      value = "int " + std::to_string(*i);
    else if (auto *d = std::get_if<double>(&c.value))
      value = "float " + formatDouble(*d);
    else
      value = std::string("bool ") + (std::get<bool>(c.value) ? "true" : "false");
    line("const", c.name + " " + value);
  }
  line("num_warps", std::to_string(b.numWarps));
  line("shared_bytes", std::to_string(b.sharedBytes));
  // Only split kernels carry these, so every other bundle reads as it always did.
  if (b.gridSplit > 1) {
    line("grid_split", std::to_string(b.gridSplit));
    if (b.clusterSplit)
      line("cluster_size", std::to_string(b.gridSplit));
    else
      line("workspace_bytes", std::to_string(b.workspaceBytes));
  }
  if (b.checked)
    line("checked", "1");
  line("target", targetName(b.target));
  line("compiler", b.compilerVersion);
  line("source_hash", b.sourceHash);
  if (!b.sourceFile.empty())
    line("source", std::to_string(b.sourceLine) + " " + std::to_string(b.sourceColumn) + " " + b.sourceFile);
  return out;
}

// Splits off the first space-separated word of `rest`.
std::string_view nextWord(std::string_view &rest) {
  size_t sp = rest.find(' ');
  std::string_view word = rest.substr(0, sp);
  rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  return word;
}


bool parseDouble(std::string_view s, double &out) {
  if (s.empty() || s.size() > 64)
    return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

static bool parseConst(std::string_view rest, ConstValue &c) {
  c.name = std::string(nextWord(rest));
  std::string_view kind = nextWord(rest);
  if (kind == "int") {
    int64_t v;
    if (!parseInt(rest, v))
      return false;
    c.value = v;
  } else if (kind == "float") {
    double v;
    if (!parseDouble(rest, v))
      return false;
    c.value = v;
  } else if (kind == "bool") {
    if (rest != "true" && rest != "false")
      return false;
    c.value = rest == "true";
  } else {
    return false;
  }
  return true;
}

bool parseParam(std::string_view rest, BundleParam &p) {
  p.name = std::string(nextWord(rest));
  p.pointer = !rest.empty() && rest[0] == '*';
  if (p.pointer)
    rest.remove_prefix(1);
  auto dt = parseDTypeSpelling(nextWord(rest));
  if (!dt)
    return false;
  p.dtype = *dt;
  if (rest.empty())
    return true;
  // An optional "div N": the divisibility the code assumes (validateBundle checks N).
  return nextWord(rest) == "div" && parseInt(nextWord(rest), p.divisibility) && rest.empty();
}

std::string blockMaskText(const BundleBlockMask &m) {
  std::string extents;
  if (m.extents)
    for (const BlockMaskExtent &e : *m.extents)
      extents += e.param >= 0 ? " @" + std::to_string(e.param) : " =" + std::to_string(e.value);
  return m.name + " " + std::to_string(m.blockRows) + " " + std::to_string(m.blockCols) + " " +
         std::to_string(m.firstParam) + extents;
}

bool parseBlockMask(std::string_view rest, BundleBlockMask &m) {
  m.name = std::string(nextWord(rest));
  if (!parseInt(nextWord(rest), m.blockRows) || !parseInt(nextWord(rest), m.blockCols) ||
      !parseInt(nextWord(rest), m.firstParam))
    return false;
  if (rest.empty())
    return true;
  BlockMaskExtents extents;
  for (BlockMaskExtent &e : extents) {
    std::string_view word = nextWord(rest);
    if (word.size() < 2)
      return false;
    if (word[0] == '@') {
      uint32_t param = 0;
      if (!parseInt(word.substr(1), param) || param > INT32_MAX)
        return false;
      e.param = static_cast<int32_t>(param);
    } else if (word[0] != '=' || !parseInt(word.substr(1), e.value)) {
      return false;
    }
  }
  m.extents = extents;
  return rest.empty();
}

static bool parseSource(std::string_view rest, Bundle &b) {
  if (!parseInt(nextWord(rest), b.sourceLine) || !parseInt(nextWord(rest), b.sourceColumn) || rest.empty())
    return false;
  b.sourceFile = std::string(rest);
  return true;
}

bool decodeBundleMetadata(std::string_view text, Bundle &b, std::string &error) {
  if (text.empty() || text.back() != '\n') {
    error = "metadata does not end with a newline";
    return false;
  }
  // Each single-valued key must appear exactly once; a repeated one would make the
  // meaning depend on which copy a reader keeps.
  std::set<std::string, std::less<>> seen;
  static constexpr std::string_view kRequired[] = {"kernel", "entry",    "num_warps",  "shared_bytes",
                                                   "target", "compiler", "source_hash"};
  size_t lineNo = 0;
  uint32_t clusterSize = 0;
  while (!text.empty()) {
    ++lineNo;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    auto fail = [&](const std::string &why) {
      error = "metadata line " + std::to_string(lineNo) + ": " + why;
      return false;
    };
    if (!isPlainText(line))
      return fail("holds a control character or is too long");
    std::string_view rest = line;
    std::string_view key = nextWord(rest);
    if (key != "param" && key != "const" && key != "block_mask" && !seen.insert(std::string(key)).second)
      return fail("key '" + std::string(key.substr(0, 32)) + "' appears twice");
    bool ok = true;
    if (key == "kernel") {
      b.kernelName = std::string(rest);
    } else if (key == "entry") {
      b.entry = std::string(rest);
    } else if (key == "param") {
      BundleParam p;
      ok = parseParam(rest, p);
      b.params.push_back(std::move(p));
    } else if (key == "block_mask") {
      BundleBlockMask m;
      ok = parseBlockMask(rest, m);
      b.blockMasks.push_back(std::move(m));
    } else if (key == "const") {
      ConstValue c;
      ok = parseConst(rest, c);
      b.consts.push_back(std::move(c));
    } else if (key == "num_warps") {
      ok = parseInt(rest, b.numWarps);
    } else if (key == "shared_bytes") {
      ok = parseInt(rest, b.sharedBytes);
    } else if (key == "grid_split") {
      // Written only for a split kernel, so 1 (the default when absent) is no spelling of it.
      ok = parseInt(rest, b.gridSplit);
      if (ok && b.gridSplit < 2)
        return fail("grid_split " + std::to_string(b.gridSplit) + " is outside 2.." + std::to_string(kMaxGridSplit));
    } else if (key == "workspace_bytes") {
      ok = parseInt(rest, b.workspaceBytes);
    } else if (key == "cluster_size") {
      ok = parseInt(rest, clusterSize);
      b.clusterSplit = true;
    } else if (key == "checked") {
      // Written only for a checked kernel.
      ok = rest == "1";
      b.checked = true;
    } else if (key == "target") {
      auto t = parseTarget(rest);
      ok = t.has_value();
      if (t)
        b.target = *t;
    } else if (key == "compiler") {
      b.compilerVersion = std::string(rest);
    } else if (key == "source_hash") {
      b.sourceHash = std::string(rest);
    } else if (key == "source") {
      ok = parseSource(rest, b);
    } else {
      return fail("unknown key '" + std::string(key.substr(0, 32)) + "'");
    }
    if (!ok)
      return fail("malformed value for '" + std::string(key) + "'");
  }
  for (std::string_view key : kRequired)
    if (!seen.count(key)) {
      error = "metadata lacks the required key '" + std::string(key) + "'";
      return false;
    }
  // A cluster holds the segments of one program asked for: its size is the split's.
  if (b.clusterSplit && clusterSize != b.gridSplit) {
    error = "metadata: cluster_size " + std::to_string(clusterSize) + " differs from grid_split " +
            std::to_string(b.gridSplit);
    return false;
  }
  return true;
}

bool ConstValue::operator==(const ConstValue &o) const {
  if (name != o.name || value.index() != o.value.index())
    return false;
  // NaN != NaN would make a bundle with a NaN const unequal to itself after a round trip.
  if (auto *d = std::get_if<double>(&value)) {
    double e = std::get<double>(o.value);
    return (std::isnan(*d) && std::isnan(e)) || *d == e;
  }
  return value == o.value;
}

} // namespace kiln::rt
