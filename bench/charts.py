#!/usr/bin/env python3
#===- charts.py - A benchmark run's results as a PNG chart ---------------------===#
#
# Reads a results.json of bench/device_bench.py (bench/results/<date>-<gpu>-<run>.json)
# and draws, per workload, Kiln's best configuration and each peer's best as a fraction
# of the run's ceiling: the copy bandwidth measured in that run for GB/s workloads, the
# cuBLAS bf16 GEMM throughput for TFLOP/s ones. A workload that no system brings to a
# quarter of its ceiling is not limited by it (MoE routing: a few GB/s): it is drawn as
# each system's speed as a fraction of the fastest one's, and labelled so (and left out
# when Kiln is all there is). The PNG lands beside the JSON (same name, .png) unless -o says otherwise, and
# docs/benchmarks.md shows the latest.
#
#   python3 bench/charts.py bench/results/2026-11-30-h200-l.json [-o chart.png]
#
# Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh installs it).
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display on the build machine or in CI
import matplotlib.pyplot as plt  # noqa: E402


def ceiling(env, unit):
    """The run's ceiling for values in `unit`, or None."""
    if unit == "GB/s":
        return env.get("copy_GBps")
    if unit == "TFLOP/s":
        tflops = env.get("cublas_TFLOPs") or {}
        return max(tflops.values()) if tflops else None
    return None


def fractions(results):
    """{workload: {system: fraction}} of every checked row, each system's best, and the
    unit the fraction is of."""
    env, out, of = results.get("env", {}), {}, {}
    rows = [r for r in results.get("rows", []) if r.get("check", "ok") == "ok" and "ceiling" not in r["workload"]]
    for workload in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == workload]
        best = {}
        top = ceiling(env, mine[0].get("unit"))
        if top and all(r.get("val") for r in mine) and max(r["val"] for r in mine) >= 0.25 * top:
            for r in mine:
                best[r["system"]] = max(best.get(r["system"], 0.0), r["val"] / top)
            of[workload] = "of the ceiling"
        elif all(r.get("us") for r in mine) and len({r["system"] for r in mine}) > 1:
            fastest = min(r["us"] for r in mine)
            for r in mine:
                best[r["system"]] = max(best.get(r["system"], 0.0), fastest / r["us"])
            of[workload] = "of the fastest"
        if best:
            out[workload] = best
    return out, of


def draw(results, path):
    data, of = fractions(results)
    if not data:
        raise SystemExit("charts.py: no checked rows with a value and a ceiling to draw")
    systems = ["kiln"] + sorted({s for best in data.values() for s in best} - {"kiln"})
    colours = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(systems)}
    # One bar per system a workload has, Kiln first; a gap between workloads.
    y, ticks, labels, drawn = 0.0, [], [], set()
    fig, ax = plt.subplots(figsize=(10, 1 + 0.22 * sum(len(b) + 1 for b in data.values())))
    for workload, best in data.items():
        first = y
        for system in [s for s in systems if s in best]:
            label = None if system in drawn else ("Kiln" if system == "kiln" else system)
            drawn.add(system)
            ax.barh(y, best[system], height=0.9, color=colours[system], label=label)
            ax.text(best[system] + 0.005, y, f"{best[system]:.0%}", va="center", fontsize=7)
            y += 1
        ticks.append((first + y - 1) / 2)
        labels.append(f"{workload}\n({of[workload]})")
        y += 1
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("fraction of the ceiling measured in the same run, or of the fastest system (higher is better)")
    env = results.get("env", {})
    ax.set_title(f"{env.get('gpu', 'GPU')}, commit {env.get('commit', '?')}, {env.get('date', '')}", fontsize=9)
    ax.axvline(1.0, color="grey", linewidth=0.6, linestyle="--")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return len(data), len(systems)


def main():
    parser = argparse.ArgumentParser(description="A benchmark run's results.json as a PNG chart")
    parser.add_argument("results")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    try:
        with open(args.results) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        print(f"charts.py: {args.results}: {e}", file=sys.stderr)
        return 1
    path = args.output or os.path.splitext(args.results)[0] + ".png"
    workloads, systems = draw(results, path)
    print(f"charts.py: {path}: {workloads} workloads, {systems} systems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
