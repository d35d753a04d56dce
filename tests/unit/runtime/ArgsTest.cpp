//===- ArgsTest.cpp - Launch arguments against a kernel signature ---------===//
//
// The checks and the packing that every launch goes through, without a device: buffer
// and block mask handles are stand-in addresses resolved by tables in the test.
//
//===----------------------------------------------------------------------===//
#include "runtime/Args.h"
#include "RuntimeTestUtil.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

using namespace kiln;
using namespace kiln::rt;

namespace {

// Distinct, never dereferenced handle values.
const kiln_buffer *handle(int i) { return reinterpret_cast<const kiln_buffer *>(uintptr_t(0x1000 + 16 * i)); }

struct Fixture {
  std::map<const kiln_buffer *, BufferRef> buffers;
  BufferResolver resolve = [this](const kiln_buffer *b, std::string &why) -> std::optional<BufferRef> {
    auto it = buffers.find(b);
    if (it == buffers.end()) {
      why = "the buffer was freed or belongs to another runtime";
      return std::nullopt;
    }
    return it->second;
  };
  std::map<const kiln_block_mask *, MaskRef> masks;
  MaskResolver resolveMask = [this](const kiln_block_mask *m, std::string &why) -> std::optional<MaskRef> {
    auto it = masks.find(m);
    if (it == masks.end()) {
      why = m ? "the block mask was destroyed or belongs to another runtime" : "the block mask is null";
      return std::nullopt;
    }
    return it->second;
  };
  PackedArgs packed;

