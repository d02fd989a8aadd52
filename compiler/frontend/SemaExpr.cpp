#include "frontend/KernelChecker.h"
#include "runtime/tkc_int.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tkc::sema {

using ast::Expr;
using ast::ExprKind;

Type KernelChecker::check(const Expr &expr) {
  switch (expr.kind) {
  case ExprKind::IntLiteral: return record(expr, Type::scalar(ElemType::I32));
  case ExprKind::FloatLiteral:
  case ExprKind::Inf: return record(expr, Type::scalar(ElemType::F32));
  case ExprKind::Name: return record(expr, checkName(expr));
  case ExprKind::BlockIndex: return record(expr, checkBlockIndex(expr));
  case ExprKind::Call: return record(expr, checkCall(expr));
  case ExprKind::Unary: return record(expr, checkUnary(expr));
  case ExprKind::Binary: return record(expr, checkBinary(expr));
  case ExprKind::Broadcast: return record(expr, checkBroadcast(expr));
  case ExprKind::Transpose: return record(expr, checkTranspose(expr));
  case ExprKind::TileType: {
    Type type;
    type.kind = Type::Kind::TileSpec;
    return record(expr, type);
  }
  case ExprKind::Slice: {
    Type type;
    type.kind = Type::Kind::Slice;
    return record(expr, type);
  }
  }
  return Type::invalid();
}

Type KernelChecker::rejectNonValue(const Expr &expr, Type type, bool allowBroadcast, bool allowTranspose) {
  switch (type.kind) {
  case Type::Kind::Global: report(expr.loc, DiagId::GlobalAsValue, expr.name); return Type::invalid();
  case Type::Kind::Slice: report(expr.loc, DiagId::SliceOutsideLoad, expr.name); return Type::invalid();
  case Type::Kind::TileSpec: report(expr.loc, DiagId::TypeOutsideFill, expr.name); return Type::invalid();
  default: break;
  }
  if (type.transposed && !allowTranspose) {
    report(expr.loc, DiagId::TransposeOutsideMma);
    return Type::invalid();
  }
  if (type.newAxis >= 0 && !allowBroadcast) {
    report(expr.loc, DiagId::BroadcastWithoutPartner, type.newAxis == 1 ? "[:, new]" : "[new, :]");
    return Type::invalid();
  }
  return type;
}

Type KernelChecker::checkValue(const Expr &expr) {
  return rejectNonValue(expr, check(expr), /*allowBroadcast=*/false, /*allowTranspose=*/false);
}

Type KernelChecker::checkOperand(const Expr &expr) {
  return rejectNonValue(expr, check(expr), /*allowBroadcast=*/true, /*allowTranspose=*/false);
}

Type KernelChecker::checkName(const Expr &expr) {
  Symbol *symbol = lookup(expr.name);
  if (!symbol) {
    report(expr.loc, DiagId::UndefinedName, expr.name);
    return Type::invalid();
  }
  symbol->used = true;
  return symbol->type;
}

Type KernelChecker::checkBlockIndex(const Expr &expr) {
  if (expr.name != "block") {
    report(expr.loc, DiagId::UnknownMember, expr.name, expr.field);
    return Type::invalid();
  }
  if (expr.field != "x" && expr.field != "y" && expr.field != "z") {
    report(expr.fieldLoc, DiagId::BlockIndexAxis, expr.name, expr.field);
    return Type::invalid();
  }
  if (inGrid_) {
    report(expr.loc, DiagId::BlockIndexInGrid, expr.field);
    return Type::invalid();
  }
  return Type::scalar(ElemType::I32);
}

Type KernelChecker::checkUnary(const Expr &expr) {
  const Expr &operandExpr = expr.operand(0);
  Type operand = checkValue(operandExpr);
  if (operand.isInvalid())
    return operand;
  if (expr.unaryOp == ast::UnaryOp::Not) {
    if (operand.elem != ElemType::I1) {
      report(operandExpr.loc, DiagId::NotACondition, "the operand of `!`", describeType(operand));
      return Type::invalid();
    }
    return operand;
  }
  if (!requireNumeric(operand, "the operand of `-`", operandExpr.loc))
    return Type::invalid();
  return operand;
}

