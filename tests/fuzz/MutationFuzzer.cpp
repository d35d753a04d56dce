//===- MutationFuzzer.cpp - A bounded-time mutation fuzzer of the compiler ===//
//
//   kiln-fuzz-frontend --seconds 60 [--seed N] SEED_DIR_OR_FILE...
//   kiln-fuzz-codegen  --seconds 60 [--seed N] SEED_DIR_OR_FILE...
//
// Starts from valid Kiln programs (examples, test programs, stdlib), applies random
// token-aware mutations (byte flips, deletions, duplications, splices between files,
// keyword and literal insertions, line swaps), and sends each mutant through the whole
// frontend and the Tile IR pipeline (FuzzTarget.cpp); kiln-fuzz-codegen, this file built
// with KILN_FUZZ_CODEGEN, then through the code generator too (CodegenBackend.cpp). The
// frontend fuzzer is built with AddressSanitizer and UndefinedBehaviorSanitizer in CI;
// a crash, sanitizer report, internal error or hang (SIGALRM after 10 s per input, 60 s
// with the code generator) fails the run and prints the input. The frontend target also
// builds as a libFuzzer fuzzer (LibFuzzerMain.cpp) where clang is used.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"
#ifdef KILN_FUZZ_CODEGEN
#include "tests/fuzz/CodegenBackend.h"
#define KILN_FUZZER_NAME "kiln-fuzz-codegen"
// A mutant may legitimately take seconds in LLVM: a `const BLOCK = 65536` tile is 512
// unrolled elements a thread, compiled three times (5 s for one target).
#define KILN_FUZZ_INPUT_SECONDS 60
#else
#define KILN_FUZZER_NAME "kiln-fuzz-frontend"
#define KILN_FUZZ_INPUT_SECONDS 10
#endif
#define KILN_STRINGIFY_(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY_(x)

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string currentInput; // what a hang report prints

extern "C" void onAlarm(int) {
  const char msg[] = "\n*** fuzz failure: hang (one input ran over " KILN_STRINGIFY(KILN_FUZZ_INPUT_SECONDS) " s)\n--- input ---\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  ignored = write(2, currentInput.data(), currentInput.size());
  (void)ignored;
  _exit(3);
}

const char *const kFragments[] = {
    "kernel", "fn", "let", "var", "for", "in", "range", "static_range", "while", "if", "else",
    "return", "import", "const", "graph", "launch", "@num_warps(4)", "@autotune(configs = [{B: 1}], key = [n])",
    "tile<f32, [0]>", "tile<f32, [1048576, 1048576]>", "*f32", "*", "block_mask<64, 64>", "(", ")", "[", "]",
    "{", "}", "<", ">", ",", ";", ":", "=", "+=", ">>=", "&&", "||", "!", "~", "-", "..", ".", ".to(bf16)",
    "[:, None]", "[None, :]", "0", "-1", "2147483648", "99999999999999999999999", "1e400", "0x", "1_",
    "nan", "inf", "true", "\"", "\"stdlib/none.kiln\"", "/*", "*/", "//", "\\", "None", "program_id(7)",
    "arange(0, 0)", "arange(5, 1)", "zeros([0], f32)", "sum(x, axis = 9)", "reshape(x, [3])", "dot(a, a)",
    "x / 0", "x % 0", "1 << 70", "static_assert(false, \"no\")", "reduce(x, 0, nosuch)", "split(x)",
    "load(x)", "store(x, 1.0)", "atomic_cas(x, 1, 2)", "topk(x, 0, 0)", "\xff", "\xc3", "\t", "\n",
};

class Mutator {
public:
  Mutator(uint64_t seed, const std::vector<std::string> &corpus) : rng_(seed), corpus_(corpus) {}

