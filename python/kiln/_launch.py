"""kernel[grid](*args): a launch with as little Python as the arguments allow.

The host time of a launch from Python is mostly Python: per argument, finding out what it
is and filling a ctypes structure field by field costs more than the C launch itself. A
Plan works out once, per kernel, how each parameter is converted and the struct layout of
the whole kiln_arg array, and kernel[grid] is a function written for the kernel and the
grid (make_launcher): a launch tests each argument's common case inline, packs the array
with one struct call into bytes (so concurrent launches from several threads share
nothing) and makes one foreign call. Anything the fast converters
do not take (a NumPy array to copy, a block mask, a NumPy scalar) goes through the general
path (Kernel.launch), which accepts every argument kind and names what it refuses.

Where the package was built with its C extension (kiln/_fastlaunch.c, the stable ABI),
kernel[grid] is a Launcher written in C instead: the same fast cases, the same plan, the
same converters and general path for everything else, about a microsecond less per launch
(bench/launch_bench.py). KILN_COMPILED_LAUNCHER=0 keeps the Python launchers.
"""

import ctypes
import functools
import math
import os
import struct
import sys

from ._arguments import explicit_stream, f32, is_torch_tensor, torch_dtype, wrap_device_array
from ._capi import ARG_BOOL, ARG_BUFFER, ARG_FLOAT, ARG_INT, Error, Grid, check

# One kiln_arg: kind (4 bytes, then 4 of padding), the 16-byte union.
_SLOT = {"pointer": "i4xQQ", "int": "i4xqQ", "float": "i4xdQ", "bool": "i4xi4xQ"}


_MISSING = object()  # an argument not passed to a written launcher

try:
    from . import _fastlaunch
except ImportError:  # built without a C compiler or Python's headers: the Python launchers
    _fastlaunch = None
if os.environ.get("KILN_COMPILED_LAUNCHER", "1") == "0":
    _fastlaunch = None
COMPILED = _fastlaunch is not None  # whether kernel[grid] is written in C


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
        def float_value(arg, rounded=f32 if dtype == "f32" else float, isinf=math.isinf):
            if type(arg) is float or type(arg) is int:
                try:
                    value = rounded(arg)
                except OverflowError:  # an int beyond f64: scalar() refuses it
                    raise _Slow from None
                if not isinf(value) or type(arg) is float and isinf(arg):
                    return value
            raise _Slow  # a finite value beyond the type's range: scalar() refuses it
        if dtype in ("f32", "f64"):
            return "float", ARG_FLOAT, float_value
        return None  # the general path rounds f16 and checks the narrow formats

    def int_value(arg):
        if type(arg) is int:
            return arg
        raise _Slow
    return "int", ARG_INT, int_value


class Plan:
    """How a kernel's arguments are packed: built once per kernel (make_plan gives None
    when some parameter, a block mask's parts, has no fast converter)."""

    def __init__(self, runtime, params):
        converters = [_converter(runtime, *p) for p in params]
        if any(c is None for c in converters):
            raise ValueError("no fast path")
        self.count = len(params)
        self.params = params
        self.slots = [c[0] for c in converters]
        self.codes = [c[1] for c in converters]
        self.convert = [c[2] for c in converters]
        self.struct = struct.Struct("<" + "".join(_SLOT[c[0]] for c in converters))


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


def grid_dims(grid):
    """(x, y, z) of a grid given as an int or a tuple of one to three."""
    if isinstance(grid, int):
        grid = (grid,)
    dims = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    if len(dims) != 3:
        raise Error("KILN_ERROR_INVALID_VALUE", f"a grid has 1 to 3 dimensions, got {grid!r}")
    return dims


