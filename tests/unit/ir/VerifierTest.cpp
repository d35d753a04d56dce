//===- VerifierTest.cpp - Local op rules and whole-module invariants -------===//
//
// Local rules are exercised through .tir snippets: the parser runs verifyOpLocal on
// every op and reports a violation as E0700 at the op's text. Region, terminator and
// kernel rules pass the parser and are caught by verifyModule (E0701). Dominance
// cannot be broken in .tir text (names resolve only to visible values), so those cases
// are built by hand.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::ir::test;

namespace {

/// Wraps `ops` in a kernel with some ready-made values; `ops` starts on line 9.
std::string kernelWith(const std::string &ops, const std::string &params = "",
                       const std::string &attrs = "num_warps = 4") {
  return "kernel @t(%p: *f32, %n: i32, %f: f32, %b: bool, %l: i64" + params +
         ") attributes {" + attrs + "} {\n"
         "  %t = splat %f : tile<f32, [4]>\n"
         "  %t2 = splat %f : tile<f32, [2, 4]>\n"
         "  %i = splat %n : tile<i32, [4]>\n"
         "  %m = splat %b : tile<bool, [4]>\n"
         "  %ps = splat %p : tile<*f32, [4]>\n"
         "  %h = cast %t : tile<f16, [4]>\n"
         "  %c1 = constant {value = 1} : i32\n" +
         ops + "\n  return\n}\n";
}

struct Case {
  const char *ops;
  const char *message; ///< expected to be contained in the first diagnostic
};

TEST(VerifyOpLocal, ValidSnippetsPass) {
  Parsed p = parseText(kernelWith("  %x = add %t, %t : tile<f32, [4]>\n"
                                  "  %y = exp %h : tile<f16, [4]>\n"
                                  "  %z = cmp %ps, %ps {pred = \"eq\"} : tile<bool, [4]>\n"
                                  "  %w = select %m, %ps, %ps : tile<*f32, [4]>\n"
                                  "  %s = reduce %t2 {axis = 0, kind = \"max\"} : tile<f32, [4]>\n"
                                  "  %c = cast %m : tile<f8e4m3, [4]>\n"
                                  "  %e = expand_dims %t {axis = 1} : tile<f32, [4, 1]>\n"
                                  "  %q = bitcast %i : tile<f32, [4]>"));
  ASSERT_TRUE(p.module) << p.first();
  EXPECT_TRUE(verify(*p.module).empty());
}

TEST(VerifyOpLocal, MemoryOptionsPass) {
  // Bitwise atomics on integers, every sem and scope, the cache hints of load and store.
  Parsed p = parseText(kernelWith(
      "  %qs = splat %q : tile<*u16, [4]>\n"
      "  %v = cast %i : tile<u16, [4]>\n"
      "  %a = atomic_rmw %qs, %v {kind = \"and\", scope = \"gpu\", sem = \"acq_rel\"} : tile<u16, [4]>\n"
      "  %o = atomic_rmw %qs, %v, %m {kind = \"or\", scope = \"cta\", sem = \"acquire\"} : tile<u16, [4]>\n"
      "  %x = atomic_rmw %qs, %v {kind = \"xor\", scope = \"sys\", sem = \"release\"} : tile<u16, [4]>\n"
      "  %c = atomic_cas %qs, %v, %v {sem = \"relaxed\"} : tile<u16, [4]>\n"
      "  %ld = load %ps, %m, %t {cache_modifier = \"cv\", eviction_policy = \"evict_normal\"} : tile<f32, [4]>\n"
      "  %ld2 = load %p {cache_modifier = \"ca\"} : f32\n"
      "  store %ps, %ld {eviction_policy = \"evict_last\"}",
      ", %q: *u16"));
  ASSERT_TRUE(p.module) << p.first();
  EXPECT_TRUE(verify(*p.module).empty());
}

TEST(VerifyOpLocal, RejectsEachKindOfInvalidOp) {
  const Case cases[] = {
      // arity
      {"  %x = add %t : tile<f32, [4]>", "'add' op expects 2 operands, got 1"},
      {"  %x, %y = add %t, %t : tile<f32, [4]>, tile<f32, [4]>", "'add' op expects 1 results, got 2"},
      {"  %x = store %ps, %t : f32", "'store' op expects 0 results, got 1"},
      {"  %x = add %t, %t : tile<f32, [4]> {\n    yield\n  }", "'add' op expects 0 regions, got 1"},
      {"  %x = load %ps, %m, %t, %t : tile<f32, [4]>", "'load' op expects 1 to 3 operands, got 4"},
      // elementwise
      {"  %x = add %t, %i : tile<f32, [4]>",
       "'add' op operand types differ: tile<f32, [4]> and tile<i32, [4]>"},
      {"  %x = add %t, %t : tile<f32, [8]>",
       "'add' op result type is tile<f32, [8]>; expected tile<f32, [4]>"},
      {"  %x = mul %m, %m : tile<bool, [4]>",
       "'mul' op operands must be integers or floats, got tile<bool, [4]>"},
      {"  %x = maximum %ps, %ps : tile<*f32, [4]>", "'maximum' op operands must not be pointers"},
      {"  %x = exp %i : tile<i32, [4]>", "'exp' op operands must be floats, got tile<i32, [4]>"},
      {"  %x = fma %i, %i, %i : tile<i32, [4]>", "'fma' op operands must be floats"},
      {"  %x = shl %t, %t : tile<f32, [4]>", "'shl' op operands must be integers"},
      {"  %x = shr %m, %m : tile<bool, [4]>", "'shr' op operands must be integers"},
      {"  %x = xor %t, %t : tile<f32, [4]>", "'xor' op operands must be integers or bool"},
      {"  %x = ptr_add %ps, %t : tile<*f32, [4]>", "'ptr_add' op offset must be integers"},
      {"  %x = ptr_add %p, %i : *f32", "'ptr_add' op offset shape of tile<i32, [4]> differs"},
      {"  %x = ptr_add %i, %i : tile<i32, [4]>", "'ptr_add' op first operand must be pointers"},
      {"  %x = cmp %t, %t {pred = \"lq\"} : tile<bool, [4]>",
       "'cmp' op attribute 'pred' is \"lq\"; expected one of eq, ne, lt, le, gt, ge"},
      {"  %x = cmp %t, %t : tile<bool, [4]>", "'cmp' op requires attribute 'pred'"},
      {"  %x = cmp %t, %t {pred = 1} : tile<bool, [4]>",
       "'cmp' op attribute 'pred' must be a string"},
      {"  %x = cmp %t, %t {pred = \"lt\"} : tile<f32, [4]>",
       "'cmp' op result type is tile<f32, [4]>; expected tile<bool, [4]>"},
      {"  %x = select %i, %t, %t : tile<f32, [4]>",
       "'select' op condition tile<i32, [4]> must be bool"},
      {"  %x = select %m, %t, %i : tile<f32, [4]>", "'select' op operand types differ"},
      // constants and geometry
      {"  %x = constant {value = 300} : i8", "'constant' op value 300 is out of range for i8"},
      {"  %x = constant {value = 2} : bool", "'constant' op value 2 is out of range for bool"},
      {"  %x = constant {value = 0.1} : f16", "'constant' op value 0.1 is not representable in f16"},
      {"  %x = constant {value = inf} : f8e4m3", "value inf is not representable in f8e4m3"},
      {"  %x = constant {value = 1} : f32",
       "'constant' op attribute 'value' of a f32 constant must be a float"},
      {"  %x = constant {value = 1.0} : i32", "attribute 'value' of a i32 constant must be an integer"},
      {"  %x = constant {value = 0} : *f32", "'constant' op cannot have pointer type *f32"},
      {"  %x = constant : i32", "'constant' op requires attribute 'value'"},
      {"  %x = program_id {axis = 3} : i32", "'program_id' op axis 3 is not 0, 1 or 2"},
      {"  %x = num_programs {axis = 0} : i64", "'num_programs' op result type is i64; expected i32"},
      {"  %x = arange {end = 4, start = 4} : tile<i32, [1]>",
       "'arange' op start 4 must be less than end 4"},
      {"  %x = arange {end = 8, start = 0} : tile<i32, [4]>",
       "'arange' op result type is tile<i32, [4]>; expected tile<i32, [8]>"},
      {"  %x = arange {end = 4294967296, start = 0} : tile<i32, [4]>",
       "'arange' op start and end must fit in i32"},
      {"  %x = arange {start = 0} : tile<i32, [4]>", "'arange' op requires attribute 'end'"},
      // shapes
      {"  %x = splat %t : tile<f32, [2, 4]>", "'splat' op operand must be a scalar"},
      {"  %x = splat %n : tile<f32, [4]>",
       "'splat' op result type tile<f32, [4]> does not have element type i32"},
      {"  %x = broadcast %t : tile<f32, [2, 4]>", "'broadcast' op cannot broadcast tile<f32, [4]>"},
      {"  %x = broadcast %t2 : tile<f32, [2, 8]>", "dimension 1 is neither equal nor 1"},
      {"  %x = expand_dims %t {axis = 2} : tile<f32, [4, 1]>",
       "'expand_dims' op axis 2 is out of range for inserting into rank 1"},
      {"  %x = expand_dims %t {axis = 0} : tile<f32, [4, 1]>",
       "'expand_dims' op result type is tile<f32, [4, 1]>; expected tile<f32, [1, 4]>"},
      {"  %x = reshape %t2 : tile<f32, [4, 4]>", "'reshape' op cannot reshape"},
      {"  %x = reshape %t2 : tile<i32, [8]>", "(element types differ)"},
      {"  %x = permute %t2 {perm = [0, 0]} : tile<f32, [2, 4]>",
       "'permute' op perm [0, 0] is not a permutation of 0..1"},
      {"  %x = permute %t2 {perm = [0]} : tile<f32, [2, 4]>", "'permute' op perm has 1 entries for rank 2"},
      {"  %x = permute %t2 {perm = [1, 0]} : tile<f32, [2, 4]>",
       "result type is tile<f32, [2, 4]>; expected tile<f32, [4, 2]>"},
      {"  %x = permute %t2 {perm = 1} : tile<f32, [2, 4]>",
       "attribute 'perm' must be an integer list"},
      {"  %x = join %t, %i : tile<f32, [4, 2]>", "'join' op operand types differ"},
      {"  %x = join %t, %t : tile<f32, [2, 4]>", "expected tile<f32, [4, 2]>"},
      {"  %x, %y = split %t : f32, f32", "'split' op operand tile<f32, [4]> must have a trailing"},
      // conversions
      {"  %x = cast %t : tile<f16, [8]>", "'cast' op cannot convert tile<f32, [4]> to tile<f16, [8]> (shapes differ)"},
      {"  %x = cast %t : tile<*f16, [4]>", "'cast' op result must not be a pointer"},
      {"  %x = cast %ps : tile<i64, [4]>", "'cast' op operand must not be a pointer"},
      {"  %x = bitcast %t : tile<f16, [4]>", "'bitcast' op cannot bitcast tile<f32, [4]> to tile<f16, [4]> (widths differ)"},
      // memory
      {"  %x = load %t : tile<f32, [4]>", "'load' op first operand must be pointers, got tile<f32, [4]>"},
      {"  %x = load %ps, %i : tile<f32, [4]>", "'load' op mask has type tile<i32, [4]>; expected tile<bool, [4]>"},
      {"  %x = load %ps, %m, %i : tile<f32, [4]>", "'load' op other has type tile<i32, [4]>; expected tile<f32, [4]>"},
      {"  %x = load %ps : tile<f16, [4]>", "'load' op result type is tile<f16, [4]>; expected tile<f32, [4]>"},
      {"  store %ps, %i", "'store' op operand 1 has type tile<i32, [4]>; expected tile<f32, [4]>"},
      {"  store %ps, %t, %t", "'store' op mask has type tile<f32, [4]>"},
      {"  %x = atomic_rmw %ps, %t {kind = \"sub\"} : tile<f32, [4]>",
       "'atomic_rmw' op attribute 'kind' is \"sub\"; expected one of add, max, min, xchg, and, or, xor"},
      {"  %x = atomic_rmw %ps, %t {kind = \"or\"} : tile<f32, [4]>",
       "'atomic_rmw' op with kind \"or\" needs integer memory, got tile<*f32, [4]>"},
      {"  %x = atomic_rmw %ps, %t {kind = \"add\", sem = \"seq_cst\"} : tile<f32, [4]>",
       "'atomic_rmw' op attribute 'sem' is \"seq_cst\"; expected one of acq_rel, acquire, release, relaxed"},
      {"  %x = atomic_rmw %ps, %t {kind = \"add\", scope = 1} : tile<f32, [4]>",
       "'atomic_rmw' op attribute 'scope' must be a string"},
      {"  %x = atomic_cas %ps, %t, %t {scope = \"device\"} : tile<f32, [4]>",
       "'atomic_cas' op attribute 'scope' is \"device\"; expected one of gpu, cta, sys"},
      {"  %x = atomic_cas %ps, %t, %i : tile<f32, [4]>", "'atomic_cas' op operand 2 has type tile<i32, [4]>"},
      {"  %x = load %ps {cache_modifier = \".cg\"} : tile<f32, [4]>",
       "'load' op attribute 'cache_modifier' is \".cg\"; expected one of ca, cg, cv"},
      {"  %x = load %ps {eviction_policy = \"evict_unchanged\"} : tile<f32, [4]>",
       "'load' op attribute 'eviction_policy' is \"evict_unchanged\"; expected one of evict_first, "
       "evict_last, evict_normal"},
      {"  store %ps, %t {eviction_policy = \"last\"}",
       "'store' op attribute 'eviction_policy' is \"last\"; expected one of evict_first"},
      // reductions, sorting, dot
      {"  %x = reduce %t {axis = 1, kind = \"sum\"} : f32", "'reduce' op axis 1 is out of range for rank 1"},
      {"  %x = reduce %t {axis = 0} : f32", "'reduce' op requires attribute 'kind'"},
      {"  %x = reduce %t {axis = \"0\", kind = \"sum\"} : f32",
       "'reduce' op attribute 'axis' must be an integer"},
      {"  %x = reduce %t {axis = 0, kind = \"mean\"} : f32",
       "attribute 'kind' is \"mean\"; expected one of sum, prod, max, min, custom"},
      {"  %x = reduce %t {axis = 0, kind = \"custom\"} : f32",
       "'reduce' op with kind \"custom\" needs a combiner region"},
      {"  %x = reduce %t {axis = 0, kind = \"sum\"} : f32 {\n  ^(%a: f32, %b2: f32):\n    yield %a\n  }",
       "'reduce' op with kind \"sum\" must not have a region"},
      {"  %x = reduce %t2 {axis = 0, kind = \"sum\"} : tile<f32, [2]>",
       "'reduce' op result type is tile<f32, [2]>; expected tile<f32, [4]>"},
      {"  %x = scan %t {axis = 0, kind = \"max\"} : tile<f32, [4]>",
       "'scan' op attribute 'kind' is \"max\"; expected one of sum, prod, custom"},
      {"  %x = argmax %t {axis = 0} : f32", "'argmax' op result type is f32; expected i32"},
      {"  %x = sort %t {axis = 0} : tile<f32, [4]>", "'sort' op requires attribute 'descending'"},
      {"  %x = sort %t {axis = 0, descending = 1} : tile<f32, [4]>",
       "'sort' op attribute 'descending' must be a bool"},
      {"  %x = topk %t {axis = 0, k = 9} : tile<f32, [9]>", "'topk' op k = 9 is not in 1..4"},
      {"  %x = argtopk %t {axis = 0, k = 2} : tile<f32, [2]>",
       "'argtopk' op result type is tile<f32, [2]>; expected tile<i32, [2]>"},
      {"  %x = dot %t, %t : tile<f32, [4, 4]>", "'dot' op operands must be rank-2 tiles"},
      {"  %x = dot %t2, %t2 : tile<f32, [2, 4]>", "'dot' op inner dimensions differ"},
      {"  %y = reshape %i : tile<i32, [4, 1]>\n  %x = dot %t2, %y : tile<f32, [2, 1]>",
       "'dot' op operands must be both floats or both integers"},
      {"  %y = reshape %t : tile<f32, [4, 1]>\n  %x = dot %t2, %y : tile<f16, [2, 1]>",
       "'dot' op result type is tile<f16, [2, 1]>; expected tile<f32, [2, 1]>"},
      {"  %y = reshape %t : tile<f32, [4, 1]>\n  %x = dot %t2, %y, %t2 : tile<f32, [2, 4]>",
       "'dot' op accumulator tile<f32, [2, 4]> must be a float tile of shape [2, 1]"},
      // control flow (local parts)
      {"  for %n, %l, %c1 {\n  ^(%k: i32):\n    yield\n  }",
       "'for' op upper bound has type i64; expected i32 like the lower bound"},
      {"  for %f, %f, %f {\n  ^(%k: f32):\n    yield\n  }",
       "'for' op lower bound must be an integer scalar, got f32"},
      {"  %x = for %n, %n, %c1, %f : i32 {\n  ^(%k: i32, %a: i32):\n    yield %a\n  }",
       "'for' op result 0 has type i32 but its initial value has type f32"},
      {"  %x = for %n, %n, %c1 : i32 {\n  ^(%k: i32):\n    yield\n  }",
       "'for' op has 0 carried values but 1 results"},
      {"  if %n {\n    yield\n  } {\n    yield\n  }", "'if' op condition must be a bool scalar, got i32"},
      {"  if %b {\n    yield\n  }", "'if' op expects 2 regions, got 1"},
      {"  %x = while %n : f32 {\n  ^(%a: i32):\n    condition %b\n  } {\n  ^(%a2: i32):\n    yield %a2\n  }",
       "'while' op result 0 has type f32 but its initial value has type i32"},
      {"  %x = while %n : i32 {\n  ^(%a: i32):\n    condition %a\n  } {\n  ^(%a2: i32):\n    yield %a2\n  }",
       "'condition' op condition must be a bool scalar, got i32"},
      // debugging
      {"  assert %i {message = \"m\"}", "'assert' op condition must be bool, got tile<i32, [4]>"},
      {"  assert %m", "'assert' op requires attribute 'message'"},
      {"  print %t", "'print' op requires attribute 'label'"},
      // cluster_exchange: `ranks` copies of each operand, in rank order
      {"  %a, %b = cluster_exchange %f : f32, f32", "needs an int attribute 'ranks' in 2..8"},
      {"  %a = cluster_exchange %f {ranks = 1} : f32", "needs an int attribute 'ranks' in 2..8"},
      {"  %a, %b, %c = cluster_exchange %f {ranks = 2} : f32, f32, f32",
       "has 1 operands and 'ranks' 2, so 2 results, got 3"},
      {"  %a, %b = cluster_exchange %f {ranks = 2} : f32, i32", "result 1 must have the type of operand 0, f32"},
      {"  %a, %b = cluster_exchange %p {ranks = 2} : *f32, *f32", "operand 0 is a pointer"},
  };
  for (const Case &c : cases) {
    Parsed p = parseText(kernelWith(c.ops));
    EXPECT_EQ(p.module, nullptr) << c.ops;
    ASSERT_FALSE(p.diags.empty()) << "no error for:\n" << c.ops;
    EXPECT_EQ(p.diags[0].code, DiagCode::TirSyntax) << c.ops;
    EXPECT_NE(p.diags[0].message.find(c.message), std::string::npos)
        << "for:\n" << c.ops << "\ngot: " << p.diags[0].message << "\nwant: " << c.message;
    // The error points at the op's line in the .tir text (ops start on line 9).
    EXPECT_GE(p.diags[0].loc.line, 9u) << c.ops;
  }
}

TEST(VerifyOpLocal, ReportsEveryBadOpOfAFileAtItsPosition) {
  Parsed p = parseText(kernelWith("  %x = add %t, %i : tile<f32, [4]>\n"
                                  "  %y = exp %i : tile<i32, [4]>"));
  ASSERT_EQ(p.diags.size(), 2u);
  EXPECT_EQ(p.first(), "9:3: 'add' op operand types differ: tile<f32, [4]> and tile<i32, [4]>");
  EXPECT_EQ(p.diags[1].loc.line, 10u);
  EXPECT_EQ(p.diags[1].loc.col, 3u);
}

/// Parses `text` (which must parse) and returns verifyModule's diagnostics.
std::vector<Diagnostic> verifyText(const std::string &text) {
  Parsed p = parseText(text);
  EXPECT_TRUE(p.module) << p.first();
  if (!p.module)
    return {};
  return verify(*p.module);
}

TEST(VerifyModule, RejectsRegionAndTerminatorViolations) {
  const Case cases[] = {
      {"  %x = for %n, %n, %c1, %f : f32 {\n  ^(%k: i32, %a: f32):\n    yield %k\n  }",
       "'yield' op operand 0 has type i32; the body region of 'for' must yield f32"},
      {"  %x = for %n, %n, %c1, %f : f32 {\n  ^(%k: i32):\n    yield %f\n  }",
       "'for' op body region takes 1 arguments; expected 2"},
      {"  %x = for %n, %n, %c1, %f : f32 {\n  ^(%k: i64, %a: f32):\n    yield %a\n  }",
       "'for' op body region argument 0 has type i64; expected i32"},
      {"  %x = for %n, %n, %c1, %f : f32 {\n  ^(%k: i32, %a: f32):\n    %z = add %a, %a : f32\n  }",
       "'for' op body region must end in 'yield'"},
      {"  for %n, %n, %c1 {\n  ^(%k: i32):\n    return\n  }",
       "'for' op body region must end in 'yield', not 'return'"},
      {"  %x = if %b : f32 {\n    yield\n  } {\n    yield %f\n  }",
       "'yield' op yields 0 values; the then region of 'if' must yield 1"},
      {"  %x = if %b : f32 {\n    yield %f\n  } {\n    yield %n\n  }",
       "'yield' op operand 0 has type i32; the else region of 'if' must yield f32"},
      {"  if %b {\n  ^(%a: i32):\n    yield\n  } {\n    yield\n  }",
       "'if' op then region takes 1 arguments; expected 0"},
      {"  %x = while %n : i32 {\n  ^(%a: i32):\n    yield %a\n  } {\n  ^(%a2: i32):\n    yield %a2\n  }",
       "'while' op before region must end in 'condition', not 'yield'"},
      {"  %x = while %n : i32 {\n  ^(%a: i32):\n    condition %b\n  } {\n  ^(%a2: i64):\n    yield %l\n  }",
       "'while' op after region argument 0 has type i64; expected i32"},
      {"  %x = while %n : i32 {\n  ^(%a: i32):\n    condition %b\n  } {\n  ^(%a2: i32):\n    condition %b\n  }",
       "'while' op after region must end in 'yield', not 'condition'"},
      {"  %x = reduce %t {axis = 0, kind = \"custom\"} : f32 {\n  ^(%a: f32):\n    yield %a\n  }",
       "'reduce' op combiner region takes 1 arguments; expected 2"},
      {"  %x = reduce %t {axis = 0, kind = \"custom\"} : f32 {\n  ^(%a: f32, %e: i32):\n    yield %a\n  }",
       "'reduce' op combiner region argument 1 has type i32; expected f32"},
      {"  %x = scan %t {axis = 0, kind = \"custom\"} : tile<f32, [4]> {\n  ^(%a: f32, %e: f32):\n"
       "    yield %n\n  }",
       "'yield' op operand 0 has type i32; the combiner region of 'scan' must yield f32"},
      {"  %x = reduce %t {axis = 0, kind = \"custom\"} : f32 {\n  ^(%a: f32, %e: f32):\n"
       "    store %p, %a\n    yield %a\n  }",
       "'reduce' op combiner region must not contain 'store'"},
      {"  for %n, %n, %c1 {\n  ^(%k: i32):\n    yield\n    %z = add %k, %k : i32\n  }",
       "'yield' op is a terminator but not the last op of its block"},
      {"  return", "'return' op is a terminator but not the last op of its block"},
  };
  for (const Case &c : cases) {
    auto diags = verifyText(kernelWith(c.ops));
    ASSERT_FALSE(diags.empty()) << "no error for:\n" << c.ops;
    // Some mistakes break two rules (a misplaced terminator also leaves the region
    // without one); the expected message must be among those reported.
    const Diagnostic *match = nullptr;
    for (const Diagnostic &d : diags)
      if (d.message.find(c.message) != std::string::npos)
        match = &d;
    ASSERT_NE(match, nullptr) << "for:\n" << c.ops << "\ngot: " << diags[0].message
                              << "\nwant: " << c.message;
    EXPECT_EQ(match->code, DiagCode::TirVerify);
    EXPECT_GE(match->loc.line, 9u) << c.ops;
  }
}

TEST(VerifyModule, KernelRules) {
  auto noReturn = verifyText("kernel @k(%n: i32) {\n  %x = add %n, %n : i32\n}\n");
  ASSERT_EQ(noReturn.size(), 1u);
  EXPECT_EQ(noReturn[0].message, "kernel @k: body must end in 'return'");
  EXPECT_EQ(noReturn[0].loc.line, 2u);

  auto empty = verifyText("kernel @k() {\n}\n");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].loc.line, 1u);

  auto tileParam = verifyText("kernel @k(%t: tile<f32, [4]>) {\n  return\n}\n");
  ASSERT_EQ(tileParam.size(), 1u);
  EXPECT_EQ(tileParam[0].message,
            "kernel @k: parameter of type tile<f32, [4]> must be a scalar or a pointer");

  auto warps = verifyText(
      "kernel @k() attributes {num_stages = 0, num_warps = 3} {\n  return\n}\n");
  ASSERT_EQ(warps.size(), 2u);
  EXPECT_EQ(warps[0].message, "kernel @k: num_warps 3 is not a power of two in 1..32");
  EXPECT_EQ(warps[1].message, "kernel @k: num_stages 0 must be >= 1");
}

