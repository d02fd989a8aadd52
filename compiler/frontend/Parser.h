#pragma once
#include "frontend/AST.h"
#include "frontend/Token.h"
#include "support/Diagnostics.h"

#include <vector>

namespace tkc {

/// Parentheses, calls and loop bodies may nest this deep; deeper input is a
/// diagnostic (the parser is recursive and must not run out of stack).
constexpr int kMaxNestingDepth = 256;
/// Expression trees may be this tall (a long chain `a + b + c + ...` is a
/// tall tree without any nesting in the text).
constexpr uint32_t kMaxExpressionDepth = 1024;

/// Parses the tokens of one file (as produced by lexBuffer, ending in Eof).
/// Syntax errors are reported and the parser skips to the next statement or
/// closing brace, so the returned tree holds every well-formed part; it is
/// only meaningful if no error was reported.
ast::File parseFile(const std::vector<Token> &tokens, DiagnosticEngine &diags);

} // namespace tkc
