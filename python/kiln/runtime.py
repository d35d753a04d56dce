"""Python bindings of Kiln's runtime C API (runtime/kiln_runtime.h), through ctypes.

They load libkiln_runtime.so (the CMake target kiln_runtime_shared) and need nothing
else: no compiler, no LLVM; NumPy for the host side of copies.

    import numpy as np
    from kiln_runtime import Runtime

    rt = Runtime("build/runtime/libkiln_runtime.so")   # CUDA if it works, else Level Zero
    kernel = rt.load("softmax.kbin")                   # a bundle from dslc --emit=bundle
    x = rt.upload(np.random.rand(8, 1000).astype(np.float32))
    y = rt.alloc(x.nbytes, "f32")
    kernel.launch((8,), x, y, 1000, 1000)              # arguments in the kernel's order
    print(y.download(np.float32, (8, 1000)))

A pointer parameter takes a Buffer; a scalar parameter a Python number, passed as the
parameter's kind (an f32 parameter takes 2 as 2.0, and 1e-5 rounded to the nearest f32,
as NumPy rounds it); a block_mask<BM, BN> parameter a BlockMask:

    mask = rt.block_mask(keep, block=(64, 64))       # keep: a 2-D NumPy bool array
    kernel.launch((n_blocks,), q, k, v, out, mask)

Failures raise KilnError with the status name and the runtime's message.
"""

import ctypes
import os

import numpy as np

