#!/usr/bin/env bash
# Installs the Debian packages Kiln builds and tests with. Idempotent: packages already
# present are skipped, so the demo and test commands can call it every time.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config python3 python3-numpy python3-pip python3-venv python3-setuptools python3-dev python3-matplotlib
  llvm-22-dev llvm-22-tools libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev
  antlr4 libantlr4-runtime-dev
  libze-dev
  googletest libgtest-dev
  spirv-tools llvm-spirv-15 pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  nlohmann-json3-dev libcurl4-openssl-dev
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "kiln: installing ${#missing[@]} Debian package(s): ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
