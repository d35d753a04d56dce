//===- ErrorsTest.cpp - Every diagnostic of semantic analysis -------------===//
//
// One or more programs per error code, each checking the code, the line:col it points
// at and the message text; and the recovery rules (one error per problem, poison
// values silencing follow-on errors, checking continuing after an error).
//
//===----------------------------------------------------------------------===//
#include "SemaTestUtil.h"

using namespace kiln;
using namespace kiln::test;

namespace {

//===--------------------------------------------------------------------===//
// Literals, items, attributes, kernels (E00xx, E01xx)
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0007IntegerLiteralDoesNotFitAdoptedDType) {
  auto c = compile(R"(kernel k(q: *i8) {
    store(q, load(q) + 300);
})");
  expectError(c, "E0007", 2, 24, "integer constant 300 does not fit in i8");
  auto d = compile(R"(kernel k(q: *i32) {
    let big = 3000000000;
    store(q, big);
})");
  expectError(d, "E0007", 3, 14, "integer constant 3000000000 does not fit in i32");
}

TEST(ErrorsTest, E0102DuplicateItemWithNoteAtTheOther) {
  auto c = compile(R"(fn f(x) { return x; }
const f = 3;
kernel k(p: *f32) { store(p, 1.0); })");
  expectError(c, "E0102", 2, 7, "'f' is already defined");
  ASSERT_FALSE(c.diags.empty());
  ASSERT_EQ(c.diags[0].notes.size(), 1u);
  EXPECT_EQ(c.diags[0].notes[0].loc.line, 1u);
  EXPECT_EQ(c.diags[0].notes[0].loc.col, 4u);
}

TEST(ErrorsTest, E0103DuplicateParameter) {
  auto c = compile(R"(kernel k(p: *f32, n: i32, p: *f32) { store(p, 1.0); })");
  expectError(c, "E0103", 1, 27, "parameter 'p' is declared twice");
}

TEST(ErrorsTest, E0104Attributes) {
  auto c = compile(R"(@num_warp(4)
kernel a(p: *f32) { store(p, 1.0); }
@num_warps(3)
kernel b(p: *f32) { store(p, 1.0); }
@autotune(configs = [{BLOCK: 64, TILE: 2}], key = [m])
kernel c(p: *f32, n: i32, const BLOCK: i32 = 32) { store(p, 1.0); }
@num_stages(2)
fn f(x) { return x; })");
  expectError(c, "E0104", 1, 1, "unknown attribute @num_warp");
  expectError(c, "E0104", 3, 12,
              "@num_warps must be a power of two in 1..32, got integer literal 3");
  expectError(c, "E0104", 5, 34, "'TILE' is not a const parameter of kernel c");
  expectError(c, "E0104", 5, 52, "'m' in the @autotune key is not a parameter of kernel c");
  expectError(c, "E0104", 7, 1, "attributes apply only to kernels, not to a fn");
  bool hinted = false;
  for (const auto &d : c.diags)
    hinted |= d.hint == "did you mean @num_warps?";
  EXPECT_TRUE(hinted) << c.diagText();
}

TEST(ErrorsTest, E0105KernelParameterTypes) {
  auto c = compile(R"(kernel k(p: *f32, n, t: tile<f32, [4]>, m: i32 = 3) { store(p, 1.0); })");
  expectError(c, "E0105", 1, 19, "kernel parameter 'n' needs a type");
  expectError(c, "E0105", 1, 25, "kernel parameter 't' cannot be a tile");
  expectError(c, "E0105", 1, 50, "only const parameters take a default value");
}

TEST(ErrorsTest, E0106UnknownKernelWithSuggestions) {
  SemaOptions o;
  o.kernel = "sofmax";
  auto c = compile(
      "kernel softmax(p: *f32) { store(p, 1.0); }\nkernel other(p: *f32) { store(p, 1.0); }\n", o);
  expectError(c, "E0106", 0, 0, "no kernel named 'sofmax'");
  ASSERT_EQ(c.diags.size(), 1u);
  EXPECT_TRUE(c.diags[0].loc.isCommandLine());
  EXPECT_EQ(c.diags[0].hint, "did you mean 'softmax'? kernels: other, softmax");
}

