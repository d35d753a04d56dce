//===- GraphBundle.cpp - Reading and writing .kgraph files -----------------===//
//
// The metadata text of a graph bundle, one `key value` line per field:
//
//   graph chain
//   param x *f32 div 16                 (as a kernel bundle's)
//   block_mask m 64 64 2                (as a kernel bundle's: a mask parameter's five)
//   value param *f32 0                  (value OP TYPE, then what the op needs)
//   value const i32 63
//   value add i32 3 1                   (operands: indices of earlier values)
//   value cmp bool gt 4 5               (a predicate, then the operands)
//   launch 0 2 3 3 - 4 0 1 6 7 g.kiln:8:5
//                                       (kernel, grid x y z, guard or -, the argument
//                                        count, the arguments, then where: free text)
//   edge 0 1                            (launch 1 follows launch 0)
//   edge 0 2 alias 0 2                  (only when parameters 0 and 2 are one buffer)
//   footprint 1 0 rw 128*px 128*px+127  (kernel 1's programs read and write elements
//                                        [lo, hi] of its parameter 0; symbols px py pz
//                                        are the program id, aN integer parameter N)
//   footprint 1 2 r ?                   (reads parameter 2 somewhere: the whole buffer)
//   target sm_90 / compiler / source_hash / source LINE COL FILE
//
// Sections: one kernel bundle per kernel (kind 1) in index order, then the persistent
// kernel's bundle (kind 2), each tagged with the graph's target.
//
//===----------------------------------------------------------------------===//
#include "runtime/GraphBundle.h"

#include "runtime/BundleMetadata.h"
#include "runtime/Container.h"
#include "runtime/DTypes.h"
#include "support/AtomicFile.h"
#include "support/TaskTable.h"

#include <set>

