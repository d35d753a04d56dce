//===- ChoiceTest.cpp - Choosing the fastest way to compute one result ----===//
//
// The stand-in driver times a launch by a number in its PTX (a kernel compiled with
// TAG 7001 takes 0.5 ms, with 7002 0.125 ms) and adds the times of the launches between
// two events, so a candidate of two fast launches (0.25 ms) beats one of one slow launch
// (0.5 ms), and the test knows which must win.
//
//===----------------------------------------------------------------------===//
#include "JitFixture.h"

#include <stdexcept>

namespace kiln::jit::test {
namespace {

const char *kTagged = R"(kernel tagged(x: *i32, n: i32, const TAG: i32 = 0) {
    let offs = program_id(0) * 64 + arange(0, 64);
    store(x + offs, offs * 0 + TAG, mask = offs < n);
}
)";

class Choice : public JitOnFakeCuda {
protected:
  void SetUp() override {
    JitOnFakeCuda::SetUp();
    fake.setLaunchMs("7001", 0.5);
    fake.setLaunchMs("7002", 0.125);
    x = runtime->alloc<int32_t>(1024);
    x.fill(0);
  }

  /// "fused": one slow launch; "split": two fast ones.
  std::vector<Jit::Candidate> candidates(Jit &jit) {
    auto slow = std::make_shared<JitKernel>(jit.compile_string(kTagged, "tagged", {{"TAG", 7001}}));
    auto fast = std::make_shared<JitKernel>(jit.compile_string(kTagged, "tagged", {{"TAG", 7002}}));
    return {{"fused", [this, slow] { slow->launch({16, 1, 1}, x, 1024); }},
            {"split", [this, fast] {
               fast->launch({8, 1, 1}, x, 512);
               fast->launch({8, 1, 1}, x, 1024);
             }}};
  }

  Buffer x;
};

TEST_F(Choice, TimesEveryCandidateAndKeepsTheFastest) {
  Jit::Options options;
  options.autotune_warmup = 1;
  options.autotune_runs = 3;
  auto jit = makeJit(options);
  auto cands = candidates(*jit);
  EXPECT_EQ(jit->choose("scope", "n=1024", cands), 1u);
  EXPECT_EQ(fake.launchCount(), (1 + 3) * 1 + (1 + 3) * 2) << "each candidate: 1 warm-up and 3 timed runs";

  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "search 'scope' for n=1024: 'split' (0.2500 ms; 'fused' 0.5000 ms; the search took "))
      << notes[0];
  auto records = filesEndingIn(cache.path(), ".choice");
  ASSERT_EQ(records.size(), 1u);
  std::string record = readFile(records[0]);
  EXPECT_TRUE(contains(record, "key n=1024\n")) << record;
  EXPECT_TRUE(contains(record, "best 1 split\n")) << record;
  EXPECT_TRUE(contains(record, "time 0 0.500000 ms fused\n")) << record;

  // The same key again, in this JIT: nothing runs.
  EXPECT_EQ(jit->choose("scope", "n=1024", cands), 1u);
  EXPECT_EQ(fake.launchCount(), 12);
}

TEST_F(Choice, TheChoiceOnDiskIsReusedAndEachKeyHasItsOwn) {
  {
    auto jit = makeJit();
    jit->choose("scope", "n=1024", candidates(*jit));
  }
  int afterSearch = fake.launchCount();
  EXPECT_EQ(afterSearch, 3 * (2 + 5)) << "default: 2 warm-up and 5 timed runs per candidate";

  // A new JIT, as a later process: the record comes from disk.
  auto jit = makeJit();
  auto cands = candidates(*jit);
  EXPECT_EQ(jit->choose("scope", "n=1024", cands), 1u);
  EXPECT_EQ(fake.launchCount(), afterSearch);
  EXPECT_TRUE(logged(KILN_JIT_NOTE).size() == 1u) << "only the measured search is noted";

  // Another key, another search name, or other candidates: measured anew.
  EXPECT_EQ(jit->choose("scope", "n=2048", cands), 1u);
  EXPECT_EQ(fake.launchCount(), 2 * afterSearch);
  EXPECT_EQ(jit->choose("other-scope", "n=1024", cands), 1u);
  EXPECT_EQ(fake.launchCount(), 3 * afterSearch);
  std::vector<Jit::Candidate> reversed{cands[1], cands[0]};
  EXPECT_EQ(jit->choose("scope", "n=1024", reversed), 0u) << "'split' is first now";
  EXPECT_EQ(fake.launchCount(), 4 * afterSearch);
  EXPECT_EQ(filesEndingIn(cache.path(), ".choice").size(), 4u);
}

