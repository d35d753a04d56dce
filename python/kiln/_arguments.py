"""Python values as launch arguments.

A pointer parameter takes
  - a Buffer of the runtime;
  - a device array by its address, no copy: a torch CUDA tensor, anything with
    __cuda_array_interface__ (CuPy, Numba) or with __dlpack__ on a CUDA device. Its
    dtype must be the parameter's, its elements contiguous, its device the runtime's;
    the memory is checked with the driver the first time an (address, size) is seen
    (kiln_buffer_wrap) and the buffer that wraps it is kept for the next launch;
  - a NumPy array, copied to the device before the launch and back after it (the launch
    then waits for the device).
A scalar parameter takes a Python or NumPy number or bool, passed as the parameter's kind.
Every refusal is a kiln.Error naming the parameter.
"""

import ctypes
import math
import sys

import numpy as np

from ._capi import ARG_BOOL, ARG_BUFFER, ARG_FLOAT, ARG_INT, ARG_UINT, FLOAT_DTYPES, Error

MISMATCH = "KILN_ERROR_ARGUMENT_MISMATCH"
CU_STREAM_LEGACY = 1  # the driver's handle for the legacy default stream, torch's stream 0

# __cuda_array_interface__ typestrs, DLPack (code, bits) pairs and torch dtypes, as Kiln's.
_TYPESTRS = {"|b1": "bool", "|i1": "i8", "<i2": "i16", "<i4": "i32", "<i8": "i64", "|u1": "u8", "<u2": "u16",
             "<u4": "u32", "<u8": "u64", "<f2": "f16", "<f4": "f32", "<f8": "f64"}
