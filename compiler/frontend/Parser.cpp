#include "frontend/Parser.h"
#include "support/Numeric.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace tkc {

namespace {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtKind;
using ast::StmtPtr;

bool isDTypeName(const std::string &name) {
  return name == "bf16" || name == "f16" || name == "f32" || name == "i32" || name == "f8e4m3" || name == "f8e5m2";
}

/// Recursive descent over the token vector. A parse function that meets a
/// syntax error reports it and returns null (or false); the statement loop
/// then skips to the next statement and carries on.
class Parser {
public:
  Parser(const std::vector<Token> &tokens, DiagnosticEngine &diags) : tokens_(tokens), diags_(diags) {}

  ast::File parseFile() {
    ast::File file;
    while (!at(TokenKind::Eof) && !stopped()) {
      if (!at(TokenKind::KwKernel)) {
        diags_.report(peek().loc, DiagId::ExpectedKernel, describeToken(peek()));
        skipToNextKernel();
        continue;
      }
      ast::Kernel kernel;
      if (parseKernel(kernel))
        file.kernels.push_back(std::move(kernel));
      else
        skipToNextKernel();
    }
    return file;
  }

private:
  // --- token access ---------------------------------------------------------

  const Token &peek(size_t ahead = 0) const {
    size_t index = pos_ + ahead;
    return index < tokens_.size() ? tokens_[index] : tokens_.back();
  }
  bool at(TokenKind kind) const { return peek().kind == kind; }
  const Token &advance() {
    const Token &token = peek();
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return token;
  }
  bool accept(TokenKind kind) {
    if (!at(kind))
      return false;
    advance();
    return true;
  }
  /// Consumes a token of `kind` or reports what was expected.
  bool expect(TokenKind kind, const std::string &what = "") {
    if (accept(kind))
      return true;
    reportExpected(what.empty() ? describeTokenKind(kind) : what);
    return false;
  }
  void reportExpected(const std::string &what) {
    diags_.report(peek().loc, DiagId::ExpectedToken, what, describeToken(peek()));
  }

  /// Parsing stops for good once nesting overflowed or too many errors were
  /// reported: nothing useful can follow.
  bool stopped() const { return tooDeep_ || diags_.limitReached(); }

  /// Counts one level of nesting for the lifetime of the guard.
  class NestingGuard {
  public:
    NestingGuard(Parser &parser, SourceLocation loc) : parser_(parser) {
      if (++parser_.depth_ > kMaxNestingDepth && !parser_.tooDeep_) {
        parser_.tooDeep_ = true;
        parser_.diags_.report(loc, DiagId::NestingTooDeep, kMaxNestingDepth);
      }
    }
    ~NestingGuard() { --parser_.depth_; }
    bool ok() const { return !parser_.tooDeep_; }

  private:
    Parser &parser_;
  };

  // --- recovery -------------------------------------------------------------

  static bool startsStatement(const Token &token) {
    return token.is(TokenKind::Identifier) || token.is(TokenKind::KwStore) || token.is(TokenKind::KwAtomicAdd) ||
           token.is(TokenKind::KwFor) || token.is(TokenKind::KwIf);
  }

  /// Skips the rest of a malformed statement: up to a `;` (consumed), a `}`
  /// that closes the enclosing block, or a statement that starts a later line.
  void skipToStatementBoundary(uint32_t errorLine) {
    int braces = 0;
    while (!at(TokenKind::Eof) && !at(TokenKind::KwKernel)) {
      const Token &token = peek();
      if (braces == 0) {
        if (token.is(TokenKind::Semicolon)) {
          advance();
          return;
        }
        if (token.is(TokenKind::RBrace))
          return;
        if (token.loc.line > errorLine && startsStatement(token))
          return;
      }
      if (token.is(TokenKind::LBrace))
        ++braces;
      else if (token.is(TokenKind::RBrace))
        --braces;
      advance();
    }
  }

  void skipToNextKernel() {
    while (!at(TokenKind::Eof)) {
      advance();
      if (at(TokenKind::KwKernel))
        return;
    }
  }

  /// Skips a balanced `( ... )` group if one starts here.
  void skipParenGroup() {
    if (!at(TokenKind::LParen))
      return;
    int depth = 0;
    while (!at(TokenKind::Eof)) {
      if (at(TokenKind::LParen))
        ++depth;
      else if (at(TokenKind::RParen) && --depth == 0) {
        advance();
        return;
      } else if (at(TokenKind::LBrace) || at(TokenKind::KwKernel))
        return;
      advance();
    }
  }

