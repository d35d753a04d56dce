//===- SemaSparsity.cpp - block_mask parameters and blocks() loops --------===//
//
// Block-sparse iteration (LANGUAGE.md, "Sparsity") lowers here to ordinary Tile IR, so
// that every later stage — reduction-chain fusion above all — sees a plain loop:
//
//   mask: block_mask<BM, BN>     five runtime parameters (support/BlockMask.h): rows,
//                                cols, row_start, blocks, bitmaps
//   for kb in blocks(mask, rb)   for e in [row_start[rb], row_start[rb + 1]) with
//                                kb = blocks[2e]; the `for` carries attr block_mask
//   mask.elements(rb, kb)        block_elements(bitmaps, blocks[2e + 1]): all true on a
//                                full block (slot -1), the block's bitmap otherwise
//
// The loop's entries are the row's non-empty blocks in ascending column order, so the
// loop visits exactly what the language promises. The specialization of a loop into its
// full and partial iterations (no masking on full blocks) happens after fusion, in
// ir/transforms/SpecializeBlockLoops.cpp, on the loop fusion produced.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"
#include "frontend/BuiltinSynonyms.h"
#include "support/BlockMask.h"

namespace kiln::sema {

using ast::ExprKind;

std::optional<std::pair<int64_t, int64_t>> Sema::blockMaskSizes(const ast::TypeExpr &t) {
  if (t.dims.size() != 2 && t.dims.size() != 4) {
    error(t.loc, DiagCode::KernelParamType,
          "a block mask takes two block sizes, and optionally its extents: block_mask<BM, BN> or "
          "block_mask<BM, BN, ROWS, COLS>");
    return std::nullopt;
  }
  int64_t sizes[2] = {0, 0};
  for (unsigned i = 0; i < 2; ++i) {
    Val v = evalConstExpr(*t.dims[i], i == 0 ? "the block rows of a block_mask" : "the block columns of a block_mask",
                          /*moduleScope=*/false);
    if (!v.isValue())
      return std::nullopt;
    if (!v.cst->isInt() || !isValidMaskBlockSize(v.cst->i)) {
      error(t.dims[i]->loc, DiagCode::KernelParamType,
            "the block " + std::string(i == 0 ? "rows" : "columns") + " of a block_mask must be a power of two from 1 "
            "to 256, got " + describe(v),
            "64 x 64 blocks suit attention: block_mask<64, 64>");
      return std::nullopt;
    }
    sizes[i] = v.cst->i;
  }
  return std::pair(sizes[0], sizes[1]);
}

void Sema::declareMaskParam(const ast::Param &p) {
  auto sizes = blockMaskSizes(*p.type);
  if (!sizes) {
    declareParam(BindingKind::Param, p.name, p.loc, Val::poison());
    return;
  }
  MaskParam m;
  m.name = p.name;
  m.blockRows = sizes->first;
  m.blockCols = sizes->second;
  ir::BlockMaskParam record{p.name, m.blockRows, m.blockCols, current->body->numArguments(), std::nullopt};
  const Type types[kBlockMaskParams] = {Type::scalar(DType::I32), Type::scalar(DType::I32), Type::ptr(DType::I32),
                                        Type::ptr(DType::I32), Type::ptr(DType::U32)};
  ir::Value **slots[kBlockMaskParams] = {&m.rows, &m.cols, &m.rowStart, &m.blocks, &m.bitmaps};
  for (unsigned i = 0; i < kBlockMaskParams; ++i)
    *slots[i] = current->body->addArgument(types[i], p.name + kBlockMaskParamSuffixes[i]);
  current->blockMasks.push_back(record);
  masks.push_back(std::move(m));
  declareParam(BindingKind::Param, p.name, p.loc, Val::ofMask(static_cast<int>(masks.size() - 1), p.loc));
}

void Sema::resolveMaskExtents(const ast::FunctionItem &k) {
  for (const auto &p : k.params) {
    if (p.isConst || !p.type || p.type->kind != ast::TypeExprKind::BlockMask)
      continue;
    const ast::TypeExpr &t = *p.type;
    ir::BlockMaskParam *record = nullptr;
    for (ir::BlockMaskParam &m : current->blockMasks)
      if (m.name == p.name)
        record = &m;
    if (!record || t.dims.size() != 4)
      continue;
    std::array<ir::MaskExtent, 2> extents;
    bool ok = true;
    for (unsigned i = 0; i < 2; ++i) {
      const ast::Expr &e = *t.dims[2 + i];
      const std::string what = std::string("the ") + (i == 0 ? "rows" : "columns") + " of block mask '" + p.name + "'";
      // A runtime parameter: the launch checks the mask against its value.
      if (const auto *name = ast::dyn_cast<ast::NameExpr>(&e)) {
        Val v = evalName(*name);
        if (v.isPoison()) {
          ok = false;
          continue;
        }
        if (v.isValue() && !v.isConst() && v.ir) {
          int param = -1;
          for (unsigned a = 0; a < current->body->numArguments(); ++a)
            if (current->body->argument(a) == v.ir)
              param = int(a);
          if (param >= 0 && v.type.isScalar() && !v.type.pointer && isInteger(v.type.dtype)) {
            extents[i].param = param;
            continue;
          }
          error(e.loc, DiagCode::KernelParamType,
                what + " must be an integer parameter of the kernel or a constant, got '" + name->name + "' (" +
                    describe(v) + ")",
                "declare the size the mask must have, e.g. block_mask<64, 64, S, S> with S: i32");
          ok = false;
          continue;
        }
      }
      Val v = evalConstExpr(e, what, /*moduleScope=*/false);
      if (!v.isValue()) {
        ok = false;
        continue;
      }
      if (!v.cst->isInt() || v.cst->i < 1 || v.cst->i > (int64_t{1} << 30)) {
        error(e.loc, DiagCode::KernelParamType, what + " must be from 1 to 2^30, got " + describe(v));
        ok = false;
        continue;
      }
      extents[i].value = v.cst->i;
    }
    if (ok)
      record->extents = extents;
  }
}

bool Sema::checkMaskArgument(const Val &v, const ast::Param &p, const ast::FunctionItem &fn, Location loc) {
  const std::string param = "parameter '" + p.name + "' of fn " + fn.name;
  if (v.kind != Val::Kind::Mask) {
    error(loc, DiagCode::BlockMaskUse, param + " takes a block mask, got " + describe(v));
    return false;
  }
  const MaskParam &m = masks[v.mask];
  if (p.isConst || (p.type && p.type->kind != ast::TypeExprKind::BlockMask)) {
    error(loc, DiagCode::BlockMaskUse,
          param + " is " + (p.isConst ? "const" : "typed") + ", so it cannot take the block mask '" + m.name + "'",
          "declare it as " + p.name + ": block_mask<" + std::to_string(m.blockRows) + ", " +
              std::to_string(m.blockCols) + ">, or leave it untyped");
    return false;
  }
  if (!p.type)
    return true;
  auto sizes = blockMaskSizes(*p.type);
  if (sizes && (sizes->first != m.blockRows || sizes->second != m.blockCols)) {
    error(loc, DiagCode::BlockMaskUse,
          param + " takes a block_mask<" + std::to_string(sizes->first) + ", " + std::to_string(sizes->second) +
              ">, but '" + m.name + "' is a block_mask<" + std::to_string(m.blockRows) + ", " +
              std::to_string(m.blockCols) + ">");
    return false;
  }
  return sizes.has_value();
}

bool Sema::isMaskExpr(const ast::Expr &e) {
  const auto *n = ast::dyn_cast<ast::NameExpr>(&e);
  if (!n)
    return false;
  Binding *b = lookupLocal(n->name);
  return b && b->value.kind == Val::Kind::Mask;
}

/// The mask `e` names, or nullopt after reporting what it is instead.
static std::optional<int> maskOf(Sema &s, const ast::Expr &e, const char *where) {
  Val v = s.evalExpr(e);
  if (v.kind == Val::Kind::Mask)
    return v.mask;
  if (!v.isPoison())
    s.error(e.loc, DiagCode::BlockMaskUse,
            std::string(where) + " takes a block_mask parameter, got " + s.describe(v),
            "declare one on the kernel: mask: block_mask<64, 64>");
  return std::nullopt;
}

/// An i32 scalar argument, converted; nullopt after an error.
static std::optional<Val> i32Scalar(Sema &s, const ast::Expr &e, const std::string &what) {
  Val v = s.evalValue(e);
  if (!v.isValue())
    return std::nullopt;
  if (v.type.pointer || !v.type.isScalar() || !isInteger(v.type.dtype)) {
    s.error(e.loc, DiagCode::TypeMismatch, what + " must be an integer scalar, got " + s.describe(v));
    return std::nullopt;
  }
  return s.convertTo(v, DType::I32, e.loc);
}

static ir::Value *loadAt(Sema &s, ir::Value *base, ir::Value *index, Location loc) {
  ir::Value *p = s.emitValue(ir::OpKind::PtrAdd, loc, {base, index}, base->type).ir;
  return s.emitValue(ir::OpKind::Load, loc, {p}, Type::scalar(base->type.dtype)).ir;
}

static ir::Value *i32Const(Sema &s, int64_t v, Location loc) {
  Val c = Val::ofConst(Type::scalar(DType::I32), ConstVal::ofInt(v), false, loc);
  return s.materialize(c);
}

/// Whether two evaluations of a block row are the same value: one SSA value, or equal
/// constants.
static bool sameRow(const Val &a, const Val &b) {
  if (a.isConst() && b.isConst())
    return a.cst->i == b.cst->i;
  return a.ir != nullptr && a.ir == b.ir;
}

Val Sema::evalMember(const ast::MethodExpr &m) {
  std::optional<int> mask = isMaskExpr(*m.receiver) ? maskOf(*this, *m.receiver, "a member access") : std::nullopt;
  if (!mask) {
    Val r = evalExpr(*m.receiver);
    if (r.isPoison())
      return r;
    std::string hint = m.method == "shape" ? shapeMethodHint()
                       : m.method == "T"   ? std::string("transpose with trans(x)")
                                           : "fields exist only on block masks (mask.rows, mask.cols); call a "
                                             "method with parentheses: x." + m.method + "(...)";
    error(m.methodLoc, DiagCode::UnknownFunction, "'" + m.method + "' is not a field of " + describe(r), hint);
    return Val::poison();
  }
  const MaskParam &p = masks[*mask];
  auto wrongForm = [&](const std::string &usage) {
    error(m.methodLoc, DiagCode::BlockMaskUse, "write " + usage);
    return Val::poison();
  };
  if (m.method == "rows" || m.method == "cols") {
    if (!m.field)
      return wrongForm(p.name + "." + m.method + " (a field, without parentheses)");
    return Val::ofIR(m.method == "rows" ? p.rows : p.cols, m.loc);
  }
  if (m.method != "elements") {
    error(m.methodLoc, DiagCode::BlockMaskUse, "a block mask has no member '" + m.method + "'",
          "a block mask has .rows, .cols and .elements(rb, cb)");
    return Val::poison();
  }
  if (m.field || m.args.size() != 2 || !m.args[0].name.empty() || !m.args[1].name.empty())
    return wrongForm(p.name + ".elements(rb, cb) with the block row and the loop variable of blocks(" + p.name +
                     ", rb)");
  std::optional<Val> row = i32Scalar(*this, *m.args[0].value, "the block row of " + p.name + ".elements");
  std::optional<Val> col = i32Scalar(*this, *m.args[1].value, "the block column of " + p.name + ".elements");
  if (!row || !col)
    return Val::poison();
  for (auto it = blocksLoops.rbegin(); it != blocksLoops.rend(); ++it)
    if (it->mask == *mask && col->ir == it->col && sameRow(*row, it->row))
      return emitValue(ir::OpKind::BlockElements, m.loc, {p.bitmaps, it->slot},
                       Type::tile(DType::Bool, {p.blockRows, p.blockCols}));
  error(m.loc, DiagCode::BlockMaskUse,
        p.name + ".elements(rb, cb) must name the block a blocks(" + p.name + ", rb) loop around it is visiting",
        "pass that loop's row and its loop variable: for kb in blocks(" + p.name + ", rb) { let keep = " + p.name +
            ".elements(rb, kb); ... }");
  return Val::poison();
}

std::optional<Sema::BlocksRange> Sema::blocksRange(const ast::ForStmt &f) {
  if (f.bounds.size() != 2) {
    error(f.rangeLoc, DiagCode::ArgumentCount,
          "blocks takes a block mask and a block row: blocks(mask, rb), got " + std::to_string(f.bounds.size()) +
              " arguments");
    return std::nullopt;
  }
  std::optional<int> mask = maskOf(*this, *f.bounds[0], "blocks(mask, rb)");
  std::optional<Val> row = i32Scalar(*this, *f.bounds[1], "the block row of blocks(mask, rb)");
  if (!mask || !row)
    return std::nullopt;
  const MaskParam &p = masks[*mask];
  Location loc = f.rangeLoc;
  BlocksRange r;
  r.mask = *mask;
  r.row = *row;
  ir::Value *rb = materialize(r.row);
  r.begin = loadAt(*this, p.rowStart, rb, loc);
  ir::Value *next = emitValue(ir::OpKind::Add, loc, {rb, i32Const(*this, 1, loc)}, Type::scalar(DType::I32)).ir;
  r.end = loadAt(*this, p.rowStart, next, loc);
  return r;
}

Val Sema::enterBlocksIteration(const BlocksRange &r, ir::Value *entry, Location loc) {
  const MaskParam &p = masks[r.mask];
  ir::Value *at = emitValue(ir::OpKind::Mul, loc, {entry, i32Const(*this, 2, loc)}, Type::scalar(DType::I32)).ir;
  ir::Value *col = loadAt(*this, p.blocks, at, loc);
  ir::Value *slotAt = emitValue(ir::OpKind::Add, loc, {at, i32Const(*this, 1, loc)}, Type::scalar(DType::I32)).ir;
  ir::Value *slot = loadAt(*this, p.blocks, slotAt, loc);
  blocksLoops.push_back(BlocksLoop{r.mask, r.row, col, slot});
  return Val::ofIR(col, loc);
}

} // namespace kiln::sema
