#include "codegen/Expressions.h"

#include <fmt/format.h>

#include <cmath>

namespace tkc::codegen {

using namespace ir;

std::optional<std::string> operatorExpression(OpKind kind, const std::vector<std::string> &a, bool floatMath,
                                              MathPrecision precision) {
  bool fast = precision == MathPrecision::Fast;
  auto arg = [&](size_t i) { return i < a.size() ? a[i] : std::string("0"); };
  switch (kind) {
  case OpKind::Add: return fmt::format("{} + {}", arg(0), arg(1));
  case OpKind::Sub: return fmt::format("{} - {}", arg(0), arg(1));
  case OpKind::Mul: return fmt::format("{} * {}", arg(0), arg(1));
  case OpKind::Div:
    return fast && floatMath ? fmt::format("__fdividef({}, {})", arg(0), arg(1)) : fmt::format("{} / {}", arg(0), arg(1));
  case OpKind::Rem: return floatMath ? fmt::format("fmodf({}, {})", arg(0), arg(1)) : fmt::format("{} % {}", arg(0), arg(1));
  case OpKind::Max: return fmt::format("{}({}, {})", floatMath ? "fmaxf" : "max", arg(0), arg(1));
  case OpKind::Min: return fmt::format("{}({}, {})", floatMath ? "fminf" : "min", arg(0), arg(1));
  case OpKind::CDiv: return fmt::format("({} + {} - 1) / {}", arg(0), arg(1), arg(1));
  case OpKind::Lt: return fmt::format("{} < {}", arg(0), arg(1));
  case OpKind::Le: return fmt::format("{} <= {}", arg(0), arg(1));
  case OpKind::Gt: return fmt::format("{} > {}", arg(0), arg(1));
  case OpKind::Ge: return fmt::format("{} >= {}", arg(0), arg(1));
  case OpKind::Eq: return fmt::format("{} == {}", arg(0), arg(1));
  case OpKind::Ne: return fmt::format("{} != {}", arg(0), arg(1));
  case OpKind::And: return fmt::format("{} && {}", arg(0), arg(1));
  case OpKind::Or: return fmt::format("{} || {}", arg(0), arg(1));
  case OpKind::Select: return fmt::format("{} ? {} : {}", arg(0), arg(1), arg(2));
  case OpKind::Neg: return fmt::format("-{}", arg(0));
  case OpKind::Exp: return fmt::format("{}({})", fast ? "__expf" : "expf", arg(0));
  case OpKind::Exp2: return fmt::format("{}({})", fast ? "tkc::exp2_approx" : "exp2f", arg(0));
  case OpKind::Log: return fmt::format("{}({})", fast ? "__logf" : "logf", arg(0));
  case OpKind::Log2: return fmt::format("{}({})", fast ? "__log2f" : "log2f", arg(0));
  case OpKind::Sqrt: return fmt::format("sqrtf({})", arg(0));
  case OpKind::Rsqrt: return fmt::format("rsqrtf({})", arg(0));
  case OpKind::Abs: return fmt::format("{}({})", floatMath ? "fabsf" : "abs", arg(0));
  case OpKind::Tanh: return fmt::format("tanhf({})", arg(0));
  default: return std::nullopt;
  }
}

std::string conjunction(const std::vector<std::string> &terms) {
  std::string text;
  for (const std::string &term : terms)
    if (term != "true" && !term.empty())
      text += (text.empty() ? "" : " && ") + term;
  return text.empty() ? "true" : text;
}

std::string floatLiteral(double value) {
  if (std::isinf(value))
    return value > 0 ? "INFINITY" : "-INFINITY";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text + "f";
}

} // namespace tkc::codegen
