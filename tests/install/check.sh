#!/usr/bin/env bash
#===- check.sh - An installed Kiln, used from outside its tree ------------------===#
#
# Installs the build tree into a temporary prefix, then, from there: the installed dslc
# compiles a kernel that imports the standard library into a bundle; tests/install/
# consumer is built against the prefix twice, with find_package(Kiln) and with
# pkg-config, and both run the bundle's loading on the stand-in CUDA driver; its
# jit_consumer, built both ways against the JIT (Kiln::jit, kiln.pc), compiles and
# launches a kernel from source on the same driver.
#
# Usage: check.sh BUILD_DIR REPO FAKE_CUDA_LIBRARY
#
#===---------------------------------------------------------------------------===#
set -euo pipefail
build="$1" repo="$2" fake="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/dslc bin/kiln-run include/kiln/runtime/kiln_runtime.h include/kiln/runtime/Runtime.h \
         lib/libkiln_runtime.so lib/libkiln.so include/kiln/jit/kiln_jit.h include/kiln/jit/Jit.h \
         lib/cmake/Kiln/KilnConfig.cmake lib/pkgconfig/kiln-runtime.pc lib/pkgconfig/kiln.pc \
         share/kiln/stdlib/softmax.kiln; do
  [[ -e "$prefix/$f" ]] || { echo "check.sh: the install has no $f" >&2; exit 1; }
done

# The installed compiler finds the installed standard library.
cat >"$work/k.kiln" <<'KILN'
import "stdlib/softmax.kiln";
KILN
"$prefix/bin/dslc" "$work/k.kiln" --kernel softmax -D BLOCK=1024 --emit=bundle -o "$work/k.kbin" \
  || { echo "check.sh: the installed dslc cannot import the standard library" >&2; exit 1; }

want="device Fake H200, target sm_90, read back 1.5 2.5 3.5, kernel softmax"
run() { # BINARY
  local got
  got="$(KILN_CUDA_LIBRARY="$fake" LD_LIBRARY_PATH="$prefix/lib" "$1" "$work/k.kbin")"
  [[ "$got" == "$want" ]] || { echo "check.sh: $1 printed '$got', not '$want'" >&2; exit 1; }
}

# find_package(Kiln)
cmake -S "$repo/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log"
cmake --build "$work/consumer" >"$work/build.log"
run "$work/consumer/consumer"

want_jit="jit kernel scale, 2 parameters, launched"
run_jit() { # BINARY
  local got
  got="$(KILN_CUDA_LIBRARY="$fake" LD_LIBRARY_PATH="$prefix/lib" "$1")"
  [[ "$got" == "$want_jit" ]] || { echo "check.sh: $1 printed '$got', not '$want_jit'" >&2; exit 1; }
}
run_jit "$work/consumer/jit_consumer"

# pkg-config
flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln-runtime)"
# shellcheck disable=SC2086
c++ -std=c++20 "$repo/tests/install/consumer/consumer.cpp" $flags -o "$work/pc-consumer"
run "$work/pc-consumer"
flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln)"
# shellcheck disable=SC2086
c++ -std=c++20 "$repo/tests/install/consumer/jit_consumer.cpp" $flags -o "$work/pc-jit-consumer"
run_jit "$work/pc-jit-consumer"
echo "check.sh: the installed tree builds and runs consumers of the runtime and the JIT (find_package and pkg-config)"