  std::string pack(const std::vector<BundleParam> &params, const std::vector<kiln_arg> &args) {
    std::optional<ArgsError> error = packMasked(params, {}, args);
    return error ? error->message : "";
  }
  std::optional<ArgsError> packMasked(const std::vector<BundleParam> &params,
                                      const std::vector<BundleBlockMask> &blockMasks,
                                      const std::vector<kiln_arg> &args) {
    std::optional<ArgsError> error = packLaunchArgs("k", params, blockMasks, args, resolve, resolveMask, packed);
    if (error) { // every refusal comes with a status a C caller can act on
      EXPECT_TRUE(error->status == KILN_ERROR_ARGUMENT_MISMATCH || error->status == KILN_ERROR_INVALID_VALUE);
    }
    return error;
  }
};

kiln_arg buf(int i, uint64_t offset = 0) {
  kiln_arg a{};
  a.kind = KILN_ARG_BUFFER;
  a.value.buffer.buffer = handle(i);
  a.value.buffer.offset = offset;
  return a;
}
kiln_arg i64(int64_t v) {
  kiln_arg a{};
  a.kind = KILN_ARG_INT;
  a.value.i = v;
  return a;
}
kiln_arg u64(uint64_t v) {
  kiln_arg a{};
  a.kind = KILN_ARG_UINT;
  a.value.u = v;
  return a;
}
kiln_arg f64(double v) {
  kiln_arg a{};
  a.kind = KILN_ARG_FLOAT;
  a.value.f = v;
  return a;
}
kiln_arg boolean(bool v) {
  kiln_arg a{};
  a.kind = KILN_ARG_BOOL;
  a.value.b = v;
  return a;
}

const kiln_block_mask *maskHandle(int i) {
  return reinterpret_cast<const kiln_block_mask *>(uintptr_t(0x9000 + 16 * i));
}
kiln_arg mask(const kiln_block_mask *m) {
  kiln_arg a{};
  a.kind = KILN_ARG_BLOCK_MASK;
  a.value.mask = m;
  return a;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

BundleParam scalar(DType t) { return BundleParam{"v", t, false}; }

} // namespace

TEST(Args, PacksTheVaddSignature) {
  Fixture f;
  f.buffers[handle(1)] = {0x7000'0000, 4096, DType::F32};
  f.buffers[handle(2)] = {0x7100'0000, 4096, std::nullopt};
  f.buffers[handle(3)] = {0x7200'0000, 4096, DType::F32};
  std::vector<BundleParam> params = test::vaddBundle().params;
  ASSERT_EQ(f.pack(params, {buf(1), buf(2, 64), buf(3), i64(1000)}), "");
  EXPECT_EQ(f.packed.slots[0], 0x7000'0000u);
  EXPECT_EQ(f.packed.slots[1], 0x7100'0040u); // offset added
  EXPECT_EQ(f.packed.slots[2], 0x7200'0000u);
  EXPECT_EQ(f.packed.slots[3], 1000u);
  EXPECT_EQ(f.packed.sizes, (std::vector<uint32_t>{8, 8, 8, 4}));
  std::span<void *const> p = f.packed.pointers();
  ASSERT_EQ(p.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(p[i], &f.packed.slots[i]);
}

TEST(Args, WrongCountShowsTheSignature) {
  Fixture f;
  std::string why = f.pack(test::vaddBundle().params, {buf(1), buf(2)});
  EXPECT_EQ(why, "kernel 'k' takes 4 arguments, got 2; its signature is k(x: *f32, y: *f32, out: *f32, n: i32)");
  EXPECT_EQ(f.pack({scalar(DType::I32)}, {}), "kernel 'k' takes 1 argument, got 0; its signature is k(v: i32)");
}

TEST(Args, PointerParametersTakeBuffersOnly) {
  Fixture f;
  std::vector<BundleParam> p = {{"x", DType::F32, true}};
  EXPECT_EQ(f.pack(p, {i64(5)}),
            "kernel 'k', argument 1 ('x: *f32'): the parameter is *f32 and takes a device buffer, got an integer (5)");
  EXPECT_TRUE(contains(f.pack(p, {f64(1.5)}), "got a float (1.5)"));
  EXPECT_TRUE(contains(f.pack(p, {boolean(true)}), "got a bool (true)"));
}

TEST(Args, ScalarParametersRefuseBuffers) {
  Fixture f;
  f.buffers[handle(1)] = {0x1000, 16, std::nullopt};
  EXPECT_EQ(f.pack({{"n", DType::I32, false}}, {buf(1)}),
            "kernel 'k', argument 1 ('n: i32'): the parameter is the scalar i32, got a device buffer");
}

TEST(Args, BufferChecks) {
  Fixture f;
  f.buffers[handle(1)] = {0x1000, 64, DType::BF16};
  f.buffers[handle(2)] = {0x2000, 64, std::nullopt};
  std::vector<BundleParam> pf = {{"x", DType::F32, true}};
  EXPECT_TRUE(contains(f.pack(pf, {buf(1)}), "the buffer holds bf16 elements but the parameter is *f32"));
  EXPECT_TRUE(contains(f.pack(pf, {buf(2, 65)}), "offset 65 is past the end of the 64-byte buffer"));
  EXPECT_TRUE(contains(f.pack(pf, {buf(2, 6)}), "offset 6 is not a multiple of the f32 element size (4 bytes)"));
  EXPECT_EQ(f.pack(pf, {buf(2, 64)}), ""); // one past the end is a valid (empty) view
  EXPECT_TRUE(
      contains(f.pack(pf, {buf(9)}), "argument 1 ('x: *f32'): the buffer was freed or belongs to another runtime"));
  std::vector<BundleParam> ph = {{"h", DType::BF16, true}};
  EXPECT_EQ(f.pack(ph, {buf(1, 2)}), "");
  EXPECT_EQ(f.packed.slots[0], 0x1002u);
}

TEST(Args, DivisibilityAssumptionsAreChecked) {
  Fixture f;
  f.buffers[handle(1)] = {0x1000, 256, DType::F32};
  std::vector<BundleParam> p = {{"x", DType::F32, true, 16}, {"stride", DType::I32, false, 16}};
  EXPECT_EQ(f.pack(p, {buf(1, 32), i64(1024)}), "");
  EXPECT_EQ(f.pack(p, {buf(1, 32), i64(-48)}), ""); // negative multiples count too
  EXPECT_EQ(f.pack(p, {buf(1, 36), i64(1024)}),
            "kernel 'k', argument 1 ('x: *f32'): the kernel was compiled for addresses aligned to 16 bytes, and "
            "this one (buffer offset 36) is not");
  EXPECT_EQ(f.pack(p, {buf(1), i64(1000)}),
            "kernel 'k', argument 2 ('stride: i32'): the kernel was compiled for values that are multiples of 16, "
            "got 1000 (compile it without that assumption to launch it with this value)");
  EXPECT_TRUE(contains(f.pack(p, {buf(1), u64(8)}), "multiples of 16, got 8"));
}

TEST(Args, IntegerRangesAreExact) {
  Fixture f;
  struct Case {
    DType t;
    int64_t lo;
    uint64_t hi;
  };
  for (Case c : {Case{DType::I8, -128, 127}, Case{DType::I16, -32768, 32767},
                 Case{DType::I32, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()},
                 Case{DType::I64, std::numeric_limits<int64_t>::min(), uint64_t(std::numeric_limits<int64_t>::max())},
                 Case{DType::U8, 0, 255}, Case{DType::U16, 0, 65535}, Case{DType::U32, 0, 4294967295u},
                 Case{DType::U64, 0, std::numeric_limits<uint64_t>::max()}}) {
    SCOPED_TRACE(std::string(1, ' ') + std::to_string(static_cast<int>(c.t)));
    EXPECT_EQ(f.pack({scalar(c.t)}, {i64(c.lo)}), "");
    EXPECT_EQ(f.pack({scalar(c.t)}, {u64(c.hi)}), "");
    if (c.lo > std::numeric_limits<int64_t>::min()) {
      EXPECT_TRUE(contains(f.pack({scalar(c.t)}, {i64(c.lo - 1)}), "does not fit in"));
    }
    if (c.hi < std::numeric_limits<uint64_t>::max()) {
      EXPECT_TRUE(contains(f.pack({scalar(c.t)}, {u64(c.hi + 1)}), "does not fit in"));
    }
  }
  EXPECT_EQ(f.pack({scalar(DType::I32)}, {i64(int64_t(1) << 32)}),
            "kernel 'k', argument 1 ('v: i32'): 4294967296 does not fit in i32 (range -2147483648..2147483647)");
  EXPECT_TRUE(contains(f.pack({scalar(DType::U32)}, {i64(-1)}), "-1 does not fit in u32"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::I64)}, {u64(uint64_t(1) << 63)}), "does not fit in i64"));
}

TEST(Args, IntegersArePackedLittleEndianAtTheirWidth) {
  Fixture f;
  ASSERT_EQ(f.pack({scalar(DType::I8), scalar(DType::I16), scalar(DType::U32), scalar(DType::I64)},
                   {i64(-1), i64(-2), u64(0xdeadbeef), i64(-3)}),
            "");
  EXPECT_EQ(f.packed.slots[0], 0xffu);
  EXPECT_EQ(f.packed.slots[1], 0xfffeu);
  EXPECT_EQ(f.packed.slots[2], 0xdeadbeefu);
  EXPECT_EQ(f.packed.slots[3], uint64_t(-3));
  EXPECT_EQ(f.packed.sizes, (std::vector<uint32_t>{1, 2, 4, 8}));
}

TEST(Args, FloatsMustBeExact) {
  Fixture f;
  ASSERT_EQ(f.pack({scalar(DType::F32)}, {f64(0.5)}), "");
  float half;
  std::memcpy(&half, &f.packed.slots[0], 4);
  EXPECT_EQ(half, 0.5f);
  EXPECT_EQ(f.packed.sizes[0], 4u);
  EXPECT_EQ(
      f.pack({scalar(DType::F32)}, {f64(0.1)}),
      "kernel 'k', argument 1 ('v: f32'): 0.1 cannot be represented exactly as f32 (nearest: 0.10000000149011612)");
  EXPECT_EQ(f.pack({scalar(DType::F32)}, {f64(double(0.1f))}), "");
  EXPECT_TRUE(contains(f.pack({scalar(DType::F32)}, {f64(1e300)}), "outside the range of f32"));
  EXPECT_EQ(f.pack({scalar(DType::F32)}, {f64(std::numeric_limits<double>::infinity())}), "");
  EXPECT_EQ(f.pack({scalar(DType::F32)}, {f64(std::nan(""))}), "");
  ASSERT_EQ(f.pack({scalar(DType::F64)}, {f64(0.1)}), "");
  double d;
  std::memcpy(&d, &f.packed.slots[0], 8);
  EXPECT_EQ(d, 0.1);
}

TEST(Args, NarrowFloatsPackTheirBits) {
  Fixture f;
  ASSERT_EQ(f.pack({scalar(DType::F16), scalar(DType::BF16), scalar(DType::F8E4M3), scalar(DType::F8E5M2)},
                   {f64(1.5), f64(1.5), f64(1.5), f64(-2.0)}),
            "");
  EXPECT_EQ(f.packed.slots[0], 0x3e00u);
  EXPECT_EQ(f.packed.slots[1], 0x3fc0u);
  EXPECT_EQ(f.packed.slots[2], 0x3cu);
  EXPECT_EQ(f.packed.slots[3], 0xc0u);
  EXPECT_EQ(f.packed.sizes, (std::vector<uint32_t>{2, 2, 1, 1}));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F16)}, {f64(1.0 + 1.0 / 4096)}), "cannot be represented exactly as f16"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F16)}, {f64(1e6)}), "cannot be represented exactly as f16"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F8E4M3)}, {f64(1000)}), "nearest: 448"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F8E4M3)}, {f64(std::numeric_limits<double>::infinity())}),
                       "cannot be represented exactly as f8e4m3"));
}

