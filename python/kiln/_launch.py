"""kernel[grid](*args): a launch with as little Python as the arguments allow.

The host time of a launch from Python is mostly Python: per argument, finding out what it
is and filling a ctypes structure field by field costs more than the C launch itself. A
Launcher works out once, per kernel, how each parameter is converted and the struct
layout of the whole kiln_arg array; a launch then converts each argument with one small
function, packs the array with one struct call into bytes (so concurrent launches from
several threads share nothing) and makes one foreign call. Anything the fast converters
do not take (a NumPy array to copy, a block mask, a NumPy scalar) goes through the general
path (Kernel.launch), which accepts every argument kind and names what it refuses.
"""

import ctypes
import struct

from ._arguments import explicit_stream, f32, is_torch_tensor, torch_dtype, wrap_device_array
from ._capi import ARG_BOOL, ARG_BUFFER, ARG_FLOAT, ARG_INT, Error, Grid, check

# One kiln_arg: kind (4 bytes, then 4 of padding), the 16-byte union.
_SLOT = {"pointer": "i4xQQ", "int": "i4xqQ", "float": "i4xdQ", "bool": "i4xi4xQ"}


class _Slow(Exception):
    """An argument the fast path does not take: the launch goes the general way."""


def _converter(runtime, name, dtype, pointer):
    """(slot kind, kind code, function from the argument to the slot's value)."""
    if pointer:
        from .runtime import Buffer
        wraps = runtime._wraps
        torch_type = []  # [torch.Tensor, the parameter's torch dtype] once torch is imported

        # A device array seen before (same address, size and dtype) costs one dictionary
        # lookup in the runtime's wraps (Runtime.wrapped_handle); a torch tensor, whose
        # memory torch keeps alive and on its device, is checked for dtype, device and
        # contiguity with three attribute reads first.
        def pointer_value(arg):
            if type(arg) is Buffer:
                return arg._handle
            if torch_type and type(arg) is torch_type[0]:
                if arg.dtype is torch_type[1] and arg.get_device() == runtime.device and arg.is_contiguous():
                    buffer = wraps.get((arg.data_ptr(), arg.nbytes, torch_type[1]))
                    if buffer is not None:
                        return buffer._handle
            elif not torch_type and is_torch_tensor(arg):
                torch_type.extend([type(arg), torch_dtype(dtype)])
            if is_torch_tensor(arg) or hasattr(arg, "__cuda_array_interface__") or hasattr(arg, "__dlpack__"):
                handle = wrap_device_array(runtime, arg, name, dtype)
                if handle is not None:
                    if torch_type and type(arg) is torch_type[0] and torch_type[1] is not None:
                        wraps[(arg.data_ptr(), arg.nbytes, torch_type[1])] = wraps[
                            (arg.data_ptr(), arg.nbytes, dtype)]
                    return handle
            raise _Slow
        return "pointer", ARG_BUFFER, pointer_value
    if dtype == "bool":
        def bool_value(arg):
            if type(arg) is bool:
                return int(arg)
            raise _Slow
        return "bool", ARG_BOOL, bool_value
    if dtype in ("f32", "f16", "bf16", "f64", "f8e4m3", "f8e5m2"):
        def float_value(arg, rounded=f32 if dtype == "f32" else float):
            if type(arg) is float or type(arg) is int:
                return rounded(arg)
            raise _Slow
        if dtype in ("f32", "f64"):
            return "float", ARG_FLOAT, float_value
        return None  # the general path rounds f16 and checks the narrow formats

    def int_value(arg):
        if type(arg) is int:
            return arg
        raise _Slow
    return "int", ARG_INT, int_value


class Plan:
    """How a kernel's arguments are packed: built once per kernel, None-able when some
    parameter (a block mask's parts) has no fast converter."""

    def __init__(self, runtime, params):
        converters = [_converter(runtime, *p) for p in params]
        if any(c is None for c in converters):
            raise ValueError("no fast path")
        self.count = len(params)
        self.struct = struct.Struct("<" + "".join(_SLOT[c[0]] for c in converters))
        self.convert = [c[2] for c in converters]
        # kind, value, 0 per slot: the values go in at [1::3]
        self.template = [x for c in converters for x in (c[1], 0, 0)]


def make_plan(runtime, params, has_masks):
    if has_masks:
        return None
    try:
        return Plan(runtime, params)
    except ValueError:
        return None


def c_launcher(lib, name, extra=()):
    """A fresh function object for `name` whose argument array is bytes (c_char_p), the
    packed arguments' own buffer, passed without a copy."""
    fn = lib[name]
    fn.argtypes = [ctypes.c_void_p, Grid, ctypes.c_char_p, ctypes.c_size_t, *extra]
    fn.restype = ctypes.c_int32
    return fn


class Launcher:
    """kernel[grid]: call it with the kernel's arguments (and stream=, optionally)."""

    __slots__ = ("_kernel", "_grid", "_dims")

    def __init__(self, kernel, grid):
        if isinstance(grid, int):
            grid = (grid,)
        dims = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if len(dims) != 3:
            raise Error("KILN_ERROR_INVALID_VALUE", f"a grid has 1 to 3 dimensions, got {grid!r}")
        self._kernel, self._dims, self._grid = kernel, dims, Grid(*dims)

    def __call__(self, *args, stream=None):
        kernel = self._kernel
        plan = kernel._plan
        if plan is None or len(args) != plan.count:
            return kernel.launch(self._dims, *args, stream=stream)
        flat = plan.template[:]
        try:
            flat[1::3] = [convert(a) for convert, a in zip(plan.convert, args)]
        except _Slow:
            return kernel.launch(self._dims, *args, stream=stream)
        packed = plan.struct.pack(*flat)
        raw = kernel._streams.current() if stream is None else explicit_stream(stream)
        status = kernel._enqueue(self._grid, packed, plan.count, raw)
        if status:
            check(kernel._rt._lib, status)

