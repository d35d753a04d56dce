//===- HostArguments.cpp - Binding command-line arguments to a signature --===//
#include "tools/launch/HostArguments.h"

#include "support/BlockMask.h"
#include "support/Npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>

namespace kiln::launch {

namespace {

struct DTypeInfo {
  std::string_view spelling;
  unsigned bits;
  bool isFloat;
  bool isSigned;
};

constexpr DTypeInfo kDTypes[] = {
#define KILN_DTYPE_INFO(E, S, B, F, SG) {S, B, F, SG},
    KILN_DTYPES(KILN_DTYPE_INFO)
#undef KILN_DTYPE_INFO
};

const DTypeInfo &info(DType t) {
  size_t i = static_cast<size_t>(t);
  return kDTypes[i < std::size(kDTypes) ? i : 0];
}

/// Whether `v` (parsed from text that began with '-' when `fromNegativeText`) fits `t`.
bool fitsIntDType(DType t, int64_t v, bool fromNegativeText) {
  switch (t) {
  case DType::Bool: return v == 0 || v == 1;
  case DType::I8: return v >= INT8_MIN && v <= INT8_MAX;
  case DType::I16: return v >= INT16_MIN && v <= INT16_MAX;
  case DType::I32: return v >= INT32_MIN && v <= INT32_MAX;
  case DType::I64: return !(!fromNegativeText && v < 0);
  case DType::U8: return v >= 0 && v <= UINT8_MAX;
  case DType::U16: return v >= 0 && v <= UINT16_MAX;
  case DType::U32: return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX);
  case DType::U64: return !fromNegativeText || v == 0;
  default: return false;
  }
}

std::optional<HostArg> scalarOf(int64_t i) {
  HostArg a;
  a.kind = HostArg::Kind::Int;
  a.i = i;
  return a;
}

std::optional<HostArg> floatOf(double f) {
  HostArg a;
  a.kind = HostArg::Kind::Float;
  a.f = f;
  return a;
}

/// Whether `digits` is a non-empty run of base-`base` digits in which each underscore
/// sits between two digits: the spelling of a Kiln integer literal after its prefix.
bool digitsWithSeparators(std::string_view digits, int base) {
  auto isDigit = [&](char c) {
    return base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : c >= '0' && c <= '9';
  };
  if (digits.empty() || !isDigit(digits.front()) || !isDigit(digits.back()))
    return false;
  for (size_t i = 0; i < digits.size(); ++i)
    if (!isDigit(digits[i]) && !(digits[i] == '_' && isDigit(digits[i - 1]) && isDigit(digits[i + 1])))
      return false;
  return true;
}

/// Whether every underscore in a float's text sits between two decimal digits.
bool floatSeparatorsValid(std::string_view text) {
  auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '_' && (i == 0 || i + 1 == text.size() || !isDigit(text[i - 1]) || !isDigit(text[i + 1])))
      return false;
  return true;
}

std::optional<HostArg> parseScalar(const ParamSpec &param, const std::string &text, DiagnosticEngine &diags) {
  DType t = param.dtype;
  auto fail = [&](const std::string &why) -> std::optional<HostArg> {
    diags.error(Location::commandLine(), DiagCode::RunArgument)
        << "bad value '" << text << "' for parameter '" << paramSpelling(param) << "': " << why;
    return std::nullopt;
  };
  if (t == DType::Bool) {
    if (text == "true" || text == "1")
      return scalarOf(1);
    if (text == "false" || text == "0")
      return scalarOf(0);
    return fail("expected true or false");
  }
  if (dtypeIsInteger(t)) {
    bool overflow = false;
    auto v = parseIntLiteral(text, overflow);
    if (!v)
      return fail(overflow ? "out of range" : "expected an integer literal");
    if (!fitsIntDType(t, *v, !text.empty() && text[0] == '-'))
      return fail("out of range for " + std::string(dtypeSpelling(t)));
    return scalarOf(*v);
  }
  // Floats: a decimal or hex float literal (underscores only between digits, as in
  // Kiln source), inf or nan.
  if (text.find('_') != std::string::npos && !floatSeparatorsValid(text))
    return fail("expected a number");
  std::string s = text;
  std::erase(s, '_');
  if (s == "inf" || s == "+inf")
    return floatOf(std::numeric_limits<double>::infinity());
  if (s == "-inf")
    return floatOf(-std::numeric_limits<double>::infinity());
  if (s == "nan")
    return floatOf(std::numeric_limits<double>::quiet_NaN());
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return fail("expected a number");
  char *end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(d) || std::isinf(d))
    return fail("expected a number");
  return floatOf(d);
}

