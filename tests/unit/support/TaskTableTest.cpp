//===- TaskTableTest.cpp - Normalising a graph run's waits to one per launch ---===//
#include "support/TaskTable.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

using kiln::tasks::singleWaits;

namespace {

/// Every launch a launch is ordered after through its one wait, transitively.
std::set<unsigned> reached(const std::vector<int> &waits, unsigned i) {
  std::set<unsigned> out;
  for (int w = waits[i]; w >= 0; w = waits[static_cast<unsigned>(w)])
    out.insert(static_cast<unsigned>(w));
  return out;
}

} // namespace

TEST(SingleWaits, AChainKeepsItsEdges) {
  EXPECT_EQ(singleWaits({{}, {0}, {1}, {2}}), (std::vector<int>{-1, 0, 1, 2}));
}

TEST(SingleWaits, NoPredecessorsMeansNoWait) {
  EXPECT_EQ(singleWaits({{}, {}, {}}), (std::vector<int>{-1, -1, -1}));
}

TEST(SingleWaits, SeveralPredecessorsWaitOnTheLatestWhichTakesTheRest) {
  // 3 follows 0 and 2; 2 follows nothing: 3 waits on 2, and 2 now waits on 0.
  const std::vector<int> waits = singleWaits({{}, {}, {}, {0, 2}});
  EXPECT_EQ(waits[3], 2);
  EXPECT_EQ(waits[2], 0);
  EXPECT_EQ(waits[1], -1);
}

TEST(SingleWaits, EveryOriginalPredecessorIsStillReached) {
  // Random acyclic runs: after normalisation each launch waits on at most one earlier
  // launch, and through those waits it still follows everything it had to.
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const unsigned n = 1 + rng() % 24;
    std::vector<std::vector<unsigned>> after(n);
    for (unsigned i = 1; i < n; ++i)
      for (unsigned j = 0; j < i; ++j)
        if (rng() % 4 == 0)
          after[i].push_back(j);
    const std::vector<int> waits = singleWaits(after);
    ASSERT_EQ(waits.size(), n);
    for (unsigned i = 0; i < n; ++i) {
      ASSERT_LT(waits[i], static_cast<int>(i));
      // The original predecessors, closed transitively, must be among those reached.
      std::set<unsigned> need;
      std::function<void(unsigned)> add = [&](unsigned k) {
        for (unsigned p : after[k])
          if (need.insert(p).second)
            add(p);
      };
      add(i);
      const std::set<unsigned> got = reached(waits, i);
      for (unsigned p : need)
        EXPECT_TRUE(got.count(p)) << "trial " << trial << ": launch " << i << " no longer follows " << p;
    }
  }
}

TEST(SingleWaits, APredecessorThatIsNotEarlierIsRefused) {
  EXPECT_THROW(singleWaits({{1}, {}}), std::invalid_argument);
}
