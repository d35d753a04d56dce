#!/usr/bin/env python3
"""The kiln package's runtime layer (python/kiln/runtime.py) against the stand-in CUDA driver (FakeCuda.cpp).

The fake runs no kernel but records each launch, so this checks what the bindings hand
the C API: copies both ways, the grid and the bytes of every parameter (buffers, i32,
an f32 rounded from a Python float, a block mask's five parts), and that misuse raises
kiln.Error with the runtime's message instead of crashing.

    python_binding_test.py --lib libkiln_runtime.so --fake-cuda libkiln_fake_cuda.so --dslc dslc
"""

import argparse
import ctypes
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


class DeviceArray:
    """What CuPy, Numba and torch expose: __cuda_array_interface__ (version 3)."""

    def __init__(self, address, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (address, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def check_device_arrays(rt, kernel, x, w, b, y, fake, expect, raises):
    """Device arrays passed by address, no copy: the kernel gets the array's pointer;
    dtype, contiguity and the memory itself are checked."""
    out = ctypes.create_string_buffer(8)
    kernel.launch((3,), DeviceArray(x.address, (3, 4)), w, b, DeviceArray(y.address, (12,)), 4, 1e-5)
    fake.fake_cuda_last_param(0, out, 8)
    expect("a device array is passed by its pointer", struct.unpack("<Q", out.raw)[0] == x.address)
    fake.fake_cuda_last_param(3, out, 8)
    expect("the output too", struct.unpack("<Q", out.raw)[0] == y.address)
    raises("a device array of another dtype", lambda: kernel.launch((3,), DeviceArray(x.address, (12,), "<i4"),
                                                                      w, b, y, 4, 1e-5),
           "KILN_ERROR_ARGUMENT_MISMATCH", "i32")
    raises("a strided device array", lambda: kernel.launch((3,), DeviceArray(x.address, (3, 2), "<f4", (16, 4)),
                                                             w, b, y, 4, 1e-5),
           "KILN_ERROR_ARGUMENT_MISMATCH", "not C-contiguous")
    host = np.zeros(12, np.float32)
    raises("a device array in host memory", lambda: kernel.launch((3,), DeviceArray(host.ctypes.data, (12,)),
                                                                    w, b, y, 4, 1e-5),
           "KILN_ERROR_INVALID_VALUE", "is not CUDA device memory")
    raises("a dtype Kiln cannot name", lambda: kernel.launch((3,), DeviceArray(x.address, (12,), "<c8"),
                                                               w, b, y, 4, 1e-5),
           "KILN_ERROR_ARGUMENT_MISMATCH", "no name for")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--fake-cuda", required=True)
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()
    os.environ["KILN_CUDA_LIBRARY"] = args.fake_cuda
    sys.path.insert(0, os.path.join(args.repo, "python"))
    from kiln import Error as KilnError
    from kiln.runtime import Runtime

    fake = ctypes.CDLL(args.fake_cuda)  # the library the runtime loads: one copy, one state
    fake.fake_cuda_last_param.restype = ctypes.c_size_t
    fake.fake_cuda_last_param.argtypes = [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    failures = []

    def expect(what, ok):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    def raises(what, fn, status, text):
        try:
            fn()
        except KilnError as e:
            expect(f"{what}: {e}", e.status == status and text in str(e))
            return
        expect(f"{what}: no error", False)

    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "layernorm.kbin")
        subprocess.run([args.dslc, os.path.join(args.repo, "stdlib", "layernorm.kiln"), "--kernel", "layernorm",
                        "-D", "BLOCK=256", "--target=sm_90", "--emit=bundle", "-o", bundle], check=True)
        with Runtime(args.lib) as rt:
            expect(f"device '{rt.device_name}', target {rt.target}", rt.target.startswith("sm_"))
            kernel = rt.load(bundle)
            expect("kernel name and parameters",
                   kernel.name == "layernorm" and [p[0] for p in kernel.params] == ["x", "w", "b", "y", "n_cols", "eps"]
                   and kernel.params[0] == ("x", "f32", True) and kernel.params[5] == ("eps", "f32", False))
            expect("const BLOCK as compiled", kernel.const("BLOCK") == 256)

            data = np.arange(12, dtype=np.float32).reshape(3, 4)
            x = rt.upload(data)
            expect("upload then download gives the bytes back", np.array_equal(x.download(np.float32, (3, 4)), data))
            # Memory the caller owns, wrapped by address: the second row of x.
            row = rt.wrap(x.address + 16, 16, "f32")
            expect("a wrapped buffer reads the caller's memory", np.array_equal(row.download(np.float32, (4,)), data[1]))
            row.free()
            expect("freeing it leaves the memory", np.array_equal(x.download(np.float32, (3, 4)), data))
            raises("wrapping host memory", lambda: rt.wrap(data.ctypes.data, 16, "f32"), "KILN_ERROR_INVALID_VALUE",
                   "is not CUDA device memory")
            raises("wrapping past the allocation", lambda: rt.wrap(x.address + 32, 32, "f32"),
                   "KILN_ERROR_INVALID_VALUE", "run past the end of its allocation")
            w, b, y = rt.upload(np.ones(4, np.float32)), rt.upload(np.zeros(4, np.float32)), rt.alloc(48, "f32")
            kernel.launch((3,), x, w, b, y, 4, 1e-5)
            out = ctypes.create_string_buffer(8)
            n = fake.fake_cuda_last_param(4, out, 8)
            expect("n_cols passed as an i32", n == 4 and struct.unpack("<i", out.raw[:4])[0] == 4)
            n = fake.fake_cuda_last_param(5, out, 8)
            expect("eps passed as the f32 nearest 1e-5",
                   n == 4 and struct.unpack("<f", out.raw[:4])[0] == float(np.float32(1e-5)))
            check_device_arrays(rt, kernel, x, w, b, y, fake, expect, raises)
            # The caller's stream takes the launches while it is set.
            fake.fake_cuda_make_stream.restype = ctypes.c_void_p
            fake.fake_cuda_last_stream.restype = ctypes.c_void_p
            theirs = fake.fake_cuda_make_stream()
            rt.set_stream(theirs)
            kernel.launch((3,), x, w, b, y, 4, 1e-5)
            expect("a launch goes on the stream set", fake.fake_cuda_last_stream() == theirs)
            rt.set_stream(None)
            kernel.launch((3,), x, w, b, y, 4, 1e-5)
            expect("and on the runtime's own again", fake.fake_cuda_last_stream() not in (None, theirs))
            kernel.launch((3,), x, w, b, y, 4, 1e-5, stream=theirs)
            expect("one launch on a stream given to it", fake.fake_cuda_last_stream() == theirs)
            kernel.launch((3,), x, w, b, y, 4, 1e-5)
            expect("the next on the runtime's", fake.fake_cuda_last_stream() != theirs)
            fake.fake_cuda_drop_stream(ctypes.c_void_p(theirs))

            raises("too few arguments", lambda: kernel.launch((3,), x, w, b, y, 4), "KILN_ERROR_ARGUMENT_MISMATCH",
                   "takes 6 arguments")
            raises("a number for a pointer", lambda: kernel.launch((3,), 1, w, b, y, 4, 1e-5),
                   "KILN_ERROR_ARGUMENT_MISMATCH", "'x' takes a Buffer")
            raises("a float for an i32", lambda: kernel.launch((3,), x, w, b, y, 4.5, 1e-5),
                   "KILN_ERROR_ARGUMENT_MISMATCH", "")
            raises("an i32 buffer for *f32", lambda: kernel.launch((3,), rt.upload(np.zeros(3, np.int32)), w, b, y,
                                                                   4, 1e-5), "KILN_ERROR_ARGUMENT_MISMATCH", "i32")
            raises("a missing bundle", lambda: rt.load(os.path.join(tmp, "none.kbin")), "KILN_ERROR_IO", "none.kbin")
            with open(os.path.join(tmp, "junk.kbin"), "wb") as f:
                f.write(b"not a bundle")
            raises("a file that is no bundle", lambda: rt.load(os.path.join(tmp, "junk.kbin")),
                   "KILN_ERROR_INVALID_BUNDLE", "")
            raises("an unknown const", lambda: kernel.const("NOPE"), "KILN_ERROR_INVALID_VALUE", "NOPE")
            check_block_masks(rt, args, tmp, fake, expect, raises)
            check_graphs(rt, args, tmp, fake, expect, raises)
    # No driver at all: an error naming why, not a crash.
    os.environ["KILN_CUDA_LIBRARY"] = os.path.join(os.path.dirname(args.fake_cuda), "no-such-libcuda.so")
    os.environ["KILN_ZE_LIBRARY"] = os.path.join(os.path.dirname(args.fake_cuda), "no-such-libze.so")
    raises("no driver", lambda: Runtime(args.lib), "KILN_ERROR_NO_DRIVER", "no-such-libcuda.so")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def check_block_masks(rt, args, tmp, fake, expect, raises):
    """row_sum(x: *f32, out: *f32, mask: block_mask<4, 8>) launched with masks built from
    NumPy arrays, whole and as five parts; the fake's device memory is this process's, so
    the arrays a launch received are read in place."""
    from kiln.runtime import BlockMask

    bundle = os.path.join(tmp, "row_sum.kbin")
    subprocess.run([args.dslc, os.path.join(args.repo, "tests", "programs", "block_sparse.kiln"), "--kernel",
                    "row_sum", "--target=sm_90", "--emit=bundle", "-o", bundle], check=True)
    kernel = rt.load(bundle)
    expect("the mask is listed as five parameters and one block mask",
           [p[0] for p in kernel.params][2:] == ["mask.rows", "mask.cols", "mask.row_start", "mask.blocks",
                                                 "mask.bitmaps"]
           and kernel.block_masks == [("mask", (4, 8), 2)])

    def param(index, size):
        out = ctypes.create_string_buffer(8)
        n = fake.fake_cuda_last_param(index, out, 8)
        return struct.unpack("<i" if size == 4 else "<Q", out.raw[:size])[0] if n == size else None

    def device_words(index, count, fmt):
        return list(struct.unpack(f"<{count}{fmt}", ctypes.string_at(param(index, 8), 4 * count)))

    # 8 x 20 elements in 4 x 8 blocks: block row 0 keeps column block 0 whole and one
    # element of column block 2 (cut at the grid's edge); block row 1 keeps nothing.
    keep = np.zeros((8, 20), dtype=bool)
    keep[0:4, 0:8] = True
    keep[1, 17] = True
    mask = rt.block_mask(keep, block=(4, 8))
    expect(f"mask shape, block and counts: {mask}",
           mask.shape == (8, 20) and mask.block == (4, 8)
           and mask.counts == {"full": 1, "partial": 1, "empty": 4})
    x, out = rt.alloc(8 * 20 * 4, "f32"), rt.alloc(8 * 4, "f32")
    kernel.launch((2,), x, out, mask)
    expect("a mask argument becomes rows and cols", (param(2, 4), param(3, 4)) == (8, 20))
    expect("and row_start, blocks and bitmaps on the device",
           device_words(4, 3, "i") == [0, 2, 2] and device_words(5, 4, "i") == [0, -1, 2, 0]
           and device_words(6, 1, "I") == [1 << (1 * 8 + 1)])

    bsr = rt.block_mask_from_bsr([0, 2, 2], [0, 2], shape=(8, 20), block=(4, 8),
                                 block_data=np.stack([keep[0:4, 0:8], np.pad(keep[0:4, 16:20], ((0, 0), (0, 4)))]))
    kernel.launch((2,), x, out, bsr)
    expect("BSR arrays build the same mask",
           device_words(4, 3, "i") == [0, 2, 2] and device_words(5, 4, "i") == [0, -1, 2, 0]
           and device_words(6, 1, "I") == [1 << (1 * 8 + 1)] and bsr.counts == mask.counts)
    whole = rt.block_mask_from_bsr(np.array([0, 1, 1]), np.array([0]), shape=(8, 20), block=(4, 8))
    expect("BSR without data keeps the listed blocks whole", whole.counts == {"full": 1, "partial": 0, "empty": 5})

    built = rt.block_mask_from_buffers(rt.upload(np.array([0, 2, 2], np.int32)),
                                       rt.upload(np.array([0, -1, 2, 0], np.int32)),
                                       rt.upload(np.array([1 << (1 * 8 + 1)], np.uint32)), (8, 20), (4, 8))
    expect("device arrays make the same mask, digest included",
           built.counts == mask.counts and built.digest == mask.digest == bsr.digest and len(mask.digest) == 16
           and whole.digest != mask.digest)
    raises("device arrays that are not a mask",
           lambda: rt.block_mask_from_buffers(rt.upload(np.array([0, 2, 1], np.int32)),
                                              rt.upload(np.array([0, -1, 2, 0], np.int32)),
                                              rt.upload(np.array([0], np.uint32)), (8, 20), (4, 8)),
           "KILN_ERROR_INVALID_VALUE", "row_start[2] = 1 is less than row_start[1] = 2")

    row_start, blocks, bitmaps = rt.upload(np.array([0, 1, 1], np.int32)), rt.upload(
        np.array([0, -1], np.int32)), rt.upload(np.array([0], np.uint32))
    kernel.launch((2,), x, out, 8, 20, row_start, blocks, bitmaps)
    expect("a mask's five parts one by one still work", (param(2, 4), param(3, 4)) == (8, 20))

    raises("a mask of other block sizes", lambda: kernel.launch((2,), x, out, rt.block_mask(keep, block=(8, 8))),
           "KILN_ERROR_INVALID_VALUE", "kernel 'row_sum' takes mask: block_mask<4, 8>, but the mask has 8 x 8 blocks")
    freed = rt.block_mask(keep, block=(4, 8))
    freed.free()
    raises("a freed mask", lambda: kernel.launch((2,), x, out, freed), "KILN_ERROR_INVALID_VALUE",
           "the block mask is null")
    raises("a mask for a pointer", lambda: kernel.launch((2,), mask, out, mask), "KILN_ERROR_ARGUMENT_MISMATCH",
           "argument 1 ('x: *f32'): the parameter is *f32 and takes a device buffer, got a block mask")
    raises("too few arguments with a mask", lambda: kernel.launch((2,), x, mask), "KILN_ERROR_ARGUMENT_MISMATCH",
           "kernel 'row_sum' takes 3 arguments, got 2 (a block mask is one argument, or its five parts)")
    raises("a mask from an int array", lambda: rt.block_mask(keep.astype(np.int32), block=(4, 8)),
           "KILN_ERROR_INVALID_VALUE", "a block mask needs a 2-D bool array, got int32 of shape [8, 20]")
    raises("a block size the builder refuses", lambda: rt.block_mask(keep, block=(3, 8)), "KILN_ERROR_INVALID_VALUE",
           "block size 3 is not a power of two from 1 to 256")
    raises("BSR offsets that do not cover the grid", lambda: rt.block_mask_from_bsr([0, 1], [0], (8, 20), (4, 8)),
           "KILN_ERROR_INVALID_VALUE", "row_ptr has 2 entries")
    raises("BSR data of the wrong shape",
           lambda: rt.block_mask_from_bsr([0, 1, 1], [0], (8, 20), (4, 8), np.ones((1, 4, 4), bool)),
           "KILN_ERROR_INVALID_VALUE", "block_data must be a bool array of shape [1, 4, 8]")
    expect("BlockMask is exported", isinstance(mask, BlockMask))


def check_graphs(rt, args, tmp, fake, expect, raises):
    """tests/graphs/chain.kiln's graph as a graph bundle, run with one call per mode."""
    bundle = os.path.join(tmp, "chain.kgraph")
    subprocess.run([args.dslc, os.path.join(args.repo, "tests", "graphs", "chain.kiln"), "--kernel", "chain",
                    "--target=sm_90", "--emit=bundle", "-o", bundle], check=True)
    graph = rt.load_graph(bundle)
    expect("graph name and parameters",
           graph.name == "chain" and graph.params[0] == ("x", "f32", True) and graph.params[3] == ("n", "i32", False)
           and graph.has_persistent)
    n = 200
    x, tmp_, out = rt.alloc(4 * n, "f32"), rt.alloc(4 * n, "f32"), rt.alloc(8 * n, "f32")
    fake.fake_cuda_launch_count.restype = ctypes.c_int
    before = fake.fake_cuda_launch_count()
    graph.launch(x, tmp_, out, n, 1)
    rt.synchronize()
    graph.check()
    run = graph.last_run()
    expect(f"the default is one persistent kernel: {run}",
           run["mode"] == "persistent" and run["launches"] == 4 and run["tasks"] == 12 and run["workers"] > 0
           and fake.fake_cuda_launch_count() - before == 1)
    before = fake.fake_cuda_launch_count()
    graph.launch(x, tmp_, out, n, 0, mode="launches")
    expect("launch by launch, the `if` false: three launches",
           graph.last_run()["launches"] == 3 and fake.fake_cuda_launch_count() - before == 3)
    graph.launch(x, tmp_, out, n, 1, mode="persistent", workers=5)
    expect("five workers", graph.last_run()["workers"] == 5)
    raises("a graph's argument count", lambda: graph.launch(x, tmp_, out, n), "KILN_ERROR_ARGUMENT_MISMATCH",
           "graph 'chain' takes 5 arguments, got 4")
    raises("an unknown mode", lambda: graph.launch(x, tmp_, out, n, 1, mode="fast"), "KILN_ERROR_INVALID_VALUE",
           "mode must be one of")
    raises("an empty grid", lambda: graph.launch(x, tmp_, out, 0, 1), "KILN_ERROR_INVALID_VALUE",
           "on grid (0, 1, 1)")
    raises("a kernel bundle as a graph", lambda: rt.load_graph(os.path.join(tmp, "layernorm.kbin")),
           "KILN_ERROR_INVALID_BUNDLE", "it is a kernel bundle")


if __name__ == "__main__":
    sys.exit(main())
