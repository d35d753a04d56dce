#!/usr/bin/env python3
#===- checked_cost.py - What checked mode costs on the benchmark workloads ------===#
#
# Runs kiln-bench over the same workloads compiled twice, unchecked (bench/prepare.sh)
# and in checked mode (bench/prepare.sh --checked, docs/checked.md), in one process
# after the other on the same GPU, and prints per workload the best configuration's
# time of each and their ratio. kiln-bench checks every result against its CPU
# reference first; a checked kernel that touched memory outside its buffers would fail
# there with the access named, so a clean run also says the workloads stay in bounds.
#
# Usage: checked_cost.py [--iters N] [--only TEXT] BUNDLES CHECKED_BUNDLES
#        (default: build-bench build-bench-checked; kiln-bench is taken from BUNDLES)
#
#===---------------------------------------------------------------------------===#
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(bench, bundles, iters, only):
    """{name: row} of kiln-bench's JSON lines for one bundle folder."""
    cmd = [bench, "--iters", str(iters)] + (["--only", only] if only else []) + [bundles]
    done = subprocess.run(cmd, capture_output=True, text=True)
    rows = {}
    for line in done.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        rows[row["name"]] = row
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-2000:])
    return rows, done.returncode


def main():
    parser = argparse.ArgumentParser(description="What checked mode costs on the benchmark workloads.")
    parser.add_argument("bundles", nargs="?", default="build-bench")
    parser.add_argument("checked", nargs="?", default="build-bench-checked")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    bench = os.path.join(args.bundles, "kiln-bench")
    for folder in (args.bundles, args.checked):
        if not os.path.isdir(folder):
            parser.error(f"{folder} is not a folder of bundles (bench/prepare.sh [--checked] makes them)")
    if not os.access(bench, os.X_OK):
        parser.error(f"no kiln-bench in {args.bundles} (bench/prepare.sh puts it there)")
    plain, status_plain = run(bench, args.bundles, args.iters, args.only)
    checked, status_checked = run(bench, args.checked, args.iters, args.only)

    # The best configuration of each workload, by label, in each mode.
    best = {}
    failures = []
    for mode, rows in (("unchecked", plain), ("checked", checked)):
        for name, row in rows.items():
            if row.get("check") != "ok" or "us" not in row:
                failures.append(f"{mode} {name}: {row.get('check')}")
                continue
            slot = best.setdefault(row["workload"], {})
            if mode not in slot or row["us"] < slot[mode]["us"]:
                slot[mode] = row
    print("| workload | unchecked µs (best config) | checked µs (best config) | checked / unchecked |")
    print("| --- | --- | --- | --- |")
    ratios = {"GB/s": [], "TFLOP/s": []}
    for label in sorted(best):
        pair = best[label]
        if "unchecked" not in pair or "checked" not in pair:
            continue
        a, b = pair["unchecked"], pair["checked"]
        ratio = b["us"] / a["us"]
        ratios[a["unit"]].append(ratio)
        print(f"| {label} | {a['us']:.2f} ({a['name']}) | {b['us']:.2f} ({b['name']}) | {ratio:.2f}x |")
    for unit, kind in (("GB/s", "memory-bound"), ("TFLOP/s", "compute-bound")):
        if ratios[unit]:
            print(f"{kind} workloads: checked / unchecked median {statistics.median(ratios[unit]):.2f}x, "
                  f"range {min(ratios[unit]):.2f}x-{max(ratios[unit]):.2f}x over {len(ratios[unit])}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures or status_plain or status_checked else 0


if __name__ == "__main__":
    sys.exit(main())
