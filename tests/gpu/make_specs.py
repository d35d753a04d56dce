#!/usr/bin/env python3
#===- make_specs.py - GPU check specs from the NumPy-checked program cases -----===#
#
# The GPU check (docs/testing.md, "GPU check") runs every example and every corpus
# program on a GPU and compares it with the reference interpreter. Its inputs are
# described by `.spec` files (grammar in tests/spirv/KernelCase.h); this script writes
# them from the cases the NumPy runner already has (tests/programs/cases.py,
# tests/examples/example_cases.py and tests/stdlib/cases.py), so each program runs with
# the sizes, grid, `const` overrides, input distributions and tolerances its author chose,
# and again split over segments for each of the case's `gpu_splits`:
#
#   /usr/bin/python3 tests/gpu/make_specs.py           rewrite tests/gpu/programs/
#   /usr/bin/python3 tests/gpu/make_specs.py --check   fail if they are out of date, or
#                                                      if a program has no GPU case
#
# Sizes that a case draws at random are drawn once here, from a seed made of the case
# name, so the files are stable; the values in the buffers are drawn afresh on every
# run by kiln-gpu-prepare. Cases that cannot run on a GPU are listed, with the reason,
# in tests/gpu/programs/not-on-gpu.txt.
#
#===---------------------------------------------------------------------------===#
import argparse
import inspect
import math
import os
import sys
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "gpu", "programs")
sys.path[:0] = [os.path.join(REPO, "tests", "examples"), os.path.join(REPO, "tests", "programs")]

import cases  # noqa: E402  (tests/programs/cases.py)
import example_cases  # noqa: E402
import importlib.util  # noqa: E402

# tests/stdlib/cases.py shares its module name with tests/programs/cases.py.
_spec = importlib.util.spec_from_file_location("stdlib_cases", os.path.join(REPO, "tests", "stdlib", "cases.py"))
stdlib_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stdlib_cases)
from kilncase import Arr, BlockMask, Scalar, covered_by_cases, is_float, resolve  # noqa: E402

# Generators written for one case in cases.py, and the fill that stands in for them.
# The GPU is compared with the interpreter, not with NumPy, so a stand-in only has to
# keep the inputs in the program's domain.
CUSTOM_FILLS = {
    # 16-wide blocks whose sums stay away from the +-4 thresholds: a uniform fill keeps
    # most block sums away from them too, and both sides run the same additions.
    "_block_means": "uniform -1 1",
    # Rows of very different magnitudes (examples/fp8_quant): one wide normal fill gives
    # each row its own absmax and scale.
    "_rows_of_scales": "normal 0 30",
    # Each block its own bitmap slot (the Python cases also leave a third out, at random).
    "_slots": "iota 0",
    # stdlib fp8_matmul's rows of different magnitudes, zero prefixes and growth along K:
    # the same stand-in; the interpreter runs the same fused program as the GPU.
    "_fp8_matmul_rows": "normal 0 30",
    # stdlib softmax_topk's logits near 1000, and tied logits: every value tied (the
    # maximum in the first block, as the NumPy case has it), so that the order of the
    # fused top-k and of the program as written agree exactly.
    "_near_1000": "normal 1000 3",
    "_ties_max_first": "const 5",
    # math.derived's magnitudes from 1e-9 to 0.5, even in log scale: the GPU check
    # compares with the interpreter, which signed uniform magnitudes exercise as well.
    "_log_magnitudes": "signed 1e-7 0.5",
    # stdlib attend_combine's partial states: on the GPU every segment non-empty, with
    # maxima and sums of one magnitude (the NumPy case also has empty segments).
    "_combine_parts": "uniform 0.5 4",
}

# Cases whose run is expected to fail: the interpreter reports the error, a GPU has no
# equivalent to compare.
def not_on_gpu_reason(case):
    if case.expect_error:
        return "expected to fail with %s on the interpreter" % case.expect_error
    if any(isinstance(a, BlockMask) and a.predicate for a in case.args):
        return ("its mask is built from a Kiln predicate by dslc run (the GPU check runs "
                "the passes that build it: mask_build.*)")
    return None


