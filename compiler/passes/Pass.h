#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "target/Target.h"

#include <memory>
#include <string>
#include <vector>

namespace tkc {

/// How many blocks of a warp-specialized kernel with `consumerWarps`
/// consumer warps should share a multiprocessor: a single consumer
/// warpgroup leaves most of the issue slots idle while it waits on its
/// products, so its blocks aim for two side by side (hopper-layout sizes the
/// stages for that; warp-specialize splits the registers once the buffers
/// are known to fit).
inline int intendedBlocksPerSm(int consumerWarps) { return consumerWarps == 4 ? 2 : 1; }

/// A pass reads the module and rewrites it in place. It reports problems
/// through the diagnostic engine and returns false if it could not finish.
class Pass {
public:
  virtual ~Pass() = default;
  virtual const char *name() const = 0;
  virtual const char *description() const = 0;
  virtual bool run(ir::Module &module, const Target &target, DiagnosticEngine &diags) = 0;
};

/// Every pass, in pipeline order.
std::vector<std::unique_ptr<Pass>> createPipeline();
/// One pass by name, or null.
std::unique_ptr<Pass> createPass(const std::string &name);

} // namespace tkc
