#!/usr/bin/env bash
# Builds the frontend with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs the mutation fuzzer for KILN_FUZZ_SECONDS (default 120).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_ASAN_BUILD_DIR:-$root/build-asan}"
seconds="${KILN_FUZZ_SECONDS:-120}"
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/scripts/install-deps.sh"
echo "kiln: building the sanitized frontend fuzzer in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON \
      -DKILN_BUILD_TOOLS=OFF -DKILN_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build "$build" -j "$jobs" --target kiln-fuzz-frontend
echo "kiln: fuzzing the frontend for $seconds s under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$build" -R '^fuzz\.frontend$' --output-on-failure