/// For each parameter of `signature`, the block mask (an index into `masks`) whose five
/// parameters it is one of. A mask that would reach past the parameters covers none:
/// the signature builders never make one, and its parameters are then passed one by one.
std::vector<std::optional<size_t>> maskOwners(const Signature &signature) {
  std::vector<std::optional<size_t>> owner(signature.params.size());
  for (size_t m = 0; m < signature.masks.size(); ++m) {
    size_t first = signature.masks[m].firstParam;
    if (first + kBlockMaskParams > owner.size())
      continue;
    for (size_t i = first; i < first + kBlockMaskParams; ++i)
      owner[i] = m;
  }
  return owner;
}

/// "[4, 8]", "[]" for a 0-d array.
std::string shapeText(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t cdivMask(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Appends a mask's five arguments: its extents, then its three arrays as derived
/// buffers, the kernel's read-only view of `value`, named after it for messages
/// ("m.npy[row_start]"), empty until fillMaskBuffers.
void appendMaskArgs(HostArguments &host, const std::string &value, int64_t rows, int64_t cols) {
  host.args.push_back(*scalarOf(rows));
  host.args.push_back(*scalarOf(cols));
  for (const char *part : {"row_start", "blocks", "bitmaps"}) {
    HostBuffer buffer;
    buffer.path = value + "[" + part + "]";
    buffer.dtype = std::string_view(part) == "bitmaps" ? DType::U32 : DType::I32;
    buffer.descr = npyDescrFor(buffer.dtype);
    buffer.derived = true;
    HostArg a;
    a.kind = HostArg::Kind::Buffer;
    a.buffer = host.buffers.size();
    host.args.push_back(a);
    host.buffers.push_back(std::move(buffer));
  }
}

/// Puts `layout`'s arrays into the buffers of the mask whose arguments start at `first`.
void fillMaskBuffers(HostArguments &host, size_t first, const BlockMaskLayout &layout) {
  auto fill = [&](unsigned part, const void *words, size_t count) {
    HostBuffer &buffer = host.buffers.at(host.args.at(first + part).buffer);
    buffer.data.resize(count * sizeof(uint32_t));
    std::memcpy(buffer.data.data(), words, buffer.data.size());
    buffer.shape = {static_cast<int64_t>(count)};
  };
  fill(2, layout.rowStart.data(), layout.rowStart.size());
  fill(3, layout.blocks.data(), layout.blocks.size());
  fill(4, layout.bitmaps.data(), layout.bitmaps.size());
}

/// "keep(4096, 4096)" or "sliding_window(4096, 4096, 512)": a predicate's name, the
/// grid's extents and the predicate's own integer arguments, or nullopt when `value` is
/// not spelled so (it is then a file name).
/// `malformed` is set when `value` has the form NAME(...) but its arguments are not two
/// to eight integers of at most ten digits.
std::optional<PredicateMask> parsePredicateMask(const std::string &value, bool &malformed) {
  static const std::regex form(R"(^\s*([A-Za-z_][A-Za-z_0-9]*)\s*\((.*)\)\s*$)");
  static const std::regex number(R"(^\s*(-?[0-9]{1,10})\s*$)");
  std::smatch m;
  malformed = false;
  if (!std::regex_match(value, m, form))
    return std::nullopt;
  malformed = true;
  PredicateMask request;
  request.predicate = m[1];
  std::vector<int64_t> numbers;
  std::string list = m[2];
  for (size_t start = 0;;) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::smatch n;
    if (!std::regex_match(item, n, number))
      return std::nullopt;
    numbers.push_back(std::stoll(n[1]));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (numbers.size() < 2 || numbers.size() > 8)
    return std::nullopt;
  malformed = false;
  request.rows = numbers[0];
  request.cols = numbers[1];
  request.params.assign(numbers.begin() + 2, numbers.end());
  return request;
}

/// Reads the dense mask file `value` for `mask` and appends its five arguments to `host`:
/// rows and cols as integers, then row_start, blocks and bitmaps as derived buffers.
/// Reports and returns false, leaving `host` as it was, when the file is not a 2-D bool
/// array or the mask's extents or block sizes do not fit.
bool bindMask(const MaskSpec &mask, const std::string &value, HostArguments &host, DiagnosticEngine &diags) {
  const std::string arg = "--arg " + mask.name + "=" + value;
  bool malformed = false;
  std::optional<PredicateMask> request = parsePredicateMask(value, malformed);
  std::error_code ec;
  if (malformed && !std::filesystem::exists(value, ec)) {
    diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
            .hint("e.g. " + mask.name + "=causal(4096,4096) or " + mask.name + "=sliding_window(4096,4096,512)")
        << arg << ": a mask from a predicate is PREDICATE(ROWS,COLS[,ARG]...), with up to six integer arguments "
        << "for the predicate after the two extents, each at most ten digits";
    return false;
  }
  if (request) {
    request->mask = mask;
    request->firstArg = host.args.size();
    // The builders' limits (support/BlockMask.h): extents up to 2^30 and arrays that
    // 32-bit offsets reach, counting every block as partial, as it may be; and a grid
    // the passes can launch (at most 65535 programs along y).
    constexpr int64_t kMaxExtent = int64_t(1) << 30;
    const bool extentsFit = request->rows >= 1 && request->cols >= 1 && request->rows <= kMaxExtent &&
                            request->cols <= kMaxExtent;
    const int64_t blockRows = extentsFit ? cdivMask(request->rows, mask.blockRows) : 0;
    const int64_t blockCols = extentsFit ? cdivMask(request->cols, mask.blockCols) : 0;
    const int64_t blocks = blockRows * blockCols; // below 2^60
    const int64_t words = blockRows + 1 + 2 * blocks + blocks * cdivMask(mask.blockRows * mask.blockCols, 32);
    if (!extentsFit || blockCols > 65535 || blocks > kMaxPredicateMaskBlocks || words >= INT32_MAX) {
      diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
              .hint("the extents are the mask's element grid, e.g. " + mask.name + "=" + request->predicate +
                    "(4096,4096)")
          << arg << ": a mask built from a predicate needs extents from 1 to 2^30, at most 65535 column blocks, "
          << kMaxPredicateMaskBlocks << " blocks in all and fewer than 2^31 words of arrays, every block counted "
          << "as partial (" << maskSpelling(mask) << ")";
      return false;
    }
    for (int64_t p : request->params)
      if (p < INT32_MIN || p > INT32_MAX) {
        diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
            << arg << ": the predicate's argument " << p << " does not fit i32";
        return false;
      }
    appendMaskArgs(host, value, request->rows, request->cols);
    host.predicateMasks.push_back(std::move(*request));
    return true;
  }
  std::string error;
  auto array = readNpy(value, error);
  if (!array) {
    diags.error(Location::commandLine(), DiagCode::NpyError) << "parameter '" << mask.name << "': " << error;
    return false;
  }
  const bool isBool = npyDescrMatches(array->descr, DType::Bool);
  if (!isBool || array->shape.size() != 2) {
    diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
            .hint(!isBool ? "convert the array, e.g. np.save(PATH, a != 0) or a.astype(bool) in NumPy"
                          : "a block mask is indexed [row, column]: reshape the array to 2-D")
        << arg << ": a block mask needs a 2-D bool array (NumPy dtype bool, descr '|b1'), got "
        << npyDescrDescription(array->descr) << " of shape " << shapeText(array->shape);
    return false;
  }
  std::span<const uint8_t> kept(reinterpret_cast<const uint8_t *>(array->data.data()), array->data.size());
  std::optional<BlockMaskLayout> layout =
      blockMaskFromDense(kept, array->shape[0], array->shape[1], mask.blockRows, mask.blockCols, error);
  if (!layout) {
    diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
        << arg << ": " << error << " (" << maskSpelling(mask) << ", array of shape " << shapeText(array->shape)
        << ")";
    return false;
  }
  const size_t first = host.args.size();
  appendMaskArgs(host, value, layout->rows, layout->cols);
  fillMaskBuffers(host, first, *layout);
  return true;
}

} // namespace

std::string_view dtypeSpelling(DType t) { return info(t).spelling; }
unsigned dtypeSizeBytes(DType t) { return t == DType::Bool ? 1 : info(t).bits / 8; }
bool dtypeIsFloat(DType t) { return info(t).isFloat; }
bool dtypeIsInteger(DType t) { return t != DType::Bool && !info(t).isFloat; }
bool dtypeIsSigned(DType t) { return info(t).isSigned; }

std::string paramSpelling(const ParamSpec &param) {
  return param.name + ": " + (param.pointer ? "*" : "") + std::string(dtypeSpelling(param.dtype));
}

std::string extentsSpelling(const std::optional<BlockMaskExtents> &extents, const std::vector<ParamSpec> &params) {
  std::string s;
  if (extents)
    for (const BlockMaskExtent &e : *extents)
      s += ", " + (e.param >= 0 && size_t(e.param) < params.size() ? params[size_t(e.param)].name
                                                                  : std::to_string(e.value));
  return s;
}

std::string maskSpelling(const MaskSpec &mask) {
  return mask.name + ": block_mask<" + std::to_string(mask.blockRows) + ", " + std::to_string(mask.blockCols) +
         mask.extentsSpelling + ">";
}

std::string paramList(const Signature &signature) {
  const std::vector<std::optional<size_t>> owner = maskOwners(signature);
  std::string s;
  for (size_t i = 0; i < signature.params.size(); ++i) {
    if (owner[i] && signature.masks[*owner[i]].firstParam != i)
      continue; // the mask was spelled at its first parameter
    s += (s.empty() ? "" : ", ") +
         (owner[i] ? maskSpelling(signature.masks[*owner[i]]) : paramSpelling(signature.params[i]));
  }
  return s.empty() ? "(none)" : s;
}

std::optional<int64_t> parseIntLiteral(std::string text, bool &overflow) {
  overflow = false;
  bool negative = false;
  size_t i = 0;
  if (!text.empty() && (text[0] == '-' || text[0] == '+'))
    negative = text[i++] == '-';
  int base = 10;
  if (text.size() > i + 2 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'))
    base = 16, i += 2;
  if (i >= text.size() || !digitsWithSeparators(std::string_view(text).substr(i), base))
    return std::nullopt;
  unsigned long long value = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '_')
      continue;
    int digit = c >= '0' && c <= '9' ? c - '0' : 10 + (std::tolower(static_cast<unsigned char>(c)) - 'a');
    if (value > (std::numeric_limits<unsigned long long>::max() - digit) / base) {
      overflow = true;
      return std::nullopt;
    }
    value = value * base + digit;
  }
  if (negative) {
    if (value > (1ull << 63)) {
      overflow = true;
      return std::nullopt;
    }
    return static_cast<int64_t>(0 - value);
  }
  return static_cast<int64_t>(value); // u64 values above INT64_MAX keep their bit pattern
}

