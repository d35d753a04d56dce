#!/usr/bin/env bash
# The JIT on a GPU machine that has the driver but no LLVM and no Kiln build
# (docs/testing.md, "JIT on the GPU"). It runs in two halves:
#
#   tests/gpu/jit-on-device.sh prepare [--python | --agent] [BUILD_DIR]
#       on the build machine: builds softmax_jit, autotune_add, encoder_layer, dslc, kiln-run and kiln-agent
#       in BUILD_DIR (default: $KILN_BUILD_DIR, else <repo>/build) and packs into
#       build-jitgpu/ the
#       shared libraries they load that a plain Ubuntu 24.04 may lack (found with ldd;
#       libLLVM and the rest in libs.tar.zst), the binaries and libdevice (bin.tar.zst),
#       and a zstd to unpack them. Prints the folder's size; refuses more than 56 MiB.
#   tests/gpu/jit-on-device.sh run [PART...]
#       on the GPU machine, in a copy of the repository that has build-jitgpu/: unpacks
#       the libraries under /tmp, then with a fresh kernel cache runs
#         softmax_jit twice       the second run must load the kernel from the cache,
#         autotune_add twice      the second run must reuse the tuning records,
#         dslc run --device cuda  on examples/vector_add.kiln, against numpy, and on
#                                 stdlib/sparse_attention.kiln with a mask built on the
#                                 GPU from a predicate, against the interpreter,
#         encoder_layer twice     the first run must measure the fusion scope
#                                 (Jit::choose) and tune every kernel's @autotune
#                                 configs, the second take both from the cache;
#                                 both scopes checked against the CPU's layer;
#                                 then once at 4096 tokens, timed only,
#         checked                 tests/gpu/checked_checks.py: checked mode's bad
#                                 accesses reported and stopped, and its cost,
#         graphs                  tests/gpu/graph_checks.py: graphs as one persistent
#                                 kernel and launch by launch against the interpreter,
#                                 repeated runs, the watchdog, time per run,
#         graph-bench             bench/graph_bench.py: the decode chain, persistent,
#                                 launch by launch and in PyTorch, same process,
#         llama-bench             bench/llama_bench.py: the Llama-3.2-1B-shaped decode
#                                 step, checked against f64, then timed the same ways,
#         agent                   (prepare --agent, which packs kiln-agent and dslc alone,
#                                 libcurl taken from the GPU machine)
#                                 tests/gpu/agent_checks.py: kiln-agent verify, time,
#                                 solve and bench with --device cuda against a scripted
#                                 endpoint (each verdict; a >10x claim verified again),
#         python                  (prepare --python, which packs libkiln.so and dslc in
#                                 place of the programs above) the `kiln` package:
#                                 examples/python/*.py, the softmax example again from
#                                 the disk cache, tests/gpu/python_checks.py --jit,
#       and prints a PASS/FAIL/SKIP table. PARTs (softmax, autotune, dslc, checked, sparse,
#       encoder, graphs, graph-bench, llama-bench, agent; python) run only those steps.
#
# Environment: KILN_JOBS (default 2) is the build's parallelism; KILN_GPU_LOG_DIR, when
# set, keeps the logs of `run` (otherwise they are under the /tmp folder it prints);
# KILN_GRAPH_BENCH_VARIANTS and KILN_LLAMA_BENCH_VARIANTS name variants the two
# benchmarks also time, ';' between variants, ',' between items: a graph const
# (ROWS=8), a dslc option (--num-warps=8), an environment variable (env:NAME=1) or
# another source file for the graph (source:PATH, relative to the repository).
# Exit status of `run`: 0 everything passed or was skipped, 1 something failed, 77 no
# CUDA driver or GPU on this machine.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$repo/build-jitgpu"
# What the copy to the GPU machine may carry in all is 64 MiB; leave room for the rest.
limit_mib=56
# Libraries every Linux system has in a compatible version (the build machine's glibc
# and libstdc++ are older than Ubuntu 24.04's): never carried.
core_libs='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so)'
libdevice=/usr/local/cuda/nvvm/libdevice/libdevice.10.bc

