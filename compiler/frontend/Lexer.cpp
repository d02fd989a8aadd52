#include "frontend/Lexer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

namespace tkc {

const char *tokenKindName(TokenKind kind) {
  switch (kind) {
#define TKC_TOKEN_NAME(Name, Spelling)                                                               \
  case TokenKind::Name: return Spelling;
    TKC_TOKEN_KINDS(TKC_TOKEN_NAME)
#undef TKC_TOKEN_NAME
  }
  return "?";
}

namespace {

const char *fixedSpelling(TokenKind kind) {
  switch (kind) {
  case TokenKind::KwKernel: return "kernel";
  case TokenKind::KwOut: return "out";
  case TokenKind::KwWhere: return "where";
  case TokenKind::KwIn: return "in";
  case TokenKind::KwFor: return "for";
  case TokenKind::KwIf: return "if";
  case TokenKind::KwElse: return "else";
  case TokenKind::KwStore: return "store";
  case TokenKind::KwAtomicAdd: return "atomic_add";
  case TokenKind::KwNew: return "new";
  case TokenKind::KwInf: return "inf";
  case TokenKind::KwPipelined: return "pipelined";
  case TokenKind::LParen: return "(";
  case TokenKind::RParen: return ")";
  case TokenKind::LBracket: return "[";
  case TokenKind::RBracket: return "]";
  case TokenKind::LBrace: return "{";
  case TokenKind::RBrace: return "}";
  case TokenKind::Comma: return ",";
  case TokenKind::Colon: return ":";
  case TokenKind::Semicolon: return ";";
  case TokenKind::Dot: return ".";
  case TokenKind::DotDot: return "..";
  case TokenKind::PlusColon: return "+:";
  case TokenKind::CaretT: return "^T";
  case TokenKind::Assign: return "=";
  case TokenKind::Plus: return "+";
  case TokenKind::Minus: return "-";
  case TokenKind::Star: return "*";
  case TokenKind::Slash: return "/";
  case TokenKind::Percent: return "%";
  case TokenKind::EqualEqual: return "==";
  case TokenKind::NotEqual: return "!=";
  case TokenKind::Less: return "<";
  case TokenKind::LessEqual: return "<=";
  case TokenKind::Greater: return ">";
  case TokenKind::GreaterEqual: return ">=";
  case TokenKind::AmpAmp: return "&&";
  case TokenKind::PipePipe: return "||";
  case TokenKind::Bang: return "!";
  default: return nullptr;
  }
}

} // namespace

std::string describeTokenKind(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::Identifier: return "an identifier";
  case TokenKind::IntLiteral: return "an integer";
  case TokenKind::FloatLiteral: return "a number";
  default: return fmt::format("`{}`", fixedSpelling(kind));
  }
}

std::string describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::Identifier: return fmt::format("identifier `{}`", token.text);
  case TokenKind::IntLiteral:
  case TokenKind::FloatLiteral: return fmt::format("number `{}`", token.text);
  default: return fmt::format("`{}`", token.text);
  }
}

namespace {

bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isLetter(c) || isDigit(c); }