# kiln_dtype, in the order of kiln_runtime.h.
DTYPES = ["none", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"]
_FLOAT_DTYPES = {"f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"}
_NUMPY_DTYPES = {np.dtype(np.bool_): "bool", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
                 np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8",
                 np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
                 np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}

_ARG_BUFFER, _ARG_INT, _ARG_FLOAT, _ARG_BOOL, _ARG_BLOCK_MASK = 1, 2, 4, 5, 6
_MASK_PARAMS = 5  # a block_mask parameter is five runtime parameters (kiln_runtime.h)


class KilnError(RuntimeError):
    """A runtime call failed: `status` is the kiln_status name, the text its message."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status


class _Grid(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class _BufferValue(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("offset", ctypes.c_uint64)]


class _Value(ctypes.Union):
    _fields_ = [("buffer", _BufferValue), ("i", ctypes.c_int64), ("u", ctypes.c_uint64),
                ("f", ctypes.c_double), ("b", ctypes.c_int), ("mask", ctypes.c_void_p)]


class _Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("value", _Value)]


def _open(path):
    lib = ctypes.CDLL(path)
    P, I, S, I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t, ctypes.c_int64
    P64 = ctypes.POINTER(I64)
    signatures = {
        "kiln_status_name": ([I], ctypes.c_char_p),
        "kiln_last_error": ([], ctypes.c_char_p),
        "kiln_runtime_create": ([P, ctypes.POINTER(P)], I),
        "kiln_runtime_destroy": ([P], None),
        "kiln_runtime_device_name": ([P], ctypes.c_char_p),
        "kiln_runtime_target": ([P], ctypes.c_char_p),
        "kiln_runtime_synchronize": ([P], I),
        "kiln_runtime_set_stream": ([P, P], I),
        "kiln_launch_on_stream": ([P, _Grid, ctypes.POINTER(_Arg), S, P], I),
        "kiln_buffer_alloc": ([P, S, I, ctypes.POINTER(P)], I),
        "kiln_buffer_wrap": ([P, ctypes.c_uint64, S, I, ctypes.POINTER(P)], I),
        "kiln_buffer_free": ([P], None),
        "kiln_buffer_size": ([P], S),
        "kiln_buffer_device_address": ([P], ctypes.c_uint64),
        "kiln_buffer_write": ([P, S, P, S], I),
        "kiln_buffer_read": ([P, S, P, S], I),
        "kiln_buffer_fill": ([P, ctypes.c_uint8], I),
        "kiln_kernel_load_file": ([P, ctypes.c_char_p, ctypes.POINTER(P)], I),
        "kiln_kernel_destroy": ([P], None),
        "kiln_kernel_name": ([P], ctypes.c_char_p),
        "kiln_kernel_num_params": ([P], S),
        "kiln_kernel_param": ([P, S, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I),
                               ctypes.POINTER(ctypes.c_int)], I),
        "kiln_kernel_num_block_masks": ([P], S),
        "kiln_kernel_block_mask": ([P, S, ctypes.POINTER(ctypes.c_char_p), P64, P64, ctypes.POINTER(S)], I),
        "kiln_kernel_const_int": ([P, ctypes.c_char_p, P64], I),
        "kiln_block_mask_from_dense": ([P, P, I64, I64, I64, I64, ctypes.POINTER(P)], I),
        "kiln_block_mask_from_bsr": ([P, P, S, P, S, P, I64, I64, I64, I64, ctypes.POINTER(P)], I),
        "kiln_block_mask_destroy": ([P], None),
        "kiln_block_mask_shape": ([P, P64, P64, P64, P64], I),
        "kiln_block_mask_counts": ([P, P64, P64, P64], I),
        "kiln_block_mask_from_buffers": ([P, I64, I64, I64, I64, P, P, P, ctypes.POINTER(P)], I),
        "kiln_block_mask_digest": ([P], ctypes.c_char_p),
        "kiln_launch": ([P, _Grid, ctypes.POINTER(_Arg), S], I),
        "kiln_graph_load_file": ([P, ctypes.c_char_p, ctypes.POINTER(P)], I),
        "kiln_graph_destroy": ([P], None),
        "kiln_graph_name": ([P], ctypes.c_char_p),
        "kiln_graph_num_params": ([P], S),
        "kiln_graph_param": ([P, S, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I),
                              ctypes.POINTER(ctypes.c_int)], I),
        "kiln_graph_has_persistent": ([P], ctypes.c_int),
        "kiln_graph_set_workers": ([P, ctypes.c_uint32], I),
        "kiln_graph_set_wait_timeout": ([P, ctypes.c_uint64], I),
        "kiln_graph_launch": ([P, ctypes.POINTER(_Arg), S, I], I),
        "kiln_graph_check": ([P], I),
        "kiln_graph_last_run": ([P, ctypes.POINTER(I), ctypes.POINTER(ctypes.c_uint32),
                                 ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)], I),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


class Runtime:
    """A device (CUDA if it works, else Level Zero) and what lives on it."""

    def __init__(self, library=None):
        self._handle = None  # for close() when what follows fails
        path = library or os.environ.get("KILN_RUNTIME_LIBRARY", "libkiln_runtime.so")
        self._lib = _open(path)
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_runtime_create(None, ctypes.byref(handle)))
        self._handle = handle

    def _check(self, status):
        if status != 0:
            name = self._lib.kiln_status_name(status).decode()
            raise KilnError(name, self._lib.kiln_last_error().decode())

    def close(self):
        if self._handle:
            self._lib.kiln_runtime_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def device_name(self):
        return self._lib.kiln_runtime_device_name(self._handle).decode()

    @property
    def target(self):
        """The code target of the device: "sm_90a", "spirv64", ..."""
        return self._lib.kiln_runtime_target(self._handle).decode()

    def synchronize(self):
        self._check(self._lib.kiln_runtime_synchronize(self._handle))

    def set_stream(self, stream):
        """CUDA: later launches go on `stream`, a CUstream as an integer
        (torch.cuda.current_stream().cuda_stream); None: the runtime's own stream."""
        self._check(self._lib.kiln_runtime_set_stream(self._handle, stream or None))

    def alloc(self, nbytes, dtype="none"):
        """A device buffer of `nbytes` bytes of `dtype` elements (a name of DTYPES)."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_buffer_alloc(self._handle, nbytes, DTYPES.index(dtype), ctypes.byref(handle)))
        return Buffer(self, handle, nbytes)

    def wrap(self, address, nbytes, dtype="none"):
        """A buffer over `nbytes` of device memory at `address` that the caller owns and
        keeps alive (a torch tensor's data_ptr(), say): checked with the driver to lie in
        one allocation of this device; freeing the buffer never frees the memory."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_buffer_wrap(self._handle, address, nbytes, DTYPES.index(dtype),
                                               ctypes.byref(handle)))
        return Buffer(self, handle, nbytes)

    def upload(self, array, dtype=None):
        """A device buffer holding `array`'s bytes; `dtype` names the element type where
        NumPy has none of its own (bf16 or f8 bits in uint16 or uint8 arrays)."""
        array = np.ascontiguousarray(array)
        buffer = self.alloc(array.nbytes, dtype or _NUMPY_DTYPES[array.dtype])
        buffer.write(array)
        return buffer

    def load(self, path):
        """The kernel of a .kbin bundle."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_kernel_load_file(self._handle, os.fsencode(path), ctypes.byref(handle)))
        return Kernel(self, handle)

    def load_graph(self, path):
        """The graph of a .kgraph bundle (dslc --emit=bundle --kernel GRAPH)."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_graph_load_file(self._handle, os.fsencode(path), ctypes.byref(handle)))
        return Graph(self, handle)

    def block_mask(self, keep, block):
        """A BlockMask for block_mask<BM, BN> parameters from `keep`, a 2-D NumPy bool
        array of the kept elements ([rows, cols]), cut into `block` = (BM, BN) blocks."""
        keep = np.asarray(keep)
        if keep.dtype != np.bool_ or keep.ndim != 2:
            raise KilnError("KILN_ERROR_INVALID_VALUE",
                            f"a block mask needs a 2-D bool array, got {keep.dtype} of shape {list(keep.shape)} "
                            "(convert it with a != 0 or a.astype(bool); index it [row, column])")
        keep = np.ascontiguousarray(keep)
        rows, cols = keep.shape
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_block_mask_from_dense(self._handle, keep.ctypes.data, rows, cols,
                                                         *_block_pair(block), ctypes.byref(handle)))
        return BlockMask(self, handle)

    def block_mask_from_bsr(self, row_ptr, col_indices, shape, block, block_data=None):
        """A BlockMask from BSR arrays, as scipy.sparse.bsr_matrix (indptr, indices, data)
        or torch's sparse_bsr (crow_indices, col_indices, values) hold them: `row_ptr`,
        ceil(rows / BM) + 1 offsets; `col_indices`, each listed block's column block,
        ascending within a block row; `block_data`, None (every listed block kept whole) or
        a bool array of shape [len(col_indices), BM, BN]. `shape` is (rows, cols) and
        `block` (BM, BN)."""
        row_ptr = np.ascontiguousarray(row_ptr, dtype=np.int64).reshape(-1)
        col_indices = np.ascontiguousarray(col_indices, dtype=np.int64).reshape(-1)
        bm, bn = _block_pair(block)
        data = None
        if block_data is not None:
            block_data = np.asarray(block_data)
            expected = (len(col_indices), bm, bn)
            if block_data.dtype != np.bool_ or block_data.shape != expected:
                raise KilnError("KILN_ERROR_INVALID_VALUE",
                                f"block_data must be a bool array of shape {list(expected)} (one {bm} x {bn} block "
                                f"per column index), got {block_data.dtype} of shape {list(block_data.shape)}")
            block_data = np.ascontiguousarray(block_data)
            data = block_data.ctypes.data
        rows, cols = (int(v) for v in shape)
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_block_mask_from_bsr(self._handle, row_ptr.ctypes.data, len(row_ptr),
                                                       col_indices.ctypes.data, len(col_indices), data, rows, cols,
                                                       bm, bn, ctypes.byref(handle)))
        return BlockMask(self, handle)


    def block_mask_from_buffers(self, row_start, blocks, bitmaps, shape, block):
        """A BlockMask from its three arrays already on the device (Buffers), as the passes
        of stdlib/block_masks.kiln build them from a Kiln predicate: the block level is
        read back and checked, and the mask keeps copies. `shape` is (rows, cols) and
        `block` (BM, BN)."""
        bm, bn = _block_pair(block)
        rows, cols = (int(v) for v in shape)
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_block_mask_from_buffers(self._handle, rows, cols, bm, bn, row_start._handle,
                                                           blocks._handle, bitmaps._handle, ctypes.byref(handle)))
        return BlockMask(self, handle)


