#!/usr/bin/env bash
# The GPU check (docs/testing.md, "GPU check"): every test kernel, example and corpus
# program run on an NVIDIA GPU and compared with the reference interpreter, the runtime's
# smoke test, and the fused stdlib workloads against PyTorch (tests/gpu/torch_reference.py,
# skipped where PyTorch has no GPU). It runs in two halves, so the GPU machine needs only
# the driver (and PyTorch for the last part):
#
#   tests/gpu/run-on-device.sh prepare   on the build machine: builds kiln-gpu-prepare,
#                                        kiln-gpu-run, the runtime smoke test and
#                                        libkiln_runtime.so, writes every case (bundles
#                                        for sm_80 and sm_90a, random inputs, the
#                                        interpreter's outputs) and the PyTorch check's
#                                        bundles into build-gpu/ (the cases packed in
#                                        cases.tar.gz), and prints its size
#   tests/gpu/run-on-device.sh run       on the GPU machine, in a copy of the repository
#                                        that has build-gpu/: runs everything and prints
#                                        a table
#
# Environment: KILN_BUILD_DIR (default <repo>/build) is the CMake build to use for
# `prepare`; KILN_JOBS (default 2) its parallelism; KILN_SEED fixes the inputs;
# KILN_GPU_CUDA_SOURCE=1 adds to each case the kernel as dslc --emit=cuda prints it,
# built by nvcc (part "differential (cuda-sm_90a)", docs/source.md);
# KILN_GPU_LOG_DIR, when set, receives the logs of `run`.
# Exit status of `run`: 0 everything passed, 1 something failed, 77 no CUDA driver/GPU.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$repo/build-gpu"
build="${KILN_BUILD_DIR:-$repo/build}"
# The folder travels to the GPU machine; stay far below what a copy there may carry.
carry_limit_mib=64

prepare() {
  echo "gpu-check: building in $build"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  local log
  if ! log="$(ninja -C "$build" -j"${KILN_JOBS:-2}" kiln-gpu-prepare kiln-gpu-run kiln_gpu_smoke dslc \
              kiln_runtime_shared 2>&1)"; then
    echo "$log" | tail -n 40 >&2
    echo "gpu-check: the build failed" >&2
    exit 1
  fi
  local prep run smoke
  prep="$(find "$build" -name kiln-gpu-prepare -type f -perm -u+x | head -n1)"
  run="$(find "$build" -name kiln-gpu-run -type f -perm -u+x | head -n1)"
  smoke="$(find "$build" -name kiln_gpu_smoke -type f -perm -u+x | head -n1)"

  rm -rf "$out"
  mkdir -p "$out/bin"
  cp "$run" "$smoke" "$build/runtime/libkiln_runtime.so" "$out/bin/"
  strip --strip-unneeded "$out"/bin/* # symbols the GPU machine never reads; the library keeps its exports
  # The GPU machine has the driver and glibc, nothing else of ours: no libstdc++,
  # no LLVM. Refuse binaries that would need them.
  local b
  for b in "$out"/bin/*; do
    if readelf -d "$b" | grep -E 'NEEDED.*(libstdc\+\+|libgcc_s|libLLVM)'; then
      echo "gpu-check: $b needs a library the GPU machine lacks" >&2
      exit 1
    fi
  done
  echo "gpu-check: preparing the cases"
  "$prep" "$out/cases" | tee "$out/prepare.log"
  python3 "$repo/tests/gpu/torch_reference.py" prepare --dslc "$build/tools/dslc" --out "$out/torch"

  # The cases travel packed: their PTX shrinks several times (the random inputs barely),
  # and `run` unpacks them with the tar and gzip every Linux has.
  local count
  count="$(find "$out/cases" -name case.txt | wc -l)"
  tar -C "$out" -czf "$out/cases.tar.gz" cases
  rm -rf "$out/cases"
  local bytes
  bytes="$(du -sb "$out" | cut -f1)"
  echo "gpu-check: ${out#"$repo"/} is $(awk "BEGIN { printf \"%.1f\", $bytes / 1048576 }") MiB" \
    "($count cases, packed); carry it to the GPU machine (limit $carry_limit_mib MiB)"
  # Three quarters at most: the rest is room for what a call carries beside it.
  if (( bytes > carry_limit_mib * 1048576 * 3 / 4 )); then
    echo "gpu-check: that is more than three quarters of the limit; shrink the cases" >&2
    exit 1
  fi
}

run() {
  if [[ ! -x "$out/bin/kiln-gpu-run" ]]; then
    echo "gpu-check: no $out/bin/kiln-gpu-run; run '$0 prepare' on the build machine first" >&2
    exit 1
  fi
  local logs="${KILN_GPU_LOG_DIR:-$out}"
  mkdir -p "$logs"
  if [[ -f "$out/cases.tar.gz" ]]; then
    rm -rf "$out/cases"
    tar -C "$out" -xzf "$out/cases.tar.gz"
  fi
  local diff_status=0 smoke_status=0
  "$out/bin/kiln-gpu-run" "$out/cases" 2>&1 | tee "$logs/gpu-run.log" || diff_status=${PIPESTATUS[0]}
  if (( diff_status == 77 )); then
    echo "gpu-check: no CUDA driver or GPU on this machine" >&2
    exit 77
  fi
  echo
  "$out/bin/kiln_gpu_smoke" 2>&1 | tee "$logs/gpu-smoke.log" || smoke_status=${PIPESTATUS[0]}
  echo
  local torch_status=0
  python3 "$repo/tests/gpu/torch_reference.py" run "$out/torch" --lib "$out/bin/libkiln_runtime.so" 2>&1 |
    tee "$logs/torch-reference.log" || torch_status=${PIPESTATUS[0]}
  echo
  echo "GPU check: $(grep -m1 '^device: ' "$logs/gpu-run.log" | cut -d' ' -f2-)"
  printf '  %-30s %8s %8s %8s\n' part passed failed skipped
  # kiln-gpu-run's summary lines: "  sm_80: 120 passed, 0 failed, 0 skipped".
  local line target p f s
  while read -r line; do
    target="${line%%:*}"
    read -r p f s <<<"$(echo "${line#*:}" | tr -dc '0-9 ' | xargs)"
    printf '  %-30s %8s %8s %8s\n' "differential ($target)" "$p" "$f" "$s"
  done < <(sed -n '/^summary/,$p' "$logs/gpu-run.log" | grep -E '^  (sm_|cuda-|\(unreadable)' || true)
  local smoke_result="passed"
  (( smoke_status == 0 )) || smoke_result="FAILED (exit $smoke_status)"
  printf '  %-30s %s\n' "runtime smoke test" "$smoke_result"
  local torch_result
  case "$torch_status" in
    0) torch_result="$(grep -m1 -oE '[0-9]+ passed, [0-9]+ failed' "$logs/torch-reference.log")" ;;
    77) torch_result="skipped (no PyTorch with CUDA)" ;;
    *) torch_result="FAILED (exit $torch_status)" ;;
  esac
  printf '  %-30s %s\n' "torch reference" "$torch_result"
  if (( diff_status != 0 || smoke_status != 0 || (torch_status != 0 && torch_status != 77) )); then
    echo "gpu-check: FAILED (kiln-gpu-run exit $diff_status, smoke test exit $smoke_status," \
         "torch reference exit $torch_status)"
    exit 1
  fi
  echo "gpu-check: all passed"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare|run   (see the comment at the top of this file)" >&2; exit 2 ;;
esac
