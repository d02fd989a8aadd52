#pragma once
#include "codegen/CodeWriter.h"
#include "codegen/HostEmitter.h"

#include <string>
#include <vector>

namespace tkc::codegen {

/// A source kernel's specialisations for one target.
struct TargetLaunch {
  const Target *target;
  std::vector<LaunchVariant> variants;
};

/// Emits everything the host sees of one source kernel (docs/abi.md): the
/// thread-local message and `tkc_NAME_error()`, a launcher per target
/// (`tkc_NAME_sm80`, ...), the dispatcher `tkc_NAME` that picks one by the
/// current device's compute capability, and `tkc_NAME_info()`. Every
/// target's launcher takes the same arguments.
bool emitLaunchers(const std::string &sourceKernel, const std::vector<TargetLaunch> &targets, CodeWriter &out,
                   DiagnosticEngine &diags);

/// The names that emitLaunchers declares at file scope for one source kernel
/// (`tkc_NAME`, `tkc_NAME_error`, `tkc_NAME_where_D`, ...); the kernels of
/// one file must not share any.
std::vector<std::string> launcherSymbols(const std::string &sourceKernel, const std::vector<TargetLaunch> &targets);

/// Emits the C header of a generated file: the prototypes of every source
/// kernel's launch functions and info table. `guard` names the include guard.
void emitLauncherHeader(const std::string &generatedFrom, const std::string &guard,
                        const std::vector<std::pair<std::string, std::vector<TargetLaunch>>> &kernels,
                        CodeWriter &out);

} // namespace tkc::codegen