namespace kiln::rt {

namespace {

enum : uint32_t { kKernelSection = 1, kPersistentSection = 2 };

std::string checkGraphSection(uint32_t kind, uint32_t target) {
  if (kind != kKernelSection && kind != kPersistentSection)
    return "unknown kind " + std::to_string(kind);
  if (target < uint32_t(Target::SM80) || target > uint32_t(Target::SPIRV64))
    return "unknown target " + std::to_string(target);
  return "";
}

// A record holds at most every argument of a kernel (256) and each one's extent.
constexpr int64_t kMaxRecordWords = tasks::kRecordHeaderWords + 2 * 256;
// A graph launches a few kernels; the table's limit bounds what a damaged file can ask.
constexpr uint32_t kMaxKernels = 255;
constexpr size_t kMaxValues = 1u << 20;

constexpr ContainerFormat kGraphFormat{{'K', 'I', 'L', 'N', 'G', 'R', 'P', 'H'}, kGraphBundleFormatVersion,
                                       "Kiln graph bundle", "kernel section", kMaxKernels + 1, checkGraphSection};

struct OpName {
  GraphOp op;
  const char *name;
  unsigned operands;
};
constexpr OpName kOps[] = {
    {GraphOp::Param, "param", 0}, {GraphOp::Const, "const", 0}, {GraphOp::Add, "add", 2},
    {GraphOp::Sub, "sub", 2},     {GraphOp::Mul, "mul", 2},     {GraphOp::Div, "div", 2},
    {GraphOp::Rem, "rem", 2},     {GraphOp::Min, "minimum", 2}, {GraphOp::Max, "maximum", 2},
    {GraphOp::And, "and", 2},     {GraphOp::Or, "or", 2},       {GraphOp::Xor, "xor", 2},
    {GraphOp::Shl, "shl", 2},     {GraphOp::Shr, "shr", 2},     {GraphOp::Neg, "neg", 1},
    {GraphOp::Not, "not", 1},     {GraphOp::Cmp, "cmp", 2},     {GraphOp::Select, "select", 3},
    {GraphOp::Cast, "cast", 1},   {GraphOp::PtrAdd, "ptr_add", 2},
};
constexpr const char *kPredicates[] = {"eq", "ne", "lt", "le", "gt", "ge"};

const OpName &infoOf(GraphOp op) {
  for (const OpName &o : kOps)
    if (o.op == op)
      return o;
  return kOps[0];
}

bool isInteger(const GraphValue &v) { return !v.pointer && !dtypeIsFloat(v.dtype); }

std::string validateValue(const GraphBundle &g, size_t index) {
  const GraphValue &v = g.values[index];
  const OpName &info = infoOf(v.op);
  if (v.operands.size() != info.operands)
    return std::string(info.name) + " takes " + std::to_string(info.operands) + " operands";
  for (uint32_t o : v.operands)
    if (o >= index)
      return "operand " + std::to_string(o) + " is not an earlier value";
  auto operand = [&](size_t i) -> const GraphValue & { return g.values[v.operands[i]]; };
  auto sameAsResult = [&](size_t i) { return operand(i).dtype == v.dtype && operand(i).pointer == v.pointer; };
  switch (v.op) {
  case GraphOp::Param:
    if (v.imm < 0 || static_cast<size_t>(v.imm) >= g.params.size())
      return "there is no parameter " + std::to_string(v.imm);
    if (g.params[v.imm].dtype != v.dtype || g.params[v.imm].pointer != v.pointer)
      return "its type is not parameter " + std::to_string(v.imm) + "'s";
    return "";
  case GraphOp::Const:
    return v.pointer ? "a constant cannot be a pointer" : "";
  case GraphOp::Add: case GraphOp::Sub: case GraphOp::Mul: case GraphOp::Div: case GraphOp::Rem:
  case GraphOp::Min: case GraphOp::Max: case GraphOp::Neg:
    if (v.pointer || !sameAsResult(0) || (v.operands.size() > 1 && !sameAsResult(1)))
      return "its operands and result must be numbers of one dtype";
    return v.dtype == DType::Bool ? "it is not defined on bool" : "";
  case GraphOp::And: case GraphOp::Or: case GraphOp::Xor: case GraphOp::Shl: case GraphOp::Shr: case GraphOp::Not:
    if (!isInteger(v) || !sameAsResult(0) || (v.operands.size() > 1 && !sameAsResult(1)))
      return "its operands and result must be integers or bools of one dtype";
    return "";
  case GraphOp::Cmp:
    if (v.dtype != DType::Bool || v.pointer || operand(0).pointer || operand(0).dtype != operand(1).dtype ||
        operand(1).pointer)
      return "it compares two numbers of one dtype into a bool";
    return v.imm < 0 || v.imm > 5 ? "unknown predicate" : "";
  case GraphOp::Select:
    if (operand(0).dtype != DType::Bool || operand(0).pointer || !sameAsResult(1) || !sameAsResult(2))
      return "it selects between two values of its type by a bool";
    return "";
  case GraphOp::Cast:
    return v.pointer || operand(0).pointer ? "pointers are not cast" : "";
  case GraphOp::PtrAdd:
    if (!v.pointer || !sameAsResult(0) || !isInteger(operand(1)) || operand(1).dtype == DType::Bool)
      return "it offsets a pointer by an integer";
    return "";
  }
  return "unknown op";
}

std::string validateLaunch(const GraphBundle &g, const GraphLaunchStep &l) {
  if (l.kernel >= g.kernels.size())
    return "there is no kernel " + std::to_string(l.kernel);
  const Bundle &k = g.kernels[l.kernel];
  for (uint32_t v : l.grid)
    if (v >= g.values.size() || !isInteger(g.values[v]) || g.values[v].dtype == DType::Bool)
      return "a grid size is not an integer value";
  if (l.guard && (*l.guard >= g.values.size() || g.values[*l.guard].dtype != DType::Bool ||
                  g.values[*l.guard].pointer))
    return "its guard is not a bool value";
  if (l.args.size() != k.params.size())
    return "kernel " + k.kernelName + " takes " + std::to_string(k.params.size()) + " arguments, not " +
           std::to_string(l.args.size());
  for (size_t i = 0; i < l.args.size(); ++i) {
    if (l.args[i] >= g.values.size())
      return "argument " + std::to_string(i) + " is not a value";
    const GraphValue &v = g.values[l.args[i]];
    const BundleParam &p = k.params[i];
    const bool fits = p.pointer ? v.pointer && v.dtype == p.dtype
                                : !v.pointer && dtypeIsFloat(v.dtype) == dtypeIsFloat(p.dtype);
    if (!fits)
      return "argument " + std::to_string(i) + " does not fit parameter " + p.name + " of kernel " + k.kernelName;
  }
  if (!isPlainText(l.where))
    return "its location is not plain text";
  return "";
}

// A footprint's polynomials are small: a range is affine in a few symbols, a product of
// two at most (ir/TaskFootprints.h).
constexpr size_t kMaxPolyTerms = 64, kMaxPolyDegree = 4;

std::string validatePoly(const Bundle &k, const GraphPoly &poly) {
  if (poly.size() > kMaxPolyTerms)
    return "too many terms";
  for (const GraphPolyTerm &t : poly) {
    if (t.symbols.size() > kMaxPolyDegree)
      return "a term of too high a degree";
    for (uint32_t s : t.symbols) {
      if (s < GraphPolyTerm::kParam)
        continue;
      const size_t param = s - GraphPolyTerm::kParam;
      if (param >= k.params.size() || k.params[param].pointer || dtypeIsFloat(k.params[param].dtype))
        return "symbol a" + std::to_string(param) + " is no integer parameter of kernel " + k.kernelName;
    }
  }
  return "";
}

std::string validateFootprint(const GraphBundle &g, const GraphFootprint &f) {
  if (f.kernel >= g.kernels.size())
    return "there is no kernel " + std::to_string(f.kernel);
  const Bundle &k = g.kernels[f.kernel];
  if (f.param >= k.params.size() || !k.params[f.param].pointer)
    return "parameter " + std::to_string(f.param) + " of kernel " + k.kernelName + " is no pointer";
  if (!f.reads && !f.writes)
    return "it neither reads nor writes";
  if (!f.known && (!f.lo.empty() || !f.hi.empty()))
    return "an unknown range has bounds";
  for (const GraphPoly *p : {&f.lo, &f.hi})
    if (std::string why = validatePoly(k, *p); !why.empty())
      return why;
  return "";
}

} // namespace

std::string validateGraphBundle(const GraphBundle &g) {
  if (!isIdentifier(g.name))
    return "graph name '" + g.name + "' is not an identifier";
  std::vector<const BundleBlockMask *> maskOf;
  if (std::string why = validateBlockMasks(g.params, g.blockMasks, "graph", maskOf); !why.empty())
    return why;
  std::set<std::string> names;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const BundleParam &p = g.params[i];
    // A mask's parameters are named NAME.rows etc. (checked above), the others identifiers.
    if ((!maskOf[i] && !isIdentifier(p.name)) || !names.insert(p.name).second)
      return "parameter '" + p.name + "' is not a new identifier";
    if (p.divisibility != 1)
      return "parameter '" + p.name + "' assumes a divisibility; a graph's parameters assume none";
  }
  for (const BundleBlockMask &m : g.blockMasks)
    if (!names.insert(m.name).second)
      return "block mask '" + m.name + "' has the name of another parameter or block mask";
  if (g.values.size() > kMaxValues)
    return "too many values";
  for (size_t i = 0; i < g.values.size(); ++i)
    if (std::string why = validateValue(g, i); !why.empty())
      return "value " + std::to_string(i) + ": " + why;
  if (g.kernels.empty() || g.kernels.size() > kMaxKernels)
    return "a graph bundle holds 1 to " + std::to_string(kMaxKernels) + " kernels";
  for (size_t i = 0; i < g.launches.size(); ++i)
    if (std::string why = validateLaunch(g, g.launches[i]); !why.empty())
      return "launch " + std::to_string(i) + ": " + why;
  for (const GraphEdge &e : g.edges) {
    if (e.from >= e.to || e.to >= g.launches.size())
      return "dependency " + std::to_string(e.from) + " -> " + std::to_string(e.to) + " is not forward";
    if (e.aliasParams)
      for (uint32_t p : *e.aliasParams)
        if (p >= g.params.size() || !g.params[p].pointer)
          return "dependency " + std::to_string(e.from) + " -> " + std::to_string(e.to) +
                 " names a parameter that is no pointer";
  }
  for (size_t i = 0; i < g.footprints.size(); ++i)
    if (std::string why = validateFootprint(g, g.footprints[i]); !why.empty())
      return "footprint " + std::to_string(i) + ": " + why;
  for (const Bundle &k : g.kernels) {
    if (std::string why = validateBundle(k); !why.empty())
      return "kernel " + k.kernelName + ": " + why;
    if (k.target != g.target)
      return "kernel " + k.kernelName + " is for " + std::string(targetName(k.target)) + ", the graph for " +
             std::string(targetName(g.target));
  }
  if (g.persistent) {
    if (std::string why = validateBundle(*g.persistent); !why.empty())
      return "the persistent kernel: " + why;
    std::optional<int64_t> words;
    bool checked = false;
    for (const ConstValue &c : g.persistent->consts) {
      if (c.name == "RECORD_WORDS" && std::holds_alternative<int64_t>(c.value))
        words = std::get<int64_t>(c.value);
      checked |= c.name == "CHECKED" && std::holds_alternative<int64_t>(c.value) && std::get<int64_t>(c.value) == 1;
    }
    if (!words || g.persistent->target != g.target)
      return "the persistent kernel does not say its record size, or is for another target";
    // A record holds every argument of the launch it describes (and, checked, the
    // extent of each): the table the runtime writes must fit the records the kernel reads.
    for (const Bundle &k : g.kernels) {
      const int64_t needed = tasks::kRecordHeaderWords + int64_t(k.params.size()) * (checked ? 2 : 1);
      if (*words < needed || *words > kMaxRecordWords)
        return "the persistent kernel's records of " + std::to_string(*words) + " words (" +
               std::to_string(tasks::kRecordHeaderWords) + " of them its header) cannot hold the " +
               std::to_string(k.params.size()) + " arguments of kernel " + k.kernelName;
    }
  }
  if (!isPlainText(g.compilerVersion) || !isPlainText(g.sourceFile) || (!g.sourceHash.empty() && !isLowerHex(g.sourceHash)))
    return "the compiler, source or hash field is not plain text";
  return "";
}

