//===- Verifier.h - Tile IR invariants ---------------------------*- C++ -*-===//
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <optional>
#include <string>

namespace kiln::ir {

/// Checks the rules of one op that do not depend on its regions' contents: arity,
/// attribute presence and types, operand/result types and shapes. Returns the first
/// violation as a message.
std::optional<std::string> verifyOpLocal(const Op &op);

/// Checks the whole module: every op locally, regions (block arguments and terminators
/// agree with the op's operands and results), SSA dominance (a value is used only after
/// its definition, in its block or a nested one). Reports each violation as E0701 at
/// the op's location; returns true when the module is valid.
bool verifyModule(const Module &module, DiagnosticEngine &diags);

} // namespace kiln::ir
