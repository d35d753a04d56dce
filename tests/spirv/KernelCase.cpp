//===- KernelCase.cpp - Test kernels that describe their own inputs -------===//
#include "tests/spirv/KernelCase.h"

#include "support/BlockMask.h"
#include "support/FloatFormats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

namespace kiln::spirvtest {

/// A number as the spec lines write it: anything strtod reads, and `nan`, `inf`,
/// `-inf`. Clears `ok` when `word` is not a number.
static double parseNumber(const std::string &word, bool &ok) {
  if (word == "nan")
    return NAN;
  if (word == "inf")
    return INFINITY;
  if (word == "-inf")
    return -INFINITY;
  char *end = nullptr;
  double v = std::strtod(word.c_str(), &end);
  if (word.empty() || *end != '\0')
    ok = false;
  return v;
}

/// The numbers each block-mask pattern takes: at least `min`, at most `max`.
struct MaskPatternInfo {
  const char *name;
  size_t min, max;
};
constexpr MaskPatternInfo kMaskPatterns[] = {
    {"random", 2, 3},     {"causal", 0, 0},        {"sliding", 1, 1},  {"dense", 0, 0}, {"diagonal", 0, 0},
    {"longformer", 2, 2}, {"causal_window", 1, 1}, {"dilated", 2, 2}, {"bigbird", 5, 5}};

/// The rest of `@arg NAME blockmask ROWS COLS BM BN PATTERN [PARAM...] [keep_diagonal]
/// [empty_rows RB...]`: adds the mask to spec.blockMasks and its five parameters to
/// spec.args. False (with `error`) on a malformed line.
static bool parseBlockMaskArg(const std::string &name, std::istringstream &ws, CaseSpec &spec,
                              std::string &error) {
  BlockMaskSpec m;
  m.name = name;
  if (!(ws >> m.rows >> m.cols >> m.blockRows >> m.blockCols >> m.pattern)) {
    error = "a blockmask needs ROWS COLS BM BN PATTERN";
    return false;
  }
  // The same limits as the runtime's builders, so that makeInputs cannot fail.
  if (m.rows < 1 || m.cols < 1 || m.rows > (int64_t(1) << 30) || m.cols > (int64_t(1) << 30)) {
    error = "a blockmask's extents must be from 1 to 2^30";
    return false;
  }
  if (!isValidMaskBlockSize(m.blockRows) || !isValidMaskBlockSize(m.blockCols)) {
    error = "a blockmask's block sizes must be powers of two from 1 to 256";
    return false;
  }
  const MaskPatternInfo *info = nullptr;
  for (const MaskPatternInfo &p : kMaskPatterns)
    if (m.pattern == p.name)
      info = &p;
  if (!info) {
    error = "unknown blockmask pattern '" + m.pattern + "'";
    return false;
  }
  std::string word;
  bool inEmptyRows = false;
  while (ws >> word) {
    bool ok = true;
    if (word == "keep_diagonal") {
      m.keepDiagonal = true;
      inEmptyRows = false;
    } else if (word == "empty_rows") {
      inEmptyRows = true;
    } else if (inEmptyRows) {
      char *end = nullptr;
      const int64_t rb = std::strtoll(word.c_str(), &end, 10);
      const int64_t blockRows = (m.rows + m.blockRows - 1) / m.blockRows;
      if (*end != '\0' || rb < -blockRows || rb >= blockRows) {
        error = "empty_rows names '" + word + "', but the mask has " + std::to_string(blockRows) + " block rows";
        return false;
      }
      m.emptyRows.push_back(rb);
    } else if (m.params.size() < info->max) {
      m.params.push_back(parseNumber(word, ok));
    } else {
      ok = false;
    }
    if (!ok) {
      error = "unexpected '" + word + "' in a blockmask";
      return false;
    }
  }
  ws.clear(std::ios::eofbit);
  if (m.params.size() < info->min) {
    error = "pattern '" + m.pattern + "' needs " + std::to_string(info->min) + " numbers";
    return false;
  }
  // The divisors: dilated's step, BigBird's block.
  if ((m.pattern == "dilated" && m.params[1] < 1) || (m.pattern == "bigbird" && m.params[2] < 1)) {
    error = "pattern '" + m.pattern + "' divides by its " + (m.pattern == "dilated" ? "second" : "third") +
            " number, which must be at least 1";
    return false;
  }
  static constexpr DType kTypes[kBlockMaskParams] = {DType::I32, DType::I32, DType::I32, DType::I32, DType::U32};
  const int index = static_cast<int>(spec.blockMasks.size());
  for (unsigned part = 0; part < kBlockMaskParams; ++part) {
    ArgSpec a;
    a.name = name + kBlockMaskParamSuffixes[part];
    a.dtype = kTypes[part];
    a.blockMask = index;
    a.maskPart = part;
    a.isBuffer = part >= 2;
    if (part < 2) {
      a.intValue = part == 0 ? m.rows : m.cols;
      a.value = double(a.intValue);
    }
    spec.args.push_back(std::move(a));
  }
  spec.blockMasks.push_back(std::move(m));
  return true;
}

std::string readTextFile(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<CaseSpec> parseCaseSpec(const std::string &text, std::string &error) {
  CaseSpec spec;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto at = line.find("// @");
    if (at == std::string::npos)
      continue;
    bool ok = true;
    std::istringstream ws(line.substr(at + 4));
    std::string key;
    ws >> key;
    if (key == "grid") {
      for (auto &g : spec.grid)
        ws >> g;
    } else if (key == "source") {
      ws >> spec.source;
    } else if (key == "kernel") {
      ws >> spec.kernel;
    } else if (key == "reduction-split") {
      ws >> spec.reductionSplit;
    } else if (key == "fuse-quantized") {
      spec.fuseQuantized = true;
    } else if (key == "num-stages") {
      int64_t n = 0;
      ws >> n;
      spec.numStages = n;
    } else if (key == "define") {
      std::string d;
      ws >> d;
      auto eq = d.find('=');
      if (eq == std::string::npos) {
        error = "@define needs NAME=VALUE: " + line;
        return std::nullopt;
      }
      spec.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
    } else if (key == "divisible") {
      std::string name;
      int64_t d = 0;
      ws >> name >> d;
      spec.divisible.emplace_back(name, d);
    } else if (key == "tol") {
      std::string first;
      ws >> first;
      if (auto d = parseDType(first)) {
        double r = 0, a = 0;
        ws >> r >> a;
        spec.dtypeTol.push_back({*d, {r, a}});
      } else {
        spec.rtol = parseNumber(first, ok);
        ws >> spec.atol;
      }
    } else if (key == "arg") {
      ArgSpec a;
      std::string type;
      ws >> a.name >> type;
      if (type == "blockmask") {
        if (!parseBlockMaskArg(a.name, ws, spec, error)) {
          error += ": " + line;
          return std::nullopt;
        }
        continue;
      }
      auto br = type.find('[');
      std::string dt = br == std::string::npos ? type : type.substr(0, br);
      auto d = parseDType(dt);
      if (!d) {
        error = "unknown dtype in: " + line;
        return std::nullopt;
      }
      a.dtype = *d;
      if (br != std::string::npos) {
        a.isBuffer = true;
        a.count = std::stoll(type.substr(br + 1));
        ws >> a.fill;
        std::string word;
        bool afterThen = false;
        while (ws >> word) {
          if (word == "then" && !afterThen) {
            afterThen = true;
            continue;
          }
          (afterThen ? a.leading : a.fillParams).push_back(parseNumber(word, ok));
        }
        // `while (ws >> word)` ends with the stream failed at its end; that is no error.
        ws.clear(std::ios::eofbit);
        static const char *const kFills[] = {"zero",   "iota", "uniform", "ints", "normal",
                                             "signed", "bits", "const",   "bool", "specials"};
        if (std::find(std::begin(kFills), std::end(kFills), a.fill) == std::end(kFills)) {
          error = "unknown fill '" + a.fill + "' in: " + line;
          return std::nullopt;
        }
      } else {
        std::string v;
        ws >> v;
        a.value = parseNumber(v, ok);
        if (!isFloat(a.dtype) && ok) {
          // Exactly, from the text: "18446744073709551615" is no double.
          char *end = nullptr;
          errno = 0;
          a.intValue = v.starts_with('-') ? std::strtoll(v.c_str(), &end, 10)
                                          : static_cast<int64_t>(std::strtoull(v.c_str(), &end, 10));
          ok = errno == 0 && end && *end == '\0';
        }
      }
      spec.args.push_back(a);
    } else {
      error = "unknown test directive: " + line;
      return std::nullopt;
    }
    if ((ws.fail() && !ws.eof()) || !ok) {
      error = "malformed test directive: " + line;
      return std::nullopt;
    }
  }
  return spec;
}

std::pair<double, double> toleranceFor(const CaseSpec &spec, DType dtype) {
  for (const auto &[d, tol] : spec.dtypeTol)
    if (d == dtype)
      return tol;
  return {spec.rtol, spec.atol};
}

std::vector<std::pair<unsigned, int64_t>> paramDivisibility(const CaseSpec &spec) {
  std::vector<std::pair<unsigned, int64_t>> out;
  for (const auto &[name, d] : spec.divisible)
    for (size_t i = 0; i < spec.args.size(); ++i)
      if (spec.args[i].name == name)
        out.emplace_back(static_cast<unsigned>(i), d);
  return out;
}

/// Stores `v` as element `i` of a buffer of `dtype` (rounded/wrapped like a cast).
static void putElement(interp::Buffer &buf, int64_t i, double v) {
  const DType t = buf.dtype;
  const unsigned eb = dtypeBytes(t);
  uint64_t bits = 0;
  switch (t) {
  case DType::F16:
    bits = doubleToF16Bits(v);
    break;
  case DType::BF16:
    bits = doubleToBF16Bits(v);
    break;
  case DType::F8E4M3:
    bits = doubleToF8E4M3Bits(v);
    break;
  case DType::F8E5M2:
    bits = doubleToF8E5M2Bits(v);
    break;
  case DType::F32: {
    float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    bits = b;
    break;
  }
  case DType::F64:
    std::memcpy(&bits, &v, 8);
    break;
  case DType::Bool:
    bits = v != 0;
    break;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    bits = static_cast<uint64_t>(wrapToIntDType(t, static_cast<int64_t>(v)));
    break;
  }
  std::memcpy(buf.data.data() + i * eb, &bits, eb);
}

/// stdlib/block_masks.kiln's random_block: whether block (rb, cb) of BigBird's random
/// pattern is kept, by the same hash in wrapping u32 arithmetic.
static bool randomBlock(int64_t rb, int64_t cb, int64_t percent, int64_t seed) {
  uint32_t h = uint32_t(rb) * 2654435761u ^ uint32_t(cb) * 2246822519u ^ uint32_t(seed) * 3266489917u;
  h = (h ^ (h >> 15)) * 2246822519u;
  h = (h ^ (h >> 13)) * 3266489917u;
  h ^= h >> 16;
  return int64_t(h % 100u) < percent;
}

std::vector<uint8_t> drawBlockMask(const BlockMaskSpec &mask, std::mt19937_64 &rng) {
  const int64_t rows = mask.rows, cols = mask.cols, bm = mask.blockRows, bn = mask.blockCols;
  std::vector<uint8_t> keep(static_cast<size_t>(rows * cols), 0);
  auto param = [&](size_t i, double dflt) { return i < mask.params.size() ? mask.params[i] : dflt; };
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (mask.pattern == "random") {
    // Block by block, each cut at the grid's edge: a kind, then (partial) its elements.
    const double pEmpty = param(0, 0), pFull = param(1, 0), pElem = param(2, 0.5);
    for (int64_t rb = 0; rb * bm < rows; ++rb)
      for (int64_t cb = 0; cb * bn < cols; ++cb) {
        const double kind = unit(rng);
        if (kind < pEmpty)
          continue;
        const bool full = kind < pEmpty + pFull;
        for (int64_t r = rb * bm; r < std::min(rows, (rb + 1) * bm); ++r)
          for (int64_t c = cb * bn; c < std::min(cols, (cb + 1) * bn); ++c)
            keep[r * cols + c] = full || unit(rng) < pElem;
      }
  } else {
    // The element rules of kilncase's patterns (stdlib/block_masks.kiln's predicates).
    int64_t p[5];
    for (size_t i = 0; i < 5; ++i)
      p[i] = static_cast<int64_t>(param(i, 0));
    const int64_t w = p[0];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        bool k = true; // dense
        if (mask.pattern == "causal")
          k = c <= r;
        else if (mask.pattern == "sliding")
          k = std::abs(r - c) <= w;
        else if (mask.pattern == "diagonal")
          k = r == c;
        else if (mask.pattern == "longformer")
          k = std::abs(r - c) <= w || r < p[1] || c < p[1];
        else if (mask.pattern == "causal_window")
          k = c <= r && r - c < w;
        else if (mask.pattern == "dilated")
          k = std::abs(r - c) <= w && (r - c) % p[1] == 0;
        else if (mask.pattern == "bigbird")
          k = std::abs(r - c) <= w || r < p[1] || c < p[1] || randomBlock(r / p[2], c / p[2], p[3], p[4]);
        keep[r * cols + c] = k;
      }
  }
  if (mask.keepDiagonal)
    for (int64_t i = 0; i < std::min(rows, cols); ++i)
      keep[i * cols + i] = 1;
  const int64_t blockRows = (rows + bm - 1) / bm;
  for (int64_t rb : mask.emptyRows) {
    rb = (rb % blockRows + blockRows) % blockRows;
    std::fill(keep.begin() + rb * bm * cols, keep.begin() + std::min(rows, (rb + 1) * bm) * cols, 0);
  }
  return keep;
}

