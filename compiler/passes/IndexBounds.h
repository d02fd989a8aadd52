#pragma once
// Which ranges the scalars of a kernel provably lie in (IndexBounds.cpp).
#include "ir/IR.h"

namespace tkc::passes {

/// Whether the scalar `v` is >= 0 whatever the kernel's inputs: built by
/// + * / cdiv % min max select from constants >= 0, block and warpgroup
/// indices, the kernel's scalar parameters (sizes, which the launcher
/// checks), and loop counters that start at such a value and count up.
/// A slice that starts at such an offset cannot begin before its tensor.
bool provablyNonNegative(const ir::Value *v);

/// True when the slice [offset, offset + size) (or the single index `offset`
/// when size is 0) of a global access provably lies inside `dim` (at its
/// high end: the start may still lie before the tensor, which
/// provablyNonNegative answers).
bool provablyInBounds(const ir::Kernel &kernel, const ir::Dim &dim, int64_t size, const ir::Value *offset);

} // namespace tkc::passes
