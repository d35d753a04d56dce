#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit tests, lit (FileCheck and
# diagnostic) tests, the examples and program corpus on the interpreter, and the
# frontend fuzzer under AddressSanitizer + UndefinedBehaviorSanitizer for a bounded time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/scripts/build.sh"
echo "kiln: running the test suite"
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 600

if [[ "${KILN_SKIP_FUZZ:-0}" != 1 ]]; then
  "$root/scripts/fuzz.sh"
fi
