#include "frontend/SemaChoices.h"
#include "runtime/tkc_int.h"

#include <limits>

namespace tkc::sema {

namespace {

using ast::BinaryOp;
using ast::Expr;
using ast::ExprKind;
using Values = std::set<int64_t>;

bool fitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

const Values kEither{0, 1};

class ChoiceEvaluator {
public:
  explicit ChoiceEvaluator(const std::map<std::string, int64_t> &known) : known_(known) {}

  std::optional<Values> values(const Expr &expr) {
    switch (expr.kind) {
    case ExprKind::IntLiteral: return Values{expr.intValue};
    case ExprKind::Name:
      if (auto it = known_.find(expr.name); it != known_.end())
        return Values{it->second};
      return std::nullopt;
    case ExprKind::Unary: {
      std::optional<Values> operand = expr.unaryOp == ast::UnaryOp::Not ? condition(expr.operand(0))
                                                                        : values(expr.operand(0));
      if (!operand)
        return std::nullopt;
      Values result;
      for (int64_t v : *operand)
        result.insert(expr.unaryOp == ast::UnaryOp::Neg ? -v : int64_t(v == 0));
      return bounded(result);
    }
    case ExprKind::Binary: return binary(expr);
    case ExprKind::Call: return call(expr);
    default: return std::nullopt;
    }
  }

private:
  /// A value used as a condition: one that depends on the sizes can hold or not.
  std::optional<Values> condition(const Expr &expr) {
    std::optional<Values> v = values(expr);
    if (!v)
      return kEither;
    Values truth;
    for (int64_t x : *v)
      truth.insert(x != 0);
    return truth;
  }

  std::optional<Values> binary(const Expr &expr) {
    BinaryOp op = expr.binaryOp;
    if (op == BinaryOp::And || op == BinaryOp::Or) {
      // Either side alone can decide: `sm >= 90 && N >= 2048` is false on sm_80.
      Values lhs = *condition(expr.operand(0)), rhs = *condition(expr.operand(1));
      int64_t decisive = op == BinaryOp::And ? 0 : 1;
      if (lhs == Values{decisive} || rhs == Values{decisive})
        return Values{decisive};
      Values result;
      for (int64_t a : lhs)
        for (int64_t b : rhs)
          result.insert(op == BinaryOp::And ? (a && b) : (a || b));
      return result;
    }
    std::optional<Values> lhs = values(expr.operand(0)), rhs = values(expr.operand(1));
    if (ast::isComparison(op) && (!lhs || !rhs))
      return kEither;
    if (!lhs || !rhs)
      return std::nullopt;
    Values result;
    for (int64_t a : *lhs)
      for (int64_t b : *rhs) {
        std::optional<int64_t> v = apply(op, a, b);
        if (!v)
          return std::nullopt;
        result.insert(*v);
      }
    return bounded(result);
  }

  static std::optional<int64_t> apply(BinaryOp op, int64_t a, int64_t b) {
    int64_t v = 0;
    switch (op) {
    case BinaryOp::Add: v = a + b; break;
    case BinaryOp::Sub: v = a - b; break;
    case BinaryOp::Mul: v = a * b; break;
    case BinaryOp::Div:
    case BinaryOp::Rem:
      if (b == 0)
        return std::nullopt;
      v = op == BinaryOp::Div ? tkc::div(a, b) : tkc::rem(a, b);
      break;
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    default: return std::nullopt;
    }
    // Operands fit in 32 bits, so 64-bit arithmetic cannot overflow.
    return fitsInt32(v) ? std::optional<int64_t>(v) : std::nullopt;
  }

  std::optional<Values> call(const Expr &expr) {
    if (expr.name == "where" && expr.operands.size() == 3) {
      Values holds = *condition(expr.operand(0));
      Values result;
      for (int64_t side : holds) {
        std::optional<Values> v = values(expr.operand(side ? 1 : 2));
        if (!v)
          return std::nullopt;
        result.insert(v->begin(), v->end());
      }
      return bounded(result);
    }
    if ((expr.name == "cdiv" || expr.name == "min" || expr.name == "max") && expr.operands.size() == 2) {
      std::optional<Values> lhs = values(expr.operand(0)), rhs = values(expr.operand(1));
      if (!lhs || !rhs)
        return std::nullopt;
      Values result;
      for (int64_t a : *lhs)
        for (int64_t b : *rhs) {
          if (expr.name == "cdiv" && b == 0)
            return std::nullopt;
          result.insert(expr.name == "min" ? tkc::min(a, b) : expr.name == "max" ? tkc::max(a, b) : tkc::cdiv(a, b));
        }
      return bounded(result);
    }
    return std::nullopt;
  }

  static std::optional<Values> bounded(Values v) {
    for (int64_t x : v)
      if (!fitsInt32(x))
        return std::nullopt;
    return v.size() <= kMaxChoices ? std::optional<Values>(std::move(v)) : std::nullopt;
  }

  const std::map<std::string, int64_t> &known_;
};

} // namespace

std::optional<std::set<int64_t>> possibleValues(const ast::Expr &expr, const std::map<std::string, int64_t> &known) {
  return ChoiceEvaluator(known).values(expr);
}

} // namespace tkc::sema
