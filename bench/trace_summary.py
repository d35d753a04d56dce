#!/usr/bin/env python3
#===- trace_summary.py - Where a persistent kernel's time went, launch by launch ===#
#
# Reads the Chrome / Perfetto trace that `dslc run --trace` or `kiln-run --trace` writes
# for one run of a graph as one persistent kernel (docs/graphs.md) and prints, per kernel
# of the graph, a markdown row: how many launches and tasks, the mean span of one launch
# (its first task's start to its last task's end), the mean task time, the mean gap
# between the end of the launch before and this launch's first start, and the median time
# a task spent between its claim and its start (the claim, the table, the wait).
#
# Usage: trace_summary.py TRACE.json
#
#===---------------------------------------------------------------------------===#
import json
import statistics
import sys
from collections import defaultdict


def summarize(path):
    """The table's lines."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    tasks = [e for e in events if e.get("cat") == "task"]
    waits = {e["args"]["task"]: e["dur"] for e in events if e.get("cat") == "wait"}
    launches = defaultdict(list)
    for e in tasks:
        launches[e["args"]["launch"]].append(e)
    order = sorted(launches)
    rows = defaultdict(lambda: {"launches": 0, "tasks": 0, "spans": [], "durs": [], "gaps": [], "waits": []})
    previous_end = None
    for l in order:
        ev = launches[l]
        start = min(e["ts"] for e in ev)
        end = max(e["ts"] + e["dur"] for e in ev)
        row = rows[ev[0]["name"]]
        row["launches"] += 1
        row["tasks"] += len(ev)
        row["spans"].append(end - start)
        row["durs"] += [e["dur"] for e in ev]
        row["waits"] += [waits.get(e["args"]["task"], 0.0) for e in ev]
        if previous_end is not None:
            row["gaps"].append(start - previous_end)
        previous_end = end
    lines = ["| launch | launches | tasks each | mean span µs | mean task µs | mean gap before µs | "
             "median claim to start µs |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in rows.items():
        lines.append("| %s | %d | %d | %.2f | %.2f | %s | %.2f |" % (
            name, r["launches"], r["tasks"] // r["launches"], statistics.mean(r["spans"]), statistics.mean(r["durs"]),
            "%.2f" % statistics.mean(r["gaps"]) if r["gaps"] else "-", statistics.median(r["waits"])))
    return lines


def main():
    print("\n".join(summarize(sys.argv[1])))


if __name__ == "__main__":
    main()
