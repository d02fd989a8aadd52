#pragma once
#include "ir/IR.h"
#include "passes/Pass.h"
#include "support/Diagnostics.h"

#include <string>

namespace tkc::codegen {

/// Prints the module as one CUDA C++ translation unit: a `__global__`
/// kernel per IR kernel and an `extern "C"` launch function per source
/// kernel that checks its arguments and picks the specialisation.
/// `sourceName` is the .tk file the module came from (for comments).
/// With `sources`, comments quote the .tk line each piece of code comes from.
bool emitCuda(const ir::Module &module, const Target &target, const std::string &sourceName, std::string &out,
              DiagnosticEngine &diags, const SourceManager *sources = nullptr);

} // namespace tkc::codegen
