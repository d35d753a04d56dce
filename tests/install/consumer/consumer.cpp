// Uses the installed C and C++ APIs: a runtime on the driver KILN_CUDA_LIBRARY names
// (the stand-in one in tests/install/check.sh), a buffer written and read back, and a
// kernel bundle loaded; prints what it saw.
#include "runtime/Runtime.h"

#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer BUNDLE.kbin\n");
    return 2;
  }
  try {
    kiln::Runtime rt;
    kiln::Buffer b = rt.upload(std::vector<float>{1.5f, 2.5f, 3.5f});
    std::vector<float> back = b.download<float>();
    kiln::Kernel k = rt.load_bundle(argv[1]);
    std::printf("device %s, target %s, read back %g %g %g, kernel %s\n", rt.device_name().c_str(),
                rt.target().c_str(), back[0], back[1], back[2], k.name().c_str());
    return 0;
  } catch (const kiln::RuntimeError &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
