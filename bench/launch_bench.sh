#!/usr/bin/env bash
# Host time per launch (bench/README.md, "Launch overhead"), in two halves:
#
#   bench/launch_bench.sh prepare [BUILD_DIR]   on the build machine (default BUILD_DIR:
#       build): builds kiln-launch-bench and libkiln_runtime.so, compiles
#       examples/vector_add.kiln and stdlib/softmax.kiln for sm_90a to bundles, and puts
#       them, with the commit and the `kiln` package (its compiled launcher built here),
#       into <repo>/build-launch (ignored by git)
#   bench/launch_bench.sh run                   on the GPU machine, in a copy of the
#       repository that has build-launch/: first the `kiln` package inside torch
#       programs (tests/gpu/python_checks.py), then the C and C++ rows
#       (kiln-launch-bench), then the Python rows against Triton and a torch op
#       (bench/launch_bench.py), all in this one call so that every figure comes from
#       the same device state
#
# KILN_LAUNCHES (default 20000) is the launches each row times.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/build-launch"

prepare() {
  local build="${1:-$repo/build}"
  ninja -C "$build" -j"${KILN_JOBS:-2}" kiln-launch-bench kiln_runtime_shared dslc
  rm -rf "$out"
  mkdir -p "$out"
  cp "$build/bench/kiln-launch-bench" "$build/runtime/libkiln_runtime.so" "$out/"
  strip --strip-unneeded "$out/kiln-launch-bench" "$out/libkiln_runtime.so"
  "$build/tools/dslc" "$repo/examples/vector_add.kiln" --target=sm_90a --emit=bundle -o "$out/vector_add.kbin"
  "$build/tools/dslc" "$repo/stdlib/softmax.kiln" --kernel softmax --target=sm_90a --emit=bundle \
    -o "$out/softmax.kbin"
  "$repo/scripts/stage-python-package.sh" "$out/python"
  commit="$(git -C "$repo" rev-parse --short HEAD)"
  git -C "$repo" diff --quiet HEAD -- runtime python bench || commit="$commit+changes"
  echo "$commit" > "$out/commit"
  du -sh "$out"
}

run() {
  local launches="${KILN_LAUNCHES:-20000}" status=0
  echo "launch-bench: build $(cat "$out/commit")"
  export KILN_RUNTIME_LIBRARY="$out/libkiln_runtime.so" PYTHONPATH="$out/python${PYTHONPATH:+:$PYTHONPATH}"
  python3 -c 'import kiln._launch as l; print("launch-bench: kernel[grid] written in", "C" if l.COMPILED else "Python")'
  python3 "$repo/tests/gpu/python_checks.py" --bundles "$out" || status=1
  echo
  "$out/kiln-launch-bench" "$out/vector_add.kbin" "$launches" || status=1
  echo
  python3 "$repo/bench/launch_bench.py" --bundle "$out/vector_add.kbin" --launches "$launches" || status=1
  return "$status"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) run ;;
  *) echo "usage: bench/launch_bench.sh prepare [BUILD_DIR] | run" >&2; exit 2 ;;
esac
