#include "ir/TextLexer.h"
#include "ir/Syntax.h"

namespace tkc::ir {

std::string Token::spelling(std::string_view source) const {
  if (kind == TokenKind::EndOfFile)
    return "end of input";
  std::string_view raw = source.substr(offset, end - offset);
  std::string text;
  for (unsigned char c : raw) {
    if (c < 0x20 || c >= 0x7f) {
      static const char *kHex = "0123456789abcdef";
      text += "\\x";
      text += kHex[c >> 4];
      text += kHex[c & 15];
    } else {
      text += static_cast<char>(c);
    }
  }
  return text;
}

size_t TextLexer::skipTrivia(size_t offset) const {
  while (offset < source_.size()) {
    char c = source_[offset];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++offset;
    } else if (c == '/' && offset + 1 < source_.size() && source_[offset + 1] == '/') {
      size_t newline = source_.find('\n', offset);
      offset = newline == std::string_view::npos ? source_.size() : newline + 1;
    } else {
      break;
    }
  }
  return offset;
}

Token TextLexer::lexAt(size_t offset) const {
  size_t begin = skipTrivia(offset);
  Token token;
  token.offset = begin;
  auto finish = [&](TokenKind kind, size_t textBegin, size_t end) {
    token.kind = kind;
    token.text = source_.substr(textBegin, end - textBegin);
    token.end = end;
    return token;
  };
  if (begin >= source_.size())
    return finish(TokenKind::EndOfFile, begin, begin);

  auto scanWhile = [&](size_t from, auto predicate) {
    while (from < source_.size() && predicate(source_[from]))
      ++from;
    return from;
  };
  char c = source_[begin];
  char next = begin + 1 < source_.size() ? source_[begin + 1] : '\0';

  if (isIdentifierStart(c))
    return finish(TokenKind::Identifier, begin, scanWhile(begin, isIdentifierChar));
  if (c == '%' || c == '@' || c == '#') {
    size_t end = scanWhile(begin + 1, c == '%' ? isValueNameChar : isIdentifierChar);
    if (end == begin + 1)
      return finish(TokenKind::Invalid, begin, begin + 1);
    TokenKind kind = c == '%' ? TokenKind::ValueName : c == '@' ? TokenKind::KernelName : TokenKind::LayoutName;
    return finish(kind, begin + 1, end);
  }
  if (c == '-' && next == '>')
    return finish(TokenKind::Arrow, begin, begin + 2);
  if (c == '-' && source_.substr(begin + 1, 3) == "inf" &&
      (begin + 4 >= source_.size() || !isIdentifierChar(source_[begin + 4])))
    return finish(TokenKind::Float, begin, begin + 4);
  if (isDigit(c) || (c == '-' && isDigit(next))) {
    size_t end = scanWhile(begin + 1, isDigit);
    bool isFloatText = false;
    if (end < source_.size() && source_[end] == '.') {
      isFloatText = true;
      end = scanWhile(end + 1, isDigit);
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-'))
        ++exponent;
      if (exponent < source_.size() && isDigit(source_[exponent])) {
        isFloatText = true;
        end = scanWhile(exponent, isDigit);
      }
    }
    return finish(isFloatText ? TokenKind::Float : TokenKind::Integer, begin, end);
  }
  if (c == '"') {
    size_t end = begin + 1;
    while (end < source_.size() && source_[end] != '"' && source_[end] != '\n')
      end += source_[end] == '\\' && end + 1 < source_.size() && source_[end + 1] != '\n' ? 2 : 1;
    if (end >= source_.size() || source_[end] != '"')
      return finish(TokenKind::Invalid, begin, end);
    return finish(TokenKind::String, begin, end + 1);
  }
  switch (c) {
  case '(': case ')': case '{': case '}': case '[': case ']':
  case '<': case '>': case ',': case ':': case '=':
    return finish(TokenKind::Punct, begin, begin + 1);
  default:
    return finish(TokenKind::Invalid, begin, begin + 1);
  }
}

bool decodeStringLiteral(std::string_view quoted, std::string &out) {
  out.clear();
  if (quoted.size() < 2)
    return false;
  std::string_view body = quoted.substr(1, quoted.size() - 2);
  auto hexValue = [](char c) {
    return isDigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
  };
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out += body[i];
      continue;
    }
    if (++i >= body.size())
      return false;
    char escaped = body[i];
    if (escaped == '\\' || escaped == '"') {
      out += escaped;
    } else if (escaped == 'n') {
      out += '\n';
    } else if (escaped == 't') {
      out += '\t';
    } else if (i + 1 < body.size() && hexValue(escaped) >= 0 && hexValue(body[i + 1]) >= 0) {
      out += static_cast<char>(hexValue(escaped) * 16 + hexValue(body[i + 1]));
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

} // namespace tkc::ir
