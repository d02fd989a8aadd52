#pragma once
// Facts about scalar values that hold whatever a kernel's inputs are.
#include "ir/IR.h"

namespace tkc::ir {

/// Whether the i32 scalar `v` is a multiple of `factor`: constants,
/// products with such a factor, sums and differences, min, max and select of
/// such values, and loop counters that start at one and step by one. A
/// slice whose last-dim start is such a multiple keeps the alignment of its
/// tensor's rows, which vector copies need.
bool provablyMultipleOf(const Value *v, int64_t factor);

} // namespace tkc::ir
