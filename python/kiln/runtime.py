"""Kiln's runtime from Python: a device, its buffers, loaded kernels and graphs.

    import numpy as np
    from kiln.runtime import Runtime

    rt = Runtime()                                     # CUDA if it works, else Level Zero
    kernel = rt.load("softmax.kbin")                   # a bundle from dslc --emit=bundle
    x = rt.upload(np.random.rand(8, 1000).astype(np.float32))
    y = rt.alloc(x.nbytes, "f32")
    kernel.launch((8,), x, y, 1000, 1000)              # arguments in the kernel's order
    print(y.download(np.float32, (8, 1000)))

A pointer parameter takes a Buffer, a torch CUDA tensor or any device array (DLPack,
__cuda_array_interface__) by its address, or a NumPy array, copied in and back; a scalar
parameter a Python number, passed as the parameter's kind (an f32 parameter takes 2 as
2.0, and 1e-5 rounded to the nearest f32, as NumPy rounds it); a block_mask<BM, BN>
parameter a BlockMask:

    mask = rt.block_mask(keep, block=(64, 64))       # keep: a 2-D NumPy bool array
    kernel.launch((n_blocks,), q, k, v, out, mask)

`kernel[grid](*args)` is the same launch, as Triton spells it, and the fast one: it
packs the arguments with one struct call (kiln/_launch.py). Failures raise kiln.Error
with the status name, the diagnostic code and the runtime's message.
"""

import ctypes
import os

import numpy as np

from . import _arguments
from ._capi import ARG_BLOCK_MASK, DTYPES, MASK_PARAMS, Arg, Error, Grid, check, open_library
from ._launch import Launchable

_NUMPY_DTYPES = {np.dtype(np.bool_): "bool", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
                 np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8",
                 np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
                 np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


_BACKENDS = {"auto": 0, "cuda": 1, "level-zero": 2}
_WRAPS_KEPT = 4096  # device arrays' buffers a runtime keeps for the next launch


class _Options(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int32), ("device_index", ctypes.c_int)]


