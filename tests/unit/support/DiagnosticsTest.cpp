//===- DiagnosticsTest.cpp - Rendering, JSON, codes and their docs --------===//
#include "support/Diagnostics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace kiln;

namespace {

struct Fixture {
  SourceManager sm;
  std::ostringstream out;
  uint32_t file = sm.addBuffer("k.kiln", "kernel k() {\n\tlet x = yy + 1;\n}\n");
};

TEST(Diagnostics, TextHasLocationCodeLineAndCaret) {
  Fixture f;
  DiagnosticEngine diags(f.sm, f.out);
  diags.error(Location{f.file, 2, 10}, DiagCode::UndefinedName).hint("did you mean 'y'?")
      << "undefined name '" << "yy" << "'";
  EXPECT_EQ(f.out.str(), "k.kiln:2:10: error[E0200]: undefined name 'yy'\n"
                         "          let x = yy + 1;\n"
                         "                  ^\n"
                         "  help: did you mean 'y'?\n");
  EXPECT_EQ(diags.errorCount(), 1u);
}

TEST(Diagnostics, JsonIsOneEscapedObjectPerLine) {
  Fixture f;
  DiagnosticEngine diags(f.sm, f.out, DiagFormat::Json);
  diags.error(Location{f.file, 2, 10}, DiagCode::UndefinedName) << "bad \"quote\"\n\\";
  diags.error(Location::commandLine(), DiagCode::RunArgument) << "missing --arg";
  EXPECT_EQ(f.out.str(),
            "{\"file\":\"k.kiln\",\"line\":2,\"col\":10,\"code\":\"E0200\",\"severity\":\"error\","
            "\"message\":\"bad \\\"quote\\\"\\n\\\\\"}\n"
            "{\"file\":\"\",\"line\":0,\"col\":0,\"code\":\"E0600\",\"severity\":\"error\","
            "\"message\":\"missing --arg\"}\n");
}

TEST(Diagnostics, InvalidUtf8NeverReachesTheOutput) {
  SourceManager sm;
  std::ostringstream out;
  uint32_t file = sm.addBuffer("b.kiln", std::string("let \xff\xfe = 1;\n"));
  DiagnosticEngine diags(sm, out, DiagFormat::Json);
  diags.error(Location{file, 1, 5}, DiagCode::InvalidEncoding) << "byte \xff";
  EXPECT_EQ(out.str().find('\xff'), std::string::npos);
}

TEST(Diagnostics, LongLinesAreCutAroundTheCaret) {
  SourceManager sm;
  std::ostringstream out;
  std::string line = "let x = " + std::string(5000, 'a') + " + @ + " + std::string(5000, 'b') + ";";
  uint32_t file = sm.addBuffer("long.kiln", line + "\n");
  DiagnosticEngine diags(sm, out);
  uint32_t col = static_cast<uint32_t>(line.find('@') + 1);
  diags.error(Location{file, 1, col}, DiagCode::LexError) << "unexpected character '@'";
  std::string text = out.str();
  EXPECT_LT(text.size(), 600u);
  // The caret still sits under the '@'.
  size_t quoted = text.find('\n') + 1;
  size_t caretLine = text.find('\n', quoted) + 1;
  size_t at = text.find('@', quoted) - quoted;
  EXPECT_EQ(text.find('^', caretLine) - caretLine, at);
}

TEST(Diagnostics, NotesAndErrorLimit) {
  Fixture f;
  DiagnosticEngine diags(f.sm, f.out);
  diags.setErrorLimit(2);
  diags.error(Location{f.file, 1, 1}, DiagCode::DuplicateItem).note(Location{f.file, 3, 1}, "first here")
      << "dup";
  diags.error(Location{f.file, 1, 1}, DiagCode::DuplicateItem) << "two";
  diags.error(Location{f.file, 1, 1}, DiagCode::DuplicateItem) << "three";
  EXPECT_EQ(diags.errorCount(), 2u);
  EXPECT_NE(f.out.str().find("k.kiln:3:1: note: first here"), std::string::npos);
  EXPECT_NE(f.out.str().find("too many errors"), std::string::npos);
  EXPECT_EQ(f.out.str().find("three"), std::string::npos);
}

TEST(Diagnostics, CodesAreUniqueAndDocumented) {
  std::ifstream doc(std::string(KILN_SOURCE_DIR) + "/docs/diagnostics.md");
  ASSERT_TRUE(doc) << "docs/diagnostics.md is missing";
  std::stringstream text;
  text << doc.rdbuf();
  std::set<std::string> seen;
  for (DiagCode c : allDiagCodes()) {
    std::string code = diagCodeString(c);
    EXPECT_TRUE(seen.insert(code).second) << "duplicate code " << code;
    EXPECT_NE(text.str().find("| " + code + " |"), std::string::npos) << code << " is not documented";
    EXPECT_FALSE(diagCodeSummary(c).empty());
  }
}

TEST(Diagnostics, InternalErrorsAreExceptionsNotDiagnostics) {
  EXPECT_THROW(KILN_ICE("broken invariant"), InternalCompilerError);
  try {
    kiln_assert(1 + 1 == 3, "arithmetic");
    FAIL();
  } catch (const InternalCompilerError &e) {
    EXPECT_NE(std::string(e.what()).find("arithmetic"), std::string::npos);
  }
}

} // namespace