std::optional<std::array<int64_t, 3>> parseGrid(const std::string &text, DiagnosticEngine &diags) {
  std::array<int64_t, 3> grid = {1, 1, 1};
  size_t start = 0;
  for (int axis = 0;; ++axis) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // Plain decimal digits: a grid is a count, written as one (no sign, base or separators).
    const bool digits = !part.empty() && part.size() <= 10 && part.find_first_not_of("0123456789") == std::string::npos;
    const int64_t v = digits ? std::stoll(part) : 0;
    if (axis >= 3 || v < 1 || v > (int64_t{1} << 31) - 1) {
      diags.error(Location::commandLine(), DiagCode::BadGrid)
              .hint("write --grid X, --grid X,Y or --grid X,Y,Z with positive decimal integers")
          << "malformed grid '" << text << "'";
      return std::nullopt;
    }
    grid[axis] = v;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return grid;
}

std::optional<HostArguments> bindArguments(const Signature &signature, const std::vector<std::string> &rawArgs,
                                           DiagnosticEngine &diags) {
  // A block mask's five parameters are passed as one argument, named after the mask.
  const std::vector<std::optional<size_t>> owner = maskOwners(signature);
  std::map<std::string, std::string> given;
  bool ok = true;
  for (const std::string &raw : rawArgs) {
    size_t eq = raw.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint("write --arg NAME=VALUE, e.g. --arg x=x.npy or --arg n=1024")
          << "malformed --arg '" << raw << "'";
      ok = false;
      continue;
    }
    std::string name = raw.substr(0, eq);
    bool known = false;
    std::optional<size_t> partOf;
    for (size_t i = 0; i < signature.params.size(); ++i) {
      if (signature.params[i].name != name)
        continue;
      if (owner[i])
        partOf = owner[i];
      else
        known = true;
    }
    for (size_t m = 0; m < signature.masks.size(); ++m)
      known |= signature.masks[m].name == name && owner.size() >= signature.masks[m].firstParam + kBlockMaskParams;
    if (partOf) {
      const std::string &mask = signature.masks[*partOf].name;
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint(name + " is part of block mask '" + mask + "'; pass the whole mask: --arg " + mask + "=" + mask +
                    ".npy")
          << signature.kind << " '" << signature.kernel << "' takes no argument '" << name << "'; its parameters are "
          << paramList(signature);
      ok = false;
      continue;
    }
    if (!known) {
      const bool isConst = std::find(signature.consts.begin(), signature.consts.end(), name) != signature.consts.end();
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint(isConst ? "'" + name + "' is a const parameter, fixed when the kernel is compiled: dslc -D " + name +
                                  "=" + raw.substr(eq + 1)
                            : "")
          << signature.kind << " '" << signature.kernel << "' has no parameter '" << name << "'; its parameters are "
          << paramList(signature);
      ok = false;
      continue;
    }
    if (!given.emplace(name, raw.substr(eq + 1)).second) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
          << "parameter '" << name << "' is given more than once";
      ok = false;
    }
  }

  HostArguments host;
  std::map<std::string, size_t> bufferOfPath; // canonical path -> buffer
  for (size_t i = 0; i < signature.params.size(); ++i) {
    if (owner[i]) {
      const MaskSpec &mask = signature.masks[*owner[i]];
      if (mask.firstParam != i)
        continue; // bound with the first
      auto it = given.find(mask.name);
      if (it == given.end()) {
        diags.error(Location::commandLine(), DiagCode::RunArgument)
                .hint("pass a 2-D bool .npy file of the kept elements, --arg " + mask.name +
                      "=FILE.npy, or a predicate and the extents, --arg " + mask.name + "=keep(ROWS,COLS)")
            << "missing argument for parameter '" << maskSpelling(mask) << "'";
        ok = false;
      } else if (!bindMask(mask, it->second, host, diags)) {
        ok = false;
      }
      continue;
    }
    const ParamSpec &param = signature.params[i];
    auto it = given.find(param.name);
    if (it == given.end()) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint(param.pointer ? "pass a .npy file: --arg " + param.name + "=FILE.npy"
                                  : "pass a value: --arg " + param.name + "=VALUE")
          << "missing argument for parameter '" << paramSpelling(param) << "'";
      ok = false;
      continue;
    }
    const std::string &value = it->second;
    if (!param.pointer) {
      auto arg = parseScalar(param, value, diags);
      if (!arg) {
        ok = false;
        continue;
      }
      host.args.push_back(*arg);
      continue;
    }
    std::error_code ec;
    std::string canonical = std::filesystem::weakly_canonical(value, ec).string();
    if (ec)
      canonical = value;
    HostArg arg;
    arg.kind = HostArg::Kind::Buffer;
    if (auto b = bufferOfPath.find(canonical); b != bufferOfPath.end()) {
      // The same file for two parameters: they alias one buffer, as on a device.
      if (host.buffers[b->second].dtype != param.dtype) {
        diags.error(Location::commandLine(), DiagCode::NpyError)
            << "'" << value << "' is passed to parameters of different pointee types";
        ok = false;
        continue;
      }
      arg.buffer = b->second;
      host.args.push_back(arg);
      continue;
    }
    std::string error;
    auto array = readNpy(value, error);
    if (!array) {
      diags.error(Location::commandLine(), DiagCode::NpyError) << "parameter '" << param.name << "': " << error;
      ok = false;
      continue;
    }
    if (!npyDescrMatches(array->descr, param.dtype)) {
      diags.error(Location::commandLine(), DiagCode::NpyError)
              .hint("convert the array, e.g. a.astype(...) in NumPy, or change the parameter type")
          << "'" << value << "' holds " << npyDescrDescription(array->descr) << " but parameter '"
          << paramSpelling(param) << "' needs " << npyDescrDescription(npyDescrFor(param.dtype));
      ok = false;
      continue;
    }
    HostBuffer buffer;
    buffer.path = value;
    buffer.dtype = param.dtype;
    buffer.data = std::move(array->data);
    buffer.descr = std::move(array->descr);
    buffer.shape = std::move(array->shape);
    bufferOfPath[canonical] = host.buffers.size();
    arg.buffer = host.buffers.size();
    host.args.push_back(arg);
    host.buffers.push_back(std::move(buffer));
  }
  if (!ok)
    return std::nullopt;
  // Every argument is bound, one per parameter: a mask's extents can meet the values
  // the kernel declares for them.
  for (const MaskSpec &mask : signature.masks) {
    if (!mask.extents)
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      const BlockMaskExtent &e = (*mask.extents)[i];
      const int64_t actual = host.args[mask.firstParam + i].i;
      const int64_t expected = e.param < 0 ? e.value : host.args.at(size_t(e.param)).i;
      if (actual == expected)
        continue;
      const char *what = i == 0 ? "rows" : "columns";
      diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
              .hint(e.param < 0 ? "the " + signature.kind + " is written for that size"
                                : "pass a mask of the size the " + signature.kind + " is launched for, or --arg " +
                                      signature.params[size_t(e.param)].name + "=" + std::to_string(actual))
          << "--arg " << mask.name << "=" << given[mask.name] << ": the mask has " << actual << " " << what
          << ", but " << signature.kind << " '" << signature.kernel << "' declares "
          << (e.param < 0 ? std::to_string(expected)
                          : signature.params[size_t(e.param)].name + " = " + std::to_string(expected))
          << " " << what << " for it (" << maskSpelling(mask) << ")";
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return host;
}