TEST(ErrorsTest, E0107DefineNamesNoConst) {
  SemaOptions o;
  o.defines = {{"BLOK", "64"}};
  auto c = compile("kernel k(p: *f32, const BLOCK: i32 = 32) { store(p, 1.0); }\n", o);
  expectError(c, "E0107", 0, 0, "-D BLOK names no const parameter of any kernel");
  EXPECT_EQ(c.diags[0].hint, "did you mean -D BLOCK=...?");
  EXPECT_TRUE(c.diags[0].loc.isCommandLine());
}

TEST(ErrorsTest, E0108BadDefineValues) {
  SemaOptions o;
  o.defines = {{"BLOCK", "abc"}};
  auto c = compile("kernel k(p: *f32, const BLOCK: i32 = 32) { store(p, 1.0); }\n", o);
  expectError(c, "E0108", 0, 0, "'abc' is not an integer, a float, true or false");
  o.defines = {{"BLOCK", "1.5"}};
  auto d = compile("kernel k(p: *f32, const BLOCK: i32 = 32) { store(p, 1.0); }\n", o);
  expectError(d, "E0108", 1, 19, "-D BLOCK=1.5 does not fit const BLOCK: i32");
  o.defines = {{"SMALL", "300"}};
  auto e = compile("kernel k(p: *f32, const SMALL: i8 = 3) { store(p, 1.0); }\n", o);
  expectError(e, "E0108", 1, 19, "value 300 is out of range for i8");
}

TEST(ErrorsTest, E0109Graphs) {
  auto d = compile("kernel k(p: *f32, m: block_mask<64, 64>) { store(p, 1.0); }\n");
  EXPECT_COMPILES(d);
  // Not requested: graphs are skipped silently.
  auto e =
      compile("kernel k(p: *f32) { store(p, 1.0); }\ngraph g(p: *f32) { launch k[(1,)](p); }\n");
  EXPECT_COMPILES(e);
}

TEST(ErrorsTest, E0408GraphBlockMasks) {
  SemaOptions o;
  o.kernel = "g";
  const std::string kernel = "kernel k(p: *f32, m: block_mask<BM, 64>, const BM: i32 = 64) { store(p, 1.0); }\n";
  // A graph's mask is five parameters, passed whole to the kernel's mask.
  auto ok = compile(kernel + "graph g(p: *f32, mask: block_mask<64, 64, n, n>, n: i32) {\n"
                             "  launch k[(mask.rows / 64,)](p, mask);\n}\n",
                    o);
  ASSERT_TRUE(ok.ok) << ok.diagText();
  ASSERT_EQ(ok.module->graphs.size(), 1u);
  const ir::Kernel &g = *ok.module->graphs.front();
  ASSERT_EQ(g.blockMasks.size(), 1u);
  EXPECT_EQ(g.blockMasks[0].firstParam, 1u);
  ASSERT_TRUE(g.blockMasks[0].extents.has_value());
  EXPECT_EQ((*g.blockMasks[0].extents)[0].param, 6); // n, after p and the mask's five
  EXPECT_EQ(g.params().size(), 7u);
  // Its block sizes must be the kernel's, which may name the kernel's consts.
  auto sizes = compile(kernel + "graph g(p: *f32, mask: block_mask<64, 64>) {\n"
                                "  launch k[(1,)](p, mask, BM = 32);\n}\n",
                       o);
  expectError(sizes, "E0408", 3, 21,
              "parameter 'm' of kernel k[BM=32] takes a block_mask<32, 64>, but 'mask' is a block_mask<64, 64>");
  // Anything else for a mask parameter, and a mask for anything else, is refused.
  auto scalar = compile(kernel + "graph g(p: *f32, n: i32) {\n  launch k[(1,)](p, n);\n}\n", o);
  expectError(scalar, "E0408", 3, 21, "argument 'm' of kernel k takes a block mask, got");
  auto pointer = compile(kernel + "graph g(p: *f32, mask: block_mask<64, 64>) {\n"
                                  "  launch k[(1,)](mask, mask);\n}\n",
                         o);
  expectError(pointer, "E0408", 3, 18, "the block mask 'mask' is not a value");
}

//===--------------------------------------------------------------------===//
// Names and bindings (E02xx)
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0200UndefinedNameWithSuggestion) {
  auto c = compile(R"(kernel k(p: *f32, count: i32) {
    store(p, cuont);
    store(p, y);
})");
  expectError(c, "E0200", 2, 14, "undefined name 'cuont'");
  expectError(c, "E0200", 3, 14, "undefined name 'y'");
  EXPECT_EQ(c.diags[0].hint, "did you mean 'count'?");
  EXPECT_EQ(c.diags[1].hint, "");
}