  // --- kernels --------------------------------------------------------------

  bool parseKernel(ast::Kernel &kernel) {
    advance(); // `kernel`
    kernel.loc = peek().loc;
    if (!at(TokenKind::Identifier)) {
      reportExpected("a kernel name");
      return false;
    }
    kernel.name = advance().text;
    if (!expect(TokenKind::LParen))
      return false;
    if (!at(TokenKind::RParen)) {
      do {
        ast::Param param;
        if (!parseParam(param))
          return false;
        kernel.params.push_back(std::move(param));
      } while (accept(TokenKind::Comma));
    }
    if (!expect(TokenKind::RParen, "`,` or `)`"))
      return false;
    if (!parseAnnotations(kernel))
      return false;
    if (!at(TokenKind::LBrace)) {
      reportExpected("a kernel annotation or `{`");
      return false;
    }
    parseBlock(kernel.body, kernel.bodyEnd);
    return !stopped();
  }

  bool parseParam(ast::Param &param) {
    param.loc = peek().loc;
    if (!at(TokenKind::Identifier)) {
      reportExpected("a parameter name");
      return false;
    }
    param.name = advance().text;
    if (!expect(TokenKind::Colon))
      return false;
    param.isOutput = accept(TokenKind::KwOut);
    param.dtypeLoc = peek().loc;
    if (!at(TokenKind::Identifier)) {
      diags_.report(peek().loc, DiagId::ExpectedType, describeToken(peek()));
      return false;
    }
    param.dtype = advance().text;
    if (!isDTypeName(param.dtype))
      diags_.report(param.dtypeLoc, DiagId::UnknownDType, param.dtype);
    if (!expect(TokenKind::LBracket))
      return false;
    do {
      ast::Dim dim;
      dim.loc = peek().loc;
      std::optional<DimExpr> expr = parseDimSum();
      if (!expr)
        return false;
      if (expr->kind == DimExpr::Kind::Symbol)
        dim.symbol = expr->symbol;
      else if (expr->kind == DimExpr::Kind::Int)
        dim.size = expr->value;
      else
        dim.expr = std::move(expr);
      param.dims.push_back(std::move(dim));
    } while (accept(TokenKind::Comma));
    return expect(TokenKind::RBracket, "`,` or `]`");
  }

  // A dim: `+ -` over `* / %` over names, integers, `cdiv(a, b)` and
  // parentheses (grammar/tk.ebnf `dim`).
  std::optional<DimExpr> parseDimSum() {
    std::optional<DimExpr> lhs = parseDimProduct();
    while (lhs && (at(TokenKind::Plus) || at(TokenKind::Minus))) {
      const Token &op = advance();
      std::optional<DimExpr> rhs = parseDimProduct();
      if (!rhs)
        return std::nullopt;
      lhs = boundedDim(DimExpr::binary(op.kind == TokenKind::Plus ? DimExpr::Kind::Add : DimExpr::Kind::Sub,
                                       std::move(*lhs), std::move(*rhs), op.loc));
    }
    return lhs;
  }

  /// A dim is as tall as its longest chain of operators, and the tree is
  /// walked recursively later (printing, checking, evaluating): reports and
  /// gives up on one taller than an expression may be.
  std::optional<DimExpr> boundedDim(DimExpr expr) {
    if (dimExprHeight(expr) <= kMaxDimExprHeight)
      return expr;
    if (!tooDeep_)
      diags_.report(expr.loc, DiagId::ExpressionTooDeep, kMaxDimExprHeight);
    tooDeep_ = true;
    return std::nullopt;
  }

  std::optional<DimExpr> parseDimProduct() {
    std::optional<DimExpr> lhs = parseDimAtom();
    while (lhs && (at(TokenKind::Star) || at(TokenKind::Slash) || at(TokenKind::Percent))) {
      const Token &op = advance();
      DimExpr::Kind kind = op.kind == TokenKind::Star    ? DimExpr::Kind::Mul
                           : op.kind == TokenKind::Slash ? DimExpr::Kind::Div
                                                         : DimExpr::Kind::Rem;
      std::optional<DimExpr> rhs = parseDimAtom();
      if (!rhs)
        return std::nullopt;
      lhs = boundedDim(DimExpr::binary(kind, std::move(*lhs), std::move(*rhs), op.loc));
    }
    return lhs;
  }

