#pragma once
#include "frontend/Token.h"
#include "support/Diagnostics.h"

#include <string_view>
#include <vector>

namespace tkc {

/// Inputs larger than this are refused before lexing: no kernel is that
/// big, and the limit keeps every later phase's memory use bounded.
constexpr size_t kMaxInputBytes = 16u << 20;

/// Turns one source buffer into tokens. Bad bytes are reported and skipped,
/// so the result always ends with an Eof token and lexing never fails hard;
/// the caller checks the diagnostic engine for errors.
std::vector<Token> lexBuffer(const SourceManager &sources, uint32_t file, DiagnosticEngine &diags);

} // namespace tkc
