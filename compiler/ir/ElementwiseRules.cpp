// Rules of the scalar and elementwise ops (arithmetic, comparisons, logic,
// math functions, select, cast) and of the ops that make a value from
// nothing (const, block_id, fill, undef, iota): operands of one shape, or
// scalars next to tiles, and a number attribute that suits the dtype.
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

namespace {

/// `value` of const and fill, `fill` of mask: a number that suits the dtype.
std::string checkNumberAttr(const Op &op, const std::string &name, DType dtype) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end())
    return fmt::format("requires attribute `{}`", name);
  if (std::holds_alternative<double>(it->second)) {
    if (!isFloat(dtype))
      return fmt::format("attribute `{}` must be an integer because the result is {}", name, dtypeName(dtype));
    return "";
  }
  auto *value = std::get_if<int64_t>(&it->second);
  if (!value)
    return fmt::format("attribute `{}` must be a number", name);
  if (dtype == DType::I1 && *value != 0 && *value != 1)
    return fmt::format("attribute `{}` must be 0 or 1 for an i1 result, but is {}", name, *value);
  if (dtype == DType::I32 && (*value < INT32_MIN || *value > INT32_MAX))
    return fmt::format("attribute `{}` does not fit in i32: {}", name, *value);
  return "";
}

/// Checks that the operands are scalars or tiles of one shape, and that the
/// result is a scalar of `resultDType` if all operands are, or else the type
/// of one tile operand with `resultDType`.
std::string checkElementwiseShapes(const Op &op, DType resultDType) {
  const Type *tile = nullptr;
  size_t tileIndex = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type &type = operandType(op, i);
    if (type.isGlobal())
      return fmt::format("operand #{} must be a scalar or a tile, but is {}", i, type.str());
    if (!type.isTile())
      continue;
    if (tile && tile->shape != type.shape)
      return fmt::format("operands #{} and #{} have different shapes {} and {}", tileIndex, i,
                         shapeText(tile->shape), shapeText(type.shape));
    if (!tile) {
      tile = &type;
      tileIndex = i;
    }
  }
  const Type &result = resultType(op);
  if (!tile) {
    if (result != Type::scalar(resultDType))
      return fmt::format("result must be {} but is {}", dtypeName(resultDType), result.str());
    return "";
  }
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (operandType(op, i).isTile() && result == operandType(op, i).withDType(resultDType))
      return "";
  return fmt::format("result must be {} but is {}", tile->withDType(resultDType).str(), result.str());
}

/// Elementwise ops compute on scalars and tiles; a global tensor must be
/// loaded first.
std::string checkNoGlobalOperands(const Op &op) {
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (operandType(op, i).isGlobal())
      return fmt::format("operand #{} must be a scalar or a tile, but is {}", i, operandType(op, i).str());
  return "";
}

std::string checkSameDType(const Op &op, size_t first, size_t last) {
  for (size_t i = first + 1; i <= last; ++i)
    if (operandType(op, i).dtype != operandType(op, first).dtype)
      return fmt::format("operands #{} and #{} have different element types {} and {}", first, i,
                         dtypeName(operandType(op, first).dtype), dtypeName(operandType(op, i).dtype));
  return "";
}

bool isArithmetic(OpKind kind) {
  switch (kind) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
  case OpKind::Rem: case OpKind::Max: case OpKind::Min:
    return true;
  default:
    return false;
  }
}

bool isComparison(OpKind kind) {
  switch (kind) {
  case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::Eq: case OpKind::Ne:
    return true;
  default:
    return false;
  }
}

} // namespace

std::string checkBinary(const Op &op) {
  if (auto error = checkCounts(op, 2, 1); !error.empty())
    return error;
  if (auto error = checkNoGlobalOperands(op); !error.empty())
    return error;
  if (auto error = checkSameDType(op, 0, 1); !error.empty())
    return error;
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  DType dtype = operandType(op, 0).dtype;
  bool logical = op.kind == OpKind::And || op.kind == OpKind::Or;
  if (logical && dtype != DType::I1)
    return fmt::format("operands must be i1, but are {}", dtypeName(dtype));
  if (isArithmetic(op.kind) && dtype == DType::I1)
    return "operands must be numbers, but are i1";
  return checkElementwiseShapes(op, isComparison(op.kind) ? DType::I1 : dtype);
}

std::string checkUnary(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  if (auto error = checkNoGlobalOperands(op); !error.empty())
    return error;
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  DType dtype = operandType(op, 0).dtype;
  bool integerAllowed = op.kind == OpKind::Neg || op.kind == OpKind::Abs;
  if (!integerAllowed && !isFloat(dtype))
    return fmt::format("operand must be a float, but is {}", dtypeName(dtype));
  if (dtype == DType::I1)
    return "operand must be a number, but is i1";
  return checkElementwiseShapes(op, dtype);
}

std::string checkConst(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  if (!resultType(op).isScalar())
    return fmt::format("result must be a scalar, but is {}", resultType(op).str());
  return checkNumberAttr(op, "value", resultType(op).dtype);
}

std::string checkBlockId(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  if (!isScalarOf(resultType(op), DType::I32))
    return fmt::format("result must be i32, but is {}", resultType(op).str());
  return checkIntAttr(op, "axis", Presence::Required, 0, 2);
}

std::string checkCDiv(const Op &op) {
  if (auto error = checkCounts(op, 2, 1); !error.empty())
    return error;
  for (size_t i = 0; i < 2; ++i)
    if (!isScalarOf(operandType(op, i), DType::I32))
      return fmt::format("operand #{} must be i32, but is {}", i, operandType(op, i).str());
  if (!isScalarOf(resultType(op), DType::I32))
    return fmt::format("result must be i32, but is {}", resultType(op).str());
  return "";
}

std::string checkSelect(const Op &op) {
  if (auto error = checkCounts(op, 3, 1); !error.empty())
    return error;
  if (auto error = checkNoGlobalOperands(op); !error.empty())
    return error;
  if (operandType(op, 0).dtype != DType::I1)
    return fmt::format("condition must be i1, but is {}", operandType(op, 0).str());
  if (auto error = checkSameDType(op, 1, 2); !error.empty())
    return error;
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  return checkElementwiseShapes(op, operandType(op, 1).dtype);
}

std::string checkCast(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  if (isF8(resultType(op).dtype) || (isF8(operandType(op, 0).dtype) && !isFloat(resultType(op).dtype)))
    return fmt::format("an 8-bit float converts only to f32, bf16 or f16: {} to {}", dtypeName(operandType(op, 0).dtype),
                       dtypeName(resultType(op).dtype));
  return checkElementwiseShapes(op, resultType(op).dtype);
}

std::string checkFill(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  if (!resultType(op).isTile())
    return fmt::format("result must be a tile, but is {}", resultType(op).str());
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  return checkNumberAttr(op, "value", resultType(op).dtype);
}

std::string checkUndef(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  // The interpreter fills it with NaN, which only floats can hold.
  if (!resultType(op).isRegister() || !isFloat(resultType(op).dtype) || isF8(resultType(op).dtype))
    return fmt::format("result must be a float tile in registers, but is {}", resultType(op).str());
  return "";
}

std::string checkIota(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  const Type &result = resultType(op);
  if (!result.isTile() || result.dtype != DType::I32)
    return fmt::format("result must be an i32 tile, but is {}", result.str());
  return checkIntAttr(op, "axis", Presence::Required, 0, int64_t(result.shape.size()) - 1);
}

} // namespace tkc::ir::rules