bool bindMaskArgument(const MaskSpec &mask, const std::string &value, HostArguments &host, DiagnosticEngine &diags) {
  return bindMask(mask, value, host, diags);
}

BlockMaskStats maskArgumentStats(const HostArguments &host, size_t first, const MaskSpec &mask) {
  auto words = [&]<typename T>(unsigned part, std::vector<T> &out) {
    const std::vector<std::byte> &bytes = host.buffers.at(host.args.at(first + part).buffer).data;
    out.resize(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  };
  BlockMaskLayout layout;
  layout.rows = static_cast<int32_t>(host.args.at(first).i);
  layout.cols = static_cast<int32_t>(host.args.at(first + 1).i);
  layout.blockRows = static_cast<int32_t>(mask.blockRows);
  layout.blockCols = static_cast<int32_t>(mask.blockCols);
  words(2, layout.rowStart);
  words(3, layout.blocks);
  words(4, layout.bitmaps);
  return blockMaskStats(layout);
}

void fillPredicateMask(HostArguments &host, const PredicateMask &request, const BlockMaskLayout &layout) {
  fillMaskBuffers(host, request.firstArg, layout);
}

bool writeBack(const HostArguments &host, DiagnosticEngine &diags) {
  // Every file is written beside its old self first; only when all of them are whole,
  // and nothing stands in the way of replacing any, do they replace the old ones, all
  // or none (support/AtomicFile.h): a full disk, a read-only file or a sticky folder
  // leaves every file as it was.
  std::vector<StagedFile> staged;
  bool ok = true;
  for (const HostBuffer &b : host.buffers) {
    if (!b.written || b.derived)
      continue;
    std::string error;
    if (std::optional<StagedFile> s = stageNpy(b.path, NpyArray{b.descr, b.shape, b.data}, error)) {
      staged.push_back(std::move(*s));
    } else {
      diags.error(Location::commandLine(), DiagCode::FileNotWritable) << error;
      ok = false;
    }
  }
  if (!ok)
    return false;
  if (std::string error = commitAll(staged); !error.empty()) {
    diags.error(Location::commandLine(), DiagCode::FileNotWritable)
        << error << "; no output file was changed";
    return false;
  }
  return true;
}

} // namespace kiln::launch
