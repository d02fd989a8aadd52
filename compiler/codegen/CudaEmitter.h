#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "target/Target.h"

#include <string>
#include <vector>

namespace tkc::codegen {

/// One module lowered and optimised for one target.
struct TargetModule {
  const ir::Module *module;
  const Target *target;
};

/// Prints the modules (one per target, all from the same source) as one
/// CUDA C++ translation unit: a `__global__` kernel per IR kernel and per
/// source kernel the `extern "C"` launch functions of docs/abi.md (one per
/// target, a dispatcher, an info table). With several targets the kernels'
/// names carry the target. `sourceName` is the .tk file the module came
/// from (for comments). With `sources`, comments quote the .tk line each
/// piece of code comes from. With `header`, it also receives the C header
/// that declares the launch functions, guarded by `headerGuard`.
/// `outputName` names the generated file in `#line` directives: with it,
/// each kernel statement's code is marked as coming from its .tk line
/// (nvcc -lineinfo then shows .tk lines in profilers and debuggers), and
/// the code between kernels as the output's own.
bool emitCuda(const std::vector<TargetModule> &modules, const std::string &sourceName, std::string &out,
              DiagnosticEngine &diags, const SourceManager *sources = nullptr, std::string *header = nullptr,
              const std::string &headerGuard = "", const std::string *outputName = nullptr);
bool emitCuda(const ir::Module &module, const Target &target, const std::string &sourceName, std::string &out,
              DiagnosticEngine &diags, const SourceManager *sources = nullptr);

} // namespace tkc::codegen
