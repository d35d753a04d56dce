#!/usr/bin/env bash
# The demo: builds dslc, compiles examples/softmax.kiln, runs it on the reference
# interpreter over random inputs and checks the result against a NumPy reference.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
echo
echo "== Tile IR of examples/softmax.kiln (dslc examples/softmax.kiln --emit=tir)"
"$build/tools/dslc" "$root/examples/softmax.kiln" --emit=tir
echo
echo "== Running it on the interpreter"
/usr/bin/python3 "$root/tests/examples/run_kernels.py" --dslc "$build/tools/dslc" --demo