TEST(ErrorsTest, E0200AssignmentToUndeclaredName) {
  auto c = compile(R"(kernel k(p: *f32) {
    total = 1.0;
})");
  expectError(c, "E0200", 2, 5, "undefined name 'total'");
}

TEST(ErrorsTest, E0201Redeclaration) {
  auto c = compile(R"(kernel k(p: *f32) {
    let a = 1.0;
    let a = 2.0;
    { let a = 3.0; }
    store(p, a);
})");
  expectError(c, "E0201", 3, 9, "'a' is already declared in this scope");
  EXPECT_EQ(countCode(c, "E0201"), 1u); // the inner block may shadow
}

TEST(ErrorsTest, E0202AssignmentToImmutable) {
  auto c = compile(R"(kernel k(p: *f32, n: i32, const B: i32 = 4) {
    let a = 1.0;
    a = 2.0;
    n += 1;
    B = 3;
    for i in range(n) { i = 0; }
})");
  expectError(c, "E0202", 3, 5, "cannot assign to let binding 'a'");
  expectError(c, "E0202", 4, 5, "cannot assign to parameter 'n'");
  expectError(c, "E0202", 5, 5, "cannot assign to const 'B'");
  expectError(c, "E0202", 6, 25, "cannot assign to loop variable 'i'");
}

TEST(ErrorsTest, E0203VarTypeChange) {
  auto c = compile(R"(kernel k(p: *f32) {
    var s = 0.0;
    s += load(p + arange(0, 8));
    var i = 0;
    i = 1.5;
    var h = load(p).to(bf16);
    h = 1.0 + load(p);
})");
  expectError(c, "E0203", 3, 5,
              "assignment would change the type of var 's' from f32 to tile<f32, [8]>");
  expectError(c, "E0203", 5, 5, "from i32 to float literal 1.5");
  expectError(c, "E0203", 7, 5, "from bf16 to f32");
}

TEST(ErrorsTest, E0204NotAValue) {
  auto c = compile(R"(fn f(x) { return x; }
kernel k(p: *f32) {
    let t = f32;
    var g = f;
    let h = k;
    let s = sum;
})");
  expectError(c, "E0204", 3, 13, "'f32' is a type, not a value");
  expectError(c, "E0204", 4, 13, "'f' is a fn, not a value");
  expectError(c, "E0204", 5, 13, "'k' is a kernel, not a value");
  expectError(c, "E0204", 6, 13, "'sum' is a builtin function, not a value");
}

TEST(ErrorsTest, E0205TupleArity) {
  auto c = compile(R"(kernel k(p: *f32) {
    let v = load(p + arange(0, 8));
    let (a, b, c) = split(join(v, v));
    let both = split(join(v, v));
    let (x, y) = v;
})");
  expectError(c, "E0205", 3, 21, "the pattern binds 3 names but the value is 2 values");
  expectError(c, "E0205", 4, 16, "this expression produces 2 values");
  expectError(c, "E0205", 5, 18, "the pattern binds 2 names but the value is tile<f32, [8]>");
}

//===--------------------------------------------------------------------===//
// Types and shapes (E03xx)
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0300TypeMismatch) {
  auto c = compile(R"(kernel k(p: *f32, q: *i32) {
    let i = load(q + arange(0, 128));
    let e = exp(i);
    let r = arange(0, 16);
    let d = dot(load(p + r[:, None] * 16 + r[None, :]), load(q + r[:, None] * 16 + r[None, :]));
    let x: i32 = load(p);
    let b = true + false;
})");
  expectError(c, "E0300", 3, 17, "exp needs a float operand, got tile<i32, [128]>");
  EXPECT_EQ(c.diags[0].hint, "use .to(f32)");
  expectError(c, "E0300", 5, 13, "dot cannot multiply tile<f32, [16, 16]> by tile<i32, [16, 16]>");
  expectError(c, "E0300", 6, 18, "'x' has type i32 but the value is f32");
  expectError(c, "E0300", 7, 18, "'+' needs integer or float operands");
}

