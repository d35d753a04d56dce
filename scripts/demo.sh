#!/usr/bin/env bash
# The demo: builds dslc, compiles examples/softmax.kiln to Tile IR and to PTX, runs it
# over random inputs (on a GPU when there is one, else on the reference interpreter)
# and checks the result against a NumPy reference; then shows reduction-chain fusion
# turning attention written as three loops into one pass.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
echo
echo "== Tile IR of examples/softmax.kiln (dslc examples/softmax.kiln --emit=tir)"
"$build/tools/dslc" "$root/examples/softmax.kiln" --emit=tir
echo
echo "== The start of its PTX for an H100/H200 (dslc examples/softmax.kiln --emit=ptx --target=sm_90a)"
# awk reads all of its input, so dslc never writes into a closed pipe.
"$build/tools/dslc" "$root/examples/softmax.kiln" --emit=ptx --target=sm_90a |
  awk '/^\.visible \.entry/ { shown = 1 } shown && lines++ < 30'
echo "    ..."
echo
echo "== Running it: on a GPU when there is one, else on the reference interpreter"
/usr/bin/python3 "$root/tests/examples/run_kernels.py" --dslc "$build/tools/dslc" --demo --device auto
echo
echo "== Reduction-chain fusion: attention written as three loops runs as one pass"
echo "   (dslc stdlib/attention.kiln --explain-fusion)"
"$build/tools/dslc" "$root/stdlib/attention.kiln" --explain-fusion 2>&1 >/dev/null | grep -E "remark|note"