Type KernelChecker::checkBinary(const Expr &expr) {
  const Expr &lhsExpr = expr.operand(0);
  const Expr &rhsExpr = expr.operand(1);
  Type lhs = checkOperand(lhsExpr);
  Type rhs = checkOperand(rhsExpr);
  if (lhs.isInvalid() || rhs.isInvalid())
    return Type::invalid();
  const char *op = ast::spellingOf(expr.binaryOp);
  auto side = [&](bool left) { return fmt::format("the {} operand of `{}`", left ? "left" : "right", op); };

  ElemType resultElem = ElemType::I1;
  if (ast::isLogical(expr.binaryOp)) {
    for (auto [type, operandExpr, left] : {std::tuple{&lhs, &lhsExpr, true}, std::tuple{&rhs, &rhsExpr, false}})
      if (type->elem != ElemType::I1) {
        report(operandExpr->loc, DiagId::NotACondition, side(left), describeType(*type));
        return Type::invalid();
      }
  } else {
    // Conditions may be compared for (in)equality; everything else wants numbers.
    bool conditions = lhs.elem == ElemType::I1 && rhs.elem == ElemType::I1 &&
                      (expr.binaryOp == ast::BinaryOp::Eq || expr.binaryOp == ast::BinaryOp::Ne);
    if (!conditions) {
      if (!requireNumeric(lhs, side(true), lhsExpr.loc) || !requireNumeric(rhs, side(false), rhsExpr.loc))
        return Type::invalid();
      auto common = commonElem(op, expr.loc, lhs, rhs);
      if (!common)
        return Type::invalid();
      if (!ast::isComparison(expr.binaryOp))
        resultElem = *common;
    }
  }
  bool isTile = false;
  auto shape = combineShapes(op, expr.loc, {{&lhsExpr, lhs}, {&rhsExpr, rhs}}, isTile);
  if (!shape)
    return Type::invalid();
  return isTile ? Type::tile(resultElem, *shape) : Type::scalar(resultElem);
}

Type KernelChecker::checkBroadcast(const Expr &expr) {
  const Expr &operandExpr = expr.operand(0);
  Type operand = checkValue(operandExpr);
  if (operand.isInvalid())
    return operand;
  if (!operand.isTile() || operand.shape.size() != 1) {
    report(expr.loc, DiagId::BroadcastRank, describeType(operand));
    return Type::invalid();
  }
  operand.newAxis = expr.newAxis;
  return operand;
}

Type KernelChecker::checkTranspose(const Expr &expr) {
  Type operand = checkValue(expr.operand(0));
  if (operand.isInvalid())
    return operand;
  operand.transposed = true;
  return operand;
}

std::optional<ElemType> KernelChecker::commonElem(const char *opName, SourceLocation loc, const Type &a,
                                                  const Type &b) {
  auto common = commonElemType(a, b);
  if (!common)
    report(loc, DiagId::DTypeMismatch, opName, elemTypeName(a.elem), elemTypeName(b.elem));
  return common;
}

std::optional<std::vector<int64_t>>
KernelChecker::combineShapes(const char *opName, SourceLocation opLoc,
                             const std::vector<std::pair<const Expr *, Type>> &operands, bool &isTile) {
  isTile = false;
  const Type *plain = nullptr;
  for (const auto &[expr, type] : operands) {
    if (!type.isTile() || type.newAxis >= 0)
      continue;
    if (!plain) {
      plain = &type;
    } else if (plain->shape != type.shape) {
      report(opLoc, DiagId::ShapeMismatch, opName, shapeString(plain->shape), shapeString(type.shape));
      return std::nullopt;
    }
  }
  if (plain) {
    isTile = true;
    for (const auto &[expr, type] : operands) {
      if (type.newAxis < 0)
        continue;
      // v[:, new] (newAxis 1) runs along the rows, v[new, :] along the columns.
      if (plain->shape.size() != 2 || plain->shape[1 - type.newAxis] != type.shape[0]) {
        report(opLoc, DiagId::ShapeMismatch, opName, shapeString(plain->shape), operandShapeString(type));
        return std::nullopt;
      }
    }
    return plain->shape;
  }

  // No plain tile: marked vectors of both kinds span a 2-d tile between
  // them (an outer operation); one kind alone has nothing to take a shape from.
  std::optional<int64_t> rows, cols;
  const Expr *firstMarked = nullptr;
  const Type *firstMarkedType = nullptr;
  for (const auto &[expr, type] : operands) {
    if (type.newAxis < 0)
      continue;
    if (!firstMarked) {
      firstMarked = expr;
      firstMarkedType = &type;
    }
    std::optional<int64_t> &extent = type.newAxis == 1 ? rows : cols;
    if (extent && *extent != type.shape[0]) {
      report(opLoc, DiagId::ShapeMismatch, opName, operandShapeString(*firstMarkedType), operandShapeString(type));
      return std::nullopt;
    }
    extent = type.shape[0];
  }
  if (!firstMarked)
    return std::vector<int64_t>{};
  if (!rows || !cols) {
    report(firstMarked->loc, DiagId::BroadcastWithoutPartner, rows ? "[:, new]" : "[new, :]");
    return std::nullopt;
  }
  std::vector<int64_t> shape{*rows, *cols};
  if (!checkTileShape(shape, opLoc))
    return std::nullopt;
  isTile = true;
  return shape;
}

