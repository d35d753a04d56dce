//===- ParserTest.cpp - .tir round trips, names, locations and errors -----===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <set>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::ir::test;

namespace {

/// Parses a canonical input file and checks that printing reproduces it exactly, and
/// that the result verifies.
void checkCanonicalFile(const std::string &name, PrintOptions options) {
  std::string text = readFile(inputPath(name));
  ASSERT_FALSE(text.empty()) << name << " is missing";
  Parsed p = parseText(text, name);
  ASSERT_TRUE(p.module) << name << ": " << p.first();
  EXPECT_EQ(printModule(*p.module, options), withoutHeaderComments(text)) << name;
  auto diags = verify(*p.module);
  EXPECT_TRUE(diags.empty()) << name << ": " << diags[0].message;
}

TEST(RoundTrip, AllOpsFileIsReproducedExactly) {
  checkCanonicalFile("all_ops.tir", {});
}

TEST(RoundTrip, ConstantsFileIsReproducedExactly) {
  checkCanonicalFile("constants.tir", {});
}

TEST(RoundTrip, LocationsFileIsReproducedExactly) {
  checkCanonicalFile("locations.tir", PrintOptions{true});
}

TEST(RoundTrip, AllOpsFileCoversEveryOpKind) {
  Parsed p = parseText(readFile(inputPath("all_ops.tir")));
  ASSERT_TRUE(p.module) << p.first();
  std::set<OpKind> seen;
  for (auto &k : p.module->kernels)
    walk(*k->body, [&](Op &op) { seen.insert(op.kind()); });
  for (auto &g : p.module->graphs)
    walk(*g->body, [&](Op &op) { seen.insert(op.kind()); });
#define KILN_OP(Enum, Mnemonic, MinOps, MaxOps, NumResults, NumRegions)                      \
  EXPECT_TRUE(seen.count(OpKind::Enum)) << "all_ops.tir has no '" Mnemonic "'";
#include "ir/Ops.def"
}

TEST(RoundTrip, ParsedValuesCarryTheirNamesAsHints) {
  Parsed p = parseText(readFile(inputPath("constants.tir")));
  ASSERT_TRUE(p.module) << p.first();
  Kernel &k = *p.module->kernels[0];
  EXPECT_EQ(k.params()[0]->nameHint, ""); // %0: numeric names are not hints
  auto &ops = k.body->ops();
  auto it = ops.end();
  std::advance(it, -3);
  EXPECT_EQ((*it)->result()->nameHint, "x1");
  EXPECT_EQ(k.constValues.size(), 6u);
  EXPECT_EQ(k.constValues[0].first, "NEG");
  EXPECT_EQ(std::get<int64_t>(k.constValues[0].second), -3);
  EXPECT_EQ(std::get<double>(k.constValues[2].second), 5e-324);
  EXPECT_TRUE(std::get<std::vector<int64_t>>(k.constValues[5].second).empty());
  EXPECT_EQ(p.module->kernels.size(), 2u);
  EXPECT_EQ(p.module->findKernel("consts"), &k);
}

TEST(RoundTrip, FreeFormInputPrintsStably) {
  // Comments, spacing, names in any order, attributes unsorted, no kernel attributes.
  const char *text = "// header\n"
                     "kernel @k(%b : *f16,%n:i32)   {   // trailing comment\n"
                     "  %zz = arange {start = 0, end = 8} : tile< i32 , [ 8 ] >\n"
                     "  %7 = splat %n : tile<i32, [8]>\n"
                     "\n"
                     "  %3 = cmp %zz, %7 {pred = \"lt\"}\n"
                     "     : tile<bool, [8]>\n"
                     "  %bs = splat %b : tile<*f16, [8]>\n"
                     "  %p = ptr_add %bs, %zz : tile<*f16, [8]>\n"
                     "  %v = load %p, %3 : tile<f16, [8]>\n"
                     "  %r = reduce %v {kind = \"custom\", axis = 0} : f16 {\n"
                     "  ^(%a: f16, %c: f16):\n"
                     "    %s = add %a, %c : f16\n"
                     "    yield %s\n"
                     "  }\n"
                     "  return\n"
                     "}\n";
  Parsed p = parseText(text);
  ASSERT_TRUE(p.module) << p.first();
  EXPECT_TRUE(verify(*p.module).empty());
  std::string once = printModule(*p.module);
  EXPECT_EQ(once, "kernel @k(%b: *f16, %n: i32) attributes {consts = {}, num_stages = 1, "
                  "num_warps = 4} {\n"
                  "  %zz = arange {end = 8, start = 0} : tile<i32, [8]>\n"
                  "  %0 = splat %n : tile<i32, [8]>\n"
                  "  %1 = cmp %zz, %0 {pred = \"lt\"} : tile<bool, [8]>\n"
                  "  %bs = splat %b : tile<*f16, [8]>\n"
                  "  %p = ptr_add %bs, %zz : tile<*f16, [8]>\n"
                  "  %v = load %p, %1 : tile<f16, [8]>\n"
                  "  %r = reduce %v {axis = 0, kind = \"custom\"} : f16 {\n"
                  "  ^(%a: f16, %c: f16):\n"
                  "    %s = add %a, %c : f16\n"
                  "    yield %s\n"
                  "  }\n"
                  "  return\n"
                  "}\n");
  Parsed again = parseText(once);
  ASSERT_TRUE(again.module) << again.first();
  EXPECT_EQ(printModule(*again.module), once);
}

TEST(Locations, OpsWithoutLocPointIntoTheTirText) {
  Parsed p = parseText("kernel @k(%n: i32) {\n"
                       "  %a = add %n, %n : i32\n"
                       "     %b = neg %a : i32 loc(\"x.kiln\":40:2)\n"
                       "  return\n"
                       "}\n",
                       "dir/k.tir");
  ASSERT_TRUE(p.module) << p.first();
  Kernel &k = *p.module->kernels[0];
  EXPECT_EQ(k.loc, (Location{p.file, 1, 1}));
  auto it = k.body->ops().begin();
  EXPECT_EQ((*it)->loc(), (Location{p.file, 2, 3}));
  ++it;
  Location named = (*it)->loc();
  EXPECT_EQ(p.sources->name(named.file), "x.kiln");
  EXPECT_EQ(named.line, 40u);
  EXPECT_EQ(named.col, 2u);
  ++it;
  EXPECT_EQ((*it)->loc(), (Location{p.file, 4, 3}));
  // A loc naming the .tir file itself reuses its registration.
  Parsed self = parseText("kernel @k() loc(\"s.tir\":9:9) {\n  return\n}\n", "s.tir");
  ASSERT_TRUE(self.module) << self.first();
  EXPECT_EQ(self.module->kernels[0]->loc, (Location{self.file, 9, 9}));
  EXPECT_EQ(self.sources->size(), 1u);
}

TEST(Locations, VerifierErrorsOnParsedFilesPointIntoTheFile) {
  Parsed p = parseText("kernel @k(%n: i32) {\n"
                       "  %x = for %n, %n, %n : i32 {\n"
                       "  ^(%i: i32):\n"
                       "    yield\n"
                       "  }\n"
                       "  return\n"
                       "}\n");
  // `for` with no carried values but a result: caught locally by the parser.
  ASSERT_EQ(p.module, nullptr);
  EXPECT_EQ(p.first(), "2:3: 'for' op has 0 carried values but 1 results");
  Parsed q = parseText("kernel @k(%n: i32) {\n"
                       "  for %n, %n, %n {\n"
                       "  ^(%i: i32):\n"
                       "    yield %i\n"
                       "  }\n"
                       "  return\n"
                       "}\n");
  ASSERT_TRUE(q.module) << q.first();
  auto diags = verify(*q.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].loc, (Location{q.file, 4, 5}));
  EXPECT_EQ(diags[0].message, "'yield' op yields 1 values; the body region of 'for' must yield 0");
}

