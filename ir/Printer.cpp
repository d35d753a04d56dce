//===- Printer.cpp - Tile IR to .tir text ---------------------------------===//
//
// Every op is printed in one generic form (docs/tir.md):
//   %r0, %r1 = mnemonic %a, %b {attr = value, ...} : type0, type1 loc("f":1:2) {
//   ^(%arg: type, ...):
//     ...
//   } { ...second region... }
// The form is the same for every op so that the parser needs no per-op syntax, and
// everything the printer writes is read back to the same IR, so printing what was
// parsed reproduces the text exactly.
//
// Value names: a value keeps its nameHint (made into an identifier) when no other value
// of the kernel claims it; later claimants get `_1`, `_2`, ... suffixes that no other
// value uses; values without a hint are numbered %0, %1, ... in print order.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

//===--------------------------------------------------------------------===//
// Attribute values
//===--------------------------------------------------------------------===//

static std::string formatDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  // The shortest text that reads back as exactly `v`.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Keep floats distinguishable from integers when read back.
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

static std::string quote(std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  std::string s = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += ch;
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    } else {
      s += ch;
    }
  }
  return s + "\"";
}

static bool isIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// Attribute and const names: bare when they are identifiers, quoted otherwise.
static std::string keyName(std::string_view s) {
  return isIdentifier(s) ? std::string(s) : quote(s);
}

std::string printAttr(const Attr &attr) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return formatDouble(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string &v) const { return quote(v); }
    std::string operator()(DType v) const { return std::string(dtypeName(v)); }
    std::string operator()(const std::vector<int64_t> &v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, attr);
}

//===--------------------------------------------------------------------===//
// Value names
//===--------------------------------------------------------------------===//

namespace {

/// The nameHint as it can appear after `%`; empty when the value is to be numbered
/// (no hint, or a purely numeric one, which would clash with the numbering).
std::string sanitizedHint(const Value &v) {
  std::string s = v.nameHint;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  bool numeric = true;
  for (char c : s)
    numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
  return numeric ? std::string() : s;
}

class Namer {
public:
  /// Collects the hints of every value defined in `block` so that a hint used once
  /// is reserved for its owner before suffixes are handed out.
  void reserve(const Block &block) {
    for (const auto &a : block.arguments())
      count(*a);
    for (const auto &op : block.ops()) {
      for (const auto &r : op->results())
        count(*r);
      for (const auto &region : op->regions())
        reserve(*region);
    }
  }

  const std::string &name(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    std::string hint = sanitizedHint(*v);
    std::string name;
    if (hint.empty()) {
      name = std::to_string(next_++);
    } else if (!taken_.count(hint) && (uses(hint) <= 1 || !claimed_.count(hint))) {
      name = hint;
      claimed_.insert(hint);
    } else {
      // Suffixes are probed from where the last probe for this hint stopped: a name once
      // taken stays taken and the counts never change, so the ones skipped before can
      // never become free, and naming N values with one hint is linear, not quadratic.
      for (unsigned &n = nextSuffix_.try_emplace(hint, 1).first->second;; ++n) {
        name = hint + "_" + std::to_string(n);
        if (!taken_.count(name) && uses(name) == 0) {
          ++n;
          break;
        }
      }
    }
    taken_.insert(name);
    return names_.emplace(v, "%" + name).first->second;
  }

private:
  unsigned uses(const std::string &hint) const {
    auto it = hintCount_.find(hint);
    return it == hintCount_.end() ? 0 : it->second;
  }
  void count(const Value &v) {
    std::string hint = sanitizedHint(v);
    if (!hint.empty())
      ++hintCount_[hint];
  }

  std::unordered_map<const Value *, std::string> names_;
  std::unordered_map<std::string, unsigned> hintCount_;
  std::unordered_map<std::string, unsigned> nextSuffix_; ///< per hint, the first suffix not yet probed
  std::unordered_set<std::string> claimed_;
  std::unordered_set<std::string> taken_;
  unsigned next_ = 0;
};

class TirPrinter {
public:
  TirPrinter(std::ostream &os, const SourceManager *sources, PrintOptions options)
      : os_(os), sources_(sources), options_(options) {}

  /// `KEYWORD @name(%param: type, ...`, naming the entry point's values afresh.
  void printEntryStart(const char *keyword, const Kernel &k) {
    namer_ = Namer();
    namer_.reserve(*k.body);
    os_ << keyword << " @" << keyName(k.name) << "(";
    for (unsigned i = 0; i < k.body->numArguments(); ++i) {
      const Value *a = k.body->argument(i);
      os_ << (i ? ", " : "") << namer_.name(a) << ": " << a->type.str();
    }
    os_ << ")";
  }

  /// `graph @name(params) loc { ... }`: a graph has no launch settings of its own, only
  /// the block masks among its parameters.
  void printGraph(const Kernel &g) {
    printEntryStart("graph", g);
    if (!g.blockMasks.empty()) {
      os_ << " attributes {";
      printBlockMasks(g);
      os_ << "}";
    }
    printLoc(g.loc);
    os_ << " {\n";
    printOps(*g.body, 1);
    os_ << "}\n";
  }