/// A buffer holding `words`, as parameter `a` of a block mask.
template <typename T>
static interp::Buffer maskBuffer(const ArgSpec &a, const std::vector<T> &words) {
  interp::Buffer buf;
  buf.name = a.name;
  buf.dtype = a.dtype;
  buf.data.resize(words.size() * sizeof(T));
  std::memcpy(buf.data.data(), words.data(), buf.data.size());
  return buf;
}

void makeInputs(const CaseSpec &spec, uint64_t seed, std::vector<interp::Buffer> &buffers,
                std::vector<interp::KernelArg> &args) {
  std::mt19937_64 rng(seed);
  buffers.clear();
  args.clear();
  // Each mask is drawn once, at its first parameter, in argument order.
  std::vector<std::optional<BlockMaskLayout>> masks(spec.blockMasks.size());
  for (const ArgSpec &a : spec.args) {
    if (a.blockMask >= 0) {
      std::optional<BlockMaskLayout> &layout = masks[static_cast<size_t>(a.blockMask)];
      if (!layout) {
        const BlockMaskSpec &m = spec.blockMasks[static_cast<size_t>(a.blockMask)];
        std::string error;
        layout = blockMaskFromDense(drawBlockMask(m, rng), m.rows, m.cols, m.blockRows, m.blockCols, error);
        if (!layout) // parseCaseSpec admits only masks the builder accepts
          throw std::runtime_error("block mask '" + m.name + "': " + error);
      }
      if (a.maskPart < 2) {
        args.push_back(interp::KernelArg::ofInt(a.intValue));
        continue;
      }
      args.push_back(interp::KernelArg::ofBuffer(buffers.size()));
      buffers.push_back(a.maskPart == 2   ? maskBuffer(a, layout->rowStart)
                        : a.maskPart == 3 ? maskBuffer(a, layout->blocks)
                                          : maskBuffer(a, layout->bitmaps));
      continue;
    }
    if (!a.isBuffer) {
      if (isFloat(a.dtype))
        args.push_back(interp::KernelArg::ofFloat(a.value));
      else
        args.push_back(interp::KernelArg::ofInt(a.intValue));
      continue;
    }
    interp::Buffer buf;
    buf.name = a.name;
    buf.dtype = a.dtype;
    buf.data.resize(a.count * dtypeBytes(a.dtype));
    auto param = [&](size_t i, double dflt) { return i < a.fillParams.size() ? a.fillParams[i] : dflt; };
    for (int64_t i = 0; i < a.count; ++i) {
      double v = 0;
      if (a.fill == "iota") {
        v = param(0, 0) + double(i);
      } else if (a.fill == "const") {
        v = param(0, 0);
      } else if (a.fill == "bool") {
        v = double(rng() & 1);
      } else if (a.fill == "ints") {
        v = double(std::uniform_int_distribution<int64_t>(int64_t(param(0, 0)),
                                                           int64_t(param(1, 1)))(rng));
      } else if (a.fill == "normal") {
        v = std::normal_distribution<double>(param(0, 0), param(1, 1))(rng);
      } else if (a.fill == "signed") {
        v = std::uniform_real_distribution<double>(param(0, 0.5), param(1, 2))(rng);
        if (rng() & 1)
          v = -v;
      } else if (a.fill == "bits") {
        // Stored below as raw bits, not converted like a value.
        v = 0;
      } else if (a.fill == "uniform") {
        double lo = param(0, -1), hi = param(1, 1);
        if (isFloat(a.dtype)) {
          v = std::uniform_real_distribution<double>(lo, hi)(rng);
        } else {
          v = double(std::uniform_int_distribution<int64_t>(int64_t(lo), int64_t(hi))(rng));
        }
      } else if (a.fill == "specials") {
        static const double kSpecial[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, -3e-39,
                                          65504.0, 70000.0, 1.0, -1.0, 0.5};
        uint64_t r = rng();
        v = (r % 3 == 0) ? kSpecial[(r >> 8) % std::size(kSpecial)]
                         : std::uniform_real_distribution<double>(-4, 4)(rng);
      }
      if (i < int64_t(a.leading.size()))
        v = a.leading[i];
      if (a.fill == "bits" && i >= int64_t(a.leading.size())) {
        const uint64_t bits = rng();
        std::memcpy(buf.data.data() + i * dtypeBytes(a.dtype), &bits, dtypeBytes(a.dtype));
        continue;
      }
      putElement(buf, i, v);
    }
    args.push_back(interp::KernelArg::ofBuffer(buffers.size()));
    buffers.push_back(std::move(buf));
  }
}

