//===- SectionAndSourceMapTest.cpp - Code choice and PTX line mapping -----===//
//
// Which section of a bundle a device loads, and how a ptxas error line is traced back
// to the Kiln source through .loc/.file directives.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"
#include "runtime/Backend.h"
#include "runtime/cuda/PtxSourceMap.h"

using namespace kiln;
using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

Bundle withTargets(std::initializer_list<Target> targets) {
  Bundle b = vaddBundle();
  b.sections.clear();
  for (Target t : targets)
    b.sections.push_back(isPtxTarget(t) ? CodeSection{SectionKind::PTX, t, bytesOf("ptx")}
                                        : CodeSection{SectionKind::SPIRV, t, tinySpirv()});
  b.target = *targets.begin();
  return b;
}

const char *picked(const Bundle &b, int major, int minor) {
  std::string why;
  const CodeSection *s = pickCudaSection(b, major, minor, why);
  return s ? targetName(s->target).data() : nullptr;
}

} // namespace

TEST(SectionChoice, PicksTheMostSpecificRunnablePtx) {
  Bundle all = withTargets({Target::SM80, Target::SM90, Target::SM90a, Target::SPIRV64});
  EXPECT_STREQ(picked(all, 9, 0), "sm_90a");
  EXPECT_STREQ(picked(all, 10, 0), "sm_90"); // 'a' code does not run on later generations
  EXPECT_STREQ(picked(all, 8, 6), "sm_80");
  EXPECT_EQ(picked(all, 7, 5), nullptr);

  Bundle onlyA = withTargets({Target::SM90a});
  EXPECT_STREQ(picked(onlyA, 9, 0), "sm_90a");
  EXPECT_EQ(picked(onlyA, 12, 0), nullptr);
  std::string why;
  EXPECT_EQ(pickCudaSection(onlyA, 8, 0, why), nullptr);
  EXPECT_EQ(why, "kernel 'vadd' (vadd.kiln:3:1) has code for sm_90a only; the device is sm_80");

  Bundle spirv = withTargets({Target::SPIRV64});
  EXPECT_EQ(picked(spirv, 9, 0), nullptr);
  ASSERT_NE(pickSpirvSection(spirv, why), nullptr);
  EXPECT_EQ(pickSpirvSection(withTargets({Target::SM90}), why), nullptr);
  EXPECT_EQ(why, "kernel 'vadd' (vadd.kiln:3:1) has code for sm_90 only; Level Zero needs spirv64");
  EXPECT_EQ(cudaArchName(9, 0), "sm_90");
  EXPECT_EQ(cudaArchName(12, 1), "sm_121");
}

TEST(PtxSourceMap, FindsTheLastLocBeforeTheLine) {
  // Lines:          1           2       3                       4           5
  std::string ptx = ".version 8.0\n.entry a(\n)\n{\n.loc 1 10 2\n"
                    //  6                 7            8                 9
                    "add.s32 %r1, 1;\n.loc 2 20 4\nmul.f32 %f1;\n}\n"
                    //  10           11      12        13
                    ".func b()\n{\nret;\n}\n"
                    //  14                     15
                    ".file 1 \"a.kiln\"\n.file 2 \"lib/b.kiln\", 1700000000, 42\n";
  EXPECT_FALSE(ptxLineToSource(ptx, 4)); // before any .loc
  auto p = ptxLineToSource(ptx, 6);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->str(), "a.kiln:10:2");
  p = ptxLineToSource(ptx, 8);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->str(), "lib/b.kiln:20:4");
  // A new function starts without a position: line 12 must not borrow function a's.
  EXPECT_FALSE(ptxLineToSource(ptx, 12));
}

TEST(PtxSourceMap, UnknownFileOrNoDirectivesGiveNothing) {
  EXPECT_FALSE(ptxLineToSource(".loc 3 1 1\nadd;\n", 2));
  EXPECT_FALSE(ptxLineToSource("add;\nsub;\n", 2));
  EXPECT_FALSE(ptxLineToSource("", 1));
  auto p = ptxLineToSource(".file 1 \"k.kiln\"\n.loc 1 7 0\nx;\n", 3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->str(), "k.kiln:7"); // column 0 means unknown and is left out
}

TEST(PtxSourceMap, ReadsPtxasLogLines) {
  EXPECT_EQ(ptxLineInLog("ptxas application ptx input, line 23; error   : Unknown symbol"), 23u);
  EXPECT_EQ(ptxLineInLog("ptxas bad.ptx, line 15; error   : Arguments mismatch for instruction 'add'"), 15u);
  EXPECT_FALSE(ptxLineInLog("ptxas fatal   : Ptx assembly aborted due to errors"));
  EXPECT_FALSE(ptxLineInLog("in line 5; nothing"));
  EXPECT_FALSE(ptxLineInLog(", line x;"));
}

TEST(PtxSourceMap, AnnotatesTheJitLog) {
  std::string ptx = ".file 1 \"bad.kiln\"\n.entry k(\n)\n{\n.loc 1 7 9\nadd.f32 %f1, %f2, %rd1;\n}\n";
  std::string log = "ptxas application ptx input, line 6; error   : Arguments mismatch for instruction 'add'\n"
                    "ptxas fatal   : Ptx assembly aborted due to errors\n";
  EXPECT_EQ(
      annotateJitLog(log, ptx),
      "ptxas application ptx input, line 6; error   : Arguments mismatch for instruction 'add'  (at bad.kiln:7:9)\n"
      "ptxas fatal   : Ptx assembly aborted due to errors\n");
}