namespace {

/// "128*px+127", "-1*a2*py", "0" for no terms.
std::string polyText(const GraphPoly &poly) {
  if (poly.empty())
    return "0";
  std::string out;
  for (const GraphPolyTerm &t : poly) {
    if (!out.empty())
      out += "+";
    out += std::to_string(t.coefficient);
    for (uint32_t s : t.symbols)
      out += s < GraphPolyTerm::kParam ? std::string("*p") + "xyz"[s]
                                       : "*a" + std::to_string(s - GraphPolyTerm::kParam);
  }
  return out;
}

bool parsePoly(std::string_view text, GraphPoly &poly) {
  if (text.empty())
    return false;
  while (!text.empty()) {
    const size_t plus = text.find('+');
    std::string_view term = text.substr(0, plus);
    text = plus == std::string_view::npos ? std::string_view() : text.substr(plus + 1);
    if (plus != std::string_view::npos && text.empty())
      return false;
    GraphPolyTerm &t = poly.emplace_back();
    const size_t star = term.find('*');
    if (!parseInt(term.substr(0, star), t.coefficient))
      return false;
    term = star == std::string_view::npos ? std::string_view() : term.substr(star);
    while (!term.empty()) {
      if (term.size() < 3 || term[0] != '*')
        return false;
      const size_t end = term.find('*', 1);
      const std::string_view sym = term.substr(1, end == std::string_view::npos ? end : end - 1);
      term = end == std::string_view::npos ? std::string_view() : term.substr(end);
      if (sym == "px" || sym == "py" || sym == "pz") {
        t.symbols.push_back(GraphPolyTerm::kPid + static_cast<uint32_t>(sym[1] - 'x'));
      } else {
        uint32_t param;
        if (sym[0] != 'a' || !parseInt(sym.substr(1), param) || param > 4096)
          return false;
        t.symbols.push_back(GraphPolyTerm::kParam + param);
      }
      if (t.symbols.size() > kMaxPolyDegree)
        return false;
    }
    if (poly.size() > kMaxPolyTerms)
      return false;
  }
  // "0" is the empty polynomial.
  if (poly.size() == 1 && poly[0].coefficient == 0 && poly[0].symbols.empty())
    poly.clear();
  return true;
}

bool parseFootprint(std::string_view rest, GraphFootprint &f) {
  if (!parseInt(nextWord(rest), f.kernel) || !parseInt(nextWord(rest), f.param))
    return false;
  const std::string_view mode = nextWord(rest);
  f.reads = mode == "r" || mode == "rw";
  f.writes = mode == "w" || mode == "rw";
  if (!f.reads && !f.writes)
    return false;
  const std::string_view lo = nextWord(rest);
  if (lo == "?")
    return rest.empty();
  f.known = true;
  return parsePoly(lo, f.lo) && parsePoly(nextWord(rest), f.hi) && rest.empty();
}

std::string encodeMetadata(const GraphBundle &g) {
  std::string out;
  auto line = [&](std::string_view key, const std::string &value) {
    out.append(key).append(" ").append(value).append("\n");
  };
  line("graph", g.name);
  for (const BundleParam &p : g.params)
    line("param", p.name + " " + paramTypeSpelling(p.dtype, p.pointer));
  for (const BundleBlockMask &m : g.blockMasks)
    line("block_mask", blockMaskText(m));
  for (const GraphValue &v : g.values) {
    std::string text = std::string(infoOf(v.op).name) + " " + paramTypeSpelling(v.dtype, v.pointer);
    if (v.op == GraphOp::Param || (v.op == GraphOp::Const && !dtypeIsFloat(v.dtype)))
      text += " " + std::to_string(v.imm);
    else if (v.op == GraphOp::Const)
      text += " " + formatDouble(v.fimm);
    else if (v.op == GraphOp::Cmp)
      text += std::string(" ") + kPredicates[v.imm];
    for (uint32_t o : v.operands)
      text += " " + std::to_string(o);
    line("value", text);
  }
  for (const GraphLaunchStep &l : g.launches) {
    std::string text = std::to_string(l.kernel);
    for (uint32_t v : l.grid)
      text += " " + std::to_string(v);
    text += " " + (l.guard ? std::to_string(*l.guard) : std::string("-")) + " " + std::to_string(l.args.size());
    for (uint32_t a : l.args)
      text += " " + std::to_string(a);
    if (!l.where.empty())
      text += " " + l.where;
    line("launch", text);
  }
  for (const GraphEdge &e : g.edges)
    line("edge", std::to_string(e.from) + " " + std::to_string(e.to) +
                     (e.aliasParams ? " alias " + std::to_string((*e.aliasParams)[0]) + " " +
                                          std::to_string((*e.aliasParams)[1])
                                    : ""));
  for (const GraphFootprint &f : g.footprints)
    line("footprint", std::to_string(f.kernel) + " " + std::to_string(f.param) + " " +
                          (f.reads && f.writes ? "rw" : f.reads ? "r" : "w") + " " +
                          (f.known ? polyText(f.lo) + " " + polyText(f.hi) : std::string("?")));
  line("target", std::string(targetName(g.target)));
  line("compiler", g.compilerVersion);
  line("source_hash", g.sourceHash);
  if (!g.sourceFile.empty())
    line("source", std::to_string(g.sourceLine) + " " + std::to_string(g.sourceColumn) + " " + g.sourceFile);
  return out;
}

bool parseValue(std::string_view rest, GraphValue &v) {
  const std::string_view op = nextWord(rest);
  const OpName *info = nullptr;
  for (const OpName &o : kOps)
    if (op == o.name)
      info = &o;
  if (!info)
    return false;
  v.op = info->op;
  BundleParam type;
  if (!parseParam("v " + std::string(nextWord(rest)), type))
    return false;
  v.dtype = type.dtype;
  v.pointer = type.pointer;
  if (v.op == GraphOp::Param || (v.op == GraphOp::Const && !dtypeIsFloat(v.dtype))) {
    if (!parseInt(nextWord(rest), v.imm))
      return false;
  } else if (v.op == GraphOp::Const) {
    if (!parseDouble(nextWord(rest), v.fimm))
      return false;
  } else if (v.op == GraphOp::Cmp) {
    const std::string_view pred = nextWord(rest);
    v.imm = -1;
    for (int i = 0; i < 6; ++i)
      if (pred == kPredicates[i])
        v.imm = i;
    if (v.imm < 0)
      return false;
  }
  for (unsigned i = 0; i < info->operands; ++i) {
    uint32_t o;
    if (!parseInt(nextWord(rest), o))
      return false;
    v.operands.push_back(o);
  }
  return rest.empty();
}

bool parseLaunch(std::string_view rest, GraphLaunchStep &l) {
  if (!parseInt(nextWord(rest), l.kernel))
    return false;
  for (uint32_t &v : l.grid)
    if (!parseInt(nextWord(rest), v))
      return false;
  const std::string_view guard = nextWord(rest);
  if (guard != "-") {
    uint32_t g;
    if (!parseInt(guard, g))
      return false;
    l.guard = g;
  }
  size_t count;
  if (!parseInt(nextWord(rest), count) || count > 4096)
    return false;
  for (size_t i = 0; i < count; ++i) {
    uint32_t a;
    if (!parseInt(nextWord(rest), a))
      return false;
    l.args.push_back(a);
  }
  l.where = std::string(rest);
  return true;
}

bool parseEdge(std::string_view rest, GraphEdge &e) {
  if (!parseInt(nextWord(rest), e.from) || !parseInt(nextWord(rest), e.to))
    return false;
  if (rest.empty())
    return true;
  std::array<uint32_t, 2> params;
  if (nextWord(rest) != "alias" || !parseInt(nextWord(rest), params[0]) || !parseInt(nextWord(rest), params[1]) ||
      !rest.empty())
    return false;
  e.aliasParams = params;
  return true;
}

bool decodeMetadata(std::string_view text, GraphBundle &g, std::string &error) {
  if (text.empty() || text.back() != '\n') {
    error = "the metadata does not end in a newline";
    return false;
  }
  std::set<std::string> seen;
  size_t lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    const size_t nl = text.find('\n');
    std::string_view rest = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const std::string key(nextWord(rest));
    bool ok = true;
    const bool repeatable = key == "param" || key == "block_mask" || key == "value" || key == "launch" ||
                            key == "edge" || key == "footprint";
    if (!repeatable && !seen.insert(key).second)
      ok = false;
    else if (key == "graph")
      g.name = std::string(rest);
    else if (key == "param")
      ok = parseParam(rest, g.params.emplace_back());
    else if (key == "block_mask")
      ok = g.blockMasks.size() < kMaxValues && parseBlockMask(rest, g.blockMasks.emplace_back());
    else if (key == "value")
      ok = g.values.size() < kMaxValues && parseValue(rest, g.values.emplace_back());
    else if (key == "launch")
      ok = parseLaunch(rest, g.launches.emplace_back());
    else if (key == "edge")
      ok = parseEdge(rest, g.edges.emplace_back());
    else if (key == "footprint")
      ok = g.footprints.size() < kMaxValues && parseFootprint(rest, g.footprints.emplace_back());
    else if (key == "target") {
      std::optional<Target> t = parseTarget(rest);
      ok = t.has_value();
      if (ok)
        g.target = *t;
    } else if (key == "compiler")
      g.compilerVersion = std::string(rest);
    else if (key == "source_hash")
      g.sourceHash = std::string(rest);
    else if (key == "source") {
      ok = parseInt(nextWord(rest), g.sourceLine) && parseInt(nextWord(rest), g.sourceColumn) && !rest.empty();
      g.sourceFile = std::string(rest);
    } else
      ok = false;
    if (!ok) {
      error = "line " + std::to_string(lineNo) + " ('" + key + "') is malformed, repeated or unknown";
      return false;
    }
  }
  for (const char *required : {"graph", "target", "compiler"})
    if (!seen.count(required)) {
      error = std::string("the '") + required + "' line is missing";
      return false;
    }
  return true;
}

} // namespace