# __cuda_array_interface__ typestrs and torch dtypes, as Kiln dtypes.
_TYPESTRS = {"|b1": "bool", "|i1": "i8", "<i2": "i16", "<i4": "i32", "<i8": "i64", "|u1": "u8", "<u2": "u16",
             "<u4": "u32", "<u8": "u64", "<f2": "f16", "<f4": "f32", "<f8": "f64"}
_TORCH_DTYPES = {"torch.bool": "bool", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32",
                 "torch.int64": "i64", "torch.uint8": "u8", "torch.float16": "f16", "torch.bfloat16": "bf16",
                 "torch.float32": "f32", "torch.float64": "f64", "torch.float8_e4m3fn": "f8e4m3",
                 "torch.float8_e5m2": "f8e5m2"}


def _device_array(runtime, arg, name):
    """A Buffer over the device memory of `arg` (a torch CUDA tensor, or anything with
    __cuda_array_interface__), without a copy; None if `arg` is neither. Its dtype and
    contiguity are checked here, its memory by the driver (kiln_buffer_wrap)."""
    if hasattr(arg, "data_ptr") and hasattr(arg, "is_contiguous") and hasattr(arg, "element_size"):
        dtype = _TORCH_DTYPES.get(str(arg.dtype))
        where = f"parameter '{name}': a torch tensor of {arg.dtype}"
        if not getattr(arg, "is_cuda", False):
            raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH", where + " on the CPU; pass a NumPy array's Buffer "
                            "(rt.upload) or move it with .cuda()")
        if not arg.is_contiguous():
            raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH", where + " that is not contiguous; pass .contiguous()")
        address, nbytes = arg.data_ptr(), arg.numel() * arg.element_size()
    elif hasattr(arg, "__cuda_array_interface__"):
        cai = arg.__cuda_array_interface__
        dtype = _TYPESTRS.get(cai["typestr"])
        where = f"parameter '{name}': a device array of {cai['typestr']}"
        shape = tuple(cai["shape"])
        count = int(np.prod(shape)) if shape else 1
        strides = cai.get("strides")
        if strides is not None:
            itemsize = int(cai["typestr"][2:])
            expected, step = [], itemsize
            for extent in reversed(shape):
                expected.insert(0, step)
                step *= extent
            if tuple(strides) != tuple(expected) and count > 1:
                raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH", where + " that is not C-contiguous")
        address, nbytes = cai["data"][0], count * int(cai["typestr"][2:])
    else:
        return None
    if dtype is None:
        raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH", where + ", a dtype Kiln has no name for")
    if nbytes == 0:
        return runtime.alloc(0, dtype)
    return runtime.wrap(address, nbytes, dtype)