std::vector<uint8_t> scalarBytes(DType dtype, const ArgSpec &a) {
  std::vector<uint8_t> out(dtypeBytes(dtype));
  if (!isFloat(dtype)) {
    std::memcpy(out.data(), &a.intValue, out.size()); // little-endian: the low bytes
    return out;
  }
  interp::Buffer one;
  one.dtype = dtype;
  one.data.resize(dtypeBytes(dtype));
  putElement(one, 0, a.value);
  std::memcpy(out.data(), one.data.data(), out.size());
  return out;
}

/// Element `i` as a double (floats) or as an integer value (others).
static double floatAt(DType t, const std::byte *p) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, dtypeBytes(t));
  switch (t) {
  case DType::F16:
    return f16BitsToDouble(uint16_t(bits));
  case DType::BF16:
    return bf16BitsToDouble(uint16_t(bits));
  case DType::F8E4M3:
    return f8E4M3BitsToDouble(uint8_t(bits));
  case DType::F8E5M2:
    return f8E5M2BitsToDouble(uint8_t(bits));
  case DType::F32: {
    float f;
    uint32_t b = uint32_t(bits);
    std::memcpy(&f, &b, 4);
    return f;
  }
  case DType::F64: {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    break;
  }
  return 0;
}

std::string compareBuffers(const interp::Buffer &expected, const std::vector<std::byte> &actual,
                           double rtol, double atol) {
  if (expected.data.size() != actual.size())
    return "buffer '" + expected.name + "' changed size";
  const DType t = expected.dtype;
  const unsigned eb = dtypeBytes(t);
  const int64_t n = expected.numElements();
  std::ostringstream os;
  int mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::byte *pe = expected.data.data() + i * eb, *pa = actual.data() + i * eb;
    bool ok;
    std::string se, sa;
    if (isFloat(t)) {
      double e = floatAt(t, pe), a = floatAt(t, pa);
      if (std::isnan(e) || std::isnan(a))
        ok = std::isnan(e) && std::isnan(a);
      else if (std::isinf(e) || std::isinf(a))
        ok = e == a;
      else
        ok = std::fabs(e - a) <= atol + rtol * std::fabs(e) ||
             (rtol == 0 && atol == 0 && std::memcmp(pe, pa, eb) == 0);
      if (rtol == 0 && atol == 0 && !std::isnan(e))
        ok = ok && std::signbit(e) == std::signbit(a);
      std::ostringstream x, y;
      x.precision(17);
      y.precision(17);
      x << e;
      y << a;
      se = x.str();
      sa = y.str();
    } else {
      ok = std::memcmp(pe, pa, eb) == 0;
      uint64_t be = 0, ba = 0;
      std::memcpy(&be, pe, eb);
      std::memcpy(&ba, pa, eb);
      se = std::to_string(be);
      sa = std::to_string(ba);
    }
    if (!ok) {
      if (mismatches < 8)
        os << "  " << expected.name << "[" << i << "]: expected " << se << ", got " << sa << "\n";
      ++mismatches;
    }
  }
  if (mismatches)
    os << "  (" << mismatches << " of " << n << " elements of '" << expected.name
       << "' differ)\n";
  return os.str();
}

uint64_t testSeed() {
  if (const char *s = std::getenv("KILN_SEED"))
    return std::strtoull(s, nullptr, 10);
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

} // namespace kiln::spirvtest
