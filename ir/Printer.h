//===- Printer.h - Tile IR to .tir text --------------------------*- C++ -*-===//
#pragma once

#include "ir/IR.h"

#include <iosfwd>
#include <string>

namespace kiln::ir {

struct PrintOptions {
  bool locations = false; ///< append `loc("file":line:col)` to every op
};

/// Prints in the textual form that parseTir() reads back: print(parse(print(m))) is
/// identical to print(m).
void printModule(const Module &module, std::ostream &os, PrintOptions options = {});
std::string printModule(const Module &module, PrintOptions options = {});
void printKernel(const Kernel &kernel, const SourceManager *sources, std::ostream &os,
                 PrintOptions options = {});
/// One op (and its regions) with local value numbering, for debugging and messages.
std::string printOp(const Op &op);
/// Attribute values as they appear in .tir text: 3, 1.5, true, "msg", f32, [0, 1].
std::string printAttr(const Attr &attr);

} // namespace kiln::ir
