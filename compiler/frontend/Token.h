#pragma once
#include "support/SourceLocation.h"

#include <cstdint>
#include <string>

namespace tkc {

/// Every kind of token. TOKEN(Name, "spelling used by --emit=tokens").
#define TKC_TOKEN_KINDS(TOKEN)                                                                       \
  TOKEN(Eof, "eof")                                                                                  \
  TOKEN(Identifier, "identifier")                                                                    \
  TOKEN(IntLiteral, "int")                                                                           \
  TOKEN(FloatLiteral, "float")                                                                       \
  /* Reserved words. Dtype names, `grid`, `warps` and operation names stay  */                       \
  /* identifiers so that the parser can name them in its messages.          */                       \
  TOKEN(KwKernel, "kw_kernel")                                                                       \
  TOKEN(KwOut, "kw_out")                                                                             \
  TOKEN(KwWhere, "kw_where")                                                                         \
  TOKEN(KwIn, "kw_in")                                                                               \
  TOKEN(KwFor, "kw_for")                                                                             \
  TOKEN(KwIf, "kw_if")                                                                               \
  TOKEN(KwElse, "kw_else")                                                                           \
  TOKEN(KwStore, "kw_store")                                                                         \
  TOKEN(KwAtomicAdd, "kw_atomic_add")                                                                \
  TOKEN(KwNew, "kw_new")                                                                             \
  TOKEN(KwInf, "kw_inf")                                                                             \
  TOKEN(KwPipelined, "kw_pipelined")                                                                 \
  TOKEN(LParen, "l_paren")                                                                           \
  TOKEN(RParen, "r_paren")                                                                           \
  TOKEN(LBracket, "l_bracket")                                                                       \
  TOKEN(RBracket, "r_bracket")                                                                       \
  TOKEN(LBrace, "l_brace")                                                                           \
  TOKEN(RBrace, "r_brace")                                                                           \
  TOKEN(Comma, "comma")                                                                              \
  TOKEN(Colon, "colon")                                                                              \
  TOKEN(Semicolon, "semicolon")                                                                      \
  TOKEN(Dot, "dot")                                                                                  \
  TOKEN(DotDot, "dot_dot")                                                                           \
  TOKEN(PlusColon, "plus_colon")                                                                     \
  TOKEN(CaretT, "caret_t")                                                                           \
  TOKEN(Assign, "assign")                                                                            \
  TOKEN(Plus, "plus")                                                                                \
  TOKEN(Minus, "minus")                                                                              \
  TOKEN(Star, "star")                                                                                \
  TOKEN(Slash, "slash")                                                                              \
  TOKEN(Percent, "percent")                                                                          \
  TOKEN(EqualEqual, "equal_equal")                                                                   \
  TOKEN(NotEqual, "not_equal")                                                                       \
  TOKEN(Less, "less")                                                                                \
  TOKEN(LessEqual, "less_equal")                                                                     \
  TOKEN(Greater, "greater")                                                                          \
  TOKEN(GreaterEqual, "greater_equal")                                                               \
  TOKEN(AmpAmp, "amp_amp")                                                                           \
  TOKEN(PipePipe, "pipe_pipe")                                                                       \
  TOKEN(Bang, "bang")

enum class TokenKind {
#define TKC_TOKEN_ENUM(Name, Spelling) Name,
  TKC_TOKEN_KINDS(TKC_TOKEN_ENUM)
#undef TKC_TOKEN_ENUM
};

/// The name --emit=tokens prints for a kind, e.g. "l_paren".
const char *tokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string text; ///< exactly as written in the source
  SourceLocation loc;
  int64_t intValue = 0;    ///< IntLiteral
  double floatValue = 0.0; ///< FloatLiteral

  bool is(TokenKind k) const { return kind == k; }
  bool isIdentifier(const char *name) const { return kind == TokenKind::Identifier && text == name; }
};

/// How a token is named in "expected X but found Y" messages: "`)`",
/// "identifier `acc`", "end of file".
std::string describeToken(const Token &token);
/// How a token kind is named when it was expected: "`)`", "an identifier".
std::string describeTokenKind(TokenKind kind);

} // namespace tkc
