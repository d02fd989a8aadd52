#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace tkc::ir {

/// Checks the structural rules of compiler/ir/README.md that hold in every
/// phase: operand counts and types of each op, shapes, layouts that suit
/// their memory space, block structure (terminators, dominance). Reports
/// each broken op once, at the op's location, as IRVerifyFailed. Returns
/// true if the module is well formed.
bool verifyModule(const Module &module, DiagnosticEngine &diags);

} // namespace tkc::ir