std::vector<uint8_t> serializeGraphBundle(const GraphBundle &g, std::string &error) {
  error = validateGraphBundle(g);
  if (!error.empty())
    return {};
  std::vector<ContainerSection> sections;
  auto add = [&](uint32_t kind, const Bundle &b) {
    std::vector<uint8_t> bytes = serializeBundle(b, error);
    sections.push_back(ContainerSection{kind, uint32_t(g.target), std::move(bytes)});
    return !sections.back().bytes.empty();
  };
  for (const Bundle &k : g.kernels)
    if (!add(kKernelSection, k))
      return {};
  if (g.persistent && !add(kPersistentSection, *g.persistent))
    return {};
  return writeContainer(kGraphFormat, encodeMetadata(g), sections, error);
}

std::optional<GraphBundle> parseGraphBundle(std::span<const uint8_t> in, std::string &error) {
  std::optional<ContainerContents> contents = readContainer(kGraphFormat, in, error);
  if (!contents)
    return std::nullopt;
  GraphBundle g;
  std::string why;
  if (!decodeMetadata(contents->metadata, g, why)) {
    error = "invalid metadata: " + why;
    return std::nullopt;
  }
  for (size_t i = 0; i < contents->sections.size(); ++i) {
    const ContainerSection &s = contents->sections[i];
    std::optional<Bundle> b = parseBundle(s.bytes, why);
    if (!b) {
      error = "kernel section " + std::to_string(i) + ": " + why;
      return std::nullopt;
    }
    const bool persistent = s.kind == kPersistentSection;
    if (g.persistent || (persistent && g.kernels.empty()) || s.target != uint32_t(g.target)) {
      error = "invalid graph bundle: section " + std::to_string(i) + " is out of place";
      return std::nullopt;
    }
    if (persistent)
      g.persistent = std::move(*b);
    else
      g.kernels.push_back(std::move(*b));
  }
  why = validateGraphBundle(g);
  if (!why.empty()) {
    error = "invalid graph bundle: " + why;
    return std::nullopt;
  }
  return g;
}

std::optional<GraphBundle> readGraphBundle(const std::string &path, std::string &error, bool *ioError) {
  if (ioError)
    *ioError = true;
  std::optional<std::vector<uint8_t>> bytes = readContainerBytes(kGraphFormat, path, error);
  if (!bytes)
    return std::nullopt;
  if (ioError)
    *ioError = false;
  std::optional<GraphBundle> g = parseGraphBundle(*bytes, error);
  if (!g)
    error = "'" + path + "': " + error;
  return g;
}

bool writeGraphBundleAtomic(const std::string &path, const GraphBundle &graph, std::string &error) {
  std::vector<uint8_t> bytes = serializeGraphBundle(graph, error);
  if (bytes.empty()) {
    error = "cannot write '" + path + "': invalid graph bundle: " + error;
    return false;
  }
  error = writeFileAtomically(path, bytes);
  return error.empty();
}

bool isGraphBundle(std::span<const uint8_t> bytes) { return hasMagic(kGraphFormat, bytes); }

} // namespace kiln::rt
