"""Kiln from Python: compile Kiln kernels at run time and launch them on torch tensors.

    import torch, kiln

    add = kiln.compile("vector_add.kiln", kernel="vector_add", BLOCK=1024)
    x, y = torch.rand(4096, device="cuda"), torch.rand(4096, device="cuda")
    out = torch.empty_like(x)
    add[kiln.cdiv(4096, 1024)](x, y, out, 4096)      # on torch's current stream

    softmax = kiln.load("softmax.kbin")               # a bundle from dslc --emit=bundle
    decode = kiln.load("decode_chain.kgraph")         # a graph bundle: decode(*args)

Arguments: torch tensors and other device arrays (__cuda_array_interface__, DLPack) by
address, no copy, their dtype, device and contiguity checked against the kernel's
signature; NumPy arrays copied in and back; Python numbers for scalars. Launches go on
torch's current stream once torch is imported (or on stream=), so Kiln kernels order
with torch's ops and are captured into torch's CUDA graphs. Every failure is a
kiln.Error carrying the status, the diagnostic code and the message. docs/python.md has
the rest.
"""

import os
import shutil
import subprocess
import tempfile
import threading

from ._capi import DTYPES, Error
from .jit import Jit, JitKernel, source_and_name, only_kernel
from .runtime import Buffer, BlockMask, Graph, Kernel, Runtime

__all__ = ["Buffer", "BlockMask", "Error", "Graph", "Jit", "JitKernel", "Kernel", "Runtime", "DTYPES", "cdiv",
           "compile", "explain_fusion", "jit", "load", "runtime"]
__version__ = "0.1.0"

_lock = threading.Lock()
_runtime = None
_jit = None


def runtime():
    """The process's Runtime, made on first use (CUDA device 0 if it works, else Level
    Zero; KILN_LIBRARY / KILN_RUNTIME_LIBRARY choose the library)."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime()
        return _runtime


def jit():
    """The process's Jit over runtime() (the disk cache from the environment)."""
    global _jit
    rt = runtime()
    with _lock:
        if _jit is None:
            _jit = Jit(rt)
        return _jit


def cdiv(a, b):
    """ceil(a / b) for grids: kiln.cdiv(n, 1024)."""
    return -(-a // b)


def compile(path_or_source, kernel=None, target=None, num_warps=0, include_dirs=(), **consts):
    """Compiles `kernel` of a Kiln file (or of source text) for the runtime's device
    through the JIT, `const` parameters from `consts`: a JitKernel, or a Graph when the
    name is a graph's. kernel= may be left out when the source has one graph (its
    kernels are its parts) or else one kernel. `target` None, or the device's own ("sm_90a"): the JIT builds
    for the device it launches on; dslc --emit=bundle --target=... builds for others."""
    rt = runtime()
    if target is not None and target != rt.target:
        raise Error("KILN_ERROR_UNSUPPORTED", f"the JIT compiles for this runtime's device ({rt.target}), not "
                                              f"{target}; build a bundle for {target} with dslc --emit=bundle "
                                              f"--target={target}")
    return jit().compile(path_or_source, kernel=kernel, num_warps=num_warps, include_dirs=include_dirs, **consts)


def load(path):
    """A kernel bundle (.kbin) as a Kernel, or a graph bundle (.kgraph) as a Graph."""
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
    except OSError as e:
        raise Error("KILN_ERROR_IO", f"{path}: {e.strerror}") from None
    rt = runtime()
    # The two containers' magics (runtime/Bundle.cpp, runtime/GraphBundle.cpp); anything
    # else goes to the kernel loader, which says what is wrong with it.
    return rt.load_graph(path) if magic == b"KILNGRPH" else rt.load(path)


def _dslc():
    """The dslc to ask for reports: $KILN_DSLC, else beside the library (an installed tree's
    bin/ or the build's tools/), else on PATH."""
    if os.environ.get("KILN_DSLC"):
        return os.environ["KILN_DSLC"]
    lib_dir = os.path.dirname(os.path.abspath(runtime()._lib.path))
    for candidate in (os.path.join(lib_dir, "..", "bin", "dslc"), os.path.join(lib_dir, "..", "tools", "dslc")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("dslc")
    if found:
        return found
    raise Error("KILN_ERROR_NO_DRIVER", "dslc was not found (set KILN_DSLC, or put it on PATH)")


def explain_fusion(path_or_source, kernel=None, **consts):
    """dslc's --explain-fusion for `kernel`: the remarks saying which reduction loops were
    fused into one pass and why the others were not, as text."""
    path, text = source_and_name(path_or_source)
    name = kernel or only_kernel(text, path or "the source")
    with tempfile.TemporaryDirectory() as tmp:
        if path is None:
            path = os.path.join(tmp, "source.kiln")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        command = [_dslc(), path, "--kernel", name, "--explain-fusion", "-o", os.devnull]
        for k, v in consts.items():
            command += ["-D", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Error("KILN_ERROR_COMPILE", done.stderr.strip())
    return done.stderr


