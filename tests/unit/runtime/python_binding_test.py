#!/usr/bin/env python3
"""runtime/python/kiln_runtime.py against the stand-in CUDA driver (FakeCuda.cpp).

The fake runs no kernel but records each launch, so this checks what the bindings hand
the C API: copies both ways, the grid and the bytes of every parameter (buffers, i32,
an f32 rounded from a Python float), and that misuse raises KilnError with the runtime's
message instead of crashing.

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--fake-cuda", required=True)
    parser.add_argument("--dslc", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()
    os.environ["KILN_CUDA_LIBRARY"] = args.fake_cuda
    sys.path.insert(0, os.path.join(args.repo, "runtime", "python"))
    from kiln_runtime import KilnError, Runtime

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
            w, b, y = rt.upload(np.ones(4, np.float32)), rt.upload(np.zeros(4, np.float32)), rt.alloc(48, "f32")
            kernel.launch((3,), x, w, b, y, 4, 1e-5)
            out = ctypes.create_string_buffer(8)
            n = fake.fake_cuda_last_param(4, out, 8)
            expect("n_cols passed as an i32", n == 4 and struct.unpack("<i", out.raw[:4])[0] == 4)
            n = fake.fake_cuda_last_param(5, out, 8)
            expect("eps passed as the f32 nearest 1e-5",
                   n == 4 and struct.unpack("<f", out.raw[:4])[0] == float(np.float32(1e-5)))

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
    # No driver at all: an error naming why, not a crash.
    os.environ["KILN_CUDA_LIBRARY"] = os.path.join(os.path.dirname(args.fake_cuda), "no-such-libcuda.so")
    os.environ["KILN_ZE_LIBRARY"] = os.path.join(os.path.dirname(args.fake_cuda), "no-such-libze.so")
    raises("no driver", lambda: Runtime(args.lib), "KILN_ERROR_NO_DRIVER", "no-such-libcuda.so")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
