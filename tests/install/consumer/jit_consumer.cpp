// Uses the installed JIT (Kiln::jit, libkiln.so): compiles a kernel from source text for
// the device of a runtime on the driver KILN_CUDA_LIBRARY names (the stand-in one in
// tests/install/check.sh), launches it on a buffer, and prints what it saw.
#include "jit/Jit.h"

#include <cstdio>

static const char *kSource = R"(
kernel scale(x: *f32, n: i32, const BLOCK: i32 = 256) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, mask = offs < n) * 2.0, mask = offs < n);
}
)";

int main() {
  try {
    kiln::Runtime rt;
    kiln::Jit jit(rt, kiln::Jit::Options{.cache_dir = ""});
    kiln::JitKernel k = jit.compile_string(kSource, "scale");
    kiln::Buffer x = rt.alloc<float>(1000);
    k.launch({4, 1, 1}, x, 1000);
    rt.synchronize();
    std::printf("jit kernel %s, %zu parameters, launched\n", k.name().c_str(), k.params().size());
    return 0;
  } catch (const kiln::RuntimeError &e) {
    std::fprintf(stderr, "jit_consumer: %s\n", e.what());
    return 1;
  }
}