def _pack(slot, arg, name, dtype, pointer, runtime=None, keep=None):
    """Fills the kiln_arg `slot` with `arg` for the parameter (name, dtype, pointer).
    A device array becomes a wrapped Buffer, appended to `keep` for the call."""
    if pointer:
        if not isinstance(arg, Buffer) and runtime is not None:
            wrapped = _device_array(runtime, arg, name)
            if wrapped is not None:
                keep.append(wrapped)
                arg = wrapped
        if not isinstance(arg, Buffer):
            raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH",
                            f"parameter '{name}' takes a Buffer, a torch CUDA tensor or a device array")
        slot.kind, slot.value.buffer.buffer, slot.value.buffer.offset = _ARG_BUFFER, arg._handle, 0
    elif isinstance(arg, (bool, np.bool_)):
        slot.kind, slot.value.b = _ARG_BOOL, int(arg)
    elif dtype in _FLOAT_DTYPES and isinstance(arg, (int, float, np.number)):
        # Rounded to the parameter's type first: the C API takes only values it
        # represents exactly, and a Python float is an f64.
        rounded = {"f32": np.float32, "f16": np.float16}.get(dtype, float)(arg)
        slot.kind, slot.value.f = _ARG_FLOAT, float(rounded)
    elif isinstance(arg, (int, np.integer)):
        slot.kind, slot.value.i = _ARG_INT, int(arg)
    elif isinstance(arg, (float, np.floating)):
        slot.kind, slot.value.f = _ARG_FLOAT, float(arg)  # the C API names the mismatch
    else:
        raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH",
                        f"parameter '{name}' takes a number, got {type(arg).__name__}")


def _params(lib, runtime, handle, count, param):
    """[(name, dtype, is_pointer)] of a kernel's or graph's parameters."""
    out = []
    for i in range(count(handle)):
        name, dtype, pointer = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int()
        runtime._check(param(handle, i, ctypes.byref(name), ctypes.byref(dtype), ctypes.byref(pointer)))
        out.append((name.value.decode(), DTYPES[dtype.value], bool(pointer.value)))
    return out


def _block_pair(block):
    """(BM, BN) as two Python ints."""
    bm, bn = block
    return int(bm), int(bn)


