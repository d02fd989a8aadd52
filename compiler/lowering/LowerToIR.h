#pragma once
#include "frontend/AST.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <memory>

namespace tkc {

/// Lowers a file that passed semantic checks to the tile IR: one IR kernel
/// per kernel and specialisation (`NAME__D64__causal0`), holding only the
/// ops and unplaced tile types that compiler/ir/README.md lists for the
/// lowering phase. Every op carries the location of the construct it came
/// from and values keep the source variable names as hints.
/// `sm`: the target's compute capability, the value of the built-in `sm`.
std::unique_ptr<ir::Module> lowerToIR(const ast::File &file, DiagnosticEngine &diags, int64_t sm = 80);

} // namespace tkc
