//===- GpuCase.cpp - case.txt of a prepared GPU check ---------------------===//
#include "tests/unit/codegen/gpu/GpuCase.h"
#include "support/FloatFormats.h"

#include <cmath>
#include <sstream>

namespace kiln::gputest {

std::string integerText(DType dtype, int64_t bits) {
  const int64_t v = wrapToIntDType(dtype, bits); // as the parameter holds it
  return isSigned(dtype) ? std::to_string(v) : std::to_string(static_cast<uint64_t>(v));
}

std::string scalarText(DType dtype, double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  std::ostringstream os;
  if (isFloat(dtype)) {
    os.precision(17);
    os << value;
  } else if (value < 0) {
    os << static_cast<int64_t>(value);
  } else {
    os << static_cast<uint64_t>(value);
  }
  return os.str();
}

std::string writeCase(const GpuCase &c) {
  std::ostringstream os;
  os.precision(17);
  os << "source " << c.source << "\n"
     << "seed " << c.seed << "\n"
     << "grid " << c.grid[0] << " " << c.grid[1] << " " << c.grid[2] << "\n";
  for (const std::string &b : c.bundles)
    os << "bundle " << b << "\n";
  for (const CaseArg &a : c.args) {
    if (a.isBuffer)
      os << "buffer " << a.name << " " << dtypeName(a.dtype) << " " << a.count << " " << a.rtol
         << " " << a.atol << (a.zeroInput ? " zero" : "") << "\n";
    else
      os << "scalar " << a.name << " " << dtypeName(a.dtype) << " " << a.value << "\n";
  }
  return os.str();
}

std::optional<GpuCase> readCase(const std::string &text, std::string &error) {
  GpuCase c;
  std::istringstream lines(text);
  std::string line;
  int lineNo = 0;
  auto fail = [&](const std::string &why) {
    error = "case.txt:" + std::to_string(lineNo) + ": " + why + ": " + line;
    return std::nullopt;
  };
  while (std::getline(lines, line)) {
    ++lineNo;
    std::istringstream ws(line);
    std::string key;
    if (!(ws >> key))
      continue;
    if (key == "source") {
      ws >> c.source;
    } else if (key == "seed") {
      ws >> c.seed;
    } else if (key == "grid") {
      ws >> c.grid[0] >> c.grid[1] >> c.grid[2];
    } else if (key == "bundle") {
      std::string b;
      ws >> b;
      c.bundles.push_back(b);
    } else if (key == "buffer" || key == "scalar") {
      CaseArg a;
      std::string dt;
      ws >> a.name >> dt;
      auto d = parseDType(dt);
      if (!d)
        return fail("unknown dtype '" + dt + "'");
      a.dtype = *d;
      a.isBuffer = key == "buffer";
      if (a.isBuffer) {
        std::string flag;
        if (ws >> a.count >> a.rtol >> a.atol) {
          if (ws >> flag) {
            if (flag != "zero")
              return fail("unknown buffer flag '" + flag + "'");
            a.zeroInput = true;
          } else {
            ws.clear(std::ios::eofbit); // no flag: the line ended
          }
        }
      } else {
        ws >> a.value;
      }
      c.args.push_back(a);
    } else {
      return fail("unknown line");
    }
    std::string extra;
    if (ws.fail() || ws >> extra)
      return fail("malformed line");
  }
  if (c.bundles.empty()) {
    error = "case.txt names no bundle";
    return std::nullopt;
  }
  return c;
}

} // namespace kiln::gputest
