#pragma once
#include "ir/IR.h"

#include <string>

namespace tkc::ir {

/// The rules of one op taken alone (README.md's table): operand and result
/// counts, types, shapes and attributes. Returns what is wrong, as the tail
/// of "'mnemonic' op ...", or an empty string if the op is well formed.
/// Operands must be non-null. Where an op may appear, block arguments and
/// terminators are checked by the verifier.
std::string checkOpRules(const Op &op);

/// What is wrong with a type taken alone (layout against memory space and
/// shape, positive extents, ...), or an empty string. `warps` is the
/// kernel's warp count, which every register layout must use.
std::string checkTypeRules(const Type &type, int warps);

} // namespace tkc::ir