def make_launcher(kernel, grid):
    """kernel[grid]: a function of the kernel's arguments (and stream=), written for this
    kernel and grid as Triton writes its launchers: the arguments unpacked by name, each
    one's common case (a Buffer, a Python int) tested inline, the rest converted by the
    parameter's converter, the kiln_args packed by one struct call, one foreign call. A
    wrong count or an argument no converter takes goes to kernel.launch, which says what
    is wrong or takes the general way."""
    dims = grid_dims(grid)
    plan = kernel._plan
    general = kernel.launch
    if plan is None:
        def launch(*args, stream=None):
            return general(dims, *args, stream=stream)
        return launch
    from .runtime import Buffer
    n = plan.count
    torch = sys.modules.get("torch")
    stream_getter = kernel._streams.getter()
    if _fastlaunch is not None and n <= 64:
        return _compiled_launcher(kernel, dims, plan, torch, stream_getter, Buffer)
    # With torch imported, a torch tensor seen before is taken inline: its dtype and
    # contiguity read, its (address, size, dtype) looked up in the runtime's wraps (a hit
    # means the driver placed that memory on this runtime's device); and torch's current
    # stream is read directly.
    # Named parameters, so no tuple is built; a missing or extra argument leaves the last
    # one at MISSING or fills `extra`, and kernel.launch says what is wrong.
    names = "".join(f"a{i}=MISSING, " for i in range(n))
    everything = "(" + "".join(f"a{i}, " for i in range(n)) + ") + extra"
    lines = [f"def launch({names}*extra, stream=None):",
             f"    if extra{f' or a{n - 1} is MISSING' if n else ''}:",
             f"        args = tuple(a for a in {everything} if a is not MISSING)",
             "        return general(dims, *args, stream=stream)",
             "    try:"]
    torch_dtypes = {}
    for i, slot in enumerate(plan.slots):
        if slot == "pointer":
            lines.append(f"        if type(a{i}) is Buffer:")
            lines.append(f"            v{i} = a{i}._handle")
            want = torch_dtype(plan.params[i][1]) if torch is not None else None
            if want is not None:
                torch_dtypes[f"T{i}"] = want
                lines += [f"        elif type(a{i}) is Tensor and a{i}.dtype is T{i} and a{i}.is_contiguous():",
                          f"            b = wraps.get((a{i}.data_ptr(), a{i}.nbytes, T{i}))",
                          f"            v{i} = c{i}(a{i}) if b is None else b._handle"]
            lines += ["        else:", f"            v{i} = c{i}(a{i})"]
        elif slot == "int":
            lines.append(f"        v{i} = a{i} if type(a{i}) is int else c{i}(a{i})")
        else:
            lines.append(f"        v{i} = c{i}(a{i})")
    packed = ", ".join(f"{code}, v{i}, 0" for i, code in enumerate(plan.codes))
    lines += [f"        args = pack({packed})",
              "    except (Slow, StructError):  # StructError: an int beyond 64 bits",
              f"        return general(dims, *{everything}, stream=stream)"]
    if stream_getter is not None:
        lines.append("    raw = (raw_stream(device) or 1) if stream is None else explicit(stream)")
    else:
        lines.append("    raw = current() if stream is None else explicit(stream)")
    lines += [f"    status = enqueue(grid, args, {n}, raw)",
              "    if status:",
              "        fail(lib, status)"]
    namespace = {"general": general, "dims": dims, "Buffer": Buffer, "Slow": _Slow, "MISSING": _MISSING,
                 "current": kernel._streams.current, "explicit": explicit_stream, "enqueue": kernel._enqueue,
                 "grid": Grid(*dims), "pack": plan.struct.pack, "StructError": struct.error, "fail": check, "lib": kernel._rt._lib,
                 "Tensor": torch.Tensor if torch is not None else None, "wraps": kernel._rt._wraps,
                 "raw_stream": stream_getter, "device": kernel._rt.device, **torch_dtypes}
    namespace.update({f"c{i}": convert for i, convert in enumerate(plan.convert)})
    exec(compile("\n".join(lines), f"<kiln launcher of {kernel.name}>", "exec"), namespace)  # noqa: S102
    return namespace["launch"]


# The C Launcher's codes for a parameter's slot (kiln/_fastlaunch.c).
_C_SLOT = {"pointer": 0, "int": 1, "bool": 4}


def _compiled_launcher(kernel, dims, plan, torch, stream_getter, buffer_type):
    """make_launcher's launcher written in C: the same inline cases (a Buffer, a torch
    tensor seen before, a Python scalar), the plan's converters for the rest, the general
    launch for a wrong count or an argument no converter takes."""
    slots = bytes(_C_SLOT.get(slot, 2 if dtype == "f32" else 3)
                  for slot, (_, dtype, _) in zip(plan.slots, plan.params))
    tensor_dtypes = tuple(torch_dtype(dtype) if torch is not None and slot == "pointer" else None
                          for slot, (_, dtype, _) in zip(plan.slots, plan.params))
    launch, launch_on = kernel._entry_points
    general = kernel.launch

    def general_launch(*args, stream=None):
        return general(dims, *args, stream=stream)
    return _fastlaunch.launcher(
        launch, launch_on, kernel._handle, dims, slots, tuple(plan.convert), tensor_dtypes, buffer_type,
        torch.Tensor if torch is not None else None, kernel._rt._wraps, _Slow,
        stream_getter, kernel._rt.device, kernel._streams.current, explicit_stream, general_launch,
        functools.partial(check, kernel._rt._lib))


class Launchable:
    """What kernel[grid] needs of a kernel, shared by loaded kernels (runtime.Kernel,
    kiln_launch) and the JIT's (jit.JitKernel, kiln_jit_launch): the plan, a written
    launcher per grid, and the two C entry points (on the runtime's stream, on a given one).
    A subclass sets _rt and _handle and calls _init_launching."""

    def _init_launching(self, params, has_masks, launch, launch_on_stream):
        lib = self._rt._lib
        self._plan = make_plan(self._rt, params, has_masks)
        self._launchers = {}
        self._streams = self._rt._streams
        self._launch_fn = c_launcher(lib, launch)
        self._launch_on_fn = c_launcher(lib, launch_on_stream, (ctypes.c_void_p,))
        # The entry points' addresses, which a C Launcher calls directly.
        self._entry_points = tuple(ctypes.cast(lib[name], ctypes.c_void_p).value
                                   for name in (launch, launch_on_stream))

    def __getitem__(self, grid):
        """kernel[grid](*args, stream=None): launches `grid` programs (an int, or a tuple
        of 1 to 3) as Triton spells it; the fast path of launch."""
        launcher = self._launchers.get(grid)
        if launcher is None:
            launcher = self._launchers[grid] = make_launcher(self, grid)
        return launcher

    def _enqueue(self, grid, packed, count, stream):
        if stream is None:
            return self._launch_fn(self._handle, grid, packed, count)
        return self._launch_on_fn(self._handle, grid, packed, count, stream)