bool KernelChecker::requireIntScalar(const Type &type, const std::string &what, SourceLocation loc) {
  if (type.isInvalid())
    return false;
  if (!type.isScalar()) {
    report(loc, DiagId::NotAScalar, what, describeType(type));
    return false;
  }
  if (type.elem != ElemType::I32) {
    report(loc, DiagId::NotAnInteger, what, describeType(type));
    return false;
  }
  return true;
}

bool KernelChecker::requireNumeric(const Type &type, const std::string &what, SourceLocation loc) {
  if (type.isInvalid())
    return false;
  if (isF8Elem(type.elem)) {
    report(loc, DiagId::F8NotArithmetic, what, describeType(type));
    return false;
  }
  if (!isNumericElem(type.elem)) {
    report(loc, DiagId::NotNumeric, what, describeType(type));
    return false;
  }
  return true;
}

bool KernelChecker::requireTile(const Type &type, const std::string &what, SourceLocation loc) {
  if (type.isInvalid())
    return false;
  if (!type.isTile()) {
    report(loc, DiagId::NotATile, what, describeType(type));
    return false;
  }
  return true;
}

bool KernelChecker::checkTileShape(const std::vector<int64_t> &shape, SourceLocation loc) {
  if (shape.empty() || shape.size() > 2) {
    report(loc, DiagId::TileRank, shape.size());
    return false;
  }
  int64_t elements = 1;
  for (int64_t extent : shape)
    elements = std::min<int64_t>(elements * extent, int64_t(1) << 40);
  if (elements > kMaxTileElements) {
    report(loc, DiagId::TileTooLarge, elements, kMaxTileElements);
    return false;
  }
  return true;
}

namespace {

/// How a non-constant part of an extent is named in DimNotStatic.
std::string spellingForMessage(const Expr &expr) {
  switch (expr.kind) {
  case ExprKind::Name: return expr.name;
  case ExprKind::BlockIndex: return expr.name + "." + expr.field;
  case ExprKind::Call: return expr.name + "(...)";
  case ExprKind::FloatLiteral: return expr.spelling;
  case ExprKind::Inf: return "inf";
  default: return "this expression";
  }
}

bool fitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

} // namespace

