//===- Task.cpp - Reading tasks and drawing their inputs ---------------------===//
#include "agent/Task.h"

#include "support/FloatFormats.h"
#include "support/ReadFile.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

namespace kiln::agent {

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  unsigned bits;
  bool isFloat, isSigned;
};
constexpr DTypeInfo kDTypes[] = {
#define KILN_AGENT_DTYPE(E, S, B, F, SG) {DType::E, S, B, F, SG},
    KILN_DTYPES(KILN_AGENT_DTYPE)
#undef KILN_AGENT_DTYPE
};

const DTypeInfo &infoOf(DType t) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == t)
      return i;
  return kDTypes[0];
}

std::optional<DType> dtypeNamed(const std::string &name) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name)
      return i.dtype;
  return std::nullopt;
}

std::optional<ArgSource> parseSource(const nlohmann::json &v, std::string &error) {
  ArgSource s;
  if (v.is_boolean()) {
    s.scalar = v.get<bool>() ? "true" : "false";
    return s;
  }
  if (v.is_number_integer()) {
    s.scalar = std::to_string(v.get<int64_t>());
    return s;
  }
  if (v.is_number()) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", v.get<double>());
    s.scalar = text;
    return s;
  }
  if (!v.is_object()) {
    error = "an argument is a number, true/false or an object such as {\"normal\": [4, 8]}";
    return std::nullopt;
  }
  static const std::pair<const char *, ArgSource::Kind> kinds[] = {{"normal", ArgSource::Kind::Normal},
                                                                    {"uniform", ArgSource::Kind::Uniform},
                                                                    {"zeros", ArgSource::Kind::Zeros},
                                                                    {"randint", ArgSource::Kind::Randint}};
  bool found = false;
  for (const auto &[key, kind] : kinds)
    if (v.contains(key)) {
      if (found) {
        error = "an argument names two generators";
        return std::nullopt;
      }
      found = true;
      s.kind = kind;
      const nlohmann::json &shape = v.at(key);
      if (!shape.is_array() || shape.size() > 8) {
        error = std::string("\"") + key + "\" takes a shape: a list of at most 8 sizes";
        return std::nullopt;
      }
      int64_t elements = 1;
      for (const auto &d : shape) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 31)) {
          error = std::string("\"") + key + "\": every size is an integer from 0 to 2^31";
          return std::nullopt;
        }
        s.shape.push_back(d.get<int64_t>());
        elements *= std::max<int64_t>(d.get<int64_t>(), 1);
        if (elements > (int64_t(1) << 30)) {
          error = std::string("\"") + key + "\": more than 2^30 elements";
          return std::nullopt;
        }
      }
    }
  if (!found) {
    error = "an argument object needs one of \"normal\", \"uniform\", \"zeros\" or \"randint\"";
    return std::nullopt;
  }
  if (v.contains("low"))
    s.low = v.at("low").get<double>();
  if (v.contains("high"))
    s.high = v.at("high").get<double>();
  if (s.kind == ArgSource::Kind::Randint && !v.contains("high")) {
    error = "\"randint\" needs \"low\" and \"high\"";
    return std::nullopt;
  }
  if (v.contains("dtype")) {
    std::optional<DType> t = v.at("dtype").is_string() ? dtypeNamed(v.at("dtype").get<std::string>()) : std::nullopt;
    if (!t) {
      error = "unknown \"dtype\" " + v.at("dtype").dump();
      return std::nullopt;
    }
    s.dtype = *t;
  }
  return s;
}

std::optional<std::vector<TaskCase>> parseCases(const nlohmann::json &list, const char *what, std::string &error) {
  std::vector<TaskCase> out;
  if (!list.is_array()) {
    error = std::string("\"") + what + "\" is a list of cases";
    return std::nullopt;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json &c = list[i];
    const std::string where = std::string(what) + "[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("args") || !c.at("args").is_object()) {
      error = where + " needs \"args\": an object of the entry's arguments by name";
      return std::nullopt;
    }
    TaskCase tc;
    for (const auto &[name, v] : c.at("args").items()) {
      std::optional<ArgSource> s = parseSource(v, error);
      if (!s) {
        error = where + ".args." + name + ": " + error;
        return std::nullopt;
      }
      tc.args.emplace_back(name, *s);
    }
    if (c.contains("grid")) {
      const nlohmann::json &g = c.at("grid");
      if (!g.is_array() || g.empty() || g.size() > 3) {
        error = where + ".grid is a list of one to three sizes";
        return std::nullopt;
      }
      std::array<int64_t, 3> grid = {1, 1, 1};
      for (size_t d = 0; d < g.size(); ++d)
        grid[d] = g[d].get<int64_t>();
      tc.grid = grid;
    }
    out.push_back(std::move(tc));
  }
  return out;
}

} // namespace

unsigned elementBytes(DType dtype) { return infoOf(dtype).bits <= 8 ? 1 : infoOf(dtype).bits / 8; }
bool isFloatDType(DType dtype) { return infoOf(dtype).isFloat; }