TEST(ErrorsTest, E0301ShapeMismatch) {
  auto c = compile(R"(kernel k(p: *f32) {
    let a = load(p + arange(0, 128));
    let b = a + zeros([64], f32);
    let d = dot(zeros([4, 8], f32), zeros([4, 8], f32));
    store(p + arange(0, 4), zeros([8], f32));
})");
  expectError(c, "E0301", 3, 15, "cannot broadcast shapes [128] and [64] for '+'");
  expectError(c, "E0301", 4, 13, "dot inner dimensions differ: [4, 8] x [4, 8]");
  expectError(c, "E0301", 5, 29, "does not broadcast to the pointers' shape [4]");
}

TEST(ErrorsTest, E0302NotBool) {
  auto c = compile(R"(kernel k(p: *f32, n: i32) {
    if n { store(p, 1.0); }
    let m = n && true;
    while arange(0, 4) < n { }
    store(p, 1.0, mask = n);
})");
  expectError(c, "E0302", 2, 8, "the condition of if must be a bool scalar, got i32");
  expectError(c, "E0302", 3, 13, "operands of '&&' must be bool, got i32");
  expectError(c, "E0302", 4, 11,
              "the condition of while must be a bool scalar, got tile<bool, [4]>");
  expectError(c, "E0302", 5, 19, "the mask of store must be bool, got i32");
}

TEST(ErrorsTest, E0303NotConstant) {
  auto c = compile(R"(kernel k(p: *f32, n: i32, const BLOCK: i32) {
    let z = zeros([n], f32);
    let s = sum(load(p + arange(0, 4)), axis = n);
    static_assert(n > 0, "n must be positive");
})");
  expectError(c, "E0303", 1, 27, "const BLOCK has no value; pass -D BLOCK=...");
  expectError(c, "E0303", 2, 20,
              "every element of the shape of zeros must be a compile-time constant");
  expectError(c, "E0303", 3, 41, "the axis of sum must be a compile-time constant");
  expectError(c, "E0303", 4, 19, "the condition of static_assert must be a compile-time constant");
  auto d = compile(R"(const N = program_id(0);
kernel k(p: *f32) { store(p, 1.0); })");
  expectError(d, "E0303", 1, 11, "const 'N' must be a compile-time constant");
}

TEST(ErrorsTest, E0304InvalidShape) {
  auto c = compile(R"(kernel k(p: *f32) {
    let z = zeros([0, 4], f32);
    let big = zeros([8192, 4096], f32);
    let r = arange(0, 4096);
    let b = r[:, None] + arange(0, 8192)[None, :];
})");
  expectError(c, "E0304", 2, 19, "tile dimensions must be positive, got [0, 4]");
  expectError(c, "E0304", 3, 21, "tile [8192, 4096] has more than 2^24 elements");
  expectError(c, "E0304", 5, 24, "tile [4096, 8192] has more than 2^24 elements");
}

TEST(ErrorsTest, E0305InvalidCast) {
  auto c = compile(R"(kernel k(p: *f32) {
    let b = bitcast(load(p), f16);
    let q = p.to(i64);
})");
  expectError(c, "E0305", 2, 13, "cannot bitcast f32 to f16");
  expectError(c, "E0305", 3, 13, "cannot convert pointers (*f32) to i64");
}

TEST(ErrorsTest, E0306UnknownType) {
  auto c = compile(R"(kernel k(p: *flaot) {
    let x: i33 = 1;
    let z = zeros([4], f23);
})");
  expectError(c, "E0306", 1, 14, "unknown type 'flaot'");
  expectError(c, "E0306", 2, 12, "unknown type 'i33'");
  expectError(c, "E0306", 3, 24, "unknown type 'f23'");
  bool hinted = false;
  for (const auto &d : c.diags)
    hinted |= d.loc.line == 2 && d.hint == "did you mean 'i32'?";
  EXPECT_TRUE(hinted) << c.diagText();
}

TEST(ErrorsTest, E0307PointerArithmetic) {
  auto c = compile(R"(kernel k(p: *f32, q: *f32) {
    let a = p * 2;
    let b = p - q;
    let c = p + 1.5;
})");
  expectError(c, "E0307", 2, 15, "invalid pointer arithmetic: *f32 * integer literal 2");
  expectError(c, "E0307", 3, 15, "invalid pointer arithmetic: *f32 - *f32");
  expectError(c, "E0307", 4, 15, "a pointer offset must be an integer, got float literal 1.5");
}

