//===- ResourceUsageTest.cpp - Occupancy and the ptxas report -------------===//
#include "codegen/ResourceUsage.h"

#include <gtest/gtest.h>

namespace kiln::codegen {
namespace {

TEST(Occupancy, RegistersGoToWarpsInUnitsOf256) {
  // 72 registers: 2304 per warp, 28 warps of 65536 registers, 3 programs of 8 warps.
  Occupancy o = occupancyOf(Target::SM90, 256, 72, 2048);
  EXPECT_EQ(o.programsPerSM, 3);
  EXPECT_EQ(o.warpsPerSM, 24);
  EXPECT_EQ(o.maxWarpsPerSM, 64);
  EXPECT_EQ(o.limiter, "registers");
  // 65 registers round up like 72.
  EXPECT_EQ(occupancyOf(Target::SM90, 256, 65, 0).programsPerSM, 3);
  // 64 registers: exactly 4 programs of 8 warps.
  EXPECT_EQ(occupancyOf(Target::SM90, 256, 64, 0).programsPerSM, 4);
}

TEST(Occupancy, EachLimit) {
  Occupancy threads = occupancyOf(Target::SM90, 1024, 32, 0);
  EXPECT_EQ(threads.programsPerSM, 2);
  EXPECT_EQ(threads.limiter, "threads");
  Occupancy programs = occupancyOf(Target::SM90, 32, 16, 0);
  EXPECT_EQ(programs.programsPerSM, 32);
  EXPECT_EQ(programs.limiter, "programs");
  // 100 KiB of shared memory (+1 KiB reserved): two on an H200 (228 KiB), one on an A100.
  Occupancy sm90 = occupancyOf(Target::SM90, 128, 32, 100 * 1024);
  EXPECT_EQ(sm90.programsPerSM, 2);
  EXPECT_EQ(sm90.limiter, "shared memory");
  EXPECT_EQ(occupancyOf(Target::SM80, 128, 32, 100 * 1024).programsPerSM, 1);
  // 255 registers and 1024 threads: not even one program fits.
  EXPECT_EQ(occupancyOf(Target::SM90, 1024, 255, 0).programsPerSM, 0);
}

TEST(PtxasReport, ReadsTheNamedEntry) {
  const std::string text = "ptxas info    : 0 bytes gmem\n"
                           "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
                           "ptxas info    : Function properties for other\n"
                           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                           "ptxas info    : Used 12 registers\n"
                           "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                           "ptxas info    : Function properties for k\n"
                           "    40 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
                           "ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem\n";
  std::optional<RegisterReport> r = parsePtxasReport(text, "k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->registers, 255);
  EXPECT_EQ(r->stackBytes, 40);
  EXPECT_EQ(r->spillStoreBytes, 24);
  EXPECT_EQ(r->spillLoadBytes, 16);
  EXPECT_EQ(r->staticSharedBytes, 16);
  std::optional<RegisterReport> other = parsePtxasReport(text, "other");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->registers, 12);
  EXPECT_EQ(other->staticSharedBytes, 0);
  EXPECT_FALSE(parsePtxasReport(text, "missing"));
  EXPECT_FALSE(parsePtxasReport("ptxas fatal   : Unresolved extern function\n", "k"));
}

} // namespace
} // namespace kiln::codegen