def number(v):
    """A number as the spec lines write it (shortest round trip; nan, inf, -inf)."""
    v = float(v) if not isinstance(v, (int, np.integer)) else int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 2 ** 53:
            return str(int(v)) if v != 0 or math.copysign(1, v) > 0 else "-0.0"
        return repr(v)
    return str(v)


def fill_of(gen, dtype):
    """The spec fill for a kilncase generator."""
    name = gen.__qualname__.split(".")[0]
    cv = inspect.getclosurevars(gen).nonlocals
    if name == "fill":
        value = cv["value"]
        return "zero" if value == 0 and not math.isnan(float(value)) else "const " + number(value)
    if name == "normal":
        return "normal %s %s" % (number(cv["mean"]), number(cv["scale"]))
    if name == "uniform":
        if is_float(dtype):
            return "uniform %s %s" % (number(cv["lo"]), number(cv["hi"]))
        return "ints %d %d" % (math.ceil(cv["lo"]), math.floor(cv["hi"]))
    if name == "randint":  # [lo, hi)
        return "ints %d %d" % (cv["lo"], cv["hi"] - 1)
    if name == "signed_uniform":
        return "signed %s %s" % (number(cv["lo"]), number(cv["hi"]))
    if name == "boolean":
        return "bool"
    if name == "full_range":
        return "bits"
    if name == "with_specials":
        return fill_of(cv["base"], dtype) + " then " + " ".join(number(v) for v in cv["specials"])
    if name in CUSTOM_FILLS:
        return CUSTOM_FILLS[name]
    raise SystemExit("make_specs.py: no spec fill for generator '%s' (add it to CUSTOM_FILLS)"
                     % gen.__qualname__)