class Runtime:
    """A device (CUDA if it works, else Level Zero) and what lives on it. `library` is
    the path of libkiln.so or libkiln_runtime.so (default: found as kiln/_capi.py says),
    `backend` "auto", "cuda" or "level-zero", `device` the device's index."""

    def __init__(self, library=None, backend="auto", device=0):
        self._handle = None  # for close() when what follows fails
        self._lib = library if isinstance(library, ctypes.CDLL) else open_library(library)
        if backend not in _BACKENDS:
            raise Error("KILN_ERROR_INVALID_VALUE", f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_runtime_create(ctypes.byref(_Options(_BACKENDS[backend], int(device))),
                                                  ctypes.byref(handle)))
        self._handle = handle.value
        self.device = int(device)
        self._wraps = {}  # (address, nbytes, dtype) -> Buffer, oldest first
        self._streams = _arguments.StreamSource(self)
        self._stream_set = None  # what set_stream set last

    def _check(self, status):
        check(self._lib, status)

    def close(self):
        if self._handle:
            self._wraps.clear()
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
        """CUDA: launches that name no stream go on `stream`, a CUstream as an integer
        (torch.cuda.current_stream().cuda_stream); None: the runtime's own stream. Once
        torch is imported, kernel[grid](...) launches pass torch's current stream
        instead (kiln/_arguments.py, StreamSource)."""
        self._check(self._lib.kiln_runtime_set_stream(self._handle, stream or None))
        self._stream_set = stream or None

    def _follow_stream(self, raw):
        """set_stream(raw) unless it is the stream set already: for the calls of the C
        API that take no stream of their own (graphs, JIT launches with a grid function)."""
        if raw != self._stream_set:
            self.set_stream(raw)

    def alloc(self, nbytes, dtype="none"):
        """A device buffer of `nbytes` bytes of `dtype` elements (a name of DTYPES)."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_buffer_alloc(self._handle, nbytes, DTYPES.index(dtype), ctypes.byref(handle)))
        return Buffer(self, handle.value, nbytes)

    def wrap(self, address, nbytes, dtype="none"):
        """A buffer over `nbytes` of device memory at `address` that the caller owns and
        keeps alive (a torch tensor's data_ptr(), say): checked with the driver to lie in
        one allocation of this device; freeing the buffer never frees the memory."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_buffer_wrap(self._handle, address, nbytes, DTYPES.index(dtype),
                                               ctypes.byref(handle)))
        return Buffer(self, handle.value, nbytes)

    def wrapped_handle(self, address, nbytes, dtype):
        """The handle of a buffer over caller-owned memory (as wrap), made once per
        (address, nbytes, dtype) and kept: a buffer handle holds only the address and the
        size, so reusing it for live memory at that place is the same as wrapping anew,
        without asking the driver again. The oldest half is dropped past _WRAPS_KEPT."""
        key = (address, nbytes, dtype)
        buffer = self._wraps.get(key)
        if buffer is None:
            buffer = self.alloc(0, dtype) if nbytes == 0 else self.wrap(address, nbytes, dtype)
            if len(self._wraps) >= _WRAPS_KEPT:
                for old in list(self._wraps)[:_WRAPS_KEPT // 2]:
                    del self._wraps[old]
            self._wraps[key] = buffer
        return buffer._handle

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
        return Kernel(self, handle.value)

    def load_graph(self, path):
        """The graph of a .kgraph bundle (dslc --emit=bundle --kernel GRAPH)."""
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_graph_load_file(self._handle, os.fsencode(path), ctypes.byref(handle)))
        return Graph(self, handle.value)

    def block_mask(self, keep, block):
        """A BlockMask for block_mask<BM, BN> parameters from `keep`, a 2-D NumPy bool
        array of the kept elements ([rows, cols]), cut into `block` = (BM, BN) blocks."""
        keep = np.asarray(keep)
        if keep.dtype != np.bool_ or keep.ndim != 2:
            raise Error("KILN_ERROR_INVALID_VALUE",
                            f"a block mask needs a 2-D bool array, got {keep.dtype} of shape {list(keep.shape)} "
                            "(convert it with a != 0 or a.astype(bool); index it [row, column])")
        keep = np.ascontiguousarray(keep)
        rows, cols = keep.shape
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_block_mask_from_dense(self._handle, keep.ctypes.data, rows, cols,
                                                         *_block_pair(block), ctypes.byref(handle)))
        return BlockMask(self, handle.value)

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
                raise Error("KILN_ERROR_INVALID_VALUE",
                                f"block_data must be a bool array of shape {list(expected)} (one {bm} x {bn} block "
                                f"per column index), got {block_data.dtype} of shape {list(block_data.shape)}")
            block_data = np.ascontiguousarray(block_data)
            data = block_data.ctypes.data
        rows, cols = (int(v) for v in shape)
        handle = ctypes.c_void_p()
        self._check(self._lib.kiln_block_mask_from_bsr(self._handle, row_ptr.ctypes.data, len(row_ptr),
                                                       col_indices.ctypes.data, len(col_indices), data, rows, cols,
                                                       bm, bn, ctypes.byref(handle)))
        return BlockMask(self, handle.value)

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
        return BlockMask(self, handle.value)


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
        self.read_into(out)
        return out

    def read_into(self, array):
        """Copies the buffer's first bytes into the C-contiguous NumPy array `array`."""
        self._rt._check(self._rt._lib.kiln_buffer_read(self._handle, 0, array.ctypes.data, array.nbytes))

    def free(self):
        if self._handle:
            self._rt._lib.kiln_buffer_free(self._handle)
        self._handle = None

    def __del__(self):
        self.free()


def _block_masks(lib, runtime, handle, count, mask):
    """(name, (BM, BN), index of its first parameter) of each block_mask parameter of a
    kernel or a graph, through the C API's count and mask functions."""
    out = []
    for i in range(count(handle)):
        name, bm, bn, first = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64(), ctypes.c_size_t()
        runtime._check(mask(handle, i, ctypes.byref(name), ctypes.byref(bm), ctypes.byref(bn), ctypes.byref(first)))
        out.append((name.value.decode(), (bm.value, bn.value), first.value))
    return out


def _pack(runtime, owner, params, block_masks, args):
    """`args` as the C API's kiln_arg array, with the buffers made for the call (kept
    alive by the caller) and the NumPy arrays to copy back after it. A BlockMask at a
    mask's first parameter stands for all five of its parameters."""
    starts = {first for _, _, first in block_masks}
    targets, index = [], 0
    for arg in args:
        if index >= len(params):
            break
        targets.append(index)
        index += MASK_PARAMS if isinstance(arg, BlockMask) and index in starts else 1
    if index != len(params) or len(targets) != len(args):
        expected = len(params) - (MASK_PARAMS - 1) * len(block_masks)
        note = " (a block mask is one argument, or its five parts)" if block_masks else ""
        raise Error("KILN_ERROR_ARGUMENT_MISMATCH", f"{owner} takes {expected} arguments, got {len(args)}{note}")
    packed = (Arg * max(len(args), 1))()
    keep, copies = [], []
    for slot, arg, target in zip(packed, args, targets):
        name, dtype, pointer = params[target]
        if isinstance(arg, BlockMask):
            # The C API checks the mask against the parameter (and refuses it for any
            # other parameter), naming both.
            slot.kind, slot.value.mask = ARG_BLOCK_MASK, arg._handle
        else:
            _arguments.fill(slot, runtime, arg, name, dtype, pointer, keep, copies)
    return packed, keep, copies


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


