#===- device_check.py - What the GPU check scripts share ----------------------===#
#
# tests/gpu/graph_checks.py and checked_checks.py report one line per check, "PASS
# name: detail" or "FAIL name: detail" (jit-on-device.sh turns them into its table), and
# run the dslc that jit-on-device.sh carries, with the libraries it carries.
#
#===---------------------------------------------------------------------------===#
import os
import subprocess
import time

results = []


def record(ok, name, detail):
    """Prints one check's verdict and keeps it for exit_status()."""
    results.append(ok)
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)


def exit_status():
    return 0 if all(results) else 1


def add_dslc_arguments(parser):
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--dslc-library-path", default="",
                        help="LD_LIBRARY_PATH for dslc (the libraries jit-on-device.sh carries)")


def run_dslc(args, argv, env=None, timeout=600):
    """Runs `args.dslc` with `argv`; returns (process, seconds)."""
    full = dict(os.environ)
    if args.dslc_library_path:
        full["LD_LIBRARY_PATH"] = args.dslc_library_path
    full.update(env or {})
    start = time.monotonic()
    p = subprocess.run([args.dslc] + list(argv), capture_output=True, text=True, env=full, timeout=timeout)
    return p, time.monotonic() - start
