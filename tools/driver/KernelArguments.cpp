//===- KernelArguments.cpp - Binding command-line arguments to a kernel ---===//
#include "tools/driver/KernelArguments.h"

#include "support/Npy.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>

namespace kiln::driver {

namespace {

std::string paramSignature(const ir::Value &v) { return v.nameHint + ": " + v.type.str(); }

std::string listParams(const ir::Kernel &kernel) {
  std::string s;
  for (const auto &p : kernel.params())
    s += (s.empty() ? "" : ", ") + paramSignature(*p);
  return s.empty() ? "(none)" : s;
}

/// Parses an integer literal as Kiln writes them (sign, decimal or 0x hex, underscores).
std::optional<int64_t> parseIntLiteral(std::string text, bool &overflow) {
  overflow = false;
  std::erase(text, '_');
  if (text.empty())
    return std::nullopt;
  bool negative = false;
  size_t i = 0;
  if (text[0] == '-' || text[0] == '+')
    negative = text[i++] == '-';
  int base = 10;
  if (text.size() > i + 2 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'))
    base = 16, i += 2;
  if (i >= text.size())
    return std::nullopt;
  unsigned long long value = 0;
  for (; i < text.size(); ++i) {
    int digit;
    char c = text[i];
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c)))
      digit = 10 + (std::tolower(c) - 'a');
    else
      return std::nullopt;
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

/// Range of an integer dtype as [lo, hi] in 128-bit-safe terms.
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

std::optional<interp::KernelArg> parseScalar(const ir::Value &param, const std::string &text,
                                             DiagnosticEngine &diags) {
  DType t = param.type.dtype;
  auto fail = [&](const std::string &why) {
    diags.error(Location::commandLine(), DiagCode::RunArgument)
        << "bad value '" << text << "' for parameter '" << paramSignature(param) << "': " << why;
    return std::nullopt;
  };
  if (t == DType::Bool) {
    if (text == "true" || text == "1")
      return interp::KernelArg::ofInt(1);
    if (text == "false" || text == "0")
      return interp::KernelArg::ofInt(0);
    return fail("expected true or false");
  }
  if (isInteger(t)) {
    bool overflow = false;
    auto v = parseIntLiteral(text, overflow);
    if (!v)
      return fail(overflow ? "out of range" : "expected an integer literal");
    if (!fitsIntDType(t, *v, !text.empty() && text[0] == '-'))
      return fail(std::string("out of range for ") + std::string(dtypeName(t)));
    return interp::KernelArg::ofInt(*v);
  }
  // Floats: a decimal or hex float literal, inf or nan.
  std::string s = text;
  std::erase(s, '_');
  if (s == "inf" || s == "+inf")
    return interp::KernelArg::ofFloat(std::numeric_limits<double>::infinity());
  if (s == "-inf")
    return interp::KernelArg::ofFloat(-std::numeric_limits<double>::infinity());
  if (s == "nan")
    return interp::KernelArg::ofFloat(std::numeric_limits<double>::quiet_NaN());
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return fail("expected a number");
  char *end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(d) || std::isinf(d))
    return fail("expected a number");
  return interp::KernelArg::ofFloat(d);
}

} // namespace

std::optional<std::array<int64_t, 3>> parseGrid(const std::string &text, DiagnosticEngine &diags) {
  std::array<int64_t, 3> grid = {1, 1, 1};
  size_t start = 0;
  for (int axis = 0;; ++axis) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool overflow = false;
    auto v = axis < 3 ? parseIntLiteral(part, overflow) : std::nullopt;
    if (!v || *v < 1 || *v > (int64_t{1} << 31) - 1) {
      diags.error(Location::commandLine(), DiagCode::BadGrid)
              .hint("write --grid X, --grid X,Y or --grid X,Y,Z with positive integers")
          << "malformed grid '" << text << "'";
      return std::nullopt;
    }
    grid[axis] = *v;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return grid;
}