TEST(VerifyModule, ASplitKernelTakesItsWorkspaceLast) {
  auto noWorkspace = verifyText(
      "kernel @k(%x: *f32) attributes {grid_split = 2, workspace_bytes = 32} {\n  return\n}\n");
  ASSERT_EQ(noWorkspace.size(), 1u);
  EXPECT_EQ(noWorkspace[0].message,
            "kernel @k: a kernel with grid_split > 1 takes its workspace (*i32) as the last parameter");
  auto badBytes = verifyText(
      "kernel @k(%w: *i32) attributes {grid_split = 2, workspace_bytes = 6} {\n  return\n}\n");
  ASSERT_EQ(badBytes.size(), 1u);
  EXPECT_EQ(badBytes[0].message, "kernel @k: workspace_bytes 6 must be a positive multiple of 4");
  auto notSplit = verifyText("kernel @k() attributes {grid_split = 0, workspace_bytes = 4} {\n  return\n}\n");
  ASSERT_EQ(notSplit.size(), 2u);
  EXPECT_EQ(notSplit[0].message, "kernel @k: grid_split 0 must be >= 1");
  EXPECT_EQ(notSplit[1].message, "kernel @k: workspace_bytes needs grid_split > 1");
}

TEST(VerifyModule, AClusterSplitFitsOneClusterAndHasNoWorkspace) {
  auto large = verifyText("kernel @k() attributes {cluster_size = 9, grid_split = 9} {\n  return\n}\n");
  ASSERT_EQ(large.size(), 1u);
  EXPECT_EQ(large[0].message, "kernel @k: cluster_size 9 is more than 8 programs");
  auto workspace = verifyText(
      "kernel @k(%w: *i32) attributes {cluster_size = 2, grid_split = 2, workspace_bytes = 16} {\n  return\n}\n");
  ASSERT_EQ(workspace.size(), 1u);
  EXPECT_EQ(workspace[0].message, "kernel @k: a kernel split over a cluster has no workspace_bytes");
}

