#!/bin/sh
# kiln-gpu-run end to end on a machine without a GPU (the CTest kiln-gpu-run-fake-driver):
#
#   check-runner.sh KILN_GPU_PREPARE KILN_GPU_RUN FAKE_CUDA_LIBRARY WORKDIR
#
# 1. with no driver library it says "no CUDA driver" and exits 77 (skipped);
# 2. kiln-gpu-prepare writes a case (bundles for sm_80 and sm_90a, .npy files, the
#    output's all-zero input as a flag in case.txt);
# 3. through the runtime's CUDA backend on the stand-in driver of the runtime tests,
#    which loads, allocates, copies and launches but computes nothing: the output keeps
#    its zeros, so the run must FAIL naming the output and leave the inputs alone;
# 4. once the expected outputs are what the stand-in leaves (the inputs), it must PASS
#    on both targets;
# 5. a damaged bundle or case.txt is a FAIL with the reason, not a crash.
set -u
prepare=$1 run=$2 fake=$3 work=$4
src=$(cd "$(dirname "$0")/../.." && pwd)
case_dir=$work/vector_add.add

fail() {
  echo "check-runner: $*" >&2
  exit 1
}
# expect_output TEXT: the last run's output must contain TEXT.
expect_output() {
  case $out in
    *"$1"*) ;;
    *) fail "expected '$1' in the output of kiln-gpu-run:
$out" ;;
  esac
}

out=$(KILN_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$run" "$work" 2>&1)
[ $? -eq 77 ] || fail "without a driver kiln-gpu-run must exit 77:
$out"
expect_output "kiln-gpu-run: skipped, no CUDA driver"

rm -rf "$work"
out=$(KILN_SEED=7 "$prepare" "$work" "$src/tests/spirv/kernels/vector_add.tir" 2>&1) ||
  fail "kiln-gpu-prepare failed:
$out"
expect_output "1 cases prepared (2 bundles), 0 failures"
for f in case.txt sm_80.kbin sm_90a.kbin x.in.npy out.expected.npy; do
  [ -s "$case_dir/$f" ] || fail "kiln-gpu-prepare wrote no $case_dir/$f"
done
# An input the kernel leaves unchanged is expected as it was: no second copy.
[ ! -e "$case_dir/x.expected.npy" ] || fail "kiln-gpu-prepare copied the unchanged input x"
# An all-zero input (the output's initial contents) is a flag in case.txt, not a file.
[ ! -e "$case_dir/out.in.npy" ] || fail "kiln-gpu-prepare wrote the all-zero input of out"
grep -q '^buffer out f32 [0-9]* [^ ]* [^ ]* zero$' "$case_dir/case.txt" ||
  fail "case.txt does not mark out's input all zero:
$(cat "$case_dir/case.txt")"

out=$(KILN_CUDA_LIBRARY=$fake "$run" "$work" 2>&1)
[ $? -eq 1 ] || fail "a kernel that computed nothing must fail:
$out"
expect_output "device: Fake H200 (sm_90)"
expect_output "FAIL vector_add.add sm_80:
  out["
expect_output "FAIL vector_add.add sm_90a:"
expect_output "elements of 'out' differ"
expect_output "KILN_SEED=7"
expect_output "total: 0 passed, 2 failed, 0 skipped"
case $out in *"of 'x' differ"* | *"of 'y' differ"*) fail "untouched inputs reported:
$out" ;; esac

for f in "$case_dir"/*.in.npy; do
  cp "$f" "${f%.in.npy}.expected.npy"
done
rm "$case_dir/out.expected.npy" # out unchanged: its all-zero input is what is expected
out=$(KILN_CUDA_LIBRARY=$fake "$run" "$case_dir" 2>&1) || fail "the stand-in's results must pass:
$out"
expect_output "PASS vector_add.add sm_80"
expect_output "PASS vector_add.add sm_90a"
expect_output "total: 2 passed, 0 failed, 0 skipped"

# One byte of the metadata flipped: the bundle's checksum catches it.
printf 'X' | dd of="$case_dir/sm_80.kbin" bs=1 seek=60 conv=notrunc 2>/dev/null
out=$(KILN_CUDA_LIBRARY=$fake "$run" "$case_dir" 2>&1)
[ $? -eq 1 ] || fail "a damaged bundle must fail:
$out"
expect_output "FAIL vector_add.add sm_80: "
expect_output "PASS vector_add.add sm_90a"
# A scalar value that is no number: a FAIL naming it, not an uncaught exception.
sed 's/^scalar n i32 3500$/scalar n i32 35x0/' "$case_dir/case.txt" >"$case_dir/case.txt.new" &&
  mv "$case_dir/case.txt.new" "$case_dir/case.txt"
out=$(KILN_CUDA_LIBRARY=$fake "$run" "$case_dir" 2>&1)
[ $? -eq 1 ] || fail "a malformed scalar must fail:
$out"
expect_output "FAIL vector_add.add sm_90a: case.txt gives scalar 'n' the value '35x0', which is no i32"
echo "check-runner: kiln-gpu-run behaves without a driver and on the stand-in driver"