  std::optional<DimExpr> parseDimAtom() {
    const Token &token = peek();
    if (at(TokenKind::IntLiteral)) {
      advance();
      return DimExpr::integer(token.intValue, token.loc);
    }
    if (at(TokenKind::FloatLiteral)) {
      // Reported, then read as its integer part so that the rest still parses.
      diags_.report(token.loc, DiagId::DimNotInteger, token.text);
      advance();
      return DimExpr::integer(saturatingToI32(token.floatValue), token.loc);
    }
    if (at(TokenKind::LParen)) {
      NestingGuard guard(*this, advance().loc);
      if (!guard.ok())
        return std::nullopt;
      std::optional<DimExpr> inner = parseDimSum();
      if (!inner || !expect(TokenKind::RParen))
        return std::nullopt;
      return inner;
    }
    if (!at(TokenKind::Identifier)) {
      reportExpected("a dimension (a name, an integer or an expression of them)");
      return std::nullopt;
    }
    SourceLocation loc = token.loc;
    std::string name = advance().text;
    if (name != "cdiv" || !accept(TokenKind::LParen))
      return DimExpr::name(std::move(name), loc);
    NestingGuard guard(*this, loc);
    if (!guard.ok())
      return std::nullopt;
    std::optional<DimExpr> a = parseDimSum();
    if (!a || !expect(TokenKind::Comma))
      return std::nullopt;
    std::optional<DimExpr> b = parseDimSum();
    if (!b || !expect(TokenKind::RParen))
      return std::nullopt;
    return boundedDim(DimExpr::binary(DimExpr::Kind::CDiv, std::move(*a), std::move(*b), loc));
  }

  bool parseAnnotations(ast::Kernel &kernel) {
    while (!stopped()) {
      if (at(TokenKind::KwWhere)) {
        if (!parseWhere(kernel))
          return false;
        continue;
      }
      if (!at(TokenKind::Identifier))
        return true;
      const Token &name = peek();
      if (name.text == "grid") {
        if (kernel.hasGrid)
          diags_.report(name.loc, DiagId::DuplicateAnnotation, "grid");
        kernel.hasGrid = true;
        kernel.gridLoc = name.loc;
        kernel.grid.clear();
        advance();
        if (!expect(TokenKind::LParen))
          return false;
        if (!at(TokenKind::RParen)) {
          do {
            ExprPtr extent = parseExpr();
            if (!extent)
              return false;
            kernel.grid.push_back(std::move(extent));
          } while (accept(TokenKind::Comma));
        }
        if (!expect(TokenKind::RParen, "`,` or `)`"))
          return false;
      } else if (name.text == "warps") {
        if (!parseExprAnnotation(kernel.hasWarps, kernel.warps, kernel.warpsLoc))
          return false;
      } else if (name.text == "persistent") {
        if (!parseExprAnnotation(kernel.hasPersistent, kernel.persistent, kernel.persistentLoc))
          return false;
      } else {
        diags_.report(name.loc, DiagId::UnknownAnnotation, name.text);
        advance();
        skipParenGroup();
      }
    }
    return false;
  }

  /// `NAME(expr)`, an annotation given at most once (`warps`, `persistent`).
  bool parseExprAnnotation(bool &given, ast::ExprPtr &expr, SourceLocation &loc) {
    const Token &name = peek();
    if (given)
      diags_.report(name.loc, DiagId::DuplicateAnnotation, name.text);
    given = true;
    advance();
    if (!expect(TokenKind::LParen))
      return false;
    loc = peek().loc;
    expr = parseExpr();
    return expr && expect(TokenKind::RParen);
  }

