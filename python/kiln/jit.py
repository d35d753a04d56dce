"""Kiln source compiled at run time (jit/kiln_jit.h) from Python.

    k = kiln.compile("softmax.kiln", kernel="softmax", BLOCK=1024)
    k[rows](x, y, cols)                                      # torch tensors, NumPy arrays, Buffers
    k[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, n)  # a grid per @autotune config

A graph (`graph decode(...) { launch ... }`) compiles the same way into a Graph, whose
one call runs all its launches (one persistent kernel on CUDA):

    step = kiln.compile("decode.kiln", kernel="decode_chain", LAYERS=8)
    step(w, g, h, y, 4096, 1e-5)

The JIT keeps compiled kernels and graphs and @autotune choices in its disk cache (the same one C++
programs use, $KILN_CACHE_DIR, else ~/.cache/kiln), so a second run of a program compiles
nothing; an @autotune kernel times its configs on its first launch per key value.
"""

import ctypes
import os
import re

from . import _arguments
from ._capi import DTYPES, Arg, CompileOptions, Define, Error, GRID_FN, Grid, JitOptions, check
from ._launch import Launchable, grid_dims
from .runtime import Graph

_KERNEL = re.compile(r"^\s*kernel\s+([A-Za-z_]\w*)", re.MULTILINE)
_GRAPH = re.compile(r"^\s*graph\s+([A-Za-z_]\w*)", re.MULTILINE)


