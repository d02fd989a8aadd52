#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace tkc {

/// What the passes and the code generator may assume about the GPU.
struct Target {
  std::string name;          ///< "sm_80" or "sm_90a"
  int computeCapability = 80;
  int sharedMemoryBytes = 0;      ///< per block, opt-in maximum
  int sharedMemoryPerSmBytes = 0; ///< per multiprocessor, all resident blocks together
  int maxWarps = 32;
  int registersPerSm = 65536;     ///< 32-bit registers, shared by the resident blocks

  static const Target *lookup(const std::string &name);

  /// Shared memory a block may use when `blocks` blocks share a
  /// multiprocessor (the system keeps 1 KiB of it per block).
  int sharedMemoryPerBlock(int blocks) const {
    return blocks <= 1 ? sharedMemoryBytes : std::min(sharedMemoryBytes, sharedMemoryPerSmBytes / blocks - 1024);
  }
};

/// How many blocks of a warp-specialized kernel with `consumerWarps`
/// consumer warps should share a multiprocessor: a single consumer
/// warpgroup leaves most of the issue slots idle while it waits on its
/// products, so its blocks aim for two side by side (hopper-layout sizes the
/// stages for that; warp-specialize splits the registers once the buffers
/// are known to fit).
inline int intendedBlocksPerSm(int consumerWarps) { return consumerWarps == 4 ? 2 : 1; }

/// Shared memory the sm_90a passes keep free for mbarriers and alignment
/// when they size buffers.
constexpr int64_t kReservedSharedBytes = 2048;

/// The wgmma widths (n of m64nNk16) that codegen emits: every multiple of 16
/// from 32 to 256 (codegen writes a wrapper for each width a file uses).
inline bool isWgmmaWidth(int64_t n) { return n >= 32 && n <= 256 && n % 16 == 0; }

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