struct ErrorCase {
  const char *text;
  const char *expected; ///< "line:col: message" of the first diagnostic
};

TEST(Errors, SyntaxAndTypeErrorsHaveExactPositions) {
  const ErrorCase cases[] = {
      {"kernel @k() {\n  %x = foo : i32\n  return\n}\n", "2:8: unknown op 'foo'"},
      {"kernel @k() {\n  %x = neg %y : i32\n  return\n}\n", "2:12: use of undefined value %y"},
      {"kernel @k(%a i32) {\n}\n", "1:14: expected ':' after the argument name, found 'i32'"},
      {"kernel @k(%a: i32) {\n  %b = add %a, %a i32\n  return\n}\n",
       "2:19: expected ':' and the result types, found 'i32'"},
      {"kernel @k(%a: i32) {\n  %b, %c = neg %a : i32\n  return\n}\n",
       "2:3: 'neg' has 2 result names but 1 result types"},
      {"kernel @k(%a: i32) {\n  neg %a : i32\n  return\n}\n",
       "2:10: 'neg' has 0 result names but 1 result types"},
      {"kernel @k(%a: f32) {\n  %b = neg %a : tile<f32, [0]>\n  return\n}\n",
       "2:28: tile dimensions must be positive, got 0"},
      {"kernel @k(%a: f32) {\n  %b = neg %a : tile<f32, [65536, 65536]>\n  return\n}\n",
       "2:17: tile type is too large (more than 2147483647 elements)"},
      {"kernel @k(%a: f32) {\n  %b = neg %a : f31\n  return\n}\n", "2:17: unknown dtype 'f31'"},
      {"kernel @k(%a: f32) {\n  %b = neg %a : tile<f32 [4]>\n  return\n}\n",
       "2:26: expected ',' after the element type, found '['"},
      {"kernel @k(%a: f32) {\n  %a = neg %a : f32\n  return\n}\n", "2:3: redefinition of value %a"},
      {"kernel @k(%a: f32, %a: i32) {\n  return\n}\n", "1:20: redefinition of value %a"},
      {"kernel @k(%n: i32) {\n  for %n, %n, %n {\n  ^(%i: i32):\n    yield\n  }\n"
       "  %x = neg %i : i32\n  return\n}\n",
       "6:12: value %i is not visible here: it is defined inside a region that has ended"},
      {"kernel @k(%a: f32) {\n  print %a {label = \"x\", label = \"y\"}\n  return\n}\n",
       "2:26: duplicate attribute 'label'"},
      {"kernel @k(%a: f32) {\n  print %a {label = bogus}\n  return\n}\n",
       "2:21: unknown attribute value 'bogus'"},
      {"kernel @k(%a: f32) {\n  print %a {label = -nan}\n  return\n}\n",
       "2:22: expected 'inf' after '-', found 'nan'"},
      {"kernel @k(%a: f32) {\n  print %a {label = [1, 2.0]}\n  return\n}\n",
       "2:25: expected an integer in the list, found number 2.0"},
      {"kernel @k() {\n  return # \n}\n", "2:10: unexpected character '#'"},
      {"kernel @k() {\n  print {label = \"abc\n}\n", "2:18: unterminated string"},
      {"kernel @k() {\n  print {label = \"a\\qb\"}\n}\n", "2:18: unknown escape sequence in string"},
      {"kernel @k() {\n  %c = constant {value = 99999999999999999999} : i64\n}\n",
       "2:26: integer literal '99999999999999999999' is out of range"},
      {"kernel @k() {\n  %c = constant {value = 1e999} : f64\n}\n",
       "2:26: float literal '1e999' is out of range"},
      {"kernel @k() {\n  %c = constant {value = 12ab} : i32\n}\n", "2:26: malformed number"},
      {"kernel @k() {\n  return\n", "3:1: expected '}', found end of file"},
      {"kernel k() {\n}\n", "1:8: expected a kernel name such as @add, found 'k'"},
      {"%x = neg %y : i32\n", "1:1: expected 'kernel', found '%x'"},
      {"kernel @k() attributes {warps = 4} {\n}\n",
       "1:25: unknown kernel attribute 'warps' (expected block_masks, cluster_size, consts, grid_split, multiple_of, num_stages, num_warps or "
       "workspace_bytes)"},
      {"kernel @k() attributes {consts = {A = 1, A = 2}} {\n}\n", "1:42: duplicate const 'A'"},
      {"kernel @k() attributes {cluster_size = 4, grid_split = 2} {\n}\n",
       "1:25: cluster_size 4 must equal grid_split (2)"},
      {"kernel @k() loc(\"f\":1) {\n}\n", "1:22: expected ':' after the line number, found ')'"},
      {"kernel @k() loc(\"f\":1:-1) {\n}\n", "1:23: column number out of range"},
      {"kernel @k() {\n  %x = program_id {axis = 0} : i32\n  %y = neg % : i32\n}\n",
       "3:12: expected a value name after '%'"},
      {"kernel @k() {\n  return\n}\n\x01", "4:1: unexpected byte 0x01"},
      {"kernel @k(%b: bool) {\n  if %b {\n  ^(%x: i32:\n    yield\n  } {\n    yield\n  }\n}\n",
       "3:12: expected ')' ending the region arguments, found ':'"},
  };
  for (const ErrorCase &c : cases) {
    Parsed p = parseText(c.text);
    EXPECT_EQ(p.module, nullptr) << c.text;
    ASSERT_FALSE(p.diags.empty()) << "no error for:\n" << c.text;
    EXPECT_EQ(p.diags[0].code, DiagCode::TirSyntax) << c.text;
    EXPECT_EQ(p.first(), c.expected) << "for:\n" << c.text;
  }
}

