#pragma once
#include "frontend/Token.h"
#include "support/Diagnostics.h"
#include "support/FileIO.h"

#include <string_view>
#include <vector>

namespace tkc {

/// Turns one source buffer into tokens. Bad bytes are reported and skipped,
/// so the result always ends with an Eof token and lexing never fails hard;
/// the caller checks the diagnostic engine for errors. A buffer over
/// kMaxInputBytes is refused (the drivers stop reading there already).
std::vector<Token> lexBuffer(const SourceManager &sources, uint32_t file, DiagnosticEngine &diags);

} // namespace tkc