std::optional<int64_t> KernelChecker::evalConst(const Expr &expr) {
  auto notConstant = [&](const Expr &culprit) -> std::optional<int64_t> {
    report(culprit.loc, DiagId::DimNotStatic, spellingForMessage(culprit));
    return std::nullopt;
  };
  switch (expr.kind) {
  case ExprKind::IntLiteral: return expr.intValue;
  case ExprKind::Name: {
    Symbol *symbol = lookup(expr.name);
    if (!symbol) {
      report(expr.loc, DiagId::UndefinedName, expr.name);
      return std::nullopt;
    }
    symbol->used = true;
    if ((symbol->kind == Symbol::Kind::Dim || symbol->kind == Symbol::Kind::WhereConst ||
         symbol->kind == Symbol::Kind::Variable) &&
        symbol->value)
      return symbol->value;
    return notConstant(expr);
  }
  case ExprKind::Unary: {
    auto value = evalConst(expr.operand(0));
    if (!value)
      return std::nullopt;
    int64_t result = expr.unaryOp == ast::UnaryOp::Neg ? -*value : int64_t(*value == 0);
    if (!fitsInt32(result)) { // -(-2147483648)
      report(expr.loc, DiagId::ConstantOverflow);
      return std::nullopt;
    }
    return result;
  }
  case ExprKind::Binary: {
    auto lhs = evalConst(expr.operand(0));
    auto rhs = evalConst(expr.operand(1));
    if (!lhs || !rhs)
      return std::nullopt;
    int64_t result = 0;
    switch (expr.binaryOp) {
    case ast::BinaryOp::Eq: return *lhs == *rhs;
    case ast::BinaryOp::Ne: return *lhs != *rhs;
    case ast::BinaryOp::Lt: return *lhs < *rhs;
    case ast::BinaryOp::Le: return *lhs <= *rhs;
    case ast::BinaryOp::Gt: return *lhs > *rhs;
    case ast::BinaryOp::Ge: return *lhs >= *rhs;
    case ast::BinaryOp::And: return *lhs != 0 && *rhs != 0;
    case ast::BinaryOp::Or: return *lhs != 0 || *rhs != 0;
    case ast::BinaryOp::Add: result = *lhs + *rhs; break;
    case ast::BinaryOp::Sub: result = *lhs - *rhs; break;
    case ast::BinaryOp::Mul: result = *lhs * *rhs; break;
    case ast::BinaryOp::Div:
    case ast::BinaryOp::Rem:
      if (*rhs == 0) {
        report(expr.loc, DiagId::DivisionByZero);
        return std::nullopt;
      }
      result = expr.binaryOp == ast::BinaryOp::Div ? tkc::div(*lhs, *rhs) : tkc::rem(*lhs, *rhs);
      break;
    default: break;
    }
    // Operands fit in 32 bits, so 64-bit arithmetic cannot overflow.
    if (!fitsInt32(result)) {
      report(expr.loc, DiagId::ConstantOverflow);
      return std::nullopt;
    }
    return result;
  }
  case ExprKind::Call:
    // A `where` whose condition is known picks one side: schedules that
    // differ between specialisations (`bm = where(D == 64, 192, 128)`).
    if (expr.name == "where" && expr.operands.size() == 3) {
      auto condition = evalConst(expr.operand(0));
      if (!condition)
        return std::nullopt;
      return evalConst(expr.operand(*condition != 0 ? 1 : 2));
    }
    if ((expr.name == "cdiv" || expr.name == "min" || expr.name == "max") && expr.operands.size() == 2) {
      auto a = evalConst(expr.operand(0));
      auto b = evalConst(expr.operand(1));
      if (!a || !b)
        return std::nullopt;
      if (expr.name == "min")
        return tkc::min(*a, *b);
      if (expr.name == "max")
        return tkc::max(*a, *b);
      if (*b == 0) {
        report(expr.loc, DiagId::DivisionByZero);
        return std::nullopt;
      }
      return tkc::cdiv(*a, *b);
    }
    return notConstant(expr);
  default: return notConstant(expr);
  }
}

std::optional<int64_t> KernelChecker::evalExtent(const Expr &expr, const char *what) {
  auto value = evalConst(expr);
  if (value && *value <= 0) {
    report(expr.loc, DiagId::NonPositiveSize, what, *value);
    return std::nullopt;
  }
  return value;
}

std::optional<double> KernelChecker::evalConstNumber(const Expr &expr) {
  switch (expr.kind) {
  case ExprKind::IntLiteral: return static_cast<double>(expr.intValue);
  case ExprKind::FloatLiteral: return expr.floatValue;
  case ExprKind::Inf: return std::numeric_limits<double>::infinity();
  case ExprKind::Unary:
    if (expr.unaryOp == ast::UnaryOp::Neg)
      if (auto value = evalConstNumber(expr.operand(0)))
        return -*value;
    break;
  case ExprKind::Name:
    if (Symbol *symbol = lookup(expr.name); symbol && symbol->value) {
      symbol->used = true;
      return static_cast<double>(*symbol->value);
    }
    break;
  default: break;
  }
  return std::nullopt;
}

} // namespace tkc::sema