TEST(Args, IntegersConvertToFloatsWhenExact) {
  Fixture f;
  ASSERT_EQ(f.pack({scalar(DType::F32)}, {i64(3)}), "");
  float v;
  std::memcpy(&v, &f.packed.slots[0], 4);
  EXPECT_EQ(v, 3.0f);
  EXPECT_EQ(f.pack({scalar(DType::F32)}, {i64(1 << 24)}), "");
  EXPECT_TRUE(
      contains(f.pack({scalar(DType::F32)}, {i64((1 << 24) + 1)}), "16777217 cannot be represented exactly as f32"));
  EXPECT_EQ(f.pack({scalar(DType::F64)}, {u64(uint64_t(1) << 63)}), "");
  EXPECT_TRUE(contains(f.pack({scalar(DType::F64)}, {u64(std::numeric_limits<uint64_t>::max())}),
                       "cannot be represented exactly as f64"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F64)}, {i64(std::numeric_limits<int64_t>::max())}),
                       "cannot be represented exactly as f64"));
  EXPECT_EQ(f.pack({scalar(DType::F64)}, {i64(std::numeric_limits<int64_t>::min())}), "");
}

TEST(Args, FloatsNeverBecomeIntegers) {
  Fixture f;
  EXPECT_EQ(f.pack({scalar(DType::I32)}, {f64(2.0)}),
            "kernel 'k', argument 1 ('v: i32'): the parameter is the integer i32, got a float (2)");
}