TEST(ErrorsTest, E0308ConstantEvaluation) {
  auto c = compile(R"(const Z = 0;
kernel k(p: *f32) {
    let a = zeros([4 / Z], f32);
    let b = 9223372036854775807 + 1;
})");
  expectError(c, "E0308", 3, 22, "division by zero in a constant expression");
  expectError(c, "E0308", 4, 33, "integer overflow in a constant expression");
}

//===--------------------------------------------------------------------===//
// Calls (E04xx)
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0400UnknownFunction) {
  auto c = compile(R"(kernel k(p: *f32) {
    let v = load(p);
    let a = exq(v);
    let b = v.sqr();
    let n = 3;
    let c = n(v);
})");
  expectError(c, "E0400", 3, 13, "unknown function 'exq'");
  EXPECT_EQ(c.diags[0].hint, "did you mean 'exp'?");
  expectError(c, "E0400", 4, 15, "unknown method 'sqr'");
  expectError(c, "E0400", 6, 13, "'n' is not a function");
}

TEST(ErrorsTest, E0401ArgumentCount) {
  auto c = compile(R"(fn f(a, b) { return a + b; }
kernel k(p: *f32) {
    let v = exp(1.0, 2.0);
    let w = f(1.0);
    let x = cumsum(zeros([4, 4], f32));
    let y = load(mask = p < p, p);
})");
  expectError(c, "E0401", 3, 22, "exp takes at most 1 argument, got 2");
  expectError(c, "E0401", 4, 13, "f is missing argument 'b'");
  expectError(c, "E0401", 5, 13, "cumsum needs an axis for a tile of rank 2");
  expectError(c, "E0401", 6, 32, "a positional argument cannot follow a keyword argument");
}

TEST(ErrorsTest, E0402UnknownKeyword) {
  auto c = compile(R"(kernel k(p: *f32) {
    let v = load(p, msk = p < p);
})");
  expectError(c, "E0402", 2, 21, "load has no parameter named 'msk'");
  EXPECT_EQ(c.diags[0].hint, "did you mean 'mask'?");
}

TEST(ErrorsTest, E0403DuplicateArgument) {
  auto c = compile(R"(kernel k(p: *f32) {
    store(p, 1.0, value = 2.0);
})");
  expectError(c, "E0403", 2, 19, "argument 'value' of store is given twice");
}

TEST(ErrorsTest, E0404InvalidArgument) {
  auto c = compile(R"(kernel k(p: *f32) {
    let v = load(p + arange(0, 8));
    let a = sum(v, axis = 1);
    let b = reshape(v, [3, 3]);
    let c = v[:, :, None];
    let d = arange(4, 4);
    let e = topk(v, 9);
    let f = program_id(3);
    let g = permute(reshape(v, [2, 4]), [0, 0]);
})");
  expectError(c, "E0404", 3, 20, "axis 1 is out of range for a tile of rank 1");
  expectError(c, "E0404", 4, 24,
              "cannot reshape tile<f32, [8]> (8 elements) to [3, 3] (9 elements)");
  expectError(c, "E0404", 5, 13, "the index has 2 ':' but the value tile<f32, [8]> has rank 1");
  expectError(c, "E0404", 6, 13, "arange needs end > start, got arange(4, 4)");
  expectError(c, "E0404", 7, 21, "k = 9 is out of range");
  expectError(c, "E0404", 8, 24, "program_id axis must be 0, 1 or 2, got 3");
  expectError(c, "E0404", 9, 41, "permute needs a permutation of the 2 axes");
}

TEST(ErrorsTest, E0405RecursiveCall) {
  auto c = compile(R"(fn even(n) { return odd(n); }
fn odd(n) { return even(n); }
kernel k(p: *i32) { store(p, even(3)); })");
  expectError(c, "E0405", 2, 20, "recursive call of fn 'even' (even -> odd -> even)");
  EXPECT_EQ(c.diags.size(), 1u) << c.diagText();
}

TEST(ErrorsTest, E0406StringMisuse) {
  auto c = compile(R"(kernel k(p: *f32) {
    let s = "text";
})");
  expectError(c, "E0406", 2, 13,
              "a string is only allowed in import, assert, static_assert and print");
}