class Buffer:
    """Device memory of a Runtime; freed with free() or when collected (also after the
    Runtime is closed: the C API keeps the device until its last object is gone)."""

    def __init__(self, runtime, handle, nbytes):
        self._rt, self._handle, self.nbytes = runtime, handle, nbytes

    @property
    def address(self):
        """The device address (a CUdeviceptr, or the Level Zero pointer), for interop."""
        return self._rt._lib.kiln_buffer_device_address(self._handle)

    def write(self, array):
        array = np.ascontiguousarray(array)
        self._rt._check(self._rt._lib.kiln_buffer_write(self._handle, 0, array.ctypes.data, array.nbytes))

    def fill(self, byte):
        self._rt._check(self._rt._lib.kiln_buffer_fill(self._handle, byte))

    def download(self, dtype, shape):
        """The buffer's first bytes as a NumPy array of `dtype` and `shape`."""
        out = np.empty(shape, dtype=dtype)
        self._rt._check(self._rt._lib.kiln_buffer_read(self._handle, 0, out.ctypes.data, out.nbytes))
        return out

    def free(self):
        if self._handle:
            self._rt._lib.kiln_buffer_free(self._handle)
        self._handle = None

    def __del__(self):
        self.free()


class BlockMask:
    """A block-sparse mask on the device, for block_mask<BM, BN> parameters: one launch
    argument in place of the mask's five. Freed with free() or when collected."""

    def __init__(self, runtime, handle):
        self._rt, self._handle = runtime, handle
        lib = runtime._lib
        values = [ctypes.c_int64() for _ in range(7)]
        runtime._check(lib.kiln_block_mask_shape(handle, *map(ctypes.byref, values[:4])))
        runtime._check(lib.kiln_block_mask_counts(handle, *map(ctypes.byref, values[4:])))
        rows, cols, bm, bn, full, partial, empty = (v.value for v in values)
        self.shape, self.block = (rows, cols), (bm, bn)
        self.counts = {"full": full, "partial": partial, "empty": empty}  # blocks of each kind
        # Its content as 16 hex digits, the same for the same pattern whatever built it.
        self.digest = lib.kiln_block_mask_digest(handle).decode()

    def free(self):
        if self._handle:
            self._rt._lib.kiln_block_mask_destroy(self._handle)
        self._handle = None

    def __del__(self):
        self.free()

    def __repr__(self):
        return f"BlockMask(shape={self.shape}, block={self.block}, counts={self.counts})"


class Kernel:
    """A loaded kernel: its parameters and launches."""

    def __init__(self, runtime, handle):
        self._rt, self._handle = runtime, handle
        lib = runtime._lib
        self.name = lib.kiln_kernel_name(handle).decode()
        # (name, dtype, is_pointer)
        self.params = _params(lib, runtime, handle, lib.kiln_kernel_num_params, lib.kiln_kernel_param)
        # (name, (BM, BN), index of its first parameter): params lists each as five.
        self.block_masks = []
        for i in range(lib.kiln_kernel_num_block_masks(handle)):
            name, bm, bn, first = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64(), ctypes.c_size_t()
            runtime._check(lib.kiln_kernel_block_mask(handle, i, ctypes.byref(name), ctypes.byref(bm),
                                                      ctypes.byref(bn), ctypes.byref(first)))
            self.block_masks.append((name.value.decode(), (bm.value, bn.value), first.value))

    def const(self, name):
        """The integer `const` parameter `name`, as the kernel was compiled."""
        value = ctypes.c_int64()
        self._rt._check(self._rt._lib.kiln_kernel_const_int(self._handle, name.encode(), ctypes.byref(value)))
        return value.value

    def launch(self, grid, *args, stream=None):
        """Runs `grid` programs ((x,), (x, y) or (x, y, z)) on `args`, in the order of the
        kernel's parameters; a block_mask parameter takes a BlockMask (or its five parts).
        `stream` (CUDA): a CUstream as an integer for this launch alone
        (torch.cuda.current_stream().cuda_stream); None: the runtime's."""
        # Which parameter each argument is for: a BlockMask at a mask's first parameter
        # stands for all five of its parameters.
        starts = {first for _, _, first in self.block_masks}
        targets, index = [], 0
        for arg in args:
            if index >= len(self.params):
                break
            targets.append(index)
            index += _MASK_PARAMS if isinstance(arg, BlockMask) and index in starts else 1
        if index != len(self.params) or len(targets) != len(args):
            expected = len(self.params) - (_MASK_PARAMS - 1) * len(self.block_masks)
            note = " (a block mask is one argument, or its five parts)" if self.block_masks else ""
            raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH",
                            f"kernel '{self.name}' takes {expected} arguments, got {len(args)}{note}")
        packed = (_Arg * max(len(args), 1))()
        keep = []  # device arrays' wrappers, alive until the launch is enqueued
        for slot, arg, target in zip(packed, args, targets):
            name, dtype, pointer = self.params[target]
            if isinstance(arg, BlockMask):
                # The C API checks the mask against the parameter (and refuses it for any
                # other parameter), naming both.
                slot.kind, slot.value.mask = _ARG_BLOCK_MASK, arg._handle
            else:
                _pack(slot, arg, name, dtype, pointer, self._rt, keep)
        dims = tuple(grid) + (1,) * (3 - len(grid))
        if stream is None:
            self._rt._check(self._rt._lib.kiln_launch(self._handle, _Grid(*dims), packed, len(args)))
        else:
            self._rt._check(self._rt._lib.kiln_launch_on_stream(self._handle, _Grid(*dims), packed, len(args),
                                                                stream))

    def __del__(self):
        if self._handle:
            self._rt._lib.kiln_kernel_destroy(self._handle)
        self._handle = None


