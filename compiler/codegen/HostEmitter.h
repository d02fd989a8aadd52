#pragma once
#include "codegen/CodeWriter.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace tkc::codegen {

/// One specialisation of a source kernel, as the launcher sees it.
struct LaunchVariant {
  const ir::Kernel *kernel;
  std::string functionName; ///< the __global__ function
  int64_t sharedBytes;
};

/// Emits `extern "C" int tkc_NAME(...)` for one source kernel: it checks
/// every tensor argument (null, rank, sizes, strides, alignment), picks the
/// specialisation that matches the sizes and constants, computes the grid
/// and launches, returning a tkc_status code; `tkc_NAME_error()` returns
/// the message of the last failure. False after reporting a launch block
/// the host cannot compute.
bool emitLauncher(const std::string &sourceKernel, const std::vector<LaunchVariant> &variants,
                  const std::string &targetName, CodeWriter &out, DiagnosticEngine &diags);

} // namespace tkc::codegen