class Kernel(Launchable):
    """A loaded kernel: its parameters and launches."""

    def __init__(self, runtime, handle):
        self._rt, self._handle = runtime, handle
        lib = runtime._lib
        self.name = lib.kiln_kernel_name(handle).decode()
        # (name, dtype, is_pointer)
        self.params = _params(lib, runtime, handle, lib.kiln_kernel_num_params, lib.kiln_kernel_param)
        # (name, (BM, BN), index of its first parameter): params lists each as five.
        self.block_masks = _block_masks(lib, runtime, handle, lib.kiln_kernel_num_block_masks,
                                        lib.kiln_kernel_block_mask)
        self._init_launching(self.params, bool(self.block_masks), "kiln_launch", "kiln_launch_on_stream")

    def const(self, name):
        """The integer `const` parameter `name`, as the kernel was compiled."""
        value = ctypes.c_int64()
        self._rt._check(self._rt._lib.kiln_kernel_const_int(self._handle, name.encode(), ctypes.byref(value)))
        return value.value

    def launch(self, grid, *args, stream=None):
        """Runs `grid` programs ((x,), (x, y) or (x, y, z)) on `args`, in the order of the
        kernel's parameters; a block_mask parameter takes a BlockMask (or its five parts).
        `stream` (CUDA): a torch.cuda.Stream or a CUstream as an int, for this launch
        alone; None: torch's current stream once torch is imported, else the runtime's.
        NumPy arrays passed for pointers are copied back after the launch, which then
        waits for the device."""
        packed, keep, copies = _pack(self._rt, f"kernel '{self.name}'", self.params, self.block_masks, args)
        dims = tuple(grid) + (1,) * (3 - len(grid))
        raw = self._streams.current() if stream is None else _arguments.explicit_stream(stream)
        if raw is None:
            self._rt._check(self._rt._lib.kiln_launch(self._handle, Grid(*dims), packed, len(args)))
        else:
            self._rt._check(self._rt._lib.kiln_launch_on_stream(self._handle, Grid(*dims), packed, len(args), raw))
        _arguments.copy_back(self._rt, copies)

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
        # As a kernel's: a block mask is one argument, or its five parts.
        self.block_masks = _block_masks(lib, runtime, handle, lib.kiln_graph_num_block_masks,
                                        lib.kiln_graph_block_mask)
        self.has_persistent = bool(lib.kiln_graph_has_persistent(handle))

    def launch(self, *args, mode="auto", workers=0, wait_timeout_ms=None, stream=None):
        """Enqueues one run on `args`, in the order of the graph's parameters. `mode` is
        "auto" (one persistent kernel where it can, else launch by launch), "persistent",
        "cuda-graph" or "launches"; `workers` (persistent mode) 0 for as many as the device
        holds at once. The run goes on `stream` or torch's current stream, as a kernel's
        launch does, except in "cuda-graph" mode, which replays its own CUDA graph on the
        runtime's stream (kiln_runtime_set_stream in docs/runtime.md)."""
        if mode not in GRAPH_MODES:
            raise Error("KILN_ERROR_INVALID_VALUE", f"mode must be one of {', '.join(GRAPH_MODES)}, got {mode!r}")
        packed, keep, copies = _pack(self._rt, f"graph '{self.name}'", self.params, self.block_masks, args)
        lib = self._rt._lib
        self._rt._check(lib.kiln_graph_set_workers(self._handle, int(workers)))
        if wait_timeout_ms is not None:
            self._rt._check(lib.kiln_graph_set_wait_timeout(self._handle, int(wait_timeout_ms * 1e6)))
        # The graph remembers the last call's buffers (a repeated call replays it), so
        # the buffers made for this call live until the next one.
        self._kept = keep
        raw = None
        if mode != "cuda-graph":
            raw = self._rt._streams.current() if stream is None else _arguments.explicit_stream(stream)
        self._rt._follow_stream(raw)
        self._rt._check(lib.kiln_graph_launch(self._handle, packed, len(args), GRAPH_MODES[mode]))
        _arguments.copy_back(self._rt, copies)

    def __call__(self, *args, mode="auto", workers=0, stream=None):
        """graph(*args): one run, as launch."""
        self.launch(*args, mode=mode, workers=workers, stream=stream)

    def check(self):
        """After Runtime.synchronize(): raises kiln.Error when the last persistent run
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
