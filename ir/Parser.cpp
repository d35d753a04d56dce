//===- Parser.cpp - .tir text to Tile IR ----------------------------------===//
//
// A recursive-descent parser for the generic op form the printer writes (docs/tir.md).
// It builds ops directly rather than through Builder::create, because the Builder
// treats a bad op as a compiler bug while here it is the user's text: each op is checked
// with verifyOpLocal and a violation becomes an E0700 diagnostic at the op's text.
//
// Names are resolved as they are read: an operand must name a value defined earlier in
// the same block or in an enclosing one, which is exactly SSA dominance for structured
// control flow. A syntax error ends the parse (after one diagnostic); an op that parses
// but breaks its local rules is reported and parsing goes on, so one run lists them all.
//
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"

#include "ir/Lexer.h"
#include "ir/Verifier.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

using tir::Tok;
using tir::Token;

namespace {

/// Thrown after a syntax error has been reported; caught at the top.
struct ParseAbort {};

/// Regions deeper than this are refused rather than risking the stack (matches the
/// frontend's nesting limit).
constexpr unsigned kMaxNesting = 200;
/// Largest dimension and element count a .tir type may have.
constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

bool isNumeric(const std::string &name) {
  for (char c : name)
    if (c < '0' || c > '9')
      return false;
  return true;
}

class TirParser {
public:
  TirParser(std::shared_ptr<SourceManager> sources, uint32_t file, DiagnosticEngine &diags)
      : sources_(std::move(sources)), file_(file), diags_(diags) {}

  std::unique_ptr<Module> run() {
    const std::string *text = sources_->text(file_);
    if (!text) {
      diags_.error(Location{file_, 0, 0}, DiagCode::FileNotReadable)
          << "cannot read '" << sources_->name(file_) << "'";
      return nullptr;
    }
    toks_ = tir::lexTir(*text);
    auto module = std::make_unique<Module>();
    module->sources = sources_;
    try {
      while (peek().kind != Tok::Eof) {
        if (atIdent("graph"))
          module->graphs.push_back(parseGraph());
        else
          module->kernels.push_back(parseKernel());
      }
    } catch (const ParseAbort &) {
      return nullptr;
    }
    return failed_ ? nullptr : std::move(module);
  }

private:
  //===------------------------------------------------------------------===//
  // Tokens
  //===------------------------------------------------------------------===//

  const Token &peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token &take() {
    const Token &t = peek();
    if (pos_ < toks_.size() - 1)
      ++pos_;
    return t;
  }
  Location locOf(const Token &t) const { return Location{file_, t.line, t.col}; }

  [[noreturn]] void fail(const Token &at, const std::string &message) {
    // A lexer error is the real problem at this point, whatever was expected.
    diags_.error(locOf(at), DiagCode::TirSyntax)
        << (at.kind == Tok::Error ? at.text : message);
    throw ParseAbort{};
  }
  [[noreturn]] void expected(const std::string &what) {
    fail(peek(), "expected " + what + ", found " + tir::describe(peek()));
  }
  const Token &expect(Tok kind, const char *what) {
    if (peek().kind != kind)
      expected(what);
    return take();
  }
  bool accept(Tok kind) {
    if (peek().kind != kind)
      return false;
    take();
    return true;
  }
  bool atIdent(const char *word, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Ident && peek(ahead).text == word;
  }

  //===------------------------------------------------------------------===//
  // Types, attributes, locations
  //===------------------------------------------------------------------===//

  Type parseElementType() {
    bool ptr = accept(Tok::Star);
    const Token &t = peek();
    if (t.kind != Tok::Ident)
      expected("a dtype");
    auto dt = parseDType(t.text);
    if (!dt)
      fail(t, "unknown dtype '" + t.text + "'");
    take();
    return Type{*dt, ptr, {}};
  }

  Type parseType() {
    if (!atIdent("tile"))
      return parseElementType();
    const Token &start = take();
    expect(Tok::Less, "'<' after 'tile'");
    Type t = parseElementType();
    expect(Tok::Comma, "',' after the element type");
    expect(Tok::LBracket, "'[' starting the shape");
    int64_t total = 1;
    do {
      const Token &d = expect(Tok::Int, "a dimension");
      if (d.intValue <= 0)
        fail(d, "tile dimensions must be positive, got " + d.text);
      if (d.intValue > kMaxElements / total)
        fail(start, "tile type is too large (more than " + std::to_string(kMaxElements) +
                        " elements)");
      total *= d.intValue;
      t.shape.push_back(d.intValue);
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "']' ending the shape");
    expect(Tok::Greater, "'>' ending the tile type");
    return t;
  }