std::optional<BoundArguments> bindArguments(const ir::Kernel &kernel,
                                            const std::vector<std::string> &rawArgs,
                                            DiagnosticEngine &diags) {
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
    for (const auto &p : kernel.params())
      known |= p->nameHint == name;
    if (!known) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
          << "kernel '" << kernel.name << "' has no parameter '" << name
          << "'; its parameters are " << listParams(kernel);
      ok = false;
      continue;
    }
    if (!given.emplace(name, raw.substr(eq + 1)).second) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
          << "parameter '" << name << "' is given more than once";
      ok = false;
    }
  }

  BoundArguments bound;
  std::map<std::string, size_t> bufferOfPath; // canonical path -> buffer
  for (const auto &param : kernel.params()) {
    auto it = given.find(param->nameHint);
    if (it == given.end()) {
      diags.error(Location::commandLine(), DiagCode::RunArgument)
              .hint(param->type.pointer ? "pass a .npy file: --arg " + param->nameHint + "=FILE.npy"
                                        : "pass a value: --arg " + param->nameHint + "=VALUE")
          << "missing argument for parameter '" << paramSignature(*param) << "'";
      ok = false;
      continue;
    }
    const std::string &value = it->second;
    if (!param->type.pointer) {
      auto arg = parseScalar(*param, value, diags);
      if (!arg) {
        ok = false;
        continue;
      }
      bound.args.push_back(*arg);
      continue;
    }
    std::error_code ec;
    std::string canonical = std::filesystem::weakly_canonical(value, ec).string();
    if (ec)
      canonical = value;
    DType pointee = param->type.dtype;
    if (auto b = bufferOfPath.find(canonical); b != bufferOfPath.end()) {
      // The same file for two parameters: they alias one buffer, as on a device.
      if (bound.buffers[b->second].dtype != pointee) {
        diags.error(Location::commandLine(), DiagCode::NpyError)
            << "'" << value << "' is passed to parameters of different pointee types";
        ok = false;
        continue;
      }
      bound.args.push_back(interp::KernelArg::ofBuffer(b->second));
      continue;
    }
    std::string error;
    auto array = readNpy(value, error);
    if (!array) {
      diags.error(Location::commandLine(), DiagCode::NpyError)
          << "parameter '" << param->nameHint << "': " << error;
      ok = false;
      continue;
    }
    if (!npyDescrMatches(array->descr, pointee)) {
      diags.error(Location::commandLine(), DiagCode::NpyError)
              .hint("convert the array, e.g. a.astype(...) in NumPy, or change the parameter type")
          << "'" << value << "' holds " << npyDescrDescription(array->descr) << " but parameter '"
          << paramSignature(*param) << "' needs " << npyDescrDescription(npyDescrFor(pointee));
      ok = false;
      continue;
    }
    interp::Buffer buffer;
    buffer.name = value;
    buffer.dtype = pointee;
    buffer.data = std::move(array->data);
    bufferOfPath[canonical] = bound.buffers.size();
    bound.args.push_back(interp::KernelArg::ofBuffer(bound.buffers.size()));
    bound.buffers.push_back(std::move(buffer));
    bound.bufferPaths.push_back(value);
    bound.bufferDescrs.push_back(array->descr);
    bound.bufferShapes.push_back(array->shape);
  }
  if (!ok)
    return std::nullopt;
  return bound;
}

bool writeBackBuffers(const BoundArguments &bound, DiagnosticEngine &diags) {
  bool ok = true;
  for (size_t i = 0; i < bound.buffers.size(); ++i) {
    if (!bound.buffers[i].written)
      continue;
    NpyArray array{bound.bufferDescrs[i], bound.bufferShapes[i], bound.buffers[i].data};
    std::string error;
    if (!writeNpyAtomic(bound.bufferPaths[i], array, error)) {
      diags.error(Location::commandLine(), DiagCode::NpyError) << error;
      ok = false;
    }
  }
  return ok;
}

} // namespace kiln::driver
