#pragma once
#include "codegen/CodeWriter.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "target/Target.h"

#include <map>
#include <string>
#include <vector>

namespace tkc::codegen {

/// One specialisation of a source kernel, as the launcher sees it.
struct LaunchVariant {
  const ir::Kernel *kernel;
  std::string functionName; ///< the __global__ function
  int64_t sharedBytes;
};

/// Where a symbol or compile-time parameter shows up among the tensor dims.
struct DimPosition {
  size_t tensor;
  size_t dim;
};

/// The parameters of a source kernel's launch functions, shared by every
/// target's launcher, the dispatcher, the header and the info table.
struct LauncherShape {
  std::vector<const ir::Value *> tensors; ///< the tensor parameters (of the first variant)
  std::map<std::string, DimPosition> symbols; ///< each dim symbol's first mention
  std::vector<std::string> symbolOrder;
  std::vector<std::string> parameters; ///< compile-time (`where ... in`) parameters, in declaration order
  std::map<std::string, std::vector<DimPosition>> parameterDims; ///< the tensor dims that equal a parameter
  std::vector<std::string> constants; ///< the parameters the caller passes as int64_t
};
LauncherShape analyzeLauncher(const std::vector<LaunchVariant> &variants);

/// The launcher's checks that each derived dim (`cdiv(R, 32)`) of `first`'s
/// tensor parameters equals its expression (DerivedDims.cpp). They follow
/// the checks that give every name of the expressions its value.
void emitDerivedDimChecks(const LauncherShape &shape, const ir::Kernel &first, const std::string &fn,
                          CodeWriter &out);

/// `const tkc_tensor *A, ..., int64_t causal, void *stream` and the same
/// names as arguments.
std::string launcherParameters(const LauncherShape &shape);
std::string launcherArguments(const LauncherShape &shape);
/// `sm80` for sm_80: the suffix of a target's launcher.
std::string targetSymbol(const Target &target);

/// The DLPack type code and bits of an element type.
struct DLType {
  int code;
  int bits;
};
DLType dlType(ir::DType dtype);

/// The alignment in bytes that the kernels' accesses to tensor parameter
/// `index` need of its data pointer and row strides: one specialisation's,
/// or the strictest of several.
int accessAlignment(const LaunchVariant &variant, size_t index);
int accessAlignment(const std::vector<LaunchVariant> &variants, size_t index);
/// Whether a kernel writes tensor parameter `index` with bulk tensor stores
/// (its rows must then be a multiple of 16 bytes long).
bool bulkStored(const std::vector<LaunchVariant> &variants, size_t index);

/// Emits `extern "C" int tkc_NAME_sm80(...)` (the target's suffix) for one
/// source kernel: it checks every tensor argument (descriptor version,
/// dtype, null, rank, sizes, strides, alignment) without touching the GPU,
/// picks the specialisation that matches the sizes and constants, then
/// checks the device (architecture, where the tensors live), computes the
/// grid and launches, returning a tkc_status code. The message buffer and
/// `tkc_NAME_fail` come from emitLaunchers (LauncherAbi.h).
/// False after reporting a launch block the host cannot compute.
bool emitTargetLauncher(const std::string &sourceKernel, const Target &target,
                        const std::vector<LaunchVariant> &variants, CodeWriter &out, DiagnosticEngine &diags);

} // namespace tkc::codegen
