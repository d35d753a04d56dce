#!/usr/bin/env bash
# Configures and builds Kiln into build/ (or $KILN_BUILD_DIR). Installs the Debian
# packages it needs first. Extra arguments go to CMake.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
jobs="$(nproc 2>/dev/null || echo 2)"
echo "kiln: configuring $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "kiln: building with $jobs jobs (a clean build takes a few minutes on 2 cores)"
cmake --build "$build" -j "$jobs"
