"""The C APIs (runtime/kiln_runtime.h, jit/kiln_jit.h) as ctypes sees them.

Kiln's Python package calls the C ABI through ctypes rather than a compiled extension:
the package then builds with nothing but setuptools, does not depend on the Python
version's ABI, and reaches exactly the surface C callers have (one launch is one foreign
call; bench/launch_bench.py measures what that costs). This module finds the shared
library, declares every entry point's signature, and turns failures into kiln.Error.

The library, in this order:
  $KILN_LIBRARY             libkiln.so: the JIT and the runtime (kiln.compile works)
  $KILN_RUNTIME_LIBRARY     libkiln_runtime.so: the runtime alone (bundles only)
  the package's lib/ folder what `pip install ./python` copied from the build
  the system's              libkiln.so, then libkiln_runtime.so, as the loader finds
                            them (`cmake --install` puts them in <prefix>/lib)
"""

import ctypes
import ctypes.util
import os
import re

# kiln_dtype, in the order of kiln_runtime.h.
DTYPES = ["none", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"]
FLOAT_DTYPES = {"f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"}

ARG_BUFFER, ARG_INT, ARG_UINT, ARG_FLOAT, ARG_BOOL, ARG_BLOCK_MASK = 1, 2, 3, 4, 5, 6
MASK_PARAMS = 5  # a block_mask parameter is five runtime parameters (kiln_runtime.h)
_CODE = re.compile(r"\b(?:error\[)?(E\d{4})\b")


class Error(RuntimeError):
    """A Kiln call failed. `status` is the kiln_status name ("KILN_ERROR_COMPILE", ...),
    `code` the first diagnostic code in the message ("E0200"; None when it has none),
    and the text the message: for a compile error, the compiler's diagnostics with the
    source line and a caret."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        found = _CODE.search(message)
        self.code = found.group(1) if found else None


class Grid(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class _BufferValue(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("offset", ctypes.c_uint64)]


class _Value(ctypes.Union):
    _fields_ = [("buffer", _BufferValue), ("i", ctypes.c_int64), ("u", ctypes.c_uint64),
                ("f", ctypes.c_double), ("b", ctypes.c_int), ("mask", ctypes.c_void_p)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("value", _Value)]


class Define(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("defines", ctypes.POINTER(Define)), ("num_defines", ctypes.c_size_t),
                ("include_dirs", ctypes.POINTER(ctypes.c_char_p)), ("num_include_dirs", ctypes.c_size_t),
                ("num_warps", ctypes.c_uint32), ("reduction_split", ctypes.c_uint32),
                ("fuse_quantized", ctypes.c_uint32)]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p)
GRID_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Grid))


class JitOptions(ctypes.Structure):
    _fields_ = [("cache_dir", ctypes.c_char_p), ("specialize", ctypes.c_int), ("opt_level", ctypes.c_int),
                ("autotune_warmup", ctypes.c_uint32), ("autotune_runs", ctypes.c_uint32),
                ("log", LOG_FN), ("log_user_data", ctypes.c_void_p), ("checked", ctypes.c_int)]


_P, _I, _S, _I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t, ctypes.c_int64
_P64, _PP, _STR = ctypes.POINTER(_I64), ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p
_ARGS = ctypes.POINTER(Arg)

RUNTIME_SIGNATURES = {
    "kiln_status_name": ([_I], _STR),
    "kiln_last_error": ([], _STR),
    "kiln_runtime_create": ([_P, _PP], _I),
    "kiln_runtime_destroy": ([_P], None),
    "kiln_runtime_device_name": ([_P], _STR),
    "kiln_runtime_target": ([_P], _STR),
    "kiln_runtime_synchronize": ([_P], _I),
    "kiln_runtime_set_stream": ([_P, _P], _I),
    "kiln_launch_on_stream": ([_P, Grid, _ARGS, _S, _P], _I),
    "kiln_buffer_alloc": ([_P, _S, _I, _PP], _I),
    "kiln_buffer_wrap": ([_P, ctypes.c_uint64, _S, _I, _PP], _I),
    "kiln_buffer_free": ([_P], None),
    "kiln_buffer_size": ([_P], _S),
    "kiln_buffer_device_address": ([_P], ctypes.c_uint64),
    "kiln_buffer_write": ([_P, _S, _P, _S], _I),
    "kiln_buffer_read": ([_P, _S, _P, _S], _I),
    "kiln_buffer_fill": ([_P, ctypes.c_uint8], _I),
    "kiln_kernel_load_file": ([_P, _STR, _PP], _I),
    "kiln_kernel_destroy": ([_P], None),
    "kiln_kernel_name": ([_P], _STR),
    "kiln_kernel_num_params": ([_P], _S),
    "kiln_kernel_param": ([_P, _S, ctypes.POINTER(_STR), ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_int)], _I),
    "kiln_kernel_num_block_masks": ([_P], _S),
    "kiln_kernel_block_mask": ([_P, _S, ctypes.POINTER(_STR), _P64, _P64, ctypes.POINTER(_S)], _I),
    "kiln_kernel_const_int": ([_P, _STR, _P64], _I),
    "kiln_block_mask_from_dense": ([_P, _P, _I64, _I64, _I64, _I64, _PP], _I),
    "kiln_block_mask_from_bsr": ([_P, _P, _S, _P, _S, _P, _I64, _I64, _I64, _I64, _PP], _I),
    "kiln_block_mask_destroy": ([_P], None),
    "kiln_block_mask_shape": ([_P, _P64, _P64, _P64, _P64], _I),
    "kiln_block_mask_counts": ([_P, _P64, _P64, _P64], _I),
    "kiln_block_mask_from_buffers": ([_P, _I64, _I64, _I64, _I64, _P, _P, _P, _PP], _I),
    "kiln_block_mask_digest": ([_P], _STR),
    "kiln_launch": ([_P, Grid, _ARGS, _S], _I),
    "kiln_graph_load_file": ([_P, _STR, _PP], _I),
    "kiln_graph_destroy": ([_P], None),
    "kiln_graph_name": ([_P], _STR),
    "kiln_graph_num_params": ([_P], _S),
    "kiln_graph_param": ([_P, _S, ctypes.POINTER(_STR), ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_int)], _I),
    "kiln_graph_num_block_masks": ([_P], _S),
    "kiln_graph_block_mask": ([_P, _S, ctypes.POINTER(_STR), _P64, _P64, ctypes.POINTER(_S)], _I),
    "kiln_graph_has_persistent": ([_P], ctypes.c_int),
    "kiln_graph_set_workers": ([_P, ctypes.c_uint32], _I),
    "kiln_graph_set_wait_timeout": ([_P, ctypes.c_uint64], _I),
    "kiln_graph_launch": ([_P, _ARGS, _S, _I], _I),
    "kiln_graph_check": ([_P], _I),
    "kiln_graph_last_run": ([_P, ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_uint32),
                             ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)], _I),
}

JIT_SIGNATURES = {
    "kiln_jit_options_init": ([ctypes.POINTER(JitOptions)], None),
    "kiln_jit_create": ([_P, ctypes.POINTER(JitOptions), _PP], _I),
    "kiln_jit_destroy": ([_P], None),
    "kiln_jit_cache_dir": ([_P], _STR),
    "kiln_jit_compile_file": ([_P, _STR, _STR, ctypes.POINTER(CompileOptions), _PP], _I),
    "kiln_jit_compile_string": ([_P, _STR, _STR, _STR, ctypes.POINTER(CompileOptions), _PP], _I),
    "kiln_jit_compile_graph_file": ([_P, _STR, _STR, ctypes.POINTER(CompileOptions), _PP], _I),
    "kiln_jit_compile_graph_string": ([_P, _STR, _STR, _STR, ctypes.POINTER(CompileOptions), _PP], _I),
    "kiln_jit_kernel_destroy": ([_P], None),
    "kiln_jit_kernel_name": ([_P], _STR),
    "kiln_jit_kernel_num_params": ([_P], _S),
    "kiln_jit_kernel_param": ([_P, _S, ctypes.POINTER(_STR), ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_int)], _I),
    "kiln_jit_kernel_num_configs": ([_P], _S),
    "kiln_jit_kernel_config": ([_P, _S], _STR),
    "kiln_jit_launch": ([_P, Grid, _ARGS, _S], _I),
    "kiln_jit_launch_on_stream": ([_P, Grid, _ARGS, _S, _P], _I),
    "kiln_jit_launch_with_grid_fn": ([_P, GRID_FN, _P, _ARGS, _S], _I),
    "kiln_jit_kernel_select": ([_P, Grid, _ARGS, _S, _PP, ctypes.POINTER(_S)], _I),
}


def _declare(lib, signatures):
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result


def _candidates():
    """(path, what) pairs to try, in order."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
    out = []
    for env in ("KILN_LIBRARY", "KILN_RUNTIME_LIBRARY"):
        if os.environ.get(env):
            return [(os.environ[env], "$" + env)]
    for name in ("libkiln.so", "libkiln_runtime.so"):
        if os.path.exists(os.path.join(here, name)):
            out.append((os.path.join(here, name), "the package's lib/ folder"))
    for name in ("kiln", "kiln_runtime"):
        found = ctypes.util.find_library(name)
        out.append((found or "lib%s.so" % name, "the system's libraries"))
    return out


def open_library(path=None):
    """The C library, its signatures declared; `has_jit` says whether it holds the JIT."""
    tried = []
    for candidate, where in ([(path, "the path given")] if path else _candidates()):
        try:
            lib = ctypes.CDLL(candidate)
        except OSError as e:
            tried.append(f"{candidate} ({where}): {e}")
            continue
        _declare(lib, RUNTIME_SIGNATURES)
        lib.has_jit = hasattr(lib, "kiln_jit_create")
        if lib.has_jit:
            _declare(lib, JIT_SIGNATURES)
        lib.path = candidate
        return lib
    raise Error("KILN_ERROR_NO_DRIVER", "Kiln's library was not found; tried " + "; ".join(tried) +
                ". Build it (cmake --build build --target kiln_jit_shared) and pip install ./python, "
                "or set KILN_LIBRARY to libkiln.so")


def check(lib, status):
    """Raises Error for a failed kiln_status, with the library's last message."""
    if status != 0:
        raise Error(lib.kiln_status_name(status).decode(), lib.kiln_last_error().decode())