TEST(ErrorsTest, E0407CallingAKernel) {
  auto c = compile(R"(kernel helper(p: *f32) { store(p, 1.0); }
kernel k(p: *f32) {
    helper(p);
})");
  expectError(c, "E0407", 3, 5, "'helper' is a kernel and cannot be called");
}

//===--------------------------------------------------------------------===//
// Statements (E05xx)
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0500ReturnInKernel) {
  auto c = compile(R"(kernel k(p: *f32) {
    store(p, 1.0);
    return 1;
})");
  expectError(c, "E0500", 3, 5, "kernels return no value");
}

// A bare return inside a kernel's loop ends the loop and the program; with a value it
// is E0500 there as anywhere in a kernel.
TEST(ErrorsTest, ReturnInKernelLoop) {
  auto ok = compile(R"(kernel k(p: *f32) {
    for i in range(0, 4) {
        return;
    }
})");
  EXPECT_TRUE(ok.ok) << ok.diagText();
  auto c = compile(R"(kernel k(p: *f32) {
    for i in range(0, 4) {
        return 1;
    }
})");
  expectError(c, "E0500", 3, 9, "kernels return no value");
}

TEST(ErrorsTest, E0501ReturnNotLast) {
  auto c = compile(R"(fn f(x) {
    if x > 0 { return x; }
    return -x;
}
kernel k(p: *i32) { store(p, f(3)); })");
  expectError(c, "E0501", 2, 16, "'return' must be the last statement of a fn body");
  EXPECT_EQ(c.diags.size(), 1u) << c.diagText(); // the call is not blamed again
}

TEST(ErrorsTest, E0502StaticAssertFailed) {
  auto c = compile(R"(kernel k(p: *f32, const B: i32 = 48) {
    static_assert(B % 32 == 0, "B must be a multiple of 32");
})");
  expectError(c, "E0502", 2, 5, "static_assert failed: B must be a multiple of 32");
}

TEST(ErrorsTest, E0503StaticRangeBounds) {
  auto c = compile(R"(kernel k(p: *f32, n: i32) {
    for i in static_range(0, n) { }
    for j in static_range(0, 5000) { }
})");
  expectError(c, "E0503", 2, 30, "static_range bounds must be compile-time constants");
  expectError(c, "E0503", 3, 14, "static_range would unroll 5000 iterations; at most 4096");
}

TEST(ErrorsTest, E0504LoopStepZero) {
  auto c = compile(R"(kernel k(p: *f32, n: i32) {
    for i in range(0, n, 0) { }
    for j in static_range(0, 4, 2 - 2) { }
})");
  expectError(c, "E0504", 2, 26, "the step of the loop is 0");
  expectError(c, "E0504", 3, 33, "the step of the loop is 0");
}

TEST(ErrorsTest, E0505VoidValue) {
  auto c = compile(R"(fn nothing(p) { store(p, 1.0); }
kernel k(p: *f32) {
    let a = nothing(p);
    let b = store(p, 2.0) + 1;
})");
  expectError(c, "E0505", 3, 13, "this call produces no value");
  expectError(c, "E0505", 4, 13, "this call produces no value");
}

TEST(ErrorsTest, E0506LaunchOutsideGraph) {
  auto c = compile(R"(kernel a(p: *f32) { store(p, 1.0); }
kernel k(p: *f32) {
    launch a[(1,)](p);
})");
  expectError(c, "E0506", 3, 5, "'launch' is only allowed in a graph, not in a kernel");
}

//===--------------------------------------------------------------------===//
// Limits and recovery
//===--------------------------------------------------------------------===//

TEST(ErrorsTest, E0003CallDepthLimit) {
  std::string src;
  for (int i = 0; i < 140; ++i)
    src += "fn f" + std::to_string(i) + "(x) { return f" + std::to_string(i + 1) + "(x); }\n";
  src += "fn f140(x) { return x; }\nkernel k(p: *f32) { store(p, f0(1.0)); }\n";
  auto c = compile(src);
  expectError(c, "E0003", 128, 21, "fn calls nest more than 128 deep");
}

