//===- gpu_smoke.cpp - End-to-end check of the runtime on an NVIDIA GPU ---===//
//
// Runs hand-written PTX kernels through the whole runtime — bundle file, load, JIT,
// argument checking, launch, copies, events — and compares the results with the host.
// The unit tests cover the same code against a fake driver; this is the check that the
// real driver agrees. Run by runtime/tests/gpu_smoke.sh; exits non-zero on any failure
// and 2 when there is no CUDA GPU at all.
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"
#include "runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

using kiln::rt::Bundle;
using kiln::rt::BundleParam;
using kiln::rt::CodeSection;
using kiln::rt::SectionKind;
using kiln::rt::Target;

// out[i] = x[i] + y[i] for i < n; one element per thread.
static const char *kVaddPtx = R"(//
// kiln_vadd(x: *f32, y: *f32, out: *f32, n: i32)
//
.version 8.0
.target sm_90
.address_size 64

.visible .entry kiln_vadd(
	.param .u64 kiln_vadd_param_0,
	.param .u64 kiln_vadd_param_1,
	.param .u64 kiln_vadd_param_2,
	.param .u32 kiln_vadd_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [kiln_vadd_param_0];
	ld.param.u64 	%rd2, [kiln_vadd_param_1];
	ld.param.u64 	%rd3, [kiln_vadd_param_2];
	ld.param.u32 	%r2, [kiln_vadd_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd5;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd8];
	add.f32 	%f3, %f1, %f2;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd5;
	st.global.f32 	[%rd10], %f3;
$L__done:
	ret;
}
)";

// Reverses each block of x into out through dynamic shared memory, staging the values
// `off` bytes into it: with off near the end of a >48 KiB allocation this only works
// when the runtime really asked the driver for that much shared memory.
static const char *kReversePtx = R"(
.version 8.0
.target sm_90
.address_size 64

.extern .shared .align 16 .b8 kiln_dyn_smem[];

.visible .entry kiln_block_reverse(
	.param .u64 kiln_block_reverse_param_0,
	.param .u64 kiln_block_reverse_param_1,
	.param .u32 kiln_block_reverse_param_2
)
{
	.reg .b32 	%r<13>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [kiln_block_reverse_param_0];
	ld.param.u64 	%rd2, [kiln_block_reverse_param_1];
	ld.param.u32 	%r1, [kiln_block_reverse_param_2];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	cvta.to.global.u64 	%rd3, %rd1;
	mul.wide.u32 	%rd4, %r5, 4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.f32 	%f1, [%rd5];
	mov.u32 	%r6, kiln_dyn_smem;
	add.s32 	%r7, %r6, %r1;
	shl.b32 	%r8, %r4, 2;
	add.s32 	%r9, %r7, %r8;
	st.shared.f32 	[%r9], %f1;
	bar.sync 	0;
	sub.s32 	%r10, %r3, %r4;
	add.s32 	%r10, %r10, -1;
	shl.b32 	%r11, %r10, 2;
	add.s32 	%r12, %r7, %r11;
	ld.shared.f32 	%f2, [%r12];
	cvta.to.global.u64 	%rd6, %rd2;
	add.s64 	%rd7, %rd6, %rd4;
	st.global.f32 	[%rd7], %f2;
	ret;
}
)";

// Invalid PTX (an f32 add of a 64-bit register) whose .loc says it came from
// bad.kiln line 7, column 9: the JIT error must come back pointing there.
static const char *kBadPtx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry kiln_bad(
	.param .u64 kiln_bad_param_0
)
{
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<3>;

	.loc	1 5 3
	ld.param.u64 	%rd1, [kiln_bad_param_0];
	.loc	1 7 9
	add.f32 	%f1, %f2, %rd1;
	ret;
}
	.file	1 "bad.kiln"
)";

static int failures = 0;

static void check(bool ok, const std::string &what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok)
    ++failures;
}

static Bundle makeBundle(const std::string &name, const char *ptx, std::vector<BundleParam> params, uint32_t numWarps,
                         uint32_t sharedBytes) {
  Bundle b;
  b.kernelName = name;
  b.entry = "kiln_" + name;
  b.params = std::move(params);
  b.numWarps = numWarps;
  b.sharedBytes = sharedBytes;
  b.target = Target::SM90;
  b.compilerVersion = "hand-written";
  b.sourceHash = "0";
  b.sourceFile = name + ".kiln";
  b.sourceLine = 1;
  b.sourceColumn = 1;
  std::string text(ptx);
  b.sections.push_back(CodeSection{SectionKind::PTX, Target::SM90, std::vector<uint8_t>(text.begin(), text.end())});
  return b;
}

