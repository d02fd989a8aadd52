#pragma once
#include <string_view>

namespace tkc::ir {

/// Lexical rules of the IR text form, shared by the printer and the parser
/// so that whatever one writes the other reads.

inline bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isIdentifierChar(char c) { return isIdentifierStart(c) || isDigit(c); }
/// Characters of a value name after `%`: identifiers, numbers, and the
/// `.N` suffix the printer adds to keep names unique.
inline bool isValueNameChar(char c) { return isIdentifierChar(c) || c == '.'; }

/// `[A-Za-z_][A-Za-z0-9_]*`: kernel names, parameter names, dimension
/// symbols, attribute names, and the name hints printed as they are.
inline bool isIdentifier(std::string_view text) {
  if (text.empty() || !isIdentifierStart(text[0]))
    return false;
  for (char c : text)
    if (!isIdentifierChar(c))
      return false;
  return true;
}

} // namespace tkc::ir