TEST(VerifyModule, AcceptsTheAllOpsFile) {
  Parsed p = parseText(readFile(inputPath("all_ops.tir")), "all_ops.tir");
  ASSERT_TRUE(p.module) << p.first();
  auto diags = verify(*p.module);
  EXPECT_TRUE(diags.empty()) << diags[0].message;
}

//===--------------------------------------------------------------------===//
// Dominance (hand-built: the parser cannot express these)
//===--------------------------------------------------------------------===//

struct HandBuilt {
  Module module;
  Kernel *kernel;
  Value *n;
  HandBuilt() {
    module.kernels.push_back(std::make_unique<Kernel>());
    kernel = module.kernels.back().get();
    kernel->name = "k";
    n = kernel->body->addArgument(Type::scalar(DType::I32), "n");
  }
  /// Appends an op without any checks (as a buggy pass might).
  Op *raw(Block *block, OpKind kind, std::vector<Value *> operands, std::vector<Type> results,
          unsigned line, AttrMap attrs = {}) {
    auto op = std::make_unique<Op>(kind, Location{0, line, 1});
    op->operands() = std::move(operands);
    for (Type &t : results)
      op->addResult(t);
    op->attrs() = std::move(attrs);
    return block->append(std::move(op));
  }
};

TEST(VerifyModule, UseBeforeDefinitionIsReported) {
  HandBuilt h;
  Block *body = h.kernel->body.get();
  Type i32 = Type::scalar(DType::I32);
  Op *first = h.raw(body, OpKind::Add, {h.n, h.n}, {i32}, 1);
  Op *second = h.raw(body, OpKind::Add, {h.n, h.n}, {i32}, 2);
  first->operands()[1] = second->result(); // used one op too early
  h.raw(body, OpKind::Return, {}, {}, 3);
  auto diags = verify(h.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].message,
            "'add' op operand 1 is not defined before this op in an enclosing block");
  EXPECT_EQ(diags[0].loc.line, 1u);
}