TEST_F(Choice, ACandidateThatFailsIsSkippedWithItsReason) {
  auto jit = makeJit();
  auto cands = candidates(*jit);
  cands.insert(cands.begin(), {"broken", [] { throw std::runtime_error("no kernel for this scope"); }});
  EXPECT_EQ(jit->choose("scope", "n=1024", cands), 2u);
  auto notes = logged(KILN_JIT_NOTE);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "'broken' skipped")) << notes[0];
  EXPECT_TRUE(contains(notes[0], "not kept on disk, as a candidate failed")) << notes[0];
  EXPECT_TRUE(filesEndingIn(cache.path(), ".choice").empty()) << "a later process measures again";
  int launches = fake.launchCount();
  EXPECT_EQ(jit->choose("scope", "n=1024", cands), 2u) << "kept for this JIT";
  EXPECT_EQ(fake.launchCount(), launches);

  // None runs: an error that lists each reason, and no record.
  std::vector<Jit::Candidate> broken{
      {"a", [] { throw std::runtime_error("first reason"); }},
      {"b", [] { throw RuntimeError(KILN_ERROR_OUT_OF_MEMORY, "second reason"); }}};
  try {
    jit->choose("hopeless", "", broken);
    FAIL() << "no candidate ran";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_LAUNCH);
    EXPECT_TRUE(contains(e.what(), "search 'hopeless': no candidate could run:\n  a: first reason\n  b: second reason"))
        << e.what();
  }
  EXPECT_TRUE(filesEndingIn(cache.path(), ".choice").empty());
}

TEST_F(Choice, PreservedBuffersAreRestoredAfterTheRuns) {
  fake.markMemory(1); // every launch counts itself in the memory its pointers name
  auto jit = makeJit();
  jit->choose("scope", "n=1024", candidates(*jit), {x});
  EXPECT_EQ(x.download<uint32_t>()[0], 0u) << "the runs' writes were undone";

  // Without `preserve` the runs' writes stay: the caller said nothing needs keeping.
  jit->choose("scope", "n=4096", candidates(*jit));
  EXPECT_NE(x.download<uint32_t>()[0], 0u);
}

TEST_F(Choice, OneCandidateRunsNothingAndBadRequestsAreRefused) {
  auto jit = makeJit();
  auto cands = candidates(*jit);
  EXPECT_EQ(jit->choose("scope", "n=1024", {cands[0]}), 0u);
  EXPECT_EQ(fake.launchCount(), 0);

  auto refused = [&](const std::string &search, const std::vector<Jit::Candidate> &list, const std::string &why) {
    try {
      jit->choose(search, "k", list);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const RuntimeError &e) {
      EXPECT_EQ(e.status(), KILN_ERROR_INVALID_VALUE);
      EXPECT_TRUE(contains(e.what(), why)) << e.what();
    }
  };
  refused("", cands, "search is empty");
  refused("scope", {}, "search 'scope' has no candidates");
  refused("scope", {cands[0], cands[0]}, "two candidates are named 'fused'");
  refused("scope", {{"", cands[0].run}, cands[1]}, "candidate 0 has no name");
  EXPECT_EQ(fake.launchCount(), 0);

  size_t chosen = 0;
  EXPECT_EQ(kiln_jit_choose(jit->handle(), nullptr, "", nullptr, 0, nullptr, nullptr, nullptr, 0, &chosen),
            KILN_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(kiln_last_error(), "kiln_jit_choose: null"));
}

} // namespace
} // namespace kiln::jit::test
