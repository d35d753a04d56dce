#!/usr/bin/env bash
# dslc --emit=cuda against nvcc: every program of tests/spirv/programs/ that the printer
# covers (docs/source.md) is printed as CUDA C++ and compiled with nvcc for sm_90a and
# sm_80, warnings as errors. A program it does not print must be refused with E0109.
# Running the printed code on a GPU is the GPU check's part; this proves it builds.
#
#   tests/source/cuda_compiles.sh DSLC
#
# Exit status: 0 all printed programs compiled, 1 a failure, 77 no nvcc here.
set -uo pipefail
dslc="$1"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [[ ! -x "$nvcc" ]]; then
  echo "cuda_compiles: no nvcc (set NVCC or install the CUDA toolkit); skipped"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printed=0 refused=0 failed=0
for spec in "$repo"/tests/spirv/programs/*.spec; do
  name="$(basename "$spec" .spec)"
  source="$(sed -n 's|^// @source ||p' "$spec")"
  kernel="$(sed -n 's|^// @kernel ||p' "$spec")"
  defines=()
  while read -r d; do [[ -n "$d" ]] && defines+=(-D "$d"); done < <(sed -n 's|^// @define ||p' "$spec")
  if ! "$dslc" "$repo/$source" --kernel "$kernel" "${defines[@]}" --emit=cuda -o "$work/$name.cu" 2>"$work/err"; then
    if grep -q 'error\[E0109\]: --emit=cuda does not print' "$work/err"; then
      refused=$((refused + 1))
    else
      echo "FAIL $name: dslc --emit=cuda failed without E0109:"; cat "$work/err"; failed=$((failed + 1))
    fi
    continue
  fi
  printed=$((printed + 1))
  for arch in sm_90a sm_80; do
    if ! "$nvcc" -arch="$arch" -fmad=false -Werror all-warnings -c "$work/$name.cu" -o "$work/$name.o" \
        >"$work/nvcc" 2>&1; then
      echo "FAIL $name: nvcc -arch=$arch:"; head -20 "$work/nvcc"; failed=$((failed + 1))
    fi
  done
done
echo "cuda_compiles: $printed programs printed and compiled for sm_90a and sm_80, $refused refused (E0109)," \
  "$failed failures"
# The printer's coverage must not fall back unnoticed (45 of the corpus print today).
if ((printed < 45)); then
  echo "FAIL: only $printed programs printed"
  failed=$((failed + 1))
fi
((failed == 0))
