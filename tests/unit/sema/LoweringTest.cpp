//===- LoweringTest.cpp - Kiln programs lowered to Tile IR ----------------===//
//
// Each test compiles a small program and checks the ops and types of the printed IR:
// implicit broadcasts and casts become explicit ops, constants are folded, vars become
// loop-carried values and if results.
//
//===----------------------------------------------------------------------===//
#include "SemaTestUtil.h"

#include <cctype>

using namespace kiln;
using namespace kiln::test;

namespace {

/// Replaces value numbers (%12) with %_ so that checks do not depend on numbering.
std::string normalize(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '%' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += '_';
      while (i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))
        ++i;
    }
  }
  return out;
}

/// True when the IR contains `text`, compared with value numbers normalized.
bool has(const std::string &ir, const std::string &text) {
  return normalize(ir).find(normalize(text)) != std::string::npos;
}

TEST(LoweringTest, VectorAddExample) {
  auto c = compile(R"(
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
}
)");
  EXPECT_COMPILES(c);
  ASSERT_EQ(c.module->kernels.size(), 1u);
  const ir::Kernel &k = c.kernel("add");
  ASSERT_EQ(k.params().size(), 4u);
  EXPECT_EQ(k.params()[0]->type, Type::ptr(DType::F32));
  EXPECT_EQ(k.params()[3]->type, Type::scalar(DType::I32));
  EXPECT_EQ(k.params()[3]->nameHint, "n");
  ASSERT_EQ(k.constValues.size(), 1u);
  EXPECT_EQ(k.constValues[0].first, "BLOCK");
  EXPECT_EQ(std::get<int64_t>(k.constValues[0].second), 1024);
  EXPECT_EQ(k.numWarps, 4);
  EXPECT_EQ(k.numStages, 1);
  EXPECT_TRUE(has(c.ir, "program_id {axis = 0} : i32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "arange {end = 1024, start = 0} : tile<i32, [1024]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "splat %x : tile<*f32, [1024]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "ptr_add")) << c.ir;
  EXPECT_TRUE(has(c.ir, "cmp")) << c.ir;
  EXPECT_TRUE(has(c.ir, "{pred = \"lt\"} : tile<bool, [1024]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "store")) << c.ir;
  EXPECT_TRUE(has(c.ir, "  return\n")) << c.ir;
}

TEST(LoweringTest, AttributesSetLaunchSettings) {
  auto c = compile(R"(
@num_warps(8)
@num_stages(3)
kernel k(x: *f32) { store(x, 1.0); }
)");
  EXPECT_COMPILES(c);
  EXPECT_EQ(c.kernel("k").numWarps, 8);
  EXPECT_EQ(c.kernel("k").numStages, 3);
}

TEST(LoweringTest, AutotuneIsValidatedButDefaultsAreUsed) {
  auto c = compile(R"(
@autotune(configs = [{BLOCK: 64, num_warps: 2}, {BLOCK: 128, num_stages: 2}], key = [n])
kernel k(x: *f32, n: i32, const BLOCK: i32 = 32) { store(x + arange(0, BLOCK), 0.0); }
)");
  EXPECT_COMPILES(c);
  EXPECT_EQ(std::get<int64_t>(c.kernel("k").constValues[0].second), 32);
  EXPECT_EQ(c.kernel("k").numWarps, 4);
  EXPECT_TRUE(has(c.ir, "tile<*f32, [32]>")) << c.ir;
}

TEST(LoweringTest, DefinesOverrideConstParams) {
  SemaOptions o;
  o.defines = {{"BLOCK", "64"}, {"SCALE", "2"}, {"FLAG", "true"}};
  auto c = compile(R"(
kernel k(x: *f32, const BLOCK: i32 = 1024, const SCALE: f32 = 1.5, const FLAG: bool = false) {
    if FLAG { store(x + arange(0, BLOCK), SCALE); }
}
)",
                   o);
  EXPECT_COMPILES(c);
  const auto &cv = c.kernel("k").constValues;
  ASSERT_EQ(cv.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(cv[0].second), 64);
  EXPECT_EQ(std::get<double>(cv[1].second), 2.0);
  EXPECT_EQ(std::get<bool>(cv[2].second), true);
  EXPECT_TRUE(has(c.ir, "constant {value = 2.0} : tile<f32, [64]>")) << c.ir;
  // The constant condition compiled only the taken branch: no `if` op.
  EXPECT_FALSE(has(c.ir, " if ")) << c.ir;
}

TEST(LoweringTest, EveryKernelIsCompiledWhenNoneIsNamed) {
  auto c = compile(R"(
kernel a(x: *f32) { store(x, 1.0); }
fn helper(v) { return v * 2; }
kernel b(x: *i32) { store(x, helper(3)); }
graph g(x: *f32) { launch a[(1,)](x); }
)");
  EXPECT_COMPILES(c);
  ASSERT_EQ(c.module->kernels.size(), 2u);
  EXPECT_EQ(c.module->kernels[0]->name, "a");
  EXPECT_EQ(c.module->kernels[1]->name, "b");
  // helper(3) is folded: 3 * 2 = 6 stored as i32.
  EXPECT_TRUE(has(c.ir, "constant {value = 6} : i32")) << c.ir;
}

TEST(LoweringTest, OnlyTheNamedKernel) {
  SemaOptions o;
  o.kernel = "b";
  auto c =
      compile("kernel a(x: *f32) { store(x, 1.0); }\nkernel b(x: *f32) { store(x, 2.0); }\n", o);
  EXPECT_COMPILES(c);
  ASSERT_EQ(c.module->kernels.size(), 1u);
  EXPECT_EQ(c.module->kernels[0]->name, "b");
}

TEST(LoweringTest, WeakLiteralsTakeTheOtherOperandsDType) {
  auto c = compile(R"(
kernel k(x: *bf16, y: *f32, i: *i32, n: i32) {
    let a = load(x);
    store(x, a * 0.5);          // bf16: the literal adopts bf16
    store(y, n * 0.5);          // a float literal meets an integer: f32
    store(i, n * 2);            // stays i32
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = 0.5} : bf16")) << c.ir;
  EXPECT_TRUE(has(c.ir, "mul %a, %0 : bf16")) << c.ir;
  EXPECT_TRUE(has(c.ir, "cast %n : f32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 2} : i32")) << c.ir;
}

TEST(LoweringTest, LetKeepsLiteralsWeakVarFixesTheirDType) {
  auto c = compile(R"(
kernel k(x: *bf16, q: *i8, r: *i32) {
    let half = 0.5;
    store(x, load(x) * half);   // bf16: half is still a weak literal
    var big = 300;              // a var is i32, so i8 + big promotes to i32
    store(r, load(q) + big);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = 0.5} : bf16")) << c.ir;
  EXPECT_TRUE(has(c.ir, "cast %_ : i32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 300} : i32")) << c.ir;
  // The same literal through a let adopts i8 and does not fit.
  auto d = compile("kernel k(q: *i8) {\n  let big = 300;\n  store(q, load(q) + big);\n}\n");
  expectError(d, "E0007", 3, 22, "integer constant 300 does not fit in i8");
}

TEST(LoweringTest, PromotionInsertsCasts) {
  auto c = compile(R"(
kernel k(a: *bf16, b: *f32, out: *f32) {
    let s = load(a) + load(b);
    store(out, s);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "cast %0 : f32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "add %2, %1 : f32")) << c.ir;
}

TEST(LoweringTest, ConstantFoldingForShapes) {
  auto c = compile(R"(
const N = 16;
kernel k(x: *f32, const BLOCK: i32 = 32) {
    let t = zeros([BLOCK * 2, N / 4], f32);
    let r = arange(0, BLOCK - N);
    store(x + arange(0, (BLOCK + 31) / 32 * 8), 0.0);
    store(x, sum(sum(t, axis = 1), axis = 0) + sum(r).to(f32));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "tile<f32, [64, 4]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "arange {end = 16, start = 0}")) << c.ir;
  EXPECT_TRUE(has(c.ir, "arange {end = 8, start = 0}")) << c.ir;
}

TEST(LoweringTest, BroadcastingWithNewAxes) {
  auto c = compile(R"(
kernel k(p: *f32) {
    let r = arange(0, 4);
    let c = arange(0, 8);
    let offs = r[:, None] * 8 + c[None, :];
    store(p + offs, 1.0);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "expand_dims %r {axis = 1} : tile<i32, [4, 1]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "expand_dims %c {axis = 0} : tile<i32, [1, 8]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "broadcast")) << c.ir;
  EXPECT_TRUE(has(c.ir, "tile<*f32, [4, 8]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 1.0} : tile<f32, [4, 8]>")) << c.ir;
}

TEST(LoweringTest, LowerRankOperandsAreExpandedThenBroadcast) {
  auto c = compile(R"(
kernel k(p: *f32) {
    let a = zeros([2, 3], f32);
    let b = arange(0, 3).to(f32);
    store(p + arange(0, 3), sum(a + b, axis = 0));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "expand_dims %b {axis = 0} : tile<f32, [1, 3]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "broadcast %3 : tile<f32, [2, 3]>")) << c.ir;
}

TEST(LoweringTest, ForLoopCarriesAssignedVars) {
  auto c = compile(R"(
kernel k(p: *f32, n: i32) {
    var acc = 0.0;
    var count = 0;
    let unchanged = 5;
    for i in range(0, n, 2) {
        acc += load(p + i);
        count += 1;
    }
    store(p, acc + count.to(f32) + unchanged.to(f32));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "for ")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": f32, i32 {")) << c.ir;
  EXPECT_TRUE(has(c.ir, "^(%i: i32, %acc: f32, %count: i32):")) << c.ir;
  EXPECT_TRUE(has(c.ir, "yield")) << c.ir;
}

TEST(LoweringTest, LoopBoundsPromoteToOneIntegerType) {
  auto c = compile(R"(
kernel k(p: *f32, n: i64) {
    for i in range(n) { store(p + i, 0.0); }
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = 0} : i64")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 1} : i64")) << c.ir;
  EXPECT_TRUE(has(c.ir, "^(%i: i64):")) << c.ir;
}

TEST(LoweringTest, InnerDeclarationIsNotCarried) {
  auto c = compile(R"(
kernel k(p: *i32, n: i32) {
    var x = 0;
    for i in range(n) {
        var x = 1;      // shadows: the outer x is not assigned
        x += i;
        store(p + i, x);
    }
    store(p, x);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "^(%i: i32):")) << c.ir;
}

TEST(LoweringTest, IfYieldsAssignedVars) {
  auto c = compile(R"(
kernel k(p: *f32, n: i32) {
    var a = 1.0;
    var b = 2.0;
    if n > 0 { a = 3.0; } else if n < -5 { b = 4.0; } else { a = 5.0; b = 6.0; }
    store(p, a + b);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "= if ")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": f32, f32 {")) << c.ir;
}

TEST(LoweringTest, WhileCarriesVarsThroughBothRegions) {
  auto c = compile(R"(
kernel k(p: *i32, n: i32) {
    var i = 0;
    var s = 0;
    while i < n { s += i; i += 1; }
    store(p, s);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "while ")) << c.ir;
  EXPECT_TRUE(has(c.ir, "condition")) << c.ir;
}

TEST(LoweringTest, StaticRangeUnrollsWithConstantVariable) {
  auto d = compile(R"(
kernel k(p: *f32) {
    var acc = 0;
    for s in static_range(1, 4) {
        acc += sum(arange(0, s * 2));
    }
    store(p, acc.to(f32));
}
)");
  EXPECT_COMPILES(d);
  EXPECT_TRUE(has(d.ir, "arange {end = 2, start = 0}")) << d.ir;
  EXPECT_TRUE(has(d.ir, "arange {end = 4, start = 0}")) << d.ir;
  EXPECT_TRUE(has(d.ir, "arange {end = 6, start = 0}")) << d.ir;
  EXPECT_FALSE(has(d.ir, "for ")) << d.ir;
}

TEST(LoweringTest, GenericFnInstantiatedPerCall) {
  auto c = compile(R"(
fn twice(x) { return x + x; }
kernel k(a: *f16, b: *i32) {
    store(a, twice(load(a)));
    store(b, twice(load(b + arange(0, 4))).sum());
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "add %0, %0 : f16")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": tile<i32, [4]>")) << c.ir;
}

TEST(LoweringTest, TypedFnParamsConvertLosslessly) {
  auto c = compile(R"(
fn scale(x: f32, k: f32) { return x * k; }
kernel k(a: *f32, n: i32) { store(a, scale(n, 2)); }
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "cast %n : f32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 2.0} : f32")) << c.ir;
}

TEST(LoweringTest, MethodFormsAreBuiltins) {
  auto c = compile(R"(
kernel k(a: *f32, o: *bf16) {
    let v = load(a + arange(0, 8));
    store(o, v.sum().to(bf16));
    store(o + 1, v.max(axis = 0).to(bf16));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "kind = \"sum\"")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"max\"")) << c.ir;
  EXPECT_TRUE(has(c.ir, "cast")) << c.ir;
}

TEST(LoweringTest, NarrowSumsAccumulateWide) {
  auto c = compile(R"(
kernel k(a: *f16, b: *i8, c: *u16, o: *f32, oi: *i32, ou: *u32) {
    store(o, sum(load(a + arange(0, 8))));
    store(oi, sum(load(b + arange(0, 8))));
    store(ou, sum(load(c + arange(0, 8))));
    store(o, max(load(a + arange(0, 8))));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "cast %2 : tile<f32, [8]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": tile<i32, [8]>\n")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": tile<u32, [8]>\n")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"max\"} : f16")) << c.ir;
}

TEST(LoweringTest, DotDTypes) {
  auto c = compile(R"(
kernel k(a: *bf16, b: *i8, o: *f32, oi: *i32) {
    let r = arange(0, 16);
    let x = load(a + r[:, None] * 16 + r[None, :]);
    let y = load(b + r[:, None] * 16 + r[None, :]);
    let d = dot(x, x);
    let e = dot(y, y);
    let f = dot(x, x, zeros([16, 16], f16));
    store(o + r[:, None] * 16 + r[None, :], d + f);
    store(oi + r[:, None] * 16 + r[None, :], e);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "dot %x, %x : tile<f32, [16, 16]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, ": tile<i32, [16, 16]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "tile<f16, [16, 16]>")) << c.ir;
}

TEST(LoweringTest, ReduceWithUserCombiner) {
  auto c = compile(R"(
fn mymax(a, b) { return maximum(a, b); }
kernel k(p: *f32) {
    let v = load(p + arange(0, 8));
    store(p, reduce(v, 0, mymax));
    store(p + arange(0, 8), scan(v, combine = mymax));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "reduce %v {axis = 0, kind = \"custom\"} : f32 {")) << c.ir;
  EXPECT_TRUE(has(c.ir, "^(%a: f32, %b: f32):")) << c.ir;
  EXPECT_TRUE(has(c.ir, "maximum %a, %b : f32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"custom\"} : tile<f32, [8]>")) << c.ir;
}

TEST(LoweringTest, ShapeBuiltins) {
  auto c = compile(R"(
kernel k(p: *f32) {
    let v = load(p + arange(0, 8));
    let m = reshape(v, [2, 4]);
    let t = trans(m);
    let q = permute(m, [1, 0]);
    let b = broadcast_to(v, [3, 8]);
    let e = expand_dims(v, -1);
    let (lo, hi) = split(join(v, v));
    store(p, sum(sum(t + q, axis = 0)) + sum(b, axis = 0).sum() + sum(e, axis = 0).sum()
             + sum(lo + hi));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "reshape %v : tile<f32, [2, 4]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "permute %m {perm = [1, 0]} : tile<f32, [4, 2]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "expand_dims %v {axis = 1} : tile<f32, [8, 1]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "join %v, %v : tile<f32, [8, 2]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "split")) << c.ir;
}

TEST(LoweringTest, SortTopkAndArgReductions) {
  auto c = compile(R"(
kernel k(p: *f32, q: *i32) {
    let v = load(p + arange(0, 8));
    store(p + arange(0, 8), sort(v, descending = true));
    store(p + arange(0, 3), topk(v, 3));
    store(q + arange(0, 3), argtopk(v, 3, -1));
    store(q, argmax(v) + argmin(v));
    store(p + arange(0, 8), cumsum(v) + cumprod(v));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "sort %v {axis = 0, descending = true}")) << c.ir;
  EXPECT_TRUE(has(c.ir, "topk %v {axis = 0, k = 3} : tile<f32, [3]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "argtopk %v {axis = 0, k = 3} : tile<i32, [3]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "argmax")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"prod\"")) << c.ir;
}

TEST(LoweringTest, MemoryBuiltinsBroadcastAndConvert) {
  auto c = compile(R"(
kernel k(p: *f16, q: *i32, n: i32) {
    let offs = arange(0, 16);
    let m = offs < n;
    let v = load(p + offs, mask = m, other = 1);
    store(p + offs, 2, mask = m);
    let old = atomic_add(q + offs, 1, mask = m);
    let o2 = atomic_max(q, 7);
    let o3 = atomic_cas(q + offs, 0, old);
    store(q, o2 + sum(o3));
    store(p + offs, v);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = 1.0} : tile<f16, [16]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 2.0} : tile<f16, [16]>")) << c.ir;
  EXPECT_TRUE(has(c.ir, "atomic_rmw")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"add\"")) << c.ir;
  EXPECT_TRUE(has(c.ir, "kind = \"max\"")) << c.ir;
  EXPECT_TRUE(has(c.ir, "atomic_cas")) << c.ir;
}

TEST(LoweringTest, StoreConvertsValueToPointee) {
  auto c = compile(R"(
kernel k(p: *bf16, n: i32) { store(p + arange(0, 4), n); }
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "cast %n : bf16")) << c.ir;
  EXPECT_TRUE(has(c.ir, "splat %1 : tile<bf16, [4]>")) << c.ir;
}

TEST(LoweringTest, MathAndSelect) {
  auto c = compile(R"(
kernel k(p: *f32) {
    let v = load(p + arange(0, 4));
    let w = where(v > 0.0, exp(v), -v);
    let f = fma(v, w, 1.0) + pow(v, 2) + minimum(v, 0) + maximum(w, v) + abs(v);
    let s = sqrt(v) + rsqrt(v) + log(v) + log2(v) + exp2(v) + sin(v) + cos(v) + tanh(v)
            + erf(v) + floor(v) + ceil(v) + sigmoid(v);
    store(p + arange(0, 4), f + s);
}
)");
  EXPECT_COMPILES(c);
  for (const char *op :
       {"select", "exp ", "neg",  "fma", "pow", "minimum", "maximum", "abs",   "sqrt", "rsqrt",
        "log ",   "log2", "exp2", "sin", "cos", "tanh",    "erf",     "floor", "ceil", "sigmoid"})
    EXPECT_TRUE(has(c.ir, op)) << op << "\n" << c.ir;
}

TEST(LoweringTest, BitwiseShiftsAndBitcast) {
  auto c = compile(R"(
kernel k(p: *u32, f: *f32) {
    let v = load(p + arange(0, 4));
    let b = bitcast(load(f + arange(0, 4)), u32);
    store(p + arange(0, 4), ((v & 0xFF) | (b >> 3)) ^ ~(v << 1));
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "bitcast")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 255} : tile<u32, [4]>")) << c.ir;
  for (const char *op : {"and ", "or ", "xor ", "shr ", "shl ", "not "})
    EXPECT_TRUE(has(c.ir, op)) << op << "\n" << c.ir;
}

TEST(LoweringTest, PointerArithmetic) {
  auto c = compile(R"(
kernel k(p: *f32, n: i32, u: u32) {
    let q = p + n;
    let r = 4 + q;
    let s = r - u;
    store(s - 1, 1.0);
    store(p + arange(0, 4), 0.0, mask = (p + arange(0, 4)) != q);
}
)");
  EXPECT_COMPILES(c);
  // p - u negates the unsigned offset in a signed type so it moves backwards.
  EXPECT_TRUE(has(c.ir, "cast %u : i64")) << c.ir;
  EXPECT_TRUE(has(c.ir, "neg")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = -1} : i32")) << c.ir;
}

TEST(LoweringTest, AssertPrintAndStaticAssert) {
  auto c = compile(R"(
kernel k(p: *f32, n: i32, const B: i32 = 8) {
    static_assert(B % 8 == 0, "B must be a multiple of 8");
    let v = load(p + arange(0, B));
    assert(v >= 0.0, "negative input");
    assert(true);
    print("v", v, n);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "assert")) << c.ir;
  EXPECT_TRUE(has(c.ir, "message = \"negative input\"")) << c.ir;
  EXPECT_TRUE(has(c.ir, "print %v, %n {label = \"v\"}")) << c.ir;
}

TEST(LoweringTest, ModuleConstsAndLetAnnotations) {
  auto c = compile(R"(
const A = 3;
const B = A * 4 + 1;
const HALF: f32 = 0.5;
kernel k(p: *f32, q: *i64) {
    let x: i64 = B;
    let t: tile<f32, [B]> = HALF;
    store(q, x);
    store(p + arange(0, B), t);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = 13} : i64")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = 0.5} : tile<f32, [13]>")) << c.ir;
}

TEST(LoweringTest, NegativeLiteralsFitTheirDType) {
  auto c = compile(R"(
kernel k(p: *i32, q: *i8) {
    store(p, -2147483648);
    store(q, load(q) + -128);
}
)");
  EXPECT_COMPILES(c);
  EXPECT_TRUE(has(c.ir, "constant {value = -2147483648} : i32")) << c.ir;
  EXPECT_TRUE(has(c.ir, "constant {value = -128} : i8")) << c.ir;
}

TEST(LoweringTest, LocationsAreCarried) {
  auto c = compile("kernel k(p: *f32) {\n  store(p, 1.0);\n}\n");
  EXPECT_COMPILES(c);
  const ir::Kernel &k = c.kernel("k");
  bool found = false;
  for (const auto &op : k.body->ops())
    if (op->kind() == ir::OpKind::Store) {
      EXPECT_EQ(op->loc().line, 2u);
      EXPECT_EQ(op->loc().col, 3u);
      found = true;
    }
  EXPECT_TRUE(found);
}

} // namespace
