//===- GpuCase.cpp - case.txt of a prepared CUDA check --------------------===//
#include "tests/unit/codegen/gpu/GpuCase.h"

#include <cstdio>
#include <sstream>

namespace kiln::gputest {

std::string writeCase(const GpuCase &c) {
  std::ostringstream os;
  os.precision(17);
  os << "entry " << c.entry << "\n"
     << "threads " << c.threads << "\n"
     << "shared " << c.sharedBytes << "\n"
     << "grid " << c.grid[0] << " " << c.grid[1] << " " << c.grid[2] << "\n"
     << "tol " << c.rtol << " " << c.atol << "\n";
  for (size_t i = 0; i < c.args.size(); ++i) {
    const CaseArg &a = c.args[i];
    if (a.isBuffer) {
      os << "buffer " << i << " " << dtypeName(a.dtype) << " " << a.count << "\n";
    } else {
      os << "scalar ";
      for (uint8_t byte : a.scalar) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", byte);
        os << hex;
      }
      os << "\n";
    }
  }
  return os.str();
}

bool readCase(const std::string &text, GpuCase &c, std::string &error) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ws(line);
    std::string key;
    ws >> key;
    if (key == "entry") {
      ws >> c.entry;
    } else if (key == "threads") {
      ws >> c.threads;
    } else if (key == "shared") {
      ws >> c.sharedBytes;
    } else if (key == "grid") {
      ws >> c.grid[0] >> c.grid[1] >> c.grid[2];
    } else if (key == "tol") {
      ws >> c.rtol >> c.atol;
    } else if (key == "buffer") {
      CaseArg a;
      size_t index;
      std::string dt;
      ws >> index >> dt >> a.count;
      auto d = parseDType(dt);
      if (!d || index != c.args.size()) {
        error = "bad buffer line: " + line;
        return false;
      }
      a.isBuffer = true;
      a.dtype = *d;
      c.args.push_back(a);
    } else if (key == "scalar") {
      CaseArg a;
      std::string hex;
      ws >> hex;
      for (size_t i = 0; i + 1 < hex.size(); i += 2)
        a.scalar.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
      c.args.push_back(a);
    } else if (!key.empty()) {
      error = "unknown line: " + line;
      return false;
    }
    if (ws.fail()) {
      error = "malformed line: " + line;
      return false;
    }
  }
  return !c.entry.empty();
}

} // namespace kiln::gputest
