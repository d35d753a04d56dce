#!/usr/bin/env bash
# Builds and runs the runtime's GPU smoke test (runtime/tests/gpu_smoke.cpp): hand-written
# PTX kernels loaded from a bundle, launched through the C++ API on an NVIDIA GPU, and
# their results compared with the host.
#
#   runtime/tests/gpu_smoke.sh build   compile with g++ into $KILN_SMOKE_BUILD
#                                      (default <repo>/build-gpu-smoke, ignored by git)
#   runtime/tests/gpu_smoke.sh run     run the binary built before
#   runtime/tests/gpu_smoke.sh         both
#
# Building needs g++ (C++20), the CUDA toolkit's cuda.h and libze-dev's headers, but no
# GPU: the binary links libstdc++/libgcc statically and dlopens libcuda.so.1 when it
# runs, so it can be built on a machine without a GPU and carried to one.
# Exit status of `run`: 0 every check passed, 1 a check failed, 2 no CUDA driver or GPU.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${KILN_SMOKE_BUILD:-$repo/build-gpu-smoke}"
bin="$out/kiln_gpu_smoke"
cuda_inc="${KILN_CUDA_INCLUDE_DIR:-${CUDA_HOME:-/usr/local/cuda}/include}"

build() {
  if [[ ! -f "$cuda_inc/cuda.h" ]]; then
    echo "gpu_smoke: no cuda.h in $cuda_inc (set CUDA_HOME or KILN_CUDA_INCLUDE_DIR)" >&2
    exit 1
  fi
  mkdir -p "$out"
  cd "$repo"
  local sources=(runtime/*.cpp runtime/cuda/*.cpp runtime/ze/*.cpp support/FloatFormats.cpp
                 runtime/tests/gpu_smoke.cpp)
  echo "gpu_smoke: building $bin"
  "${CXX:-g++}" -std=c++20 -O2 -Wall -Wextra -I. -isystem "$cuda_inc" "${sources[@]}" \
    -o "$bin" -ldl -pthread -static-libstdc++ -static-libgcc
}

run() {
  if [[ ! -x "$bin" ]]; then
    echo "gpu_smoke: $bin does not exist; run '$0 build' first" >&2
    exit 1
  fi
  local status=0
  "$bin" || status=$?
  case $status in
    0) echo "gpu_smoke: passed" ;;
    2) echo "gpu_smoke: no CUDA driver or GPU on this machine" >&2 ;;
    *) echo "gpu_smoke: FAILED (exit $status)" >&2 ;;
  esac
  return "$status"
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all) build && run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 1 ;;
esac
