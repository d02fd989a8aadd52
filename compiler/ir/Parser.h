#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <memory>

namespace tkc::ir {

/// Parses the IR text form (compiler/ir/README.md) held in buffer `fileId`.
/// Reports the first problem with its line and column and returns null; never
/// crashes on malformed input. Every op's `loc` is its position in the text,
/// or the `loc(LINE:COL)` written after it (with `fileId` as the file).
/// The module is not verified: call verifyModule for the op rules.
std::unique_ptr<Module> parseModule(uint32_t fileId, const SourceManager &sources, DiagnosticEngine &diags);

} // namespace tkc::ir
