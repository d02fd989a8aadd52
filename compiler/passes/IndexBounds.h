#pragma once
// Which ranges the scalars of a kernel provably lie in (IndexBounds.cpp).
#include "ir/IR.h"

namespace tkc::passes {

/// Whether the scalar `v` is >= 0 whatever the kernel's inputs: built by
/// + * / cdiv % min max select from constants >= 0, block and warpgroup
/// indices, the kernel's scalar parameters (sizes, which the launcher
/// checks), and loop counters that start at such a value and count up;
/// or a difference x - y where y is below x, or below x + 1 (a loop walked
/// backwards, `cdiv(N, 64) - 1 - c`). A slice that starts at such an
/// offset cannot begin before its tensor.
bool provablyNonNegative(const ir::Kernel &kernel, const ir::Value *v);

/// True when the slice [offset, offset + size) (or the single index `offset`
/// when size is 0) of a global access provably lies inside `dim` (at its
/// high end: the start may still lie before the tensor, which
/// provablyNonNegative answers).
bool provablyInBounds(const ir::Kernel &kernel, const ir::Dim &dim, int64_t size, const ir::Value *offset);

/// True when a slice starting at `offset` provably starts before the end of
/// `dim` (offset < dim): a counter of a loop up to dim, offsets block.x * T on a grid of cdiv(dim, T)
/// blocks, j * T in a loop up to cdiv(dim, T), base + j * T in a loop up to
/// cdiv(dim - base, T), and the same with an index below such a bound (a
/// min of bounds, a loop walked backwards). A slice that starts there and
/// not before its tensor holds at least one of its elements.
bool provablyStartsInside(const ir::Kernel &kernel, const ir::Dim &dim, const ir::Value *offset);

} // namespace tkc::passes