static void testVectorAdd(kiln::Runtime &rt) {
  const int n = 1000003; // not a multiple of the block size: the tail is masked
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i);
    y[i] = 3.0f - 0.25f * static_cast<float>(i % 1000);
  }
  Bundle b = makeBundle("vadd", kVaddPtx,
                        {{"x", kiln::DType::F32, true},
                         {"y", kiln::DType::F32, true},
                         {"out", kiln::DType::F32, true},
                         {"n", kiln::DType::I32, false}},
                        4, 0);
  std::string path = "/tmp/kiln-gpu-smoke-" + std::to_string(::getpid()) + ".kbin";
  std::string error;
  bool written = kiln::rt::writeBundleAtomic(path, b, error);
  check(written, "write the vadd bundle to " + path + (written ? "" : ": " + error));
  kiln::Kernel k = rt.load_bundle(path);
  std::remove(path.c_str());
  check(k.block_size() == 128, "vadd block size is num_warps * 32");

  kiln::Buffer dx = rt.upload(x), dy = rt.upload(y);
  kiln::Buffer dout = rt.alloc<float>(n);
  dout.fill(0xff);
  unsigned blocks = (n + 127) / 128;
  k.launch({blocks, 1, 1}, dx, dy, dout, n);
  std::vector<float> out = dout.download<float>();
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += out[i] != x[i] + y[i];
  check(wrong == 0, "vadd of " + std::to_string(n) + " elements (" + std::to_string(wrong) + " wrong)");

  // Offsets through BufferView: add the second half onto the first half's output slots.
  const int half = n / 2;
  dout.fill(0);
  k.launch({(half + 127) / 128}, dx.at(4ull * half), dy.at(4ull * half), dout, half);
  out = dout.download<float>();
  wrong = 0;
  for (int i = 0; i < half; ++i)
    wrong += out[i] != x[half + i] + y[half + i];
  for (int i = half; i < n; ++i)
    wrong += out[i] != 0.0f;
  check(wrong == 0, "vadd through buffer offsets (" + std::to_string(wrong) + " wrong)");

  // Timing: ten launches between two events.
  kiln::Event start = rt.create_event(), stop = rt.create_event();
  start.record();
  for (int i = 0; i < 10; ++i)
    k.launch({blocks}, dx, dy, dout, n);
  stop.record();
  stop.synchronize();
  float ms = kiln::Event::elapsed_ms(start, stop);
  check(ms > 0.0f && ms < 10000.0f, "event timing of 10 launches: " + std::to_string(ms) + " ms");

  // Argument checking happens before the driver sees the launch.
  try {
    k.launch({blocks}, dx, dy, dout);
    check(false, "a launch with a missing argument throws");
  } catch (const kiln::RuntimeError &e) {
    check(e.status() == KILN_ERROR_ARGUMENT_MISMATCH &&
              std::string(e.what()).find("takes 4 arguments") != std::string::npos,
          std::string("missing argument rejected: ") + e.what());
  }
  try {
    k.launch({blocks}, dx, dy, dout, 0.5);
    check(false, "a float for an i32 parameter throws");
  } catch (const kiln::RuntimeError &e) {
    check(e.status() == KILN_ERROR_ARGUMENT_MISMATCH && std::string(e.what()).find("'n: i32'") != std::string::npos,
          std::string("float for i32 rejected: ") + e.what());
  }
}

static void testDynamicSharedMemory(kiln::Runtime &rt) {
  const uint32_t shared = 100 * 1024; // above the 48 KiB default: needs the opt-in
  const int threads = 128, blocks = 64, n = threads * blocks;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = static_cast<float>(i);
  Bundle b =
      makeBundle("block_reverse", kReversePtx,
                 {{"x", kiln::DType::F32, true}, {"out", kiln::DType::F32, true}, {"off", kiln::DType::U32, false}},
                 threads / 32, shared);
  std::string error;
  std::vector<uint8_t> bytes = kiln::rt::serializeBundle(b, error);
  kiln::Kernel k = rt.load_bundle_bytes(bytes);
  kiln::Buffer dx = rt.upload(x);
  kiln::Buffer dout = rt.alloc<float>(n);
  k.launch({blocks}, dx, dout, shared - threads * 4u);
  std::vector<float> out = dout.download<float>();
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    int block = i / threads, t = i % threads;
    wrong += out[i] != x[block * threads + (threads - 1 - t)];
  }
  check(wrong == 0, "block reverse through 100 KiB of dynamic shared memory (" + std::to_string(wrong) + " wrong)");
}

static void testJitErrorPointsAtSource(kiln::Runtime &rt) {
  Bundle b = makeBundle("bad", kBadPtx, {{"x", kiln::DType::F32, true}}, 1, 0);
  std::string error;
  std::vector<uint8_t> bytes = kiln::rt::serializeBundle(b, error);
  try {
    rt.load_bundle_bytes(bytes);
    check(false, "invalid PTX is rejected");
  } catch (const kiln::RuntimeError &e) {
    std::string msg = e.what();
    check(e.status() == KILN_ERROR_MODULE_LOAD, "invalid PTX gives KILN_ERROR_MODULE_LOAD");
    check(msg.find("CUDA_ERROR_INVALID_PTX") != std::string::npos, "the message names CUDA_ERROR_INVALID_PTX");
    check(msg.find("(at bad.kiln:7:9)") != std::string::npos, "the JIT log points at bad.kiln:7:9");
    std::printf("---- message ----\n%s\n-----------------\n", msg.c_str());
  }
}

int main() {
  try {
    kiln::Runtime rt(kiln::Runtime::Options{kiln::Backend::Cuda, 0});
    std::printf("device: %s (%s)\n", rt.device_name().c_str(), rt.target().c_str());
    testVectorAdd(rt);
    testDynamicSharedMemory(rt);
    testJitErrorPointsAtSource(rt);
    rt.synchronize();
  } catch (const kiln::RuntimeError &e) {
    std::printf("FAIL %s: %s\n", kiln_status_name(e.status()), e.what());
    bool noGpu = e.status() == KILN_ERROR_NO_DRIVER || e.status() == KILN_ERROR_NO_DEVICE;
    return noGpu && failures == 0 ? 2 : 1;
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "OK", failures);
  return failures ? 1 : 0;
}
