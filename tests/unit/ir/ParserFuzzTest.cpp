//===- ParserFuzzTest.cpp - Random mutations of .tir text never crash -----===//
//
// Mutates the canonical inputs at random (seeded, so a failure reproduces) and feeds
// each result through parse -> verify -> print -> parse. Whatever the text, the parser
// must return cleanly; when it accepts and the module verifies, printing must be stable
// and cloning must preserve the text. Any internal error thrown along the way fails.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::ir::test;

namespace {

const char *const kFragments[] = {
    "%", "%x", "@", "^(", "):", "{", "}", "[", "]", "<", ">", ",", ":", "=", "*", "-", "\"",
    "\\", "0", "-1", "99999999999999999999", "1.5", "1e999", "nan", "inf", "tile<", "f32",
    "i32", "bool", "*f32", "add", "yield", "return", "for", "if", "while", "condition",
    "reduce", "loc(", "loc(unknown)", "\"f\":1:2", "kernel", "{axis = 0}", "\n", " ", "//",
    "\x00", "\xff"};

std::string mutate(std::string text, std::mt19937 &rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t at = pick(text.size() + 1);
    switch (rng() % 6) {
    case 0: // delete a range
      text.erase(at, 1 + pick(12));
      break;
    case 1: { // duplicate a range
      std::string piece = text.substr(at, 1 + pick(40));
      text.insert(pick(text.size() + 1), piece);
      break;
    }
    case 2: { // insert a fragment
      std::string frag = kFragments[pick(std::size(kFragments))];
      if (frag.empty())
        frag.assign(1, '\0');
      text.insert(at, frag);
      break;
    }
    case 3: // flip one byte
      if (!text.empty())
        text[pick(text.size())] = static_cast<char>(rng() & 0xff);
      break;
    case 4: // replace a digit
      for (size_t i = at; i < text.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(text[i]))) {
          text[i] = static_cast<char>('0' + rng() % 10);
          break;
        }
      break;
    default: { // swap two lines
      size_t a = text.rfind('\n', at), b = text.find('\n', at + 1);
      if (a != std::string::npos && b != std::string::npos) {
        size_t c = text.find('\n', b + 1);
        if (c != std::string::npos) {
          std::string first = text.substr(a + 1, b - a), second = text.substr(b + 1, c - b);
          text.replace(a + 1, c - a, second + first);
        }
      }
      break;
    }
    }
  }
  return text;
}

TEST(ParserFuzz, MutatedInputsNeverCrash) {
  std::vector<std::string> seeds;
  for (const char *name : {"all_ops.tir", "constants.tir", "locations.tir"}) {
    seeds.push_back(readFile(inputPath(name)));
    ASSERT_FALSE(seeds.back().empty()) << name;
  }
  std::mt19937 rng(20261129);
  unsigned accepted = 0, verified = 0;
  // KILN_FUZZ_ITERATIONS runs a longer session (e.g. under the sanitizers).
  const char *env = std::getenv("KILN_FUZZ_ITERATIONS");
  const unsigned iterations = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 3000;
  for (unsigned i = 0; i < iterations; ++i) {
    std::string text = mutate(seeds[i % seeds.size()], rng);
    try {
      Parsed p = parseText(text);
      if (!p.module) {
        ASSERT_FALSE(p.diags.empty()) << "rejected without a diagnostic:\n" << text;
        continue;
      }
      ++accepted;
      // Whatever the parser accepts it can read back from its printed form, valid or
      // not (every accepted op passed its local rules and names resolved in scope).
      bool valid = verify(*p.module).empty();
      verified += valid;
      for (PrintOptions options : {PrintOptions{false}, PrintOptions{true}}) {
        std::string once = printModule(*p.module, options);
        Parsed again = parseText(once);
        ASSERT_TRUE(again.module) << "printed text does not parse: " << again.first() << "\n"
                                  << once;
        ASSERT_EQ(printModule(*again.module, options), once) << "from:\n" << text;
      }
      if (valid) {
        EXPECT_EQ(printModule(*cloneModule(*p.module)), printModule(*p.module));
      }
    } catch (const std::exception &e) {
      FAIL() << "exception " << e.what() << " on input:\n" << text;
    }
  }
  // The mutations must leave enough valid texts to exercise the round trip.
  EXPECT_GT(accepted, iterations / 20);
  EXPECT_GT(verified, iterations / 40);
  RecordProperty("accepted", static_cast<int>(accepted));
  RecordProperty("verified", static_cast<int>(verified));
}

} // namespace
