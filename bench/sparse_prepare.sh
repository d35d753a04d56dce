#!/usr/bin/env bash
# Prepares the block-sparse attention benchmark for a GPU machine (bench/README.md):
#
#   bench/sparse_prepare.sh [BUILD_DIR]        (default: build; the CMake build of this repo)
#
# compiles bench/kernels/sparse_attention_bf16.kiln for sm_90a in its mappings — row-wise
# and block-wise with 2, 4 and 8 programs per block row (docs/sparsity.md), with key
# blocks of 128, and with 64 query rows on 4 warps, row-wise and with 2 programs per
# row — into
# <repo>/build-sparse (ignored by git), with kiln-run, the commit and each bundle's ptxas
# report. bench/sparse_bench.py runs them there against flex_attention.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
out="$repo/build-sparse"

ninja -C "$build" -j"${KILN_JOBS:-2}" dslc kiln-run
rm -rf "$out"
mkdir -p "$out"
src="$repo/bench/kernels/sparse_attention_bf16.kiln"
compile() { # NAME OPTIONS...
  local name="$1"
  shift
  "$build/tools/dslc" "$src" --target=sm_90a --assume-multiple mask.rows=128 "$@" --emit=bundle -o "$out/$name.kbin"
  "$build/tools/dslc" "$src" --target=sm_90a --assume-multiple mask.rows=128 "$@" --emit=ptx -o "$out/$name.ptx"
  if command -v ptxas >/dev/null; then
    ptxas -v -arch=sm_90a "$out/$name.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" > "$out/$name.ptxas.txt" || true
  fi
}
compile row --sparse-mapping=row
for s in 2 4 8; do
  compile "block$s" --sparse-mapping=block --reduction-split="$s"
done
# Key blocks of 128 (flex_attention's): half the iterations, a mask of 128 x 128 blocks.
compile row-bn128 --sparse-mapping=row -D BN=128
compile block2-bn128 --sparse-mapping=block --reduction-split=2 -D BN=128
# One warpgroup on 64 query rows (the dense kernel's best shape): two programs per SM.
for bn in 32 64; do
  compile "row-64x$bn" --sparse-mapping=row -D BM=64 -D BN="$bn" --num-warps=4
  compile "block2-64x$bn" --sparse-mapping=block --reduction-split=2 -D BM=64 -D BN="$bn" --num-warps=4
done
# Two stages instead of three: 64 KiB of shared memory instead of 96 (dense attention at
# 64 x 64 ran 385 TFLOP/s so, 326 with three).
compile row-64x64-s2 --sparse-mapping=row -D BM=64 -D BN=64 --num-warps=4 --num-stages=2
compile block2-64x64-s2 --sparse-mapping=block --reduction-split=2 -D BM=64 -D BN=64 --num-warps=4 --num-stages=2
cp "$build/tools/kiln-run" "$out/"
strip --strip-unneeded "$out/kiln-run"
commit="$(git -C "$repo" rev-parse --short HEAD)"
git -C "$repo" diff --quiet HEAD -- codegen ir frontend bench || commit="$commit+changes"
echo "$commit" > "$out/commit"
du -sh "$out"