  bool parseWhere(ast::Kernel &kernel) {
    advance(); // `where`
    ast::WhereParam where;
    where.loc = peek().loc;
    if (!at(TokenKind::Identifier)) {
      reportExpected("a parameter name");
      return false;
    }
    where.name = advance().text;
    if (accept(TokenKind::Assign)) {
      where.derived = parseExpr();
      if (!where.derived)
        return false;
      kernel.wheres.push_back(std::move(where));
      return true;
    }
    if (!expect(TokenKind::KwIn, "`in` or `=`") || !expect(TokenKind::LBrace))
      return false;
    bool valid = true;
    do {
      if (at(TokenKind::IntLiteral)) {
        where.valueLocs.push_back(peek().loc);
        where.values.push_back(advance().intValue);
        continue;
      }
      if (at(TokenKind::RBrace) && where.values.empty())
        break;
      // Anything else (a name, a float, an expression) is not a value we can
      // specialise on: report once and skip to the closing brace.
      diags_.report(peek().loc, DiagId::ParamNotConstant, where.name);
      valid = false;
      while (!at(TokenKind::RBrace) && !at(TokenKind::Eof) && !at(TokenKind::LBrace))
        advance();
      break;
    } while (accept(TokenKind::Comma));
    if (valid && where.values.empty()) {
      reportExpected("an integer");
      valid = false;
    }
    if (!expect(TokenKind::RBrace, "`,` or `}`"))
      return false;
    if (valid)
      kernel.wheres.push_back(std::move(where));
    return true;
  }

  // --- statements -----------------------------------------------------------

  /// Parses `{ statements }`; the current token is `{`.
  void parseBlock(std::vector<StmtPtr> &body, SourceLocation &end) {
    NestingGuard guard(*this, peek().loc);
    advance(); // `{`
    if (!guard.ok())
      return;
    while (!at(TokenKind::RBrace) && !at(TokenKind::Eof) && !at(TokenKind::KwKernel) && !stopped()) {
      if (accept(TokenKind::Semicolon))
        continue;
      uint32_t line = peek().loc.line;
      if (StmtPtr stmt = parseStatement())
        body.push_back(std::move(stmt));
      else if (!stopped())
        skipToStatementBoundary(line);
    }
    end = peek().loc;
    if (!stopped())
      expect(TokenKind::RBrace, "`}`");
  }

  StmtPtr parseStatement() {
    const Token &first = peek();
    if (first.is(TokenKind::Identifier)) {
      auto stmt = std::make_unique<Stmt>(StmtKind::Assign, first.loc);
      stmt->name = first.text;
      stmt->nameLoc = first.loc;
      advance();
      if (!at(TokenKind::Assign)) {
        // `x == y` or `f(x)` on its own: say what a statement looks like.
        reportExpected("`=`");
        return nullptr;
      }
      advance();
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      stmt->exprs.push_back(std::move(value));
      return stmt;
    }
    if (first.is(TokenKind::KwStore) || first.is(TokenKind::KwAtomicAdd))
      return parseStore();
    if (first.is(TokenKind::KwFor))
      return parseFor();
    if (first.is(TokenKind::KwIf))
      return parseIf();
    diags_.report(first.loc, DiagId::ExpectedStatement, describeToken(first));
    // Do not leave the token in place, or recovery could stall on it.
    if (!first.is(TokenKind::RBrace))
      advance();
    return nullptr;
  }

  /// `store(slice, value)`, or `atomic_add(slice, value)`, which adds.
  StmtPtr parseStore() {
    bool accumulate = peek().is(TokenKind::KwAtomicAdd);
    auto stmt = std::make_unique<Stmt>(StmtKind::Store, advance().loc);
    stmt->accumulate = accumulate;
    NestingGuard guard(*this, stmt->loc);
    if (!guard.ok() || !expect(TokenKind::LParen))
      return nullptr;
    ExprPtr slice = parseExpr();
    if (!slice || !expect(TokenKind::Comma))
      return nullptr;
    ExprPtr value = parseExpr();
    if (!value || !expect(TokenKind::RParen, "`)`"))
      return nullptr;
    stmt->exprs.push_back(std::move(slice));
    stmt->exprs.push_back(std::move(value));
    return stmt;
  }

  /// `if cond { ... } [else { ... } | else if ...]`: a compile-time choice.
  StmtPtr parseIf() {
    auto stmt = std::make_unique<Stmt>(StmtKind::If, advance().loc);
    NestingGuard guard(*this, stmt->loc);
    if (!guard.ok())
      return nullptr;
    ExprPtr condition = parseExpr();
    if (!condition)
      return nullptr;
    stmt->exprs.push_back(std::move(condition));
    if (!at(TokenKind::LBrace)) {
      reportExpected("`{`");
      return nullptr;
    }
    SourceLocation end;
    parseBlock(stmt->body, end);
    if (accept(TokenKind::KwElse)) {
      if (at(TokenKind::KwIf)) {
        if (StmtPtr nested = parseIf())
          stmt->elseBody.push_back(std::move(nested));
        else
          return nullptr;
      } else if (!at(TokenKind::LBrace)) {
        reportExpected("`{` or `if`");
        return nullptr;
      } else {
        parseBlock(stmt->elseBody, end);
      }
    }
    return stmt;
  }