TEST(Errors, NestingIsBounded) {
  std::string text = "kernel @k(%b: bool) {\n";
  for (int i = 0; i < 300; ++i)
    text += "if %b {\n";
  Parsed p = parseText(text);
  EXPECT_EQ(p.module, nullptr);
  ASSERT_EQ(p.diags.size(), 1u);
  EXPECT_NE(p.diags[0].message.find("regions nest too deeply"), std::string::npos);
  EXPECT_EQ(p.diags[0].loc.line, 202u);
}

TEST(Errors, UnreadableFileIsReported) {
  auto sources = std::make_shared<SourceManager>();
  uint32_t file = sources->addName("/nonexistent/dir/x.tir");
  std::vector<Diagnostic> got;
  std::ostringstream sink;
  DiagnosticEngine diags(*sources, sink);
  diags.setHandler([&](const Diagnostic &d) { got.push_back(d); });
  EXPECT_EQ(parseTir(sources, file, diags), nullptr);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code, DiagCode::FileNotReadable);
}

TEST(Errors, EmptyInputIsAnEmptyModule) {
  Parsed p = parseText("// nothing here\n\n");
  ASSERT_TRUE(p.module);
  EXPECT_TRUE(p.module->kernels.empty());
  EXPECT_EQ(printModule(*p.module), "");
}

} // namespace

namespace {

TEST(RoundTrip, DocumentedExamplesAreCanonical) {
  std::string doc = readFile(std::string(KILN_SOURCE_DIR) + "/docs/tir.md");
  ASSERT_FALSE(doc.empty()) << "docs/tir.md is missing";
  unsigned checked = 0;
  for (size_t pos = doc.find("```\n"); pos != std::string::npos;) {
    size_t start = pos + 4, end = doc.find("```\n", start);
    if (end == std::string::npos)
      break;
    std::string block = doc.substr(start, end - start);
    // Complete examples are the blocks that start a file (comment or kernel) and
    // elide nothing.
    if ((block.rfind("//", 0) == 0 || block.rfind("kernel", 0) == 0) &&
        block.find("...") == std::string::npos) {
      Parsed p = parseText(block, "tir.md");
      ASSERT_TRUE(p.module) << p.first() << "\n" << block;
      EXPECT_EQ(printModule(*p.module), withoutHeaderComments(block));
      EXPECT_TRUE(verify(*p.module).empty());
      ++checked;
    }
    pos = doc.find("```\n", end + 4);
  }
  EXPECT_GE(checked, 1u);
}

} // namespace