TEST(Args, BoolsOnlyForBoolParameters) {
  Fixture f;
  ASSERT_EQ(f.pack({scalar(DType::Bool)}, {boolean(true)}), "");
  EXPECT_EQ(f.packed.slots[0], 1u);
  EXPECT_EQ(f.packed.sizes[0], 1u);
  EXPECT_TRUE(
      contains(f.pack({scalar(DType::Bool)}, {i64(1)}), "the parameter is bool and takes a bool, got an integer (1)"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::I32)}, {boolean(false)}), "the parameter is i32, got a bool (false)"));
  EXPECT_TRUE(contains(f.pack({scalar(DType::F32)}, {boolean(false)}), "the parameter is f32, got a bool (false)"));
}

TEST(Args, UnknownArgumentKindIsRefused) {
  Fixture f;
  kiln_arg a{};
  a.kind = static_cast<kiln_arg_kind>(77);
  EXPECT_TRUE(contains(f.pack({scalar(DType::I32)}, {a}), "an argument of unknown kind 77 was passed"));
}

TEST(Args, SignatureString) {
  EXPECT_EQ(signatureString("f", {}), "f()");
  EXPECT_EQ(signatureString("g", {{"a", DType::BF16, true}, {"b", DType::Bool, false}}), "g(a: *bf16, b: bool)");
}

// ---- block masks -----------------------------------------------------------------------