  StmtPtr parseFor() {
    auto stmt = std::make_unique<Stmt>(StmtKind::For, advance().loc);
    stmt->nameLoc = peek().loc;
    if (!at(TokenKind::Identifier)) {
      reportExpected("a loop variable");
      return nullptr;
    }
    stmt->name = advance().text;
    if (!expect(TokenKind::KwIn))
      return nullptr;
    ExprPtr lo = parseExpr();
    if (!lo || !expect(TokenKind::DotDot))
      return nullptr;
    ExprPtr hi = parseExpr();
    if (!hi)
      return nullptr;
    stmt->exprs.push_back(std::move(lo));
    stmt->exprs.push_back(std::move(hi));
    while (!at(TokenKind::LBrace)) {
      if (at(TokenKind::KwPipelined)) {
        if (stmt->pipelined)
          diags_.report(peek().loc, DiagId::DuplicateAnnotation, "pipelined");
        stmt->pipelined = true;
        advance();
        if (accept(TokenKind::LParen)) {
          if (!at(TokenKind::Identifier) || peek().text != "stages") {
            reportExpected("`stages`");
            return nullptr;
          }
          advance();
          if (!expect(TokenKind::Assign))
            return nullptr;
          stmt->stages = parseExpr();
          if (!stmt->stages || !expect(TokenKind::RParen))
            return nullptr;
        }
      } else if (at(TokenKind::Identifier)) {
        diags_.report(peek().loc, DiagId::UnknownLoopHint, peek().text);
        advance();
        skipParenGroup();
      } else {
        reportExpected("`pipelined` or `{`");
        return nullptr;
      }
    }
    SourceLocation bodyEnd;
    parseBlock(stmt->body, bodyEnd);
    return stmt;
  }

  // --- expressions ----------------------------------------------------------

  ExprPtr makeBinary(ast::BinaryOp op, SourceLocation loc, ExprPtr lhs, ExprPtr rhs) {
    auto expr = std::make_unique<Expr>(ExprKind::Binary, loc);
    expr->binaryOp = op;
    expr->operands.push_back(std::move(lhs));
    expr->operands.push_back(std::move(rhs));
    return bounded(std::move(expr));
  }

  /// Sets the node's depth; reports and gives up if the tree is too tall.
  ExprPtr bounded(ExprPtr expr) {
    uint32_t below = 0;
    for (const ExprPtr &operand : expr->operands)
      below = std::max(below, operand->depth);
    for (const ast::Subscript &sub : expr->subscripts) {
      if (sub.start)
        below = std::max(below, sub.start->depth);
      if (sub.extent)
        below = std::max(below, sub.extent->depth);
    }
    expr->depth = below + 1;
    if (expr->depth > kMaxExpressionDepth) {
      if (!tooDeep_)
        diags_.report(expr->loc, DiagId::ExpressionTooDeep, kMaxExpressionDepth);
      tooDeep_ = true;
      return nullptr;
    }
    return expr;
  }

  ExprPtr parseExpr() { return parseOr(); }

