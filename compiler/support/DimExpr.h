#pragma once
// A tensor parameter's derived dimension (`D / 2`, `cdiv(M, 64)`): integer
// literals and names combined with `+ - * / %` and `cdiv`. The frontend
// builds one from source tokens; the IR, the launcher, the interpreter and
// the loaders (python/tkc/torch.py) carry it as the text printDimExpr gives,
// which parseDimExpr reads back.
#include "support/SourceLocation.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tkc {

struct DimExpr {
  enum class Kind { Int, Symbol, Add, Sub, Mul, Div, Rem, CDiv };
  Kind kind = Kind::Int;
  int64_t value = 0;          ///< Int
  std::string symbol;         ///< Symbol
  std::vector<DimExpr> operands; ///< the two operands of the others
  SourceLocation loc;         ///< the literal, name, operator or `cdiv`

  static DimExpr integer(int64_t value, SourceLocation loc = {});
  static DimExpr name(std::string symbol, SourceLocation loc = {});
  static DimExpr binary(Kind kind, DimExpr lhs, DimExpr rhs, SourceLocation loc = {});
  bool isBinary() const { return kind != Kind::Int && kind != Kind::Symbol; }
};

/// The operator's spelling: `+`, ..., `cdiv`.
const char *dimOperatorName(DimExpr::Kind kind);

/// The canonical text: `cdiv(M, 64)`, `D / 2`, `(N - 1) * 2`, with the
/// parentheses precedence needs and no others.
std::string printDimExpr(const DimExpr &expr);

/// Reads printDimExpr's text (spaces optional); nothing, with `error` set,
/// for anything else.
std::optional<DimExpr> parseDimExpr(std::string_view text, std::string *error = nullptr);

/// The number of levels of the tree: 1 for a literal or a name. Code that
/// walks a tree recursively relies on it being bounded: parseDimExpr and the
/// frontend's parser refuse a taller one, and parentheses nested deeper than
/// kMaxDimNesting.
uint32_t dimExprHeight(const DimExpr &expr);
constexpr uint32_t kMaxDimExprHeight = 1024;
constexpr int kMaxDimNesting = 256;

/// The names the expression uses, each once, in order of appearance.
std::vector<std::string> dimSymbols(const DimExpr &expr);

/// The value with the language's integer semantics (`/` and `%` truncate,
/// `cdiv` rounds up), names looked up by `lookup`. Nothing where a name has
/// no value; nothing with `error` set where it divides by zero or leaves
/// 64 bits.
std::optional<int64_t> evaluateDimExpr(const DimExpr &expr,
                                       const std::function<std::optional<int64_t>(const std::string &)> &lookup,
                                       std::string *error = nullptr);

} // namespace tkc
