//===- TaskEvents.h - Which finished tasks each task of a graph run waits for -*- C++ -*-===//
//
// The persistent kernel (codegen/Megakernel.cpp) runs every program of every launch of a
// graph as a task, numbered in launch order. A launch must follow the earlier launches
// it shares memory with (the bundle's edges, ir/GraphDependencies.h), but one of its
// tasks need only wait for the tasks of those launches whose ranges overlap its own:
// the attention of head 3 for the projection rows of head 3, not for all of them. This
// file works that out on the host for one run, where grids and scalar arguments are
// known, from the ranges the bundle records per access (ir/TaskFootprints.h), and
// shapes the result into MPK's events:
//
//   * an event is a counter in global memory that a fixed group of tasks of one launch
//     each add one to when they finish; it has fired when it reaches the group's size;
//   * every task triggers at most one event and waits on at most one, and waits only on
//     tasks with smaller numbers, which workers claiming tasks in order have already
//     claimed and are running: no deadlock whatever the residency.
//
// Needs that come from several launches are made single the way MPK normalises its
// graph: a task waits on the group of the latest launch it needs, and whatever it
// needs of earlier launches becomes a need of every task of that group, which are
// visited later (tasks are visited from the last to the first), so when the group has
// fired all of it is done. The tasks one task waits for are joined into one group
// (union-find over the tasks of a launch), so a group is the set of tasks some waiter
// needs together; a launch whose every task is needed whole is one group.
//
// Where a range is not known (an access the analysis could not bound, two different
// parameters passed one buffer, an integer that overflows or a negative integer
// parameter), the dependency is on the whole launch, as the compile-time report of
// `dslc --explain-graph` says. A run of more than kMaxTaskLevelTasks tasks, or whose
// planning takes more than kMaxWork steps, is planned on whole launches altogether,
// in time and memory per launch.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/GraphBundle.h"
#include "support/TaskTable.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::rt {

using tasks::kNoEvent;

struct TaskEvents {
  std::vector<uint32_t> firstTask;   ///< per planned launch: the number of its first task
  std::vector<uint32_t> wait;        ///< per task: the event it waits on, or kNoEvent
  std::vector<uint32_t> trigger;     ///< per task: the event it adds one to, or kNoEvent
  std::vector<uint32_t> eventSize;   ///< per event: the tasks that trigger it
  std::vector<uint32_t> eventLaunch; ///< per event: the planned launch those tasks are of
  /// The plan's dependencies (one per pair of launches) narrowed to tasks, and those
  /// that stayed on whole launches.
  uint32_t narrowedDependencies = 0, wholeDependencies = 0;
};

/// The events of one run of `plan` (planGraph's launches of `graph`). With
/// `wholeLaunches`, every dependency is on whole launches (the baseline).
TaskEvents planTaskEvents(const GraphBundle &graph, std::span<const PlannedGraphLaunch> plan,
                          bool wholeLaunches = false);

} // namespace kiln::rt
