#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace tkc {

/// A double converted to i32 the way the GPU's `cvt.rzi.s32` converts a
/// float: toward zero, saturating at the ends of the range, NaN to 0. A plain
/// cast is undefined behaviour outside the range, and values that reach here
/// (a float literal where a dimension belongs, a float tile converted to i32
/// in the interpreter) can be anything.
inline int32_t saturatingToI32(double value) {
  if (std::isnan(value))
    return 0;
  if (value <= static_cast<double>(std::numeric_limits<int32_t>::min()))
    return std::numeric_limits<int32_t>::min();
  if (value >= static_cast<double>(std::numeric_limits<int32_t>::max()))
    return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(value);
}

} // namespace tkc
