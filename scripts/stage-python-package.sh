#!/usr/bin/env bash
# Installs the `kiln` Python package, with its compiled launcher (kiln/_fastlaunch.c) but
# without the shared libraries, into a folder, for a machine that gets the libraries some
# other way (KILN_LIBRARY / KILN_RUNTIME_LIBRARY) and puts the folder on PYTHONPATH: the
# GPU machine of tests/gpu/jit-on-device.sh and bench/launch_bench.sh. The extension uses
# Python's stable ABI, so the build here loads on that machine's Python (3.9 or later).
#
#   scripts/stage-python-package.sh OUT_DIR
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: scripts/stage-python-package.sh OUT_DIR" >&2; exit 2; }
rm -rf "$1"
# pip builds in the folder it installs from: a copy, so that no stale build is reused.
source="$(mktemp -d)"
trap 'rm -rf "$source"' EXIT
tar -C "$repo/python" --exclude=build --exclude='*.egg-info' --exclude=__pycache__ --exclude='*.so' \
  --exclude=lib -cf - . | tar -C "$source" -xf -
KILN_PACKAGE_LIBRARIES=0 /usr/bin/python3 -m pip install --no-index --no-build-isolation --no-deps --quiet \
  --root-user-action=ignore --target "$1" "$source"
ls "$1"/kiln/_fastlaunch*.so >/dev/null 2>&1 ||
  echo "stage-python-package: kiln._fastlaunch was not built (no C compiler or python3-dev?): launches go through ctypes alone" >&2
