#!/usr/bin/env bash
# Prepares the encoder-layer benchmark for a GPU machine (bench/README.md):
#
#   bench/encoder_prepare.sh [BUILD_DIR]       (default: build; the CMake build of this repo)
#
# compiles the kernels of stdlib/encoder_layer.kiln for sm_90a at BERT-base's widths
# (12 heads of 64, E = 768, FFN 3072: rows of 768 padded to NP = 1024 in the fused
# layernorm) into <repo>/build-encoder (ignored by git), with kiln-run and the commit.
# bench/encoder_bench.py runs the layer there, in both fusion scopes, against the same
# layer in PyTorch eager with flex_attention.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
out="$repo/build-encoder"

ninja -C "$build" -j"${KILN_JOBS:-2}" dslc kiln-run
rm -rf "$out"
mkdir -p "$out"
src="$repo/stdlib/encoder_layer.kiln"
compile() { # NAME KERNEL OPTIONS...
  local name="$1" kernel="$2"
  shift 2
  "$build/tools/dslc" "$src" --kernel "$kernel" --target=sm_90a "$@" --emit=bundle -o "$out/$name.kbin"
}
# The projections' shapes are multiples of 128 (T, 3E, E, FFN) and of 64 (K): `linear`
# runs unmasked (EVEN) in 128 x 128 tiles, streaming its operands, as
# bench/kernels/matmul_bf16.kiln does; LINEAR_TILE in encoder_bench.py is the tile.
even=(-D EVEN=true -D BM=128 -D BN=128 -D BK=64 --num-warps=8 --num-stages=3
      --assume-multiple M=128 --assume-multiple N=128 --assume-multiple K=64)
compile linear linear "${even[@]}"
compile linear_gelu linear -D ACT=1 "${even[@]}"
compile linear_residual_layernorm linear_residual_layernorm -D NP=1024
compile residual_layernorm residual_layernorm -D NP=1024
compile attention_row encoder_attention -D H=12 --sparse-mapping=row
compile attention_block4 encoder_attention -D H=12 --sparse-mapping=block --reduction-split=4
# The configs the JIT's @autotune chose on the H200 for T = 4096 (2026-12-02,
# examples/host/encoder_layer.cpp 4096 --time-only), one bundle per projection shape;
# TUNED_LINEAR and TUNED_ROWS in encoder_bench.py are their tiles.
tuned() { # NAME KERNEL BM BN WARPS STAGES OPTIONS...
  local name="$1" kernel="$2" bm="$3" bn="$4" warps="$5" stages="$6"
  shift 6
  compile "$name" "$kernel" -D EVEN=true -D BM="$bm" -D BN="$bn" -D BK=64 --num-warps="$warps" \
    --num-stages="$stages" --assume-multiple M=128 --assume-multiple N=128 --assume-multiple K=64 "$@"
}
tuned linear_n2304_k768 linear 128 128 8 3
tuned linear_n768_k768 linear 128 128 8 4
tuned linear_gelu_n3072_k768 linear 64 128 4 4 -D ACT=1
tuned linear_n768_k3072 linear 128 128 8 3
compile linear_residual_layernorm_k768 linear_residual_layernorm -D NP=1024 -D BM=16 --num-warps=16
compile linear_residual_layernorm_k3072 linear_residual_layernorm -D NP=1024 -D BM=16 --num-warps=8
compile residual_layernorm_tuned residual_layernorm -D NP=1024 -D BM=8 --num-warps=8
cp "$build/tools/kiln-run" "$out/"
strip --strip-unneeded "$out/kiln-run"
commit="$(git -C "$repo" rev-parse --short HEAD)"
git -C "$repo" diff --quiet HEAD -- codegen ir frontend stdlib bench || commit="$commit+changes"
echo "$commit" > "$out/commit"
du -sh "$out"
