//===- TaskTable.cpp - Normalising a run's waits to one per launch ------------===//
#include "support/TaskTable.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::tasks {

std::vector<int> singleWaits(std::vector<std::vector<unsigned>> after) {
  std::vector<int> wait(after.size(), -1);
  // Latest first: a launch hands its extra predecessors to an earlier launch, which is
  // then normalised in turn.
  for (size_t i = after.size(); i-- > 0;) {
    std::vector<unsigned> &preds = after[i];
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    if (preds.empty())
      continue;
    const unsigned latest = preds.back();
    if (latest >= i)
      throw std::invalid_argument("singleWaits: launch " + std::to_string(i) + " follows a later launch");
    for (unsigned p : preds)
      if (p != latest)
        after[latest].push_back(p);
    wait[i] = static_cast<int>(latest);
  }
  return wait;
}

} // namespace kiln::tasks