TEST(VerifyModule, RegionValuesAreNotVisibleOutside) {
  HandBuilt h;
  Block *body = h.kernel->body.get();
  Type i32 = Type::scalar(DType::I32);
  Op *c1 = h.raw(body, OpKind::Constant, {}, {i32}, 1, {{"value", int64_t(1)}});
  Op *loop = h.raw(body, OpKind::For, {h.n, h.n, c1->result()}, {}, 2);
  Block *region = loop->addRegion();
  Value *iv = region->addArgument(i32, "i");
  Op *inside = h.raw(region, OpKind::Add, {iv, h.n}, {i32}, 3); // outer values: fine
  h.raw(region, OpKind::Yield, {}, {}, 4);
  h.raw(body, OpKind::Add, {inside->result(), iv}, {i32}, 5); // both invisible here
  h.raw(body, OpKind::Return, {}, {}, 6);
  auto diags = verify(h.module);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].loc.line, 5u);
  EXPECT_NE(diags[0].message.find("operand 0 is not defined"), std::string::npos);
  EXPECT_NE(diags[1].message.find("operand 1 is not defined"), std::string::npos);
}

TEST(VerifyModule, ValuesOfAnotherKernelAreNotVisible) {
  HandBuilt h;
  h.module.kernels.push_back(std::make_unique<Kernel>());
  Kernel *other = h.module.kernels.back().get();
  other->name = "other";
  Type i32 = Type::scalar(DType::I32);
  h.raw(h.kernel->body.get(), OpKind::Return, {}, {}, 1);
  h.raw(other->body.get(), OpKind::Neg, {h.n}, {i32}, 2);
  h.raw(other->body.get(), OpKind::Return, {}, {}, 3);
  auto diags = verify(h.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].loc.line, 2u);
}

