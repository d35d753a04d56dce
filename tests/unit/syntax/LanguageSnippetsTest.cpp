//===- LanguageSnippetsTest.cpp - The examples of LANGUAGE.md parse -------===//
//
// Every code example of the language contract (LANGUAGE.md v0) and of docs/language.md,
// verbatim where it is complete code. Where the contract elides code with `...`, the
// elision is filled with a statement; the syntax around it is kept as written.
//
//===----------------------------------------------------------------------===//
#include "SyntaxTestSupport.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

static void expectParses(const std::string &text) {
  Parsed p = parseText(text);
  EXPECT_TRUE(p.ok()) << text << "\n" << p.allDiags();
}

TEST(LanguageSnippets, ItemsExample) {
  Parsed p = parseText(R"(import "stdlib/softmax.kiln";          // brings its fn/kernel items into scope

const EPS = 1e-6;                      // module constant

fn silu(x) { return x * sigmoid(x); }  // device function: generic over shape/dtype, always inlined

@autotune(configs = [{BLOCK: 64, num_warps: 4}, {BLOCK: 128, num_warps: 8}], key = [n])
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
}
)");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  ASSERT_EQ(p.module->items.size(), 4u);
  const ast::FunctionItem *add = findFunction(*p.module, "add");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->attributes.size(), 1u);
  const ast::Attribute &autotune = add->attributes[0];
  EXPECT_EQ(autotune.name, "autotune");
  ASSERT_EQ(autotune.args.size(), 2u);
  EXPECT_EQ(autotune.args[0].name, "configs");
  EXPECT_EQ(sexpr(*autotune.args[0].value),
            "(list (dict (BLOCK 64) (num_warps 4)) (dict (BLOCK 128) (num_warps 8)))");
  EXPECT_EQ(autotune.args[1].name, "key");
  EXPECT_EQ(sexpr(*autotune.args[1].value), "(list n)");
  ASSERT_EQ(add->params.size(), 5u);
  EXPECT_TRUE(add->params[4].isConst);
  EXPECT_EQ(sexpr(*add->params[4].defaultValue), "1024");
  auto *store = ast::cast<ast::ExprStmt>(add->body->body[2].get());
  EXPECT_EQ(sexpr(*store->expr),
            "(call store (+ out offs) (+ (call load (+ x offs) (kw mask m)) (call load (+ y offs) "
            "(kw mask m))) (kw mask m))");
}

TEST(LanguageSnippets, AttributesOfKernels) {
  expectParses("@num_warps(4) @num_stages(3)\n"
               "kernel k(x: *f32, n: i32) { }");
}

TEST(LanguageSnippets, Statements) {
  expectParses(R"(fn body(x, e, cond, start, end, step) {
    let x = e;
    var y = e;
    y = e;
    y += e;
    for i in range(start, end, step) { y += i; }
    for i in static_range(start, end, step) { y += i; }
    while cond { y -= 1; }
    if cond { y = 1; } else { y = 2; }
    assert(cond, "msg");
    static_assert(cond, "msg");
    print("label", x);
    return e;
})");
}

