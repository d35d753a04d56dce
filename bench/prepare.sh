#!/usr/bin/env bash
# Prepares the benchmark run for a GPU machine (bench/README.md):
#
#   bench/prepare.sh [--checked] [BUILD_DIR]   (default: build; the CMake build of this repo)
#
# builds kiln-bench and kiln-bench-prepare in BUILD_DIR, compiles every workload to a
# bundle in <repo>/build-bench (ignored by git), copies kiln-bench there, records the
# commit, and writes each kernel's ptxas resource report (registers, spills, shared
# memory) when ptxas is on this machine. <repo>/build-bench is then all the GPU machine
# needs besides this repository's bench/ scripts. With --checked the workloads are
# compiled in checked mode (docs/checked.md) into <repo>/build-bench-checked, for
# `kiln-bench build-bench-checked` beside `kiln-bench build-bench`: what checking costs.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
checked=()
out="$repo/build-bench"
if [[ "${1:-}" == "--checked" ]]; then
  checked=(--checked)
  out="$repo/build-bench-checked"
  shift
fi
build="${1:-$repo/build}"

ninja -C "$build" -j"${KILN_JOBS:-2}" kiln-bench kiln-bench-prepare
rm -rf "$out"
mkdir -p "$out"
"$build/bench/kiln-bench-prepare" --root "$repo" "${checked[@]}" "$out"
cp "$build/bench/kiln-bench" "$out/"
commit="$(git -C "$repo" rev-parse --short HEAD)"
git -C "$repo" diff --quiet HEAD -- codegen bench examples || commit="$commit+changes"
echo "$commit" > "$out/commit"
if command -v ptxas >/dev/null; then
  for ptx in "$out"/*.ptx; do
    ptxas -v -arch=sm_90a "$ptx" -o /dev/null 2>&1 | grep -E "registers|spill" > "${ptx%.ptx}.ptxas.txt" || true
  done
fi
du -sh "$out"