def _define_value(value):
    """A const's value as dslc's -D takes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    raise Error("KILN_ERROR_INVALID_VALUE", f"a const takes an int, a float or a bool, got {type(value).__name__}")


def source_and_name(path_or_source):
    """(path, text): a path when `path_or_source` names a file, else the text itself."""
    text = str(path_or_source)
    if "\n" not in text and (os.path.exists(text) or text.endswith(".kiln")):
        if not os.path.exists(text):
            raise Error("KILN_ERROR_IO", f"{text}: no such file")
        with open(text, encoding="utf-8") as f:
            return text, f.read()
    return None, text


def only_entry(text, what):
    """The entry point compile() takes when called without kernel=: the one graph of
    `text` (a graph file's kernels are its parts), else its one kernel."""
    graphs = _GRAPH.findall(text)
    if len(graphs) > 1:
        raise Error("KILN_ERROR_INVALID_VALUE", f"{what} defines {len(graphs)} graphs ({', '.join(graphs)}); "
                                                "name the one to compile with kernel=")
    return graphs[0] if graphs else only_kernel(text, what)


def only_kernel(text, what):
    """The one kernel of `text`, for compile() called without kernel=."""
    names = _KERNEL.findall(text)
    if len(names) != 1:
        listed = ", ".join(names) if names else "none"
        raise Error("KILN_ERROR_INVALID_VALUE", f"{what} defines {len(names)} kernels ({listed}); "
                                                "name the one to compile with kernel=")
    return names[0]


class Jit:
    """A JIT for one Runtime's device (kiln_jit). `cache_dir` None: the environment's;
    "": no disk cache. `checked`: checked mode for everything it compiles."""

    def __init__(self, runtime, cache_dir=None, checked=False, specialize=True):
        lib = runtime._lib
        if not lib.has_jit:
            raise Error("KILN_ERROR_UNSUPPORTED", f"{lib.path} is the runtime alone; kiln.compile needs libkiln.so "
                                                  "(the JIT): set KILN_LIBRARY to it, or load bundles with kiln.load")
        self._rt, self._lib, self._handle = runtime, lib, None
        options = JitOptions()
        lib.kiln_jit_options_init(ctypes.byref(options))
        if cache_dir is not None:
            options.cache_dir = os.fsencode(cache_dir)
        options.checked = int(bool(checked))
        options.specialize = int(bool(specialize))
        handle = ctypes.c_void_p()
        check(lib, lib.kiln_jit_create(runtime._handle, ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle.value

    @property
    def cache_dir(self):
        return self._lib.kiln_jit_cache_dir(self._handle).decode()

    def compile(self, path_or_source, kernel=None, num_warps=0, include_dirs=(), **consts):
        """A JitKernel of `kernel` in the file or source text, its `const` parameters set
        from `consts` (BLOCK=1024), or a Graph when `kernel` names a graph (as
        compile_graph). Source errors raise Error with status KILN_ERROR_COMPILE, the
        diagnostic's code and the located diagnostics."""
        path, text = source_and_name(path_or_source)
        name = kernel or only_entry(text, path or "the source")
        if name in _GRAPH.findall(text):
            return self._compile_graph(path, text, name, num_warps, include_dirs, consts)
        try:
            return self._compile("kiln_jit_compile", path, text, name, num_warps, include_dirs, consts,
                                 lambda handle: JitKernel(self, handle))
        except Error as e:
            # A graph defined in an imported file: the JIT says so (E0109) and names it.
            if e.code != "E0109" or f"'{name}' is a graph, not a kernel" not in e.message:
                raise
        return self._compile_graph(path, text, name, num_warps, include_dirs, consts)

    def compile_graph(self, path_or_source, graph, include_dirs=(), **consts):
        """A Graph of `graph` in the file or source text, with every kernel it launches
        (kiln_jit_compile_graph_file): compiled whole by this call, cached on disk, and
        run with one call, graph(*args, mode="auto"); `consts` set the graph's `const`
        parameters."""
        path, text = source_and_name(path_or_source)
        return self._compile_graph(path, text, graph, 0, include_dirs, consts)

    def _compile_graph(self, path, text, name, num_warps, include_dirs, consts):
        return self._compile("kiln_jit_compile_graph", path, text, name, num_warps, include_dirs, consts,
                             lambda handle: Graph(self._rt, handle))

    def _compile(self, entry, path, text, name, num_warps, include_dirs, consts, wrap):
        """Calls `entry`_file (a path) or `entry`_string (source text) and wraps the handle."""
        defines = (Define * max(len(consts), 1))(*[Define(k.encode(), _define_value(v).encode())
                                                   for k, v in consts.items()])
        dirs = (ctypes.c_char_p * max(len(include_dirs), 1))(*[os.fsencode(d) for d in include_dirs])
        options = CompileOptions(defines, len(consts), dirs, len(include_dirs), int(num_warps), 0, 0)
        handle = ctypes.c_void_p()
        if path is not None:
            status = getattr(self._lib, entry + "_file")(self._handle, os.fsencode(path), name.encode(),
                                                         ctypes.byref(options), ctypes.byref(handle))
        else:
            status = getattr(self._lib, entry + "_string")(self._handle, text.encode(), b"<string>", name.encode(),
                                                           ctypes.byref(options), ctypes.byref(handle))
        check(self._lib, status)
        return wrap(handle.value)

    def __del__(self):
        if self._handle:
            self._lib.kiln_jit_destroy(self._handle)
            self._handle = None


class Meta:
    """What a grid function sees of the config that runs: meta["BLOCK"] is its integer
    const BLOCK (a Triton grid's META)."""

    def __init__(self, lib, config):
        self._lib, self._config = lib, config

    def __getitem__(self, name):
        value = ctypes.c_int64()
        check(self._lib, self._lib.kiln_kernel_const_int(self._config, name.encode(), ctypes.byref(value)))
        return value.value


class _GridFunction:
    """A Python grid function as a kiln_jit_grid_fn; an exception it raises is kept and
    raised again after the launch."""

    def __init__(self, lib, fn):
        self.error = None

        def call(_user, config, out):
            try:
                grid = fn(Meta(lib, config))
                grid = (grid,) if isinstance(grid, int) else tuple(grid)
                dims = [int(g) for g in grid] + [1] * (3 - len(grid))
                out[0].x, out[0].y, out[0].z = dims
                return 0
            except Exception as e:  # noqa: BLE001 - handed back to the caller below
                self.error = e
                return 1  # KILN_ERROR_INVALID_VALUE: nothing more runs

        self.c = GRID_FN(call)


class JitKernel(Launchable):
    """A compiled kernel of a Jit: its parameters, its @autotune configs, its launches."""

    def __init__(self, jit, handle):
        self._jit, self._rt, self._handle = jit, jit._rt, handle
        lib = self._lib = jit._lib
        self.name = lib.kiln_jit_kernel_name(handle).decode()
        self.params = []
        for i in range(lib.kiln_jit_kernel_num_params(handle)):
            name, dtype, pointer = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int()
            check(lib, lib.kiln_jit_kernel_param(handle, i, ctypes.byref(name), ctypes.byref(dtype),
                                                 ctypes.byref(pointer)))
            self.params.append((name.value.decode(), DTYPES[dtype.value], bool(pointer.value)))
        self.configs = [lib.kiln_jit_kernel_config(handle, i).decode()
                        for i in range(lib.kiln_jit_kernel_num_configs(handle))]
        self._init_launching(self.params, False, "kiln_jit_launch", "kiln_jit_launch_on_stream")

    def __getitem__(self, grid):
        """kernel[grid](*args, stream=None): `grid` an int, a tuple, or a function of the
        config that runs (meta["BLOCK"]) returning either."""
        if callable(grid):
            return lambda *args, stream=None: self.launch(grid, *args, stream=stream)
        return super().__getitem__(grid)

    def launch(self, grid, *args, stream=None):
        """Launches on `args` (as Kernel.launch takes them); `grid` as in kernel[grid]."""
        if len(args) != len(self.params):
            raise Error("KILN_ERROR_ARGUMENT_MISMATCH",
                        f"kernel '{self.name}' takes {len(self.params)} arguments, got {len(args)}")
        packed = (Arg * max(len(args), 1))()
        keep, copies = [], []
        for slot, arg, (name, dtype, pointer) in zip(packed, args, self.params):
            _arguments.fill(slot, self._rt, arg, name, dtype, pointer, keep, copies)
        raw = self._streams.current() if stream is None else _arguments.explicit_stream(stream)
        if callable(grid):
            # The C API has no stream with a grid function: the runtime's stream is set
            # for the launch, when it is not the one already.
            self._rt._follow_stream(raw)
            fn = _GridFunction(self._lib, grid)
            status = self._lib.kiln_jit_launch_with_grid_fn(self._handle, fn.c, None, packed, len(args))
            if fn.error is not None:
                raise fn.error
        else:
            dims = Grid(*grid_dims(grid))
            if raw is None:
                status = self._lib.kiln_jit_launch(self._handle, dims, packed, len(args))
            else:
                status = self._lib.kiln_jit_launch_on_stream(self._handle, dims, packed, len(args), raw)
        check(self._lib, status)
        _arguments.copy_back(self._rt, copies)

    def __del__(self):
        if self._handle:
            self._lib.kiln_jit_kernel_destroy(self._handle)
            self._handle = None
