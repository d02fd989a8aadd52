// The expression printer: operands are parenthesised exactly where C++
// precedence would otherwise regroup them.

#include "codegen/Expressions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tkc::codegen;

namespace {

CExpr t(const char *code) { return CExpr::text(code); }

TEST(Expressions, ParenthesisesOperandsByPrecedence) {
  CExpr outside = binary(BinaryOperator::Ge, t("c * 128 + e"), t("bound"));
  CExpr masked = conditional(outside, t("0.0f"), t("v[x]"));
  EXPECT_EQ((t("acc") + masked).str(), "acc + (c * 128 + e >= bound ? 0.0f : v[x])");
  EXPECT_EQ((t("a") - (t("b") - t("c"))).str(), "a - (b - c)");
  EXPECT_EQ(((t("a") - t("b")) - t("c")).str(), "a - b - c");
  EXPECT_EQ(((t("a") + t("b")) * t("c")).str(), "(a + b) * c");
  EXPECT_EQ(binary(BinaryOperator::Div, t("a"), t("b * c")).str(), "a / (b * c)");
  EXPECT_EQ(binary(BinaryOperator::And, t("a && b"), t("c && d")).str(), "a && b && c && d");
  EXPECT_EQ(binary(BinaryOperator::And, t("a || b"), t("c")).str(), "(a || b) && c");
  EXPECT_EQ(conditional(t("p ? a : b"), t("x"), t("y")).str(), "(p ? a : b) ? x : y");
  EXPECT_EQ(subscript(t("p + 1"), t("i + 2")).str(), "(p + 1)[i + 2]");
}

TEST(Expressions, KeepsNamesLiteralsAndCallsBare) {
  EXPECT_EQ((t("tkc::max(a, b)") * t("x[i]")).str(), "tkc::max(a, b) * x[i]");
  EXPECT_EQ((t("static_cast<const float *>(p)") + t("1e-05f")).str(), "static_cast<const float *>(p) + 1e-05f");
  EXPECT_EQ(call("f", {t("a, b")}).str(), "f((a, b))");
  EXPECT_EQ(call("f", {t("a + b"), t("c ? d : e")}).str(), "f(a + b, c ? d : e)");
  EXPECT_EQ((t("blockIdx.x") * t("X->sizes[0]")).str(), "blockIdx.x * X->sizes[0]");
}

TEST(Expressions, ReadsThePrecedenceOfText) {
  EXPECT_EQ(t("a + b * c").precedence(), Precedence::Additive);
  EXPECT_EQ(t("-x").precedence(), Precedence::Unary);
  EXPECT_EQ(t("(a + b)[i]").precedence(), Precedence::Postfix);
  EXPECT_EQ(t("a < b && c").precedence(), Precedence::LogicalAnd);
  // Text the reader does not know is never left bare.
  EXPECT_EQ(t("a+b").precedence(), Precedence::Lowest);
  EXPECT_EQ(t("(long long)x").precedence(), Precedence::Lowest);
  EXPECT_EQ(t("a = b").precedence(), Precedence::Lowest);
  EXPECT_EQ(t("f(a").precedence(), Precedence::Lowest);
  EXPECT_EQ((t("a+b") * t("c")).str(), "(a+b) * c");
}

TEST(Expressions, NegationNeverDecrements) {
  EXPECT_EQ(unary('-', CExpr::integer(-5)).str(), "-(-5)");
  EXPECT_EQ(unary('-', unary('-', t("x"))).str(), "-(-x)");
  EXPECT_EQ(unary('-', t("a + b")).str(), "-(a + b)");
  EXPECT_EQ((t("a") - CExpr::integer(-5)).str(), "a - -5");
}

TEST(Expressions, Literals) {
  EXPECT_EQ(CExpr::integer(std::numeric_limits<int32_t>::min()).str(), "-2147483647 - 1");
  EXPECT_EQ((t("x") * CExpr::integer(std::numeric_limits<int32_t>::min())).str(), "x * (-2147483647 - 1)");
  EXPECT_EQ(CExpr::integer(128, "LL").str(), "128LL");
  EXPECT_EQ(CExpr::floating(2).str(), "2.0f");
  EXPECT_EQ(CExpr::floating(std::nan("")).str(), "NAN");
  EXPECT_EQ(CExpr::floating(-std::nan("")).str(), "NAN");
  EXPECT_EQ(CExpr::floating(-INFINITY).str(), "-INFINITY");
  EXPECT_EQ((t("x") - CExpr::floating(-INFINITY)).str(), "x - -INFINITY");
}

TEST(Expressions, HostAndKernelSpellings) {
  std::vector<CExpr> ab = {t("a"), t("b")};
  auto print = [&](tkc::ir::OpKind kind, OperatorSpelling spelling, std::vector<CExpr> args) {
    auto e = operatorExpression(kind, args, spelling);
    return e ? e->str() : std::string("<none>");
  };
  using tkc::ir::OpKind;
  OperatorSpelling kernelInt{false, MathPrecision::Accurate, false}, hostInt{false, MathPrecision::Accurate, true};
  OperatorSpelling fastFloat{true, MathPrecision::Fast, false}, hostFloat{true, MathPrecision::Accurate, true};
  EXPECT_EQ(print(OpKind::CDiv, kernelInt, ab), "tkc::cdiv(a, b)");
  EXPECT_EQ(print(OpKind::CDiv, hostInt, ab), "tkc::cdiv(a, b)");
  EXPECT_EQ(print(OpKind::Div, kernelInt, ab), "tkc::div(a, b)");
  EXPECT_EQ(print(OpKind::Div, kernelInt, {t("a"), CExpr::integer(64)}), "a / 64");
  EXPECT_EQ(print(OpKind::Rem, hostInt, {t("a"), CExpr::integer(64, "LL")}), "a % 64LL");
  EXPECT_EQ(print(OpKind::Rem, hostInt, {t("a"), CExpr::integer(0, "LL")}), "tkc::rem(a, 0LL)");
  EXPECT_EQ(print(OpKind::Max, hostInt, ab), "tkc::max(a, b)");
  EXPECT_EQ(print(OpKind::Neg, hostInt, {t("N")}), "-N");
  EXPECT_EQ(print(OpKind::Abs, kernelInt, {t("N")}), "tkc::abs(N)");
  EXPECT_EQ(print(OpKind::Div, fastFloat, ab), "__fdividef(a, b)");
  EXPECT_EQ(print(OpKind::Exp, fastFloat, {t("x")}), "__expf(x)");
  EXPECT_EQ(print(OpKind::Exp, hostFloat, {t("x")}), "std::exp(x)");
  EXPECT_EQ(print(OpKind::Rsqrt, hostFloat, {t("x")}), "1.0f / std::sqrt(x)");
  EXPECT_EQ(print(OpKind::Select, hostInt, {t("a < b"), t("a"), t("b")}), "a < b ? a : b");
  EXPECT_EQ(print(OpKind::Add, hostInt, {t("a")}), "<none>");
}

} // namespace
