#pragma once
// The values a `where NAME = e` can take before the sizes are known.
//
// A derived constant may depend on the sizes when it only picks among
// compile-time values: `where BN = where(N >= 2048, 256, 128)` can be 128 or
// 256. The kernel is then compiled once per value and the launcher picks the
// specialisation whose value the sizes give, so that a schedule (a tile
// shape, a split of K) can follow the problem's shape as a library's
// heuristics would. Every specialisation computes the same function; the
// choice only decides which one runs.
#include "frontend/AST.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tkc::sema {

/// A derived constant may pick among at most this many values.
constexpr size_t kMaxChoices = 8;

/// The values `expr` can take where the names in `known` have their values
/// and every other name (a dimension not specialised) is a size known only
/// at launch. A comparison or condition on such a size can be either true or
/// false; any other use of one (`N / 2`) leaves the value unbounded, and so
/// does a division by zero or a value outside i32: nothing is returned. The
/// checker reports those.
std::optional<std::set<int64_t>> possibleValues(const ast::Expr &expr, const std::map<std::string, int64_t> &known);

} // namespace tkc::sema