def spec_text(case, split=None):
    """The .spec file of one case; with `split`, of the case compiled with
    --reduction-split=split."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    sizes = case.sizes(rng) if callable(case.sizes) else dict(case.sizes)
    grid = case.grid(sizes) if callable(case.grid) else resolve(case.grid, sizes)
    grid = list(grid) + [1] * (3 - len(grid))
    defines = case.defines(sizes) if callable(case.defines) else case.defines
    source = os.path.normpath(case.file)
    lines = ["// %s (%s): generated by tests/gpu/make_specs.py from the NumPy case; "
             "edit the case, not this file." % (case.name, source),
             "// @source " + source,
             "// @kernel " + case.kernel]
    if split:
        lines.append("// @reduction-split %d" % split)
    for flag in case.flags:
        if flag == "--fuse-quantized":
            lines.append("// @fuse-quantized")
        elif flag.startswith("--num-stages="):
            lines.append("// @num-stages %d" % int(flag.split("=", 1)[1]))
        elif flag.startswith("--reduction-split=") and not split:
            segments = int(flag.split("=", 1)[1])
            if segments > 1:
                lines.append("// @reduction-split %d" % segments)
        elif not flag.startswith("--reduction-split="):
            raise SystemExit("make_specs.py: %s: no spec line for the dslc option %s" % (case.name, flag))
    for k, v in defines.items():
        lines.append("// @define %s=%s" % (k, "true" if v is True else "false" if v is False
                                                else number(v)))
    lines.append("// @grid %d %d %d" % tuple(int(g) for g in grid))
    tol = {}
    for a in case.args:
        if isinstance(a, BlockMask):
            # One line for the mask's five parameters; kiln-gpu-prepare draws the mask
            # from the same pattern and compresses it as the runtime does.
            rows, cols = resolve(a.shape, sizes)
            line = "// @arg %s blockmask %d %d %d %d %s" % (a.name, rows, cols, a.bm, a.bn, a.pattern.spec)
            lines.append((line + " " + a.spec_modifiers).rstrip())
        elif isinstance(a, Arr):
            shape = resolve(a.shape, sizes)
            count = int(np.prod(shape if isinstance(shape, tuple) else (shape,)))
            lines.append("// @arg %s %s[%d] %s" % (a.name, a.dtype, count, fill_of(a.gen, a.dtype)))
            if is_float(a.dtype):
                t = case.tol_for(a.name, a.dtype)
                old = tol.get(a.dtype, (0.0, 0.0))
                tol[a.dtype] = (max(old[0], t.rtol), max(old[1], t.atol))
        else:
            assert isinstance(a, Scalar)
            value = resolve(a.value, sizes)
            if isinstance(value, (bool, np.bool_)):
                value = int(value)
            lines.append("// @arg %s %s %s" % (a.name, a.dtype, number(value)))
    for dtype, (r, a) in sorted(tol.items()):
        lines.append("// @tol %s %s %s" % (dtype, number(r), number(a)))
    return "\n".join(lines) + "\n"


def kiln_files():
    """Every program the GPU check must cover, relative to the repository root."""
    out = []
    for d in ("examples", "stdlib", os.path.join("tests", "programs")):
        out += [os.path.join(d, f) for f in sorted(os.listdir(os.path.join(REPO, d)))
                if f.endswith(".kiln")]
    return out


def hand_written_sources():
    """Programs that the hand-written specs in tests/spirv/programs run."""
    d = os.path.join(REPO, "tests", "spirv", "programs")
    out = set()
    for f in os.listdir(d):
        if f.endswith(".spec"):
            for line in open(os.path.join(d, f)):
                if line.startswith("// @source "):
                    out.add(line.split()[2])
    return out


def main():
    ap = argparse.ArgumentParser(
        description="Writes the GPU check specs of tests/gpu/programs from the NumPy cases.")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in tests/gpu/programs instead of writing")
    args = ap.parse_args()

    files = {}
    skipped = []
    covered = set(hand_written_sources())
    for case in example_cases.CASES + cases.CASES + stdlib_cases.CASES:
        reason = not_on_gpu_reason(case)
        if reason:
            skipped.append("%s (%s): %s" % (case.name, case.file, reason))
            continue
        files[case.name + ".spec"] = spec_text(case)
        for split in case.gpu_splits:
            files["%s.split%d.spec" % (case.name, split)] = spec_text(case, split)
        # A case of tests/programs/ may name a file outside it (../../stdlib/...).
        covered.add(os.path.normpath(case.file))
    uncovered = [f for f in kiln_files() if not covered_by_cases(f, covered, REPO)]
    skipped += ["%s: no case runs it (only its expected failures do)" % f for f in uncovered]
    files["not-on-gpu.txt"] = (
        "# Cases of tests/programs/cases.py, tests/examples/example_cases.py and\n"
        "# tests/stdlib/cases.py that the GPU check does not run, and why (written by\n"
        "# tests/gpu/make_specs.py).\n" +
        "".join(s + "\n" for s in skipped))

    stale = []
    existing = set(f for f in os.listdir(OUT) if f.endswith((".spec", ".txt"))) \
        if os.path.isdir(OUT) else set()
    for name, text in sorted(files.items()):
        path = os.path.join(OUT, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not args.check:
                os.makedirs(OUT, exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    for name in sorted(existing - set(files)):
        stale.append(name + " (no such case any more)")
        if not args.check:
            os.remove(os.path.join(OUT, name))
    runs = len(files) - 1
    if args.check:
        if stale:
            print("make_specs.py: tests/gpu/programs is out of date (run "
                  "tests/gpu/make_specs.py): " + ", ".join(stale))
            return 1
        if uncovered:
            print("make_specs.py: no GPU case runs " + ", ".join(uncovered))
            return 1
        print("make_specs.py: %d specs up to date; every example and program is covered, "
              "%d cases listed as not on GPU" % (runs, len(skipped)))
        return 0
    print("make_specs.py: %d specs, %d changed; %d cases not on GPU"
          % (runs, len(stale), len(skipped)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