  std::string mutate(std::string s) {
    int steps = 1 + static_cast<int>(pick(4));
    for (int i = 0; i < steps; ++i)
      s = mutateOnce(std::move(s));
    return s;
  }

private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::string mutateOnce(std::string s) {
    size_t pos = pick(s.size() + 1);
    switch (pick(8)) {
    case 0: // flip a byte
      if (!s.empty())
        s[pick(s.size())] = static_cast<char>(pick(256));
      return s;
    case 1: { // delete a range
      size_t len = 1 + pick(16);
      if (pos < s.size())
        s.erase(pos, len);
      return s;
    }
    case 2: { // duplicate a range
      if (s.empty())
        return s;
      size_t from = pick(s.size());
      size_t len = 1 + pick(std::min<size_t>(64, s.size() - from));
      s.insert(pos, s.substr(from, len));
      return s;
    }
    case 3: // insert a fragment
      s.insert(pos, std::string(" ") + kFragments[pick(std::size(kFragments))] + " ");
      return s;
    case 4: { // splice a piece of another file
      const std::string &other = corpus_[pick(corpus_.size())];
      if (other.empty())
        return s;
      size_t from = pick(other.size());
      s.insert(pos, other.substr(from, 1 + pick(200)));
      return s;
    }
    case 5: { // swap two lines
      std::vector<std::string> lines;
      std::stringstream ss(s);
      for (std::string line; std::getline(ss, line);)
        lines.push_back(line);
      if (lines.size() > 1)
        std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
      std::string out;
      for (auto &l : lines)
        out += l + "\n";
      return out;
    }
    case 6: { // deep nesting
      size_t depth = 1 + pick(300);
      std::string open(depth, "([{"[pick(3)]);
      s.insert(pos, open);
      return s;
    }
    default: { // replace a digit run by a boundary value
      size_t d = s.find_first_of("0123456789", pos);
      if (d == std::string::npos)
        return s;
      size_t e = s.find_first_not_of("0123456789", d);
      static const char *values[] = {"0", "1", "-1", "3", "2147483647", "4294967296", "65536", "17"};
      s.replace(d, (e == std::string::npos ? s.size() : e) - d, values[pick(std::size(values))]);
      return s;
    }
    }
  }

  std::mt19937_64 rng_;
  const std::vector<std::string> &corpus_;
};

void collectSeeds(const std::filesystem::path &p, std::vector<std::string> &out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> files;
    for (auto &entry : fs::recursive_directory_iterator(p, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".kiln")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (auto &f : files)
      collectSeeds(f, out);
    return;
  }
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!ss.str().empty())
    out.push_back(ss.str());
}

} // namespace

int main(int argc, char **argv) {
  double seconds = 30;
  uint64_t seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else
      collectSeeds(argv[i], corpus);
  }
  if (corpus.empty()) {
    std::fprintf(stderr, KILN_FUZZER_NAME ": no seed .kiln files given\n");
    return 2;
  }
  std::signal(SIGALRM, onAlarm);
  std::printf(KILN_FUZZER_NAME ": %zu seeds, %.0f s, seed %llu\n", corpus.size(), seconds,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  Mutator mutator(seed, corpus);
#ifdef KILN_FUZZ_CODEGEN
  const kiln::fuzz::Backend backend = kiln::fuzz::codegenBackend();
#else
  const kiln::fuzz::Backend backend;
#endif
  auto start = std::chrono::steady_clock::now();
  uint64_t runs = 0;
  // Every seed unmutated first: they must all survive, too.
  for (const std::string &s : corpus) {
    currentInput = s;
    alarm(KILN_FUZZ_INPUT_SECONDS);
    kiln::fuzz::compileOneInput(reinterpret_cast<const uint8_t *>(s.data()), s.size(), backend);
    alarm(0);
    ++runs;
  }
  std::mt19937_64 choose(seed ^ 0x9e3779b97f4a7c15ull);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    currentInput = mutator.mutate(corpus[choose() % corpus.size()]);
    alarm(KILN_FUZZ_INPUT_SECONDS);
    kiln::fuzz::compileOneInput(reinterpret_cast<const uint8_t *>(currentInput.data()), currentInput.size(),
                                 backend);
    alarm(0);
    ++runs;
  }
  std::printf(KILN_FUZZER_NAME ": %llu inputs, no crash, hang or internal error\n",
              static_cast<unsigned long long>(runs));
  return 0;
}