TEST(VerifyModule, AnOpsOwnResultIsNotVisibleInItsRegions) {
  HandBuilt h;
  Block *body = h.kernel->body.get();
  Type i32 = Type::scalar(DType::I32);
  Op *c = h.raw(body, OpKind::Constant, {}, {Type::scalar(DType::Bool)}, 1, {{"value", int64_t(1)}});
  Op *branch = h.raw(body, OpKind::If, {c->result()}, {i32}, 2);
  for (int i = 0; i < 2; ++i)
    h.raw(branch->addRegion(), OpKind::Yield, {branch->result()}, {}, 3);
  h.raw(body, OpKind::Return, {}, {}, 4);
  auto diags = verify(h.module);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message, "'yield' op operand 0 is not defined before this op in an "
                              "enclosing block");
}

} // namespace

namespace {

const char *kLaunched = "kernel @k(%p: *f32, %n: i32) attributes {num_warps = 4} {\n"
                        "  return\n"
                        "}\n";

/// A graph around `ops`, after kernel @k; `ops` starts on line 6.
std::string graphWith(const std::string &ops) {
  return std::string(kLaunched) + "graph @g(%p: *f32, %q: *i32, %n: i32) {\n"
                                  "  %one = constant {value = 1} : i32\n" +
         ops + "\n  return\n}\n";
}

TEST(VerifyModule, GraphLaunchesMatchTheirKernels) {
  Parsed good = parseText(graphWith("  launch %n, %one, %one, %p, %n {kernel = \"k\"}"));
  ASSERT_TRUE(good.module) << good.first();
  EXPECT_TRUE(verify(*good.module).empty());

  const Case cases[] = {
      {"  launch %n, %one, %one, %p, %n {kernel = \"nope\"}", "launches @nope, which is not a kernel of the module"},
      {"  launch %n, %one, %one, %p {kernel = \"k\"}", "passes 1 arguments to @k, which takes 2"},
      {"  launch %n, %one, %one, %q, %n {kernel = \"k\"}", "argument 1 of @k is *i32, its parameter *f32"},
  };
  for (const Case &c : cases) {
    Parsed p = parseText(graphWith(c.ops));
    ASSERT_TRUE(p.module) << c.ops << ": " << p.first();
    auto diags = verify(*p.module);
    ASSERT_FALSE(diags.empty()) << c.ops;
    EXPECT_NE(diags[0].message.find(c.message), std::string::npos) << diags[0].message;
    EXPECT_EQ(diags[0].loc.line, 6u) << c.ops;
  }
}

// A kernel's block mask takes the five parameters of one mask of the graph, whose
// block sizes are its own: the runtime checks a mask passed whole, not its parts.
TEST(VerifyModule, GraphLaunchesPassWholeMasksOfTheirBlockSizes) {
  const std::string kernel =
      "kernel @k(%m_rows: i32, %m_cols: i32, %m_row_start: *i32, %m_blocks: *i32, %m_bitmaps: *u32) attributes "
      "{block_masks = {m = [0, 4, 8]}, num_warps = 4} {\n  return\n}\n";
  auto graph = [&](const std::string &masks, const std::string &args) {
    return kernel + "graph @g(%a_rows: i32, %a_cols: i32, %a_row_start: *i32, %a_blocks: *i32, %a_bitmaps: *u32, " +
           "%n: i32) attributes {block_masks = {" + masks + "}} {\n  %one = constant {value = 1} : i32\n" +
           "  launch %one, %one, %one, " + args + " {kernel = \"k\"}\n  return\n}\n";
  };
  const std::string parts = "%a_rows, %a_cols, %a_row_start, %a_blocks, %a_bitmaps";
  Parsed good = parseText(graph("a = [0, 4, 8]", parts));
  ASSERT_TRUE(good.module) << good.first();
  EXPECT_TRUE(verify(*good.module).empty());
  const std::pair<std::string, std::string> cases[] = {
      {graph("a = [0, 8, 8]", parts), "passes the graph's block mask 'a' to @k's 'm', whose block sizes differ"},
      {graph("a = [0, 4, 8]", "%n, %a_cols, %a_row_start, %a_blocks, %a_bitmaps"),
       "passes @k's block mask 'm' something other than a block mask of the graph"},
  };
  for (const auto &[text, message] : cases) {
    Parsed p = parseText(text);
    ASSERT_TRUE(p.module) << text << ": " << p.first();
    auto diags = verify(*p.module);
    ASSERT_FALSE(diags.empty()) << text;
    EXPECT_NE(diags[0].message.find(message), std::string::npos) << diags[0].message;
  }
  // The graph's own masks are verified as a kernel's.
  Parsed bad = parseText(graph("a = [1, 4, 8]", parts));
  ASSERT_TRUE(bad.module) << bad.first();
  auto diags = verify(*bad.module);
  ASSERT_FALSE(diags.empty());
  EXPECT_NE(diags[0].message.find("graph @g: block mask 'a' does not name five parameters"), std::string::npos)
      << diags[0].message;
}

TEST(VerifyOpLocal, LaunchTakesAnI32GridAndAKernelName) {
  Parsed badGrid = parseText(graphWith("  launch %p, %one, %one, %p, %n {kernel = \"k\"}"));
  EXPECT_FALSE(badGrid.module);
  EXPECT_NE(badGrid.first().find("grid size 0 must be an i32 scalar"), std::string::npos) << badGrid.first();
  Parsed noName = parseText(graphWith("  launch %n, %one, %one, %p, %n"));
  EXPECT_FALSE(noName.module);
  EXPECT_NE(noName.first().find("kernel"), std::string::npos) << noName.first();
}

TEST(VerifyModule, LaunchOnlyInGraphs) {
  Parsed p = parseText("kernel @k(%p: *f32, %n: i32) attributes {num_warps = 4} {\n"
                       "  %one = constant {value = 1} : i32\n"
                       "  launch %one, %one, %one, %p, %n {kernel = \"k\"}\n"
                       "  return\n"
                       "}\n");
  ASSERT_TRUE(p.module) << p.first();
  auto diags = verify(*p.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("may appear only in a graph"), std::string::npos) << diags[0].message;
}

} // namespace