TEST(ErrorsTest, E0003ExpansionBudget) {
  // Each level doubles the work: 2^21 inlined additions exceed the op budget.
  std::string src = "fn f0(x) { return x + 1.0; }\n";
  for (int i = 1; i <= 21; ++i)
    src += "fn f" + std::to_string(i) + "(x) { return f" + std::to_string(i - 1) + "(f" +
           std::to_string(i - 1) + "(x)); }\n";
  src += "kernel k(p: *f32) {\n  store(p, f21(load(p)));\n}\n";
  auto c = compile(src);
  expectError(c, "E0003", 23, 8, "kernel k grows beyond 1000000 operations");
}

TEST(ErrorsTest, E0004NestingAcrossInlinedFnsIsBounded) {
  // Each fn nests its call 300 operators deep: inlined, the nesting multiplies.
  std::string src;
  for (int i = 0; i < 40; ++i) {
    src += "fn f" + std::to_string(i) + "(v) { return f" + std::to_string(i + 1) + "(v)";
    for (int j = 0; j < 300; ++j)
      src += " + v";
    src += "; }\n";
  }
  src += "fn f40(v) { return v; }\nkernel k(p: *f32) { store(p, f0(load(p))); }\n";
  auto c = compile(src);
  EXPECT_EQ(countCode(c, "E0004"), 1u) << c.diagText();
  expectError(c, "E0004", 14, 20, "nest more than 4000 levels deep once fns are inlined");
}

TEST(ErrorsTest, E0503HugeStaticRangeDoesNotWrap) {
  auto c = compile(R"(kernel k(p: *f32) {
    for i in static_range(-9223372036854775807, 9223372036854775807) { }
})");
  expectError(c, "E0503", 2, 14, "static_range would unroll 18446744073709551614 iterations");
}

TEST(ErrorsTest, PoisonSilencesFollowOnErrors) {
  auto c = compile(R"(kernel k(p: *f32) {
    let a = undefined_thing;
    let b = a + 1;
    let c = exp(b);
    store(p, c);
    var s = a;
    s += 1.0;
})");
  EXPECT_EQ(c.diags.size(), 1u) << c.diagText();
  expectError(c, "E0200", 2, 13, "undefined name 'undefined_thing'");
}

TEST(ErrorsTest, CheckingContinuesAcrossStatementsAndKernels) {
  auto c = compile(R"(kernel a(p: *f32) {
    let x = y1;
    let z = exp(arange(0, 4));
}
kernel b(p: *f32) {
    store(p, y2);
}
kernel ok(p: *f32) { store(p, 1.0); })");
  expectError(c, "E0200", 2, 13, "undefined name 'y1'");
  expectError(c, "E0300", 3, 17, "exp needs a float operand");
  expectError(c, "E0200", 6, 14, "undefined name 'y2'");
  // The kernels with errors are dropped; the good one is still lowered.
  ASSERT_EQ(c.module->kernels.size(), 1u);
  EXPECT_EQ(c.module->kernels[0]->name, "ok");
}

TEST(ErrorsTest, OneReportPerProblemAcrossInstantiationsAndUnrolling) {
  auto c = compile(R"(fn bad(x) { return x + nope; }
kernel k(p: *f32) {
    store(p, bad(1.0));
    store(p, bad(2.0));
    for i in static_range(0, 8) { store(p + i, missing); }
})");
  EXPECT_EQ(countCode(c, "E0200"), 2u) << c.diagText();
}

TEST(ErrorsTest, UncalledGenericFnIsNotChecked) {
  auto c = compile(R"(fn unused(x) { return x + not_defined; }
kernel k(p: *f32) { store(p, 1.0); })");
  EXPECT_COMPILES(c);
}

TEST(ErrorsTest, CombinerMustBePureAndReturnTheDType) {
  auto c = compile(R"(fn noisy(a, b) { print("a", a); return a + b; }
fn widen(a, b) { return (a + b).to(f32); }
kernel k(p: *f16) {
    let v = load(p + arange(0, 4));
    let x = reduce(v, 0, noisy);
    let y = reduce(v, 0, widen);
})");
  expectError(c, "E0404", 1, 18, "a reduce/scan combine fn cannot print");
  expectError(c, "E0300", 6, 26, "the combine fn 'widen' must return f16");
}

TEST(ErrorsTest, ModuleConstCycle) {
  auto c = compile(R"(const A = B + 1;
const B = A * 2;
kernel k(p: *f32) { store(p, 1.0); })");
  expectError(c, "E0303", 1, 7, "const 'A' depends on itself");
}

} // namespace