namespace {

// row_sum(x: *f32, out: *f32, mask: block_mask<4, 8>) with buffers 1 and 2 for x and out,
// and mask 1: a 10 x 20 grid in 4 x 8 blocks whose arrays are buffers 11, 12 and 13.
struct MaskFixture : Fixture {
  Bundle bundle = test::maskedBundle();
  MaskFixture() {
    buffers[handle(1)] = {0x1000, 4096, DType::F32};
    buffers[handle(2)] = {0x2000, 4096, DType::F32};
    buffers[handle(11)] = {0xa000, 16, DType::I32};
    buffers[handle(12)] = {0xb000, 32, DType::I32};
    buffers[handle(13)] = {0xc000, 8, DType::U32};
    masks[maskHandle(1)] = MaskRef{10, 20, 4, 8, handle(11), handle(12), handle(13)};
  }
  std::optional<ArgsError> pack(const std::vector<kiln_arg> &args) {
    return packMasked(bundle.params, bundle.blockMasks, args);
  }
};

} // namespace

TEST(Args, OneMaskArgumentFillsTheMasksFiveSlots) {
  MaskFixture f;
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), mask(maskHandle(1))});
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(f.packed.slots, (std::vector<uint64_t>{0x1000, 0x2000, 10, 20, 0xa000, 0xb000, 0xc000}));
  EXPECT_EQ(f.packed.sizes, (std::vector<uint32_t>{8, 8, 4, 4, 8, 8, 8}));
}

TEST(Args, AMaskMayStillBePassedAsItsFiveParts) {
  MaskFixture f;
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), i64(10), i64(20), buf(11), buf(12), buf(13)});
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(f.packed.slots, (std::vector<uint64_t>{0x1000, 0x2000, 10, 20, 0xa000, 0xb000, 0xc000}));
  // The parts are checked as any parameters are.
  error = f.pack({buf(1), buf(2), i64(10), i64(20), buf(11), buf(12), buf(1)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_EQ(error->message, "kernel 'k', argument 7 ('mask.bitmaps: *u32'): the buffer holds f32 elements but the "
                            "parameter is *u32");
}

TEST(Args, EachMaskChoosesItsOwnForm) {
  // k(a: block_mask<4, 8>, n: i32, b: block_mask<4, 8>): the first whole, the second in
  // parts, then the other way round; argument numbers count what the caller passed.
  MaskFixture f;
  std::vector<BundleParam> params = test::maskParams("a");
  params.push_back({"n", DType::I32, false});
  for (BundleParam &p : test::maskParams("b"))
    params.push_back(p);
  std::vector<BundleBlockMask> masks = {{"a", 4, 8, 0}, {"b", 4, 8, 6}};
  std::optional<ArgsError> error =
      f.packMasked(params, masks, {mask(maskHandle(1)), i64(7), i64(3), i64(5), buf(11), buf(12), buf(13)});
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(f.packed.slots,
            (std::vector<uint64_t>{10, 20, 0xa000, 0xb000, 0xc000, 7, 3, 5, 0xa000, 0xb000, 0xc000}));
  error = f.packMasked(params, masks, {i64(3), i64(5), buf(11), buf(12), buf(13), i64(7), mask(maskHandle(1))});
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(f.packed.slots,
            (std::vector<uint64_t>{3, 5, 0xa000, 0xb000, 0xc000, 7, 10, 20, 0xa000, 0xb000, 0xc000}));
  error = f.packMasked(params, masks, {mask(maskHandle(1)), i64(7), mask(nullptr)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "kernel 'k', argument 3 ('b: block_mask<4, 8>'): the block mask is null");
}

TEST(Args, AMaskOfOtherBlockSizesIsRefused) {
  MaskFixture f;
  f.masks[maskHandle(2)] = MaskRef{10, 20, 8, 8, handle(11), handle(12), handle(13)};
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), mask(maskHandle(2))});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(error->message, "kernel 'k' takes mask: block_mask<4, 8>, but the mask has 8 x 8 blocks");
}

TEST(Args, NullAndForeignMasksAreRefused) {
  MaskFixture f;
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), mask(nullptr)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(error->message, "kernel 'k', argument 3 ('mask: block_mask<4, 8>'): the block mask is null");
  error = f.pack({buf(1), buf(2), mask(maskHandle(9))});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(error->message, "kernel 'k', argument 3 ('mask: block_mask<4, 8>'): the block mask was destroyed or "
                            "belongs to another runtime");
  // A launcher that resolves no masks says how to pass one instead.
  error = packLaunchArgs("k", f.bundle.params, f.bundle.blockMasks, std::vector<kiln_arg>{buf(1), buf(2),
                         mask(maskHandle(1))}, f.resolve, MaskResolver(), f.packed);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(error->message, "takes a block mask only as its five parts")) << error->message;
}

