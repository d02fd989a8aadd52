#include "support/DimExpr.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace tkc {

DimExpr DimExpr::integer(int64_t value, SourceLocation loc) {
  DimExpr e;
  e.kind = Kind::Int;
  e.value = value;
  e.loc = loc;
  return e;
}

DimExpr DimExpr::name(std::string symbol, SourceLocation loc) {
  DimExpr e;
  e.kind = Kind::Symbol;
  e.symbol = std::move(symbol);
  e.loc = loc;
  return e;
}

DimExpr DimExpr::binary(Kind kind, DimExpr lhs, DimExpr rhs, SourceLocation loc) {
  DimExpr e;
  e.kind = kind;
  e.loc = loc;
  e.operands.push_back(std::move(lhs));
  e.operands.push_back(std::move(rhs));
  return e;
}

const char *dimOperatorName(DimExpr::Kind kind) {
  switch (kind) {
  case DimExpr::Kind::Add: return "+";
  case DimExpr::Kind::Sub: return "-";
  case DimExpr::Kind::Mul: return "*";
  case DimExpr::Kind::Div: return "/";
  case DimExpr::Kind::Rem: return "%";
  case DimExpr::Kind::CDiv: return "cdiv";
  default: return "";
  }
}

namespace {

/// 1 for `+ -`, 2 for `* / %`, 3 for what needs no parentheses.
int precedence(const DimExpr &e) {
  switch (e.kind) {
  case DimExpr::Kind::Add:
  case DimExpr::Kind::Sub: return 1;
  case DimExpr::Kind::Mul:
  case DimExpr::Kind::Div:
  case DimExpr::Kind::Rem: return 2;
  default: return 3;
  }
}

std::string operand(const DimExpr &e, int minimum) {
  std::string text = printDimExpr(e);
  return precedence(e) < minimum ? "(" + text + ")" : text;
}

/// A recursive-descent reader of printDimExpr's grammar.
class TextReader {
public:
  explicit TextReader(std::string_view text) : text_(text) {}