/// Length of the UTF-8 sequence starting at `s`, or 1 if it is malformed, so
/// that a stray multi-byte character is reported once rather than per byte.
size_t utf8SequenceLength(std::string_view s) {
  auto byte = static_cast<unsigned char>(s[0]);
  size_t length = byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC2 && byte < 0xE0 ? 2 : 1;
  if (byte >= 0xF5 || length > s.size())
    return 1;
  for (size_t i = 1; i < length; ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
      return 1;
  return length;
}

/// A literal as quoted in a message: long ones are cut short.
std::string literalForMessage(const std::string &text) {
  constexpr size_t kMaxShown = 32;
  return text.size() <= kMaxShown ? text : text.substr(0, kMaxShown) + "...";
}

/// A character as it should appear inside backquotes in a message: printable
/// ASCII and well-formed UTF-8 as is, anything else as \xNN escapes.
std::string printableCharacter(std::string_view bytes) {
  if (bytes.size() > 1)
    return std::string(bytes);
  auto byte = static_cast<unsigned char>(bytes[0]);
  if (byte >= 0x20 && byte < 0x7F)
    return std::string(1, static_cast<char>(byte));
  return fmt::format("\\x{:02X}", byte);
}

class Lexer {
public:
  Lexer(const SourceManager &sources, uint32_t file, DiagnosticEngine &diags)
      : text_(sources.text(file)), name_(sources.name(file)), file_(file), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    if (text_.size() > kMaxInputBytes) {
      diags_.report({}, DiagId::InputTooLarge, name_, kMaxInputBytes);
      tokens.push_back(makeToken(TokenKind::Eof, 0, 0));
      return tokens;
    }
    while (true) {
      skipWhitespaceAndComments();
      if (pos_ >= text_.size())
        break;
      if (auto token = lexOne())
        tokens.push_back(std::move(*token));
    }
    tokens.push_back(makeToken(TokenKind::Eof, pos_, 0));
    return tokens;
  }

private:
  SourceLocation locAt(size_t offset) const {
    return SourceLocation{file_, line_, static_cast<uint32_t>(offset - lineStart_ + 1)};
  }

  Token makeToken(TokenKind kind, size_t begin, size_t length) const {
    Token token;
    token.kind = kind;
    token.text = std::string(text_.substr(begin, length));
    token.loc = locAt(begin);
    return token;
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool atEnd(size_t ahead = 0) const { return pos_ + ahead >= text_.size(); }

  void newline(size_t offsetOfNewline) {
    ++line_;
    lineStart_ = offsetOfNewline + 1;
  }

  void skipWhitespaceAndComments() {
    while (!atEnd()) {
      char c = peek();
      if (endsLine(text_, pos_)) {
        newline(pos_);
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (!atEnd() && peek() != '\n' && peek() != '\r')
          ++pos_;
      } else if (c == '/' && peek(1) == '*') {
        SourceLocation start = locAt(pos_);
        pos_ += 2;
        bool closed = false;
        while (!atEnd()) {
          if (peek() == '*' && peek(1) == '/') {
            pos_ += 2;
            closed = true;
            break;
          }
          if (endsLine(text_, pos_))
            newline(pos_);
          ++pos_;
        }
        if (!closed)
          diags_.report(start, DiagId::UnterminatedComment);
      } else {
        return;
      }
    }
  }

  std::optional<Token> lexOne() {
    size_t begin = pos_;
    char c = peek();
    if (isLetter(c))
      return lexWord();
    if (isDigit(c))
      return lexNumber();

    auto punct = [&](TokenKind kind, size_t length) {
      pos_ += length;
      return makeToken(kind, begin, length);
    };
    switch (c) {
    case '(': return punct(TokenKind::LParen, 1);
    case ')': return punct(TokenKind::RParen, 1);
    case '[': return punct(TokenKind::LBracket, 1);
    case ']': return punct(TokenKind::RBracket, 1);
    case '{': return punct(TokenKind::LBrace, 1);
    case '}': return punct(TokenKind::RBrace, 1);
    case ',': return punct(TokenKind::Comma, 1);
    case ':': return punct(TokenKind::Colon, 1);
    case ';': return punct(TokenKind::Semicolon, 1);
    case '.':
      // `.5` is not a number in tk; `..` is the range token.
      return peek(1) == '.' ? punct(TokenKind::DotDot, 2) : punct(TokenKind::Dot, 1);
    case '+': return peek(1) == ':' ? punct(TokenKind::PlusColon, 2) : punct(TokenKind::Plus, 1);
    case '-': return punct(TokenKind::Minus, 1);
    case '*': return punct(TokenKind::Star, 1);
    case '/': return punct(TokenKind::Slash, 1);
    case '%': return punct(TokenKind::Percent, 1);
    case '=': return peek(1) == '=' ? punct(TokenKind::EqualEqual, 2) : punct(TokenKind::Assign, 1);
    case '!': return peek(1) == '=' ? punct(TokenKind::NotEqual, 2) : punct(TokenKind::Bang, 1);
    case '<': return peek(1) == '=' ? punct(TokenKind::LessEqual, 2) : punct(TokenKind::Less, 1);
    case '>': return peek(1) == '=' ? punct(TokenKind::GreaterEqual, 2) : punct(TokenKind::Greater, 1);
    case '&':
      if (peek(1) == '&')
        return punct(TokenKind::AmpAmp, 2);
      break;
    case '|':
      if (peek(1) == '|')
        return punct(TokenKind::PipePipe, 2);
      break;
    case '^':
      // `k^T` is the transpose; `k^Tx` is not (T would start an identifier).
      if (peek(1) == 'T' && !isIdentChar(peek(2)))
        return punct(TokenKind::CaretT, 2);
      break;
    default: break;
    }
    size_t length = utf8SequenceLength(text_.substr(pos_));
    diags_.report(locAt(begin), DiagId::UnexpectedCharacter, printableCharacter(text_.substr(pos_, length)));
    pos_ += length;
    return std::nullopt;
  }

  Token lexWord() {
    size_t begin = pos_;
    while (!atEnd() && isIdentChar(peek()))
      ++pos_;
    std::string_view word = text_.substr(begin, pos_ - begin);
    static constexpr std::pair<const char *, TokenKind> kKeywords[] = {
        {"kernel", TokenKind::KwKernel}, {"out", TokenKind::KwOut},     {"where", TokenKind::KwWhere},
        {"in", TokenKind::KwIn},         {"for", TokenKind::KwFor},     {"store", TokenKind::KwStore},
        {"new", TokenKind::KwNew},       {"inf", TokenKind::KwInf},     {"pipelined", TokenKind::KwPipelined},
        {"atomic_add", TokenKind::KwAtomicAdd}, {"if", TokenKind::KwIf},     {"else", TokenKind::KwElse},
    };
    for (auto &[spelling, kind] : kKeywords)
      if (word == spelling)
        return makeToken(kind, begin, word.size());
    return makeToken(TokenKind::Identifier, begin, word.size());
  }

  Token lexNumber() {
    size_t begin = pos_;
    bool isFloat = false;
    while (isDigit(peek()))
      ++pos_;
    // A '.' makes a float unless it starts the `..` range token.
    if (peek() == '.' && peek(1) != '.') {
      isFloat = true;
      ++pos_;
      while (isDigit(peek()))
        ++pos_;
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      isFloat = true;
      pos_ += 2;
      while (isDigit(peek()))
        ++pos_;
    }
    // Letters glued to a number (`64k`, `1.5f`) make it malformed; swallow
    // them so that the error is reported once.
    bool malformed = false;
    while (isIdentChar(peek()) || (peek() == '.' && peek(1) != '.' && isDigit(peek(1)))) {
      malformed = true;
      ++pos_;
    }
    Token token = makeToken(isFloat ? TokenKind::FloatLiteral : TokenKind::IntLiteral, begin, pos_ - begin);
    if (malformed) {
      diags_.report(token.loc, DiagId::InvalidNumber, literalForMessage(token.text));
      return token;
    }
    if (isFloat) {
      errno = 0;
      double value = std::strtod(token.text.c_str(), nullptr);
      if (std::isinf(value)) {
        diags_.report(token.loc, DiagId::InvalidNumber, literalForMessage(token.text));
        value = 0;
      }
      token.floatValue = value;
    } else {
      // Integers are i32 in tk: anything wider cannot be represented.
      int64_t value = 0;
      bool overflow = false;
      for (char digit : token.text) {
        value = value * 10 + (digit - '0');
        if (value > std::numeric_limits<int32_t>::max()) {
          overflow = true;
          break;
        }
      }
      if (overflow) {
        diags_.report(token.loc, DiagId::InvalidNumber, literalForMessage(token.text));
        value = 0;
      }
      token.intValue = value;
    }
    return token;
  }

  std::string_view text_;
  std::string name_;
  uint32_t file_;
  DiagnosticEngine &diags_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t lineStart_ = 0;
};

} // namespace

std::vector<Token> lexBuffer(const SourceManager &sources, uint32_t file, DiagnosticEngine &diags) {
  return Lexer(sources, file, diags).run();
}

} // namespace tkc