  /// Attribute names and const names: identifiers or strings.
  std::string parseKey() {
    if (peek().kind != Tok::Ident && peek().kind != Tok::String)
      expected("an attribute name");
    return take().text;
  }

  Attr parseAttrValue() {
    const Token &t = peek();
    if (t.kind == Tok::Int || t.kind == Tok::Float || t.kind == Tok::String) {
      take();
      if (t.kind == Tok::Int)
        return t.intValue;
      if (t.kind == Tok::Float)
        return t.floatValue;
      return t.text;
    }
    if (accept(Tok::Minus)) {
      if (!atIdent("inf"))
        expected("'inf' after '-'");
      take();
      return -std::numeric_limits<double>::infinity();
    }
    if (accept(Tok::LBracket)) {
      std::vector<int64_t> list;
      if (!accept(Tok::RBracket)) {
        do
          list.push_back(expect(Tok::Int, "an integer in the list").intValue);
        while (accept(Tok::Comma));
        expect(Tok::RBracket, "']' ending the list");
      }
      return list;
    }
    if (t.kind != Tok::Ident)
      expected("an attribute value");
    take();
    if (t.text == "true" || t.text == "false")
      return t.text == "true";
    if (t.text == "inf")
      return std::numeric_limits<double>::infinity();
    if (t.text == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    if (auto dt = parseDType(t.text))
      return *dt;
    fail(t, "unknown attribute value '" + t.text + "'");
  }

  /// `{key = value, ...}`; the opening brace is the current token.
  AttrMap parseAttrDict() {
    AttrMap attrs;
    expect(Tok::LBrace, "'{'");
    do {
      const Token &keyTok = peek();
      std::string key = parseKey();
      expect(Tok::Equal, "'=' after the attribute name");
      if (attrs.count(key))
        fail(keyTok, "duplicate attribute '" + key + "'");
      attrs.emplace(key, parseAttrValue());
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "'}' ending the attributes");
    return attrs;
  }

  /// An optional `loc("file":line:col)` or `loc(unknown)`.
  std::optional<Location> parseOptionalLoc() {
    if (!atIdent("loc") || peek(1).kind != Tok::LParen)
      return std::nullopt;
    take();
    take();
    Location loc;
    if (atIdent("unknown")) {
      take();
    } else {
      std::string name = expect(Tok::String, "a file name or 'unknown' in loc(...)").text;
      expect(Tok::Colon, "':' after the file name");
      const Token &line = expect(Tok::Int, "a line number");
      expect(Tok::Colon, "':' after the line number");
      const Token &col = expect(Tok::Int, "a column number");
      constexpr int64_t maxPos = std::numeric_limits<uint32_t>::max();
      if (line.intValue < 0 || line.intValue > maxPos)
        fail(line, "line number out of range");
      if (col.intValue < 0 || col.intValue > maxPos)
        fail(col, "column number out of range");
      loc = Location{sources_->addName(std::move(name)), static_cast<uint32_t>(line.intValue),
                     static_cast<uint32_t>(col.intValue)};
    }
    expect(Tok::RParen, "')' ending loc(...)");
    return loc;
  }

  //===------------------------------------------------------------------===//
  // Values and scopes
  //===------------------------------------------------------------------===//

  /// Makes `%name` refer to `v` until the current scope closes.
  void define(const Token &nameTok, Value *v) {
    if (!defined_.insert(nameTok.text).second)
      fail(nameTok, "redefinition of value %" + nameTok.text);
    visible_[nameTok.text] = v;
    scopes_.back().push_back(nameTok.text);
    v->nameHint = isNumeric(nameTok.text) ? std::string() : nameTok.text;
  }

  Value *use(const Token &nameTok) {
    auto it = visible_.find(nameTok.text);
    if (it != visible_.end())
      return it->second;
    if (defined_.count(nameTok.text))
      fail(nameTok, "value %" + nameTok.text +
                        " is not visible here: it is defined inside a region that has ended");
    fail(nameTok, "use of undefined value %" + nameTok.text);
  }

  void openScope() { scopes_.emplace_back(); }
  void closeScope() {
    for (const std::string &name : scopes_.back())
      visible_.erase(name);
    scopes_.pop_back();
  }

  /// `%name: type` (kernel parameters and region arguments).
  void parseArgument(Block &block) {
    const Token &name = expect(Tok::ValueName, "an argument name");
    expect(Tok::Colon, "':' after the argument name");
    Type t = parseType();
    define(name, block.addArgument(std::move(t)));
  }

  //===------------------------------------------------------------------===//
  // Kernels, blocks, ops
  //===------------------------------------------------------------------===//

  /// `KEYWORD @name(params)`, the start of a kernel or a graph, with a fresh scope.
  std::unique_ptr<Kernel> parseEntryStart(const char *example) {
    const Token &kw = take();
    auto k = std::make_unique<Kernel>();
    k->loc = locOf(kw);
    k->name = expect(Tok::AtName, example).text;
    visible_.clear();
    defined_.clear();
    scopes_.clear();
    openScope();
    expect(Tok::LParen, "'(' starting the parameters");
    if (!accept(Tok::RParen)) {
      do
        parseArgument(*k->body);
      while (accept(Tok::Comma));
      expect(Tok::RParen, "')' ending the parameters");
    }
    return k;
  }

  std::unique_ptr<Kernel> parseKernel() {
    if (!atIdent("kernel"))
      expected("'kernel'");
    std::unique_ptr<Kernel> k = parseEntryStart("a kernel name such as @add");
    if (atIdent("attributes")) {
      take();
      parseKernelAttrs(*k);
    }
    if (auto loc = parseOptionalLoc())
      k->loc = *loc;
    expect(Tok::LBrace, "'{' starting the kernel body");
    parseOps(*k->body, 0);
    expect(Tok::RBrace, "'}' ending the kernel body");
    closeScope();
    return k;
  }

  /// `graph @name(params) [attributes {block_masks = {...}}] loc { ops }`.
  std::unique_ptr<Kernel> parseGraph() {
    std::unique_ptr<Kernel> g = parseEntryStart("a graph name such as @decode");
    if (atIdent("attributes")) {
      take();
      expect(Tok::LBrace, "'{' starting the graph attributes");
      const Token &key = expect(Tok::Ident, "a graph attribute name");
      if (key.text != "block_masks")
        fail(key, "unknown graph attribute '" + key.text + "' (a graph has block_masks only)");
      expect(Tok::Equal, "'=' after the attribute name");
      parseBlockMasks(*g);
      expect(Tok::RBrace, "'}' ending the graph attributes");
    }
    if (auto loc = parseOptionalLoc())
      g->loc = *loc;
    expect(Tok::LBrace, "'{' starting the graph body");
    parseOps(*g->body, 0);
    expect(Tok::RBrace, "'}' ending the graph body");
    closeScope();
    return g;
  }

  void parseKernelAttrs(Kernel &k) {
    expect(Tok::LBrace, "'{' starting the kernel attributes");
    std::unordered_set<std::string> seen;
    std::optional<Token> clusterSize;
    int64_t clusterPrograms = 0;
    if (!accept(Tok::RBrace)) {
      do {
        const Token &key = expect(Tok::Ident, "a kernel attribute name");
        if (!seen.insert(key.text).second)
          fail(key, "duplicate kernel attribute '" + key.text + "'");
        expect(Tok::Equal, "'=' after the attribute name");
        if (key.text == "consts") {
          parseConsts(k);
        } else if (key.text == "num_warps" || key.text == "num_stages") {
          int64_t v = expect(Tok::Int, "an integer").intValue;
          (key.text == "num_warps" ? k.numWarps : k.numStages) = v;
        } else if (key.text == "grid_split" || key.text == "workspace_bytes") {
          int64_t v = expect(Tok::Int, "an integer").intValue;
          (key.text == "grid_split" ? k.gridSplit.segments : k.gridSplit.workspaceBytes) = v;
        } else if (key.text == "multiple_of") {
          parseMultiples(k);
        } else if (key.text == "block_masks") {
          parseBlockMasks(k);
        } else if (key.text == "cluster_size") {
          clusterSize = key;
          clusterPrograms = expect(Tok::Int, "an integer").intValue;
        } else {
          fail(key, "unknown kernel attribute '" + key.text +
                        "' (expected block_masks, cluster_size, consts, grid_split, multiple_of, num_stages, num_warps or "
                        "workspace_bytes)");
        }
      } while (accept(Tok::Comma));
      expect(Tok::RBrace, "'}' ending the kernel attributes");
    }
    // A cluster holds the segments of one requested program: its size is the split's.
    if (clusterSize) {
      if (clusterPrograms != k.gridSplit.segments)
        fail(*clusterSize, "cluster_size " + std::to_string(clusterPrograms) + " must equal grid_split (" +
                               std::to_string(k.gridSplit.segments) + ")");
      k.gridSplit.cluster = true;
    }
  }

  /// multiple_of = {n = 16, ...}: names of the kernel's parameters and powers of two.
  void parseMultiples(Kernel &k) {
    expect(Tok::LBrace, "'{' starting multiple_of");
    if (accept(Tok::RBrace))
      return;
    do {
      const Token &keyTok = peek();
      std::string key = parseKey();
      std::optional<unsigned> index;
      for (unsigned i = 0; i < k.body->numArguments(); ++i)
        if (k.body->argument(i)->nameHint == key)
          index = i;
      if (!index)
        fail(keyTok, "multiple_of names '" + key + "', which is not a parameter of the kernel");
      for (const auto &[i, m] : k.paramMultiples)
        if (i == *index)
          fail(keyTok, "duplicate multiple_of for '" + key + "'");
      expect(Tok::Equal, "'=' after the parameter name");
      k.paramMultiples.emplace_back(*index, expect(Tok::Int, "an integer").intValue);
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "'}' ending multiple_of");
  }

  /// block_masks = {mask = [first parameter, BM, BN(, ROWS, COLS)?], ...}, the declared
  /// extents each an integer or a parameter (the verifier checks them).
  void parseBlockMasks(Kernel &k) {
    expect(Tok::LBrace, "'{' starting block_masks");
    if (accept(Tok::RBrace))
      return;
    do {
      BlockMaskParam m;
      m.name = parseKey();
      expect(Tok::Equal, "'=' after the mask's name");
      expect(Tok::LBracket, "'[' starting [first parameter, BM, BN]");
      const Token &first = expect(Tok::Int, "the index of the mask's first parameter");
      if (first.intValue < 0 || first.intValue > 1'000'000)
        fail(first, "parameter index " + std::to_string(first.intValue) + " is out of range");
      m.firstParam = static_cast<unsigned>(first.intValue);
      expect(Tok::Comma, "','");
      m.blockRows = expect(Tok::Int, "the block rows BM").intValue;
      expect(Tok::Comma, "','");
      m.blockCols = expect(Tok::Int, "the block columns BN").intValue;
      if (accept(Tok::Comma)) {
        // The declared extents: each a constant or a parameter, %name.
        std::array<MaskExtent, 2> extents;
        for (unsigned i = 0; i < 2; ++i) {
          if (i)
            expect(Tok::Comma, "',' between the declared rows and columns");
          if (peek().kind == Tok::ValueName) {
            const Token &name = take();
            Value *v = use(name);
            for (unsigned a = 0; a < k.body->numArguments(); ++a)
              if (k.body->argument(a) == v)
                extents[i].param = int(a);
            if (extents[i].param < 0)
              fail(name, "%" + name.text + " is not a parameter of the kernel");
          } else {
            extents[i].value = expect(Tok::Int, "a declared extent: an integer or a parameter").intValue;
          }
        }
        m.extents = extents;
      }
      expect(Tok::RBracket, "']'");
      k.blockMasks.push_back(std::move(m));
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "'}' ending block_masks");
  }

  void parseConsts(Kernel &k) {
    expect(Tok::LBrace, "'{' starting the consts");
    if (accept(Tok::RBrace))
      return;
    do {
      const Token &keyTok = peek();
      std::string key = parseKey();
      for (const auto &[name, value] : k.constValues)
        if (name == key)
          fail(keyTok, "duplicate const '" + key + "'");
      expect(Tok::Equal, "'=' after the const name");
      k.constValues.emplace_back(key, parseAttrValue());
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "'}' ending the consts");
  }

  /// Ops up to (not including) the closing '}'.
  void parseOps(Block &block, unsigned depth) {
    while (peek().kind != Tok::RBrace) {
      if (peek().kind == Tok::Eof)
        expected("'}'");
      parseOp(block, depth);
    }
  }

  void parseOp(Block &block, unsigned depth) {
    const Token &first = peek();
    Location textLoc = locOf(first);

    // Results.
    std::vector<const Token *> resultNames;
    if (peek().kind == Tok::ValueName) {
      do
        resultNames.push_back(&expect(Tok::ValueName, "a result name"));
      while (accept(Tok::Comma));
      expect(Tok::Equal, "'=' after the result names");
    }

    // Mnemonic.
    const Token &mn = peek();
    if (mn.kind != Tok::Ident)
      expected("an op name");
    auto kind = opKindFromMnemonic(mn.text);
    if (!kind)
      fail(mn, "unknown op '" + mn.text + "'");
    take();
    auto op = std::make_unique<Op>(*kind, textLoc);

    // Operands: the first must be on the op's line, so that an op without operands is
    // not continued by the next line's results.
    if (peek().kind == Tok::ValueName && peek().line == mn.line) {
      do
        op->operands().push_back(use(expect(Tok::ValueName, "an operand")));
      while (accept(Tok::Comma));
    }

    // Attributes: a '{' followed by `name =` (a region never starts like that).
    if (peek().kind == Tok::LBrace &&
        (peek(1).kind == Tok::Ident || peek(1).kind == Tok::String) &&
        peek(2).kind == Tok::Equal)
      op->attrs() = parseAttrDict();

    // Result types.
    std::vector<Type> types;
    const Token &colon = peek();
    if (!resultNames.empty() && colon.kind != Tok::Colon)
      expected("':' and the result types");
    if (accept(Tok::Colon)) {
      do
        types.push_back(parseType());
      while (accept(Tok::Comma));
    }
    if (types.size() != resultNames.size())
      fail(resultNames.empty() ? colon : first,
           "'" + mn.text + "' has " + std::to_string(resultNames.size()) + " result names but " +
               std::to_string(types.size()) + " result types");
    for (Type &t : types)
      op->addResult(std::move(t));

    if (auto loc = parseOptionalLoc())
      op->setLoc(*loc);

    // Regions; the op's own results are not visible inside them.
    while (peek().kind == Tok::LBrace) {
      if (depth + 1 > kMaxNesting)
        fail(peek(), "regions nest too deeply (more than " + std::to_string(kMaxNesting) +
                         " levels)");
      take();
      Block *region = op->addRegion();
      openScope();
      if (accept(Tok::Caret)) {
        expect(Tok::LParen, "'(' after '^'");
        if (!accept(Tok::RParen)) {
          do
            parseArgument(*region);
          while (accept(Tok::Comma));
          expect(Tok::RParen, "')' ending the region arguments");
        }
        expect(Tok::Colon, "':' after the region arguments");
      }
      parseOps(*region, depth + 1);
      expect(Tok::RBrace, "'}' ending the region");
      closeScope();
    }

    if (auto err = verifyOpLocal(*op)) {
      diags_.error(textLoc, DiagCode::TirSyntax) << "'" << mn.text << "' op " << *err;
      failed_ = true;
      if (diags_.reachedErrorLimit())
        throw ParseAbort{};
    }
    Op *placed = block.append(std::move(op));
    for (size_t i = 0; i < resultNames.size(); ++i)
      define(*resultNames[i], placed->result(static_cast<unsigned>(i)));
  }

  std::shared_ptr<SourceManager> sources_;
  uint32_t file_;
  DiagnosticEngine &diags_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  bool failed_ = false;

  std::unordered_map<std::string, Value *> visible_;
  std::unordered_set<std::string> defined_;
  std::vector<std::vector<std::string>> scopes_;
};

} // namespace

std::unique_ptr<Module> parseTir(std::shared_ptr<SourceManager> sources, uint32_t file,
                                 DiagnosticEngine &diags) {
  return TirParser(std::move(sources), file, diags).run();
}

} // namespace kiln::ir
