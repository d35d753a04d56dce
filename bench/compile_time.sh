#!/usr/bin/env bash
# Times dslc from source to PTX on this machine (no GPU needed):
#
#   bench/compile_time.sh [BUILD_DIR] [RUNS]     (defaults: build, 11)
#
# Runs `dslc examples/softmax.kiln --kernel softmax --target=sm_90a --emit=ptx` RUNS times
# as a fresh process and prints the median wall time, next to the median of
# `dslc --version`, which is what starting the process and loading libLLVM.so alone
# costs, and dslc's own --time-passes report of one run. Run it on an idle machine.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
runs="${2:-11}"
dslc="$build/tools/dslc"
[[ -x "$dslc" ]] || { echo "compile_time.sh: no dslc in $build/tools (build it first)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

median_ms() { # COMMAND...: median wall time of RUNS fresh processes, in ms
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    times.append((time.perf_counter() - t) * 1e3)
print(f"{statistics.median(times):.1f}")
PY
}

compile=("$dslc" "$repo/examples/softmax.kiln" --kernel softmax --target=sm_90a --emit=ptx -o "$out/softmax.ptx")
echo "dslc examples/softmax.kiln -> PTX (sm_90a): $(median_ms "${compile[@]}") ms wall, median of $runs"
echo "dslc --version (process start, libLLVM.so load): $(median_ms "$dslc" --version) ms wall"
"${compile[@]}" --time-passes 2>&1 | grep -E "Total|codegen|frontend"
