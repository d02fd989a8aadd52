#include "codegen/Expressions.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tkc::codegen {

using namespace ir;

namespace {

struct BinarySpelling {
  const char *token;
  Precedence precedence;
};

BinarySpelling spellingOf(BinaryOperator op) {
  switch (op) {
  case BinaryOperator::Mul: return {"*", Precedence::Multiplicative};
  case BinaryOperator::Div: return {"/", Precedence::Multiplicative};
  case BinaryOperator::Rem: return {"%", Precedence::Multiplicative};
  case BinaryOperator::Add: return {"+", Precedence::Additive};
  case BinaryOperator::Sub: return {"-", Precedence::Additive};
  case BinaryOperator::Shl: return {"<<", Precedence::Shift};
  case BinaryOperator::Shr: return {">>", Precedence::Shift};
  case BinaryOperator::Lt: return {"<", Precedence::Relational};
  case BinaryOperator::Le: return {"<=", Precedence::Relational};
  case BinaryOperator::Gt: return {">", Precedence::Relational};
  case BinaryOperator::Ge: return {">=", Precedence::Relational};
  case BinaryOperator::Eq: return {"==", Precedence::Equality};
  case BinaryOperator::Ne: return {"!=", Precedence::Equality};
  case BinaryOperator::BitAnd: return {"&", Precedence::BitAnd};
  case BinaryOperator::BitXor: return {"^", Precedence::BitXor};
  case BinaryOperator::BitOr: return {"|", Precedence::BitOr};
  case BinaryOperator::And: return {"&&", Precedence::LogicalAnd};
  case BinaryOperator::Or: return {"||", Precedence::LogicalOr};
  }
  return {"?", Precedence::Lowest};
}

Precedence next(Precedence p) { return static_cast<Precedence>(static_cast<int>(p) + 1); }

/// The precedence of a binary (or conditional) operator token, if it is one.
std::optional<Precedence> operatorToken(std::string_view token) {
  if (token == "?" || token == ":")
    return Precedence::Conditional;
  for (int op = 0; op <= static_cast<int>(BinaryOperator::Or); ++op) {
    BinarySpelling spelling = spellingOf(static_cast<BinaryOperator>(op));
    if (token == spelling.token)
      return spelling.precedence;
  }
  return std::nullopt;
}

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Splits `code` at the spaces outside brackets; nothing when a bracket is
/// unbalanced or the code holds something this reader does not know.
std::optional<std::vector<std::string_view>> topLevelTokens(std::string_view code) {
  std::vector<std::string_view> tokens;
  std::string closers;
  size_t start = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    char c = code[i];
    if (c == '"' || c == '\'' || c == ';' || c == '{' || c == '}' || (c == ',' && closers.empty()))
      return std::nullopt;
    // Template arguments open right after a name; comparisons are spaced.
    bool templateOpen = c == '<' && i > 0 && (isWordChar(code[i - 1]) || code[i - 1] == ':');
    bool templateClose = c == '>' && !closers.empty() && closers.back() == '>' && code[i - 1] != ' ';
    if (c == '(' || c == '[' || templateOpen) {
      closers.push_back(c == '(' ? ')' : c == '[' ? ']' : '>');
    } else if (c == ')' || c == ']' || templateClose) {
      if (closers.empty() || closers.back() != c)
        return std::nullopt;
      closers.pop_back();
    } else if (c == ' ' && closers.empty()) {
      if (i == start)
        return std::nullopt;
      tokens.push_back(code.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!closers.empty() || start >= code.size())
    return std::nullopt;
  tokens.push_back(code.substr(start));
  return tokens;
}

/// The precedence of one operand token: a name or literal followed by
/// calls, subscripts, member accesses and template arguments is Postfix;
/// one of those after prefix `-`, `!` or `~` is Unary.
std::optional<Precedence> operandToken(std::string_view token) {
  Precedence precedence = Precedence::Postfix;
  size_t i = 0;
  while (i < token.size() && (token[i] == '-' || token[i] == '!' || token[i] == '~')) {
    precedence = Precedence::Unary;
    ++i;
  }
  size_t headStart = i;
  bool number = i < token.size() && (std::isdigit(static_cast<unsigned char>(token[i])) || token[i] == '.');
  while (i < token.size()) {
    char c = token[i];
    if (isWordChar(c) || c == '.' || c == ':')
      ++i;
    else if (number && (c == '+' || c == '-') && (token[i - 1] == 'e' || token[i - 1] == 'E'))
      ++i; // an exponent's sign
    else if (c == '-' && i + 1 < token.size() && token[i + 1] == '>' && i > headStart)
      i += 2;
    else
      break;
  }
  if (i == headStart && (i == token.size() || token[i] != '('))
    return std::nullopt; // `(e)` followed by calls or subscripts is Postfix too
  // What follows the head: bracketed groups (balanced: topLevelTokens checked).
  while (i < token.size()) {
    char open = token[i];
    if (open != '(' && open != '[' && open != '<')
      return std::nullopt;
    char close = open == '(' ? ')' : open == '[' ? ']' : '>';
    int depth = 0;
    size_t j = i;
    for (; j < token.size(); ++j) {
      if (token[j] == open)
        ++depth;
      else if (token[j] == close && --depth == 0)
        break;
    }
    if (j == token.size())
      return std::nullopt;
    i = j + 1;
    // `.b`, `->b` after a group.
    bool member = i < token.size() && (token[i] == '.' || token.substr(i, 2) == "->");
    if (member) {
      i += token[i] == '.' ? 1 : 2;
      size_t nameStart = i;
      while (i < token.size() && isWordChar(token[i]))
        ++i;
      if (i == nameStart)
        return std::nullopt;
    }
  }
  return precedence;
}

Precedence inferPrecedence(std::string_view code) {
  auto tokens = topLevelTokens(code);
  if (!tokens || tokens->size() % 2 == 0)
    return Precedence::Lowest;
  Precedence loosest = Precedence::Postfix;
  for (size_t i = 0; i < tokens->size(); ++i) {
    std::optional<Precedence> p = i % 2 == 0 ? operandToken((*tokens)[i]) : operatorToken((*tokens)[i]);
    if (!p)
      return Precedence::Lowest;
    loosest = std::min(loosest, *p);
  }
  return loosest;
}

} // namespace

CExpr CExpr::text(std::string code) {
  Precedence precedence = inferPrecedence(code);
  return CExpr(std::move(code), precedence);
}

CExpr CExpr::integer(int64_t value, const char *suffix) {
  if (value == std::numeric_limits<int32_t>::min() && *suffix == 0)
    return CExpr("-2147483647 - 1", Precedence::Additive);
  return CExpr(std::to_string(value) + suffix, value < 0 ? Precedence::Unary : Precedence::Postfix);
}

CExpr CExpr::floating(double value) {
  if (std::isnan(value))
    return CExpr("NAN", Precedence::Postfix);
  if (std::isinf(value))
    return value > 0 ? CExpr("INFINITY", Precedence::Postfix) : CExpr("-INFINITY", Precedence::Unary);
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return CExpr(text + "f", std::signbit(value) ? Precedence::Unary : Precedence::Postfix);
}

std::string CExpr::operand(Precedence needed) const {
  return precedence_ < needed ? "(" + code_ + ")" : code_;
}

CExpr binary(BinaryOperator op, const CExpr &lhs, const CExpr &rhs) {
  BinarySpelling spelling = spellingOf(op);
  // Left-associative: a right operand of the same precedence needs
  // parentheses, except under `&&` and `||`, whose grouping never matters.
  bool associative = op == BinaryOperator::And || op == BinaryOperator::Or;
  Precedence right = associative ? spelling.precedence : next(spelling.precedence);
  return CExpr::withPrecedence(
      fmt::format("{} {} {}", lhs.operand(spelling.precedence), spelling.token, rhs.operand(right)),
      spelling.precedence);
}

CExpr unary(char op, const CExpr &operand) {
  std::string inner = operand.operand(Precedence::Unary);
  // `- -x` would print as `--x`, a decrement.
  if (!inner.empty() && (inner[0] == '-' || inner[0] == '+' || inner[0] == op))
    inner = "(" + inner + ")";
  return CExpr::withPrecedence(std::string(1, op) + inner, Precedence::Unary);
}

CExpr conditional(const CExpr &condition, const CExpr &ifTrue, const CExpr &ifFalse) {
  return CExpr::withPrecedence(fmt::format("{} ? {} : {}", condition.operand(Precedence::LogicalOr),
                                           ifTrue.operand(Precedence::Conditional),
                                           ifFalse.operand(Precedence::Conditional)),
                               Precedence::Conditional);
}

CExpr call(const std::string &callee, const std::vector<CExpr> &args) {
  std::string text = callee + "(";
  for (size_t i = 0; i < args.size(); ++i)
    text += (i ? ", " : "") + args[i].operand(Precedence::Conditional);
  return CExpr::withPrecedence(text + ")", Precedence::Postfix);
}

CExpr subscript(const CExpr &base, const CExpr &index) {
  return CExpr::withPrecedence(fmt::format("{}[{}]", base.operand(Precedence::Postfix), index.str()),
                               Precedence::Postfix);
}

namespace {
/// Whether a divisor is a positive integer literal, by which C++'s `/` and
/// `%` are tkc::div and tkc::rem.
bool byPositiveLiteral(const CExpr &divisor) {
  const std::string &text = divisor.str();
  size_t digits = text.find_first_not_of("0123456789");
  std::string_view suffix = digits == std::string::npos ? "" : std::string_view(text).substr(digits);
  return digits != 0 && (suffix.empty() || suffix == "LL") && text.find_first_not_of('0') != digits;
}
} // namespace

std::optional<CExpr> operatorExpression(OpKind kind, const std::vector<CExpr> &a, const OperatorSpelling &spelling) {
  bool fast = spelling.precision == MathPrecision::Fast && !spelling.host;
  bool host = spelling.host, floatMath = spelling.floatMath;
  bool unaryOp = kind == OpKind::Neg || kind == OpKind::Exp || kind == OpKind::Exp2 || kind == OpKind::Log ||
                 kind == OpKind::Log2 || kind == OpKind::Sqrt || kind == OpKind::Rsqrt || kind == OpKind::Abs ||
                 kind == OpKind::Tanh || kind == OpKind::Erf || kind == OpKind::Sigmoid || kind == OpKind::Silu;
  size_t arity = kind == OpKind::Select ? 3 : unaryOp ? 1 : 2;
  if (a.size() != arity)
    return std::nullopt;
  auto math = [&](const char *hostName, const char *deviceName, const char *fastName = nullptr) {
    return call(host ? hostName : fast && fastName ? fastName : deviceName, a);
  };
  switch (kind) {
  case OpKind::Add: return a[0] + a[1];
  case OpKind::Sub: return a[0] - a[1];
  case OpKind::Mul: return a[0] * a[1];
  case OpKind::Div:
    if (!floatMath)
      return byPositiveLiteral(a[1]) ? binary(BinaryOperator::Div, a[0], a[1]) : call("tkc::div", a);
    return fast ? call("__fdividef", a) : binary(BinaryOperator::Div, a[0], a[1]);
  case OpKind::Rem:
    if (floatMath)
      return math("std::fmod", "fmodf");
    return byPositiveLiteral(a[1]) ? binary(BinaryOperator::Rem, a[0], a[1]) : call("tkc::rem", a);
  case OpKind::Max: return floatMath ? math("std::fmax", "fmaxf") : call("tkc::max", a);
  case OpKind::Min: return floatMath ? math("std::fmin", "fminf") : call("tkc::min", a);
  case OpKind::CDiv: return call("tkc::cdiv", a);
  case OpKind::Lt: return binary(BinaryOperator::Lt, a[0], a[1]);
  case OpKind::Le: return binary(BinaryOperator::Le, a[0], a[1]);
  case OpKind::Gt: return binary(BinaryOperator::Gt, a[0], a[1]);
  case OpKind::Ge: return binary(BinaryOperator::Ge, a[0], a[1]);
  case OpKind::Eq: return binary(BinaryOperator::Eq, a[0], a[1]);
  case OpKind::Ne: return binary(BinaryOperator::Ne, a[0], a[1]);
  case OpKind::And: return binary(BinaryOperator::And, a[0], a[1]);
  case OpKind::Or: return binary(BinaryOperator::Or, a[0], a[1]);
  case OpKind::Select: return conditional(a[0], a[1], a[2]);
  case OpKind::Neg: return unary('-', a[0]);
  case OpKind::Exp: return math("std::exp", "expf", "__expf");
  case OpKind::Exp2: return math("std::exp2", "exp2f", "tkc::exp2_approx");
  case OpKind::Log: return math("std::log", "logf", "__logf");
  case OpKind::Log2: return math("std::log2", "log2f", "__log2f");
  case OpKind::Sqrt: return math("std::sqrt", "sqrtf");
  case OpKind::Rsqrt:
    return host ? binary(BinaryOperator::Div, CExpr::floating(1.0), call("std::sqrt", a)) : call("rsqrtf", a);
  case OpKind::Abs: return floatMath ? math("std::fabs", "fabsf") : call("tkc::abs", a);
  case OpKind::Tanh: return math("std::tanh", "tanhf");
  case OpKind::Erf: return math("std::erf", "erff");
  case OpKind::Sigmoid: case OpKind::Silu: {
    // x / (1 + e^-x), with x = 1 for the sigmoid; the fast form is exp's
    // and the division's, which give 0 (the limit) once e^-x passes 2^126.
    CExpr numerator = kind == OpKind::Silu ? a[0] : CExpr::floating(1.0);
    CExpr expNeg = call(host ? "std::exp" : fast ? "__expf" : "expf", {unary('-', a[0])});
    CExpr denominator = CExpr::floating(1.0) + expNeg;
    if (fast)
      return call("__fdividef", {numerator, denominator});
    return binary(BinaryOperator::Div, numerator, denominator);
  }
  default: return std::nullopt;
  }
}

CExpr conjunction(const std::vector<CExpr> &terms) {
  std::optional<CExpr> all;
  for (const CExpr &term : terms)
    if (term.str() != "true" && !term.str().empty())
      all = all ? binary(BinaryOperator::And, *all, term) : term;
  return all ? *all : CExpr::text("true");
}

std::string conjunction(const std::vector<std::string> &terms) {
  std::vector<CExpr> exprs;
  for (const std::string &term : terms)
    if (!term.empty())
      exprs.push_back(CExpr::text(term));
  return conjunction(exprs).str();
}

std::string floatLiteral(double value) { return CExpr::floating(value).str(); }

} // namespace tkc::codegen