# kiln_graph_mode, by name.
GRAPH_MODES = {"auto": 0, "persistent": 1, "cuda-graph": 2, "launches": 3}


class Graph:
    """A loaded graph bundle: its parameters, and runs of all its launches with one call.

        graph = rt.load_graph("decode_chain.kgraph")
        graph.launch(w, g, h, y, 4096, 1e-5)               # one persistent kernel on CUDA
        rt.synchronize()
        graph.check()                                       # raises if its watchdog fired
    """

    def __init__(self, runtime, handle):
        self._rt, self._handle = runtime, handle
        lib = runtime._lib
        self.name = lib.kiln_graph_name(handle).decode()
        self.params = _params(lib, runtime, handle, lib.kiln_graph_num_params, lib.kiln_graph_param)
        self.has_persistent = bool(lib.kiln_graph_has_persistent(handle))

    def launch(self, *args, mode="auto", workers=0, wait_timeout_ms=None):
        """Enqueues one run on `args`, in the order of the graph's parameters. `mode` is
        "auto" (one persistent kernel where it can, else launch by launch), "persistent",
        "cuda-graph" or "launches"; `workers` (persistent mode) 0 for as many as the device
        holds at once."""
        if mode not in GRAPH_MODES:
            raise KilnError("KILN_ERROR_INVALID_VALUE", f"mode must be one of {', '.join(GRAPH_MODES)}, got {mode!r}")
        if len(args) != len(self.params):
            raise KilnError("KILN_ERROR_ARGUMENT_MISMATCH",
                            f"graph '{self.name}' takes {len(self.params)} arguments, got {len(args)}")
        lib = self._rt._lib
        self._rt._check(lib.kiln_graph_set_workers(self._handle, int(workers)))
        if wait_timeout_ms is not None:
            self._rt._check(lib.kiln_graph_set_wait_timeout(self._handle, int(wait_timeout_ms * 1e6)))
        packed = (_Arg * max(len(args), 1))()
        keep = []
        for slot, arg, (name, dtype, pointer) in zip(packed, args, self.params):
            _pack(slot, arg, name, dtype, pointer, self._rt, keep)
        # The graph remembers the last call's buffers (a repeated call replays it), so
        # the wrappers of device arrays live until the next call.
        self._wrapped = keep
        self._rt._check(lib.kiln_graph_launch(self._handle, packed, len(args), GRAPH_MODES[mode]))

    def check(self):
        """After Runtime.synchronize(): raises KilnError when the last persistent run
        stopped on its watchdog (naming the task and the launch it waited for)."""
        self._rt._check(self._rt._lib.kiln_graph_check(self._handle))

    def last_run(self):
        """{"mode", "launches", "tasks", "workers"} of the last run."""
        mode, launches = ctypes.c_int32(), ctypes.c_uint32()
        tasks, workers = ctypes.c_uint64(), ctypes.c_uint32()
        self._rt._check(self._rt._lib.kiln_graph_last_run(self._handle, ctypes.byref(mode), ctypes.byref(launches),
                                                          ctypes.byref(tasks), ctypes.byref(workers)))
        names = {v: k for k, v in GRAPH_MODES.items()}
        return {"mode": names[mode.value], "launches": launches.value, "tasks": tasks.value,
                "workers": workers.value}

    def __del__(self):
        if self._handle:
            self._rt._lib.kiln_graph_destroy(self._handle)
        self._handle = None
