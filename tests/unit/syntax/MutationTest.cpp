//===- MutationTest.cpp - Random edits of valid programs never crash ------===//
//
// A small, deterministic mutation loop: valid programs are cut, spliced, and sprinkled
// with tokens and bytes, then parsed. Whatever the result, parsing must finish, report
// only syntax-level codes at real locations, and return a module exactly when nothing
// was reported.
//
//===----------------------------------------------------------------------===//
#include "SyntaxTestSupport.h"

#include "frontend/ASTPrinter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>

using namespace kiln;
using namespace kiln::test;

static const char *const kSeeds[] = {
    R"(import "lib.kiln";
const EPS = 1e-6;
fn silu(x) { return x * sigmoid(x); }
@autotune(configs = [{BLOCK: 64, num_warps: 4}, {BLOCK: 128, num_warps: 8}], key = [n])
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, load(x + offs, mask = m) + load(y + offs, mask = m), mask = m);
})",
    R"(kernel softmax(x: *f32, y: *f32, n: i32, const B: i32 = 128) {
    var acc = zeros([B], f32);
    for i in range(0, n, B) {
        let t: tile<f32, [B]> = load(x + i + arange(0, B), mask = i < n, other = -inf);
        acc = maximum(acc, t);
    }
    if acc.max() > 0.0 { print("big", acc); } else if true { assert(false, "x\n"); } else {}
    let (a, b) = split(acc[:, None]);
    while x != 0 { x -= 1; }
})",
    R"(graph g(x: *bf16, n: i32) {
    launch k1[(1,)](x, n);
    launch k2[(n / 64, 2)](x, n = n);
}
kernel s(mask: block_mask<64, 64>) { for kb in blocks(mask, 0) { let u = ~kb ^ 0x2A; } })",
};

static const char *const kInserts[] = {
    "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "@", "=", "+=", "<<=", "-", "!", "~",
    "*", "&&", "||", "<", ">", ">>", "let", "var", "fn", "kernel", "if", "else", "for",
    "in", "range", "return", "launch", "None", "tile<", "1e", "0x", "1_", "\"", "\"\\q\"",
    "/*", "*/", "//", "#", "'", "\xC3\xA9", "\t", "\n", " ", "x", "42", "3.5",
};

TEST(Mutation, RandomEditsNeverCrash) {
  std::mt19937 rng(20240607);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // A fixed number of runs keeps the test deterministic; the deadline only bounds it on
  // a slow (e.g. sanitized) build.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  size_t runs = 0, accepted = 0;
  for (; runs < 1500 && std::chrono::steady_clock::now() < deadline; ++runs) {
    std::string text = kSeeds[pick(std::size(kSeeds))];
    int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
      size_t at = text.empty() ? 0 : pick(text.size() + 1);
      switch (pick(5)) {
      case 0: // delete a range
        text.erase(at, 1 + pick(12));
        break;
      case 1: // insert a token-like string
        text.insert(at, kInserts[pick(std::size(kInserts))]);
        break;
      case 2: { // duplicate a range elsewhere
        size_t from = pick(text.size() + 1);
        text.insert(at, text.substr(from, 1 + pick(30)));
        break;
      }
      case 3: // overwrite a byte with any value
        if (!text.empty())
          text[pick(text.size())] = static_cast<char>(pick(256));
        break;
      default: // truncate
        text.resize(at);
        break;
      }
    }
    Parsed p = parseText(text);
    for (const Diagnostic &d : p.diags) {
      EXPECT_LE(static_cast<int>(d.code), static_cast<int>(DiagCode::BadLiteral))
          << "non-syntax code " << diagCodeString(d.code) << " for:\n" << text;
      EXPECT_GE(d.loc.line, 1u) << text;
      EXPECT_GE(d.loc.col, 1u) << text;
      EXPECT_FALSE(d.message.empty());
    }
    EXPECT_EQ(p.ok(), p.diags.empty()) << text << "\n" << p.allDiags();
    if (p.ok()) {
      ++accepted;
      EXPECT_EQ(parseText(text).ast, p.ast); // deterministic
    }
  }
  EXPECT_GT(runs, 100u);
  EXPECT_GT(accepted, 0u); // some edits (whitespace, comments) keep programs valid
}

TEST(Mutation, EverySeedParses) {
  for (const char *seed : kSeeds) {
    Parsed p = parseText(seed);
    EXPECT_TRUE(p.ok()) << seed << "\n" << p.allDiags();
  }
}