  ExprPtr parseOr() {
    ExprPtr lhs = parseAnd();
    while (lhs && at(TokenKind::PipePipe)) {
      SourceLocation loc = advance().loc;
      ExprPtr rhs = parseAnd();
      if (!rhs)
        return nullptr;
      lhs = makeBinary(ast::BinaryOp::Or, loc, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseAnd() {
    ExprPtr lhs = parseComparison();
    while (lhs && at(TokenKind::AmpAmp)) {
      SourceLocation loc = advance().loc;
      ExprPtr rhs = parseComparison();
      if (!rhs)
        return nullptr;
      lhs = makeBinary(ast::BinaryOp::And, loc, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  static std::optional<ast::BinaryOp> comparisonOp(TokenKind kind) {
    switch (kind) {
    case TokenKind::EqualEqual: return ast::BinaryOp::Eq;
    case TokenKind::NotEqual: return ast::BinaryOp::Ne;
    case TokenKind::Less: return ast::BinaryOp::Lt;
    case TokenKind::LessEqual: return ast::BinaryOp::Le;
    case TokenKind::Greater: return ast::BinaryOp::Gt;
    case TokenKind::GreaterEqual: return ast::BinaryOp::Ge;
    default: return std::nullopt;
    }
  }

  ExprPtr parseComparison() {
    ExprPtr lhs = parseAdditive();
    if (!lhs)
      return nullptr;
    auto op = comparisonOp(peek().kind);
    if (!op)
      return lhs;
    SourceLocation loc = advance().loc;
    ExprPtr rhs = parseAdditive();
    if (!rhs)
      return nullptr;
    if (comparisonOp(peek().kind)) {
      diags_.report(peek().loc, DiagId::ChainedComparison);
      return nullptr;
    }
    return makeBinary(*op, loc, std::move(lhs), std::move(rhs));
  }

  ExprPtr parseAdditive() {
    ExprPtr lhs = parseMultiplicative();
    while (lhs && (at(TokenKind::Plus) || at(TokenKind::Minus))) {
      auto op = at(TokenKind::Plus) ? ast::BinaryOp::Add : ast::BinaryOp::Sub;
      SourceLocation loc = advance().loc;
      ExprPtr rhs = parseMultiplicative();
      if (!rhs)
        return nullptr;
      lhs = makeBinary(op, loc, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseMultiplicative() {
    ExprPtr lhs = parseUnary();
    while (lhs && (at(TokenKind::Star) || at(TokenKind::Slash) || at(TokenKind::Percent))) {
      auto op = at(TokenKind::Star) ? ast::BinaryOp::Mul : at(TokenKind::Slash) ? ast::BinaryOp::Div : ast::BinaryOp::Rem;
      SourceLocation loc = advance().loc;
      ExprPtr rhs = parseUnary();
      if (!rhs)
        return nullptr;
      lhs = makeBinary(op, loc, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseUnary() {
    if (at(TokenKind::Minus) || at(TokenKind::Bang)) {
      auto expr = std::make_unique<Expr>(ExprKind::Unary, peek().loc);
      expr->unaryOp = at(TokenKind::Minus) ? ast::UnaryOp::Neg : ast::UnaryOp::Not;
      advance();
      ExprPtr operand = parsePostfix();
      if (!operand)
        return nullptr;
      expr->operands.push_back(std::move(operand));
      return bounded(std::move(expr));
    }
    return parsePostfix();
  }

  /// `[:, new]` or `[new, :]` starts here (the current token is `[`)?
  std::optional<int> broadcastAhead() const {
    if (!at(TokenKind::LBracket) || !peek(2).is(TokenKind::Comma) || !peek(4).is(TokenKind::RBracket))
      return std::nullopt;
    if (peek(1).is(TokenKind::Colon) && peek(3).is(TokenKind::KwNew))
      return 1;
    if (peek(1).is(TokenKind::KwNew) && peek(3).is(TokenKind::Colon))
      return 0;
    return std::nullopt;
  }

  ExprPtr parsePostfix() {
    ExprPtr expr = parsePrimary();
    while (expr) {
      if (at(TokenKind::CaretT)) {
        auto transposed = std::make_unique<Expr>(ExprKind::Transpose, advance().loc);
        transposed->operands.push_back(std::move(expr));
        expr = bounded(std::move(transposed));
      } else if (auto axis = broadcastAhead()) {
        auto broadcast = std::make_unique<Expr>(ExprKind::Broadcast, peek().loc);
        broadcast->newAxis = *axis;
        for (int i = 0; i < 5; ++i)
          advance();
        broadcast->operands.push_back(std::move(expr));
        expr = bounded(std::move(broadcast));
      } else if (at(TokenKind::LBracket)) {
        reportExpected("`^T`, `[:, new]` or `[new, :]`");
        return nullptr;
      } else {
        break;
      }
    }
    return expr;
  }

  ExprPtr parsePrimary() {
    const Token &token = peek();
    switch (token.kind) {
    case TokenKind::IntLiteral: {
      auto expr = std::make_unique<Expr>(ExprKind::IntLiteral, token.loc);
      expr->intValue = token.intValue;
      expr->spelling = token.text;
      advance();
      return expr;
    }
    case TokenKind::FloatLiteral: {
      auto expr = std::make_unique<Expr>(ExprKind::FloatLiteral, token.loc);
      expr->floatValue = token.floatValue;
      expr->spelling = token.text;
      advance();
      return expr;
    }
    case TokenKind::KwInf: advance(); return std::make_unique<Expr>(ExprKind::Inf, token.loc);
    case TokenKind::LParen: {
      NestingGuard guard(*this, token.loc);
      advance();
      if (!guard.ok())
        return nullptr;
      ExprPtr inner = parseExpr();
      if (!inner || !expect(TokenKind::RParen))
        return nullptr;
      return inner;
    }
    case TokenKind::KwWhere:
      // `where` starts an annotation in a kernel header and is the select
      // operation inside expressions.
      if (peek(1).is(TokenKind::LParen))
        return parseCall();
      break;
    case TokenKind::Identifier:
      if (peek(1).is(TokenKind::LParen))
        return parseCall();
      if (peek(1).is(TokenKind::Dot))
        return parseBlockIndex();
      if (peek(1).is(TokenKind::LBracket)) {
        // `v[:, new]` is a broadcast (handled as a postfix); anything else
        // after a name is a slice or, after a dtype name, a tile type.
        size_t saved = pos_;
        advance();
        bool broadcast = broadcastAhead().has_value();
        pos_ = saved;
        if (!broadcast)
          return parseSliceOrTileType();
      }
      {
        auto expr = std::make_unique<Expr>(ExprKind::Name, token.loc);
        expr->name = token.text;
        expr->nameLoc = token.loc;
        advance();
        return expr;
      }
    default: break;
    }
    diags_.report(token.loc, DiagId::ExpectedExpression, describeToken(token));
    return nullptr;
  }

  ExprPtr parseCall() {
    const Token &callee = peek();
    auto expr = std::make_unique<Expr>(ExprKind::Call, callee.loc);
    expr->name = callee.text;
    expr->nameLoc = callee.loc;
    NestingGuard guard(*this, callee.loc);
    advance();
    advance(); // `(`
    if (!guard.ok())
      return nullptr;
    if (!at(TokenKind::RParen)) {
      do {
        ExprPtr arg = parseExpr();
        if (!arg)
          return nullptr;
        expr->operands.push_back(std::move(arg));
      } while (accept(TokenKind::Comma));
    }
    if (!expect(TokenKind::RParen, "`,` or `)`"))
      return nullptr;
    return bounded(std::move(expr));
  }

  ExprPtr parseBlockIndex() {
    const Token &object = advance();
    auto expr = std::make_unique<Expr>(ExprKind::BlockIndex, object.loc);
    expr->name = object.text;
    expr->nameLoc = object.loc;
    advance(); // `.`
    if (!at(TokenKind::Identifier)) {
      reportExpected("`x`, `y` or `z`");
      return nullptr;
    }
    expr->fieldLoc = peek().loc;
    expr->field = advance().text;
    return expr;
  }

  ExprPtr parseSliceOrTileType() {
    const Token &name = advance();
    bool isType = isDTypeName(name.text);
    auto expr = std::make_unique<Expr>(isType ? ExprKind::TileType : ExprKind::Slice, name.loc);
    expr->name = name.text;
    expr->nameLoc = name.loc;
    NestingGuard guard(*this, peek().loc);
    advance(); // `[`
    if (!guard.ok())
      return nullptr;
    do {
      ast::Subscript sub;
      sub.loc = peek().loc;
      if (at(TokenKind::Colon)) {
        if (isType) {
          diags_.report(peek().loc, DiagId::ExpectedExpression, describeToken(peek()));
          return nullptr;
        }
        advance();
        sub.kind = ast::Subscript::Kind::All;
      } else {
        sub.start = parseExpr();
        if (!sub.start)
          return nullptr;
        sub.kind = ast::Subscript::Kind::Index;
        if (at(TokenKind::PlusColon)) {
          if (isType) {
            reportExpected("`,` or `]`");
            return nullptr;
          }
          sub.loc = advance().loc;
          sub.kind = ast::Subscript::Kind::Range;
          sub.extent = parseExpr();
          if (!sub.extent)
            return nullptr;
        }
      }
      if (isType)
        expr->operands.push_back(std::move(sub.start));
      else
        expr->subscripts.push_back(std::move(sub));
    } while (accept(TokenKind::Comma));
    if (!expect(TokenKind::RBracket, "`,` or `]`"))
      return nullptr;
    return bounded(std::move(expr));
  }

  const std::vector<Token> &tokens_;
  DiagnosticEngine &diags_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool tooDeep_ = false;
};

} // namespace

ast::File parseFile(const std::vector<Token> &tokens, DiagnosticEngine &diags) {
  return Parser(tokens, diags).parseFile();
}

} // namespace tkc