TEST(Args, AMaskIsRefusedWhereNoMaskStarts) {
  MaskFixture f;
  std::optional<ArgsError> error = f.pack({mask(maskHandle(1)), buf(2), mask(maskHandle(1))});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_EQ(error->message, "kernel 'k', argument 1 ('x: *f32'): the parameter is *f32 and takes a device buffer, "
                            "got a block mask");
  // At a mask's second part, as when the caller's count of parts is off by one.
  error = f.pack({buf(1), buf(2), i64(10), mask(maskHandle(1)), buf(11), buf(12), buf(13)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "kernel 'k', argument 4 ('mask.cols: i32'): the parameter is the scalar i32, got a "
                            "block mask");
  EXPECT_TRUE(contains(f.Fixture::pack({scalar(DType::I32)}, {mask(maskHandle(1))}),
                       "the parameter is the scalar i32, got a block mask"));
}

TEST(Args, CountErrorsSpellMasksAsOneParameter) {
  MaskFixture f;
  std::optional<ArgsError> error = f.pack({buf(1), buf(2)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_EQ(error->message, "kernel 'k' takes 3 arguments, got 2 (a block mask is one argument, or five: its rows, "
                            "cols, row_start, blocks and bitmaps); its signature is k(x: *f32, out: *f32, mask: "
                            "block_mask<4, 8>)");
  error = f.pack({buf(1), buf(2), mask(maskHandle(1)), i64(1)});
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->message, "takes 3 arguments, got 4")) << error->message;
  error = f.pack({buf(1), buf(2), i64(10), i64(20), buf(11), buf(12)});
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->message, "takes 3 arguments, got 6")) << error->message;
}

TEST(Args, AWholeMasksPartsMeetTheKernelsAssumptions) {
  MaskFixture f;
  f.bundle.params[2].divisibility = 16; // mask.rows compiled as a multiple of 16
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), mask(maskHandle(1))});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_ARGUMENT_MISMATCH);
  EXPECT_EQ(error->message, "kernel 'k', argument 3 ('mask: block_mask<4, 8>'): its part 'mask.rows: i32': the "
                            "kernel was compiled for values that are multiples of 16, got 10 (compile it without "
                            "that assumption to launch it with this value)");
}

TEST(Args, AMaskMustHaveTheExtentsItsKernelDeclares) {
  // block_mask<4, 8, S, 20> with S an i32 parameter after the mask.
  MaskFixture f;
  f.bundle.params.push_back({"S", DType::I32, false});
  f.bundle.blockMasks[0].extents = BlockMaskExtents{BlockMaskExtent{0, 7}, BlockMaskExtent{20, -1}};
  EXPECT_FALSE(f.pack({buf(1), buf(2), mask(maskHandle(1)), i64(10)}));
  EXPECT_FALSE(f.pack({buf(1), buf(2), i64(10), i64(20), buf(11), buf(12), buf(13), i64(10)}));
  std::optional<ArgsError> error = f.pack({buf(1), buf(2), mask(maskHandle(1)), i64(12)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, KILN_ERROR_INVALID_VALUE);
  EXPECT_EQ(error->message, "kernel 'k': block mask 'mask' has 10 rows, but the kernel declares S = 12 rows for it");
  // Passed as parts, the same check; and a negative i32 reads as itself.
  error = f.pack({buf(1), buf(2), i64(10), i64(21), buf(11), buf(12), buf(13), i64(10)});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "kernel 'k': block mask 'mask' has 21 columns, but the kernel declares 20 columns for it");
  error = f.pack({buf(1), buf(2), mask(maskHandle(1)), i64(-10)});
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->message, "declares S = -10 rows")) << error->message;
}

TEST(Args, SignatureStringSpellsMasks) {
  Bundle b = test::maskedBundle();
  EXPECT_EQ(signatureString("row_sum", b.params, b.blockMasks), "row_sum(x: *f32, out: *f32, mask: block_mask<4, 8>)");
  EXPECT_EQ(signatureString("row_sum", b.params),
            "row_sum(x: *f32, out: *f32, mask.rows: i32, mask.cols: i32, mask.row_start: *i32, mask.blocks: *i32, "
            "mask.bitmaps: *u32)");
}
