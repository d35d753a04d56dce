#!/usr/bin/env python3
"""The `kiln` Python package, installed with pip, against the stand-in CUDA driver.

Installs ./python into a fresh virtual environment (pip install --no-index
--no-build-isolation, the libraries packed from the build), then, with the fake driver
(tests/unit/runtime/FakeCuda.cpp: it runs no kernel but records each launch), checks what
the package hands the C APIs: kiln.compile through the JIT (consts, @autotune configs,
grid functions, compile errors as kiln.Error with the diagnostic's code), device arrays by
address (__cuda_array_interface__ and DLPack; dtype, device, contiguity refused with the
parameter named), NumPy arrays copied in and back, scalars, streams (the one given, the
legacy default stream for 0, a stream asked about once), kiln.load of a kernel and of a
graph bundle, graphs compiled by the JIT (kiln.compile of a graph's name), and
explain_fusion's remarks. Every check runs twice: with kernel[grid]
written in C (kiln/_fastlaunch.c) and with the launchers written in Python
(KILN_COMPILED_LAUNCHER=0), which must accept and refuse the same arguments.

    kiln_package_test.py --build BUILD --repo REPO [--fake-cuda libkiln_fake_cuda.so]
"""

import argparse
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap

CHECKS = textwrap.dedent(r'''
    import ctypes, os, struct, sys
    import numpy as np
    import kiln

    fake = ctypes.CDLL(os.environ["KILN_CUDA_LIBRARY"])
    fake.fake_cuda_last_param.restype = ctypes.c_size_t
    fake.fake_cuda_last_param.argtypes = [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    fake.fake_cuda_last_stream.restype = ctypes.c_void_p
    fake.fake_cuda_make_stream.restype = ctypes.c_void_p
    failures = []

    def expect(what, ok):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    def raises(what, fn, status, text, code=None):
        try:
            fn()
        except kiln.Error as e:
            ok = e.status == status and text in str(e) and (code is None or e.code == code)
            expect(f"{what}: {str(e).splitlines()[0]}", ok)
            return
        expect(f"{what}: no kiln.Error raised", False)

    def param(i, fmt="<Q"):
        out = ctypes.create_string_buffer(8)
        fake.fake_cuda_last_param(i, out, 8)
        return struct.unpack(fmt, out.raw[:struct.calcsize(fmt)])[0]

    def last_grid():
        grid, block = (ctypes.c_uint * 3)(), (ctypes.c_uint * 3)()
        shared, name = ctypes.c_uint(), ctypes.create_string_buffer(256)
        fake.fake_cuda_last_launch(grid, block, ctypes.byref(shared), name, 256)
        return tuple(grid)

    class DeviceArray:  # what CuPy and Numba expose
        def __init__(self, address, shape, typestr="<f4", strides=None):
            self.__cuda_array_interface__ = {"data": (address, False), "shape": shape, "typestr": typestr,
                                             "strides": strides, "version": 3}

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                    ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64),
                    ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

    class DLPackArray:  # a producer of DLPack capsules on a CUDA device
        def __init__(self, address, count, code=2, bits=32, device_type=2):
            self.shape = (ctypes.c_int64 * 1)(count)
            self.tensor = DLTensor(address, device_type, 0, 1, code, bits, 1, self.shape, None, 0, None, None)
            self.device_type = device_type
        def __dlpack_device__(self):
            return (self.device_type, 0)
        def __dlpack__(self, stream=None):
            return new_capsule(ctypes.addressof(self.tensor), b"dltensor", None)

    rt = kiln.runtime()
    expect("the package's own libkiln.so is loaded", rt._lib.path.endswith(os.path.join("kiln", "lib", "libkiln.so")))
    expect("kiln.runtime() is one runtime", kiln.runtime() is rt)

    # ---- kiln.compile ----
    add = kiln.compile(os.path.join(REPO, "examples", "vector_add.kiln"), kernel="vector_add", BLOCK=256)
    expect("compile: the runtime parameters", [p[0] for p in add.params] == ["x", "y", "out", "n"])
    only = kiln.compile(os.path.join(REPO, "examples", "vector_add.kiln"))
    expect("compile: kernel= may be left out when the file has one", only.name == "vector_add")
    source = "kernel twice(x: *f32, n: i32, const BLOCK: i32 = 128) {\n" \
             "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n" \
             "    store(x + offs, load(x + offs, mask = offs < n) * 2.0, mask = offs < n);\n}\n"
    twice = kiln.compile(source)
    expect("compile: source text", twice.name == "twice")
    raises("compile: an error carries its code",
           lambda: kiln.compile("kernel bad(x: *f32) {\n    store(x, undefined_name);\n}\n"),
           "KILN_ERROR_COMPILE", "undefined_name", code="E0200")
    raises("compile: another target is refused", lambda: kiln.compile(source, target="spirv64"),
           "KILN_ERROR_UNSUPPORTED", "dslc --emit=bundle")
    raises("compile: two kernels need kernel=",
           lambda: kiln.compile(source + source.replace("twice", "thrice")), "KILN_ERROR_INVALID_VALUE",
           "defines 2 kernels")
    tuned = kiln.compile(os.path.join(REPO, "examples", "autotune_add.kiln"))
    expect("compile: an @autotune kernel lists its configs", len(tuned.configs) > 1)

    # ---- kernel[grid]: written in C where the extension was built, else in Python ----
    compiled = os.environ.get("KILN_COMPILED_LAUNCHER", "1") != "0"
    expect(f"kernel[grid] is written in {'C' if compiled else 'Python'}",
           kiln._launch.COMPILED == compiled and (type(add[1]).__name__ == "Launcher") == compiled)

    # ---- launches: device arrays, NumPy, scalars ----
    x, y, out = (rt.alloc(4000, "f32") for _ in range(3))
    add[4](DeviceArray(x.address, (1000,)), DeviceArray(y.address, (1000,)), DeviceArray(out.address, (1000,)), 1000)
    expect("kernel[4]: the grid", last_grid() == (4, 1, 1))
    expect("kernel[4]: device arrays by address", (param(0), param(1), param(2)) == (x.address, y.address, out.address))
    expect("kernel[4]: the scalar", param(3, "<i") == 1000)
    add[(2, 1)](x, y, out, 7)
    expect("kernel[(2, 1)] on Buffers", last_grid() == (2, 1, 1) and param(3, "<i") == 7)
    add[kiln.cdiv(1000, 256)](DLPackArray(x.address, 1000), DLPackArray(y.address, 1000), out, 1000)
    expect("DLPack arrays by address", (param(0), param(1)) == (x.address, y.address))
    raises("a DLPack array on the CPU",
           lambda: add[1](DLPackArray(x.address, 1000, device_type=1), y, out, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "not a CUDA device")
    raises("a device array of another dtype",
           lambda: add[1](DeviceArray(x.address, (1000,), "<i4"), y, out, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "parameter 'x' is *f32, got a device array of i32")
    raises("a DLPack array of another dtype",
           lambda: add[1](DLPackArray(x.address, 1000, code=0), y, out, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "parameter 'x' is *f32")
    raises("a strided device array", lambda: add[1](DeviceArray(x.address, (10, 2), "<f4", (16, 4)), y, out, 20),
           "KILN_ERROR_ARGUMENT_MISMATCH", "not C-contiguous")
    host = np.zeros(1000, np.float32)
    raises("host memory as a device array", lambda: add[1](DeviceArray(host.ctypes.data, (1000,)), y, out, 1000),
           "KILN_ERROR_INVALID_VALUE", "is not CUDA device memory")
    raises("a string for a pointer", lambda: add[1]("x", y, out, 1000), "KILN_ERROR_ARGUMENT_MISMATCH",
           "parameter 'x' takes a Buffer")
    raises("too few arguments", lambda: add[1](x, y, out), "KILN_ERROR_ARGUMENT_MISMATCH", "takes 4 arguments, got 3")
    raises("a float for an i32", lambda: add[1](x, y, out, 2.5), "KILN_ERROR_ARGUMENT_MISMATCH", "'n: i32'")
    a = np.arange(1000, dtype=np.float32)
    b = np.full(1000, 2.0, np.float32)
    c = np.full(1000, 7.0, np.float32)
    add[4](a, b, c, 1000)
    expect("NumPy arrays: copied in and back (the stand-in runs nothing, so out keeps its bytes)",
           np.array_equal(c, np.full(1000, 7.0, np.float32)) and np.array_equal(a, np.arange(1000, dtype=np.float32)))
    expect("NumPy arrays: passed as device buffers", param(0) not in (0, a.ctypes.data))
    raises("a NumPy array of another dtype", lambda: add[4](a.astype(np.float64), b, c, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "parameter 'x' is *f32, got a NumPy array of float64")
    add[4](x, y, out, np.int32(5))
    expect("a NumPy scalar", param(3, "<i") == 5)
    raises("an int out of i32's range", lambda: add[1](x, y, out, 2 ** 40), "KILN_ERROR_ARGUMENT_MISMATCH",
           "'n: i32'")
    raises("an int out of i64's range", lambda: add[1](x, y, out, 2 ** 70), "KILN_ERROR_ARGUMENT_MISMATCH",
           "'n: i32'")
    try:
        add[1](x, y, out, 1, strem=0)
        expect("an unknown keyword is refused", False)
    except TypeError as e:
        expect("an unknown keyword is refused", "strem" in str(e))
    mixed = kiln.compile("kernel mixed(x: *f32, s: f32, d: f64, flip: bool, n: i64) {\n"
                         "    if flip { store(x, s + d.to(f32) + n.to(f32)); }\n}\n")
    mixed[1](x, 0.1, 0.1, True, -3)
    expect("scalars: f32 rounded, f64, bool, i64",
           (param(1, "<f"), param(2, "<d"), param(3, "<B"), param(4, "<q")) == (struct.unpack("<f", struct.pack(
               "<f", 0.1))[0], 0.1, 1, -3))
    mixed[1](x, 3, 1e300, False, 2 ** 40)
    expect("scalars: an int for a float, no flip, a large i64",
           (param(1, "<f"), param(2, "<d"), param(3, "<B"), param(4, "<q")) == (3.0, 1e300, 0, 2 ** 40))
    raises("an f32 that overflows", lambda: mixed[1](x, 1e300, 0.0, True, 0), "KILN_ERROR_ARGUMENT_MISMATCH",
           "'s: f32'")
    import gc, tracemalloc, weakref

    def keeps_no_memory(what, launch):
        """20000 launches after 1000 to warm up: what Python allocates stays allocated
        only if a launch leaks (a reference kept, a tuple never freed)."""
        for _ in range(1000):
            launch()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20000):
            launch()
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        expect(f"20000 launches {what} keep no memory (grew {grown} bytes)", grown < 4096)
    keeps_no_memory("on Buffers", lambda: add[4](x, y, out, 1000))
    dropped = kiln.load(os.path.join(WORK, "vector_add.kbin"))
    dropped[2](x, y, out, 1000)
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    expect("a kernel and its launchers are freed once dropped", gone() is None)

    # ---- grid functions ----
    add[lambda meta: (kiln.cdiv(1000, meta["BLOCK"]),)](x, y, out, 1000)
    expect("a grid function sees the config's BLOCK", last_grid() == (4, 1, 1))
    def bad_grid(meta):
        raise ValueError("no grid today")
    try:
        add[bad_grid](x, y, out, 1000)
        expect("a grid function's exception reaches the caller", False)
    except ValueError as e:
        expect("a grid function's exception reaches the caller", "no grid today" in str(e))

    # ---- streams ----
    s = fake.fake_cuda_make_stream()
    add[1](x, y, out, 1, stream=s)
    expect("stream=: the launch goes on it", fake.fake_cuda_last_stream() == s)
    add[1](x, y, out, 1, stream=0)
    expect("stream=0: the legacy default stream", fake.fake_cuda_last_stream() == 1)
    queries = fake.fake_cuda_stream_queries()
    for _ in range(3):
        add[1](x, y, out, 1, stream=s)
    expect("a stream is asked about once", fake.fake_cuda_stream_queries() - queries == 1)
    add.launch((2,), a, b, c, 1000, stream=s)
    expect("the general path (NumPy arrays) on the stream given", fake.fake_cuda_last_stream() == s)
    raises("a stream that is not one", lambda: add[1](x, y, out, 1, stream=12345),
           "KILN_ERROR_INVALID_VALUE", "kiln_runtime_set_stream")
    raises("a stream of the wrong type", lambda: add[1](x, y, out, 1, stream="s"), "KILN_ERROR_INVALID_VALUE",
           "stream= takes")

    # ---- bundles ----
    kernel = kiln.load(os.path.join(WORK, "vector_add.kbin"))
    s2 = fake.fake_cuda_make_stream()
    kernel[3](DeviceArray(x.address, (1000,)), y, out, 999, stream=s2)
    expect("kiln.load: a kernel bundle, launched on a stream",
           last_grid() == (3, 1, 1) and param(0) == x.address and fake.fake_cuda_last_stream() == s2)
    graph = kiln.load(os.path.join(WORK, "chain.kgraph"))
    expect("kiln.load: a graph bundle", isinstance(graph, kiln.Graph) and graph.name == "chain")
    s3 = fake.fake_cuda_make_stream()
    tmp = rt.alloc(4000, "f32")
    graph(x, tmp, out, 1000, 1, stream=s3)
    expect("a graph runs on the stream given", fake.fake_cuda_last_stream() == s3)
    graph(x, tmp, out, 1000, 1, mode="cuda-graph")
    expect("a graph's cuda-graph mode runs on the runtime's own stream", graph.last_run()["mode"] == "cuda-graph")
    # ---- graphs through the JIT ----
    chain_path = os.path.join(REPO, "tests", "graphs", "chain.kiln")
    jgraph = kiln.compile(chain_path, kernel="chain")
    expect("kiln.compile of a graph's name: a Graph", isinstance(jgraph, kiln.Graph) and jgraph.name == "chain"
           and [p[0] for p in jgraph.params] == ["x", "tmp", "out", "n", "twice"] and jgraph.has_persistent)
    jgraph(x, tmp, out, 1000, 1, mode="launches")
    expect("a JIT graph runs launch by launch", jgraph.last_run()["launches"] == 4)
    jgraph(x, tmp, out, 1000, 0)
    expect("a JIT graph runs as one persistent kernel", jgraph.last_run()["mode"] == "persistent"
           and last_grid()[0] == jgraph.last_run()["workers"])
    only = kiln.compile(chain_path)
    expect("kiln.compile without kernel=: a file's one graph", isinstance(only, kiln.Graph) and only.name == "chain")
    text = open(chain_path).read()
    expect("kiln.compile of source text naming a graph", kiln.compile(text, kernel="chain").name == "chain")
    imported = f'import "{chain_path}";\n'
    expect("a graph defined in an imported file", isinstance(kiln.compile(imported, kernel="chain"), kiln.Graph))
    expect("Jit.compile_graph", kiln.jit().compile_graph(chain_path, "chain").name == "chain")
    raises("Jit.compile_graph of a kernel", lambda: kiln.jit().compile_graph(chain_path, "scale"),
           "KILN_ERROR_COMPILE", "'scale' is a kernel, not a graph", code="E0109")
    raises("a graph with num_warps", lambda: kiln.compile(chain_path, kernel="chain", num_warps=8),
           "KILN_ERROR_INVALID_VALUE", "a graph takes none")
    raises("a graph's source error", lambda: kiln.compile(text.replace("out + i * n", "outt + i * n"),
                                                          kernel="chain"),
           "KILN_ERROR_COMPILE", "undefined name 'outt'", code="E0200")
    raises("two graphs and no kernel=", lambda: kiln.compile(text + text.replace("graph chain", "graph other")),
           "KILN_ERROR_INVALID_VALUE", "defines 2 graphs")
    kgraphs = [os.path.join(d, f) for d, _, files in os.walk(kiln.jit().cache_dir) for f in files
               if f.endswith(".kgraph")]
    # One entry each: from the file, from its text (named "<string>"), through an import.
    chains = [f for f in kgraphs if b"graph chain\n" in open(f, "rb").read()]
    expect("a JIT graph is kept in the disk cache", len(chains) == 3)
    # A graph that takes a block mask: one argument, passed on to the kernel that takes it.
    enc = kiln.compile(os.path.join(REPO, "stdlib", "encoder_layer.kiln"), kernel="encoder_layer", H=2, NP=128)
    expect("a graph's block mask", enc.block_masks == [("mask", (64, 64), 19)])
    sizes = {"x": 128 * 128, "w_qkv": 128 * 384, "b_qkv": 384, "key_bias": 128, "w_o": 128 * 128, "b_o": 128,
             "g1": 128, "be1": 128, "w_1": 128 * 256, "b_1": 256, "w_2": 256 * 128, "b_2": 128, "g2": 128,
             "be2": 128, "y": 128 * 128, "qkv": 128 * 384, "a": 128 * 128, "h": 128 * 128, "f": 128 * 256}
    bufs = [rt.alloc(n, "f32" if name == "key_bias" else "bf16") for name, n in sizes.items()]
    keep = np.ones((128, 128), dtype=bool)
    keep[:64, 64:] = False
    mask = rt.block_mask(keep, block=(64, 64))
    enc(*bufs, mask, 128, 256, 0.125, 1e-5, mode="launches")
    expect("a graph with a block mask runs launch by launch", enc.last_run()["launches"] == 5)
    enc(*bufs, mask, 128, 256, 0.125, 1e-5)
    expect("a graph with a block mask runs as one persistent kernel", enc.last_run()["mode"] == "persistent")
    raises("a graph's mask of other block sizes", lambda: enc(*bufs, rt.block_mask(keep, block=(32, 32)), 128, 256,
                                                                0.125, 1e-5),
           "KILN_ERROR_INVALID_VALUE", "takes mask: block_mask<64, 64>, but the mask has 32 x 32 blocks")
    raises("a graph's mask of other extents", lambda: enc(*bufs, rt.block_mask(keep[:64], block=(64, 64)), 128, 256,
                                                            0.125, 1e-5),
           "KILN_ERROR_INVALID_VALUE", "block mask 'mask' has 64 rows, but the graph declares T = 128 rows")
    raises("a graph's mask left out", lambda: enc(*bufs, 128, 256, 0.125, 1e-5), "KILN_ERROR_ARGUMENT_MISMATCH",
           "graph 'encoder_layer' takes 24 arguments, got 23 (a block mask is one argument, or its five parts)")

    raises("kiln.load: a missing file", lambda: kiln.load(os.path.join(WORK, "nothing.kbin")), "KILN_ERROR_IO",
           "nothing.kbin")

    # ---- torch, as the package sees it: a stand-in module (no torch on this machine) ----
    import types
    torch = types.ModuleType("torch")

    class dtype:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return "torch." + self.name
    for name in ("float32", "float16", "int32"):
        setattr(torch, name, dtype(name))

    class Tensor:
        def __init__(self, address, numel, dtype=torch.float32, contiguous=True, device=0):
            self.address, self.count, self.dtype = address, numel, dtype
            self.contiguous, self.device_index = contiguous, device
            self.is_cuda = device >= 0

        def is_contiguous(self):
            return self.contiguous

        def data_ptr(self):
            return self.address

        @property
        def nbytes(self):
            return self.count * (2 if self.dtype is torch.float16 else 4)

        def get_device(self):
            return self.device_index
    torch.Tensor = Tensor
    torch.cuda = types.SimpleNamespace(is_available=lambda: True)
    current = [0]
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: current[0])
    sys.modules["torch"] = torch

    fresh = kiln.load(os.path.join(WORK, "vector_add.kbin"))  # its launchers made with torch imported
    tx, ty, tout = Tensor(x.address, 1000), Tensor(y.address, 1000), Tensor(out.address, 1000)
    fresh[4](tx, ty, tout, 1000)
    expect("torch tensors by address", (param(0), param(1), param(2)) == (x.address, y.address, out.address))
    expect("torch's stream 0 is the legacy default stream", fake.fake_cuda_last_stream() == 1)
    side = fake.fake_cuda_make_stream()
    current[0] = side
    fresh[4](tx, ty, tout, 1000)
    expect("a tensor seen before, on torch's current stream",
           param(0) == x.address and fake.fake_cuda_last_stream() == side)
    fresh[4](Tensor(y.address, 1000), tx, tout, 1000)
    expect("another tensor at another address", (param(0), param(1)) == (y.address, x.address))
    raises("a tensor seen before, now a strided view of the same bytes",
           lambda: fresh[4](Tensor(x.address, 1000, contiguous=False), ty, tout, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "parameter 'x': a torch tensor of torch.float32 that is not contiguous")
    raises("a tensor of another dtype", lambda: fresh[4](Tensor(x.address, 1000, torch.float16), ty, tout, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "parameter 'x' is *f32, got a device array of f16")
    # (Host and device memory never share addresses, so a CPU tensor is never a wrap seen before.)
    raises("a CPU tensor", lambda: fresh[4](Tensor(host.ctypes.data, 1000, device=-1), ty, tout, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "on the CPU")
    raises("a tensor on another device", lambda: fresh[4](Tensor(x.address + 64, 900, device=1), ty, tout, 1000),
           "KILN_ERROR_ARGUMENT_MISMATCH", "on device 1, but the runtime is on device 0")
    keeps_no_memory("on tensors seen before", lambda: fresh[4](tx, ty, tout, 1000))
    add[4](tx, ty, tout, 1000)
    expect("a JIT kernel on torch's current stream", fake.fake_cuda_last_stream() == side and param(0) == x.address)
    del sys.modules["torch"]

    # ---- explain_fusion ----
    text = kiln.explain_fusion(os.path.join(REPO, "stdlib", "softmax.kiln"), kernel="softmax")
    expect("explain_fusion: the compiler's remarks", "fused the reduction loops" in text and "E1000" in text)
    sys.exit(1 if failures else 0)
''')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory() as work:
        venv = os.path.join(work, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
        python = os.path.join(venv, "bin", "python")
        env = dict(os.environ, KILN_BUILD_DIR=build)
        for name in ("KILN_LIBRARY", "KILN_RUNTIME_LIBRARY"):
            env.pop(name, None)
        # A copy of the package's folder, without what an earlier build left in it: the
        # build writes into the folder it installs, and would reuse its own stale output.
        source = os.path.join(work, "python")
        shutil.copytree(os.path.join(args.repo, "python"), source,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so", "lib"))
        install = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--quiet",
                                  source], env=env, capture_output=True, text=True)
        if install.returncode != 0:
            print(install.stdout + install.stderr)
            print("FAIL pip install ./python")
            return 1
        print("PASS pip install --no-index --no-build-isolation ./python")
        dslc = os.path.join(build, "tools", "dslc")
        subprocess.run([dslc, os.path.join(args.repo, "examples", "vector_add.kiln"), "--emit=bundle", "-o",
                        os.path.join(work, "vector_add.kbin")], check=True)
        subprocess.run([dslc, os.path.join(args.repo, "tests", "graphs", "chain.kiln"), "--kernel", "chain",
                        "--emit=bundle", "-o", os.path.join(work, "chain.kgraph")], check=True)
        env.update(KILN_CUDA_LIBRARY=os.path.join(build, "tests", "unit", "runtime", "libkiln_fake_cuda.so"),
                   KILN_CACHE_DIR=os.path.join(work, "cache"), KILN_DSLC=dslc)
        # Run from the work folder so that the installed package, not ./python, is imported.
        script = f"REPO = {args.repo!r}\nWORK = {work!r}\n" + CHECKS
        status = 0
        for compiled in ("1", "0"):  # kernel[grid] written in C, then in Python
            print(f"-- KILN_COMPILED_LAUNCHER={compiled}", flush=True)
            env["KILN_COMPILED_LAUNCHER"] = compiled
            status |= subprocess.run([python, "-c", script], env=env, cwd=work).returncode
        return status


if __name__ == "__main__":
    sys.exit(main())
