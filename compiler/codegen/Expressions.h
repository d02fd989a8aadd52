#pragma once
#include "ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace tkc::codegen {

/// How a math function is spelled: the accurate libm form for scalars
/// computed once, the hardware approximations for tile elements.
enum class MathPrecision { Accurate, Fast };

/// The C++ expression of an arithmetic, comparison, logical or unary op on
/// already-printed operands, or nothing for ops that are not such maps.
/// `floatMath` picks float functions (fmaxf, fmodf) over integer ones.
std::optional<std::string> operatorExpression(ir::OpKind kind, const std::vector<std::string> &args, bool floatMath,
                                              MathPrecision precision);

/// The terms joined by `&&`, leaving out those that are `true` or empty
/// (`true` when none is left).
std::string conjunction(const std::vector<std::string> &terms);

/// A float as a C++ f32 literal (`2.0f`, `INFINITY`): never an integer
/// literal, which would construct 16-bit types through their integer
/// conversion, one the compiler does not fold.
std::string floatLiteral(double value);

} // namespace tkc::codegen