TEST(LanguageSnippets, Expressions) {
  expectParses(R"(fn exprs(x, y, p, m, a, b, c, v, acc, mask, row, n) {
    let t0 = x[:, None] + x[None, :];
    let t1 = x.to(bf16);
    let t2 = bitcast(x, u32);
    let t3 = load(p, mask = m, other = 0.0);
    let t4 = sum(x, axis = 1);
    let t5 = x.to(f32) / y;
    let t6 = (a + b) % c & ~a | b ^ c << 2 >> 1;
    let t7 = a == b && a != c || !(a < b) && a <= b && a > c && a >= c;
    let t8 = -a;
    let t9 = program_id(0) + num_programs(1);
    let t10 = zeros([M, N], f32) + full([M, N], v, f32) + arange(0, 16);
    let t11 = atomic_add(p, v, mask = m) + atomic_cas(p, a, b);
    let t12 = reshape(x, [2, 8]) + trans(x) + permute(x, [1, 0]) + broadcast_to(x, [4, 4]);
    let t13 = expand_dims(x, 0) + join(a, b);
    let (lo, hi) = split(x);
    let t14 = exp(x) + exp2(x) + log(x) + log2(x) + sqrt(x) + rsqrt(x) + sin(x) + cos(x);
    let t15 = tanh(x) + erf(x) + sigmoid(x) + abs(x) + floor(x) + ceil(x) + fma(a, b, c);
    let t16 = pow(a, b) + minimum(a, b) + maximum(a, b) + where(c, a, b);
    let t17 = max(x, 0) + min(x, 1) + prod(x, 0) + argmax(x, 0) + argmin(x, 0);
    let t18 = reduce(x, 1, combine) + scan(x, 0, combine) + cumsum(x, 0) + cumprod(x, 0);
    let t19 = sort(x, 0, descending = false) + topk(x, K, 0) + argtopk(x, K, 0);
    let t20 = dot(a, b) + dot(a, b, acc);
    let t21 = sum(load(p + arange(0, n)));
    let t22 = x.sum(axis = 0);
    return t0;
})");
}

TEST(LanguageSnippets, Types) {
  expectParses("fn types(a: bool, b: i8, c: i16, d: i32, e: i64, f: u8, g: u16, h: u32, i: u64,\n"
               "         j: f16, k: bf16, l: f32, m: f64, n: f8e4m3, o: f8e5m2,\n"
               "         p: *f32, q: *bf16, r: tile<f32, [M, N]>, s: tile<bf16, [64]>) {}");
}

TEST(LanguageSnippets, Sparsity) {
  // LANGUAGE.md elides the other parameters and the loop body with `...`.
  Parsed p = parseText(R"(
kernel sparse_attn(q: *bf16, k: *bf16, v: *bf16, o: *bf16, mask: block_mask<64, 64>, n: i32) {
    for kb in blocks(mask, program_id(0)) { let s = kb; }      // visits only the non-empty blocks
}
fn sliding(qi, ki) { return abs(qi - ki) <= 256; }       // element mask -> block mask, host side
)");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  const ast::FunctionItem *k = findFunction(*p.module, "sparse_attn");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->params[4].type->kind, ast::TypeExprKind::BlockMask);
  auto *loop = ast::cast<ast::ForStmt>(k->body->body[0].get());
  EXPECT_EQ(loop->range, ast::RangeKind::Blocks);
  ASSERT_EQ(loop->bounds.size(), 2u);
  EXPECT_EQ(sexpr(*loop->bounds[1]), "(call program_id 0)");
}

TEST(LanguageSnippets, PersistentGraph) {
  Parsed p = parseText(R"(
graph decode_step(x: *bf16, w1: *bf16, w2: *bf16, h: *bf16, y: *bf16, n: i32) {
    launch rmsnorm[(1,)](x, h, n);
    launch matvec[(n / 64,)](h, w1, y, n);
}
)");
  ASSERT_TRUE(p.ok()) << p.allDiags();
  const ast::FunctionItem *g = findFunction(*p.module, "decode_step");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind, ast::ItemKind::Graph);
  auto *launch = ast::cast<ast::LaunchStmt>(g->body->body[1].get());
  EXPECT_EQ(launch->kernel, "matvec");
  ASSERT_EQ(launch->grid.size(), 1u);
  EXPECT_EQ(sexpr(*launch->grid[0]), "(/ n 64)");
  EXPECT_EQ(launch->args.size(), 4u);
}

TEST(LanguageSnippets, ProjectLanguageDecisions) {
  // Examples from docs/language.md.
  expectParses(R"(fn decisions(x, x_bf16, i: i32, N, y) {
    let a = x * 2;
    let b = x_bf16 * 0.5;
    let c = i * 0.5;
    var s = zeros([N], f32);
    s += x;
    let (lo, hi) = split(x);
    for j in range(8) { s += j; }
    for j in range(0, 8) { s += j; }
    for j in range(8, 0, -1) { s += j; }
    let d = x.to(bf16);
    let e = x.sum(axis = 0);
})");
}
