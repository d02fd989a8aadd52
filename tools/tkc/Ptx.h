#pragma once
// --emit=ptx: the generated CUDA through nvcc, for users who want to read
// the instructions a kernel becomes.
#include "support/Diagnostics.h"

#include <optional>
#include <string>

namespace tkc {

struct PtxOptions {
  std::string nvcc;       ///< --nvcc, or empty: $NVCC, then PATH, then /usr/local/cuda/bin/nvcc
  std::string targetName; ///< "sm_80" or "sm_90a"
};

/// Compiles `cuda` to PTX with `-lineinfo`, so that the PTX's `.loc`
/// entries point at the .tk lines the #line directives name. Reports and
/// returns nullopt when nvcc or the runtime headers cannot be found, or
/// when nvcc fails.
std::optional<std::string> compileToPtx(const std::string &cuda, const PtxOptions &options, DiagnosticEngine &diags);

} // namespace tkc