std::optional<Task> readTask(const std::string &path, std::string &error) {
  std::string why;
  std::optional<std::string> text = readWholeFile(path, why, 16u << 20);
  if (!text) {
    error = "cannot read '" + path + "': " + why;
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "'" + path + "' is not a JSON object";
    return std::nullopt;
  }
  Task t;
  try {
    for (const char *key : {"name", "prompt", "entry", "reference"})
      if (!j.contains(key) || !j.at(key).is_string()) {
        error = std::string("the task needs \"") + key + "\" (a string)";
        return std::nullopt;
      }
    t.name = j.at("name").get<std::string>();
    t.prompt = j.at("prompt").get<std::string>();
    t.entry = j.at("entry").get<std::string>();
    t.reference = (std::filesystem::path(path).parent_path() / j.at("reference").get<std::string>()).string();
    if (!j.contains("check") || !j.at("check").is_array() || j.at("check").empty()) {
      error = "the task needs \"check\": the outputs compared, a non-empty list of parameter names";
      return std::nullopt;
    }
    for (const auto &c : j.at("check"))
      t.check.push_back(c.get<std::string>());
    if (j.contains("rtol"))
      t.rtol = j.at("rtol").get<double>();
    if (j.contains("atol"))
      t.atol = j.at("atol").get<double>();
    std::optional<std::vector<TaskCase>> cases = parseCases(j.value("cases", nlohmann::json()), "cases", error);
    if (!cases)
      return std::nullopt;
    t.cases = std::move(*cases);
    if (t.cases.empty()) {
      error = "the task needs at least one case in \"cases\"";
      return std::nullopt;
    }
    if (j.contains("hidden_cases")) {
      std::optional<std::vector<TaskCase>> hidden = parseCases(j.at("hidden_cases"), "hidden_cases", error);
      if (!hidden)
        return std::nullopt;
      t.hiddenCases = std::move(*hidden);
    }
    if (j.contains("large_cases")) {
      std::optional<std::vector<TaskCase>> large = parseCases(j.at("large_cases"), "large_cases", error);
      if (!large)
        return std::nullopt;
      t.largeCases = std::move(*large);
    }
  } catch (const nlohmann::json::exception &e) {
    error = std::string("malformed task: ") + e.what();
    return std::nullopt;
  }
  for (const std::string &c : t.check) {
    bool isArray = false;
    for (const auto &[name, s] : t.cases.front().args)
      isArray |= name == c && s.kind != ArgSource::Kind::Scalar;
    if (!isArray) {
      error = "\"check\" names '" + c + "', which the first case does not give an array";
      return std::nullopt;
    }
  }
  return t;
}

NpyArray drawArray(const ArgSource &s, std::mt19937_64 &rng) {
  NpyArray a;
  a.descr = npyDescrFor(s.dtype);
  a.shape = s.shape;
  size_t n = 1;
  for (int64_t d : s.shape)
    n *= static_cast<size_t>(d);
  const unsigned bytes = elementBytes(s.dtype);
  a.data.assign(n * bytes, std::byte{0});
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(s.low, s.high);
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    switch (s.kind) {
    case ArgSource::Kind::Normal: v = normal(rng); break;
    case ArgSource::Kind::Uniform: v = uniform(rng); break;
    case ArgSource::Kind::Randint:
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(s.low),
                                                                     static_cast<int64_t>(s.high) - 1)(rng));
      break;
    default: break;
    }
    uint64_t bits = 0;
    switch (s.dtype) {
    case DType::F64: std::memcpy(&bits, &v, 8); break;
    case DType::F32: {
      const float f = static_cast<float>(v);
      std::memcpy(&bits, &f, 4);
      break;
    }
    case DType::F16: bits = doubleToF16Bits(v); break;
    case DType::BF16: bits = doubleToBF16Bits(v); break;
    case DType::F8E4M3: bits = doubleToF8E4M3Bits(v); break;
    case DType::F8E5M2: bits = doubleToF8E5M2Bits(v); break;
    default: bits = static_cast<uint64_t>(wrapToIntDType(s.dtype, static_cast<int64_t>(std::llround(v)))); break;
    }
    std::memcpy(a.data.data() + i * bytes, &bits, bytes);
  }
  return a;
}

double elementValue(const NpyArray &a, DType dtype, size_t i) {
  const unsigned bytes = elementBytes(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, a.data.data() + i * bytes, bytes);
  switch (dtype) {
  case DType::F64: {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  case DType::F32: {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case DType::F16: return f16BitsToDouble(static_cast<uint16_t>(bits));
  case DType::BF16: return bf16BitsToDouble(static_cast<uint16_t>(bits));
  case DType::F8E4M3: return f8E4M3BitsToDouble(static_cast<uint8_t>(bits));
  case DType::F8E5M2: return f8E5M2BitsToDouble(static_cast<uint8_t>(bits));
  default: {
    const unsigned shift = 64 - 8 * bytes;
    if (infoOf(dtype).isSigned)
      return static_cast<double>(static_cast<int64_t>(bits << shift) >> shift);
    return static_cast<double>(bits);
  }
  }
}

void poison(NpyArray &a, DType dtype) {
  const unsigned bytes = elementBytes(dtype);
  const size_t n = a.data.size() / bytes;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = ~uint64_t{0};
    if (dtype == DType::F32) {
      const float f = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(&bits, &f, 4);
    } else if (dtype == DType::F64) {
      const double d = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(&bits, &d, 8);
    } else if (dtype == DType::F16) {
      bits = 0x7e00;
    } else if (dtype == DType::BF16) {
      bits = 0x7fc0;
    }
    std::memcpy(a.data.data() + i * bytes, &bits, bytes);
  }
}

} // namespace kiln::agent
