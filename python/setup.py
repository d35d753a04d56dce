"""Packs Kiln's shared libraries into the `kiln` package.

`pip install ./python` copies libkiln.so (the JIT and the runtime) and
libkiln_runtime.so from a CMake build of this repository into kiln/lib/, where
kiln/_capi.py looks first. The build is $KILN_BUILD_DIR, else ../build beside this
folder; build the libraries first:

    cmake --build build --target kiln_jit_shared kiln_runtime_shared

KILN_PACKAGE_LIBRARIES=0 installs the Python code alone; it then finds the libraries in
the system's folders (cmake --install puts them in <prefix>/lib) or through
$KILN_LIBRARY.

It also builds kiln._fastlaunch (kiln/_fastlaunch.c), kernel[grid] written in C against
Python's stable ABI (one build for every CPython from 3.9 on; it links nothing). The
extension is optional: without a C compiler or Python's headers (Debian: python3-dev) the
package installs without it and launches through ctypes alone, a microsecond slower.
"""

import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARIES = {"libkiln.so": "jit", "libkiln_runtime.so": "runtime"}


class BuildWithLibraries(build_py):
    def run(self):
        super().run()
        if os.environ.get("KILN_PACKAGE_LIBRARIES", "1") == "0":
            return
        build = os.environ.get("KILN_BUILD_DIR") or os.path.join(HERE, "..", "build")
        target = os.path.join(self.build_lib, "kiln", "lib")
        os.makedirs(target, exist_ok=True)
        missing = []
        for name, folder in LIBRARIES.items():
            source = os.path.join(build, folder, name)
            if os.path.exists(source):
                shutil.copy2(source, os.path.join(target, name))
            else:
                missing.append(source)
        if len(missing) == len(LIBRARIES):
            raise SystemExit("kiln: no library to package: " + ", ".join(missing) + " do not exist. Build them "
                             "(cmake --build build --target kiln_jit_shared kiln_runtime_shared), set "
                             "KILN_BUILD_DIR to the build, or set KILN_PACKAGE_LIBRARIES=0 to install the "
                             "Python code alone")


FAST_LAUNCH = Extension("kiln._fastlaunch", ["kiln/_fastlaunch.c"], py_limited_api=True, optional=True,
                        extra_compile_args=["-O2", "-std=c11"])

setup(cmdclass={"build_py": BuildWithLibraries}, ext_modules=[FAST_LAUNCH])