  /// block_masks = {mask = [first parameter, BM, BN(, ROWS, COLS)?], ...}
  void printBlockMasks(const Kernel &k) {
    os_ << "block_masks = {";
    for (size_t i = 0; i < k.blockMasks.size(); ++i) {
      const BlockMaskParam &m = k.blockMasks[i];
      os_ << (i ? ", " : "") << keyName(m.name) << " = [" << m.firstParam << ", " << m.blockRows << ", "
          << m.blockCols;
      if (m.extents)
        for (const MaskExtent &e : *m.extents) {
          os_ << ", ";
          if (e.param >= 0 && unsigned(e.param) < k.body->numArguments())
            os_ << namer_.name(k.body->argument(unsigned(e.param)));
          else
            os_ << e.value;
        }
      os_ << "]";
    }
    os_ << "}";
  }

  void printKernel(const Kernel &k) {
    printEntryStart("kernel", k);
    os_ << " attributes {";
    if (!k.blockMasks.empty()) {
      printBlockMasks(k);
      os_ << ", ";
    }
    os_ << "consts = {";
    for (size_t i = 0; i < k.constValues.size(); ++i)
      os_ << (i ? ", " : "") << keyName(k.constValues[i].first) << " = "
          << printAttr(k.constValues[i].second);
    os_ << "}";
    if (k.gridSplit.cluster)
      os_ << ", cluster_size = " << k.gridSplit.segments;
    if (k.gridSplit.active())
      os_ << ", grid_split = " << k.gridSplit.segments;
    if (!k.paramMultiples.empty()) {
      os_ << ", multiple_of = {";
      for (size_t i = 0; i < k.paramMultiples.size(); ++i)
        os_ << (i ? ", " : "") << namer_.name(k.body->argument(k.paramMultiples[i].first)).substr(1) << " = "
            << k.paramMultiples[i].second;
      os_ << "}";
    }
    os_ << ", num_stages = " << k.numStages << ", num_warps = " << k.numWarps;
    if (k.gridSplit.usesWorkspace())
      os_ << ", workspace_bytes = " << k.gridSplit.workspaceBytes;
    os_ << "}";
    printLoc(k.loc);
    os_ << " {\n";
    printOps(*k.body, 1);
    os_ << "}\n";
  }

  void printOp(const Op &op, unsigned indent) {
    os_ << std::string(2 * indent, ' ');
    for (unsigned i = 0; i < op.numResults(); ++i)
      os_ << (i ? ", " : "") << namer_.name(op.result(i));
    if (op.numResults())
      os_ << " = ";
    os_ << op.mnemonic();
    for (unsigned i = 0; i < op.numOperands(); ++i)
      os_ << (i ? ", " : " ") << (op.operand(i) ? namer_.name(op.operand(i)) : "%<null>");
    if (!op.attrs().empty()) {
      os_ << " {";
      bool first = true;
      for (const auto &[key, value] : op.attrs()) {
        os_ << (first ? "" : ", ") << keyName(key) << " = " << printAttr(value);
        first = false;
      }
      os_ << "}";
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      os_ << (i ? ", " : " : ") << op.result(i)->type.str();
    printLoc(op.loc());
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      const Block &b = *op.region(r);
      os_ << " {\n";
      if (b.numArguments()) {
        os_ << std::string(2 * indent, ' ') << "^(";
        for (unsigned i = 0; i < b.numArguments(); ++i)
          os_ << (i ? ", " : "") << namer_.name(b.argument(i)) << ": "
              << b.argument(i)->type.str();
        os_ << "):\n";
      }
      printOps(b, indent + 1);
      os_ << std::string(2 * indent, ' ') << "}";
    }
    os_ << "\n";
  }

  Namer &namer() { return namer_; }

private:
  void printOps(const Block &b, unsigned indent) {
    for (const auto &op : b.ops())
      printOp(*op, indent);
  }

  void printLoc(Location loc) {
    if (!options_.locations)
      return;
    if (!loc.valid()) {
      os_ << " loc(unknown)";
      return;
    }
    std::string_view file = sources_ ? sources_->name(loc.file) : "<unknown>";
    os_ << " loc(" << quote(file) << ":" << loc.line << ":" << loc.col << ")";
  }

  std::ostream &os_;
  const SourceManager *sources_;
  PrintOptions options_;
  Namer namer_;
};

} // namespace

//===--------------------------------------------------------------------===//
// Entry points
//===--------------------------------------------------------------------===//

void printKernel(const Kernel &kernel, const SourceManager *sources, std::ostream &os,
                 PrintOptions options) {
  TirPrinter(os, sources, options).printKernel(kernel);
}

void printModule(const Module &module, std::ostream &os, PrintOptions options) {
  for (size_t i = 0; i < module.kernels.size(); ++i) {
    if (i)
      os << "\n";
    printKernel(*module.kernels[i], module.sources.get(), os, options);
  }
  for (size_t i = 0; i < module.graphs.size(); ++i) {
    if (i || !module.kernels.empty())
      os << "\n";
    TirPrinter(os, module.sources.get(), options).printGraph(*module.graphs[i]);
  }
}

std::string printModule(const Module &module, PrintOptions options) {
  std::ostringstream os;
  printModule(module, os, options);
  return os.str();
}

std::string printOp(const Op &op) {
  std::ostringstream os;
  TirPrinter printer(os, nullptr, PrintOptions{});
  for (const auto &region : op.regions())
    printer.namer().reserve(*region);
  printer.printOp(op, 0);
  return os.str();
}

} // namespace kiln::ir