  std::optional<DimExpr> read(std::string *error) {
    std::optional<DimExpr> e = sum();
    skipSpace();
    if (e && pos_ != text_.size())
      fail("unexpected `" + std::string(1, text_[pos_]) + "`");
    if (!error_.empty()) {
      if (error)
        *error = error_ + " in dimension `" + std::string(text_) + "`";
      return std::nullopt;
    }
    return e;
  }

private:
  void skipSpace() {
    while (pos_ < text_.size() && text_[pos_] == ' ')
      ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::nullopt_t fail(std::string message) {
    if (error_.empty())
      error_ = std::move(message);
    return std::nullopt;
  }

  std::optional<DimExpr> sum() {
    std::optional<DimExpr> lhs = product();
    while (lhs) {
      DimExpr::Kind kind;
      if (accept('+'))
        kind = DimExpr::Kind::Add;
      else if (accept('-'))
        kind = DimExpr::Kind::Sub;
      else
        break;
      std::optional<DimExpr> rhs = product();
      if (!rhs)
        return std::nullopt;
      lhs = bounded(DimExpr::binary(kind, std::move(*lhs), std::move(*rhs)));
    }
    return lhs;
  }

  std::optional<DimExpr> product() {
    std::optional<DimExpr> lhs = atom();
    while (lhs) {
      DimExpr::Kind kind;
      if (accept('*'))
        kind = DimExpr::Kind::Mul;
      else if (accept('/'))
        kind = DimExpr::Kind::Div;
      else if (accept('%'))
        kind = DimExpr::Kind::Rem;
      else
        break;
      std::optional<DimExpr> rhs = atom();
      if (!rhs)
        return std::nullopt;
      lhs = bounded(DimExpr::binary(kind, std::move(*lhs), std::move(*rhs)));
    }
    return lhs;
  }

  /// Trees are walked recursively (printing, evaluating) and the reader
  /// itself recurses at each parenthesis: both are held to a bound.
  std::optional<DimExpr> bounded(DimExpr e) {
    if (dimExprHeight(e) > kMaxDimExprHeight)
      return fail("more than " + std::to_string(kMaxDimExprHeight) + " operations deep");
    return e;
  }
  bool enter() {
    if (++depth_ <= kMaxDimNesting)
      return true;
    fail("parentheses nested more than " + std::to_string(kMaxDimNesting) + " deep");
    return false;
  }

  std::optional<DimExpr> atom() {
    skipSpace();
    if (accept('(')) {
      if (!enter())
        return std::nullopt;
      std::optional<DimExpr> inner = sum();
      --depth_;
      if (inner && !accept(')'))
        return fail("expected `)`");
      return inner;
    }
    size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int digit = text_[pos_++] - '0';
        if (value > (std::numeric_limits<int32_t>::max() - digit) / 10)
          return fail("a literal above 2147483647");
        value = value * 10 + digit;
      }
      return DimExpr::integer(value);
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    if (pos_ == start)
      return fail(pos_ < text_.size() ? "unexpected `" + std::string(1, text_[pos_]) + "`" : "missing operand");
    std::string word(text_.substr(start, pos_ - start));
    if (word != "cdiv" || !accept('('))
      return DimExpr::name(word);
    if (!enter())
      return std::nullopt;
    std::optional<DimExpr> a = sum();
    if (!a)
      return std::nullopt;
    if (!accept(','))
      return fail("expected `,` in `cdiv`");
    std::optional<DimExpr> b = sum();
    if (!b)
      return std::nullopt;
    --depth_;
    if (!accept(')'))
      return fail("expected `)`");
    return bounded(DimExpr::binary(DimExpr::Kind::CDiv, std::move(*a), std::move(*b)));
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

void collectSymbols(const DimExpr &e, std::vector<std::string> &out) {
  if (e.kind == DimExpr::Kind::Symbol) {
    for (const std::string &s : out)
      if (s == e.symbol)
        return;
    out.push_back(e.symbol);
  }
  for (const DimExpr &o : e.operands)
    collectSymbols(o, out);
}

} // namespace

std::string printDimExpr(const DimExpr &e) {
  switch (e.kind) {
  case DimExpr::Kind::Int: return std::to_string(e.value);
  case DimExpr::Kind::Symbol: return e.symbol;
  case DimExpr::Kind::CDiv: return "cdiv(" + printDimExpr(e.operands[0]) + ", " + printDimExpr(e.operands[1]) + ")";
  default: {
    // Left-associative: the right operand of the same precedence needs
    // parentheses (`a - (b - c)`), the left one does not.
    int p = precedence(e);
    return operand(e.operands[0], p) + " " + dimOperatorName(e.kind) + " " + operand(e.operands[1], p + 1);
  }
  }
}

std::optional<DimExpr> parseDimExpr(std::string_view text, std::string *error) {
  return TextReader(text).read(error);
}

uint32_t dimExprHeight(const DimExpr &expr) {
  uint32_t below = 0;
  for (const DimExpr &operand : expr.operands)
    below = std::max(below, dimExprHeight(operand));
  return below + 1;
}

std::vector<std::string> dimSymbols(const DimExpr &expr) {
  std::vector<std::string> out;
  collectSymbols(expr, out);
  return out;
}

std::optional<int64_t> evaluateDimExpr(const DimExpr &e,
                                       const std::function<std::optional<int64_t>(const std::string &)> &lookup,
                                       std::string *error) {
  if (e.kind == DimExpr::Kind::Int)
    return e.value;
  if (e.kind == DimExpr::Kind::Symbol)
    return lookup(e.symbol);
  std::optional<int64_t> a = evaluateDimExpr(e.operands[0], lookup, error);
  if (!a)
    return std::nullopt;
  std::optional<int64_t> b = evaluateDimExpr(e.operands[1], lookup, error);
  if (!b)
    return std::nullopt;
  auto fail = [&](const std::string &message) -> std::optional<int64_t> {
    if (error)
      *error = message;
    return std::nullopt;
  };
  int64_t result = 0;
  switch (e.kind) {
  case DimExpr::Kind::Add:
    if (__builtin_add_overflow(*a, *b, &result))
      return fail("overflows");
    return result;
  case DimExpr::Kind::Sub:
    if (__builtin_sub_overflow(*a, *b, &result))
      return fail("overflows");
    return result;
  case DimExpr::Kind::Mul:
    if (__builtin_mul_overflow(*a, *b, &result))
      return fail("overflows");
    return result;
  default: break;
  }
  if (*b == 0)
    return fail("divides by zero");
  if (*b == -1 && *a == std::numeric_limits<int64_t>::min())
    return fail("overflows");
  int64_t quotient = *a / *b, remainder = *a % *b;
  if (e.kind == DimExpr::Kind::Div)
    return quotient;
  if (e.kind == DimExpr::Kind::Rem)
    return remainder;
  return quotient + (remainder != 0 && ((*a < 0) == (*b < 0)) ? 1 : 0);
}

} // namespace tkc