_DLPACK = {(0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8", (1, 16): "u16",
           (1, 32): "u32", (1, 64): "u64", (2, 16): "f16", (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16",
           (6, 8): "bool"}
_TORCH_NAMES = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
                "float32": "f32", "float64": "f64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}
_NUMPY = {np.dtype(np.bool_): "bool", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
          np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8",
          np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
          np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_KDLCUDA, _KDLCUDAMANAGED = 2, 13

_torch_dtypes = None  # torch.dtype -> Kiln dtype, filled once torch is imported


def torch_dtype_name(dtype):
    """The Kiln dtype of a torch dtype (None when Kiln has no name for it)."""
    global _torch_dtypes
    if _torch_dtypes is None:
        torch = sys.modules["torch"]
        _torch_dtypes = {getattr(torch, n): k for n, k in _TORCH_NAMES.items() if hasattr(torch, n)}
    return _torch_dtypes.get(dtype)


def torch_dtype(kiln_dtype):
    """The torch dtype of a Kiln dtype (None when torch has none)."""
    torch_dtype_name(None)  # fills the table
    for dtype, name in _torch_dtypes.items():
        if name == kiln_dtype:
            return dtype
    return None


def is_torch_tensor(arg):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(arg, torch.Tensor)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes, _capsule_pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p


def _contiguous(shape, strides, itemsize):
    """Whether `strides` (in elements when itemsize is 1, else bytes) are row-major dense."""
    step = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != step:
            return False
        step *= extent
    return True


def _describe_dlpack(arg, where):
    """(address, nbytes, dtype, device) of a DLPack-capable array, read from its capsule
    without consuming it (the capsule's own destructor releases the view)."""
    device_type, device_id = arg.__dlpack_device__()
    if device_type not in (_KDLCUDA, _KDLCUDAMANAGED):
        raise Error(MISMATCH, where + f" on DLPack device type {device_type}, not a CUDA device")
    capsule = arg.__dlpack__()
    managed = _capsule_pointer(capsule, b"dltensor")
    tensor = _DLTensor.from_address(managed)  # DLManagedTensor starts with its DLTensor
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    dtype = _DLPACK.get((code, bits)) if lanes == 1 else None
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    count = math.prod(shape)
    if tensor.strides and count > 1 and not _contiguous(shape, [tensor.strides[i] for i in range(tensor.ndim)], 1):
        raise Error(MISMATCH, where + " that is not contiguous")
    return (tensor.data or 0) + tensor.byte_offset, count * bits // 8, dtype, device_id, f"(code {code}, {bits} bits)"


def describe_device_array(arg, name):
    """(address, nbytes, dtype, device index) of a device array, or None if `arg` is none."""
    if is_torch_tensor(arg):
        where = f"parameter '{name}': a torch tensor of {arg.dtype}"
        if not arg.is_cuda:
            raise Error(MISMATCH, where + " on the CPU; move it with .cuda() (or pass a NumPy array, copied)")
        if not arg.is_contiguous():
            raise Error(MISMATCH, where + " that is not contiguous; pass .contiguous()")
        dtype = torch_dtype_name(arg.dtype)
        if dtype is None:
            raise Error(MISMATCH, where + ", a dtype Kiln has no name for")
        return arg.data_ptr(), arg.nbytes, dtype, arg.get_device()
    cai = getattr(arg, "__cuda_array_interface__", None)
    if cai is not None:
        where = f"parameter '{name}': a device array of {cai['typestr']}"
        dtype = _TYPESTRS.get(cai["typestr"])
        if dtype is None:
            raise Error(MISMATCH, where + ", a dtype Kiln has no name for")
        shape = tuple(cai["shape"])
        itemsize = int(cai["typestr"][2:])
        count = math.prod(shape)
        if cai.get("strides") is not None and count > 1 and not _contiguous(shape, cai["strides"], itemsize):
            raise Error(MISMATCH, where + " that is not C-contiguous")
        return cai["data"][0], count * itemsize, dtype, None
    if hasattr(arg, "__dlpack__") and hasattr(arg, "__dlpack_device__") and not isinstance(arg, np.ndarray):
        where = f"parameter '{name}': a DLPack array"
        address, nbytes, dtype, device, spelled = _describe_dlpack(arg, where)
        if dtype is None:
            raise Error(MISMATCH, where + f" of DLPack dtype {spelled}, which Kiln has no name for")
        return address, nbytes, dtype, device
    return None


def wrap_device_array(runtime, arg, name, dtype):
    """The buffer handle (an int) for device array `arg` passed for parameter `name` of
    `dtype`; None when `arg` is not a device array."""
    described = describe_device_array(arg, name)
    if described is None:
        return None
    address, nbytes, have, device = described
    if have != dtype:
        raise Error(MISMATCH, f"parameter '{name}' is *{dtype}, got a device array of {have}")
    if device is not None and device != runtime.device:
        raise Error(MISMATCH, f"parameter '{name}': a device array on device {device}, but the runtime is "
                              f"on device {runtime.device}")
    return runtime.wrapped_handle(address, nbytes, dtype)


def numpy_buffer(runtime, arg, name, dtype):
    """A device copy of NumPy array `arg` for parameter `name` (a Buffer)."""
    array = np.ascontiguousarray(arg)
    have = _NUMPY.get(array.dtype)
    # bf16 and the f8 formats have no NumPy dtype: their bits come in uint16 or uint8.
    bits_of = {"bf16": "u16", "f8e4m3": "u8", "f8e5m2": "u8"}
    if have != dtype and bits_of.get(dtype) != have:
        raise Error(MISMATCH, f"parameter '{name}' is *{dtype}, got a NumPy array of {array.dtype}")
    return runtime.upload(array, dtype)


def f32(value, _pack=np.float32):
    """A Python number rounded to f32 (the fast launchers' converter; a value beyond f32's
    range gives infinity, which they send to scalar() to be refused)."""
    with np.errstate(over="ignore"):
        return float(_pack(value))


def scalar(arg, name, dtype):
    """(kind, value) of a scalar argument for the kiln_arg union; the C API checks the
    value against the parameter (range, exactness) and names any mismatch."""
    if isinstance(arg, (bool, np.bool_)):
        return ARG_BOOL, int(arg)
    if dtype in FLOAT_DTYPES and isinstance(arg, (int, float, np.number)):
        # Rounded to the parameter's type first: the C API takes only values it
        # represents exactly, and a Python float is an f64. A finite value beyond the
        # type's range is refused rather than passed as infinity.
        try:
            value = float(arg)
        except OverflowError:
            value = math.inf
        narrow = {"f32": np.float32, "f16": np.float16}.get(dtype)
        if narrow is not None:
            with np.errstate(over="ignore"):
                value = float(narrow(value))
        if math.isinf(value) and not (isinstance(arg, (float, np.floating)) and math.isinf(arg)):
            raise Error(MISMATCH, f"parameter '{name}: {dtype}': {arg!r} is beyond the range of {dtype}")
        return ARG_FLOAT, value
    if isinstance(arg, (int, np.integer)):
        value = int(arg)
        if not -2 ** 63 <= value < 2 ** 64:
            raise Error(MISMATCH, f"parameter '{name}: {dtype}': {value} does not fit in 64 bits")
        return (ARG_UINT, value) if value >= 2 ** 63 else (ARG_INT, value)
    if isinstance(arg, (float, np.floating)):
        return ARG_FLOAT, float(arg)  # the C API names the mismatch
    raise Error(MISMATCH, f"parameter '{name}' takes a number, got {type(arg).__name__}")


def fill(slot, runtime, arg, name, dtype, pointer, keep, copies):
    """Fills the kiln_arg `slot` with `arg` for the parameter (name, dtype, pointer).
    Buffers made for the call go to `keep`; (buffer, array) pairs to copy back after the
    launch to `copies`."""
    from .runtime import Buffer
    if pointer:
        if isinstance(arg, Buffer):
            handle = arg._handle
        elif isinstance(arg, np.ndarray):
            buffer = numpy_buffer(runtime, arg, name, dtype)
            keep.append(buffer)
            copies.append((buffer, arg))
            handle = buffer._handle
        else:
            handle = wrap_device_array(runtime, arg, name, dtype)
            if handle is None:
                raise Error(MISMATCH, f"parameter '{name}' takes a Buffer, a torch CUDA tensor, a device array "
                                      f"or a NumPy array, got {type(arg).__name__}")
        slot.kind, slot.value.buffer.buffer, slot.value.buffer.offset = ARG_BUFFER, handle, 0
        return
    kind, value = scalar(arg, name, dtype)
    slot.kind = kind
    if kind == ARG_BOOL:
        slot.value.b = value
    elif kind == ARG_FLOAT:
        slot.value.f = value
    elif kind == ARG_UINT:
        slot.value.u = value
    else:
        slot.value.i = value


def copy_back(runtime, copies):
    """After a launch: NumPy arguments get the device's bytes back (waiting for it)."""
    if not copies:
        return
    runtime.synchronize()
    for buffer, array in copies:
        if array.flags.writeable:
            if array.flags.c_contiguous:
                buffer.read_into(array)
            else:
                array[...] = buffer.download(array.dtype, array.shape)


class StreamSource:
    """Which stream a launch goes on when none is given: torch's current stream once torch
    is imported (so Kiln's kernels order with torch's ops and are captured with them in a
    CUDA graph), else the runtime's own. CUDA only; None means the runtime's own."""

    def __init__(self, runtime):
        self._device = runtime.device
        self._cuda = runtime.target.startswith("sm_")
        self._raw = None

    def getter(self):
        """torch's function of a device index giving its current CUstream as an int (0 for
        the legacy default stream), or None while torch is not imported or has no CUDA."""
        if self._raw is None and self._cuda:
            torch = sys.modules.get("torch")
            if torch is None or not torch.cuda.is_available():
                return None
            getter = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if getter is None:
                def getter(device, _torch=torch):
                    return _torch.cuda.current_stream(device).cuda_stream
            self._raw = getter
        return self._raw

    def current(self):
        getter = self.getter()
        return None if getter is None else getter(self._device) or CU_STREAM_LEGACY


def explicit_stream(stream):
    """A stream given to a launch: a torch.cuda.Stream (or anything with .cuda_stream) or
    a CUstream as an int; 0 means the legacy default stream."""
    raw = getattr(stream, "cuda_stream", stream)
    if not isinstance(raw, int):
        raise Error("KILN_ERROR_INVALID_VALUE", f"stream= takes a torch.cuda.Stream or a CUstream as an int, "
                                                f"got {type(stream).__name__}")
    return raw or CU_STREAM_LEGACY

