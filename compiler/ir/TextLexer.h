#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tkc::ir {

/// Tokens of the IR text form. Newlines are whitespace, but every token
/// knows its offset so that the parser can ask whether two tokens share a
/// line (an op's operands start on the line of its mnemonic).
enum class TokenKind {
  Identifier, ///< `add`, `i32`, `launch`, `inf`
  ValueName,  ///< `%acc.1`, `%0`: text excludes the `%`
  KernelName, ///< `@gemm`: text excludes the `@`
  LayoutName, ///< `#acc`: text excludes the `#`
  Integer,    ///< `12`, `-3`
  Float,      ///< `1.5`, `-2e-05`, `-inf`
  String,     ///< `"sum"`: text is the raw source, quotes included
  Arrow,      ///< `->`
  Punct,      ///< one of `( ) { } [ ] < > , : =`
  EndOfFile,
  Invalid, ///< a character no token starts with, or an unterminated string
};

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  std::string_view text; ///< the token's meaningful text (see TokenKind)
  size_t offset = 0;     ///< where the token starts (at `%`, `@`, `#`, `"`)
  size_t end = 0;        ///< one past its last character

  bool is(TokenKind k) const { return kind == k; }
  bool isPunct(char c) const { return kind == TokenKind::Punct && text.size() == 1 && text[0] == c; }
  bool isIdentifier(std::string_view word) const { return kind == TokenKind::Identifier && text == word; }
  /// The token as it appears in the source, for diagnostics.
  std::string spelling(std::string_view source) const;
};

/// Lexes one token at a time from any offset: the lexer keeps no state, so
/// looking ahead is lexing from the end of the current token.
class TextLexer {
public:
  explicit TextLexer(std::string_view source) : source_(source) {}

  /// The first token at or after `offset`, skipping whitespace and comments.
  Token lexAt(size_t offset) const;
  std::string_view source() const { return source_; }

private:
  size_t skipTrivia(size_t offset) const;
  std::string_view source_;
};

/// Decodes the body of a String token (`\\`, `\"`, `\n`, `\t`, `\XX` hex).
/// Returns false on a malformed escape.
bool decodeStringLiteral(std::string_view quoted, std::string &out);

} // namespace tkc::ir
