//===- Timing.cpp - The --time-passes table -------------------------------===//
#include "support/Timing.h"

#include <cstdio>
#include <ostream>

namespace kiln {

void TimingReport::print(std::ostream &os) const {
  double total = 0;
  for (const Entry &e : entries_)
    total += e.seconds;
  char line[256];
  os << "===-------------------------------------------------------------===\n"
     << "                    Kiln compile-time report\n"
     << "===-------------------------------------------------------------===\n"
     << "  Total: " << total * 1e3 << " ms\n\n"
     << "   Wall time (ms)   Share  Stage\n";
  for (const Entry &e : entries_) {
    std::snprintf(line, sizeof line, "  %14.3f  %5.1f%%  %s\n", e.seconds * 1e3,
                  total > 0 ? 100.0 * e.seconds / total : 0.0, e.name.c_str());
    os << line;
  }
  std::snprintf(line, sizeof line, "  %14.3f  100.0%%  Total\n", total * 1e3);
  os << line;
}

} // namespace kiln
