#pragma once
#include "ir/IR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tkc::codegen {

/// C++ expression precedence, loosest first. Composition parenthesises an
/// operand whose precedence is looser than its place needs, so printed code
/// always means what it was built to mean.
enum class Precedence : uint8_t {
  Lowest,         ///< unknown: parenthesised wherever it is an operand
  Conditional,    ///< `c ? a : b` (and assignment)
  LogicalOr,
  LogicalAnd,
  BitOr,
  BitXor,
  BitAnd,
  Equality,
  Relational,
  Shift,
  Additive,
  Multiplicative,
  Unary,          ///< `-x`, `!x`, a negative literal
  Postfix,        ///< names, literals, calls, subscripts, `(e)`
};

/// A printed C++ expression and its precedence.
class CExpr {
public:
  /// Code whose structure is not known: a name or literal, a call, or an
  /// expression of operands joined by space-separated binary operators
  /// (`a + b * c`, as this printer writes them) gets its precedence from
  /// its text; anything else is taken as Lowest, so it is never wrongly
  /// left bare.
  static CExpr text(std::string code);
  static CExpr withPrecedence(std::string code, Precedence precedence) { return CExpr(std::move(code), precedence); }
  /// An integer literal (the most negative i32 as `-2147483647 - 1`, whose
  /// type stays int); `suffix` is appended to it (`LL`).
  static CExpr integer(int64_t value, const char *suffix = "");
  /// A float as a C++ f32 literal (`2.0f`, `INFINITY`, `NAN`): never an
  /// integer literal, which would construct 16-bit types through their
  /// integer conversion, one the compiler does not fold.
  static CExpr floating(double value);

  const std::string &str() const { return code_; }
  Precedence precedence() const { return precedence_; }
  /// The code as an operand that needs `needed` or tighter: parenthesised
  /// when it is looser.
  std::string operand(Precedence needed) const;

private:
  CExpr(std::string code, Precedence precedence) : code_(std::move(code)), precedence_(precedence) {}
  std::string code_;
  Precedence precedence_;
};

/// Binary operators of C++ (left-associative).
enum class BinaryOperator { Mul, Div, Rem, Add, Sub, Shl, Shr, Lt, Le, Gt, Ge, Eq, Ne, BitAnd, BitXor, BitOr, And, Or };

CExpr binary(BinaryOperator op, const CExpr &lhs, const CExpr &rhs);
/// `-x`, `!x`, `~x` (`-(-x)`, never `--x`).
CExpr unary(char op, const CExpr &operand);
CExpr conditional(const CExpr &condition, const CExpr &ifTrue, const CExpr &ifFalse);
/// `callee(args...)`: also functional casts (`float(x)`) and templates.
CExpr call(const std::string &callee, const std::vector<CExpr> &args);
/// `base[index]`.
CExpr subscript(const CExpr &base, const CExpr &index);

inline CExpr operator+(const CExpr &a, const CExpr &b) { return binary(BinaryOperator::Add, a, b); }
inline CExpr operator-(const CExpr &a, const CExpr &b) { return binary(BinaryOperator::Sub, a, b); }
inline CExpr operator*(const CExpr &a, const CExpr &b) { return binary(BinaryOperator::Mul, a, b); }

/// How the scalar and elementwise ops of the IR are spelled: in kernels
/// (float math functions of CUDA, approximate ones with Fast) or in the
/// host launcher (the C++ standard library's), on operands of float or
/// integer type.
enum class MathPrecision { Accurate, Fast };
struct OperatorSpelling {
  bool floatMath = false;
  MathPrecision precision = MathPrecision::Accurate;
  bool host = false;
};

/// The C++ expression of an arithmetic, comparison, logical or unary op on
/// printed operands, or nothing for ops that are not such maps. Integer
/// division, remainder, cdiv, min, max and abs call tkc_int.h, their one
/// definition.
std::optional<CExpr> operatorExpression(ir::OpKind kind, const std::vector<CExpr> &args,
                                        const OperatorSpelling &spelling);

/// The terms joined by `&&`, leaving out those that are `true` or empty
/// (`true` when none is left).
CExpr conjunction(const std::vector<CExpr> &terms);
std::string conjunction(const std::vector<std::string> &terms);

/// floatLiteral(v) is CExpr::floating(v)'s code.
std::string floatLiteral(double value);

} // namespace tkc::codegen
