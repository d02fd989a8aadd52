#pragma once
#include "ir/IR.h"

#include <string>

namespace tkc::ir {

struct PrintOptions {
  /// Append `loc(LINE:COL)` to every op (and kernel) that has a location.
  bool locations = false;
};

/// Appends the text form of `module` (compiler/ir/README.md) to `out`. The
/// same module always prints to the same bytes, and the text parses back to
/// an equivalent module that prints identically.
void printModule(const Module &module, std::string &out, const PrintOptions &options = {});
std::string printModule(const Module &module, const PrintOptions &options = {});

/// The text of one attribute value, as it appears in an op's `{...}`.
std::string printAttr(const Attr &attr);

} // namespace tkc::ir