say() { echo "jit-on-device: $*"; }
die() { echo "jit-on-device: $*" >&2; exit 1; }
mib() { awk "BEGIN { printf \"%.1f\", $1 / 1048576 }"; }

# The non-core libraries `ldd` resolves for the given binaries, as "soname path" lines.
needed_libs() {
  local b
  for b in "$@"; do
    if ldd "$b" | grep -q 'not found'; then
      ldd "$b" | grep 'not found' >&2
      die "$b needs libraries this machine lacks"
    fi
    ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
  done | grep -Ev "$core_libs" | sort -u
}

prepare() {
  # --python: the `kiln` package's JIT instead of the C++ programs (the two do not fit
  # in one carry): libkiln.so and dslc, for the part `python`.
  # --agent: kiln-agent and dslc alone, for the part `agent`.
  local python=0 agent=0
  if [[ "${1:-}" == "--python" ]]; then
    python=1
    shift
  elif [[ "${1:-}" == "--agent" ]]; then
    agent=1
    shift
  fi
  local build="${1:-${KILN_BUILD_DIR:-$repo/build}}"
  local -a targets bins carried_for=()
  if (( python )); then
    targets=(kiln_jit_shared dslc)
    bins=("$build/jit/libkiln.so" "$build/tools/dslc")
  elif (( agent )); then
    targets=(kiln-agent dslc)
    bins=("$build/tools/kiln-agent" "$build/tools/dslc")
    # libcurl and what it loads come from the GPU machine (Ubuntu has them; Debian's
    # would not fit): `run` says so if they are missing there.
    carried_for=("$build/tools/dslc")
  else
    targets=(softmax_jit autotune_add encoder_layer dslc kiln-run)
    bins=("$build/examples/host/softmax_jit" "$build/examples/host/autotune_add"
          "$build/examples/host/encoder_layer" "$build/tools/dslc" "$build/tools/kiln-run")
  fi
  say "building ${targets[*]} in $build"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  local log
  if ! log="$(ninja -C "$build" -j"${KILN_JOBS:-2}" "${targets[@]}" 2>&1)"; then
    echo "$log" | tail -n 40 >&2
    die "the build failed"
  fi
  local b
  for b in "${bins[@]}"; do
    [[ -f "$b" ]] || die "the build has no $b"
  done
  command -v zstd >/dev/null || die "zstd is needed to compress the libraries"
  [[ -f "$libdevice" ]] || die "no libdevice at $libdevice (softmax's exp needs it); install the CUDA toolkit's nvvm"

  mkdir -p "$out/zstd"
  rm -rf "$out/bin" "$out"/zstd/* "$out/bin.tar.zst" "$out/libdevice.10.bc"
  # The binaries and libdevice: compressed too, as every MiB counts.
  local stage
  stage="$(mktemp -d)"
  mkdir "$stage/bin"
  cp "${bins[@]}" "$stage/bin/"
  cp "$libdevice" "$stage/libdevice.10.bc"
  tar -C "$stage" -cf - . | zstd -q -19 -T"${KILN_JOBS:-2}" -o "$out/bin.tar.zst"
  rm -rf "$stage"

  # The libraries, in one archive. Compressing libLLVM takes minutes, so an archive of
  # the same files (by name, size and time) is kept.
  local list
  (( ${#carried_for[@]} )) || carried_for=("${bins[@]}")
  list="$(needed_libs "${carried_for[@]}")"
  local stamp
  stamp="$(while read -r soname path; do
    echo "$soname $(stat -Lc '%s %Y' "$path") $path"
  done <<<"$list")"
  if [[ -f "$out/libs.tar.zst" && -f "$out/libs.txt" && "$(cat "$out/libs.txt")" == "$stamp" ]]; then
    say "the libraries are unchanged; keeping libs.tar.zst"
  else
    stage="$(mktemp -d)"
    local soname path
    while read -r soname path; do
      cp -L "$path" "$stage/$soname"
    done <<<"$list"
    say "compressing $(wc -l <<<"$list") libraries ($(mib "$(du -sb "$stage" | cut -f1)") MiB) with zstd -19;" \
      "this takes a few minutes"
    rm -f "$out/libs.tar.zst" "$out/libs.txt"
    tar -C "$stage" -cf - . | zstd -q -19 -T"${KILN_JOBS:-2}" -o "$out/libs.tar.zst"
    rm -rf "$stage"
    echo "$stamp" >"$out/libs.txt"
  fi

  # zstd itself, for a machine without it: the binary and its non-core libraries.
  local zstd_bin
  zstd_bin="$(command -v zstd)"
  cp -L "$zstd_bin" "$out/zstd/zstd"
  while read -r soname path; do
    cp -L "$path" "$out/zstd/$soname"
  done < <(needed_libs "$zstd_bin")
  git -C "$repo" rev-parse HEAD >"$out/commit.txt" 2>/dev/null || true
  rm -rf "$out/python"
  if (( python )); then
    echo python >"$out/mode"
    "$repo/scripts/stage-python-package.sh" "$out/python"
  elif (( agent )); then
    echo agent >"$out/mode"
  else
    echo programs >"$out/mode"
  fi

  local bytes
  bytes="$(du -sb "$out" | cut -f1)"
  say "carried libraries:"
  awk '{ printf "  %-28s %s\n", $1, $4 }' "$out/libs.txt"
  say "${out#"$repo"/} is $(mib "$bytes") MiB (libs.tar.zst $(mib "$(stat -c %s "$out/libs.tar.zst")") MiB," \
    "bin.tar.zst $(mib "$(stat -c %s "$out/bin.tar.zst")") MiB);" \
    "carry it to the GPU machine (limit $limit_mib MiB)"
  if (( bytes > limit_mib * 1048576 )); then
    die "that is more than $limit_mib MiB; it would not fit beside the repository"
  fi
}

# Decompresses stdin to stdout with whatever this machine offers.
decompress() {
  if command -v zstd >/dev/null; then
    zstd -dc
  elif LD_LIBRARY_PATH="$out/zstd" "$out/zstd/zstd" --version >/dev/null 2>&1; then
    LD_LIBRARY_PATH="$out/zstd" "$out/zstd/zstd" -dc
  elif python3 -c 'import zstandard' 2>/dev/null; then
    python3 -c 'import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(sys.stdin.buffer, sys.stdout.buffer)'
  else
    echo "jit-on-device: no way to decompress: no zstd here, the carried one does not run, no python3 zstandard" >&2
    return 1
  fi
}

# "path inode mtime" of every cache file ending in $2, to see whether a run rewrote any.
cache_files() {
  find "$1" -name "*$2" -printf '%p %i %T@\n' 2>/dev/null | sort
}

run() {
  local -a parts=("$@")
  local part
  for part in "${parts[@]}"; do
    [[ " softmax autotune dslc checked sparse encoder graphs graph-bench llama-bench agent python " == *" $part "* ]] ||
      die "unknown part '$part' (softmax, autotune, dslc, checked, sparse, encoder, graphs, graph-bench," \
        "llama-bench, agent, python)"
  done
  # A folder prepared with --python holds the package's JIT alone: its one part.
  if [[ "$(cat "$out/mode" 2>/dev/null)" == python ]]; then
    for part in "${parts[@]}"; do
      [[ "$part" == python ]] || die "build-jitgpu was prepared with --python: only the part 'python' runs"
    done
    parts=(python)
  elif [[ "$(cat "$out/mode" 2>/dev/null)" == agent ]]; then
    for part in "${parts[@]}"; do
      [[ "$part" == agent ]] || die "build-jitgpu was prepared with --agent: only the part 'agent' runs"
    done
    parts=(agent)
  elif [[ " ${parts[*]} " == *" python "* ]]; then
    die "the part 'python' needs build-jitgpu prepared with '$0 prepare --python'"
  elif [[ " ${parts[*]} " == *" agent "* ]]; then
    die "the part 'agent' needs build-jitgpu prepared with '$0 prepare --agent'"
  fi
  [[ -f "$out/bin.tar.zst" && -f "$out/libs.tar.zst" ]] ||
    die "no $out/bin.tar.zst or libs.tar.zst; run '$0 prepare' on the build machine first"
  local tmp
  tmp="$(mktemp -d /tmp/kiln-jitgpu.XXXXXX)"
  local logs="${KILN_GPU_LOG_DIR:-$tmp/logs}"
  mkdir -p "$tmp/lib" "$logs"
  # The unpacked libraries are 200 MiB: gone with the run; the logs and cache stay. The
  # trap runs after this function has returned, so it gets the path itself, not $tmp.
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp/lib' '$tmp/bin' '$tmp/libdevice.10.bc'" EXIT
  say "unpacking into $tmp"
  decompress <"$out/libs.tar.zst" | tar -C "$tmp/lib" -xf - || die "cannot unpack libs.tar.zst"
  decompress <"$out/bin.tar.zst" | tar -C "$tmp" -xf - || die "cannot unpack bin.tar.zst"
  local bin="$tmp/bin"
  # Python keeps the machine's own libraries; the carried ones are for our binaries.
  local system_ld="${LD_LIBRARY_PATH:-}"
  py() { LD_LIBRARY_PATH="$system_ld" python3 "$@"; }
  export LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export KILN_LIBDEVICE="$tmp/libdevice.10.bc"
  export KILN_CACHE_DIR="$tmp/cache"
  local b
  for b in "$bin"/*; do
    if ldd "$b" | grep -q 'not found'; then
      ldd "$b" | grep 'not found' >&2
      die "$b still lacks libraries; add them to 'prepare'"
    fi
  done

  local -a names=() results=() details=()
  record() { names+=("$1"); results+=("$2"); details+=("$3"); }
  # Runs a step's command, keeping its output in $logs/<name>.log; sets $rc.
  step() {
    local name="$1"
    shift
    rc=0
    "$@" >"$logs/$name.log" 2>&1 || rc=$?
    sed 's/^/    /' "$logs/$name.log"
  }
  local rc
  # The "PASS name: detail" / "FAIL name: detail" lines of a check script's log as rows
  # of the table, each name after PREFIX; a script that failed without saying what is
  # one FAIL row, NAME. Uses $rc of the step that ran it.
  script_rows() { # LOG PREFIX NAME SCRIPT
    local line verdict
    while IFS= read -r line; do
      verdict="${line%% *}"
      line="${line#* }"
      record "$2${line%%: *}" "$verdict" "${line#*: }"
    done < <(grep -E '^(PASS|FAIL) ' "$1")
    if (( rc != 0 )) && ! grep -q '^FAIL ' "$1"; then
      record "$3" FAIL "$4 exit $rc"
    fi
  }
  # Why a `dslc run --device cuda` step cannot run here, or nothing.
  dslc_cuda_missing() {
    if ! "$bin/dslc" --help 2>&1 | grep -q -- '--device cuda'; then
      echo "this dslc has no 'run --device cuda'"
    elif ! py -c 'import numpy' 2>/dev/null; then
      echo "no numpy for python3 here"
    fi
  }
  local missing
  missing="$(dslc_cuda_missing)"
  # The parts asked for (all when none was named).
  wanted() { (( ${#parts[@]} == 0 )) || [[ " ${parts[*]} " == *" $1 "* ]]; }

  # ---- softmax_jit: compile, then a second process that loads from the disk cache
  if wanted softmax; then
    say "softmax_jit, first run (cache $KILN_CACHE_DIR)"
    step softmax-1 "$bin/softmax_jit" "$repo/examples/softmax.kiln"
    if (( rc == 77 )); then
      say "no CUDA driver or GPU on this machine; nothing was run"
      exit 77
    fi
    local compile1 compile2
    compile1="$(grep -o 'compile + first launch: [0-9.]* ms' "$logs/softmax-1.log" | grep -o '[0-9.]* ms' || true)"
    if (( rc == 0 )); then
      record "softmax_jit: compile and run" PASS "first launch ${compile1:-?}"
    else
      record "softmax_jit: compile and run" FAIL "exit $rc"
    fi
    local before after
    before="$(cache_files "$KILN_CACHE_DIR" .kbin)"
    say "softmax_jit, second run"
    step softmax-2 "$bin/softmax_jit" "$repo/examples/softmax.kiln"
    after="$(cache_files "$KILN_CACHE_DIR" .kbin)"
    compile2="$(grep -o 'compile + first launch: [0-9.]* ms' "$logs/softmax-2.log" | grep -o '[0-9.]* ms' || true)"
    if (( rc != 0 )); then
      record "softmax_jit: from the disk cache" FAIL "exit $rc"
    elif [[ -z "$before" || "$before" != "$after" ]]; then
      record "softmax_jit: from the disk cache" FAIL "the second run wrote cache entries: not a hit"
    else
      record "softmax_jit: from the disk cache" PASS "first launch ${compile2:-?}, cache entries untouched"
    fi
  fi

  # ---- autotune_add: tune each size, then a second process that reuses the records
  if wanted autotune; then
    say "autotune_add, first run"
    step autotune-1 "$bin/autotune_add" "$repo/examples/autotune_add.kiln"
    local tuned cached
    tuned="$(grep -c 'choice: tuned now' "$logs/autotune-1.log" || true)"
    if (( rc == 0 && tuned == 2 )); then
      record "autotune_add: tune and run" PASS "$(grep -o 'n=[0-9]*: config {[^}]*}' "$logs/autotune-1.log" | paste -sd';')"
    else
      record "autotune_add: tune and run" FAIL "exit $rc, $tuned of 2 sizes tuned"
    fi
    before="$(cache_files "$KILN_CACHE_DIR" .tune)"
    say "autotune_add, second run"
    step autotune-2 "$bin/autotune_add" "$repo/examples/autotune_add.kiln"
    after="$(cache_files "$KILN_CACHE_DIR" .tune)"
    cached="$(grep -c 'choice: from the cache' "$logs/autotune-2.log" || true)"
    if (( rc != 0 )); then
      record "autotune_add: tuning from the cache" FAIL "exit $rc"
    elif (( cached != 2 )) || [[ -z "$before" || "$before" != "$after" ]]; then
      record "autotune_add: tuning from the cache" FAIL "$cached of 2 sizes from the cache; records rewritten or missing"
    else
      record "autotune_add: tuning from the cache" PASS "both sizes, no timing"
    fi
  fi

  # ---- dslc run --device cuda, against numpy
  if wanted dslc; then
    if [[ -n "$missing" ]]; then
      record "dslc run --device cuda" SKIP "$missing"
    else
      local data="$tmp/vector_add"
      mkdir -p "$data"
      py - "$data" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
np.save(d + "/x.npy", rng.standard_normal(3000).astype(np.float32))
np.save(d + "/y.npy", rng.standard_normal(3000).astype(np.float32))
np.save(d + "/out.npy", np.zeros(3000, np.float32))
EOF
      say "dslc run --device cuda examples/vector_add.kiln"
      step dslc-run "$bin/dslc" run "$repo/examples/vector_add.kiln" --kernel vector_add --device cuda \
        --grid 3 --arg "x=$data/x.npy" --arg "y=$data/y.npy" --arg "out=$data/out.npy" --arg n=3000
      if (( rc != 0 )); then
        record "dslc run --device cuda" FAIL "exit $rc"
      else
        local wrong
        wrong="$(py - "$data" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
x, y, out = (np.load(d + "/" + f + ".npy") for f in ("x", "y", "out"))
print(int(np.count_nonzero(out != x + y)))
EOF
  )"
        if [[ "$wrong" == 0 ]]; then
          record "dslc run --device cuda" PASS "vector_add, 3000 sums equal numpy's"
        else
          record "dslc run --device cuda" FAIL "$wrong of 3000 sums differ from numpy's"
        fi
      fi
    fi
  fi

  # ---- checked mode: bad accesses reported and stopped, and its cost
  if wanted checked; then
    if [[ -n "$missing" ]]; then
      record "checked mode on the GPU" SKIP "$missing"
    else
      say "checked: tests/gpu/checked_checks.py"
      step checked py "$repo/tests/gpu/checked_checks.py" --dslc "$bin/dslc" --repo "$repo" --work "$tmp/checked" \
        --dslc-library-path "$LD_LIBRARY_PATH"
      script_rows "$logs/checked.log" "" "checked mode on the GPU" checked_checks.py
    fi
  fi

  # ---- dslc run --device cuda with a mask built on the GPU from a predicate, against
  # the same run on the interpreter (which builds the mask with the same passes)
  if wanted sparse; then
    if [[ -n "$missing" ]]; then
      record "predicate mask on the GPU" SKIP "$missing"
    else
      local sparse="$tmp/sparse"
      mkdir -p "$sparse"
      py - "$sparse" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(11)
for name in ("q", "k", "v"):
    np.save(d + "/" + name + ".npy", rng.standard_normal((2, 160, 64)).astype(np.float32))
for device in ("cuda", "interp"):
    np.save(d + "/o_" + device + ".npy", np.full((2, 160, 64), 9.0, np.float32))
EOF
      local mask='bigbird(160,160,12,8,32,30,7)'
      say "dslc run stdlib/sparse_attention.kiln --arg mask=$mask, on the GPU and the interpreter"
      export KILN_STDLIB_DIR="$repo/stdlib"
      local device fails=0
      for device in cuda interp; do
        step "sparse-$device" "$bin/dslc" run "$repo/stdlib/sparse_attention.kiln" --device "$device" --grid 5,2 \
          --arg "q=$sparse/q.npy" --arg "k=$sparse/k.npy" --arg "v=$sparse/v.npy" --arg "o=$sparse/o_$device.npy" \
          --arg "mask=$mask" --arg scale=0.125
        (( rc == 0 )) || fails=1
      done
      if (( fails )); then
        record "predicate mask on the GPU" FAIL "a run failed (logs sparse-cuda, sparse-interp)"
      else
        local differ
        differ="$(py - "$sparse" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
a, b = np.load(d + "/o_cuda.npy"), np.load(d + "/o_interp.npy")
print(int(np.count_nonzero(~np.isclose(a, b, rtol=1e-4, atol=1e-5))))
EOF
  )"
        if [[ "$differ" == 0 ]]; then
          record "predicate mask on the GPU" PASS "BigBird sparse attention, 20480 outputs match the interpreter"
        else
          record "predicate mask on the GPU" FAIL "$differ of 20480 outputs differ from the interpreter's"
        fi
      fi
    fi
  fi

  # ---- encoder_layer: the fusion scope chosen by measurement (Jit::choose), then taken
  # from the cache by a second process; both scopes checked against the CPU's layer
  if wanted encoder; then
    export KILN_STDLIB_DIR="$repo/stdlib"
    say "encoder_layer 512, first run"
    step encoder-1 "$bin/encoder_layer" 512
    local scope1 scope2
    scope1="$(grep -o 'scope for .*' "$logs/encoder-1.log" || true)"
    if (( rc == 0 )) && grep -q '(measured now)' <<<"$scope1"; then
      record "encoder_layer: scope measured" PASS "$(grep -o "search 'encoder-scope'.*" "$logs/encoder-1.log")"
    else
      record "encoder_layer: scope measured" FAIL "exit $rc; ${scope1:-no choice printed}"
    fi
    # The search's second stage: every kernel of the layer has @autotune configs, tuned on
    # its first launch per shape (and, for attention, per mask).
    local tuned kernel missing=""
    for kernel in linear linear_residual_layernorm residual_layernorm encoder_attention; do
      grep -q "kernel '$kernel' autotuned for" "$logs/encoder-1.log" || missing+=" $kernel"
    done
    tuned="$(grep -c "autotuned for" "$logs/encoder-1.log" || true)"
    if (( rc == 0 )) && [[ -z "$missing" ]]; then
      record "encoder_layer: tile configs tuned" PASS "$tuned tunings"
    else
      record "encoder_layer: tile configs tuned" FAIL "exit $rc; not tuned:$missing"
    fi
    before="$(cache_files "$KILN_CACHE_DIR" .choice)"
    say "encoder_layer 512, second run"
    step encoder-2 "$bin/encoder_layer" 512
    after="$(cache_files "$KILN_CACHE_DIR" .choice)"
    scope2="$(grep -o 'scope for .*' "$logs/encoder-2.log" || true)"
    if (( rc == 0 )) && grep -q '(from the cache)' <<<"$scope2" && [[ -n "$before" && "$before" == "$after" ]] &&
       ! grep -q "autotuned for" "$logs/encoder-2.log"; then
      record "encoder_layer: scope from the cache" PASS "${scope2#scope for }; no config tuned again"
    else
      record "encoder_layer: scope from the cache" FAIL "exit $rc; ${scope2:-no choice printed}; $(grep -c "autotuned for" "$logs/encoder-2.log" || true) tunings"
    fi
    # At the benchmark's size (docs/benchmarks.md), timed only: how long the two-stage search
    # takes there and what the chosen layer costs.
    say "encoder_layer 4096 --time-only"
    step encoder-4096 "$bin/encoder_layer" 4096 --time-only
    if (( rc == 0 )); then
      record "encoder_layer 4096: search" PASS "$(grep -o "search 'encoder-scope'.*" "$logs/encoder-4096.log" || echo 'from the cache')"
    else
      record "encoder_layer 4096: search" FAIL "exit $rc"
    fi
  fi

  # ---- graphs: one persistent kernel and launch by launch, against the interpreter;
  # repeated runs, the watchdog, and the time per run in both modes
  if wanted graphs; then
    if [[ -n "$missing" ]]; then
      record "graphs on the GPU" SKIP "$missing"
    else
      say "graphs: tests/gpu/graph_checks.py"
      step graphs py "$repo/tests/gpu/graph_checks.py" --dslc "$bin/dslc" --kiln-run "$bin/kiln-run" --repo "$repo" \
        --work "$tmp/graphs" --dslc-library-path "$LD_LIBRARY_PATH"
      script_rows "$logs/graphs.log" "graph: " "graphs on the GPU" graph_checks.py
    fi
  fi

  # ---- agent: kiln-agent with --device cuda against a scripted endpoint
  if wanted agent; then
    if [[ -n "$missing" ]]; then
      record "kiln-agent on the GPU" SKIP "$missing"
    else
      say "agent: tests/gpu/agent_checks.py"
      step agent py "$repo/tests/gpu/agent_checks.py" --kiln-agent "$bin/kiln-agent" --dslc "$bin/dslc" \
        --repo "$repo" --work "$tmp/agent" --dslc-library-path "$LD_LIBRARY_PATH"
      script_rows "$logs/agent.log" "agent: " "kiln-agent on the GPU" agent_checks.py
    fi
  fi

  # ---- graph-bench and llama-bench: a graph benchmark's script, which checks Kiln's
  # result first and then times its three modes beside PyTorch, same process; the
  # variables name graph consts to time ('ROWS=8,BK=512;ROWS=4,BK=1024'; '' the defaults)
  bench_part() { # PART LABEL SCRIPT VARIANTS
    wanted "$1" || return 0
    if [[ -n "$missing" ]]; then
      record "$2" SKIP "$missing"
      return 0
    fi
    say "bench/$3"
    step "$1" py "$repo/bench/$3" --dslc "$bin/dslc" --repo "$repo" --work "$tmp/$1" \
      --dslc-library-path "$LD_LIBRARY_PATH" ${4:+--variants "$4"}
    if (( rc == 0 )); then
      record "$2" PASS "$(grep -c '^| ' "$logs/$1.log") table lines (log $1)"
    else
      record "$2" FAIL "exit $rc"
    fi
  }
  # The decode chain (stdlib/decode_chain.kiln).
  bench_part graph-bench "graph bench" graph_bench.py "${KILN_GRAPH_BENCH_VARIANTS:-}"
  # The Llama-3.2-1B-shaped step (stdlib/llama_decode.kiln), checked against f64 first.
  bench_part llama-bench "llama bench" llama_bench.py "${KILN_LLAMA_BENCH_VARIANTS:-}"

  # ---- python: the `kiln` package's JIT inside torch programs (prepare --python)
  if wanted python; then
    # Python and torch keep the machine's libraries; only what it lacks (LLVM, ANTLR,
    # ...) comes from the carried ones, so libkiln.so loads beside torch.
    mkdir -p "$tmp/pylib"
    local f soname
    for f in "$tmp/lib"/*; do
      soname="$(basename "$f")"
      ldconfig -p | grep -q "^[[:space:]]*$soname " || ln -sf "$f" "$tmp/pylib/$soname"
    done
    pyjit() {
      LD_LIBRARY_PATH="$tmp/pylib${system_ld:+:$system_ld}" KILN_LIBRARY="$bin/libkiln.so" KILN_DSLC="$bin/dslc" \
        PYTHONPATH="$out/python" python3 "$@"
    }
    local example before after
    for example in vector_add softmax autotune_add; do
      say "examples/python/$example.py"
      step "python-$example" pyjit "$repo/examples/python/$example.py"
      record "python: examples/python/$example.py" "$( (( rc == 0 )) && echo PASS || echo FAIL)" \
        "$(tail -n 1 "$logs/python-$example.log")"
    done
    before="$(cache_files "$KILN_CACHE_DIR" .kbin)"
    step python-softmax-again pyjit "$repo/examples/python/softmax.py"
    after="$(cache_files "$KILN_CACHE_DIR" .kbin)"
    if (( rc != 0 )); then
      record "python: softmax from the disk cache" FAIL "exit $rc"
    elif [[ -z "$before" || "$before" != "$after" ]]; then
      record "python: softmax from the disk cache" FAIL "the second run wrote cache entries: not a hit"
    else
      record "python: softmax from the disk cache" PASS "$(tail -n 1 "$logs/python-softmax-again.log")"
    fi
    say "tests/gpu/python_checks.py --jit"
    step python-checks pyjit "$repo/tests/gpu/python_checks.py" --jit
    record "python: kiln.compile in torch programs" "$( (( rc == 0 )) && echo PASS || echo FAIL)" \
      "$(grep -c '^PASS' "$logs/python-checks.log") checks passed, $(grep -c '^FAIL' "$logs/python-checks.log") failed"
  fi

  echo
  echo "JIT on the GPU: $(grep -m1 '^device: ' "$logs/softmax-1.log" 2>/dev/null | cut -d' ' -f2- || true)"
  local i failed=0
  for i in "${!names[@]}"; do
    printf '  %-36s %-5s %s\n' "${names[$i]}" "${results[$i]}" "${details[$i]}"
    [[ "${results[$i]}" != FAIL ]] || failed=1
  done
  say "logs in $logs"
  if (( failed )); then
    say "FAILED"
    exit 1
  fi
  say "all passed"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 prepare [--python] [BUILD_DIR] | run [PART...]   (see the comment at the top of this file)" >&2; exit 2 ;;
esac
